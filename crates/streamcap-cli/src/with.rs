//! `streamcap http` (the `http.log` of a capture) and `streamcap run
//! --with …` (several applications in one pass, each with its own cutoff
//! and output file): their options, and the applications they choose.

use crate::apps::{AppChoice, AppSet, LogFormat};
use crate::nids::{self, AlertFormat, NidsApp, RuleOptions};
use crate::output::Format;
use crate::run::{self, usage};
use crate::{paths, size, Common};
use clap::Args;
use std::path::PathBuf;
use std::process::ExitCode;
use streamcap_apps::http::HttpConfig;

/// The options of `streamcap http`.
#[derive(Args)]
pub struct HttpArgs {
    /// Log format: Zeek's JSON (one object per line, flat keys such as
    /// `id.orig_h`) or Zeek's TSV `http.log`.
    #[arg(long, value_enum, default_value = "json")]
    format: LogFormat,
    /// Add the SHA-256 of each body (`request_body_sha256`,
    /// `response_body_sha256`, JSON only); bodies are then read whole.
    #[arg(long)]
    hash_bodies: bool,
    #[command(flatten)]
    kafka: crate::kafka::KafkaArgs,
    #[command(flatten)]
    common: Common,
}

/// Runs `streamcap http`.
pub fn http(a: HttpArgs) -> ExitCode {
    let (format, hash) = (a.format, a.hash_bodies);
    if a.kafka.kafka.is_some() && format != LogFormat::Json {
        return usage("--kafka sends http.log records as JSON lines: it needs --format json");
    }
    let kafka = a.kafka;
    run::run(a.common, None, move |c, _| {
        let choice = AppChoice {
            http: Some((u64::MAX, c.output.clone(), format, http_config(hash))),
            http_taps: crate::kafka::open(&kafka, crate::kafka::Payload::Lines)?,
            ..AppChoice::default()
        };
        AppSet::open(c, choice)
    })
}

fn http_config(hash: bool) -> HttpConfig {
    HttpConfig {
        hash_bodies: hash,
        ..HttpConfig::default()
    }
}

/// The options of `streamcap run`.
#[derive(Args)]
pub struct RunArgs {
    /// An application, its argument and options:
    /// `NAME[=ARG][,cutoff=BYTES][,digest][,parquet]`. NAME is `flows`
    /// (records to DIR/flows.json, or DIR/conn.log with --log-format zeek,
    /// or DIR/flows.parquet with `parquet`; `digest` adds each direction's
    /// SHA-256), `app` (the classifier: its label
    /// goes into the flow records), `http` (DIR/http.log), `dns`
    /// (DIR/dns.log), `tls` (DIR/ssl.log, from the classifier), `nids=RULES`
    /// (Suricata rules, alerts to DIR/eve.json; several files as
    /// `nids=a.rules:b.rules`). `cutoff` limits what that application sees
    /// of each stream. Repeatable; each application at most once.
    #[arg(long = "with", value_name = "APP", required = true)]
    with: Vec<String>,
    /// The directory of the outputs (created if missing).
    #[arg(short = 'w', long = "write", value_name = "DIR", required = true)]
    dir: PathBuf,
    /// Replace outputs of an earlier run in DIR (refused otherwise).
    #[arg(long)]
    force: bool,
    /// Format of the Zeek logs (conn.log, http.log, dns.log, ssl.log).
    #[arg(long, value_enum, default_value = "json")]
    log_format: LogFormat,
    #[command(flatten)]
    rules: RuleOptions,
    #[command(flatten)]
    common: Common,
}

/// One `--with` argument.
#[derive(Debug, PartialEq, Eq)]
struct With {
    name: String,
    arg: Option<String>,
    cutoff: u64,
    digest: bool,
    /// `flows,parquet`: the records as a Parquet file.
    parquet: bool,
}

/// Parses `NAME[=ARG][,cutoff=BYTES][,digest][,parquet]`.
fn parse_with(s: &str) -> Result<With, String> {
    let mut parts = s.split(',');
    let head = parts.next().unwrap_or_default().trim();
    let (name, arg) = match head.split_once('=') {
        Some((n, a)) => (n.trim(), Some(a.trim().to_string())),
        None => (head, None),
    };
    if !["flows", "app", "http", "dns", "tls", "nids"].contains(&name) {
        return Err(format!(
            "--with {s:?}: unknown application {name:?} (flows, app, http, dns, tls, nids=RULES)"
        ));
    }
    let mut w = With {
        name: name.to_string(),
        arg,
        cutoff: u64::MAX,
        digest: false,
        parquet: false,
    };
    for opt in parts {
        match opt.trim().split_once('=') {
            Some(("cutoff", v)) => {
                w.cutoff = size::parse_limit(v)
                    .map_err(|e| format!("--with {s:?}: {e}"))?
                    .unwrap_or(u64::MAX);
            }
            None if opt.trim() == "digest" && name == "flows" => w.digest = true,
            None if opt.trim() == "parquet" && name == "flows" => w.parquet = true,
            _ => return Err(format!("--with {s:?}: unknown option {opt:?}")),
        }
    }
    match (name, &w.arg) {
        ("nids", None) => Err(format!("--with {s:?}: nids needs its rules: nids=FILE")),
        ("nids", Some(_)) => Ok(w),
        (_, Some(a)) => Err(format!("--with {s:?}: {name} takes no argument ({a:?})")),
        _ => Ok(w),
    }
}

/// Runs `streamcap run`.
pub fn run(mut a: RunArgs) -> ExitCode {
    let mut withs = Vec::new();
    for s in &a.with {
        match parse_with(s) {
            Ok(w) if withs.iter().any(|x: &With| x.name == w.name) => {
                return usage(format!("--with {}: given twice", w.name))
            }
            Ok(w) => withs.push(w),
            Err(e) => return usage(e),
        }
    }
    if a.common.output.is_some() {
        return usage("run writes its outputs into -w DIR; -o does not apply");
    }
    let zeek = a.log_format == LogFormat::Zeek;
    let file = |name: &str| a.dir.join(name);
    let mut choice = AppChoice::default();
    let mut outputs: Vec<PathBuf> = Vec::new();
    for w in &withs {
        match w.name.as_str() {
            "app" => choice.classify = Some(w.cutoff),
            "tls" => {
                let p = file("ssl.log");
                outputs.push(p.clone());
                choice.ssl = Some((Some(p), a.log_format));
                choice.classify.get_or_insert(w.cutoff);
            }
            "flows" => {
                let format = match (w.parquet, zeek) {
                    (true, _) => Format::Parquet,
                    (false, true) => Format::Zeek,
                    (false, false) => Format::Json,
                };
                outputs.push(file(flows_file(format)));
                choice.flows = Some((w.cutoff, format, w.digest));
            }
            "http" => {
                let p = file("http.log");
                outputs.push(p.clone());
                choice.http = Some((w.cutoff, Some(p), a.log_format, http_config(false)));
            }
            "dns" => {
                let p = file("dns.log");
                outputs.push(p.clone());
                choice.dns = Some((w.cutoff, Some(p), a.log_format));
            }
            _ => {}
        }
    }
    let nids = withs.iter().find(|w| w.name == "nids");
    let rule_files: Vec<PathBuf> = nids
        .and_then(|w| w.arg.as_deref())
        .map(|r| r.split(':').map(PathBuf::from).collect())
        .unwrap_or_default();
    if nids.is_some() {
        outputs.push(file("eve.json"));
    }
    // Checked before anything is written: no output is the input, and no
    // output of an earlier run is overwritten by surprise.
    for p in &outputs {
        if let Err(e) = paths::check(a.common.read.as_deref(), Some(p), None) {
            return usage(e);
        }
        if p.exists() && !a.force {
            return usage(format!(
                "{}: exists (an earlier run?); --force replaces it",
                p.display()
            ));
        }
    }
    let set = match nids {
        Some(_) => match nids::load(&rule_files, &a.rules, a.common.quiet) {
            Ok(s) => Some(s),
            Err(code) => return code,
        },
        None => None,
    };
    if let Err(e) = std::fs::create_dir_all(&a.dir) {
        return usage(format!(
            "{}: cannot create the directory: {e}",
            a.dir.display()
        ));
    }
    let dir = a.dir.clone();
    let window_memory = a.rules_window_memory();
    // The flow records go to -o inside the run.
    a.common.output = choice
        .flows
        .as_ref()
        .map(|(_, f, _)| dir.join(flows_file(*f)));
    let nids_cut = nids.map_or(u64::MAX, |w| w.cutoff);
    run::run(a.common, None, move |c, _| {
        let mut choice = choice;
        if let Some(set) = set {
            let eve = dir.join("eve.json");
            let alerts = NidsApp::open(
                Some(eve.as_path()),
                AlertFormat::Eve,
                set,
                window_memory,
                Vec::new(),
            )?;
            choice.nids = Some((nids_cut, alerts));
        }
        AppSet::open(c, choice)
    })
}

/// The file of `run`'s flow records in `format`.
fn flows_file(format: Format) -> &'static str {
    match format {
        Format::Zeek => "conn.log",
        Format::Parquet => "flows.parquet",
        Format::Json | Format::Csv => "flows.json",
    }
}

impl RunArgs {
    fn rules_window_memory(&self) -> Option<u64> {
        self.rules.window_memory()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn with_arguments() {
        assert_eq!(
            parse_with("nids=a.rules,cutoff=10KiB").unwrap(),
            With {
                name: "nids".into(),
                arg: Some("a.rules".into()),
                cutoff: 10 << 10,
                digest: false,
                parquet: false,
            }
        );
        let f = parse_with("flows,digest,cutoff=unlimited").unwrap();
        assert!(f.digest && f.cutoff == u64::MAX);
        let f = parse_with("flows,parquet,digest").unwrap();
        assert!(f.parquet && f.digest);
        assert!(parse_with("dns,parquet").is_err());
        assert!(parse_with("nids").is_err());
        assert!(parse_with("http=x").is_err());
        assert!(parse_with("smtp").is_err());
        assert!(parse_with("http,digest").is_err());
        assert!(parse_with("dns,cutoff=lots").is_err());
    }
}
