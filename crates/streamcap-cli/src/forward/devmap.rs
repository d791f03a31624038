//! `--via devmap`: [`streamcap::forward::devmap::DevmapForwarder`] (library
//! feature `xdp`). Without the feature the path is refused with a message
//! saying how to rebuild.

use super::{Failed, Outcome, Plan};
use std::sync::atomic::AtomicBool;

/// How often the counters are read for `--count`.
#[cfg(feature = "xdp")]
const POLL: std::time::Duration = std::time::Duration::from_millis(10);

/// Attaches the program and waits until stopped; the program comes off
/// when the forwarder is dropped at the end.
#[cfg(feature = "xdp")]
pub(crate) fn run(plan: &Plan, stop: &AtomicBool) -> Result<Outcome, Failed> {
    use std::sync::atomic::Ordering;
    use std::time::Instant;
    use streamcap::forward::devmap::DevmapForwarder;
    use streamcap::subzero::xdp::AttachMode;
    let Some(mode) = AttachMode::parse(&plan.xdp_mode) else {
        return Err(Failed {
            code: 2,
            message: format!(
                "--xdp-mode {}: expected auto, native or generic",
                plan.xdp_mode
            ),
        });
    };
    let fwd =
        DevmapForwarder::attach(&plan.input, &plan.output, &plan.filter, mode).map_err(|e| {
            Failed {
                code: 2,
                message: e.to_string(),
            }
        })?;
    let detail = format!("XDP {} mode", fwd.mode());
    super::started(plan, "devmap", &detail);
    let start = Instant::now();
    let limit = plan.count.unwrap_or(u64::MAX);
    while !stop.load(Ordering::Relaxed) {
        let c = fwd.counts();
        if c.forwarded + c.send_errors >= limit {
            break;
        }
        std::thread::sleep(POLL);
    }
    let elapsed = super::since(start);
    // Frames are sent when the devmap's queue is flushed, at the end of
    // the driver's poll: a moment for the last ones.
    std::thread::sleep(POLL);
    let counts = fwd.counts();
    let last_error = match fwd.out_tx_packets() {
        Some(sent) if sent < counts.forwarded => Some(format!(
            "{}: sent {sent} packets, fewer than the {} redirected to it: the rest were lost \
             after the redirect (a veth's peer needs an XDP program or GRO to take redirected \
             frames: docs/forward.md)",
            plan.output, counts.forwarded
        )),
        _ => None,
    };
    Ok(Outcome {
        counts,
        detail,
        last_error,
        elapsed,
    })
}

/// Without the `xdp` feature: refused.
#[cfg(not(feature = "xdp"))]
pub(crate) fn run(_plan: &Plan, _stop: &AtomicBool) -> Result<Outcome, Failed> {
    Err(Failed {
        code: 2,
        message: crate::xdp::built_without_xdp("--via devmap", false),
    })
}
