//! Where the CLI's handler runs: inline in each worker, or on analysis
//! threads of its own (`--analysis-threads`), and what a finished run of
//! either kind hands to the summary.

use crate::run::Hooks;
use streamcap::deliver::Handler;
use streamcap::dispatch::analysis::{AnalysisStats, Decoupled};
use streamcap::dispatch::workers::ParallelReport;
use streamcap::source::{KernelStats, LiveError};
use streamcap::{GlobalStats, SourceError};
use streamcap_apps::classify::ClassifyStats;
use streamcap_apps::http::HttpStats;
use streamcap_apps::nids::NidsStats;

/// What a finished handler (or analysis stage) leaves for the summary.
#[derive(Default)]
pub(crate) struct StageEnd {
    /// Stream files written: count, bytes.
    pub files: (u64, u64),
    /// Interim flow records written (`--active-timeout`).
    pub interim: u64,
    /// The analysis stage's counters, when there is one.
    pub analysis: Option<AnalysisStats>,
    /// The NIDS's counters, when it ran.
    pub nids: Option<NidsStats>,
    /// The classifier's per-label totals, when it ran.
    pub classify: Option<ClassifyStats>,
    /// `dns.log` records written, when it ran.
    pub dns_records: Option<u64>,
    /// The HTTP analyser's counters, when it ran.
    pub http: Option<HttpStats>,
}

impl StageEnd {
    /// Adds `o` into `self`.
    fn add(&mut self, o: StageEnd) {
        self.files.0 += o.files.0;
        self.files.1 += o.files.1;
        self.interim += o.interim;
        if let Some(a) = o.analysis {
            let sum = self.analysis.get_or_insert_with(AnalysisStats::default);
            sum.threads += a.threads;
            sum.events += a.events;
            sum.batches += a.batches;
            sum.stalls += a.stalls;
            sum.stall_ns += a.stall_ns;
            sum.decisions += a.decisions;
        }
        if let Some(n) = o.nids {
            self.nids.get_or_insert_with(NidsStats::default).add(&n);
        }
        if let Some(c) = o.classify {
            self.classify
                .get_or_insert_with(ClassifyStats::default)
                .add(&c);
        }
        if let Some(n) = o.dns_records {
            *self.dns_records.get_or_insert(0) += n;
        }
        if let Some(h) = o.http {
            self.http.get_or_insert_with(HttpStats::default).add(&h);
        }
    }
}

/// A handler the CLI runs: it finishes (hands over and flushes its
/// records) and says what it did.
pub(crate) trait Finish: Handler + Send + 'static {
    /// Finishes the handler.
    fn finish_app(&mut self) -> StageEnd;
}

/// A worker's handler as the CLI runs it: an app inline, or the analysis
/// stage running it.
pub(crate) trait CliStage: Handler<State: Send> + Send + 'static {
    /// Finishes the handlers; what they leave for the summary.
    fn finish_stage(&mut self) -> StageEnd;
}

impl<H: Finish<State: Send>> CliStage for H {
    fn finish_stage(&mut self) -> StageEnd {
        self.finish_app()
    }
}

impl<H: Finish> CliStage for Decoupled<H> {
    fn finish_stage(&mut self) -> StageEnd {
        let (handlers, stats) = self.join();
        let mut end = StageEnd {
            analysis: Some(stats),
            ..StageEnd::default()
        };
        for mut h in handlers {
            end.add(h.finish_app());
        }
        end
    }
}

/// What the rest of a run needs from its finished workers, whatever
/// handler they ran.
pub(crate) struct Finished {
    pub stats: GlobalStats,
    pub packets_read: u64,
    pub error: Option<SourceError>,
    pub hooks: Vec<Hooks>,
    /// Stream files written: count, bytes.
    pub files: (u64, u64),
    /// Interim flow records written (`--active-timeout`).
    pub interim: u64,
    /// Per worker: packets, flows created.
    pub per_worker: Vec<(u64, u64)>,
    /// The analysis stages' counters, summed over the workers.
    pub analysis: Option<AnalysisStats>,
    /// The NIDS's counters, summed over the workers.
    pub nids: Option<NidsStats>,
    /// The classifier's totals, summed over the workers.
    pub classify: Option<ClassifyStats>,
    /// `dns.log` records, summed over the workers.
    pub dns_records: Option<u64>,
    /// The HTTP analysers' counters, summed over the workers.
    pub http: Option<HttpStats>,
    pub kernel: Vec<KernelStats>,
    /// AF_XDP sockets' counters, per worker.
    pub xsk: Vec<streamcap::source::af_xdp::XskStats>,
    pub live_error: Option<LiveError>,
}

impl Finished {
    /// Finishes every worker's handler (its records go to the outputs; the
    /// trailers follow in `RunApp::finish`) and keeps what the summary needs.
    pub(crate) fn of<H: CliStage>(report: ParallelReport<H, Hooks>) -> Finished {
        let mut end = StageEnd::default();
        let mut out = Finished {
            stats: report.stats,
            packets_read: report.packets_read,
            error: report.error,
            hooks: Vec::new(),
            files: (0, 0),
            interim: 0,
            per_worker: Vec::new(),
            analysis: None,
            nids: None,
            classify: None,
            dns_records: None,
            http: None,
            kernel: Vec::new(),
            xsk: Vec::new(),
            live_error: None,
        };
        for mut w in report.workers {
            end.add(w.handler.finish_stage());
            out.per_worker
                .push((w.stats.packets, w.stats.flows_created.iter().sum()));
            if let Some(e) = &w.pin_error {
                eprintln!("streamcap: warning: worker ran unpinned: {e}");
            }
            if let Some(k) = w.kernel {
                out.kernel.push(k);
            }
            out.xsk.extend(w.xsk);
            if out.live_error.is_none() {
                out.live_error = w.live_error.take();
            }
            out.hooks.push(w.hooks);
        }
        out.files = end.files;
        out.interim = end.interim;
        out.analysis = end.analysis;
        out.nids = end.nids;
        out.classify = end.classify;
        out.dns_records = end.dns_records;
        out.http = end.http;
        out
    }
}
