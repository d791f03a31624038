//! The plain forwarder: a `TPACKET_V3` capture socket ([`AfPacket`]) on the
//! incoming interface, the filter run on each frame, and the accepted
//! frames sent on the outgoing interface by an [`Injector`], a block's
//! worth per `sendmmsg(2)` call.
//!
//! The filter runs here, on the frame as the ring holds it with its VLAN
//! tags put back ([`AfPacket`] restores them), not in the kernel: the
//! kernel runs a socket filter on frames whose tag it has already moved
//! into metadata, so libpcap's `vlan` code (which reads the tag in the
//! frame) would never match there. Running it here also counts exactly
//! what it rejects. The kernel filter only keeps out the frames the
//! incoming interface itself sends (`PACKET_OUTGOING`), which are not
//! traffic to forward.

use super::ForwardCounts;
use crate::filter::bpf::{Insn, Program};
use crate::source::{
    AfPacket, Injector, LiveConfig, LiveError, LiveErrorKind, RawPacket, RingConfig,
};
use std::ops::Range;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// `SKF_AD_OFF + SKF_AD_PKTTYPE`: the cBPF load of the packet's type.
const LD_PKTTYPE: u32 = 0xffff_f000 + 4;
/// `PACKET_OUTGOING`: a frame this host sent.
const PACKET_OUTGOING: u32 = 4;
/// `BPF_LD | BPF_W | BPF_ABS`, `BPF_JMP | BPF_JEQ | BPF_K`, `BPF_RET | BPF_K`.
const LD_W_ABS: u16 = 0x20;
const JEQ_K: u16 = 0x15;
const RET_K: u16 = 0x06;

/// How long one wait for a ring block lasts, so that a stop is seen.
const POLL: Duration = Duration::from_millis(50);

/// How the accepted frames of a block are sent.
///
/// Batched is the cheaper: on veth pairs (bench/forward.sh, 100,000 frames
/// of the campus trace from `tcpreplay --topspeed`, filter `tcp or udp`,
/// a debug build on 2 cores shared with other builds) the forwarder used
/// 0.18 to 0.19 CPU seconds for the 93,853 frames it forwarded batched
/// (about 2.0 µs a frame, copy into the batch included) and 0.23 to 0.24
/// one send per frame (about 2.5 µs). A `PACKET_TX_RING` would save the
/// copy into the batch but not the kernel's copy into a new skb.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub enum SendMode {
    /// Copied into a buffer, then all sent with `sendmmsg(2)` when the
    /// block is done (one system call per up to 1024 frames).
    #[default]
    Batched,
    /// One `send(2)` per frame, straight from the ring.
    PerFrame,
}

/// A forwarder from one interface to another through `AF_PACKET` sockets.
#[derive(Debug)]
pub struct AfPacketForwarder {
    rx: AfPacket,
    tx: Injector,
    filter: Option<Program>,
    mode: SendMode,
    counts: ForwardCounts,
    /// The last send error, for the summary.
    last_error: Option<LiveError>,
    /// The accepted frames of the current block, and where each lies.
    arena: Vec<u8>,
    ranges: Vec<Range<usize>>,
    /// Frames that passed the filter so far (sent or failed).
    taken: u64,
}

impl AfPacketForwarder {
    /// Opens the capture socket on `input` (promiscuous, whole frames, the
    /// default ring) and the sending socket on `output`. `filter` is a cBPF
    /// program for Ethernet frames (libpcap's, DLT_EN10MB); `None` forwards
    /// everything.
    ///
    /// Errors name the interface and the step that failed; an invalid
    /// program gives [`LiveErrorKind::InvalidConfig`] on `input`.
    pub fn open(
        input: &str,
        output: &str,
        filter: Option<Vec<Insn>>,
    ) -> Result<AfPacketForwarder, LiveError> {
        let filter = filter.map(Program::new).transpose().map_err(|e| {
            LiveError::other(
                input,
                "checking the filter",
                LiveErrorKind::InvalidConfig,
                e.to_string(),
            )
        })?;
        let mut cfg = LiveConfig::new(input);
        cfg.promiscuous = true;
        // Blocks handed over after 1 ms at the latest (not the capture
        // default of 10 ms): a forwarder's latency at low rates is the
        // block timeout. 128 blocks of 256 KiB keep the 32 MiB ring.
        cfg.ring = RingConfig {
            block_size: 256 << 10,
            block_count: 128,
            block_timeout_ms: 1,
            ..RingConfig::default()
        };
        cfg.filter = Some(vec![
            Insn::new(LD_W_ABS, 0, 0, LD_PKTTYPE),
            Insn::new(JEQ_K, 0, 1, PACKET_OUTGOING),
            Insn::new(RET_K, 0, 0, 0),
            Insn::new(RET_K, 0, 0, u32::MAX),
        ]);
        // The sending socket first: it does not receive, and a bad
        // outgoing interface is found before the ring is allocated.
        let tx = Injector::open(output)?;
        let rx = AfPacket::open(&cfg)?;
        Ok(AfPacketForwarder {
            rx,
            tx,
            filter,
            mode: SendMode::default(),
            counts: ForwardCounts::default(),
            last_error: None,
            arena: Vec::new(),
            ranges: Vec::new(),
            taken: 0,
        })
    }

    /// Chooses how frames are sent (default [`SendMode::Batched`]).
    pub fn set_send_mode(&mut self, mode: SendMode) {
        self.mode = mode;
    }

    /// What was forwarded so far.
    pub fn counts(&self) -> ForwardCounts {
        self.counts
    }

    /// The last error a send gave, if any (each is counted in
    /// [`ForwardCounts::send_errors`] and the run goes on).
    pub fn last_send_error(&self) -> Option<&LiveError> {
        self.last_error.as_ref()
    }

    /// Forwards until `stop` becomes true or `max` frames have passed the
    /// filter (sent, or counted as send errors; the rest of that block is
    /// left unsent and uncounted).
    /// Returns the counts, or the receive error that ended the run (the
    /// counts so far stay readable with [`AfPacketForwarder::counts`]).
    pub fn run(&mut self, stop: &AtomicBool, max: Option<u64>) -> Result<ForwardCounts, LiveError> {
        let limit = max.unwrap_or(u64::MAX);
        while !stop.load(Ordering::Relaxed) && self.taken < limit {
            let room = limit - self.taken;
            let Self {
                rx,
                tx,
                filter,
                mode,
                counts,
                last_error,
                arena,
                ranges,
                ..
            } = self;
            arena.clear();
            ranges.clear();
            // Frames taken from this block (sent or queued for sending).
            let mut taken = 0u64;
            let mut on_frame = |p: &RawPacket<'_>| {
                if taken >= room {
                    return;
                }
                if let Some(f) = filter.as_ref() {
                    if !f.matches(p.data, p.orig_len) {
                        counts.filtered_out += 1;
                        return;
                    }
                }
                taken += 1;
                match mode {
                    SendMode::Batched => {
                        let start = arena.len();
                        arena.extend_from_slice(p.data);
                        ranges.push(start..arena.len());
                    }
                    SendMode::PerFrame => match tx.send(p.data) {
                        Ok(()) => {
                            counts.forwarded += 1;
                            counts.forwarded_bytes += p.data.len() as u64;
                        }
                        Err(e) => {
                            counts.send_errors += 1;
                            *last_error = Some(e);
                        }
                    },
                }
            };
            rx.next_block(POLL, &mut on_frame)?;
            if !ranges.is_empty() {
                let sent = tx.send_batch(arena, ranges);
                counts.forwarded += sent.sent as u64;
                counts.forwarded_bytes += sent.bytes;
                counts.send_errors += sent.failed as u64;
                if sent.last_error.is_some() {
                    *last_error = sent.last_error;
                }
            }
            self.taken += taken;
        }
        Ok(self.counts)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::filter::bpf::Program;

    /// The kernel prefix keeps out outgoing frames only; it is a valid
    /// program.
    #[test]
    fn the_kernel_prefix_is_valid() {
        let p = Program::new(vec![
            Insn::new(LD_W_ABS, 0, 0, LD_PKTTYPE),
            Insn::new(JEQ_K, 0, 1, PACKET_OUTGOING),
            Insn::new(RET_K, 0, 0, 0),
            Insn::new(RET_K, 0, 0, u32::MAX),
        ]);
        assert!(p.is_ok(), "{p:?}");
    }

    #[test]
    fn a_missing_interface_is_named() {
        let e = AfPacketForwarder::open("lo", "no-such-if0", None).expect_err("no such interface");
        assert_eq!(e.kind(), LiveErrorKind::NoSuchInterface);
        assert!(e.to_string().contains("no-such-if0"), "{e}");
    }
}
