//! `streamcap nids`: Suricata/Snort content rules matched on the streams
//! of a capture or an interface; alerts as EVE JSON lines or `fast.log`.

use crate::handler::{Failure, SharedFailure};
use crate::run::{self, usage, Outcome, RunApp};
use crate::sink::{SharedOutput, TextBatch};
use crate::size;
use crate::stage::{Finish, StageEnd};
use crate::tap::{RecordTap, TapReport};
use crate::Common;
use clap::{Args, ValueEnum};
use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};
use streamcap::deliver::{Chunk, FlowEnd, Handler, Stream};
use streamcap_apps::compose::{self, Notes, Reply, Want};
use streamcap_apps::nids::alert::{write_fast, EveWriter};
use streamcap_apps::nids::ruleset::{DEFAULT_WINDOW, MAX_WINDOW};
use streamcap_apps::nids::{
    load_rule_file, Alert, AlertSink, Classifications, CompileOptions, EngineKind, Nids, NidsState,
    NidsStats, Parsed, RuleError, RuleSet, Vars,
};

/// How long alerts of a live capture may wait in a worker's buffer.
const LIVE_FLUSH: Duration = Duration::from_secs(1);

/// Rejected rules listed one by one before the rest are only counted.
const REJECTED_SHOWN: usize = 10;

/// Alert format.
#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
pub enum AlertFormat {
    /// Suricata's EVE JSON, one alert per line.
    Eve,
    /// Suricata's fast.log, one line per alert.
    Fast,
}

/// The multi-pattern engine asked for.
#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
pub enum EngineArg {
    /// Hyperscan where libhs.so.5 loads, else aho-corasick.
    Auto,
    /// The aho-corasick crate (always available).
    AhoCorasick,
    /// Hyperscan's stream mode (needs Debian's libhyperscan5).
    Hyperscan,
}

/// How rules are read and compiled (`nids`, and `run --with nids=RULES`).
#[derive(Args)]
pub struct RuleOptions {
    /// Variables ($HOME_NET, $HTTP_PORTS...) from a YAML file in
    /// Suricata's layout (`vars: address-groups: ... port-groups: ...`),
    /// such as suricata.yaml. [default: Suricata's default values]
    #[arg(long, value_name = "FILE")]
    vars: Option<PathBuf>,
    /// Sets a variable, as NAME=VALUE (e.g. 'HOME_NET=[10.0.0.0/8]');
    /// repeatable, applied after --vars.
    #[arg(long = "set", value_name = "NAME=VALUE")]
    set: Vec<String>,
    /// Classtypes (Suricata's classification.config format): each alert's
    /// category and default severity. [default: Suricata's list]
    #[arg(long, value_name = "FILE")]
    classification_config: Option<PathBuf>,
    /// Pattern-matching engine.
    #[arg(long, value_enum, default_value = "auto")]
    engine: EngineArg,
    /// Bytes of a stream kept behind each chunk, for rules whose
    /// conditions lie in several chunks (at most 1 MiB).
    #[arg(long, value_name = "BYTES", value_parser = size::parse_size, default_value_t = DEFAULT_WINDOW as u64)]
    window: u64,
    /// Memory for those windows per worker; a stream that finds it full
    /// is matched chunk by chunk (counted). [default: 64 MiB]
    #[arg(long, value_name = "BYTES", value_parser = size::parse_size)]
    window_memory: Option<u64>,
    /// List every rejected rule (by default the first 10, then a count
    /// per keyword).
    #[arg(long)]
    show_rejected: bool,
}

impl RuleOptions {
    /// `--window-memory`.
    pub(crate) fn window_memory(&self) -> Option<u64> {
        self.window_memory
    }
}

/// The options of `streamcap nids`.
#[derive(Args)]
pub struct NidsArgs {
    /// Rule file in Suricata/Snort syntax; repeatable. Rules with keywords
    /// outside the supported subset are rejected with file, line and
    /// keyword; the others load.
    #[arg(short = 'S', long = "rules", value_name = "FILE", required = true)]
    rules: Vec<PathBuf>,
    /// Alert format.
    #[arg(long, value_enum, default_value = "eve")]
    format: AlertFormat,
    #[command(flatten)]
    options: RuleOptions,
    #[command(flatten)]
    kafka: crate::kafka::KafkaArgs,
    #[command(flatten)]
    common: Common,
}

/// Runs `streamcap nids`.
pub fn run(a: NidsArgs) -> ExitCode {
    let set = match load(&a.rules, &a.options, a.common.quiet) {
        Ok(s) => s,
        Err(code) => return code,
    };
    let (format, window_memory) = (a.format, a.options.window_memory);
    if a.kafka.kafka.is_some() && format != AlertFormat::Eve {
        return usage("--kafka sends EVE JSON alerts: it needs --format eve");
    }
    let kafka = a.kafka;
    run::run(a.common, None, move |c, _| {
        let taps = crate::kafka::open(&kafka, crate::kafka::Payload::Lines)?;
        NidsApp::open(c.output.as_deref(), format, set, window_memory, taps)
    })
}

/// Reads, checks and compiles the rules of `files`: rejected rules on
/// stderr, what loaded too unless `quiet`; a usage error (exit 2) if none
/// loads or an option is wrong.
pub(crate) fn load(
    files: &[PathBuf],
    o: &RuleOptions,
    quiet: bool,
) -> Result<Arc<RuleSet>, ExitCode> {
    let started = Instant::now();
    let mut vars = Vars::default();
    if let Some(p) = &o.vars {
        vars.load_yaml(p)
            .map_err(|e| usage(format!("--vars {}: {e}", p.display())))?;
    }
    for s in &o.set {
        let Some((name, value)) = s.split_once('=') else {
            return Err(usage(format!("--set {s:?}: expected NAME=VALUE")));
        };
        vars.set(name.trim().trim_start_matches('$'), value.trim())
            .map_err(|e| usage(format!("--set {s:?}: {e}")))?;
    }
    if let Some(p) = &o.classification_config {
        vars.classifications =
            Classifications::load(p).map_err(|e| usage(format!("--classification-config: {e}")))?;
    }
    let mut parsed = Parsed::default();
    for path in files {
        // Duplicate (gid, sid) pairs are found across files too.
        let p = load_rule_file(path, &vars)
            .map_err(|e| usage(format!("{}: cannot read the rules: {e}", path.display())))?;
        parsed.extend(p);
    }
    let Parsed {
        rules,
        errors: rejected,
    } = parsed;
    report_rejected(&rejected, o.show_rejected);
    if rules.is_empty() {
        return Err(usage(format!(
            "no rule loaded from {} ({} rejected)",
            names(files),
            rejected.len()
        )));
    }
    let engine = pick_engine(o.engine).map_err(usage)?;
    if o.window as usize > MAX_WINDOW {
        return Err(usage(format!(
            "--window {}: at most {MAX_WINDOW} bytes",
            o.window
        )));
    }
    if let Some(m) = o.window_memory {
        if streamcap::source::physical_memory().is_some_and(|phys| m > phys) {
            return Err(usage(format!(
                "--window-memory {m}: more than the machine's memory"
            )));
        }
    }
    let opts = CompileOptions {
        engine,
        window: o.window as usize,
    };
    let loaded = rules.len();
    let set = RuleSet::compile(rules, &vars.classifications, &opts)
        .map_err(|e| usage(format!("cannot compile the rules: {e}")))?;
    if !quiet {
        eprintln!(
            "streamcap: {loaded} rules loaded from {} ({} rejected) in {:.0} ms; {}",
            names(files),
            rejected.len(),
            started.elapsed().as_secs_f64() * 1e3,
            set.describe().join("; ")
        );
    }
    Ok(Arc::new(set))
}

/// The engine to use: `auto` takes Hyperscan when it loads.
fn pick_engine(arg: EngineArg) -> Result<EngineKind, String> {
    match arg {
        EngineArg::AhoCorasick => Ok(EngineKind::AhoCorasick),
        EngineArg::Hyperscan => match EngineKind::hyperscan_available() {
            Ok(()) => Ok(EngineKind::Hyperscan),
            Err(e) => Err(format!("--engine hyperscan: {e}")),
        },
        EngineArg::Auto => Ok(EngineKind::auto()),
    }
}

fn names(paths: &[PathBuf]) -> String {
    paths
        .iter()
        .map(|p| p.display().to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

/// Rejected rules on stderr: each one with `all`, else the first few and a
/// count per keyword.
fn report_rejected(errors: &[RuleError], all: bool) {
    let shown = if all { errors.len() } else { REJECTED_SHOWN };
    for e in errors.iter().take(shown) {
        eprintln!("streamcap: rule rejected: {e}");
    }
    if errors.len() > shown {
        let mut by: BTreeMap<&str, usize> = BTreeMap::new();
        for e in &errors[shown..] {
            *by.entry(e.keyword.as_deref().unwrap_or("(syntax)"))
                .or_default() += 1;
        }
        let mut counts: Vec<(&str, usize)> = by.into_iter().collect();
        counts.sort_by(|x, y| y.1.cmp(&x.1).then(x.0.cmp(y.0)));
        let list: Vec<String> = counts.iter().map(|(k, n)| format!("{k} {n}")).collect();
        eprintln!(
            "streamcap: {} more rules rejected (--show-rejected lists them), by keyword: {}",
            errors.len() - shown,
            list.join(", ")
        );
    }
}

/// The alerts' output and the rule set the workers share.
pub(crate) struct NidsApp {
    set: Arc<RuleSet>,
    format: AlertFormat,
    out: SharedOutput,
    out_name: String,
    window_memory: Option<u64>,
    /// What the taps of `out` did (`--kafka`), once finished.
    exports: Vec<TapReport>,
}

impl NidsApp {
    /// Opens `path` (none: standard output) for the alerts of `set`, with
    /// `taps` fed each alert's line (`--kafka`).
    pub(crate) fn open(
        path: Option<&Path>,
        format: AlertFormat,
        set: Arc<RuleSet>,
        window_memory: Option<u64>,
        taps: Vec<Box<dyn RecordTap>>,
    ) -> Result<NidsApp, String> {
        let (out, out_name) = crate::sink::text_output("alerts", path, taps)?;
        Ok(NidsApp {
            set,
            format,
            out,
            out_name,
            window_memory,
            exports: Vec::new(),
        })
    }
}

impl RunApp for NidsApp {
    type H = NidsCli;

    fn wants_bytes(&self) -> bool {
        true
    }

    fn handler(&self, failure: &SharedFailure, _writers: usize) -> Result<NidsCli, String> {
        let writer = AlertWriter {
            format: self.format,
            eve: EveWriter::new(),
            text: TextBatch::new(self.out.clone(), self.out_name.clone(), failure.clone()),
        };
        let mut nids = Nids::new(self.set.clone(), writer);
        if let Some(m) = self.window_memory {
            nids.detector()
                .set_window_memory(usize::try_from(m).unwrap_or(usize::MAX));
        }
        Ok(NidsCli {
            nids,
            last_flush: Instant::now(),
        })
    }

    fn begin(&mut self, _failure: &Failure) {}

    fn finish(&mut self, failure: &Failure) {
        if let Err(e) = self.out.flush() {
            failure.set(self.out_name.clone(), e);
        }
        // After the last alert: every line reached the taps.
        match self.out.finish_taps() {
            Ok(reports) => self.exports = reports,
            Err(e) => failure.set(self.out_name.clone(), e),
        }
    }

    fn exports(&self) -> Vec<TapReport> {
        self.exports.clone()
    }

    fn summary(&self, o: &Outcome, e: &mut dyn Write) {
        let Some(n) = &o.nids else { return };
        let _ = writeln!(
            e,
            "  nids         {} rules; {} stream directions inspected ({} cut at the rules' reach), {} left alone (no rule's header covers them); {}B scanned, {} hits, {} evaluations; {} alerts",
            self.set.len(),
            n.streams,
            n.streams_cut,
            n.streams_unwatched,
            human_bytes(n.bytes_scanned),
            n.hits,
            n.evaluations,
            n.total_alerts()
        );
        if n.window_refusals > 0 || n.exhausted > 0 || n.passed > 0 {
            let _ = writeln!(
                e,
                "  nids limits  {} streams without a window (memory full), {} evaluations out of budget, {} connections passed",
                n.window_refusals, n.exhausted, n.passed
            );
        }
        for (count, rule) in per_signature(&self.set, n) {
            let r = &rule.rule;
            let _ = writeln!(
                e,
                "  alerts       {count:>8}  [{}:{}:{}] {}",
                r.gid, r.sid, r.rev, r.msg
            );
        }
    }

    fn stats_json(&self, o: &Outcome) -> Option<(&'static str, serde_json::Value)> {
        let n = o.nids.as_ref()?;
        let sigs: Vec<serde_json::Value> = per_signature(&self.set, n)
            .into_iter()
            .map(|(count, r)| {
                serde_json::json!({
                    "gid": r.rule.gid,
                    "sid": r.rule.sid,
                    "rev": r.rule.rev,
                    "msg": r.rule.msg,
                    "alerts": count,
                })
            })
            .collect();
        Some((
            "nids",
            serde_json::json!({
                "rules": self.set.len(),
                "streams": n.streams,
                "streams_unwatched": n.streams_unwatched,
                "streams_cut": n.streams_cut,
                "bytes_scanned": n.bytes_scanned,
                "hits": n.hits,
                "evaluations": n.evaluations,
                "evaluations_exhausted": n.exhausted,
                "window_refusals": n.window_refusals,
                "window_peak": n.window_peak,
                "passed": n.passed,
                "alerts": n.total_alerts(),
                "signatures": sigs,
            }),
        ))
    }
}

/// Rules that alerted, with their counts, most first (then by sid).
fn per_signature<'a>(
    set: &'a RuleSet,
    n: &NidsStats,
) -> Vec<(u64, &'a streamcap_apps::nids::CompiledRule)> {
    let mut v: Vec<(u64, &streamcap_apps::nids::CompiledRule)> = n
        .alerts
        .iter()
        .zip(set.rules())
        .filter(|(c, _)| **c > 0)
        .map(|(c, r)| (*c, r))
        .collect();
    v.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.rule.sid.cmp(&b.1.rule.sid)));
    v
}

pub(crate) fn human_bytes(n: u64) -> String {
    let n = n as f64;
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

/// A worker's alerts on their way to the output: formatted here, handed
/// over in batches.
struct AlertWriter {
    format: AlertFormat,
    eve: EveWriter,
    text: TextBatch,
}

impl AlertSink for AlertWriter {
    fn alert(&mut self, alert: &Alert, rules: &RuleSet) {
        let (format, eve) = (self.format, &mut self.eve);
        self.text.add(|out| match format {
            AlertFormat::Eve => eve.write(alert, rules, out),
            AlertFormat::Fast => write_fast(alert, rules, out),
        });
    }
}

/// The handler of `streamcap nids`.
pub(crate) struct NidsCli {
    nids: Nids<AlertWriter>,
    last_flush: Instant,
}

impl Handler for NidsCli {
    type State = NidsState;

    fn on_create(&mut self, s: &mut Stream<'_, NidsState>) {
        self.nids.on_create(s);
    }

    fn on_data(&mut self, s: &mut Stream<'_, NidsState>, chunk: &Chunk<'_>) {
        self.nids.on_data(s, chunk);
    }

    fn on_close(&mut self, s: &mut Stream<'_, NidsState>) {
        self.nids.on_close(s);
    }

    fn on_flow_end(&mut self, fe: &mut FlowEnd<'_, NidsState>) {
        self.nids.on_flow_end(fe);
    }

    /// Live capture: alerts reach the output within about a second.
    fn on_tick(&mut self) {
        if self.last_flush.elapsed() >= LIVE_FLUSH {
            self.last_flush = Instant::now();
            self.nids.sink.text.hand_over(true);
        }
    }
}

/// The NIDS among other applications (`run --with nids=RULES`).
impl compose::App for NidsCli {
    type State = NidsState;

    fn prepare<S>(&self, s: &mut Stream<'_, S>) {
        compose::App::prepare(&self.nids, s);
    }

    fn start<S>(&mut self, s: &Stream<'_, S>, st: &mut NidsState) -> Want {
        compose::App::start(&mut self.nids, s, st)
    }

    fn data<S>(&mut self, s: &Stream<'_, S>, st: &mut NidsState, chunk: &Chunk<'_>) -> Reply {
        compose::App::data(&mut self.nids, s, st, chunk)
    }

    fn close<S>(&mut self, s: &Stream<'_, S>, st: &mut NidsState) {
        compose::App::close(&mut self.nids, s, st);
    }

    fn flow_end<S>(
        &mut self,
        fe: &FlowEnd<'_, S>,
        o: &mut NidsState,
        r: &mut NidsState,
        notes: &mut Notes,
    ) {
        compose::App::flow_end(&mut self.nids, fe, o, r, notes);
    }

    fn tick(&mut self) {
        Handler::on_tick(self);
    }
}

impl Finish for NidsCli {
    fn finish_app(&mut self) -> StageEnd {
        self.nids.sink.text.hand_over(true);
        StageEnd {
            nids: Some(self.nids.detector().stats().clone()),
            ..StageEnd::default()
        }
    }
}
