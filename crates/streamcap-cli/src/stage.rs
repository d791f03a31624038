//! Where the CLI's handler runs: inline in each worker, or on analysis
//! threads of its own (`--analysis-threads`), and what a finished run of
//! either kind hands to the summary.

use crate::handler::CliHandler;
use crate::run::Hooks;
use streamcap::deliver::Handler;
use streamcap::dispatch::analysis::{AnalysisStats, Decoupled};
use streamcap::dispatch::workers::ParallelReport;
use streamcap::source::{KernelStats, LiveError};
use streamcap::{GlobalStats, SourceError};

/// A worker's handler as the CLI runs it.
pub(crate) trait CliStage: Handler + Send + 'static {
    /// Finishes the handlers (hands over and flushes their records);
    /// returns the stream files written (count, bytes) and, for the
    /// analysis stage, its counters.
    fn finish_stage(&mut self) -> ((u64, u64), Option<AnalysisStats>);
}

impl CliStage for CliHandler {
    fn finish_stage(&mut self) -> ((u64, u64), Option<AnalysisStats>) {
        self.finish();
        ((self.files, self.file_bytes), None)
    }
}

impl CliStage for Decoupled<CliHandler> {
    fn finish_stage(&mut self) -> ((u64, u64), Option<AnalysisStats>) {
        let (handlers, stats) = self.join();
        let mut files = (0, 0);
        for mut h in handlers {
            h.finish();
            files.0 += h.files;
            files.1 += h.file_bytes;
        }
        (files, Some(stats))
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
    /// Per worker: packets, flows created.
    pub per_worker: Vec<(u64, u64)>,
    /// The analysis stages' counters, summed over the workers.
    pub analysis: Option<AnalysisStats>,
    pub kernel: Vec<KernelStats>,
    pub live_error: Option<LiveError>,
}

impl Finished {
    /// Finishes every worker's handler (its records go to the outputs; the
    /// trailers follow in `Outputs::finish`) and keeps what the summary needs.
    pub(crate) fn of<H: CliStage>(report: ParallelReport<H, Hooks>) -> Finished {
        let mut out = Finished {
            stats: report.stats,
            packets_read: report.packets_read,
            error: report.error,
            hooks: Vec::new(),
            files: (0, 0),
            per_worker: Vec::new(),
            analysis: None,
            kernel: Vec::new(),
            live_error: None,
        };
        for mut w in report.workers {
            let (files, analysis) = w.handler.finish_stage();
            out.files.0 += files.0;
            out.files.1 += files.1;
            if let Some(a) = analysis {
                let sum = out.analysis.get_or_insert_with(AnalysisStats::default);
                sum.threads += a.threads;
                sum.events += a.events;
                sum.batches += a.batches;
                sum.stalls += a.stalls;
                sum.stall_ns += a.stall_ns;
                sum.decisions += a.decisions;
            }
            out.per_worker
                .push((w.stats.packets, w.stats.flows_created.iter().sum()));
            if let Some(e) = &w.pin_error {
                eprintln!("streamcap: warning: worker ran unpinned: {e}");
            }
            if let Some(k) = w.kernel {
                out.kernel.push(k);
            }
            if out.live_error.is_none() {
                out.live_error = w.live_error.take();
            }
            out.hooks.push(w.hooks);
        }
        out
    }
}
