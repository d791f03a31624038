//! Live capture from a network interface (`-i`): options, the kernel filter,
//! the fan-out group, and the run.

use crate::handler::{Failure, SharedFailure};
use crate::paths::OutDir;
use crate::run::{self, usage, Outcome, RunApp, RunStage, WorkerParts};
use crate::stage::CliStage;
use crate::xsk::AnySocket;
use crate::Common;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Instant;
use streamcap::dispatch::live::{open_live, total_kernel_stats};
use streamcap::dispatch::workers::Parallel;
use streamcap::dispatch::workers::ParallelReport;
use streamcap::filter::libpcap::Libpcap;
use streamcap::source::{
    FanoutJoin, KernelFanout, LiveConfig, LiveErrorKind, RingConfig, ANY_INTERFACE, MAX_SNAPLEN,
};

/// `DLT_EN10MB`: the link type of Ethernet and loopback interfaces.
const DLT_EN10MB: i32 = 1;

/// How packets reach user space (`--source`).
#[derive(Copy, Clone, Debug, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum SourceKind {
    /// A TPACKET_V3 ring per worker, in a kernel fan-out group.
    #[value(name = "af_packet", alias = "af-packet")]
    AfPacket,
    /// An AF_XDP socket on one receive queue, with a pool of chunks.
    #[value(name = "af_xdp", alias = "af-xdp")]
    AfXdp,
}

/// Runs a job on a live interface (see [`run::run`]).
pub(crate) fn run<A: RunApp>(
    c: Common,
    dir: Option<OutDir>,
    open: impl FnOnce(&Common, Option<OutDir>) -> Result<A, String>,
) -> ExitCode {
    let Some(iface) = c.interface.clone() else {
        return usage("give a capture file (-r FILE) or an interface (-i IFACE)");
    };
    let mode = match KernelFanout::parse(&c.fanout) {
        Some(m) => m,
        None if c.fanout == "locality" => {
            return usage(
                "--fanout locality: an in-process mode for files (-r); live capture uses the \
                 kernel's hash fan-out (--fanout hash)",
            )
        }
        None => {
            return usage(format!(
                "--fanout {}: unknown mode (live capture: hash)",
                c.fanout
            ))
        }
    };
    if !mode.keeps_flow_affinity() {
        return usage(format!(
            "--fanout {mode}: this mode breaks flow affinity (the two directions of a connection \
             would reach different workers or processes), so flow records and streams cannot use \
             it; use hash"
        ));
    }
    let af_xdp = c.source == SourceKind::AfXdp;
    if af_xdp {
        if let Err(e) = crate::xsk::check_options(&c) {
            return usage(e);
        }
        if iface == ANY_INTERFACE {
            return usage(
                "--source af_xdp: an AF_XDP socket reads one interface's queue, not `any`",
            );
        }
    }
    let snaplen = c.snaplen.unwrap_or(MAX_SNAPLEN);
    if snaplen == 0 || snaplen > MAX_SNAPLEN {
        return usage(format!("--snaplen {snaplen}: expected 1 to {MAX_SNAPLEN}"));
    }
    let mut live = LiveConfig::new(iface.clone());
    live.snaplen = snaplen;
    live.promiscuous = !c.no_promisc;
    if let Some(bytes) = c.ring_size {
        let ring = RingConfig::with_total_size(usize::try_from(bytes).unwrap_or(usize::MAX));
        if let Err(e) = ring.validate(page_size()) {
            return usage(format!("--ring-size {bytes}: {e}"));
        }
        live.ring = ring;
    }
    let workers = c.workers as usize;
    live.fanout = match c.group {
        Some(group) => Some(FanoutJoin {
            group,
            mode,
            defrag: true,
            rollover: false,
        }),
        None if workers > 1 => Some(FanoutJoin {
            group: (std::process::id() & 0xffff) as u16,
            mode,
            defrag: true,
            rollover: false,
        }),
        None => None,
    };
    // The filter runs in the kernel: compiled by libpcap for Ethernet with
    // the snapshot length, attached to every worker's socket. On `any`
    // (cooked packets, whose header the kernel filter does not see: it
    // starts at the network header) it runs in user space, on the packets
    // as the engine sees them (Linux SLL), as libpcap does when it cannot
    // hand a program to the kernel. An AF_XDP socket has no kernel filter
    // either: the filter runs in user space there too.
    let expr = (!c.filter.is_empty()).then(|| c.filter.join(" "));
    let any = iface == ANY_INTERFACE || af_xdp;
    let mut filters = Vec::new();
    for _ in 0..workers {
        match expr.as_deref().filter(|_| any).map(run::filter).transpose() {
            Ok(f) => filters.push(f),
            Err(e) => return usage(e),
        }
    }
    if let Some(e) = expr.as_ref().filter(|_| !any) {
        let lib = match Libpcap::load() {
            Ok(l) => l,
            Err(err) => {
                return usage(format!(
                    "a filter was given but libpcap could not be loaded; install libpcap0.8 to use filters ({err})"
                ))
            }
        };
        match lib.compile(e, DLT_EN10MB, snaplen as i32) {
            Ok(prog) => live.filter = Some(prog),
            Err(message) => return usage(format!("invalid filter {e:?}: {message}")),
        }
    }

    let mut outputs = match open(&c, dir) {
        Ok(o) => o,
        Err(e) => return usage(e),
    };
    let capture = match run::capture(&c, outputs.wants_bytes()) {
        Ok(cap) => cap,
        Err(e) => return usage(e),
    };
    // The XDP stage goes on before the sockets open and comes off when
    // `xdp` is dropped at the end of the run (or with the process).
    let xdp = match crate::xdp::attach(&c, &iface) {
        Ok(x) => x,
        Err(e) => return usage(e),
    };
    let capture = match &xdp {
        Some(x) => {
            let cfg = capture.config();
            let limited = [cfg.cutoff, cfg.cutoff_orig, cfg.cutoff_resp]
                .iter()
                .any(Option::is_some)
                || !cfg.cutoff_classes.is_empty();
            if !limited && !c.quiet {
                eprintln!(
                    "streamcap: --xdp: no cutoff is set, so only streams the application discards are dropped in XDP"
                );
            }
            capture.with_subzero(x.config())
        }
        None => capture,
    };
    let failure: SharedFailure = Arc::new(Failure::default());
    let par = Parallel {
        workers,
        pin: c.pin.clone().map(|p| p.0).unwrap_or_default(),
        ..Parallel::default()
    };
    let stopper = crate::signals::Stopper::new(par.stop.clone());
    let _signals = match crate::signals::install(&stopper, c.duration) {
        Ok(s) => s,
        Err(e) => return usage(e),
    };
    let start = Instant::now();
    let mut xsk_info = None;
    let sockets = if af_xdp {
        #[cfg(feature = "xdp")]
        let program = xdp.as_ref().map(|x| x.program());
        #[cfg(not(feature = "xdp"))]
        let program = None;
        match crate::xsk::open(&c, &iface, snaplen, program) {
            Ok((sockets, info)) => {
                xsk_info = Some(info);
                sockets
            }
            Err(e) => {
                eprintln!("streamcap: {e}");
                return ExitCode::from(2);
            }
        }
    } else {
        match open_live(&live, workers) {
            Ok(s) => s.into_iter().map(AnySocket::Packet).collect(),
            Err(e) => {
                eprintln!("streamcap: {e}");
                return ExitCode::from(match e.kind() {
                    LiveErrorKind::NoSuchInterface | LiveErrorKind::InvalidConfig => 2,
                    _ => 1,
                });
            }
        }
    };
    outputs.begin(&failure);
    if !c.quiet {
        let group = live.fanout.filter(|_| !af_xdp).map_or(String::new(), |f| {
            format!(", fan-out group {} ({})", f.group, f.mode)
        });
        let xdp_mode = xdp.as_ref().map_or(String::new(), |x| {
            let o = x.outcome();
            let shared = if o.joined {
                ", shared with the fan-out group"
            } else {
                ""
            };
            format!(", XDP flow drop in {} mode{shared}", o.mode)
        });
        let via = xsk_info.as_ref().map_or(String::new(), |x| {
            format!(
                ", AF_XDP {} in {} mode, pool of {} chunks of {} frames",
                crate::xsk::queues(x),
                x.mode,
                x.pool.chunks,
                x.pool.frames_per_chunk
            )
        });
        eprintln!(
            "streamcap: capturing on {iface} ({workers} worker{}{group}{via}{xdp_mode}); Ctrl-C to stop",
            if workers == 1 { "" } else { "s" }
        );
    }
    /// The live run: each worker reads its own socket; AF_XDP sockets of
    /// several queues run as a buddy group.
    struct LiveRun<'a> {
        capture: &'a streamcap::Capture,
        sockets: Vec<AnySocket>,
        par: &'a Parallel,
        group: Option<crate::xsk::GroupPlan<'a>>,
    }
    impl RunStage<std::convert::Infallible> for LiveRun<'_> {
        fn run<H: CliStage>(
            self,
            parts: &WorkerParts<H>,
        ) -> Result<ParallelReport<H, run::Hooks>, std::convert::Infallible> {
            if let Some(group) = self.group {
                return Ok(group.run(self.capture, self.sockets, self.par, parts));
            }
            Ok(self
                .capture
                .run_live_on(self.sockets, self.par, |i| parts.take(i)))
        }
    }
    let group_stats = std::sync::Mutex::new(None);
    let group = xsk_info
        .as_ref()
        .filter(|x| x.queues > 1)
        .map(|x| crate::xsk::GroupPlan::new(&c, x, &group_stats));
    let live_run = LiveRun {
        capture: &capture,
        sockets,
        par: &par,
        group,
    };
    // Live, the analysis runs on threads of its own unless asked otherwise:
    // a slow analysis must not make the kernel drop packets at random.
    // A buddy group that moves connections runs the analysis inline: the
    // decoupled stage keeps per-stream state on threads of its own, which
    // would not move with them (the pools absorb a slow stretch instead).
    let moves = af_xdp && workers > 1 && c.offload == "flows";
    let analysis = c.analysis_threads.unwrap_or(if moves { 0 } else { 1 });
    // No progress bar.
    let stages = run::Stages {
        filters,
        bar: None,
        start,
        analysis,
    };
    let report = run::run_stages(&outputs, &failure, stages, live_run);
    let wall = start.elapsed().as_secs_f64();
    let mut report = match report {
        Ok(Ok(r)) => r,
        Ok(Err(never)) => match never {},
        Err(e) => return usage(e),
    };
    let (files, per_worker) = (report.files, std::mem::take(&mut report.per_worker));
    outputs.finish(&failure);
    if let Some(code) = run::output_failure(&failure) {
        return code;
    }
    let kernel = total_kernel_stats(report.kernel.iter());
    let xsk = xsk_info.map(|info| {
        let mut all = streamcap::source::af_xdp::XskStats::default();
        for x in &report.xsk {
            all.merge(x);
        }
        let group = group_stats.lock().ok().and_then(|g| *g);
        (info, all, group)
    });
    // The program comes off when the last handle to it (this one and the
    // capture's) is dropped, at the end of this function.
    let xdp_outcome = xdp.map(|x| x.outcome());
    // Packets the filter let through: counted by the kernel, or on `any` by
    // each worker's filter.
    let mut matched = kernel.packets;
    if any {
        matched = 0;
        for h in report.hooks.iter_mut() {
            if let Some(f) = h.filter.as_mut() {
                matched += f.accepted;
                if let Some(e) = f.take_error() {
                    eprintln!("streamcap: {e}");
                }
            }
        }
    }
    let live_error = report.live_error.take();
    let outcome = Outcome {
        stats: report.stats,
        read: report.packets_read,
        filter: expr.map(|e| (matched, e)),
        files: files.0,
        file_bytes: files.1,
        interim: report.interim,
        workers: if workers > 1 { per_worker } else { Vec::new() },
        kernel: Some((kernel.packets, kernel.drops, kernel.freeze_count)),
        analysis: report.analysis.take(),
        nids: report.nids.take(),
        classify: report.classify.take(),
        dns_records: report.dns_records.take(),
        http: report.http.take(),
        xdp: xdp_outcome,
        xsk,
        wall,
    };
    let source = format!("interface {iface}");
    if !c.quiet {
        run::summary(&source, &outcome, &par, &outputs);
    }
    if let Some(code) = run::stats_json(&c, &source, &outcome, &outputs) {
        return code;
    }
    if let Some(code) = run::export_failure(&outputs) {
        return code;
    }
    if let Some(e) = live_error {
        eprintln!("streamcap: {e}");
        return ExitCode::from(1);
    }
    ExitCode::SUCCESS
}

/// The system's page size.
fn page_size() -> usize {
    streamcap::source::page_size()
}
