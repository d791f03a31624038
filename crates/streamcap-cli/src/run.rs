//! Running `flows` and `streams`: the configuration from the options, the
//! outputs, one or several workers on a file or an interface, signals, and
//! the summary.

use crate::handler::{CliHandler, Failure, SharedFailure};
use crate::limits;
use crate::output::{Format, FramingWriter, RecordFormat};
use crate::paths::{self, DirMode, OutDir};
use crate::pump::{self, Pump};
use crate::signals::{self, Stopper};
use crate::sink::{BatchSink, RecordSink, SharedOutput};
use crate::stage::{CliStage, Finish, Finished};
use crate::tap::{RecordTap, TapReport};
use crate::{Common, DeliveryArg, ModeArg, PolicyArg};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::{self, IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};
use streamcap::capture::{Progress, RunHooks, Verdict};
use streamcap::decode::DecodeError;
use streamcap::deliver::{Delivery, EndReason};
use streamcap::dispatch::analysis::{AnalysisStats, Decoupled};
use streamcap::dispatch::fanout::Fanout;
use streamcap::dispatch::locality::{DEFAULT_LOCALITY_TIMEOUT, MAX_LOCALITY_BATCH};
use streamcap::dispatch::workers::Parallel;
use streamcap::dispatch::workers::ParallelReport;
use streamcap::filter::{CutoffClass, Filter, FilterError, PriorityClass};
use streamcap::source::pace::{DEFAULT_RING_SIZE, FRAME_HEADER};
use streamcap::stats::ProtoClass;
use streamcap::{
    Capture, Config, FileSource, GlobalStats, OverlapPolicy, RawPacket, ReassemblyMode,
};

/// Most worker threads accepted.
pub const MAX_WORKERS: u32 = 256;

/// Prints a usage error; exit status 2.
pub fn usage(msg: impl std::fmt::Display) -> ExitCode {
    eprintln!("streamcap: {msg}");
    ExitCode::from(2)
}

/// Hooks of one worker: the filter, the stop flag, the progress bar.
pub struct Hooks {
    pub filter: Option<Filter>,
    pub failure: SharedFailure,
    pub bar: Option<ProgressBar>,
    pub start: Instant,
}

impl RunHooks for Hooks {
    fn inspect(&mut self, pkt: &RawPacket<'_>) -> Verdict {
        if self.failure.is_set() {
            return Verdict::Stop;
        }
        match self.filter.as_mut() {
            Some(f) => f.inspect(pkt),
            None => Verdict::Process,
        }
    }

    fn progress(&mut self, p: &Progress) {
        let Some(bar) = &self.bar else { return };
        if p.done {
            bar.finish_and_clear();
            return;
        }
        if let Some((pos, _)) = p.position {
            bar.set_position(pos);
        }
        let secs = self.start.elapsed().as_secs_f64().max(1e-9);
        bar.set_message(format!(
            "{:.0} pkt/s  {:.2} Gbit/s",
            p.packets_read as f64 / secs,
            p.wire_bytes as f64 * 8.0 / secs / 1e9
        ));
    }

    fn progress_every(&self) -> u64 {
        if self.bar.is_some() {
            16_384
        } else {
            u64::MAX
        }
    }
}

pub(crate) fn open_output(path: Option<&Path>) -> io::Result<Box<dyn Write + Send>> {
    Ok(match path {
        Some(p) if p != Path::new("-") => Box::new(io::BufWriter::with_capacity(
            1 << 16,
            std::fs::File::create(p)?,
        )),
        _ => Box::new(io::BufWriter::with_capacity(1 << 16, io::stdout())),
    })
}

/// The engine configuration the options ask for (`bytes`: the job reads
/// stream bytes, so the default cutoff is unlimited rather than 0); fails
/// on a cutoff class libpcap refuses.
fn config(c: &Common, bytes: bool) -> Result<Config, String> {
    let default_cutoff = if bytes { None } else { Some(0) };
    let mut cfg = Config {
        mode: match c.mode {
            ModeArg::Fast => ReassemblyMode::Fast,
            ModeArg::Strict => ReassemblyMode::Strict,
        },
        policy: match c.policy {
            PolicyArg::First => OverlapPolicy::First,
            PolicyArg::Last => OverlapPolicy::Last,
            PolicyArg::Linux => OverlapPolicy::Linux,
            PolicyArg::Bsd => OverlapPolicy::Bsd,
            PolicyArg::Windows => OverlapPolicy::Windows,
            PolicyArg::Solaris => OverlapPolicy::Solaris,
        },
        delivery: match c.delivery {
            DeliveryArg::Chunks => Delivery::Chunks,
            DeliveryArg::Segments => Delivery::Segments,
        },
        cutoff: c.cutoff.map_or(default_cutoff, |l| l.0),
        cutoff_orig: c.cutoff_orig.map(|l| l.0.unwrap_or(u64::MAX)),
        cutoff_resp: c.cutoff_resp.map(|l| l.0.unwrap_or(u64::MAX)),
        // No output format carries callback processing time.
        measure_processing_time: false,
        priority: c.priority,
        base_threshold: c.base_threshold,
        overload_cutoff: c.overload_cutoff,
        active_timeout: c.active_timeout,
        ..Config::default()
    };
    if let Some(chunk) = c.chunk {
        cfg.chunk_size = usize::try_from(chunk).unwrap_or(usize::MAX).max(1);
    }
    if let Some(m) = c.memory {
        cfg.memory_size = usize::try_from(m).unwrap_or(usize::MAX);
    }
    for (ports, given) in [
        (&mut cfg.vxlan_ports, &c.vxlan_port),
        (&mut cfg.geneve_ports, &c.geneve_port),
        (&mut cfg.gtp_ports, &c.gtp_port),
    ] {
        if !given.is_empty() {
            ports.clone_from(given);
        }
    }
    for class in &c.cutoff_class {
        let compiled = CutoffClass::new(&class.expr, class.cutoff.unwrap_or(u64::MAX))
            .map_err(|e| format!("--cutoff-class: {}", filter_message(e)))?;
        cfg.cutoff_classes.push(compiled);
    }
    for class in &c.priority_class {
        let compiled = PriorityClass::new(&class.expr, class.priority)
            .map_err(|e| format!("--priority-class: {}", filter_message(e)))?;
        cfg.priority_classes.push(compiled);
    }
    Ok(cfg)
}

/// The capture the options ask for: configuration, timeouts, packet limit.
pub(crate) fn capture(c: &Common, bytes: bool) -> Result<Capture, String> {
    let mut builder = Capture::builder().config(config(c, bytes)?);
    if let Some(t) = c.timeout {
        builder = builder.inactivity_timeout(t);
    }
    if let Some(n) = c.count {
        builder = builder.max_packets(n);
    }
    if c.locality_batch > 0 {
        let workers = u64::from(c.workers);
        let bytes = limits::locality_bytes(workers, streamcap::source::physical_memory());
        builder = builder
            .locality_batch(c.locality_batch)
            .locality_bytes(bytes)
            .locality_timeout(
                c.locality_timeout
                    .map_or(DEFAULT_LOCALITY_TIMEOUT, Duration::from_millis),
            );
    }
    if let Some(pace) = c.rate.or(c.speed) {
        builder = builder.pace(pace).map_err(|e| e.to_string())?;
        if let Some(bytes) = c.ring_size {
            builder = builder.ring_size(bytes);
        }
    }
    Ok(builder.build())
}

/// Compiles the filter expression for one worker.
pub(crate) fn filter(expr: &str) -> Result<Filter, String> {
    Filter::new(expr).map_err(filter_message)
}

/// A filter error as the command line reports it.
fn filter_message(e: FilterError) -> String {
    match e {
        FilterError::Unavailable(e) => format!(
            "a filter was given but libpcap could not be loaded; install libpcap0.8 to use filters ({e})"
        ),
        FilterError::Compile { expr, message, .. } => {
            format!("invalid filter {expr:?}: {message}")
        }
        e => e.to_string(),
    }
}

/// Why `--format parquet` refuses standard output.
pub(crate) const PARQUET_NEEDS_FILE: &str = "--format parquet needs -o FILE: a Parquet file \
     ends with the index of its columns, written last, so it cannot go to standard output";

/// How `streams.jsonl` (with `-w DIR`) is written: JSON lines with the
/// file names.
fn jsonl(community_seed: u16) -> RecordFormat {
    RecordFormat {
        format: Format::Json,
        files: true,
        community_seed,
        app: false,
    }
}

/// The outputs of a run: the record output and, with `-w DIR`, the
/// directory and its `streams.jsonl`; shared by the workers.
pub(crate) struct Outputs {
    /// How the records of `out` are formatted.
    format: RecordFormat,
    /// Whether each direction's SHA-256 goes into its record.
    digest: bool,
    /// Whether every stream is reassembled (`streams`), not only counted.
    streams: bool,
    out: SharedOutput,
    out_name: String,
    framing: FramingWriter,
    /// With `-w DIR`: the directory and its `streams.jsonl` (JSON lines, so
    /// no header or trailer to write).
    dir: Option<(PathBuf, SharedOutput)>,
    /// What the taps of `out` did (`--ipfix`, `--kafka`), once finished.
    exports: Vec<TapReport>,
}

impl Outputs {
    /// Opens `-o` (or standard output) for records in `format`, and the
    /// `-w` directory if there is one; `digest` hashes each direction,
    /// `streams` reassembles every stream (`streams`); `taps` see every
    /// record of `-o` (`--ipfix`).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn open(
        c: &Common,
        format: Format,
        digest: bool,
        streams: bool,
        dir: Option<OutDir>,
        app: bool,
        taps: Vec<Box<dyn RecordTap>>,
    ) -> Result<Outputs, String> {
        if let Some(d) = &dir {
            paths::clear_ours(d)?;
        }
        let files = dir.is_some();
        let mut taps = taps;
        let raw: Box<dyn Write + Send> = if format == Format::Parquet {
            // The Parquet file is the tap's; the text output writes nothing.
            let path = match c.output.as_deref() {
                Some(p) if p != Path::new("-") => p,
                _ => return Err(PARQUET_NEEDS_FILE.to_string()),
            };
            let shape = crate::parquet_out::Shape { files, app };
            let tap = crate::parquet_out::ParquetTap::create(path, shape, c.community_id_seed)?;
            taps.insert(0, Box::new(tap));
            Box::new(io::sink())
        } else {
            open_output(c.output.as_deref()).map_err(|e| {
                let p = c.output.as_deref().unwrap_or(Path::new("-"));
                format!("{}: cannot create: {e}", p.display())
            })?
        };
        let out_name = c
            .output
            .as_ref()
            .map_or_else(|| "stdout".to_string(), |p| p.display().to_string());
        let format = RecordFormat {
            format,
            files,
            community_seed: c.community_id_seed,
            app,
        };
        let out = SharedOutput::spawn_tapped("records", raw, format, taps)
            .map_err(|e| format!("cannot start the writer thread of {out_name}: {e}"))?;
        let framing = FramingWriter::new(Box::new(BatchSink::new(out.clone())), format);
        let dir = match dir {
            Some(OutDir { path: d, mode }) => {
                std::fs::create_dir_all(&d)
                    .map_err(|e| format!("{}: cannot create the directory: {e}", d.display()))?;
                let jl = d.join(paths::JSONL_NAME);
                let mut open = std::fs::OpenOptions::new();
                if mode == DirMode::Append {
                    open.append(true).create(true);
                } else {
                    open.write(true).create(true).truncate(true);
                }
                let f = open
                    .open(&jl)
                    .map_err(|e| format!("{}: cannot create: {e}", jl.display()))?;
                let shared = SharedOutput::spawn(
                    "streams",
                    Box::new(io::BufWriter::new(f)),
                    jsonl(c.community_id_seed),
                )
                .map_err(|e| format!("cannot start the writer thread of {}: {e}", jl.display()))?;
                Some((d, shared))
            }
            None => None,
        };
        Ok(Outputs {
            format,
            digest,
            streams,
            out,
            out_name,
            framing,
            dir,
            exports: Vec::new(),
        })
    }

    /// What the taps did (after [`RunApp::finish`]).
    pub(crate) fn exports(&self) -> &[TapReport] {
        &self.exports
    }

    /// A handler for one of `workers` workers, handing its records to the
    /// outputs through its own [`RecordSink`]s: unformatted when it is the
    /// only worker (the output's thread formats them on the other core),
    /// formatted by the worker itself when there are several (one thread
    /// formatting for all of them would hold them back).
    /// Parquet records always go to the output's thread unformatted: the
    /// Parquet tap there encodes every worker's records.
    pub(crate) fn handler(&self, failure: &SharedFailure, workers: usize) -> CliHandler {
        let sink = |shared: &SharedOutput, format: RecordFormat| {
            if workers > 1 && format.format != Format::Parquet {
                RecordSink::formatting(shared.clone(), format)
            } else {
                RecordSink::unformatted(shared.clone())
            }
        };
        let dir = self
            .dir
            .as_ref()
            .map(|(d, shared)| (d.clone(), sink(shared, jsonl(self.format.community_seed))));
        CliHandler::new(
            sink(&self.out, self.format),
            self.out_name.clone(),
            self.digest,
            dir,
            failure.clone(),
        )
    }
}

/// What a run does with the streams, and where its output goes: flow
/// records ([`Outputs`]) or alerts (`crate::nids`).
pub(crate) trait RunApp {
    /// The handler each worker (or analysis thread) runs.
    type H: Finish<State: Send>;
    /// Whether the job reads stream bytes (the default cutoff is then
    /// unlimited rather than 0).
    fn wants_bytes(&self) -> bool;
    /// A handler for one of `writers` threads that write output.
    fn handler(&self, failure: &SharedFailure, writers: usize) -> Result<Self::H, String>;
    /// Writes the headers (before any record).
    fn begin(&mut self, failure: &Failure);
    /// Writes the trailers and flushes (after every worker's handler finished).
    fn finish(&mut self, failure: &Failure);
    /// Lines of its own in the summary, after the engine's.
    fn summary(&self, o: &Outcome, e: &mut dyn Write) {
        let _ = (o, e);
    }
    /// Its part of `--stats-json`: a key and a value.
    fn stats_json(&self, o: &Outcome) -> Option<(&'static str, serde_json::Value)> {
        let _ = o;
        None
    }
    /// What the outputs' taps did (`--ipfix`, `--kafka`), after `finish`.
    fn exports(&self) -> Vec<TapReport> {
        Vec::new()
    }
}

impl RunApp for Outputs {
    type H = CliHandler;

    fn wants_bytes(&self) -> bool {
        self.digest || self.streams
    }

    fn handler(&self, failure: &SharedFailure, writers: usize) -> Result<CliHandler, String> {
        Ok(Outputs::handler(self, failure, writers))
    }

    fn begin(&mut self, failure: &Failure) {
        if let Err(e) = self.framing.begin().and_then(|()| self.framing.flush()) {
            failure.set(self.out_name.clone(), e);
        }
    }

    fn exports(&self) -> Vec<TapReport> {
        Outputs::exports(self).to_vec()
    }

    fn finish(&mut self, failure: &Failure) {
        if let Err(e) = self.framing.finish() {
            failure.set(self.out_name.clone(), e);
        }
        // After the trailer: every record reached the taps.
        match self.out.finish_taps() {
            Ok(reports) => self.exports = reports,
            Err(e) => failure.set(self.out_name.clone(), e),
        }
        if let Some((d, shared)) = &self.dir {
            if let Err(e) = shared.flush() {
                failure.set(d.join("streams.jsonl").display().to_string(), e);
            }
        }
    }
}

/// Every worker's handler and hooks, built before the run (so that errors
/// surface first) and taken by the worker threads.
pub(crate) struct WorkerParts<H>(Mutex<Vec<Option<(H, Hooks)>>>);

impl<H> WorkerParts<H> {
    /// One part per filter (one per worker), each with the handler
    /// `make(i)` builds; worker 0 gets the progress bar.
    pub(crate) fn new(
        failure: &SharedFailure,
        filters: Vec<Option<Filter>>,
        bar: Option<ProgressBar>,
        start: Instant,
        mut make: impl FnMut(usize) -> Result<H, String>,
    ) -> Result<WorkerParts<H>, String> {
        let mut parts = Vec::with_capacity(filters.len());
        for (i, filter) in filters.into_iter().enumerate() {
            let hooks = Hooks {
                filter,
                failure: failure.clone(),
                bar: if i == 0 { bar.clone() } else { None },
                start,
            };
            parts.push(Some((make(i)?, hooks)));
        }
        Ok(WorkerParts(Mutex::new(parts)))
    }

    /// Worker `i`'s part (each is taken once, by its worker).
    pub(crate) fn take(&self, i: usize) -> (H, Hooks) {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get_mut(i)
            .and_then(Option::take)
            .unwrap_or_else(|| unreachable!("one part per worker"))
    }
}

/// What the workers of a run are made of, besides the outputs.
pub(crate) struct Stages {
    /// One filter per worker.
    pub filters: Vec<Option<Filter>>,
    /// The progress bar (worker 0's).
    pub bar: Option<ProgressBar>,
    pub start: Instant,
    /// Analysis threads per worker (0: the handler runs inline).
    pub analysis: usize,
}

/// Builds the workers' parts and runs them with `run`, inline or with
/// analysis threads per worker, and finishes their handlers.
pub(crate) fn run_stages<E, A: RunApp>(
    app: &A,
    failure: &SharedFailure,
    stages: Stages,
    run: impl RunStage<E>,
) -> Result<Result<Finished, E>, String> {
    let Stages {
        filters,
        bar,
        start,
        analysis,
    } = stages;
    let workers = filters.len();
    if analysis == 0 {
        let parts = WorkerParts::new(failure, filters, bar, start, |_| {
            app.handler(failure, workers)
        })?;
        Ok(run.run(&parts).map(Finished::of))
    } else {
        // The analysis threads format the records: several threads write.
        let writers = workers * analysis;
        let parts = WorkerParts::new(failure, filters, bar, start, |_| {
            let mut handlers = (0..analysis)
                .map(|_| app.handler(failure, writers))
                .collect::<Result<Vec<_>, String>>()?;
            // One handler per analysis thread (at most `analysis`), all
            // made above.
            let made = Decoupled::spawn(analysis, |_| match handlers.pop() {
                Some(h) => h,
                None => unreachable!("a handler per analysis thread"),
            });
            made.map_err(|e| format!("cannot start the analysis threads: {e}"))
        })?;
        Ok(run.run(&parts).map(Finished::of))
    }
}

/// A run over workers' parts, for any kind of handler the CLI runs.
pub(crate) trait RunStage<E> {
    /// Runs the workers, each taking its part from `parts`.
    fn run<H: CliStage>(self, parts: &WorkerParts<H>) -> Result<ParallelReport<H, Hooks>, E>;
}

/// What the summary needs from a finished run.
pub(crate) struct Outcome {
    pub stats: GlobalStats,
    pub read: u64,
    /// (accepted, expression) of the user-space filter.
    pub filter: Option<(u64, String)>,
    pub files: u64,
    pub file_bytes: u64,
    /// Interim flow records written (`--active-timeout`).
    pub interim: u64,
    /// Per worker: packets, flows created.
    pub workers: Vec<(u64, u64)>,
    /// Kernel counters of a live run: received, dropped, freeze count.
    pub kernel: Option<(u64, u64, u64)>,
    /// The analysis stage's counters, when the handlers ran on analysis threads.
    pub analysis: Option<AnalysisStats>,
    /// The NIDS's counters, when it ran.
    pub nids: Option<streamcap_apps::nids::NidsStats>,
    /// The classifier's per-label totals, when it ran.
    pub classify: Option<streamcap_apps::classify::ClassifyStats>,
    /// `dns.log` records written, when it ran.
    pub dns_records: Option<u64>,
    /// The HTTP analyser's counters, when it ran.
    pub http: Option<streamcap_apps::http::HttpStats>,
    /// The XDP stage's counters, when `--xdp` was in use.
    pub xdp: Option<crate::xdp::XdpOutcome>,
    /// The AF_XDP socket and its pool, with `--source af_xdp`.
    pub xsk: Option<(
        crate::xsk::XskInfo,
        streamcap::source::af_xdp::XskStats,
        Option<crate::xsk::GroupStats>,
    )>,
    pub wall: f64,
}

/// Runs a job on a file or an interface: checks the options, opens the
/// app's outputs with `open` (given the `-w` directory, if any), runs the
/// workers, prints the summary.
pub(crate) fn run<A: RunApp>(
    c: Common,
    dir: Option<OutDir>,
    open: impl FnOnce(&Common, Option<OutDir>) -> Result<A, String>,
) -> ExitCode {
    if c.workers == 0 || c.workers > MAX_WORKERS {
        return usage(format!(
            "--workers {}: expected 1 to {MAX_WORKERS}",
            c.workers
        ));
    }
    if let Some(t) = c.timeout {
        if !t.is_finite() || t < 0.0 {
            return usage(format!("--timeout {t}: expected a number of seconds >= 0"));
        }
    }
    if let Some(t) = c.duration {
        if Duration::try_from_secs_f64(t).is_err() {
            return usage(format!(
                "--duration {t}: expected a number of seconds >= 0 (and below 10^19)"
            ));
        }
    }
    if let Some(e) = locality_misuse(&c) {
        return usage(e);
    }
    if c.chunk == Some(0) {
        return usage("--chunk 0: the chunk size must be at least 1 byte");
    }
    if c.xdp.is_some() && c.interface.is_none() {
        return usage("--xdp: XDP drops packets on a live interface (-i), not in a file");
    }
    // Paced replay of a file (--rate, --speed): refused where it cannot apply.
    let pace = c.rate.or(c.speed);
    let pace_option = if c.rate.is_some() {
        "--rate"
    } else {
        "--speed"
    };
    if let Some(e) = pacing_misuse(&c, pace_option) {
        return usage(e);
    }
    let ring = if c.interface.is_some() {
        let default = streamcap::source::RingConfig::default().total_size() as u64;
        Some((c.ring_size.unwrap_or(default), c.ring_size.is_some()))
    } else {
        pace.map(|_| {
            (
                c.ring_size.unwrap_or(DEFAULT_RING_SIZE),
                c.ring_size.is_some(),
            )
        })
    };
    let sizes = limits::Sizes {
        memory: c.memory,
        chunk: c.chunk,
        ring,
        modelled_ring: c.interface.is_none(),
        workers: u64::from(c.workers),
    };
    if let Err(e) = limits::check(&sizes, streamcap::source::physical_memory()) {
        return usage(e);
    }
    // Before anything is opened for writing.
    if let Err(e) = paths::check(c.read.as_deref(), c.output.as_deref(), dir.as_ref()) {
        return usage(e);
    }
    if let Some(s) = c.stats_json.as_deref() {
        if let Err(e) = paths::check_stats(c.read.as_deref(), c.output.as_deref(), s) {
            return usage(e);
        }
    }
    let Some(read) = c.read.clone() else {
        return crate::live::run(c, dir, open);
    };
    for (given, what) in [
        (c.group.is_some(), "--group"),
        (c.snaplen.is_some(), "--snaplen"),
        (c.no_promisc, "--no-promiscuous-mode"),
        (c.locality_timeout.is_some(), "--locality-timeout"),
    ] {
        if given {
            return usage(format!(
                "{what} applies to live capture (-i), not to files (-r)"
            ));
        }
    }
    if let Some(n) = c.analysis_threads {
        if n > streamcap::dispatch::analysis::MAX_ANALYSIS_THREADS {
            return usage(format!(
                "--analysis-threads {n}: expected 0 to {}",
                streamcap::dispatch::analysis::MAX_ANALYSIS_THREADS
            ));
        }
    }
    let fanout = match c.fanout.parse::<Fanout>() {
        Ok(f) => f,
        Err(_) if is_kernel_mode(&c.fanout) => {
            return usage(format!(
                "--fanout {}: this mode breaks flow affinity (the two directions of a connection \
                 would reach different workers), so flow records and streams cannot use it; \
                 use hash or locality",
                c.fanout
            ))
        }
        Err(e) => return usage(e),
    };
    // The filter is checked before any packet is read.
    let expr = (!c.filter.is_empty()).then(|| c.filter.join(" "));
    let mut filters = Vec::new();
    for _ in 0..c.workers {
        match expr.as_deref().map(filter).transpose() {
            Ok(f) => filters.push(f),
            Err(e) => return usage(e),
        }
    }
    let mut outputs = match open(&c, dir) {
        Ok(o) => o,
        Err(e) => return usage(e),
    };
    let capture = match capture(&c, outputs.wants_bytes()) {
        Ok(cap) => cap,
        Err(e) => return usage(e),
    };
    let failure: SharedFailure = Arc::new(Failure::default());
    let par = Parallel {
        workers: c.workers as usize,
        fanout,
        pin: c.pin.clone().map(|p| p.0).unwrap_or_default(),
        ..Parallel::default()
    };
    // A pipe is read through a pump, so that a stop ends a wait for input.
    // A stop then only closes the pump's pipe: the worker processes what
    // it has received and ends at the pipe's end, as at the end of a file
    // (setting the workers' flag too would make it drop what is buffered).
    let piped = pump::needed(&read);
    let stopper = Stopper::new(if piped {
        Arc::new(AtomicBool::new(false))
    } else {
        par.stop.clone()
    });
    let _signals = match signals::install(&stopper, c.duration) {
        Ok(s) => s,
        Err(e) => return usage(e),
    };
    let mut pump = if piped {
        match Pump::start(&read, &stopper) {
            Ok(p) => Some(p),
            Err(e) => {
                eprintln!("streamcap: {}: cannot start reading: {e}", read.display());
                return ExitCode::from(1);
            }
        }
    } else {
        None
    };
    let pipe = pump.as_ref().map(|p| p.path().display().to_string());
    let named = |e: &dyn std::fmt::Display| input_message(e, pipe.as_deref(), &read);
    // Opened once: standard input (`-r -`) and pipes cannot be read twice.
    let opened = FileSource::open(pump.as_ref().map_or(read.as_path(), |p| p.path()));
    let file = match opened {
        Ok(f) => f,
        Err(_) if stopper.stopped() => {
            eprintln!("streamcap: stopped before the capture's header arrived");
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            eprintln!("streamcap: {}", named(&e));
            return ExitCode::from(1);
        }
    };
    if let Some(p) = pump.as_mut() {
        p.opened();
    }
    let size = std::fs::metadata(&read).map(|m| m.len()).unwrap_or(0);
    let bar = (!c.quiet && size > 50_000_000 && io::stderr().is_terminal()).then(|| {
        let bar = ProgressBar::with_draw_target(Some(size), ProgressDrawTarget::stderr());
        if let Ok(style) = ProgressStyle::with_template(
            "{bar:40.cyan/blue} {percent:>3}% {bytes}/{total_bytes}  {msg}  eta {eta}",
        ) {
            bar.set_style(style);
        }
        bar
    });
    let start = Instant::now();
    /// The file run: every worker reads the file.
    struct FileRun<'a> {
        capture: &'a Capture,
        file: FileSource,
        par: &'a Parallel,
    }
    impl RunStage<streamcap::SourceError> for FileRun<'_> {
        fn run<H: CliStage>(
            self,
            parts: &WorkerParts<H>,
        ) -> Result<ParallelReport<H, Hooks>, streamcap::SourceError> {
            self.capture
                .run_source_parallel(self.file, self.par, |i| parts.take(i))
        }
    }
    outputs.begin(&failure);
    let file_run = FileRun {
        capture: &capture,
        file,
        par: &par,
    };
    // A paced replay stands for live capture: its analysis runs on a thread
    // of its own unless asked otherwise, so that a slow analysis leads to
    // prioritized packet loss rather than ring drops. An unpaced file runs
    // it inline, which is faster when nothing waits.
    let paced = c.rate.is_some() || c.speed.is_some();
    let analysis = c.analysis_threads.unwrap_or(usize::from(paced));
    let stages = Stages {
        filters,
        bar,
        start,
        analysis,
    };
    let report = run_stages(&outputs, &failure, stages, file_run);
    let wall = start.elapsed().as_secs_f64();
    let mut report = match report {
        Ok(Ok(r)) => r,
        Ok(Err(e)) => {
            eprintln!("streamcap: {}", named(&e));
            return ExitCode::from(1);
        }
        Err(e) => return usage(e),
    };
    let (files, per_worker) = (report.files, std::mem::take(&mut report.per_worker));
    outputs.finish(&failure);
    if let Some(code) = output_failure(&failure) {
        return code;
    }
    // Every worker evaluates the filter on every packet of the file.
    let mut first = report.hooks.first_mut().and_then(|h| h.filter.as_mut());
    let filter_error = first.as_deref_mut().and_then(|f| f.take_error());
    let filter_count = first.map(|f| (f.accepted, f.expr().to_string()));
    let outcome = Outcome {
        stats: report.stats,
        read: report.packets_read,
        filter: filter_count,
        files: files.0,
        file_bytes: files.1,
        interim: report.interim,
        workers: if c.workers > 1 {
            per_worker
        } else {
            Vec::new()
        },
        kernel: None,
        xdp: None,
        xsk: None,
        analysis: report.analysis.take(),
        nids: report.nids.take(),
        classify: report.classify.take(),
        dns_records: report.dns_records.take(),
        http: report.http.take(),
        wall,
    };
    if !c.quiet {
        summary(&read.display().to_string(), &outcome, &par, &outputs);
    }
    if let Some(code) = stats_json(&c, &read.display().to_string(), &outcome, &outputs) {
        return code;
    }
    if let Some(code) = export_failure(&outputs) {
        return code;
    }
    if let Some(e) = filter_error {
        return usage(e);
    }
    if let Some(e) = pump.as_ref().and_then(Pump::take_error) {
        eprintln!("streamcap: {}: read error: {e}", read.display());
        return ExitCode::from(1);
    }
    if let Some(e) = report.error {
        eprintln!("streamcap: {}", named(&e));
        return ExitCode::from(1);
    }
    ExitCode::SUCCESS
}

/// The longest `--locality-timeout`, milliseconds.
pub const MAX_LOCALITY_TIMEOUT_MS: u64 = 60_000;

/// Why `--locality-batch` or `--locality-timeout` cannot be used as given,
/// if they cannot (the timeout on a file is refused with the other live
/// options).
fn locality_misuse(c: &Common) -> Option<String> {
    if c.locality_batch > MAX_LOCALITY_BATCH {
        return Some(format!(
            "--locality-batch {}: expected 0 (off) to {MAX_LOCALITY_BATCH} packets",
            c.locality_batch
        ));
    }
    match c.locality_timeout {
        Some(ms) if ms == 0 || ms > MAX_LOCALITY_TIMEOUT_MS => Some(format!(
            "--locality-timeout {ms}: expected 1 to {MAX_LOCALITY_TIMEOUT_MS} milliseconds"
        )),
        Some(_) if c.locality_batch == 0 => Some(
            "--locality-timeout needs --locality-batch N above 0: it bounds how long a partial \
             batch waits"
                .to_string(),
        ),
        _ => None,
    }
}

/// Why the pacing options (`--rate`, `--speed`, and `--ring-size` on a
/// file) cannot apply to this run, if they cannot; `option` names the pace
/// option given.
fn pacing_misuse(c: &Common, option: &str) -> Option<String> {
    let paced = c.rate.is_some() || c.speed.is_some();
    if c.interface.is_some() {
        return paced.then(|| {
            format!("{option} applies to files (-r): a live capture comes at the pace of the wire")
        });
    }
    match (paced, c.ring_size) {
        (false, Some(_)) => Some(
            "--ring-size on a file (-r) needs --rate or --speed: it sizes the ring that a paced \
             replay models (on an interface, -i, the kernel's ring)"
                .to_string(),
        ),
        (true, _) if c.workers > 1 => Some(format!(
            "{option}: a paced replay runs on one worker, not {} (every worker reads the whole \
             file, so each would pace it and model a ring of its own)",
            c.workers
        )),
        (true, Some(bytes)) if bytes < FRAME_HEADER => Some(format!(
            "--ring-size {bytes}: smaller than the {FRAME_HEADER}-byte frame header of one \
             packet, so every packet would be dropped"
        )),
        _ => None,
    }
}

/// An input error's message, with the pump's pipe (`/dev/fd/N`) named as
/// the user named the input.
fn input_message(e: &dyn std::fmt::Display, pipe: Option<&str>, read: &Path) -> String {
    let text = e.to_string();
    match pipe {
        Some(p) => text.replacen(p, &read.display().to_string(), 1),
        None => text,
    }
}

/// The exit status for an output error, if one happened (a closed pipe is
/// a normal end, as for other filters).
pub(crate) fn output_failure(failure: &Failure) -> Option<ExitCode> {
    let (what, e) = failure.take()?;
    if let Some(tap) = crate::tap::as_tap_error(&e) {
        // A tap's error names the tap (`ipfix tcp://…`), not the output.
        eprintln!("streamcap: {tap}");
        return Some(ExitCode::from(1));
    }
    if e.kind() == io::ErrorKind::BrokenPipe {
        return Some(ExitCode::SUCCESS);
    }
    eprintln!("streamcap: {what}: write error: {e}");
    Some(ExitCode::from(1))
}

/// The exit status for records an export failed to deliver (Kafka), if
/// any did: each such export's message on stderr (even with `-q`), exit
/// status 1. The records are in the output and the summary regardless.
pub(crate) fn export_failure(app: &impl RunApp) -> Option<ExitCode> {
    let mut failed = false;
    for r in app.exports() {
        if let Some(f) = &r.failure {
            eprintln!("streamcap: {f}");
            failed = true;
        }
    }
    failed.then(|| ExitCode::from(1))
}

/// Whether `mode` is a kernel fan-out mode name.
pub fn is_kernel_mode(mode: &str) -> bool {
    matches!(mode, "hash" | "lb" | "cpu" | "rollover" | "rnd" | "qm")
}

fn human(n: f64) -> String {
    if n >= 1e9 {
        format!("{:.2} G", n / 1e9)
    } else if n >= 1e6 {
        format!("{:.2} M", n / 1e6)
    } else if n >= 1e3 {
        format!("{:.1} k", n / 1e3)
    } else {
        format!("{n:.0} ")
    }
}

/// Writes `--stats-json`, if asked; the exit status if that fails.
pub(crate) fn stats_json(
    c: &Common,
    source: &str,
    o: &Outcome,
    app: &impl RunApp,
) -> Option<ExitCode> {
    let path = c.stats_json.as_ref()?;
    let mut v = crate::stats_json::value(source, o, c.base_threshold);
    if let (Some((key, part)), Some(obj)) = (app.stats_json(o), v.as_object_mut()) {
        obj.insert(key.to_string(), part);
    }
    let exports = app.exports();
    if let (false, Some(obj)) = (exports.is_empty(), v.as_object_mut()) {
        let list: Vec<serde_json::Value> = exports
            .iter()
            .map(|r| {
                let mut j = r.json.clone();
                if let Some(m) = j.as_object_mut() {
                    m.insert("kind".into(), r.kind.into());
                }
                j
            })
            .collect();
        obj.insert("exports".into(), list.into());
    }
    match crate::stats_json::write(path, &v) {
        Ok(()) => None,
        Err(e) => {
            eprintln!(
                "streamcap: {}: cannot write the statistics: {e}",
                path.display()
            );
            Some(ExitCode::from(1))
        }
    }
}

/// The summary on stderr: the engine's lines, then the app's.
pub(crate) fn summary(source: &str, o: &Outcome, par: &Parallel, app: &impl RunApp) {
    let s = &o.stats;
    let mut e = io::stderr().lock();
    let secs = o.wall.max(1e-9);
    let _ = writeln!(e, "streamcap: {source}");
    let mut pk = format!("{} read", o.read);
    if let Some((accepted, expr)) = &o.filter {
        pk.push_str(&format!(", {accepted} matched {expr:?}"));
    }
    pk.push_str(&format!(
        ", {} IP, {} truncated",
        s.ip_packets, s.truncated_packets
    ));
    let _ = writeln!(e, "  packets      {pk}");
    if let Some((received, dropped, freezes)) = o.kernel {
        let _ = writeln!(
            e,
            "  kernel       {received} passed the kernel filter, {dropped} dropped by the kernel (ring full), {freezes} queue freezes"
        );
    }
    if let Some((info, x, group)) = &o.xsk {
        let _ = writeln!(e, "  af_xdp       {}", crate::xsk::summary_line(info, x));
        if let Some(g) = group {
            let _ = writeln!(e, "  offload      {}", crate::xsk::group_line(g));
        }
    }
    if let Some(x) = &o.xdp {
        let _ = writeln!(
            e,
            "  xdp          {}",
            crate::xdp::summary_line(x, &s.subzero)
        );
    }
    if let Some(p) = &s.pace {
        // Packets the modelled ring of a paced replay dropped: in no other
        // line (they never reached the engine).
        let _ = writeln!(
            e,
            "  ring         {} dropped (ring full), {}B on the wire; peak {} of the {} ring; idle {:.3} s, at most {:.3} ms late",
            s.ring_drops,
            human(s.ring_drop_bytes as f64),
            crate::size::binary(p.ring_peak),
            crate::size::binary(p.ring_size),
            p.idle_ns as f64 / 1e9,
            p.max_late_ns as f64 / 1e6
        );
    }
    let _ = writeln!(
        e,
        "  bytes        {}B on the wire (processed packets)",
        human(s.wire_bytes as f64)
    );
    let flows: u64 = s.flows_created.iter().sum();
    let by_proto: Vec<String> = ProtoClass::ALL
        .iter()
        .map(|p| format!("{} {}", p.name(), s.created(*p)))
        .collect();
    let ended: Vec<String> = EndReason::ALL
        .iter()
        .map(|r| format!("{} {}", r.name(), s.ended(*r)))
        .collect();
    let _ = writeln!(
        e,
        "  flows        {flows} ({}); ended: {}",
        by_proto.join(", "),
        ended.join(", ")
    );
    if s.late_packets > 0 || s.invalid_rsts > 0 {
        // Late packets of connections that ended (in no flow record), and
        // RSTs a receiver would ignore (counted in their flow, but they do
        // not end it).
        let _ = writeln!(
            e,
            "  tcp          {} late packets of ended connections, {} RSTs outside the window",
            s.late_packets, s.invalid_rsts
        );
    }
    let t = &s.totals;
    let _ = writeln!(
        e,
        "  streams      {}: {} stream bytes = captured {} + discarded {} + dropped {} + missing {}",
        s.streams, t.stream_bytes, t.captured, t.discarded, t.dropped, t.missing
    );
    let _ = writeln!(
        e,
        "  memory       stream data peak {} of the {} budget, {} refusals (budget full)",
        crate::size::binary(s.memory_peak as u64),
        crate::size::binary(s.memory_limit as u64),
        s.memory_refusals
    );
    let ov = &s.overload;
    if ov.levels.len() > 1 || t.dropped > 0 || ov.ppl_packets() > 0 {
        // What overload control gave up, by priority: PPL's packets by
        // rule, and each level's stream bytes dropped (PPL and budget).
        let parts: Vec<String> = ov
            .levels
            .iter()
            .map(|l| {
                format!(
                    "priority {}: {} streams, {} of {} stream bytes dropped, {} PPL drops ({} watermark, {} overload cutoff)",
                    l.priority,
                    l.streams,
                    l.totals.dropped,
                    l.totals.stream_bytes,
                    l.ppl_packets(),
                    l.ppl_watermark_packets,
                    l.ppl_cutoff_packets
                )
            })
            .collect();
        let _ = writeln!(e, "  overload     {}", parts.join("; "));
    }
    if let Some(a) = &o.analysis {
        let _ = writeln!(
            e,
            "  analysis     {} thread{}: {} events in {} batches, {} decisions back; capture waited {} times on a full queue ({:.1} ms)",
            a.threads,
            if a.threads == 1 { "" } else { "s" },
            a.events,
            a.batches,
            a.decisions,
            a.stalls,
            a.stall_ns as f64 / 1e6
        );
    }
    let d = &s.defrag;
    if d.fragments > 0 {
        // Fragments in fragments, datagrams in datagrams: see DefragStats'
        // Display. At the end of a run nothing is held.
        let _ = writeln!(e, "  fragments    {d}");
    }
    if !o.workers.is_empty() {
        let parts: Vec<String> = o
            .workers
            .iter()
            .enumerate()
            .map(|(i, (p, f))| {
                let cpu = par
                    .cpu_for(i)
                    .map_or(String::new(), |c| format!(" on CPU {c}"));
                format!("#{i}{cpu}: {p} packets, {f} flows")
            })
            .collect();
        let _ = writeln!(
            e,
            "  workers      {} ({}): {}",
            o.workers.len(),
            par.fanout,
            parts.join("; ")
        );
    }
    if o.files > 0 {
        let _ = writeln!(
            e,
            "  files        {} written, {} bytes",
            o.files, o.file_bytes
        );
    }
    let errs: Vec<String> = DecodeError::ALL
        .iter()
        .filter(|k| s.decode_error(**k) > 0)
        .map(|k| format!("{} {}", k.name(), s.decode_error(*k)))
        .collect();
    let _ = writeln!(
        e,
        "  decode       {}",
        if errs.is_empty() {
            "no errors".to_string()
        } else {
            errs.join(", ")
        }
    );
    if o.interim > 0 {
        let _ = writeln!(
            e,
            "  interim      {} records of connections still open at their active timeout",
            o.interim
        );
    }
    app.summary(o, &mut e);
    for r in app.exports() {
        let _ = writeln!(e, "  {:<12} {}", r.kind, r.line);
    }
    let _ = writeln!(
        e,
        "  time         {:.3} s, {}pkt/s, {:.3} Gbit/s",
        o.wall,
        human(o.read as f64 / secs),
        s.wire_bytes as f64 * 8.0 / secs / 1e9
    );
}
