//! The XDP flow-drop program (`bpf/flow_drop.bpf.c`, compiled by the build
//! script with clang) loaded with libbpf-rs and attached to an interface:
//! the kernel side of [`crate::subzero`].
//!
//! The program is attached through a BPF link, which the kernel removes
//! when the last file descriptor to it closes: when [`XdpFlowDrop`] is
//! dropped, and also when the process dies, however it dies. Nothing is
//! pinned, so nothing is left behind.
//!
//! An interface holds one XDP program. Processes of one kernel fan-out
//! group (each owns the connections the kernel hands it) share it: the
//! first loads and attaches it, recording its group in the program's
//! `owner` map; another process of the same group finds it through the
//! kernel's link and program tables ([`XdpFlowDrop::attach`] with a
//! group), opens its maps and holds a descriptor of its link, so the
//! program stays until the last of them ends.

#![allow(unsafe_code)]

use super::{DropCounts, DropKey, FlowDropMap, InsertError};
use crate::time::Timestamp;
use libbpf_rs::{ErrorKind, MapCore, MapFlags, MapHandle, ObjectBuilder};
use std::fmt;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd};

/// The compiled program (an ELF object for the `bpf` target).
static OBJECT: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/flow_drop.bpf.o"));

/// The size of `struct drop_key`, the flow map's key.
const KEY_SIZE: usize = 44;
/// The size of `struct drop_entry`, the flow map's value.
const VALUE_SIZE: usize = 112;
/// Where `struct drop_entry` holds the key, `seq_valid` and `max_end`.
const ENTRY_KEY: usize = 8;
const ENTRY_SEQ_VALID: usize = 52;
const ENTRY_MAX_END: usize = 104;
/// The size of `struct take_request`, `flow_take`'s packet, and where it
/// answers `found` and the counts.
const REQUEST_SIZE: usize = 96;
const REQUEST_FOUND: usize = 44;
const REQUEST_COUNTS: usize = 48;

/// The slot of the `totals` map that holds the attaching capture's fan-out
/// group + 1 (see `bpf/flow_drop.bpf.c`).
const OWNER_SLOT: u32 = 1;

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
    /// The AF_XDP sockets by receive queue (`xsks`).
    xsks: MapHandle,
    /// The link: closing its last descriptor detaches the program. (Only
    /// the tests' unattached loads have none.)
    _link: Option<OwnedFd>,
    /// The loaded object: its `flow_take` takes entries back. (When
    /// joined, it is a second copy bound to the group's maps; the attached
    /// program is the one the link holds.)
    object: libbpf_rs::Object,
    mode: XdpMode,
    capacity: u32,
    /// Whether another process of the same group had attached it.
    joined: bool,
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
    /// attaches it to `interface` in `mode`. With a fan-out `group`, a
    /// program that a process of the same group attached is joined instead
    /// (its map, its mode).
    ///
    /// Needs `CAP_BPF` and `CAP_NET_ADMIN` (root); fails with a message
    /// that says so, or names the interface that does not exist, or that
    /// already has an XDP program (another tool's, or streamcap's of
    /// another group).
    pub fn attach(
        interface: &str,
        entries: u32,
        mode: AttachMode,
        group: Option<u16>,
    ) -> Result<XdpFlowDrop, XdpError> {
        let fail = |message: String| XdpError {
            interface: interface.to_string(),
            message,
        };
        let ifindex = crate::source::afpacket::interface_index(interface)
            .map_err(|e| fail(e.to_string()))
            .and_then(|i| i32::try_from(i).map_err(|_| fail("no such interface".into())))?;
        let object = load(interface, Sizing::Entries(entries))?;
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
        let (flows, totals, xsks) = (map("flows")?, map("totals")?, map("xsks")?);
        let tag = group.map_or(0, |g| u64::from(g) + 1);
        let cpus =
            libbpf_rs::num_possible_cpus().map_err(|e| fail(format!("counting the CPUs: {e}")))?;
        let mut slot = [0u8; 16];
        slot[..8].copy_from_slice(&tag.to_ne_bytes());
        totals
            .update_percpu(
                &OWNER_SLOT.to_ne_bytes(),
                &vec![slot.to_vec(); cpus],
                MapFlags::ANY,
            )
            .map_err(|e| fail(format!("tagging the program with its group: {e}")))?;
        match attach_in_mode(prog.as_fd().as_raw_fd(), ifindex, mode) {
            Ok((link, m)) => Ok(XdpFlowDrop {
                flows,
                totals,
                xsks,
                _link: Some(link),
                object,
                mode: m,
                capacity: entries.max(1),
                joined: false,
            }),
            Err(f) => match group {
                Some(g) if f.busy() => join(interface, ifindex, g),
                _ => Err(fail(format!(
                    "attaching failed ({})",
                    f.describe(interface)
                ))),
            },
        }
    }

    /// Where the program runs.
    pub fn mode(&self) -> XdpMode {
        self.mode
    }

    /// How many flow directions the map holds at most.
    pub fn capacity(&self) -> u32 {
        self.capacity
    }

    /// Whether another process of the same fan-out group had attached the
    /// program, and this one joined it.
    pub fn joined(&self) -> bool {
        self.joined
    }

    /// Has the program send the packets of receive queue `queue` that it
    /// does not drop to AF_XDP socket `socket` (instead of the kernel's
    /// stack). The entry goes when the socket closes.
    pub fn redirect_queue(&self, queue: u32, socket: BorrowedFd<'_>) -> Result<(), XdpError> {
        let fd = u32::try_from(socket.as_raw_fd()).map_err(|_| XdpError {
            interface: String::new(),
            message: "not a descriptor".into(),
        })?;
        self.xsks
            .update(&queue.to_ne_bytes(), &fd.to_ne_bytes(), MapFlags::ANY)
            .map_err(|e| XdpError {
                interface: String::new(),
                message: format!(
                    "putting the AF_XDP socket of queue {queue} in the program's map: {e}"
                ),
            })
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

#[cfg(test)]
impl XdpFlowDrop {
    /// The object loaded but attached nowhere: its programs run only
    /// through BPF_PROG_TEST_RUN.
    fn unattached(entries: u32) -> Result<XdpFlowDrop, XdpError> {
        let object = load("(none)", Sizing::Entries(entries))?;
        let map = |name: &str| {
            let m = object.maps().find(|m| m.name() == name);
            m.and_then(|m| MapHandle::try_from(&m).ok())
                .ok_or_else(|| XdpError {
                    interface: "(none)".into(),
                    message: format!("no {name} map"),
                })
        };
        Ok(XdpFlowDrop {
            flows: map("flows")?,
            totals: map("totals")?,
            xsks: map("xsks")?,
            _link: None,
            object,
            mode: XdpMode::Native,
            capacity: entries,
            joined: false,
        })
    }
}

impl FlowDropMap for XdpFlowDrop {
    fn insert(&self, key: &DropKey, seq: Option<u32>) -> Result<(), InsertError> {
        // `struct drop_entry`: lock and `closed` zero, the key, `seq_valid`,
        // the counts zero, `max_end`.
        let mut value = [0u8; VALUE_SIZE];
        value[ENTRY_KEY..ENTRY_KEY + KEY_SIZE].copy_from_slice(&key.as_bytes());
        if let Some(seq) = seq {
            value[ENTRY_SEQ_VALID..ENTRY_SEQ_VALID + 4].copy_from_slice(&1u32.to_ne_bytes());
            value[ENTRY_MAX_END..ENTRY_MAX_END + 4].copy_from_slice(&seq.to_ne_bytes());
        }
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
        // `progs_mut` only because `test_run` is on `ProgramMut`: it uses
        // the program's descriptor; nothing of libbpf's state changes.
        let prog = self.object.progs_mut().find(|p| p.name() == "flow_take")?;
        let mut request = [0u8; REQUEST_SIZE];
        request[..KEY_SIZE].copy_from_slice(&key.as_bytes());
        let mut answer = [0u8; REQUEST_SIZE];
        let input = libbpf_rs::ProgramInput {
            data_in: Some(&request),
            data_out: Some(&mut answer),
            ..Default::default()
        };
        prog.test_run(input).ok()?;
        if read_u32(&answer, REQUEST_FOUND) == 0 {
            return None;
        }
        let v = &answer[REQUEST_COUNTS..];
        let last_ns = read_u64(v, 32);
        Some(DropCounts {
            pkts: read_u64(v, 0),
            bytes: read_u64(v, 8),
            payload: read_u64(v, 16),
            data_pkts: read_u64(v, 24),
            advance: read_u64(v, 40),
            last: (last_ns != 0).then(|| monotonic_to_wall(last_ns)),
        })
    }
}

/// How [`load`] sizes the maps.
enum Sizing<'a> {
    /// New maps, the flow map with room for this many entries.
    Entries(u32),
    /// The maps of a program another process attached.
    Reuse {
        flows: &'a MapHandle,
        totals: &'a MapHandle,
        xsks: &'a MapHandle,
    },
}

/// Loads the object (`flow_drop` and `flow_take`) into the kernel.
fn load(interface: &str, sizing: Sizing<'_>) -> Result<libbpf_rs::Object, XdpError> {
    let fail = |message: String| XdpError {
        interface: interface.to_string(),
        message,
    };
    let mut open = ObjectBuilder::default()
        .open_memory(OBJECT)
        .map_err(|e| fail(format!("opening the program: {e}")))?;
    for mut m in open.maps_mut() {
        let done = match (&sizing, m.name().to_str()) {
            (Sizing::Entries(n), Some("flows")) => m.set_max_entries((*n).max(1)),
            (Sizing::Reuse { flows, .. }, Some("flows")) => m.reuse_fd(flows.as_fd()),
            (Sizing::Reuse { totals, .. }, Some("totals")) => m.reuse_fd(totals.as_fd()),
            (Sizing::Reuse { xsks, .. }, Some("xsks")) => m.reuse_fd(xsks.as_fd()),
            _ => Ok(()),
        };
        done.map_err(|e| {
            fail(format!(
                "preparing the {} map: {e}",
                m.name().to_string_lossy()
            ))
        })?;
    }
    open.load().map_err(|e| {
        fail(match e.kind() {
            ErrorKind::PermissionDenied => {
                "loading a BPF program needs root (CAP_BPF and CAP_NET_ADMIN)".into()
            }
            _ => format!("loading the program: {e} (a kernel with BPF and XDP is needed)"),
        })
    })
}

/// Joins the flow-drop program a process of fan-out group `group` attached
/// to `interface`: finds its link and program in the kernel's tables,
/// checks that it is streamcap's and of the same group, and opens its maps.
fn join(interface: &str, ifindex: i32, group: u16) -> Result<XdpFlowDrop, XdpError> {
    use libbpf_rs::query::{LinkInfoIter, LinkTypeInfo, ProgInfoIter, ProgInfoQueryOptions};
    let fail = |message: String| XdpError {
        interface: interface.to_string(),
        message,
    };
    let busy = "the interface already has an XDP program".to_string();
    // The program on this interface (interface indexes are per network
    // namespace; program ids are not), then the link that holds it.
    let (prog_id, attach_mode) = query(ifindex).ok_or_else(|| fail(busy.clone()))?;
    let link = LinkInfoIter::default()
        .find(|l| l.prog_id == prog_id && matches!(&l.info, LinkTypeInfo::Xdp(_)));
    let Some(link) = link else {
        return Err(fail(format!(
            "{busy}, not attached through a link (another tool's: `ip link set dev {interface} xdp off` removes it)"
        )));
    };
    let opts = ProgInfoQueryOptions::default().include_map_ids(true);
    let prog = ProgInfoIter::with_query_opts(opts).find(|p| p.id == prog_id);
    let Some(prog) = prog.filter(|p| p.name.to_str() == Some("flow_drop")) else {
        return Err(fail(format!("{busy}, and not streamcap's")));
    };
    let mut maps = Vec::new();
    for id in &prog.map_ids {
        let m = MapHandle::from_map_id(*id).map_err(|e| fail(format!("opening map {id}: {e}")))?;
        maps.push(m);
    }
    let mut take = |name: &str| {
        maps.iter()
            .position(|m| m.name() == name)
            .map(|i| maps.swap_remove(i))
            .ok_or_else(|| fail(format!("{busy}: streamcap's, but without its {name} map")))
    };
    let (flows, totals, xsks) = (take("flows")?, take("totals")?, take("xsks")?);
    let tag = totals
        .lookup_percpu(&OWNER_SLOT.to_ne_bytes(), MapFlags::ANY)
        .ok()
        .flatten()
        .and_then(|per_cpu| per_cpu.first().map(|v| read_u64(v, 0)))
        .unwrap_or(0);
    if tag != u64::from(group) + 1 {
        let theirs = match tag {
            0 => "no fan-out group".to_string(),
            t => format!("fan-out group {}", t - 1),
        };
        return Err(fail(format!(
            "{busy}: streamcap's, attached by a capture in {theirs}, not in group {group}"
        )));
    }
    let link_fd = link_by_id(link.id).map_err(|e| fail(format!("opening its link: {e}")))?;
    let object = load(
        interface,
        Sizing::Reuse {
            flows: &flows,
            totals: &totals,
            xsks: &xsks,
        },
    )?;
    let mode = match attach_mode {
        2 => XdpMode::Generic,
        _ => XdpMode::Native,
    };
    let capacity = flows.max_entries();
    Ok(XdpFlowDrop {
        flows,
        totals,
        xsks,
        _link: Some(link_fd),
        object,
        mode,
        capacity,
        joined: true,
    })
}

/// A descriptor of BPF link `id`.
fn link_by_id(id: u32) -> std::io::Result<OwnedFd> {
    // SAFETY: a plain syscall wrapper; it takes an id and returns a new
    // descriptor or -errno.
    let fd = unsafe { libbpf_sys::bpf_link_get_fd_by_id(id) };
    if fd < 0 {
        return Err(std::io::Error::from_raw_os_error(-fd));
    }
    // SAFETY: `fd` is a descriptor bpf_link_get_fd_by_id just opened for us alone.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// The id of the XDP program on `ifindex` and how it is attached
/// (`XDP_ATTACHED_DRV` 1, `XDP_ATTACHED_SKB` 2, `XDP_ATTACHED_HW` 3), if
/// the kernel says.
fn query(ifindex: i32) -> Option<(u32, u8)> {
    let mut opts = libbpf_sys::bpf_xdp_query_opts {
        sz: std::mem::size_of::<libbpf_sys::bpf_xdp_query_opts>() as _,
        ..Default::default()
    };
    // SAFETY: `opts` is a valid, writable options struct whose `sz` is its
    // size; libbpf fills it and returns 0 or -errno.
    let r = unsafe { libbpf_sys::bpf_xdp_query(ifindex, 0, &mut opts) };
    (r == 0 && opts.prog_id != 0).then_some((opts.prog_id, opts.attach_mode))
}

fn read_u32(v: &[u8], at: usize) -> u32 {
    v.get(at..at + 4)
        .and_then(|b| b.try_into().ok())
        .map_or(0, u32::from_ne_bytes)
}

fn read_u64(v: &[u8], at: usize) -> u64 {
    v.get(at..at + 8)
        .and_then(|b| b.try_into().ok())
        .map_or(0, u64::from_ne_bytes)
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

/// Why [`attach_in_mode`] failed: the error of each mode tried.
pub(crate) struct AttachFailure(Vec<(XdpMode, std::io::Error)>);

impl AttachFailure {
    /// Whether the interface already holds an XDP program.
    pub(crate) fn busy(&self) -> bool {
        self.0
            .iter()
            .any(|(_, e)| matches!(e.raw_os_error(), Some(libc::EBUSY) | Some(libc::EEXIST)))
    }

    /// What went wrong in each mode, with what to do, for `interface`.
    pub(crate) fn describe(&self, interface: &str) -> String {
        let detail: Vec<String> = self
            .0
            .iter()
            .map(|(m, e)| {
                let why = match e.raw_os_error() {
                    Some(libc::EBUSY) | Some(libc::EEXIST) => format!(
                        "the interface already has an XDP program (`ip link set dev {interface} xdp off` removes one left by another tool)"
                    ),
                    Some(libc::EPERM) | Some(libc::EACCES) => {
                        "attaching XDP needs root (CAP_NET_ADMIN and CAP_BPF)".to_string()
                    }
                    Some(libc::EOPNOTSUPP) => "the driver has no XDP hook".to_string(),
                    _ => e.to_string(),
                };
                format!("{m} mode: {why}")
            })
            .collect();
        detail.join("; ")
    }
}

/// Attaches program `prog_fd` to interface `ifindex` in the hook `mode`
/// asks for: `Auto` tries the driver's hook, then the generic one (not
/// after the interface said it already holds a program, which another
/// hook would say too). Returns the link and where the program runs.
pub(crate) fn attach_in_mode(
    prog_fd: i32,
    ifindex: i32,
    mode: AttachMode,
) -> Result<(OwnedFd, XdpMode), AttachFailure> {
    let tries: &[(u32, XdpMode)] = match mode {
        AttachMode::Auto => &[
            (XDP_FLAGS_DRV_MODE, XdpMode::Native),
            (XDP_FLAGS_SKB_MODE, XdpMode::Generic),
        ],
        AttachMode::Native => &[(XDP_FLAGS_DRV_MODE, XdpMode::Native)],
        AttachMode::Generic => &[(XDP_FLAGS_SKB_MODE, XdpMode::Generic)],
    };
    let mut failure = AttachFailure(Vec::new());
    for &(flags, m) in tries {
        match link_xdp(prog_fd, ifindex, flags) {
            Ok(link) => return Ok((link, m)),
            Err(e) => {
                failure.0.push((m, e));
                if failure.busy() {
                    break;
                }
            }
        }
    }
    Err(failure)
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A `bpf_ktime_get_ns()` time (CLOCK_MONOTONIC) read now maps to the
    /// wall clock now.
    #[test]
    fn monotonic_times_map_to_the_wall_clock() {
        let wall = clock_ns(libc::CLOCK_REALTIME);
        let mapped = monotonic_to_wall(clock_ns(libc::CLOCK_MONOTONIC));
        assert!(
            mapped.0.abs_diff(wall) < 1_000_000_000,
            "{} vs {wall}",
            mapped.0
        );
        assert!(wall > 1_600_000_000 * 1_000_000_000);
    }

    /// The key's bytes are the C struct's layout: 44 bytes, fields in
    /// order, native byte order.
    #[test]
    fn keys_have_the_programs_layout() {
        let k = DropKey {
            src: [1; 16],
            dst: [2; 16],
            vlan: 0x0003_0004,
            sport: 0x0506,
            dport: 0x0708,
            proto: 6,
            v6: 1,
            pad: [0; 2],
        };
        let b = k.as_bytes();
        assert_eq!(b.len(), std::mem::size_of::<DropKey>());
        assert_eq!(&b[32..36], &0x0003_0004u32.to_ne_bytes());
        assert_eq!((b[40], b[41], b[42], b[43]), (6, 1, 0, 0));
    }

    /// An Ethernet frame of one IPv4 TCP segment with ACK only and `len`
    /// bytes of payload, from 10.0.0.1:1000 to 10.0.0.2:80.
    fn segment(seq: u32, len: usize) -> Vec<u8> {
        let mut f = Vec::new();
        etherparse::PacketBuilder::ethernet2([2, 0, 0, 0, 0, 1], [2, 0, 0, 0, 0, 2])
            .ipv4([10, 0, 0, 1], [10, 0, 0, 2], 64)
            .tcp(1000, 80, seq, 1024)
            .ack(1)
            .write(&mut f, &vec![0u8; len])
            .expect("build a frame");
        f
    }

    /// The program loaded but attached nowhere, or `None` after saying why
    /// it cannot be loaded here (without root).
    fn loaded() -> Option<XdpFlowDrop> {
        XdpFlowDrop::unattached(16)
            .map_err(|e| eprintln!("skipping: the XDP program cannot be loaded here ({e})"))
            .ok()
    }

    /// Entries taken back while the program drops their packets on
    /// another CPU lose nothing: every packet the program counted as
    /// dropped is in exactly one take. Runs the program itself through
    /// BPF_PROG_TEST_RUN (root only; skips otherwise).
    #[test]
    fn takes_racing_drops_lose_nothing() {
        let Some(map) = loaded() else {
            return;
        };
        let mut key = DropKey {
            src: [0; 16],
            dst: [0; 16],
            proto: 6,
            sport: 1000,
            dport: 80,
            ..DropKey::default()
        };
        key.src[..4].copy_from_slice(&[10, 0, 0, 1]);
        key.dst[..4].copy_from_slice(&[10, 0, 0, 2]);
        const LEN: u64 = 100;
        let frame = segment(5000, LEN as usize);
        map.insert(&key, Some(5000)).expect("list");
        let stop = std::sync::atomic::AtomicBool::new(false);
        let (taken, takes) = std::thread::scope(|s| {
            let taker = s.spawn(|| {
                let (mut sum, mut takes) = (DropCounts::default(), 0u64);
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    if let Some(c) = map.take(&key) {
                        sum.pkts += c.pkts;
                        sum.bytes += c.bytes;
                        sum.payload += c.payload;
                        takes += 1;
                    }
                    map.insert(&key, Some(5000)).expect("list again");
                }
                (sum, takes)
            });
            let prog = map
                .object
                .progs_mut()
                .find(|p| p.name() == "flow_drop")
                .expect("flow_drop");
            for _ in 0..200 {
                let input = libbpf_rs::ProgramInput {
                    data_in: Some(&frame),
                    repeat: 2_000,
                    ..Default::default()
                };
                prog.test_run(input).expect("test run");
            }
            stop.store(true, std::sync::atomic::Ordering::Relaxed);
            taker.join().expect("taker")
        });
        let last = map.take(&key).unwrap_or_default();
        let dropped = map.totals();
        assert!(takes > 10, "only {takes} takes raced the drops");
        assert!(dropped.pkts > 0);
        assert_eq!(taken.pkts + last.pkts, dropped.pkts, "packets");
        assert_eq!(taken.bytes + last.bytes, dropped.bytes, "bytes");
        assert_eq!(taken.payload + last.payload, dropped.pkts * LEN, "payload");
    }

    /// Not a check but a measurement (ignored by default): what the
    /// program costs per dropped packet, as BPF_PROG_TEST_RUN times it on
    /// this CPU (its own per-run overhead included). Run with
    /// `cargo test -p streamcap --features xdp --lib flow_drop_cost -- --ignored --nocapture`.
    #[test]
    #[ignore = "a measurement; prints the cost per packet"]
    fn flow_drop_cost_per_packet() {
        let Some(map) = loaded() else {
            return;
        };
        let mut key = DropKey {
            proto: 6,
            sport: 1000,
            dport: 80,
            ..DropKey::default()
        };
        key.src[..4].copy_from_slice(&[10, 0, 0, 1]);
        key.dst[..4].copy_from_slice(&[10, 0, 0, 2]);
        map.insert(&key, Some(5000)).expect("list");
        let frame = segment(5000, 1000);
        let prog = map
            .object
            .progs_mut()
            .find(|p| p.name() == "flow_drop")
            .expect("flow_drop");
        let best = (0..7)
            .map(|_| {
                let input = libbpf_rs::ProgramInput {
                    data_in: Some(&frame),
                    repeat: 1_000_000,
                    ..Default::default()
                };
                prog.test_run(input).expect("test run").duration
            })
            .min()
            .unwrap_or_default();
        eprintln!(
            "flow_drop: {} ns per dropped packet (best of 7 runs of 1,000,000)",
            best.as_nanos()
        );
    }
}
