//! The filter-only zero-copy path: the XDP program of `bpf/forward.bpf.c`
//! on the incoming interface runs the cBPF filter on each frame and
//! redirects the accepted ones through a `BPF_MAP_TYPE_DEVMAP` to the
//! outgoing interface; the rejected ones are dropped. The frame never
//! leaves the kernel (in native mode it never leaves the driver's page),
//! and this process only reads counters.
//!
//! The program is attached through a BPF link, which the kernel removes
//! when the last descriptor to it closes: when [`DevmapForwarder`] is
//! dropped, and when the process dies, however it dies.
//!
//! A redirected frame is transmitted when the kernel flushes the devmap's
//! queue, after the program has counted it; a failure there is counted by
//! the drivers, not by the program. On a veth outgoing interface, frames
//! are delivered only if the veth's peer has NAPI running (an XDP program
//! on the peer, or GRO enabled on it: `ethtool -K PEER gro on`); otherwise
//! veth drops them and counts them in the *incoming* veth's
//! `rx_queue_N_drops` (`ethtool -S`). [`DevmapForwarder::out_tx_packets`]
//! gives the outgoing interface's own count to compare with.

use super::{interface_counter, xdp_filter, ForwardCounts};
use crate::filter::bpf::Insn;
use crate::subzero::xdp::{attach_in_mode, AttachMode, XdpError, XdpMode};
use libbpf_rs::{MapCore, MapFlags};
use std::os::fd::{AsFd, AsRawFd, OwnedFd};

/// The forwarding program attached to the incoming interface, with the
/// outgoing interface in its devmap.
pub struct DevmapForwarder {
    object: libbpf_rs::Object,
    /// The link: closing it detaches the program.
    _link: OwnedFd,
    mode: XdpMode,
    output: String,
    /// The outgoing interface's `tx_packets` when the program was attached.
    tx_start: Option<u64>,
}

impl std::fmt::Debug for DevmapForwarder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DevmapForwarder")
            .field("mode", &self.mode)
            .field("output", &self.output)
            .finish()
    }
}

impl DevmapForwarder {
    /// Loads the program with `filter` (a cBPF program for Ethernet frames,
    /// libpcap's DLT_EN10MB code; empty forwards everything), puts
    /// `output` in its devmap and attaches it to `input` in `mode`.
    ///
    /// Needs root (`CAP_BPF`, `CAP_NET_ADMIN`). Errors name the interface
    /// and what failed: a missing interface, one that already has an XDP
    /// program, a driver without the hook asked for, an outgoing interface
    /// the devmap does not take.
    pub fn attach(
        input: &str,
        output: &str,
        filter: &[Insn],
        mode: AttachMode,
    ) -> Result<DevmapForwarder, XdpError> {
        let fail = |iface: &str, message: String| XdpError {
            interface: iface.to_string(),
            message,
        };
        let index = |iface: &str| {
            crate::source::afpacket::interface_index(iface).map_err(|e| fail(iface, e.to_string()))
        };
        let in_index = index(input)?;
        let out_index = index(output)?;
        if in_index == out_index {
            return Err(fail(
                input,
                "the outgoing interface is the incoming one (frames would loop)".into(),
            ));
        }
        let in_ifindex =
            i32::try_from(in_index).map_err(|_| fail(input, "no such interface".into()))?;
        let object = xdp_filter::load(input, filter)?;
        let devmap = object
            .maps()
            .find(|m| m.name() == "out")
            .ok_or_else(|| fail(input, "the forwarding program has no out map".into()))?;
        devmap
            .update(&0u32.to_ne_bytes(), &out_index.to_ne_bytes(), MapFlags::ANY)
            .map_err(|e| {
                fail(
                    output,
                    format!("putting the outgoing interface in the devmap: {e} (its driver may not take redirected frames)"),
                )
            })?;
        let prog = object
            .progs()
            .find(|p| p.name() == xdp_filter::PROGRAM)
            .ok_or_else(|| fail(input, "the object has no forward program".into()))?;
        let (link, mode) =
            attach_in_mode(prog.as_fd().as_raw_fd(), in_ifindex, mode).map_err(|f| {
                fail(
                    input,
                    format!(
                        "attaching the forwarding program failed ({})",
                        f.describe(input)
                    ),
                )
            })?;
        Ok(DevmapForwarder {
            object,
            _link: link,
            mode,
            output: output.to_string(),
            tx_start: interface_counter(output, "tx_packets"),
        })
    }

    /// Where the program runs: native (in the driver) or generic.
    pub fn mode(&self) -> XdpMode {
        self.mode
    }

    /// What was forwarded so far, from the program's per-CPU counters:
    /// `forwarded` counts the frames handed to the devmap, `send_errors`
    /// the redirects it refused (no outgoing interface).
    pub fn counts(&self) -> ForwardCounts {
        xdp_filter::counts(&self.object)
    }

    /// How many packets the outgoing interface has sent since the program
    /// was attached (its `tx_packets` counter, which also counts any other
    /// traffic it sends), if the kernel says. Fewer than
    /// [`ForwardCounts::forwarded`] means frames were lost after the
    /// redirect (see the module documentation).
    pub fn out_tx_packets(&self) -> Option<u64> {
        let now = interface_counter(&self.output, "tx_packets")?;
        Some(now.saturating_sub(self.tx_start?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_and_identical_interfaces_are_refused() {
        let e = DevmapForwarder::attach("no-such-if0", "lo", &[], AttachMode::Auto)
            .expect_err("no such interface");
        assert!(e.to_string().contains("no-such-if0"), "{e}");
        let e = DevmapForwarder::attach("lo", "lo", &[], AttachMode::Auto)
            .expect_err("the same interface");
        assert!(e.message.contains("incoming one"), "{e}");
    }
}
