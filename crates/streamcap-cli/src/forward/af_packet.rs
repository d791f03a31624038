//! `--via af_packet`: [`streamcap::forward::afpacket::AfPacketForwarder`].

use super::{started, Failed, Outcome, Plan};
use std::sync::atomic::AtomicBool;
use std::time::Instant;
use streamcap::forward::afpacket::{AfPacketForwarder, SendMode};
use streamcap::source::LiveErrorKind;

/// Opens both sockets and forwards until stopped.
pub(crate) fn run(plan: &Plan, stop: &AtomicBool) -> Result<Outcome, Failed> {
    let mode = match plan.send.as_str() {
        "batch" => SendMode::Batched,
        "frame" => SendMode::PerFrame,
        other => {
            return Err(Failed {
                code: 2,
                message: format!("--send {other}: expected batch or frame"),
            })
        }
    };
    let filter = (!plan.filter.is_empty()).then(|| plan.filter.clone());
    let mut fwd =
        AfPacketForwarder::open(&plan.input, &plan.output, filter).map_err(|e| Failed {
            code: match e.kind() {
                LiveErrorKind::NoSuchInterface
                | LiveErrorKind::InvalidConfig
                | LiveErrorKind::UnsupportedLinkType => 2,
                _ => 1,
            },
            message: e.to_string(),
        })?;
    fwd.set_send_mode(mode);
    let detail = match mode {
        SendMode::Batched => "sendmmsg per ring block",
        SendMode::PerFrame => "send per frame",
    };
    started(plan, "af_packet", detail);
    let start = Instant::now();
    let ended = fwd.run(stop, plan.count);
    let elapsed = super::since(start);
    if let Err(e) = ended {
        return Err(Failed {
            code: 1,
            message: format!(
                "{e} (after {} packets forwarded, {} filtered out)",
                fwd.counts().forwarded,
                fwd.counts().filtered_out
            ),
        });
    }
    Ok(Outcome {
        counts: fwd.counts(),
        detail: detail.to_string(),
        last_error: fwd
            .last_send_error()
            .map(|e| format!("last send error: {e}")),
        elapsed,
    })
}
