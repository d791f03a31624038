//! `--via af_xdp`: an AF_XDP socket on IN with a pool of chunks
//! ([`streamcap::source::af_xdp`]) and a send-only socket on OUT that
//! shares its memory: the frames the filter passes leave from the frames
//! they were received in, and the others go back to the pool.

use super::{Failed, Outcome, Plan};
use std::sync::atomic::AtomicBool;

/// Fewer packets than this in a batch: wait [`BATCH_WAIT`] before the next.
#[cfg(feature = "xdp")]
const BATCH_FEW: usize = 64;
/// How long packets may gather after a short batch.
#[cfg(feature = "xdp")]
const BATCH_WAIT: std::time::Duration = std::time::Duration::from_micros(500);

/// Opens both sockets and forwards until stopped.
#[cfg(feature = "xdp")]
pub(crate) fn run(plan: &Plan, stop: &AtomicBool) -> Result<Outcome, Failed> {
    use super::started;
    use std::sync::atomic::Ordering;
    use std::sync::Arc;
    use std::time::{Duration, Instant};
    use streamcap::filter::bpf::Program;
    use streamcap::forward::ForwardCounts;
    use streamcap::source::af_xdp::{AfXdp, AfXdpConfig, PoolConfig};
    use streamcap::subzero::xdp::{AttachMode, XdpFlowDrop};
    let usage = |message: String| Failed { code: 2, message };
    let filter = if plan.filter.is_empty() {
        None
    } else {
        Some(Program::new(plan.filter.clone()).map_err(|e| usage(format!("the filter: {e}")))?)
    };
    let Some(mode) = AttachMode::parse(&plan.xdp_mode) else {
        return Err(usage(format!(
            "--xdp-mode {}: expected auto, native or generic",
            plan.xdp_mode
        )));
    };
    let program =
        XdpFlowDrop::attach(&plan.input, 1, mode, None).map_err(|e| usage(e.to_string()))?;
    let xdp_mode = program.mode();
    let cfg = AfXdpConfig {
        pool: PoolConfig::default(),
        ..AfXdpConfig::new(plan.input.as_str())
    };
    let mut socket = AfXdp::open(&cfg, Arc::new(program)).map_err(|e| usage(e.to_string()))?;
    let tx_mode = socket
        .open_tx(&plan.output, 0)
        .map_err(|e| usage(e.to_string()))?;
    let detail = format!(
        "XDP {xdp_mode} mode, receive in {} mode, send in {tx_mode} mode",
        socket.mode()
    );
    started(plan, "af_xdp", &detail);
    let start = Instant::now();
    let mut passed = 0u64;
    let limit = plan.count.unwrap_or(u64::MAX);
    while !stop.load(Ordering::Relaxed) && passed < limit {
        let res = socket.forward_block(Duration::from_millis(100), &mut |p| {
            let keep = passed < limit
                && filter
                    .as_ref()
                    .is_none_or(|f| f.matches(p.data, p.orig_len));
            passed += u64::from(keep);
            keep
        });
        // A short batch: let packets gather for a moment instead of
        // waking for every few of them (as the AF_PACKET ring's block
        // timeout does, with 1 ms).
        if let Ok(n) = res {
            if n > 0 && n < BATCH_FEW {
                std::thread::sleep(BATCH_WAIT);
            }
        }
        if let Err(e) = res {
            let f = socket.forward_stats();
            return Err(Failed {
                code: 1,
                message: format!(
                    "{e} (after {} packets forwarded, {} filtered out)",
                    f.forwarded, f.filtered
                ),
            });
        }
    }
    let in_flight = socket.flush_tx(Duration::from_secs(1));
    let elapsed = super::since(start);
    let f = socket.forward_stats();
    let x = socket.xsk_stats();
    let last_error = if in_flight > 0 {
        Some(format!(
            "{in_flight} frames were still being sent at the end"
        ))
    } else if x.drops() > 0 {
        Some(format!(
            "{} frames were dropped on the way in ({} with the pool exhausted)",
            x.drops(),
            x.pool_exhausted
        ))
    } else {
        None
    };
    Ok(Outcome {
        counts: ForwardCounts {
            forwarded: f.forwarded,
            forwarded_bytes: f.forwarded_bytes,
            filtered_out: f.filtered,
            send_errors: f.tx_ring_full,
        },
        detail,
        last_error,
        elapsed,
    })
}

/// Without the `xdp` feature there is no AF_XDP path.
#[cfg(not(feature = "xdp"))]
pub(crate) fn run(_plan: &Plan, _stop: &AtomicBool) -> Result<Outcome, Failed> {
    Err(Failed {
        code: 2,
        message: crate::xdp::built_without_xdp("--via af_xdp", true),
    })
}
