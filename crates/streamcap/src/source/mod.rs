//! Where packets come from: capture files (pcap, pcapng), read with `read(2)`
//! through a sliding window and handed out without copying, and on Linux live interfaces
//! ([`AfPacket`], a memory-mapped `AF_PACKET` ring; with the `xdp` feature
//! also [`af_xdp`], an AF_XDP socket whose memory is a pool of chunks). [`Injector`] and
//! [`replay`] send frames back onto an interface. [`pace`] replays a file at
//! a chosen rate, with the drops of a modelled kernel ring.
//!
//! A source yields [`RawPacket`]s: the captured bytes of one link-layer frame,
//! its timestamp, its link type and its record number in the file. Sources never
//! interpret the bytes beyond the link type; [`crate::decode`] does that.

#[cfg(target_os = "linux")]
pub mod af_xdp;
#[cfg(target_os = "linux")]
pub(crate) mod afpacket;
mod error;
mod file;
#[cfg(target_os = "linux")]
mod inject;
pub mod locality;
pub mod pace;
mod pcap;
mod pcapng;
mod window;

#[cfg(target_os = "linux")]
pub use afpacket::{
    page_size, physical_memory, AfPacket, FanoutJoin, KernelFanout, KernelStats, LiveConfig,
    LiveError, LiveErrorKind, RingConfig, ANY_INTERFACE, MAX_FILTER_INSNS, MAX_SNAPLEN,
    TPACKET_ALIGNMENT,
};
pub use error::{SourceError, SourceErrorKind};
pub use file::FileSource;
#[cfg(target_os = "linux")]
pub use inject::{
    replay, replay_with, BatchOutcome, Injector, ReplayError, ReplayOptions, ReplayReport,
    MAX_BATCH,
};

use crate::time::Timestamp;

/// A live capture socket a worker reads: an [`AfPacket`] ring or an
/// AF_XDP socket with its pool ([`af_xdp`]).
#[cfg(target_os = "linux")]
pub trait LiveSocket: Send {
    /// Waits up to `timeout` for received packets and calls `f` on each of
    /// the next batch of them, in place. Returns how many there were (0
    /// when the timeout passed).
    fn next_block(
        &mut self,
        timeout: std::time::Duration,
        f: &mut dyn FnMut(&RawPacket<'_>),
    ) -> Result<usize, LiveError>;

    /// The kernel's counters, cumulative since the socket opened.
    fn stats(&mut self) -> Result<KernelStats, LiveError>;

    /// An AF_XDP socket's counters, with its pool's; `None` for others.
    fn xsk_stats(&mut self) -> Option<af_xdp::XskStats> {
        None
    }
}

#[cfg(target_os = "linux")]
impl LiveSocket for AfPacket {
    fn next_block(
        &mut self,
        timeout: std::time::Duration,
        f: &mut dyn FnMut(&RawPacket<'_>),
    ) -> Result<usize, LiveError> {
        AfPacket::next_block(self, timeout, f)
    }

    fn stats(&mut self) -> Result<KernelStats, LiveError> {
        AfPacket::stats(self)
    }
}

/// A link-layer header type, as numbered by tcpdump.org's LINKTYPE_ registry.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct LinkType(pub u16);

impl LinkType {
    /// BSD loopback: 4-byte address family in host byte order of the writer.
    pub const NULL: LinkType = LinkType(0);
    /// Ethernet II (with optional 802.1Q / 802.1ad tags).
    pub const ETHERNET: LinkType = LinkType(1);
    /// Raw IP (IPv4 or IPv6, told apart by the version nibble). DLT_RAW on most systems.
    pub const RAW: LinkType = LinkType(101);
    /// Raw IP under its historical BSD number.
    pub const RAW_BSD12: LinkType = LinkType(12);
    /// Raw IP under its historical OpenBSD number.
    pub const RAW_BSD14: LinkType = LinkType(14);
    /// OpenBSD loopback: 4-byte address family in network byte order.
    pub const LOOP: LinkType = LinkType(108);
    /// Linux "cooked" capture, version 1 (16-byte header).
    pub const LINUX_SLL: LinkType = LinkType(113);
    /// Raw IPv4.
    pub const IPV4: LinkType = LinkType(228);
    /// Raw IPv6.
    pub const IPV6: LinkType = LinkType(229);
    /// Linux "cooked" capture, version 2 (20-byte header).
    pub const LINUX_SLL2: LinkType = LinkType(276);

    /// Whether the decoder understands this link type.
    pub fn is_supported(self) -> bool {
        matches!(
            self,
            LinkType::NULL
                | LinkType::ETHERNET
                | LinkType::RAW
                | LinkType::RAW_BSD12
                | LinkType::RAW_BSD14
                | LinkType::LOOP
                | LinkType::LINUX_SLL
                | LinkType::IPV4
                | LinkType::IPV6
                | LinkType::LINUX_SLL2
        )
    }
}

/// One captured frame, borrowed from the source's buffer (no copy).
#[derive(Copy, Clone, Debug)]
pub struct RawPacket<'a> {
    /// When the frame was captured.
    pub ts: Timestamp,
    /// How to interpret `data`.
    pub link: LinkType,
    /// The captured bytes (at most the snapshot length).
    pub data: &'a [u8],
    /// The frame's length on the wire; larger than `data.len()` when the
    /// capture cut it at the snapshot length.
    pub orig_len: u32,
    /// 1-based record number of this frame in its file (counting packet
    /// records only), for error messages.
    pub record: u64,
    /// pcapng interface index (0 for pcap and live sources).
    pub interface: u32,
}

impl RawPacket<'_> {
    /// Whether the snapshot length cut this frame.
    pub fn is_truncated(&self) -> bool {
        (self.data.len() as u64) < u64::from(self.orig_len)
    }
}

/// Anything that yields packets one at a time.
///
/// The returned packet borrows from the source, so it must be processed before
/// the next call. `None` means the input is exhausted; an `Err` means the input
/// is broken at that point (the packets before it were good and stay valid).
/// After an error, further calls return `None`.
pub trait PacketSource {
    /// The next packet, an input error, or `None` at the end.
    fn next_packet(&mut self) -> Option<Result<RawPacket<'_>, SourceError>>;

    /// Appends up to `max` next packets to `out`, all valid at once, so that
    /// a worker can look up every packet's flow before it processes any
    /// ([`crate::Worker::process_batch`]). Returns the input error
    /// that ended the batch, if any: the packets in `out` come before it and
    /// are good. Nothing appended and no error means the input is exhausted.
    ///
    /// The default takes one packet; a source whose packets stay valid
    /// together fills the batch: a file as far as its read window goes, so
    /// a short batch does not mean the end (only an empty one does).
    fn next_batch<'s>(
        &'s mut self,
        out: &mut Vec<RawPacket<'s>>,
        max: usize,
    ) -> Option<SourceError> {
        if max == 0 {
            return None;
        }
        match self.next_packet() {
            Some(Ok(p)) => {
                out.push(p);
                None
            }
            Some(Err(e)) => Some(e),
            None => None,
        }
    }

    /// A human-readable name for messages (the file path, the interface).
    fn name(&self) -> &str;

    /// Approximate progress as (bytes consumed, total bytes), if known.
    fn progress(&self) -> Option<(u64, u64)> {
        None
    }
}
