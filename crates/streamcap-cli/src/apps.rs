//! Several applications in one pass over a capture (`flows --app`, `http`,
//! `run --with …`): the classifier, the flow records, the protocol logs
//! (`dns.log`, `ssl.log`, `http.log`) and the NIDS share one reassembly
//! ([`streamcap_apps::compose`]); each writes its own output.

use crate::handler::{CliHandler, Failure, SharedFailure};
use crate::nids::{NidsApp, NidsCli};
use crate::output::Format;
use crate::run::{Outcome, Outputs, RunApp};
use crate::sink::{BatchSink, SharedOutput, TextBatch};
use crate::stage::{Finish, StageEnd};
use crate::tap::{RecordTap, TapReport};
use crate::Common;
use std::io::Write;
use std::marker::PhantomData;
use std::path::{Path, PathBuf};
use streamcap::deliver::{Chunk, FlowEnd, Handler, Stream};
use streamcap_apps::classify::{Classify, ClassifyStats};
use streamcap_apps::compose::{self, Apps, Both, Cutoff};
use streamcap_apps::http::{Http, HttpConfig, HttpRecord};
use streamcap_apps::logs::dns::{DnsLog, DnsRecord};
use streamcap_apps::logs::tls::SslRecord;
use streamcap_apps::logs::zeek::{log_time, ZeekRecord};
use streamcap_apps::sink::Records;

/// How a protocol log is written.
#[derive(Copy, Clone, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    /// Zeek's JSON writer: one object per line, flat keys (`id.orig_h`).
    Json,
    /// Zeek's TSV (ASCII) writer, with its `#` header and trailer.
    Zeek,
}

/// One protocol log's output, shared by the workers.
pub(crate) struct LogOutput {
    out: SharedOutput,
    name: String,
    format: LogFormat,
    header: fn(&str) -> String,
    framing: BatchSink,
    /// What the taps of `out` did (`--kafka`), once finished.
    exports: Vec<TapReport>,
}

impl LogOutput {
    /// Opens `path` (`-` or none: standard output) for records of `R`,
    /// with `taps` fed each line (`--kafka`; JSON only).
    pub(crate) fn open<R: ZeekRecord>(
        path: Option<&Path>,
        format: LogFormat,
        taps: Vec<Box<dyn RecordTap>>,
    ) -> Result<LogOutput, String> {
        let (out, name) = crate::sink::text_output(R::PATH, path, taps)?;
        Ok(LogOutput {
            framing: BatchSink::new(out.clone()),
            out,
            name,
            format,
            header: R::tsv_header,
            exports: Vec::new(),
        })
    }

    /// A worker's writer of records into this log.
    fn writer<R>(&self, failure: &SharedFailure) -> LogWriter<R> {
        LogWriter {
            format: self.format,
            text: TextBatch::new(self.out.clone(), self.name.clone(), failure.clone()),
            records: 0,
            _r: PhantomData,
        }
    }

    fn begin(&mut self, failure: &Failure) {
        if self.format == LogFormat::Zeek {
            let h = (self.header)(&log_time(now()));
            if let Err(e) = self
                .framing
                .write_all(h.as_bytes())
                .and_then(|()| self.framing.flush())
            {
                failure.set(self.name.clone(), e);
            }
        }
    }

    fn finish(&mut self, failure: &Failure) {
        let mut res = Ok(());
        if self.format == LogFormat::Zeek {
            let t = streamcap_apps::logs::zeek::tsv_footer(&log_time(now()));
            res = self.framing.write_all(t.as_bytes());
        }
        if let Err(e) = res.and_then(|()| self.framing.flush()) {
            failure.set(self.name.clone(), e);
        }
        // After the last record: every line reached the taps.
        match self.out.finish_taps() {
            Ok(reports) => self.exports = reports,
            Err(e) => failure.set(self.name.clone(), e),
        }
    }
}

fn now() -> streamcap::Timestamp {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    streamcap::Timestamp::from_secs_nanos(secs, 0)
}

/// A worker's end of a protocol log: formats its records and hands them
/// over in batches.
pub(crate) struct LogWriter<R> {
    format: LogFormat,
    text: TextBatch,
    /// Records written.
    pub records: u64,
    _r: PhantomData<fn(R)>,
}

impl<R> LogWriter<R> {
    /// Hands the batch over (and with `flush` waits until it is written).
    fn hand_over(&mut self, flush: bool) {
        self.text.hand_over(flush);
    }
}

impl<R: ZeekRecord> Records<R> for LogWriter<R> {
    fn record(&mut self, r: R) {
        self.records += 1;
        let format = self.format;
        self.text.add(|out| match format {
            LogFormat::Json => {
                out.extend_from_slice(r.json().as_bytes());
                out.push(b'\n');
            }
            LogFormat::Zeek => out.extend_from_slice(r.tsv_line().as_bytes()),
        });
    }
}

/// The applications one worker runs, in the order they see a connection's
/// end: the classifier first (its label goes into the flow records), then
/// the flow records, the DNS log, the NIDS.
type Joined = Both<
    Option<Cutoff<Classify<Option<LogWriter<SslRecord>>>>>,
    Both<
        Option<Cutoff<CliHandler>>,
        Both<
            Option<Cutoff<Http<LogWriter<HttpRecord>>>>,
            Both<Option<Cutoff<DnsLog<LogWriter<DnsRecord>>>>, Option<Cutoff<NidsCli>>>,
        >,
    >,
>;

/// `http.log` records into their log.
impl streamcap_apps::http::RecordSink for LogWriter<HttpRecord> {
    fn record(&mut self, r: HttpRecord) {
        Records::record(self, r);
    }
}

/// A worker's handler: the joined applications.
pub(crate) struct MultiCli(Apps<Joined>);

impl Handler for MultiCli {
    type State = <Apps<Joined> as Handler>::State;

    fn on_create(&mut self, s: &mut Stream<'_, Self::State>) {
        self.0.on_create(s);
    }
    fn on_data(&mut self, s: &mut Stream<'_, Self::State>, c: &Chunk<'_>) {
        self.0.on_data(s, c);
    }
    fn on_close(&mut self, s: &mut Stream<'_, Self::State>) {
        self.0.on_close(s);
    }
    fn on_flow_end(&mut self, fe: &mut FlowEnd<'_, Self::State>) {
        self.0.on_flow_end(fe);
    }
    fn on_flow_update(&mut self, fe: &mut FlowEnd<'_, Self::State>) {
        self.0.on_flow_update(fe);
    }
    fn on_tick(&mut self) {
        self.0.on_tick();
    }
}

impl Finish for MultiCli {
    fn finish_app(&mut self) -> StageEnd {
        let Both(classify, Both(flows, Both(http, Both(dns, nids)))) = self.0.app();
        let mut end = StageEnd::default();
        if let Some(Cutoff(c, _)) = classify {
            if let Some(w) = c.ssl.as_mut() {
                w.hand_over(true);
            }
            end.classify = Some(c.stats().clone());
        }
        if let Some(Cutoff(f, _)) = flows {
            let e = f.finish_app();
            end.files = e.files;
            end.interim = e.interim;
        }
        if let Some(Cutoff(h, _)) = http {
            h.sink.hand_over(true);
            end.http = Some(h.analyzer().stats().clone());
        }
        if let Some(Cutoff(d, _)) = dns {
            d.sink.hand_over(true);
            end.dns_records = Some(d.sink.records);
        }
        if let Some(Cutoff(n, _)) = nids {
            end.nids = n.finish_app().nids;
        }
        end
    }
}

/// Which applications a run has, each with its own cutoff (`u64::MAX`:
/// none) and output.
#[derive(Default)]
pub(crate) struct AppChoice {
    /// The classifier, and whether its label goes into the flow records.
    pub classify: Option<u64>,
    /// `ssl.log`: path (`None`: stdout) and format.
    pub ssl: Option<(Option<PathBuf>, LogFormat)>,
    /// Flow records in this format (written to `-o`).
    pub flows: Option<(u64, Format, bool)>,
    /// Further sinks of the flow records (`--ipfix`, `--kafka`).
    pub flow_taps: Vec<Box<dyn RecordTap>>,
    /// `http.log`, with the analyser's settings.
    pub http: Option<(u64, Option<PathBuf>, LogFormat, HttpConfig)>,
    /// Further sinks of the `http.log` lines (`http --kafka`).
    pub http_taps: Vec<Box<dyn RecordTap>>,
    /// `dns.log`.
    pub dns: Option<(u64, Option<PathBuf>, LogFormat)>,
    /// The NIDS, set up, and its cutoff.
    pub nids: Option<(u64, NidsApp)>,
}

/// The outputs of the applications of a run.
pub(crate) struct AppSet {
    classify: Option<u64>,
    ssl: Option<LogOutput>,
    flows: Option<(u64, Outputs)>,
    http: Option<(u64, LogOutput, HttpConfig)>,
    dns: Option<(u64, LogOutput)>,
    nids: Option<(u64, NidsApp)>,
}

impl AppSet {
    /// Opens every output.
    pub(crate) fn open(c: &Common, choice: AppChoice) -> Result<AppSet, String> {
        let flows = match choice.flows {
            Some((cut, format, digest)) => {
                let app = choice.classify.is_some();
                let taps = choice.flow_taps;
                Some((
                    cut,
                    Outputs::open(c, format, digest, false, None, app, taps)?,
                ))
            }
            None => None,
        };
        let ssl = match choice.ssl {
            Some((path, f)) => Some(LogOutput::open::<SslRecord>(
                path.as_deref(),
                f,
                Vec::new(),
            )?),
            None => None,
        };
        let http = match choice.http {
            Some((cut, path, f, cfg)) => {
                let taps = choice.http_taps;
                Some((
                    cut,
                    LogOutput::open::<HttpRecord>(path.as_deref(), f, taps)?,
                    cfg,
                ))
            }
            None => None,
        };
        let dns = match choice.dns {
            Some((cut, path, f)) => Some((
                cut,
                LogOutput::open::<DnsRecord>(path.as_deref(), f, Vec::new())?,
            )),
            None => None,
        };
        Ok(AppSet {
            classify: choice.classify,
            ssl,
            flows,
            http,
            dns,
            nids: choice.nids,
        })
    }
}

impl AppSet {
    /// The protocol logs.
    fn logs(&mut self) -> impl Iterator<Item = &mut LogOutput> {
        [
            self.ssl.as_mut(),
            self.http.as_mut().map(|(_, o, _)| o),
            self.dns.as_mut().map(|(_, o)| o),
        ]
        .into_iter()
        .flatten()
    }
}

impl RunApp for AppSet {
    type H = MultiCli;

    fn wants_bytes(&self) -> bool {
        self.classify.is_some()
            || self.http.is_some()
            || self.dns.is_some()
            || self.nids.is_some()
            || self.flows.as_ref().is_some_and(|(_, o)| o.wants_bytes())
    }

    fn handler(&self, failure: &SharedFailure, writers: usize) -> Result<MultiCli, String> {
        let classify = self.classify.map(|cut| {
            let ssl = self.ssl.as_ref().map(|o| o.writer(failure));
            Cutoff(Classify::new(ssl), cut)
        });
        let flows = self
            .flows
            .as_ref()
            .map(|(cut, o)| Cutoff(o.handler(failure, writers), *cut));
        let http = self
            .http
            .as_ref()
            .map(|(cut, o, cfg)| Cutoff(Http::new(cfg.clone(), o.writer(failure)), *cut));
        let dns = self
            .dns
            .as_ref()
            .map(|(cut, o)| Cutoff(DnsLog::new(o.writer(failure)), *cut));
        let nids = match &self.nids {
            Some((cut, n)) => Some(Cutoff(n.handler(failure, writers)?, *cut)),
            None => None,
        };
        Ok(MultiCli(Apps::new(Both(
            classify,
            Both(flows, Both(http, Both(dns, nids))),
        ))))
    }

    fn begin(&mut self, failure: &Failure) {
        if let Some((_, o)) = &mut self.flows {
            o.begin(failure);
        }
        for o in self.logs() {
            o.begin(failure);
        }
    }

    fn finish(&mut self, failure: &Failure) {
        if let Some((_, o)) = &mut self.flows {
            o.finish(failure);
        }
        for o in self.logs() {
            o.finish(failure);
        }
        if let Some((_, n)) = &mut self.nids {
            n.finish(failure);
        }
    }

    fn exports(&self) -> Vec<TapReport> {
        let mut all = self
            .flows
            .as_ref()
            .map_or_else(Vec::new, |(_, o)| o.exports().to_vec());
        if let Some((_, o, _)) = &self.http {
            all.extend(o.exports.iter().cloned());
        }
        if let Some((_, n)) = &self.nids {
            all.extend(n.exports());
        }
        all
    }

    fn summary(&self, o: &Outcome, e: &mut dyn Write) {
        if let Some(c) = &o.classify {
            classify_summary(c, e);
        }
        if let Some(h) = &o.http {
            let _ = writeln!(
                e,
                "  http.log     {} records: {} requests, {} responses on {} connections",
                h.records, h.requests, h.responses, h.connections
            );
        }
        if let Some(n) = o.dns_records {
            let _ = writeln!(e, "  dns.log      {n} records");
        }
        if let Some((_, n)) = &self.nids {
            n.summary(o, e);
        }
    }

    fn stats_json(&self, o: &Outcome) -> Option<(&'static str, serde_json::Value)> {
        let mut m = serde_json::Map::new();
        if let Some(c) = &o.classify {
            m.insert("apps".into(), classify_json(c));
        }
        if let Some(h) = &o.http {
            m.insert(
                "http".into(),
                serde_json::json!({
                    "records": h.records,
                    "requests": h.requests,
                    "responses": h.responses,
                    "connections": h.connections,
                }),
            );
        }
        if let Some(n) = o.dns_records {
            m.insert("dns_records".into(), n.into());
        }
        if let Some((_, n)) = &self.nids {
            if let Some((k, v)) = n.stats_json(o) {
                m.insert(k.into(), v);
            }
        }
        (!m.is_empty()).then_some(("apps", serde_json::Value::Object(m)))
    }
}

/// The summary's per-label lines: flows, packets and bytes of each label
/// seen, most flows first.
fn classify_summary(c: &ClassifyStats, e: &mut dyn Write) {
    let mut labels: Vec<_> = c.labels.iter().filter(|(_, t)| t.flows > 0).collect();
    labels.sort_by(|a, b| b.1.flows.cmp(&a.1.flows).then(a.0.name().cmp(b.0.name())));
    let flows: u64 = labels.iter().map(|(_, t)| t.flows).sum();
    let _ = writeln!(
        e,
        "  apps         {flows} TCP/UDP connections classified, {} of them by their port alone",
        c.by_port
    );
    for (app, t) in labels {
        let _ = writeln!(
            e,
            "  app          {:<11} {:>7} flows {:>9} packets {:>10}B",
            app.name(),
            t.flows,
            t.packets,
            crate::nids::human_bytes(t.bytes)
        );
    }
}

fn classify_json(c: &ClassifyStats) -> serde_json::Value {
    let labels: serde_json::Map<String, serde_json::Value> = c
        .labels
        .iter()
        .filter(|(_, t)| t.flows > 0)
        .map(|(a, t)| {
            (
                a.name().to_string(),
                serde_json::json!({"flows": t.flows, "packets": t.packets, "bytes": t.bytes}),
            )
        })
        .collect();
    serde_json::json!({"by_port": c.by_port, "labels": labels})
}

/// `compose::App` is what the parts implement.
const _: fn() = || {
    fn is_app<A: compose::App>() {}
    is_app::<Joined>();
};
