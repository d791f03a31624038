//! Live capture from a Linux network interface: an `AF_PACKET` socket with a
//! `TPACKET_V3` memory-mapped receive ring.
//!
//! The kernel fills fixed-size *blocks* of a ring shared with this process
//! and hands a block over (its status word becomes `TP_STATUS_USER`) when it
//! is full or when the block timeout expires. [`AfPacket::next_block`] waits
//! for the next handed-over block, calls a closure on each of its packets
//! without copying them, and gives the block back to the kernel. This is the
//! "chunk" of the WireCAP design: a whole block moves between the kernel and
//! the consumer at once.
//!
//! Setup order matters: the socket is created with protocol 0 (it receives
//! nothing), the ring and the classic BPF filter are installed, and only then
//! is the socket bound to the interface, so no packet that the filter would
//! reject is ever queued. A [`FanoutJoin`] then joins a kernel
//! `PACKET_FANOUT` group, and promiscuous mode is switched on last.
//!
//! VLAN tags that the interface stripped into packet metadata (veth and most
//! NICs do) are put back into the frame, as libpcap does, so the callback
//! sees the frame as it was on the wire.
//!
//! The interface name [`ANY_INTERFACE`] (`any`) captures on every interface
//! at once, as tcpdump's `-i any`: the socket is bound to no interface
//! (index 0). The interfaces' link layers differ, so each packet is handed
//! over "cooked", as libpcap does there: its link-layer header (up to the
//! kernel's network offset) is replaced by a Linux cooked-capture header
//! ([`LinkType::LINUX_SLL`], 16 bytes: packet type, hardware type, hardware
//! address, protocol) built from the `sockaddr_ll` the kernel wrote beside
//! it. The protocol is the Ethernet type of an Ethernet or loopback frame
//! (so that a VLAN tag left in the frame, the inner one of QinQ, stays
//! announced), else the kernel's protocol; a stripped tag goes back after
//! the header's first 14 bytes, where libpcap puts it.
//!
//! On a loopback interface every packet passes the capture point twice: as
//! sent (`PACKET_OUTGOING`) and as received. Like libpcap, the socket keeps
//! only the received copy: a few instructions in front of the kernel filter
//! drop outgoing packets of the loopback interface (on `lo`, and on `any`).
//!
//! Everything that talks to the kernel is in small `unsafe` functions at the
//! bottom of this file; the block walker ([`walk_block`]) is safe code over a
//! byte slice and bounds-checks every offset the kernel wrote.
#![allow(unsafe_code)]

use super::{LinkType, RawPacket};
use crate::filter::bpf::Insn;
use crate::time::Timestamp;
use std::ffi::{c_int, c_void, CString};
use std::fmt;
use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

// ---------------------------------------------------------------------------
// Kernel ABI constants and layouts (<linux/if_packet.h>, <linux/if_ether.h>)
// ---------------------------------------------------------------------------

/// The interface name that captures on every interface (cooked, see the
/// module documentation).
pub const ANY_INTERFACE: &str = "any";

/// `PACKET_ADD_MEMBERSHIP` socket option.
const PACKET_ADD_MEMBERSHIP: c_int = 1;
/// `PACKET_RX_RING` socket option.
const PACKET_RX_RING: c_int = 5;
/// `PACKET_STATISTICS` socket option.
const PACKET_STATISTICS: c_int = 6;
/// `PACKET_VERSION` socket option.
const PACKET_VERSION: c_int = 10;
/// `PACKET_RESERVE` socket option.
const PACKET_RESERVE: c_int = 12;
/// `PACKET_FANOUT` socket option.
const PACKET_FANOUT: c_int = 18;
/// `TPACKET_V3` (value of `enum tpacket_versions`).
const TPACKET_V3: c_int = 2;
/// `PACKET_MR_PROMISC` membership type.
const PACKET_MR_PROMISC: u16 = 1;

/// `PACKET_FANOUT_FLAG_ROLLOVER`.
const FANOUT_FLAG_ROLLOVER: u32 = 0x1000;
/// `PACKET_FANOUT_FLAG_DEFRAG`.
const FANOUT_FLAG_DEFRAG: u32 = 0x8000;

/// Block / packet status: owned by the kernel.
const TP_STATUS_KERNEL: u32 = 0;
/// Block status: handed to user space.
const TP_STATUS_USER: u32 = 1;
/// Packet status: `tp_vlan_tci` is valid.
const TP_STATUS_VLAN_VALID: u32 = 1 << 4;
/// Packet status: `tp_vlan_tpid` is valid.
const TP_STATUS_VLAN_TPID_VALID: u32 = 1 << 6;

/// Frame sizes must be multiples of this (`TPACKET_ALIGNMENT`).
pub const TPACKET_ALIGNMENT: usize = 16;
/// `sizeof(struct tpacket3_hdr)`.
const TPACKET3_HDR_SIZE: usize = 48;
/// `sizeof(struct sockaddr_ll)`, which the kernel stores after the header.
const SOCKADDR_LL_SIZE: usize = 20;
/// `TPACKET3_HDRLEN`: where the headroom in front of a packet starts.
const TPACKET3_HDRLEN: usize = TPACKET3_HDR_SIZE + SOCKADDR_LL_SIZE;

/// Byte offsets of the fields of `struct tpacket_block_desc` used here.
mod block_desc {
    /// `hdr.bh1.block_status`.
    pub const BLOCK_STATUS: usize = 8;
    /// `hdr.bh1.num_pkts`.
    pub const NUM_PKTS: usize = 12;
    /// `hdr.bh1.offset_to_first_pkt`.
    pub const OFFSET_TO_FIRST_PKT: usize = 16;
    /// Size of the descriptor (nothing may start before this).
    pub const SIZE: usize = 48;
}

/// Byte offsets of the fields of `struct tpacket3_hdr` used here.
mod pkt_hdr {
    pub const NEXT_OFFSET: usize = 0;
    pub const SEC: usize = 4;
    pub const NSEC: usize = 8;
    pub const SNAPLEN: usize = 12;
    pub const LEN: usize = 16;
    pub const STATUS: usize = 20;
    pub const MAC: usize = 24;
    pub const NET: usize = 26;
    pub const VLAN_TCI: usize = 32;
    pub const VLAN_TPID: usize = 36;
}

/// Bytes reserved in front of every packet (`PACKET_RESERVE`): room to put
/// back one 802.1Q tag.
const VLAN_TAG_LEN: usize = 4;
/// The 802.1Q tag protocol identifier, used when the kernel gives no TPID.
const ETH_P_8021Q: u16 = 0x8100;
/// Length of the two MAC addresses that precede a VLAN tag.
const MAC_ADDRS_LEN: usize = 12;
/// `ETH_P_ALL`: every protocol.
const ETH_P_ALL: u16 = 0x0003;
/// `ARPHRD_ETHER`.
const ARPHRD_ETHER: u16 = 1;
/// `ARPHRD_LOOPBACK` (Linux loopback frames carry a zeroed Ethernet header).
const ARPHRD_LOOPBACK: u16 = 772;

/// The largest snapshot length; at or above it no truncating filter is attached.
pub const MAX_SNAPLEN: u32 = 262_144;
/// `BPF_MAXINSNS`: the kernel's limit on a classic BPF program.
pub const MAX_FILTER_INSNS: usize = 4096;
/// `BPF_RET | BPF_K`.
const BPF_RET_K: u16 = 0x06;
/// `BPF_LD | BPF_W | BPF_ABS`: load a 32-bit word (here: ancillary data).
const BPF_LD_W_ABS: u16 = 0x20;
/// `BPF_LD | BPF_IMM`: load a constant.
const BPF_LD_IMM: u16 = 0x00;
/// `BPF_JMP | BPF_JEQ | BPF_K`.
const BPF_JEQ_K: u16 = 0x15;
/// `SKF_AD_OFF + SKF_AD_PKTTYPE`: the packet type (`PACKET_OUTGOING`, ...).
const SKF_AD_PKTTYPE: u32 = 0xffff_f000 + 4;
/// `SKF_AD_OFF + SKF_AD_IFINDEX`: the index of the packet's interface.
const SKF_AD_IFINDEX: u32 = 0xffff_f000 + 8;
/// `PACKET_OUTGOING`: a packet this host sent.
const PACKET_OUTGOING: u32 = 4;
/// The Linux cooked-capture header (`DLT_LINUX_SLL`).
const SLL_HDR_LEN: usize = 16;
/// Where the `sockaddr_ll` is in a packet's ring slot:
/// `TPACKET_ALIGN(sizeof(struct tpacket3_hdr))`.
const SOCKADDR_LL_AT: usize = 48;

/// `struct tpacket_req3`.
#[repr(C)]
struct TpacketReq3 {
    tp_block_size: u32,
    tp_block_nr: u32,
    tp_frame_size: u32,
    tp_frame_nr: u32,
    tp_retire_blk_tov: u32,
    tp_sizeof_priv: u32,
    tp_feature_req_word: u32,
}

/// `struct tpacket_stats_v3`.
#[repr(C)]
#[derive(Default)]
struct TpacketStatsV3 {
    tp_packets: u32,
    tp_drops: u32,
    tp_freeze_q_cnt: u32,
}

/// `struct packet_mreq`.
#[repr(C)]
struct PacketMreq {
    mr_ifindex: c_int,
    mr_type: u16,
    mr_alen: u16,
    mr_address: [u8; 8],
}

// ---------------------------------------------------------------------------
// Configuration
// ---------------------------------------------------------------------------

/// The kernel's `PACKET_FANOUT` modes: how a group of sockets bound to the
/// same interface shares its packets (`pcap-fanout.txt` III-B).
///
/// Only [`KernelFanout::Hash`] keeps *flow affinity* (every packet of a
/// connection, in both directions, goes to the same socket), which stream
/// reassembly needs; the others are for packet consumers.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum KernelFanout {
    /// `PACKET_FANOUT_HASH`: by the symmetric flow hash of the packet.
    Hash,
    /// `PACKET_FANOUT_LB`: round robin.
    Lb,
    /// `PACKET_FANOUT_CPU`: by the CPU that received the packet.
    Cpu,
    /// `PACKET_FANOUT_ROLLOVER`: fill one socket, move on when it is full.
    Rollover,
    /// `PACKET_FANOUT_RND`: at random.
    Rnd,
    /// `PACKET_FANOUT_QM`: by the NIC receive queue the packet came from.
    Qm,
}

impl KernelFanout {
    /// Every mode, in kernel numbering order.
    pub const ALL: [KernelFanout; 6] = [
        KernelFanout::Hash,
        KernelFanout::Lb,
        KernelFanout::Cpu,
        KernelFanout::Rollover,
        KernelFanout::Rnd,
        KernelFanout::Qm,
    ];

    /// The lower-case name (`hash`, `lb`, `cpu`, `rollover`, `rnd`, `qm`),
    /// which [`KernelFanout::parse`] accepts.
    pub fn name(self) -> &'static str {
        match self {
            KernelFanout::Hash => "hash",
            KernelFanout::Lb => "lb",
            KernelFanout::Cpu => "cpu",
            KernelFanout::Rollover => "rollover",
            KernelFanout::Rnd => "rnd",
            KernelFanout::Qm => "qm",
        }
    }

    /// The mode called `name` (case-insensitive), or `None`.
    pub fn parse(name: &str) -> Option<KernelFanout> {
        KernelFanout::ALL
            .into_iter()
            .find(|m| m.name().eq_ignore_ascii_case(name))
    }

    /// Whether all packets of a connection, both directions, reach the same
    /// socket (true only for [`KernelFanout::Hash`]).
    pub fn keeps_flow_affinity(self) -> bool {
        self == KernelFanout::Hash
    }

    /// The kernel's `PACKET_FANOUT_*` number.
    pub fn kernel_value(self) -> u16 {
        match self {
            KernelFanout::Hash => 0,
            KernelFanout::Lb => 1,
            KernelFanout::Cpu => 2,
            KernelFanout::Rollover => 3,
            KernelFanout::Rnd => 4,
            KernelFanout::Qm => 5,
        }
    }
}

impl fmt::Display for KernelFanout {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for KernelFanout {
    type Err = String;

    /// Parses a mode name; the error lists the valid names.
    fn from_str(s: &str) -> Result<KernelFanout, String> {
        KernelFanout::parse(s).ok_or_else(|| {
            let names: Vec<&str> = KernelFanout::ALL.iter().map(|m| m.name()).collect();
            format!(
                "unknown fan-out mode {s:?} (expected one of: {})",
                names.join(", ")
            )
        })
    }
}

/// Membership of a kernel fan-out group. Every socket of a group must be
/// bound to the same interface and use the same mode and flags (the kernel
/// refuses a mismatch with `EINVAL`).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct FanoutJoin {
    /// The group id, shared by the sockets of one group (per network namespace).
    pub group: u16,
    /// How packets are spread over the group.
    pub mode: KernelFanout,
    /// `PACKET_FANOUT_FLAG_DEFRAG`: reassemble IP fragments before choosing a
    /// socket, so that all fragments of a datagram (which lack ports) follow
    /// their flow. Use it with [`KernelFanout::Hash`].
    pub defrag: bool,
    /// `PACKET_FANOUT_FLAG_ROLLOVER`: when the chosen socket is full, try the
    /// others instead of dropping (gives up flow affinity under overload).
    pub rollover: bool,
}

impl FanoutJoin {
    /// The `PACKET_FANOUT` option value: `group | ((mode | flags) << 16)`.
    pub fn option_value(&self) -> u32 {
        let mut type_flags = u32::from(self.mode.kernel_value());
        if self.defrag {
            type_flags |= FANOUT_FLAG_DEFRAG;
        }
        if self.rollover {
            type_flags |= FANOUT_FLAG_ROLLOVER;
        }
        u32::from(self.group) | (type_flags << 16)
    }

    /// Joins packet socket `fd` (bound to its interface) to the group:
    /// `setsockopt(PACKET_FANOUT)`. The kernel refuses (`EINVAL`) a mode or
    /// flags that differ from the group's other members'.
    pub fn apply(&self, fd: BorrowedFd<'_>) -> io::Result<()> {
        let value = self.option_value() as c_int;
        set_option(&fd, libc::SOL_PACKET, PACKET_FANOUT, &value)
    }
}

/// Geometry of the `TPACKET_V3` receive ring.
///
/// The ring is `block_count` blocks of `block_size` bytes, locked in memory by
/// the kernel. A block is handed over when it is full or `block_timeout_ms`
/// after its first packet, whichever comes first.
///
/// At low packet rates every timeout hands over a nearly empty block, so a
/// consumer that stops reading fills the ring after about
/// `block_count * block_timeout_ms` milliseconds whatever its size; after
/// that the kernel drops packets (counted in [`KernelStats::drops`]).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct RingConfig {
    /// Bytes per block; a multiple of the page size (a power of two avoids
    /// waste: the kernel allocates each block as a power-of-two run of pages).
    pub block_size: usize,
    /// Number of blocks.
    pub block_count: usize,
    /// The nominal frame size; `TPACKET_V3` packs packets of any size into a
    /// block, so this only has to be a multiple of [`TPACKET_ALIGNMENT`], at
    /// most `block_size` and at least the per-packet header.
    pub frame_size: usize,
    /// Milliseconds after which a partly filled block is handed over anyway
    /// (the latency bound at low packet rates).
    pub block_timeout_ms: u32,
}

impl RingConfig {
    /// Block size used by [`RingConfig::default`] and [`RingConfig::with_total_size`]: 1 MiB.
    pub const DEFAULT_BLOCK_SIZE: usize = 1 << 20;
    /// Frame size used by the defaults.
    pub const DEFAULT_FRAME_SIZE: usize = 2048;
    /// Block timeout used by the defaults, milliseconds.
    pub const DEFAULT_BLOCK_TIMEOUT_MS: u32 = 10;

    /// A ring of about `bytes` bytes (rounded up to whole blocks; at least one
    /// block): 1 MiB blocks, or for rings under 1 MiB a single block of
    /// `bytes` rounded up to a power of two of at least 64 KiB.
    pub fn with_total_size(bytes: usize) -> RingConfig {
        let block_size = if bytes >= Self::DEFAULT_BLOCK_SIZE {
            Self::DEFAULT_BLOCK_SIZE
        } else {
            bytes.max(1 << 16).next_power_of_two()
        };
        RingConfig {
            block_size,
            block_count: bytes.div_ceil(block_size).max(1),
            frame_size: Self::DEFAULT_FRAME_SIZE,
            block_timeout_ms: Self::DEFAULT_BLOCK_TIMEOUT_MS,
        }
    }

    /// The ring's size in bytes (`block_size * block_count`, saturating).
    pub fn total_size(&self) -> usize {
        self.block_size.saturating_mul(self.block_count)
    }

    /// Checks the geometry against the kernel's rules, for `page_size`-byte
    /// pages; the error says which rule is broken.
    pub fn validate(&self, page_size: usize) -> Result<(), String> {
        let min_frame = TPACKET3_HDRLEN + VLAN_TAG_LEN;
        if self.block_count == 0 {
            return Err("block_count is 0".into());
        }
        if self.block_size == 0 || page_size == 0 || self.block_size % page_size != 0 {
            return Err(format!(
                "block_size {} is not a positive multiple of the page size {page_size}",
                self.block_size
            ));
        }
        if self.frame_size < min_frame || self.frame_size % TPACKET_ALIGNMENT != 0 {
            return Err(format!(
                "frame_size {} is not a multiple of {TPACKET_ALIGNMENT} of at least {min_frame} bytes",
                self.frame_size
            ));
        }
        if self.frame_size > self.block_size {
            return Err(format!(
                "frame_size {} is larger than block_size {}",
                self.frame_size, self.block_size
            ));
        }
        let frames = (self.block_size / self.frame_size).checked_mul(self.block_count);
        if u32::try_from(self.block_size).is_err()
            || u32::try_from(self.block_count).is_err()
            || frames.and_then(|n| u32::try_from(n).ok()).is_none()
            || self.block_size.checked_mul(self.block_count).is_none()
        {
            return Err(format!(
                "{} blocks of {} bytes with {}-byte frames exceed the kernel's 32-bit limits",
                self.block_count, self.block_size, self.frame_size
            ));
        }
        Ok(())
    }
}

impl Default for RingConfig {
    /// 32 blocks of 1 MiB (32 MiB), 2048-byte frames, 10 ms block timeout.
    ///
    /// Sized to absorb a 100 ms burst at 1 Gbit/s: 12.5 MB of wire bytes, or
    /// about 149 000 minimum-size frames, each of which takes about 176 bytes
    /// of ring (header, headroom, 64 bytes of frame, alignment): 26 MB.
    fn default() -> RingConfig {
        RingConfig {
            block_size: Self::DEFAULT_BLOCK_SIZE,
            block_count: 32,
            frame_size: Self::DEFAULT_FRAME_SIZE,
            block_timeout_ms: Self::DEFAULT_BLOCK_TIMEOUT_MS,
        }
    }
}

/// Everything [`AfPacket::open`] needs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LiveConfig {
    /// The interface name (`eth0`).
    pub interface: String,
    /// Ring geometry.
    pub ring: RingConfig,
    /// Bytes kept of each frame (the rest is cut; `orig_len` keeps the wire
    /// length). Values of [`MAX_SNAPLEN`] and above mean "whole frames".
    pub snaplen: u32,
    /// Receive frames not addressed to this host (needs `CAP_NET_ADMIN`).
    pub promiscuous: bool,
    /// Join this kernel fan-out group.
    pub fanout: Option<FanoutJoin>,
    /// A classic BPF program (e.g. from
    /// [`crate::filter::libpcap::Libpcap::compile`] for the link type and
    /// `snaplen`), run by the kernel before a packet is queued. Its return
    /// value is the number of bytes kept, so it must have been compiled for
    /// this snapshot length. The kernel sees frames *without* a VLAN tag
    /// that the interface stripped into metadata.
    pub filter: Option<Vec<Insn>>,
}

impl LiveConfig {
    /// Whole frames from `interface` with the default ring, not promiscuous,
    /// no fan-out, no filter.
    pub fn new(interface: impl Into<String>) -> LiveConfig {
        LiveConfig {
            interface: interface.into(),
            ring: RingConfig::default(),
            snaplen: MAX_SNAPLEN,
            promiscuous: false,
            fanout: None,
            filter: None,
        }
    }
}

/// Counters kept by the kernel for one socket, cumulative since
/// [`AfPacket::open`] (the kernel resets them on each read; [`AfPacket::stats`]
/// adds them up).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct KernelStats {
    /// Packets that passed the socket filter, including those then dropped.
    pub packets: u64,
    /// Packets that passed the filter but found no room in the ring.
    pub drops: u64,
    /// How often the ring was full (the kernel "froze" the queue).
    pub freeze_count: u64,
}

// ---------------------------------------------------------------------------
// Errors
// ---------------------------------------------------------------------------

/// What kind of failure a [`LiveError`] is, so callers can react to it.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum LiveErrorKind {
    /// The interface does not exist (in this network namespace).
    NoSuchInterface,
    /// The process lacks root or `CAP_NET_RAW` (and `CAP_NET_ADMIN` for
    /// promiscuous mode).
    PermissionDenied,
    /// The configuration was refused (ring geometry, filter, fan-out group
    /// mismatch, interface name).
    InvalidConfig,
    /// The interface's hardware type is not one this module can capture.
    UnsupportedLinkType,
    /// A frame was too long for the interface (see [`crate::source::Injector::send`]).
    FrameTooLong,
    /// The interface went down or disappeared while in use.
    InterfaceDown,
    /// Any other system call failure.
    Os,
}

/// An error of live capture or injection: which interface, what operation,
/// and the system's reason.
///
/// Displays as `<interface>: <what> failed: <reason>`, where the reason is the
/// `strerror` text with a hint for the common cases (permissions, missing
/// interface).
#[derive(Debug)]
pub struct LiveError {
    interface: String,
    what: String,
    kind: LiveErrorKind,
    reason: String,
    os: Option<io::Error>,
}

impl LiveError {
    /// An error from a failed system call, classified by its errno.
    pub(crate) fn os(interface: &str, what: impl Into<String>, err: io::Error) -> LiveError {
        let (kind, hint) = match err.raw_os_error() {
            Some(libc::EPERM) | Some(libc::EACCES) => (
                LiveErrorKind::PermissionDenied,
                " (needs root or CAP_NET_RAW, and CAP_NET_ADMIN for promiscuous mode)",
            ),
            Some(libc::ENODEV) | Some(libc::ENXIO) => {
                (LiveErrorKind::NoSuchInterface, " (no such interface)")
            }
            Some(libc::ENETDOWN) => (LiveErrorKind::InterfaceDown, " (the interface is down)"),
            _ => (LiveErrorKind::Os, ""),
        };
        LiveError {
            interface: interface.to_string(),
            what: what.into(),
            kind,
            reason: format!("{err}{hint}"),
            os: Some(err),
        }
    }

    /// An error that is not a system call's (bad configuration and the like).
    pub(crate) fn other(
        interface: &str,
        what: impl Into<String>,
        kind: LiveErrorKind,
        reason: impl Into<String>,
    ) -> LiveError {
        LiveError {
            interface: interface.to_string(),
            what: what.into(),
            kind,
            reason: reason.into(),
            os: None,
        }
    }

    /// The interface concerned.
    pub fn interface(&self) -> &str {
        &self.interface
    }

    /// The operation that failed (`bind`, `mmap of the receive ring`, ...).
    pub fn what(&self) -> &str {
        &self.what
    }

    /// The kind of failure.
    pub fn kind(&self) -> LiveErrorKind {
        self.kind
    }

    /// The errno, when a system call failed.
    pub fn raw_os_error(&self) -> Option<i32> {
        self.os.as_ref().and_then(io::Error::raw_os_error)
    }
}

impl fmt::Display for LiveError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}: {} failed: {}",
            self.interface, self.what, self.reason
        )
    }
}

impl std::error::Error for LiveError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.os.as_ref().map(|e| e as _)
    }
}

// ---------------------------------------------------------------------------
// The capture socket
// ---------------------------------------------------------------------------

/// A live capture socket: `AF_PACKET`, `TPACKET_V3` receive ring, optional
/// kernel filter and fan-out group.
///
/// It is `Send`, so each worker thread can own one; dropping it unmaps the
/// ring and closes the socket (which also leaves the fan-out group and
/// drops the promiscuous-mode membership).
pub struct AfPacket {
    interface: String,
    link: LinkType,
    snaplen: u32,
    ring: Ring,
    /// Index of the next block to hand to the caller.
    current: usize,
    /// Packets delivered so far (the `record` of the last one).
    delivered: u64,
    /// Blocks whose headers were inconsistent (walk cut short).
    corrupt_blocks: u64,
    /// Where a VLAN-tagged frame is rebuilt when its headroom is too small.
    scratch: Vec<u8>,
    stats: KernelStats,
    /// Declared last: closed after the ring is unmapped.
    fd: OwnedFd,
}

impl fmt::Debug for AfPacket {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AfPacket")
            .field("interface", &self.interface)
            .field("link", &self.link)
            .field("ring_bytes", &self.ring.len)
            .field("current", &self.current)
            .field("delivered", &self.delivered)
            .finish()
    }
}

impl AfPacket {
    /// Opens a capture on `cfg.interface` (see the module documentation for
    /// the setup order, which guarantees that no packet rejected by the
    /// filter is ever queued).
    ///
    /// Errors name the interface and the failed step: a missing interface
    /// gives [`LiveErrorKind::NoSuchInterface`], missing privileges
    /// [`LiveErrorKind::PermissionDenied`], a bad ring geometry or filter
    /// [`LiveErrorKind::InvalidConfig`], an interface that is not Ethernet or
    /// loopback [`LiveErrorKind::UnsupportedLinkType`].
    pub fn open(cfg: &LiveConfig) -> Result<AfPacket, LiveError> {
        let name = cfg.interface.as_str();
        cfg.ring.validate(page_size()).map_err(|reason| {
            LiveError::other(
                name,
                "ring configuration",
                LiveErrorKind::InvalidConfig,
                reason,
            )
        })?;
        if let Some(phys) = physical_memory() {
            if cfg.ring.total_size() as u64 > phys {
                return Err(LiveError::other(
                    name,
                    "ring configuration",
                    LiveErrorKind::InvalidConfig,
                    format!(
                        "a ring of {} bytes is larger than the machine's physical memory ({phys} bytes)",
                        cfg.ring.total_size()
                    ),
                ));
            }
        }
        let any = name == ANY_INTERFACE;
        let ifindex = if any { 0 } else { interface_index(name)? };
        // Loopback packets are seen twice (sent, received): keep one copy.
        let loopback = interface_index("lo")
            .ok()
            .filter(|&lo| any || lo == ifindex);
        let mut filter = match &cfg.filter {
            Some(f) => Some(f.clone()),
            None if cfg.snaplen < MAX_SNAPLEN => {
                Some(vec![Insn::new(BPF_RET_K, 0, 0, cfg.snaplen)])
            }
            None => None,
        };
        if let Some(lo) = loopback {
            let program = filter.unwrap_or_else(|| vec![Insn::new(BPF_RET_K, 0, 0, u32::MAX)]);
            filter = Some(drop_loopback_outgoing(lo, &program));
        }
        if let Some(f) = &filter {
            if f.is_empty() || f.len() > MAX_FILTER_INSNS {
                return Err(LiveError::other(
                    name,
                    "attaching the BPF filter",
                    LiveErrorKind::InvalidConfig,
                    format!(
                        "the program has {} instructions (1 to {MAX_FILTER_INSNS} allowed)",
                        f.len()
                    ),
                ));
            }
        }
        let fd = packet_socket(name, 0)?;
        set_option(&fd, libc::SOL_PACKET, PACKET_VERSION, &TPACKET_V3)
            .map_err(|e| LiveError::os(name, "setting TPACKET_V3", e))?;
        let reserve = VLAN_TAG_LEN as c_int;
        set_option(&fd, libc::SOL_PACKET, PACKET_RESERVE, &reserve)
            .map_err(|e| LiveError::os(name, "setting PACKET_RESERVE", e))?;
        let r = &cfg.ring;
        // validate() checked that every value fits in 32 bits.
        let req = TpacketReq3 {
            tp_block_size: r.block_size as u32,
            tp_block_nr: r.block_count as u32,
            tp_frame_size: r.frame_size as u32,
            tp_frame_nr: ((r.block_size / r.frame_size) * r.block_count) as u32,
            tp_retire_blk_tov: r.block_timeout_ms,
            tp_sizeof_priv: 0,
            tp_feature_req_word: 0,
        };
        set_option(&fd, libc::SOL_PACKET, PACKET_RX_RING, &req).map_err(|e| {
            LiveError::os(
                name,
                format!(
                    "creating the receive ring ({} blocks of {} bytes)",
                    r.block_count, r.block_size
                ),
                e,
            )
        })?;
        let ring = Ring::map(&fd, r.block_size, r.block_count)
            .map_err(|e| LiveError::os(name, "mmap of the receive ring", e))?;
        if let Some(program) = &filter {
            attach_filter(&fd, program)
                .map_err(|e| LiveError::os(name, "attaching the BPF filter", e))?;
        }
        bind_packet_socket(&fd, ifindex, ETH_P_ALL).map_err(|e| LiveError::os(name, "bind", e))?;
        let link = if any {
            LinkType::LINUX_SLL
        } else {
            socket_link_type(&fd, name)?
        };
        if let Some(join) = &cfg.fanout {
            join.apply(fd.as_fd()).map_err(|e| {
                LiveError::os(
                    name,
                    format!(
                        "joining fan-out group {} (mode {}, defrag {}, rollover {}; every member must use the same mode and flags)",
                        join.group, join.mode, join.defrag, join.rollover
                    ),
                    e,
                )
            })?;
        }
        // Promiscuous mode is a property of one interface; `any` has none
        // (libpcap does not set it there either).
        if cfg.promiscuous && !any {
            let mreq = PacketMreq {
                mr_ifindex: ifindex as c_int,
                mr_type: PACKET_MR_PROMISC,
                mr_alen: 0,
                mr_address: [0; 8],
            };
            set_option(&fd, libc::SOL_PACKET, PACKET_ADD_MEMBERSHIP, &mreq)
                .map_err(|e| LiveError::os(name, "enabling promiscuous mode", e))?;
        }
        Ok(AfPacket {
            interface: cfg.interface.clone(),
            link,
            snaplen: cfg.snaplen.min(MAX_SNAPLEN),
            ring,
            current: 0,
            delivered: 0,
            corrupt_blocks: 0,
            scratch: Vec::new(),
            stats: KernelStats::default(),
            fd,
        })
    }

    /// The interface this socket captures on.
    pub fn interface(&self) -> &str {
        &self.interface
    }

    /// The link type of the captured frames: [`LinkType::ETHERNET`] (Ethernet
    /// and Linux loopback interfaces; other hardware types are refused by
    /// [`AfPacket::open`]), or [`LinkType::LINUX_SLL`] on [`ANY_INTERFACE`].
    pub fn link_type(&self) -> LinkType {
        self.link
    }

    /// Packets delivered so far by [`AfPacket::next_block`].
    pub fn delivered(&self) -> u64 {
        self.delivered
    }

    /// Blocks whose packet headers pointed outside the block; each was cut
    /// short at the first bad header (the packets before it were delivered).
    /// Always 0 unless the kernel and this code disagree on the ring layout.
    pub fn corrupt_blocks(&self) -> u64 {
        self.corrupt_blocks
    }

    /// Waits up to `timeout` for the next block the kernel has handed over,
    /// calls `f` on each of its packets in order, gives the block back to the
    /// kernel and returns the number of packets.
    ///
    /// Returns `Ok(0)` when the timeout passes with no block ready, and also
    /// at once when the wait is interrupted by a signal (`EINTR`), so a
    /// signal handler's flag can be checked. Each packet's `record` is its
    /// 1-based number since [`AfPacket::open`]; `interface` is 0. The
    /// packet data is valid only during the call of `f`.
    pub fn next_block(
        &mut self,
        timeout: Duration,
        f: &mut dyn FnMut(&RawPacket<'_>),
    ) -> Result<usize, LiveError> {
        let deadline = Instant::now().checked_add(timeout);
        while !self.ring.block_is_ready(self.current) {
            let wait = deadline.map(|d| d.saturating_duration_since(Instant::now()));
            let Some(wait_ms) = poll_timeout_ms(wait) else {
                return Ok(0);
            };
            match poll_readable(&self.fd, wait_ms) {
                Ok(PollOutcome::Ready) => {}
                Ok(PollOutcome::TimedOut) => {
                    if self.ring.block_is_ready(self.current) {
                        break;
                    }
                    if wait_ms == 0 || deadline.is_some_and(|d| Instant::now() >= d) {
                        return Ok(0);
                    }
                }
                Ok(PollOutcome::Error) => {
                    let err = socket_error(&self.fd)
                        .map_err(|e| LiveError::os(&self.interface, "getsockopt(SO_ERROR)", e))?;
                    if let Some(err) = err {
                        return Err(LiveError::os(&self.interface, "receiving", err));
                    }
                }
                Ok(PollOutcome::HungUp) => {
                    return Err(LiveError::other(
                        &self.interface,
                        "poll",
                        LiveErrorKind::InterfaceDown,
                        "the socket was hung up (POLLHUP/POLLNVAL)",
                    ))
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => return Ok(0),
                Err(e) => return Err(LiveError::os(&self.interface, "poll", e)),
            }
        }
        let index = self.current;
        let ctx = WalkContext {
            link: self.link,
            snaplen: self.snaplen,
            first_record: self.delivered + 1,
        };
        let walk = self
            .ring
            .with_user_block(index, |block| walk_block(block, &ctx, &mut self.scratch, f));
        self.current = (index + 1) % self.ring.block_count;
        self.delivered += walk.packets as u64;
        if walk.corrupt {
            self.corrupt_blocks += 1;
        }
        Ok(walk.packets)
    }

    /// The kernel's counters, cumulative since [`AfPacket::open`].
    pub fn stats(&mut self) -> Result<KernelStats, LiveError> {
        let mut raw = TpacketStatsV3::default();
        get_option(&self.fd, libc::SOL_PACKET, PACKET_STATISTICS, &mut raw)
            .map_err(|e| LiveError::os(&self.interface, "getsockopt(PACKET_STATISTICS)", e))?;
        self.stats.packets = self.stats.packets.saturating_add(raw.tp_packets.into());
        self.stats.drops = self.stats.drops.saturating_add(raw.tp_drops.into());
        self.stats.freeze_count = self
            .stats
            .freeze_count
            .saturating_add(raw.tp_freeze_q_cnt.into());
        Ok(self.stats)
    }
}

/// `program` behind a prefix that drops the packets the loopback interface
/// (index `lo`) sends: each is also seen as received, and libpcap keeps that
/// copy only. The prefix loads ancillary data (packet type, interface
/// index), so it resets the accumulator before `program` starts, as a fresh
/// program expects.
fn drop_loopback_outgoing(lo: u32, program: &[Insn]) -> Vec<Insn> {
    let mut p = vec![
        Insn::new(BPF_LD_W_ABS, 0, 0, SKF_AD_PKTTYPE),
        // Outgoing: check the interface; else on to the program.
        Insn::new(BPF_JEQ_K, 0, 3, PACKET_OUTGOING),
        Insn::new(BPF_LD_W_ABS, 0, 0, SKF_AD_IFINDEX),
        // The loopback interface: drop; else on to the program.
        Insn::new(BPF_JEQ_K, 0, 1, lo),
        Insn::new(BPF_RET_K, 0, 0, 0),
        Insn::new(BPF_LD_IMM, 0, 0, 0),
    ];
    p.extend_from_slice(program);
    p
}

/// Milliseconds to give poll(2) for `wait` (rounded up so a sub-millisecond
/// remainder still waits), -1 for "no limit", `None` when the time is up.
pub(crate) fn poll_timeout_ms(wait: Option<Duration>) -> Option<c_int> {
    match wait {
        None => Some(-1),
        Some(w) if w.is_zero() => None,
        Some(w) => {
            let ms = w.as_micros().div_ceil(1000);
            Some(c_int::try_from(ms).unwrap_or(c_int::MAX))
        }
    }
}

// ---------------------------------------------------------------------------
// Walking a block (safe code over bytes)
// ---------------------------------------------------------------------------

/// What [`walk_block`] needs besides the block.
#[derive(Copy, Clone, Debug)]
struct WalkContext {
    link: LinkType,
    snaplen: u32,
    first_record: u64,
}

/// What [`walk_block`] did.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
struct Walk {
    /// Packets passed to the callback.
    packets: usize,
    /// Whether a header pointed outside the block (the walk stopped there).
    corrupt: bool,
}

fn read_u16(b: &[u8], at: usize) -> Option<u16> {
    let bytes = b.get(at..at.checked_add(2)?)?;
    Some(u16::from_ne_bytes([bytes[0], bytes[1]]))
}

fn read_u32(b: &[u8], at: usize) -> Option<u32> {
    let bytes = b.get(at..at.checked_add(4)?)?;
    Some(u32::from_ne_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]))
}

/// The fields of one `tpacket3_hdr`.
struct PacketHeader {
    next_offset: usize,
    sec: u32,
    nsec: u32,
    snaplen: usize,
    len: u32,
    status: u32,
    mac: usize,
    net: usize,
    vlan_tci: u32,
    vlan_tpid: u16,
}

impl PacketHeader {
    /// Reads the header at `at`, or `None` if it does not fit in `block`.
    fn read(block: &[u8], at: usize) -> Option<PacketHeader> {
        let h = block.get(at..at.checked_add(TPACKET3_HDR_SIZE)?)?;
        Some(PacketHeader {
            next_offset: read_u32(h, pkt_hdr::NEXT_OFFSET)? as usize,
            sec: read_u32(h, pkt_hdr::SEC)?,
            nsec: read_u32(h, pkt_hdr::NSEC)?,
            snaplen: read_u32(h, pkt_hdr::SNAPLEN)? as usize,
            len: read_u32(h, pkt_hdr::LEN)?,
            status: read_u32(h, pkt_hdr::STATUS)?,
            mac: usize::from(read_u16(h, pkt_hdr::MAC)?),
            net: usize::from(read_u16(h, pkt_hdr::NET)?),
            vlan_tci: read_u32(h, pkt_hdr::VLAN_TCI)?,
            vlan_tpid: read_u16(h, pkt_hdr::VLAN_TPID)?,
        })
    }

    /// The 802.1Q/802.1ad tag the interface stripped, as (TPID, TCI).
    /// Like libpcap, a nonzero TCI counts even without the valid flag
    /// (kernels before 3.0 did not set it).
    fn stripped_vlan(&self) -> Option<(u16, u16)> {
        if self.status & TP_STATUS_VLAN_VALID == 0 && self.vlan_tci == 0 {
            return None;
        }
        let tpid = if self.status & TP_STATUS_VLAN_TPID_VALID != 0 && self.vlan_tpid != 0 {
            self.vlan_tpid
        } else {
            ETH_P_8021Q
        };
        Some((tpid, self.vlan_tci as u16))
    }
}

/// Calls `f` on each packet of a block the kernel has handed over.
///
/// Every offset read from the block is checked against its length; the first
/// packet whose header or data would reach outside the block ends the walk
/// (`corrupt`), as does a zero `tp_next_offset` before the last packet.
/// VLAN tags stripped into metadata are put back in place (using the
/// `PACKET_RESERVE` headroom), or in `scratch` if the headroom is missing.
fn walk_block(
    block: &mut [u8],
    ctx: &WalkContext,
    scratch: &mut Vec<u8>,
    f: &mut dyn FnMut(&RawPacket<'_>),
) -> Walk {
    let mut walk = Walk {
        packets: 0,
        corrupt: false,
    };
    let (Some(count), Some(first)) = (
        read_u32(block, block_desc::NUM_PKTS),
        read_u32(block, block_desc::OFFSET_TO_FIRST_PKT),
    ) else {
        walk.corrupt = true;
        return walk;
    };
    let mut at = first as usize;
    for i in 0..count {
        if at < block_desc::SIZE {
            walk.corrupt = true;
            break;
        }
        let Some(h) = PacketHeader::read(block, at) else {
            walk.corrupt = true;
            break;
        };
        let data_start = at.checked_add(h.mac);
        let data_end = data_start.and_then(|s| s.checked_add(h.snaplen));
        let (Some(start), Some(end)) = (data_start, data_end) else {
            walk.corrupt = true;
            break;
        };
        if h.mac < TPACKET3_HDR_SIZE || end > block.len() {
            walk.corrupt = true;
            break;
        }
        let mut orig_len = h.len;
        let mut range = start..end;
        let mut in_scratch = false;
        if ctx.link == LinkType::LINUX_SLL {
            // A cooked packet: its link-layer header is replaced by the
            // cooked header (see the module documentation).
            let Some(sll) = block
                .get(at + SOCKADDR_LL_AT..at + SOCKADDR_LL_AT + SOCKADDR_LL_SIZE)
                .and_then(|b| <[u8; SOCKADDR_LL_SIZE]>::try_from(b).ok())
            else {
                walk.corrupt = true;
                break;
            };
            // The link-layer header's length, at most what was captured.
            let link_len = h.net.saturating_sub(h.mac).min(h.snaplen);
            let hatype = u16::from_ne_bytes([sll[8], sll[9]]);
            let ethernet = matches!(hatype, ARPHRD_ETHER | ARPHRD_LOOPBACK);
            let protocol = if ethernet && link_len >= 14 {
                [block[start + link_len - 2], block[start + link_len - 1]]
            } else {
                [sll[2], sll[3]]
            };
            let mut head = [0u8; SLL_HDR_LEN + VLAN_TAG_LEN];
            let len = cooked_header(&sll, protocol, h.stripped_vlan(), &mut head);
            let net = start + link_len;
            orig_len = orig_len
                .saturating_sub(link_len as u32)
                .saturating_add(len as u32);
            if net >= at + TPACKET3_HDRLEN + len {
                // The link header and the headroom after the sockaddr_ll
                // hold it.
                let new_start = net - len;
                block[new_start..net].copy_from_slice(&head[..len]);
                range = new_start..end;
            } else {
                scratch.clear();
                scratch.extend_from_slice(&head[..len]);
                scratch.extend_from_slice(&block[net..end]);
                in_scratch = true;
            }
        } else if let Some((tpid, tci)) = h.stripped_vlan().filter(|_| h.snaplen >= MAC_ADDRS_LEN) {
            orig_len = orig_len.saturating_add(VLAN_TAG_LEN as u32);
            let mut tag = [0u8; VLAN_TAG_LEN];
            tag[..2].copy_from_slice(&tpid.to_be_bytes());
            tag[2..].copy_from_slice(&tci.to_be_bytes());
            if h.mac >= TPACKET3_HDRLEN + VLAN_TAG_LEN {
                // Headroom (PACKET_RESERVE) between the sockaddr_ll and the frame.
                let new_start = start - VLAN_TAG_LEN;
                block.copy_within(start..start + MAC_ADDRS_LEN, new_start);
                block[new_start + MAC_ADDRS_LEN..start + MAC_ADDRS_LEN].copy_from_slice(&tag);
                range = new_start..end;
            } else {
                scratch.clear();
                scratch.extend_from_slice(&block[start..start + MAC_ADDRS_LEN]);
                scratch.extend_from_slice(&tag);
                scratch.extend_from_slice(&block[start + MAC_ADDRS_LEN..end]);
                in_scratch = true;
            }
        }
        let bytes: &[u8] = if in_scratch { scratch } else { &block[range] };
        let keep = bytes.len().min(ctx.snaplen as usize);
        let packet = RawPacket {
            ts: Timestamp::from_secs_nanos(h.sec.into(), h.nsec.into()),
            link: ctx.link,
            data: &bytes[..keep],
            orig_len,
            record: ctx.first_record + walk.packets as u64,
            interface: 0,
        };
        f(&packet);
        walk.packets += 1;
        if i + 1 < count {
            match at.checked_add(h.next_offset) {
                Some(next) if h.next_offset != 0 => at = next,
                _ => {
                    walk.corrupt = true;
                    break;
                }
            }
        }
    }
    walk
}

/// Writes into `head` the Linux cooked-capture header of a packet whose
/// `sockaddr_ll` is `sll` (packet type, hardware type, address length, 8
/// address bytes, as libpcap writes them) and whose protocol is `protocol`
/// (network order), with `vlan` (TPID, TCI) inserted before the protocol;
/// returns its length (16, or 20 with a tag).
fn cooked_header(
    sll: &[u8; SOCKADDR_LL_SIZE],
    protocol: [u8; 2],
    vlan: Option<(u16, u16)>,
    head: &mut [u8; SLL_HDR_LEN + VLAN_TAG_LEN],
) -> usize {
    // sockaddr_ll: family(2) protocol(2, network order) ifindex(4)
    // hatype(2) pkttype(1) halen(1) addr(8).
    let hatype = u16::from_ne_bytes([sll[8], sll[9]]);
    head[0..2].copy_from_slice(&u16::from(sll[10]).to_be_bytes());
    head[2..4].copy_from_slice(&hatype.to_be_bytes());
    head[4..6].copy_from_slice(&u16::from(sll[11]).to_be_bytes());
    head[6..14].copy_from_slice(&sll[12..20]);
    match vlan {
        Some((tpid, tci)) => {
            head[14..16].copy_from_slice(&tpid.to_be_bytes());
            head[16..18].copy_from_slice(&tci.to_be_bytes());
            head[18..20].copy_from_slice(&protocol);
            SLL_HDR_LEN + VLAN_TAG_LEN
        }
        None => {
            head[14..16].copy_from_slice(&protocol);
            SLL_HDR_LEN
        }
    }
}

// ---------------------------------------------------------------------------
// Kernel boundary: every `unsafe` of the receive side is below
// ---------------------------------------------------------------------------

/// The mapped receive ring.
struct Ring {
    base: NonNull<u8>,
    len: usize,
    block_size: usize,
    block_count: usize,
}

// SAFETY: the mapping is owned by the `Ring` alone (it is unmapped only in
// `Drop`), holds no thread-affine state, and is only accessed through
// `&self`/`&mut self` methods of `AfPacket`, so moving it to another thread
// is sound. (Covered by tests/afpacket.rs, which opens sockets on one thread
// and uses them on another.)
unsafe impl Send for Ring {}

impl Ring {
    /// Maps the ring that `PACKET_RX_RING` created on `fd`.
    fn map(fd: &OwnedFd, block_size: usize, block_count: usize) -> io::Result<Ring> {
        let len = block_size * block_count;
        // SAFETY: a fresh shared mapping chosen by the kernel (address NULL),
        // of the size the kernel just allocated for the ring of `fd`; no
        // existing memory is affected. The result is checked for MAP_FAILED.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                fd.as_raw_fd(),
                0,
            )
        };
        if ptr == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let base =
            NonNull::new(ptr.cast::<u8>()).ok_or_else(|| io::Error::other("mmap returned NULL"))?;
        Ok(Ring {
            base,
            len,
            block_size,
            block_count,
        })
    }

    /// The status word of block `index` as an atomic.
    fn status(&self, index: usize) -> &AtomicU32 {
        assert!(index < self.block_count, "block index out of range");
        // SAFETY: `index < block_count`, so the word at offset
        // `index * block_size + 8` lies inside the live mapping; block starts
        // are page aligned, so it is 4-byte aligned. The kernel and this
        // process access the word only atomically (the kernel with
        // smp_wmb/flush + plain stores of a naturally aligned u32), and the
        // reference does not outlive `&self`, hence not the mapping.
        unsafe {
            let p = self
                .base
                .as_ptr()
                .add(index * self.block_size + block_desc::BLOCK_STATUS);
            AtomicU32::from_ptr(p.cast::<u32>())
        }
    }

    /// Whether the kernel has handed block `index` to user space (Acquire:
    /// the kernel's writes to the block are visible after a true result).
    fn block_is_ready(&self, index: usize) -> bool {
        self.status(index).load(Ordering::Acquire) & TP_STATUS_USER != 0
    }

    /// Runs `f` on the bytes of block `index`, which must be ready, then
    /// returns the block to the kernel (Release store of `TP_STATUS_KERNEL`).
    fn with_user_block<R>(&mut self, index: usize, f: impl FnOnce(&mut [u8]) -> R) -> R {
        assert!(
            self.block_is_ready(index),
            "block is still owned by the kernel"
        );
        // SAFETY: the block lies inside the live mapping (index < block_count,
        // checked in `status`). Its status is TP_STATUS_USER (checked just
        // above with Acquire), so the kernel neither writes it nor hands it
        // back until this process stores TP_STATUS_KERNEL, which happens
        // below, after the slice is gone (`f` cannot keep it: the lifetime is
        // local to this call). `&mut self` guarantees no other slice of the
        // ring exists.
        let block = unsafe {
            std::slice::from_raw_parts_mut(
                self.base.as_ptr().add(index * self.block_size),
                self.block_size,
            )
        };
        let result = f(block);
        self.status(index)
            .store(TP_STATUS_KERNEL, Ordering::Release);
        result
    }
}

impl Drop for Ring {
    fn drop(&mut self) {
        // SAFETY: `base`/`len` are exactly the mapping made in `Ring::map`,
        // unmapped once here; no slice or atomic reference into it can
        // outlive `&self` borrows, which have all ended.
        unsafe {
            libc::munmap(self.base.as_ptr().cast::<c_void>(), self.len);
        }
    }
}

/// The system page size (what [`RingConfig::validate`] needs).
pub fn page_size() -> usize {
    // SAFETY: sysconf only reads a system constant.
    let n = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    usize::try_from(n).ok().filter(|&n| n > 0).unwrap_or(4096)
}

/// The machine's physical memory in bytes (`sysinfo(2)`: total RAM), or
/// `None` when the kernel does not say. Rings larger than this are refused
/// ([`AfPacket::open`], [`crate::dispatch::live::open_live`]): the kernel
/// would try to allocate them, and pinned ring memory cannot be swapped.
pub fn physical_memory() -> Option<u64> {
    let mut info = std::mem::MaybeUninit::<libc::sysinfo>::zeroed();
    // SAFETY: `info` is a zeroed `struct sysinfo` we own, which sysinfo(2)
    // fills; every bit pattern (zero included) is a valid value of its
    // integer fields, so reading it after the call is sound either way.
    let (rc, info) = unsafe { (libc::sysinfo(info.as_mut_ptr()), info.assume_init()) };
    if rc != 0 {
        return None;
    }
    // `totalram` is a C `unsigned long`: 32 bits on 32-bit targets.
    #[allow(clippy::useless_conversion)]
    let ram = u64::from(info.totalram);
    let total = ram.checked_mul(u64::from(info.mem_unit.max(1)))?;
    (total > 0).then_some(total)
}

/// The index of the interface called `name`, with a clear error when it
/// does not exist.
pub(crate) fn interface_index(name: &str) -> Result<u32, LiveError> {
    let invalid = |reason: String| {
        LiveError::other(
            name,
            "looking up the interface",
            LiveErrorKind::NoSuchInterface,
            reason,
        )
    };
    if name.is_empty() || name.len() >= libc::IFNAMSIZ {
        return Err(invalid(format!(
            "no such interface (a name has 1 to {} bytes)",
            libc::IFNAMSIZ - 1
        )));
    }
    let cname = CString::new(name)
        .map_err(|_| invalid("no such interface (the name contains a NUL byte)".into()))?;
    // SAFETY: `cname` is a NUL-terminated string that outlives the call;
    // if_nametoindex only reads it.
    let index = unsafe { libc::if_nametoindex(cname.as_ptr()) };
    if index == 0 {
        let err = io::Error::last_os_error();
        return Err(match err.raw_os_error() {
            Some(libc::ENODEV) | Some(libc::ENXIO) | None | Some(0) => {
                invalid(format!("no such interface ({err})"))
            }
            _ => LiveError::os(name, "looking up the interface", err),
        });
    }
    Ok(index)
}

/// A new `AF_PACKET`, `SOCK_RAW` socket for `protocol` (host order; 0
/// receives nothing until bound with a protocol).
pub(crate) fn packet_socket(name: &str, protocol: u16) -> Result<OwnedFd, LiveError> {
    // SAFETY: socket(2) takes plain integers and touches no memory of ours.
    let raw = unsafe {
        libc::socket(
            libc::AF_PACKET,
            libc::SOCK_RAW | libc::SOCK_CLOEXEC,
            c_int::from(protocol.to_be()),
        )
    };
    if raw < 0 {
        return Err(LiveError::os(
            name,
            "socket(AF_PACKET, SOCK_RAW)",
            io::Error::last_os_error(),
        ));
    }
    // SAFETY: `raw` is a valid descriptor that socket(2) just returned and
    // nothing else owns, so the OwnedFd is its only owner and closes it once.
    Ok(unsafe { OwnedFd::from_raw_fd(raw) })
}

/// Binds a packet socket to interface `ifindex` for `protocol` (host order).
pub(crate) fn bind_packet_socket(fd: &OwnedFd, ifindex: u32, protocol: u16) -> io::Result<()> {
    let addr = sockaddr_ll(ifindex, protocol);
    // SAFETY: `addr` is a fully initialised sockaddr_ll and the length passed
    // is its size; bind only reads it.
    let rc = unsafe {
        libc::bind(
            fd.as_raw_fd(),
            (&addr as *const libc::sockaddr_ll).cast::<libc::sockaddr>(),
            std::mem::size_of::<libc::sockaddr_ll>() as libc::socklen_t,
        )
    };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// A `sockaddr_ll` for an interface and protocol (host order).
fn sockaddr_ll(ifindex: u32, protocol: u16) -> libc::sockaddr_ll {
    libc::sockaddr_ll {
        sll_family: libc::AF_PACKET as u16,
        sll_protocol: protocol.to_be(),
        sll_ifindex: ifindex as c_int,
        sll_hatype: 0,
        sll_pkttype: 0,
        sll_halen: 0,
        sll_addr: [0; 8],
    }
}

/// The link type of the interface a packet socket is bound to, from the
/// hardware type (`sll_hatype`) that getsockname reports.
pub(crate) fn socket_link_type(fd: &OwnedFd, name: &str) -> Result<LinkType, LiveError> {
    let mut addr = sockaddr_ll(0, 0);
    let mut len = std::mem::size_of::<libc::sockaddr_ll>() as libc::socklen_t;
    // SAFETY: `addr` is a writable sockaddr_ll of `len` bytes; the kernel
    // writes at most `len` bytes and updates `len`.
    let rc = unsafe {
        libc::getsockname(
            fd.as_raw_fd(),
            (&mut addr as *mut libc::sockaddr_ll).cast::<libc::sockaddr>(),
            &mut len,
        )
    };
    if rc < 0 {
        return Err(LiveError::os(
            name,
            "getsockname",
            io::Error::last_os_error(),
        ));
    }
    match addr.sll_hatype {
        ARPHRD_ETHER | ARPHRD_LOOPBACK => Ok(LinkType::ETHERNET),
        other => Err(LiveError::other(
            name,
            "checking the link type",
            LiveErrorKind::UnsupportedLinkType,
            format!(
                "hardware type {other} is not supported (only Ethernet ({ARPHRD_ETHER}) and loopback ({ARPHRD_LOOPBACK}))"
            ),
        )),
    }
}

/// `setsockopt(fd, level, name, value, sizeof *value)`.
fn set_option<T>(fd: &impl AsRawFd, level: c_int, name: c_int, value: &T) -> io::Result<()> {
    // SAFETY: `value` points to a live, initialised `T` of the size passed;
    // every `T` used is a #[repr(C)] struct or integer with the layout the
    // kernel expects for `name`; setsockopt only reads it.
    let rc = unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            level,
            name,
            (value as *const T).cast::<c_void>(),
            std::mem::size_of::<T>() as libc::socklen_t,
        )
    };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// `getsockopt(fd, level, name, value, sizeof *value)`.
pub(crate) fn get_option<T>(
    fd: &impl AsRawFd,
    level: c_int,
    name: c_int,
    value: &mut T,
) -> io::Result<()> {
    let mut len = std::mem::size_of::<T>() as libc::socklen_t;
    // SAFETY: `value` is a live, writable `T` (#[repr(C)] or integer, every
    // bit pattern valid) of `len` bytes; the kernel writes at most `len`.
    let rc = unsafe {
        libc::getsockopt(
            fd.as_raw_fd(),
            level,
            name,
            (value as *mut T).cast::<c_void>(),
            &mut len,
        )
    };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// The pending socket error (SO_ERROR), if any.
fn socket_error(fd: &OwnedFd) -> io::Result<Option<io::Error>> {
    let mut err: c_int = 0;
    get_option(fd, libc::SOL_SOCKET, libc::SO_ERROR, &mut err)?;
    Ok((err != 0).then(|| io::Error::from_raw_os_error(err)))
}

/// Attaches a classic BPF program to the socket (SO_ATTACH_FILTER).
fn attach_filter(fd: &OwnedFd, program: &[Insn]) -> io::Result<()> {
    let mut insns: Vec<libc::sock_filter> = program
        .iter()
        .map(|i| libc::sock_filter {
            code: i.code,
            jt: i.jt,
            jf: i.jf,
            k: i.k,
        })
        .collect();
    let len = u16::try_from(insns.len()).map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))?;
    let prog = libc::sock_fprog {
        len,
        filter: insns.as_mut_ptr(),
    };
    // The kernel copies the program during the call; `insns` outlives it.
    set_option(fd, libc::SOL_SOCKET, libc::SO_ATTACH_FILTER, &prog)
}

/// What [`poll_readable`] saw.
pub(crate) enum PollOutcome {
    /// POLLIN: a block may be ready.
    Ready,
    /// Nothing happened within the timeout.
    TimedOut,
    /// POLLERR: a socket error is pending (SO_ERROR says which).
    Error,
    /// POLLHUP or POLLNVAL: the socket cannot be used any more.
    HungUp,
}

/// Waits up to `timeout_ms` (-1: forever) for the socket to be readable.
pub(crate) fn poll_readable(fd: &impl AsRawFd, timeout_ms: c_int) -> io::Result<PollOutcome> {
    let mut pfd = libc::pollfd {
        fd: fd.as_raw_fd() as RawFd,
        events: libc::POLLIN | libc::POLLERR,
        revents: 0,
    };
    // SAFETY: `pfd` is one valid, writable pollfd and the count passed is 1.
    let rc = unsafe { libc::poll(&mut pfd, 1, timeout_ms) };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    if rc == 0 {
        return Ok(PollOutcome::TimedOut);
    }
    if pfd.revents & libc::POLLERR != 0 {
        return Ok(PollOutcome::Error);
    }
    if pfd.revents & (libc::POLLHUP | libc::POLLNVAL) != 0 {
        return Ok(PollOutcome::HungUp);
    }
    Ok(PollOutcome::Ready)
}

#[cfg(test)]
#[path = "afpacket_tests.rs"]
mod tests;
