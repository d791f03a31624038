//! Forwarding captured frames from one interface to another: the frames
//! that pass a filter go out on the second interface, the others are
//! dropped and counted (WireCAP's forwarding, section III-B-b of
//! `wirecap-lossless-capture`; `streamcap forward`, docs/forward.md).
//!
//! Two paths are built:
//!
//! - [`afpacket::AfPacketForwarder`]: a `TPACKET_V3` capture socket on the
//!   incoming interface and an `AF_PACKET` sending socket on the outgoing
//!   one. Each frame is copied twice (into the ring, then by `sendmmsg`
//!   into a new buffer): the plain baseline.
//! - [`devmap::DevmapForwarder`] (feature `xdp`): an XDP program on the
//!   incoming interface runs the same cBPF filter and redirects accepted
//!   frames through a `BPF_MAP_TYPE_DEVMAP` to the outgoing interface, the
//!   kernel's own zero-copy route; user space only reads counters.
//!
//! Each path is a module of its own with the same shape (open or attach,
//! run until stopped, [`ForwardCounts`]), so that another (AF_XDP, from
//! the same UMEM) is one more module.

#[cfg(target_os = "linux")]
pub mod afpacket;
#[cfg(feature = "xdp")]
pub mod devmap;
#[cfg(feature = "xdp")]
pub(crate) mod xdp_filter;

/// What a forwarder did, cumulative since it started.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct ForwardCounts {
    /// Frames that passed the filter and were sent (AF_PACKET) or handed
    /// to the outgoing interface (devmap).
    pub forwarded: u64,
    /// Their bytes (whole frames, link-layer header included).
    pub forwarded_bytes: u64,
    /// Frames the filter rejected, dropped.
    pub filtered_out: u64,
    /// Frames that passed the filter but could not be sent.
    pub send_errors: u64,
}

/// CPU time this process has used so far (user and system), in seconds.
///
/// Work the kernel does in softirq context (an XDP program, the receive
/// path of a veth) is not charged to any process and is not included.
#[cfg(target_os = "linux")]
pub fn process_cpu_seconds() -> f64 {
    #[allow(unsafe_code)]
    fn rusage() -> Option<libc::rusage> {
        let mut ru = std::mem::MaybeUninit::<libc::rusage>::zeroed();
        // SAFETY: `ru` is a writable, zero-initialised `struct rusage` (all
        // integers, so zero is valid); getrusage only writes it.
        let rc = unsafe { libc::getrusage(libc::RUSAGE_SELF, ru.as_mut_ptr()) };
        // SAFETY: zero-initialised and, when rc is 0, filled by the kernel.
        (rc == 0).then(|| unsafe { ru.assume_init() })
    }
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    rusage().map_or(0.0, |ru| secs(ru.ru_utime) + secs(ru.ru_stime))
}

/// A counter of `interface` from `/sys/class/net/IFACE/statistics/NAME`
/// (e.g. `rx_packets`, `tx_dropped`), in the caller's network namespace.
pub fn interface_counter(interface: &str, name: &str) -> Option<u64> {
    if interface.contains('/') || name.contains('/') {
        return None;
    }
    std::fs::read_to_string(format!("/sys/class/net/{interface}/statistics/{name}"))
        .ok()
        .and_then(|s| s.trim().parse().ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_of_missing_interfaces_are_none() {
        assert_eq!(interface_counter("no-such-if0", "rx_packets"), None);
        assert_eq!(interface_counter("../lo", "rx_packets"), None);
        assert!(interface_counter("lo", "rx_packets").is_some());
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn cpu_time_grows() {
        let before = process_cpu_seconds();
        let mut x = 0u64;
        for i in 0..20_000_000u64 {
            x = x.wrapping_mul(31).wrapping_add(i);
        }
        std::hint::black_box(x);
        assert!(process_cpu_seconds() > before, "{before}");
    }
}
