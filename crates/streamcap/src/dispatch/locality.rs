//! Locality buffering in the worker (`locality-buffering.txt` §3–4, inside
//! the engine rather than inside libpcap): with [`LocalityConfig::batch`]
//! above 0, a [`Worker`] gathers the packets of its input, copied into a
//! [`LocalityBatch`], and processes each batch grouped by the lower of each
//! packet's two ports ([`locality_key_of`]), so that the packets of one
//! service, and of each of its flows, are processed back to back. Each
//! packet goes through the same path as without batching (the grouped
//! path of [`Worker::process_batch`], 32 packets at a time), with its own
//! timestamp, lengths, record number and interface.
//!
//! This is not `--fanout locality`, which splits a file between workers by
//! the lower port ([`crate::dispatch::fanout`]); this reorders what one
//! worker processes.
//!
//! # When a batch is processed
//!
//! - when it holds [`LocalityConfig::batch`] packets, or its packets and
//!   their bookkeeping reach [`LocalityConfig::max_bytes`] bytes;
//! - before an IP fragment, which is then processed on its own: a later
//!   fragment has no ports, so it cannot be put in its flow's list, and a
//!   datagram must reach its flow in its place among the flow's other
//!   packets (fragments are barriers: everything before one is processed
//!   before it, everything after it after);
//! - at the end of the input and when the run stops (Ctrl-C, a packet
//!   limit, a duration), in [`Worker::finish`], and whenever the caller asks
//!   ([`Worker::flush_locality`]);
//! - on live capture, once its first packet has waited
//!   [`LocalityConfig::timeout`] (checked by [`Worker::advance_clock`],
//!   which the capture loop calls after every block and every poll), so
//!   that a quiet link does not hold packets. File runs do not use the
//!   timeout: their batches end by size, at fragments and at the end, so
//!   the result does not depend on how fast the file is read.
//!
//! With several workers on one file, each gathers only its own packets;
//! the others still move its clock, as without batching.
//!
//! # Time
//!
//! The worker's clock is packet time, the highest timestamp seen; it never
//! goes back. Inside a batch the packets of different flows are processed
//! out of time order, so timers are handled per batch:
//!
//! 1. before the batch, the clock advances to the timestamp of its first
//!    packet (in arrival order) and whatever falls due then fires, as it
//!    would before that packet without batching;
//! 2. while the batch is processed the clock stands at the batch's highest
//!    timestamp and no timer fires (inactivity timeouts, the close linger,
//!    flush and active timeouts): no flow is ended by a timeout while a
//!    packet of it is still waiting in the batch;
//! 3. after the batch, whatever fell due by its highest timestamp fires.
//!
//! A flow's last activity therefore counts as its batch's highest
//! timestamp: its inactivity deadline lies at most one batch's time span
//! later than without batching, so a flow idle for about its timeout (within
//! a batch's span) may end one batch later, or continue where a gap passed
//! the timeout by less than that span. IP fragment reassembly keeps its own
//! timers per packet (fragments are never inside a batch). Timestamps in
//! streams and records are the packets' own.

use super::batch::WARM_GROUP;
use crate::decode::decode_ip;
use crate::deliver::Handler;
use crate::dispatch::Worker;
use crate::source::locality::{locality_key_of, LocalityBatch, NO_PORTS};
use crate::source::pace::{Clock, WallClock};
use crate::source::{LinkType, RawPacket};
use crate::time::Timestamp;
use std::time::Duration;

/// The largest batch, packets.
pub const MAX_LOCALITY_BATCH: usize = 1_000_000;

/// The default most bytes a batch holds: 64 MiB.
pub const DEFAULT_LOCALITY_BYTES: usize = 64 << 20;

/// The default wait of a live capture's partial batch: 100 ms.
pub const DEFAULT_LOCALITY_TIMEOUT: Duration = Duration::from_millis(100);

/// Bytes a gathered packet costs besides its own: its header, its place in
/// the batch's buffer, its list link and its place in the order.
pub const LOCALITY_BOOKKEEPING: usize = std::mem::size_of::<Held>() + 32;

/// Packets handed to the grouped path at a time.
const GROUP: usize = 2 * WARM_GROUP;

/// Locality buffering settings of a worker ([`crate::Config::locality`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LocalityConfig {
    /// Packets gathered before a batch is processed (0: off, packets are
    /// processed as they come; at most [`MAX_LOCALITY_BATCH`]).
    pub batch: usize,
    /// Most bytes a batch holds, its packets' bytes and
    /// [`LOCALITY_BOOKKEEPING`] per packet together; a batch that reaches it
    /// is processed whatever its packet count.
    pub max_bytes: usize,
    /// Live capture: how long the first packet of a partial batch waits
    /// before the batch is processed anyway.
    pub timeout: Duration,
}

impl Default for LocalityConfig {
    fn default() -> Self {
        LocalityConfig {
            batch: 0,
            max_bytes: DEFAULT_LOCALITY_BYTES,
            timeout: DEFAULT_LOCALITY_TIMEOUT,
        }
    }
}

/// What a batch keeps of a [`RawPacket`] besides its bytes.
#[derive(Copy, Clone, Debug)]
pub(crate) struct Held {
    ts: Timestamp,
    record: u64,
    orig_len: u32,
    interface: u32,
    link: LinkType,
}

impl Held {
    fn of(p: &RawPacket<'_>) -> Held {
        Held {
            ts: p.ts,
            record: p.record,
            orig_len: p.orig_len,
            interface: p.interface,
            link: p.link,
        }
    }

    /// The packet again, with its bytes `data`.
    fn packet<'a>(&self, data: &'a [u8]) -> RawPacket<'a> {
        RawPacket {
            ts: self.ts,
            link: self.link,
            data,
            orig_len: self.orig_len,
            record: self.record,
            interface: self.interface,
        }
    }
}

/// A worker's locality buffer: the batch being gathered, and when it began.
pub(crate) struct LocalityStage {
    batch: LocalityBatch<Held>,
    /// Packets per batch (1 to [`MAX_LOCALITY_BATCH`]).
    limit: usize,
    max_bytes: usize,
    timeout_ns: u64,
    /// Measures how long a partial batch has waited (live capture).
    clock: Box<dyn Clock + Send + Sync>,
    /// The clock's reading when the batch's first packet was gathered.
    opened: u64,
    /// The timestamp of the batch's first packet, in arrival order
    /// (`None`: the batch is empty).
    first: Option<Timestamp>,
    /// The highest timestamp since then, of the batch's packets and of the
    /// packets of other workers seen meanwhile.
    latest: Timestamp,
}

impl LocalityStage {
    /// A stage for `cfg`, or `None` when `cfg` turns buffering off.
    pub(crate) fn new(cfg: &LocalityConfig) -> Option<Box<LocalityStage>> {
        (cfg.batch > 0).then(|| {
            Box::new(LocalityStage {
                batch: LocalityBatch::new(),
                limit: cfg.batch.min(MAX_LOCALITY_BATCH),
                max_bytes: cfg.max_bytes,
                timeout_ns: u64::try_from(cfg.timeout.as_nanos()).unwrap_or(u64::MAX),
                clock: Box::new(WallClock::new()),
                opened: 0,
                first: None,
                latest: Timestamp::ZERO,
            })
        })
    }

    /// Adds `p`, with locality key `key`.
    fn push(&mut self, p: &RawPacket<'_>, key: u32) {
        if self.first.is_none() {
            self.first = Some(p.ts);
            self.latest = p.ts;
            self.opened = self.clock.now_ns();
        }
        self.latest = self.latest.max(p.ts);
        self.batch.push(Held::of(p), p.data, key);
    }

    /// Whether the batch is to be processed now for its size.
    fn full(&self) -> bool {
        let n = self.batch.len();
        n >= self.limit
            || self
                .batch
                .bytes()
                .saturating_add(n.saturating_mul(LOCALITY_BOOKKEEPING))
                >= self.max_bytes
    }

    /// How long until the batch's timeout, if it holds packets (zero: due).
    fn wait(&mut self) -> Option<Duration> {
        self.first?;
        let waited = self.clock.now_ns().saturating_sub(self.opened);
        Some(Duration::from_nanos(self.timeout_ns.saturating_sub(waited)))
    }
}

/// Where [`Worker::gather`] puts a packet.
enum Place {
    /// In the batch, in the list of this key.
    Key(u32),
    /// An IP fragment: processed on its own, after the batch.
    Barrier,
    /// Another worker's packet: only its time counts.
    Time,
}

impl<H: Handler> Worker<H> {
    /// This worker with `clock` measuring how long a partial batch waits
    /// (tests inject a clock of their own).
    #[cfg(test)]
    pub(crate) fn with_locality_clock(mut self, clock: Box<dyn Clock + Send + Sync>) -> Self {
        if let Some(s) = self.locality.as_mut() {
            s.clock = clock;
        }
        self
    }

    /// Packets gathered and not yet processed.
    pub fn locality_pending(&self) -> usize {
        self.locality.as_ref().map_or(0, |s| s.batch.len())
    }

    /// How long until the partial batch's timeout, if packets wait in it
    /// (zero when it is due); `None` without locality buffering or with
    /// nothing gathered. A live capture loop polls for at most this long.
    pub fn locality_wait(&mut self) -> Option<Duration> {
        self.locality.as_mut().and_then(|s| s.wait())
    }

    /// Gathers `pkts` into the locality batch, processing the batch
    /// whenever it fills and before each IP fragment.
    #[inline(never)]
    pub(crate) fn gather(&mut self, pkts: &[RawPacket<'_>]) {
        for p in pkts {
            let place = match decode_ip(p.link, p.data) {
                // Counted where it is processed; its place does not matter.
                Err(_) => Place::Key(NO_PORTS),
                Ok(net) if net.fragment.is_some() => Place::Barrier,
                Ok(net)
                    if self
                        .shard
                        .as_ref()
                        .is_some_and(|s| !s.owns_packet(&net, net.payload)) =>
                {
                    Place::Time
                }
                Ok(net) => Place::Key(locality_key_of(&net)),
            };
            let Some(stage) = self.locality.as_mut() else {
                self.process_one(p);
                continue;
            };
            match place {
                Place::Key(key) => {
                    stage.push(p, key);
                    if stage.full() {
                        self.flush_locality();
                    }
                }
                Place::Time if stage.first.is_some() => stage.latest = stage.latest.max(p.ts),
                // Nothing waits: as without batching.
                Place::Time => self.step_clock(p.ts),
                Place::Barrier => {
                    self.flush_locality();
                    self.process_one(p);
                }
            }
        }
    }

    /// Processes the gathered packets now, grouped by the lower of their
    /// ports, with timers handled per batch (see the module's "Time");
    /// nothing without locality buffering or with nothing gathered.
    pub fn flush_locality(&mut self) {
        let Some(mut stage) = self.locality.take() else {
            return;
        };
        if let Some(first) = stage.first.take() {
            // 1. Timers as before the batch's first packet.
            self.step_clock(first);
            // 2. The batch at its latest time, no timer firing.
            if stage.latest > self.now {
                self.now = stage.latest;
            }
            self.timers_held = true;
            stage.batch.seal();
            let mut group: [RawPacket<'_>; GROUP] = [EMPTY; GROUP];
            let mut n = 0;
            for (h, data) in stage.batch.in_order() {
                group[n] = h.packet(data);
                n += 1;
                if n == GROUP {
                    self.collect_returns();
                    self.process_group(&group);
                    n = 0;
                }
            }
            if n > 0 {
                self.collect_returns();
                self.process_group(&group[..n]);
            }
            self.timers_held = false;
            stage.batch.clear();
            // 3. What fell due by the batch's latest time.
            self.step_clock(self.now);
        }
        self.locality = Some(stage);
    }

    /// [`Worker::advance_clock`] with locality buffering: processes the
    /// partial batch if its timeout has passed, then advances the clock to
    /// `now` if no packet waits (a waiting packet's flow must not time out
    /// before the packet is processed; the next call after its batch moves
    /// the clock).
    #[inline(never)]
    pub(crate) fn advance_idle(&mut self, now: Timestamp) {
        if self.locality_wait() == Some(Duration::ZERO) {
            self.flush_locality();
        }
        if self.locality_pending() == 0 {
            self.step_clock(now);
        }
    }
}

/// A placeholder packet for the group array's unused slots.
const EMPTY: RawPacket<'static> = RawPacket {
    ts: Timestamp::ZERO,
    link: LinkType::ETHERNET,
    data: &[],
    orig_len: 0,
    record: 0,
    interface: 0,
};

#[cfg(test)]
mod tests;
