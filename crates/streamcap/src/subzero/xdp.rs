//! The XDP flow-drop program (`bpf/flow_drop.bpf.c`, compiled by the build
//! script with clang) loaded with libbpf-rs and attached to an interface:
//! the kernel side of [`crate::subzero`].
//!
//! The program is attached through a BPF link, which the kernel removes
//! when the last file descriptor to it closes: when [`XdpFlowDrop`] is
//! dropped, and also when the process dies, however it dies. Nothing is
//! pinned, so nothing is left behind.

#![allow(unsafe_code)]

use super::{DropCounts, DropKey, FlowDropMap, InsertError};
use crate::time::Timestamp;
use libbpf_rs::{ErrorKind, MapCore, MapFlags, MapHandle, ObjectBuilder};
use std::fmt;
use std::os::fd::{AsFd, AsRawFd, FromRawFd, OwnedFd};

/// The compiled program (an ELF object for the `bpf` target).
static OBJECT: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/flow_drop.bpf.o"));

/// `XDP_FLAGS_SKB_MODE`: the generic hook, after the kernel built an skb.
const XDP_FLAGS_SKB_MODE: u32 = 1 << 1;
/// `XDP_FLAGS_DRV_MODE`: the driver's own hook, before any allocation.
const XDP_FLAGS_DRV_MODE: u32 = 1 << 2;

/// Where the program may be attached.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub enum AttachMode {
    /// The driver's hook if it has one, else the generic hook.
    #[default]
    Auto,
    /// The driver's hook only (`XDP_FLAGS_DRV_MODE`).
    Native,
    /// The generic hook only (`XDP_FLAGS_SKB_MODE`).
    Generic,
}

impl AttachMode {
    /// Parses `auto`, `native` or `generic`.
    pub fn parse(s: &str) -> Option<AttachMode> {
        match s {
            "auto" => Some(AttachMode::Auto),
            "native" | "drv" => Some(AttachMode::Native),
            "generic" | "skb" => Some(AttachMode::Generic),
            _ => None,
        }
    }
}

/// Where the program runs.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum XdpMode {
    /// In the driver, before the kernel allocates an skb.
    Native,
    /// In the generic hook: after the skb is built, before the stack and
    /// the capture sockets see the packet.
    Generic,
}

impl fmt::Display for XdpMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            XdpMode::Native => "native",
            XdpMode::Generic => "generic",
        })
    }
}

/// Why the program could not be used.
#[derive(Debug)]
pub struct XdpError {
    /// The interface.
    pub interface: String,
    /// What failed, and what to do.
    pub message: String,
}

impl fmt::Display for XdpError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "XDP on {}: {}", self.interface, self.message)
    }
}

impl std::error::Error for XdpError {}

/// The flow-drop program attached to an interface, and its maps.
pub struct XdpFlowDrop {
    flows: MapHandle,
    totals: MapHandle,
    /// The link: closing it detaches the program.
    _link: OwnedFd,
    /// Keeps the program and maps loaded.
    _object: libbpf_rs::Object,
    mode: XdpMode,
    capacity: u32,
}

/// Packets and bytes the program dropped, over all CPUs.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct XdpTotals {
    /// Packets dropped.
    pub pkts: u64,
    /// Their IP bytes.
    pub bytes: u64,
}

impl XdpFlowDrop {
    /// Loads the program with room for `entries` flow directions and
    /// attaches it to `interface` in `mode`.
    ///
    /// Needs `CAP_BPF` and `CAP_NET_ADMIN` (root); fails with a message
    /// that says so, or names the interface that does not exist, or that
    /// already has an XDP program.
    pub fn attach(
        interface: &str,
        entries: u32,
        mode: AttachMode,
    ) -> Result<XdpFlowDrop, XdpError> {
        let fail = |message: String| XdpError {
            interface: interface.to_string(),
            message,
        };
        let ifindex = crate::source::afpacket::interface_index(interface)
            .map_err(|e| fail(e.to_string()))
            .and_then(|i| i32::try_from(i).map_err(|_| fail("no such interface".into())))?;
        let mut open = ObjectBuilder::default()
            .open_memory(OBJECT)
            .map_err(|e| fail(format!("opening the program: {e}")))?;
        for mut m in open.maps_mut() {
            if m.name() == "flows" {
                m.set_max_entries(entries.max(1))
                    .map_err(|e| fail(format!("sizing the flow map: {e}")))?;
            }
        }
        let object = open.load().map_err(|e| {
            fail(match e.kind() {
                ErrorKind::PermissionDenied => {
                    "loading a BPF program needs root (CAP_BPF and CAP_NET_ADMIN)".into()
                }
                _ => format!("loading the program: {e} (a kernel with BPF and XDP is needed)"),
            })
        })?;
        let prog = object
            .progs()
            .find(|p| p.name() == "flow_drop")
            .ok_or_else(|| fail("the program has no flow_drop section".into()))?;
        let map = |name: &str| {
            object
                .maps()
                .find(|m| m.name() == name)
                .ok_or_else(|| fail(format!("the program has no {name} map")))
                .and_then(|m| {
                    MapHandle::try_from(&m).map_err(|e| fail(format!("the {name} map: {e}")))
                })
        };
        let (flows, totals) = (map("flows")?, map("totals")?);
        let tries: &[(u32, XdpMode)] = match mode {
            AttachMode::Auto => &[
                (XDP_FLAGS_DRV_MODE, XdpMode::Native),
                (XDP_FLAGS_SKB_MODE, XdpMode::Generic),
            ],
            AttachMode::Native => &[(XDP_FLAGS_DRV_MODE, XdpMode::Native)],
            AttachMode::Generic => &[(XDP_FLAGS_SKB_MODE, XdpMode::Generic)],
        };
        let prog_fd = prog.as_fd().as_raw_fd();
        let mut errors = Vec::new();
        for &(flags, m) in tries {
            match link_xdp(prog_fd, ifindex, flags) {
                Ok(link) => {
                    return Ok(XdpFlowDrop {
                        flows,
                        totals,
                        _link: link,
                        _object: object,
                        mode: m,
                        capacity: entries.max(1),
                    })
                }
                Err(e) => errors.push((m, e)),
            }
        }
        let detail: Vec<String> = errors
            .iter()
            .map(|(m, e)| {
                let why = match e.raw_os_error() {
                    Some(libc::EBUSY) | Some(libc::EEXIST) => {
                        "the interface already has an XDP program (`ip link set dev IFACE xdp off` removes one left by another tool)".to_string()
                    }
                    Some(libc::EPERM) | Some(libc::EACCES) => {
                        "attaching XDP needs root (CAP_NET_ADMIN and CAP_BPF)".to_string()
                    }
                    Some(libc::EOPNOTSUPP) => "the driver has no XDP hook".to_string(),
                    _ => e.to_string(),
                };
                format!("{m} mode: {why}")
            })
            .collect();
        Err(fail(format!("attaching failed ({})", detail.join("; "))))
    }

    /// Where the program runs.
    pub fn mode(&self) -> XdpMode {
        self.mode
    }

    /// How many flow directions the map holds at most.
    pub fn capacity(&self) -> u32 {
        self.capacity
    }

    /// What the program dropped so far, over all CPUs.
    pub fn totals(&self) -> XdpTotals {
        let mut t = XdpTotals::default();
        if let Ok(Some(per_cpu)) = self
            .totals
            .lookup_percpu(&0u32.to_ne_bytes(), MapFlags::ANY)
        {
            for v in per_cpu {
                t.pkts += read_u64(&v, 0);
                t.bytes += read_u64(&v, 8);
            }
        }
        t
    }
}

impl FlowDropMap for XdpFlowDrop {
    fn insert(&self, key: &DropKey) -> Result<(), InsertError> {
        let value = [0u8; 48];
        match self
            .flows
            .update(&key.as_bytes(), &value, MapFlags::NO_EXIST)
        {
            Ok(()) => Ok(()),
            Err(e) => match e.kind() {
                ErrorKind::AlreadyExists => Ok(()),
                ErrorKind::TooBig | ErrorKind::OutOfMemory => Err(InsertError::Full),
                _ => Err(InsertError::Failed(e.to_string())),
            },
        }
    }

    fn take(&self, key: &DropKey) -> Option<DropCounts> {
        let v = self.flows.lookup_and_delete(&key.as_bytes()).ok()??;
        let last_ns = read_u64(&v, 32);
        let seq_valid = read_u32(&v, 44) != 0;
        Some(DropCounts {
            pkts: read_u64(&v, 0),
            bytes: read_u64(&v, 8),
            payload: read_u64(&v, 16),
            data_pkts: read_u64(&v, 24),
            max_end: seq_valid.then(|| read_u32(&v, 40)),
            last: (last_ns != 0).then(|| monotonic_to_wall(last_ns)),
        })
    }
}

fn read_u64(v: &[u8], at: usize) -> u64 {
    v.get(at..at + 8)
        .and_then(|b| b.try_into().ok())
        .map_or(0, u64::from_ne_bytes)
}

fn read_u32(v: &[u8], at: usize) -> u32 {
    v.get(at..at + 4)
        .and_then(|b| b.try_into().ok())
        .map_or(0, u32::from_ne_bytes)
}

/// Nanoseconds of a clock.
fn clock_ns(clock: libc::clockid_t) -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec; clock_gettime only writes it.
    unsafe { libc::clock_gettime(clock, &mut ts) };
    (ts.tv_sec as u64)
        .saturating_mul(1_000_000_000)
        .saturating_add(ts.tv_nsec as u64)
}

/// A `bpf_ktime_get_ns()` time (CLOCK_MONOTONIC) on the wall clock, which
/// live packets' timestamps use.
fn monotonic_to_wall(ns: u64) -> Timestamp {
    let offset = clock_ns(libc::CLOCK_REALTIME).saturating_sub(clock_ns(libc::CLOCK_MONOTONIC));
    Timestamp(ns.saturating_add(offset))
}

/// Attaches program `prog_fd` to interface `ifindex` through a BPF link
/// with XDP `flags`; the link's descriptor detaches it when closed.
fn link_xdp(prog_fd: i32, ifindex: i32, flags: u32) -> std::io::Result<OwnedFd> {
    let opts = libbpf_sys::bpf_link_create_opts {
        sz: std::mem::size_of::<libbpf_sys::bpf_link_create_opts>() as _,
        flags,
        ..Default::default()
    };
    // SAFETY: `prog_fd` is a loaded program's descriptor, kept open by the
    // object for this call; `opts` is a valid, initialised options struct
    // whose `sz` is its size. libbpf returns a new descriptor or -errno.
    let fd = unsafe { libbpf_sys::bpf_link_create(prog_fd, ifindex, libbpf_sys::BPF_XDP, &opts) };
    if fd < 0 {
        return Err(std::io::Error::from_raw_os_error(-fd));
    }
    // SAFETY: `fd` is a descriptor bpf_link_create just opened for us alone.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}
