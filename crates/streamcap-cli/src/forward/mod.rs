//! `streamcap forward`: the frames of one interface that pass a filter go
//! out on another; the others are dropped and counted (docs/forward.md).
//!
//! Each path (`--via`) is a module with one `run` function that takes the
//! [`Plan`] and the stop flag and returns the [`Outcome`]; this module
//! parses, compiles the filter, installs the signal handlers and prints
//! the summary. Another path is one more [`Via`] variant and one more
//! module.

mod af_packet;
mod af_xdp;
mod devmap;

use crate::run::usage;
use std::process::ExitCode;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::{Duration, Instant};
use streamcap::filter::libpcap::Libpcap;
use streamcap::forward::ForwardCounts;

/// `DLT_EN10MB`: the filter is compiled for Ethernet frames.
const DLT_EN10MB: i32 = 1;
/// The snapshot length the filter is compiled for: whole frames.
const SNAPLEN: i32 = 262_144;

/// Examples shown after the subcommand's help.
const FORWARD_EXAMPLES: &str = "\
Examples:
  sudo streamcap forward -i eth1 --to eth2                     everything, through AF_PACKET sockets
  sudo streamcap forward -i eth1 --to eth2 not port 22        all but SSH
  sudo streamcap forward -i eth1 --to eth2 --via devmap tcp   in XDP (build with --features xdp)
  sudo streamcap forward -i eth1 --to eth2 --via af_xdp tcp   from an AF_XDP pool (build with --features xdp)
  sudo streamcap forward -i veth0 --to veth1 --duration 10 -c 1000000

The summary (forwarded packets and bytes, filtered out, send errors,
packets per second, CPU seconds) goes to stderr; nothing is written to
stdout. Needs root. Exit status: 0 ok, 1 a capture or send error that
ended the run, 2 usage error (a bad option, filter or interface).";

/// How frames get from the incoming interface to the outgoing one.
#[derive(Copy, Clone, Debug, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum Via {
    /// A TPACKET_V3 capture socket on IN, the filter in user space, a
    /// sendmmsg(2) socket on OUT: each frame is copied (the baseline).
    #[value(name = "af_packet")]
    AfPacket,
    /// An XDP program on IN runs the filter and redirects the frames that
    /// pass through a devmap to OUT, without a copy (build with
    /// `--features xdp`).
    Devmap,
    /// An AF_XDP socket on IN whose memory is a pool of chunks and a
    /// send-only socket on OUT sharing it: frames that pass the filter (in
    /// user space) leave from the frames they arrived in; the kernel
    /// copies them only in copy mode (build with `--features xdp`).
    #[value(name = "af_xdp")]
    AfXdp,
}

impl Via {
    fn name(self) -> &'static str {
        match self {
            Via::AfPacket => "af_packet",
            Via::Devmap => "devmap",
            Via::AfXdp => "af_xdp",
        }
    }
}

/// Arguments of `streamcap forward`.
#[derive(clap::Args, Debug)]
#[command(after_help = FORWARD_EXAMPLES)]
pub(crate) struct ForwardArgs {
    /// The interface frames are captured on.
    #[arg(short = 'i', long = "interface", value_name = "IN")]
    pub interface: String,
    /// The interface the frames that pass the filter are sent on.
    #[arg(long = "to", value_name = "OUT")]
    pub to: String,
    /// Stop after SECS seconds. [default: no limit]
    #[arg(long, value_name = "SECS")]
    pub duration: Option<f64>,
    /// Stop once COUNT frames have passed the filter (with --via devmap the
    /// counters are read every 10 ms, so a few more may go out).
    /// [default: no limit]
    #[arg(short = 'c', long = "count", value_name = "COUNT")]
    pub count: Option<u64>,
    /// The forwarding path.
    #[arg(long, value_enum, default_value = "af_packet")]
    pub via: Via,
    /// --via devmap, af_xdp: where the XDP program runs: auto (the driver's own
    /// hook where it has one, else the generic hook), native or generic.
    #[arg(long, value_name = "MODE", default_value = "auto")]
    pub xdp_mode: String,
    /// --via af_packet: how accepted frames are sent: batch (sendmmsg, one
    /// call per ring block) or frame (one send per frame); for measurements.
    #[arg(long, value_name = "HOW", default_value = "batch", hide = true)]
    pub send: String,
    /// A tcpdump-syntax filter, e.g. `tcp port 80 and host 10.0.0.1`; the
    /// frames it rejects are dropped. [default: forward everything]
    #[arg(value_name = "FILTER")]
    pub filter: Vec<String>,
}

/// What a path needs: the checked arguments and the compiled filter.
pub(crate) struct Plan {
    pub input: String,
    pub output: String,
    /// libpcap's program for Ethernet frames; empty without a filter.
    pub filter: Vec<streamcap::filter::bpf::Insn>,
    pub count: Option<u64>,
    /// `--xdp-mode` (read by the devmap path, built with the `xdp` feature).
    #[cfg_attr(not(feature = "xdp"), allow(dead_code))]
    pub xdp_mode: String,
    pub send: String,
}

/// What a path did.
pub(crate) struct Outcome {
    pub counts: ForwardCounts,
    /// How the path ran, for the summary (e.g. "XDP native mode").
    pub detail: String,
    /// The last send error, or a warning about lost frames, if any.
    pub last_error: Option<String>,
    /// Wall time from the first frame's chance to the stop.
    pub elapsed: Duration,
}

/// Why a path did not run or stopped: the message and the exit status.
pub(crate) struct Failed {
    pub code: u8,
    pub message: String,
}

/// Runs `streamcap forward`.
pub(crate) fn run(a: ForwardArgs) -> ExitCode {
    if let Some(d) = a.duration {
        if !(d.is_finite() && d > 0.0) {
            return usage(format!(
                "--duration {d}: expected a number of seconds above 0"
            ));
        }
    }
    if a.interface == a.to {
        return usage(format!(
            "--to {}: the outgoing interface must differ from the incoming one",
            a.to
        ));
    }
    let expr = a.filter.join(" ");
    let filter = if expr.trim().is_empty() {
        Vec::new()
    } else {
        let lib = match Libpcap::load() {
            Ok(l) => l,
            Err(e) => {
                return usage(format!(
                    "a filter was given but libpcap could not be loaded; install libpcap0.8 to use filters ({e})"
                ))
            }
        };
        match lib.compile(&expr, DLT_EN10MB, SNAPLEN) {
            Ok(p) => p,
            Err(m) => return usage(format!("invalid filter {expr:?}: {m}")),
        }
    };
    let plan = Plan {
        input: a.interface.clone(),
        output: a.to.clone(),
        filter,
        count: a.count,
        xdp_mode: a.xdp_mode.clone(),
        send: a.send.clone(),
    };
    let stop = Arc::new(AtomicBool::new(false));
    let stopper = crate::signals::Stopper::new(stop.clone());
    let _signals = match crate::signals::install(&stopper, a.duration) {
        Ok(s) => s,
        Err(e) => return usage(e),
    };
    let cpu_start = streamcap::forward::process_cpu_seconds();
    let result = match a.via {
        Via::AfPacket => af_packet::run(&plan, &stop),
        Via::Devmap => devmap::run(&plan, &stop),
        Via::AfXdp => af_xdp::run(&plan, &stop),
    };
    let cpu = streamcap::forward::process_cpu_seconds() - cpu_start;
    let out = match result {
        Ok(o) => o,
        Err(f) => {
            eprintln!("streamcap: {}", f.message);
            return ExitCode::from(f.code);
        }
    };
    let c = out.counts;
    let secs = out.elapsed.as_secs_f64();
    let pps = if secs > 0.0 {
        c.forwarded as f64 / secs
    } else {
        0.0
    };
    let filter = if expr.trim().is_empty() {
        String::new()
    } else {
        format!(" (filter {expr:?})")
    };
    eprintln!(
        "streamcap: forwarded {} packets ({} bytes) from {} to {} via {} ({}); {} filtered out{filter}, {} send errors; {secs:.3} s, {pps:.0} pps, {cpu:.2} CPU s",
        c.forwarded,
        c.forwarded_bytes,
        plan.input,
        plan.output,
        a.via.name(),
        out.detail,
        c.filtered_out,
        c.send_errors,
    );
    if let Some(e) = out.last_error {
        eprintln!("streamcap: {e}");
    }
    ExitCode::SUCCESS
}

/// Announces that forwarding has started (the tests wait for this line).
pub(crate) fn started(plan: &Plan, via: &str, detail: &str) {
    eprintln!(
        "streamcap: forwarding from {} to {} via {via} ({detail}); Ctrl-C to stop",
        plan.input, plan.output
    );
}

/// The time since `start`.
pub(crate) fn since(start: Instant) -> Duration {
    start.elapsed()
}
