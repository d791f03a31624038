//! `streamcap-bench apps`: the applications of `streamcap-apps` against
//! their peers and against each other, on the same captures.
//!
//! For each workload every row runs `--runs` times, round-robin (every row
//! once, then every row again), under `/usr/bin/time`, as in
//! `streamcap-bench run` and `streamcap-bench nids`. The rows:
//!
//! * `streamcap flows -q -o OUT/flows.json -r FILE`: flow records only;
//! * the same with `--app`: flow records with the layer-7 label;
//! * `ndpiReader -i FILE -q`: nDPI's whole analysis of the file (every
//!   flow dissected until it is detected or gives up, protocol guessing
//!   on), its summary left out (`-q`), and the same with `-C OUT/ndpi.csv`,
//!   one CSV line per flow (what `flows --app` writes is the closer
//!   analogue);
//! * `streamcap http -q -o OUT/http.log -r FILE`: Zeek's http.log;
//! * `tshark -n -r FILE -Y http -T fields -e ...` (stdout to a file):
//!   Wireshark's dissection of every packet, HTTP reassembly, and the
//!   fields of each HTTP request and response that carry what http.log
//!   has ([`TSHARK_FIELDS`]);
//! * `streamcap nids -q -o OUT/eve.json -S RULES -r FILE`;
//! * `streamcap run -q -r FILE -w OUT/run --with flows --with http --with
//!   nids=RULES`: the three applications in one pass, and the same with
//!   `--with app` as a fourth.
//!
//! Every row is pinned to one CPU with `taskset` (the main comparison: the
//! peers are single-threaded, streamcap reads the file on a second thread
//! and writes records on output threads); `--unpinned` adds unpinned rows
//! of streamcap's (or of every) command.
//!
//! The report: per workload the rows (median wall with min–max, user +
//! system CPU seconds, peak RSS, packet rate, what each found), the paired
//! ratios (classification against plain `flows` and against ndpiReader,
//! `http` against tshark) and the one-pass run against the sum of the
//! three applications run separately and against the slowest of them;
//! `--json` keeps every run.

use std::collections::BTreeMap;
use std::fs;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::Command;

use serde::{Deserialize, Serialize};

use crate::capinfo;
use crate::host;
use crate::nids::{run_rounds, wait_note, Rounds, RoundsPlan};
use crate::report::{fmt_load, RunHeader};
use crate::report::{HostLoad, Ratio, RunSample, Skipped, ToolResult};
use crate::runner::{run_template, which, HostMark};
use crate::stats::Spread;
use crate::table::fmt_spread_ratio;

/// The fields tshark prints for each HTTP message: the endpoints, and the
/// request's and the response's fields that http.log carries (method,
/// host, URI, version, user agent, referrer, status code and message,
/// body length).
pub const TSHARK_FIELDS: &[&str] = &[
    "frame.time_epoch",
    "ip.src",
    "ipv6.src",
    "tcp.srcport",
    "ip.dst",
    "ipv6.dst",
    "tcp.dstport",
    "http.request.method",
    "http.host",
    "http.request.uri",
    "http.request.version",
    "http.user_agent",
    "http.referer",
    "http.response.code",
    "http.response.phrase",
    "http.content_length",
];

/// What a row measures.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
enum Role {
    /// `streamcap flows`.
    Flows,
    /// `streamcap flows --app`.
    FlowsApp,
    /// `ndpiReader -q`.
    NdpiQuiet,
    /// `ndpiReader -q -C FILE`.
    NdpiCsv,
    /// `streamcap http`.
    Http,
    /// tshark's HTTP fields.
    Tshark,
    /// `streamcap nids`.
    Nids,
    /// `streamcap run --with flows --with http --with nids=RULES`.
    OnePass,
    /// The same with `--with app`.
    OnePassApp,
}

impl Role {
    /// streamcap's own rows (the others are peers).
    fn is_streamcap(self) -> bool {
        !matches!(self, Role::NdpiQuiet | Role::NdpiCsv | Role::Tshark)
    }
}

#[derive(Clone, Debug)]
struct Row {
    tool: String,
    mode: String,
    role: Role,
    /// `{FILE}`, `{RULES}`, `{OUT}` are substituted.
    argv: Vec<String>,
    pin: Option<usize>,
}

impl Row {
    fn pinned(&self, taskset: &Path, cpu: usize) -> Row {
        let mut argv = vec![taskset.display().to_string(), "-c".into(), cpu.to_string()];
        argv.extend(self.argv.iter().cloned());
        Row {
            mode: format!("{}, 1 CPU", self.mode),
            argv,
            pin: Some(cpu),
            ..self.clone()
        }
    }
}

/// Which rows also run unpinned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Unpinned {
    None,
    Streamcap,
    All,
}

struct Opts {
    streamcap: PathBuf,
    ndpi: Option<PathBuf>,
    tshark: Option<PathBuf>,
    runs: usize,
    rules: usize,
    rules_file: Option<PathBuf>,
    seed: u64,
    json: Option<PathBuf>,
    tmp: PathBuf,
    slow_limit: f64,
    one_cpu: Option<usize>,
    unpinned: Unpinned,
    commit: Option<String>,
    wait_idle: Option<f64>,
    replot: Option<PathBuf>,
    workloads: Vec<(String, PathBuf)>,
}

fn parse(args: &[String]) -> Result<Opts, String> {
    let mut o = Opts {
        streamcap: PathBuf::new(),
        ndpi: which("ndpiReader"),
        tshark: which("tshark"),
        runs: 5,
        rules: 1_000,
        rules_file: None,
        seed: 1,
        json: None,
        tmp: PathBuf::from("/dev/shm/streamcap-bench/apps"),
        slow_limit: 300.0,
        one_cpu: {
            let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
            (cpus > 1).then(host::first_allowed_cpu)
        },
        unpinned: Unpinned::Streamcap,
        commit: None,
        wait_idle: None,
        replot: None,
        workloads: Vec::new(),
    };
    let tool = |v: String| (v != "none").then(|| PathBuf::from(v));
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut val = || it.next().cloned().ok_or(format!("{a} needs a value"));
        match a.as_str() {
            "--streamcap" => o.streamcap = PathBuf::from(val()?),
            "--ndpi" => o.ndpi = tool(val()?),
            "--tshark" => o.tshark = tool(val()?),
            "--runs" => o.runs = val()?.parse().map_err(|e| format!("--runs: {e}"))?,
            "--rules" => o.rules = val()?.parse().map_err(|e| format!("--rules: {e}"))?,
            "--rules-file" => o.rules_file = Some(PathBuf::from(val()?)),
            "--seed" => o.seed = val()?.parse().map_err(|e| format!("--seed: {e}"))?,
            "--json" => o.json = Some(PathBuf::from(val()?)),
            "--tmp" => o.tmp = PathBuf::from(val()?),
            "--slow-limit" => {
                o.slow_limit = val()?.parse().map_err(|e| format!("--slow-limit: {e}"))?
            }
            "--one-cpu" => {
                let v = val()?;
                o.one_cpu = match v.as_str() {
                    "none" | "off" => None,
                    n => Some(n.parse().map_err(|e| format!("--one-cpu {n}: {e}"))?),
                }
            }
            "--unpinned" => {
                o.unpinned = match val()?.as_str() {
                    "none" => Unpinned::None,
                    "streamcap" => Unpinned::Streamcap,
                    "all" => Unpinned::All,
                    v => return Err(format!("--unpinned {v}: expected none, streamcap or all")),
                }
            }
            "--commit" => o.commit = Some(val()?).filter(|c| !c.is_empty()),
            "--wait-idle" => {
                o.wait_idle = Some(val()?.parse().map_err(|e| format!("--wait-idle: {e}"))?)
            }
            "--replot" => o.replot = Some(PathBuf::from(val()?)),
            w if w.contains('=') && !w.starts_with('-') => {
                let (n, f) = w.split_once('=').unwrap_or_default();
                o.workloads.push((n.to_string(), PathBuf::from(f)));
            }
            other => return Err(format!("unexpected argument {other}")),
        }
    }
    if o.replot.is_some() {
        return Ok(o);
    }
    if o.streamcap.as_os_str().is_empty() {
        return Err("missing --streamcap BIN".into());
    }
    if o.workloads.is_empty() {
        return Err("no workload (NAME=FILE)".into());
    }
    o.runs = o.runs.max(1);
    Ok(o)
}

/// The rows (pinned, then the unpinned ones), and the tools skipped with
/// the reason.
fn rows(o: &Opts) -> (Vec<Row>, Vec<Skipped>) {
    let mut skipped = Vec::new();
    let sc = o.streamcap.display().to_string();
    let streamcap = |mode: &str, role: Role, args: &[&str]| Row {
        tool: "streamcap".into(),
        mode: mode.into(),
        role,
        argv: std::iter::once(sc.as_str())
            .chain(args.iter().copied())
            .chain(["-r", "{FILE}"])
            .map(str::to_string)
            .collect(),
        pin: None,
    };
    let mut base = vec![
        streamcap(
            "flows",
            Role::Flows,
            &["flows", "-q", "-o", "{OUT}/flows.json"],
        ),
        streamcap(
            "flows --app",
            Role::FlowsApp,
            &["flows", "--app", "-q", "-o", "{OUT}/flows.json"],
        ),
    ];
    match &o.ndpi {
        Some(p) if p.is_file() => {
            let nd = p.display().to_string();
            base.push(Row {
                tool: "ndpiReader".into(),
                mode: "-q (summary off)".into(),
                role: Role::NdpiQuiet,
                argv: vec![nd.clone(), "-i".into(), "{FILE}".into(), "-q".into()],
                pin: None,
            });
            base.push(Row {
                tool: "ndpiReader".into(),
                mode: "-q -C (a CSV line per flow)".into(),
                role: Role::NdpiCsv,
                argv: vec![
                    nd,
                    "-i".into(),
                    "{FILE}".into(),
                    "-q".into(),
                    "-C".into(),
                    "{OUT}/ndpi.csv".into(),
                ],
                pin: None,
            });
        }
        _ => skipped.push(Skipped {
            tool: "ndpiReader".into(),
            reason: "left out (--ndpi none) or not installed (apt-get install libndpi-bin)".into(),
        }),
    }
    base.push(streamcap(
        "http",
        Role::Http,
        &["http", "-q", "-o", "{OUT}/http.log"],
    ));
    match &o.tshark {
        Some(p) if p.is_file() => {
            let mut argv: Vec<String> = [
                p.display().to_string().as_str(),
                "-n",
                "-r",
                "{FILE}",
                "-Y",
                "http",
                "-T",
                "fields",
                "-E",
                "occurrence=a",
                "-E",
                "aggregator=/s",
            ]
            .iter()
            .map(|s| s.to_string())
            .collect();
            for f in TSHARK_FIELDS {
                argv.push("-e".into());
                argv.push((*f).into());
            }
            base.push(Row {
                tool: "tshark".into(),
                mode: "-Y http -T fields (HTTP messages' fields)".into(),
                role: Role::Tshark,
                argv,
                pin: None,
            });
        }
        _ => skipped.push(Skipped {
            tool: "tshark".into(),
            reason: "left out (--tshark none) or not installed (apt-get install tshark)".into(),
        }),
    }
    base.push(streamcap(
        "nids",
        Role::Nids,
        &["nids", "-q", "-o", "{OUT}/eve.json", "-S", "{RULES}"],
    ));
    base.push(streamcap(
        "run --with flows --with http --with nids",
        Role::OnePass,
        &[
            "run",
            "-q",
            "-w",
            "{OUT}/run",
            "--with",
            "flows",
            "--with",
            "http",
            "--with",
            "nids={RULES}",
        ],
    ));
    base.push(streamcap(
        "run --with flows --with app --with http --with nids",
        Role::OnePassApp,
        &[
            "run",
            "-q",
            "-w",
            "{OUT}/run",
            "--with",
            "flows",
            "--with",
            "app",
            "--with",
            "http",
            "--with",
            "nids={RULES}",
        ],
    ));
    let unpinned = |r: &Row| match o.unpinned {
        Unpinned::None => false,
        Unpinned::Streamcap => r.role.is_streamcap(),
        Unpinned::All => true,
    };
    let out = match (o.one_cpu, which("taskset")) {
        (Some(cpu), Some(ts)) => {
            let mut out: Vec<Row> = base.iter().map(|r| r.pinned(&ts, cpu)).collect();
            out.extend(base.iter().filter(|r| unpinned(r)).cloned());
            out
        }
        (Some(_), None) => {
            skipped.push(Skipped {
                tool: "1 CPU rows".into(),
                reason: "taskset not found (util-linux): every row unpinned".into(),
            });
            base
        }
        (None, _) => base,
    };
    (out, skipped)
}

/// Lines of `path` (records of a JSON-lines or TSV log), `None` when it
/// cannot be read; lines starting with `#` (headers) are left out.
fn count_lines(path: &Path) -> Option<u64> {
    let f = fs::File::open(path).ok()?;
    let mut n = 0u64;
    let mut r = BufReader::with_capacity(1 << 20, f);
    let mut line = Vec::new();
    loop {
        line.clear();
        match r.read_until(b'\n', &mut line) {
            Ok(0) => return Some(n),
            Ok(_) => {
                if line.first().is_some_and(|&b| b != b'#' && b != b'\n') {
                    n += 1;
                }
            }
            Err(_) => return None,
        }
    }
}

/// What one run wrote: records per output, and their total.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
pub struct Found {
    /// Records of every output together.
    pub total: Option<u64>,
    /// Records per output (`flows`, `http`, `alerts`, `ndpi_flows`,
    /// `http_frames`: tshark's lines, one per frame with HTTP).
    pub parts: BTreeMap<String, u64>,
}

/// The records `role` wrote in `out` (tshark: its `stdout`).
fn found(role: Role, out: &Path, stdout: &Path) -> Found {
    let files: Vec<(&str, PathBuf)> = match role {
        Role::Flows | Role::FlowsApp => vec![("flows", out.join("flows.json"))],
        Role::NdpiQuiet => vec![],
        Role::NdpiCsv => vec![("ndpi_flows", out.join("ndpi.csv"))],
        Role::Http => vec![("http", out.join("http.log"))],
        Role::Tshark => vec![("http_frames", stdout.to_path_buf())],
        Role::Nids => vec![("alerts", out.join("eve.json"))],
        Role::OnePass | Role::OnePassApp => {
            let d = out.join("run");
            vec![
                ("flows", d.join("flows.json")),
                ("http", d.join("http.log")),
                ("alerts", d.join("eve.json")),
            ]
        }
    };
    let mut parts = BTreeMap::new();
    let mut total = (!files.is_empty()).then_some(0u64);
    for (name, p) in files {
        match count_lines(&p) {
            Some(n) => {
                parts.insert(name.to_string(), n);
                total = total.map(|t| t + n);
            }
            None => total = None,
        }
    }
    Found { total, parts }
}

/// One run of `r`: its figures and what it wrote.
fn run_once(
    r: &Row,
    round: usize,
    inputs: (&Path, &Path),
    tmp: &Path,
    gnu_time: Option<&Path>,
) -> Result<(RunSample, Found), String> {
    let run = run_template(&r.argv, inputs, tmp, gnu_time)?;
    let f = found(r.role, &run.out, &run.stdout);
    run.clean();
    Ok((run.sample(round), f))
}

/// One row's results on one workload.
#[derive(Serialize, Deserialize, Clone, Debug)]
pub struct AppsRow {
    /// What the row measures.
    role: Role,
    /// Figures and runs (`found`: the records of the last run).
    #[serde(flatten)]
    result: ToolResult,
    /// Records of every run (they should not differ).
    found_per_run: Vec<Option<u64>>,
    /// The last run's records per output.
    records: Found,
}

/// One paired comparison: `numerator`'s time over `denominator`'s, per
/// round, then the median and range.
#[derive(Serialize, Deserialize, Clone, Debug)]
pub struct Comparison {
    /// What is compared.
    pub what: String,
    /// The row whose time is divided.
    pub numerator: String,
    /// The row it is divided by.
    pub denominator: String,
    /// Pinned to one CPU (both sides).
    pub one_cpu: bool,
    /// Wall and CPU ratios (`peer` names the numerator).
    pub ratio: Option<Ratio>,
}

/// The one-pass run against the three applications run separately.
#[derive(Serialize, Deserialize, Clone, Debug)]
pub struct OnePass {
    /// Pinned to one CPU (every row).
    pub one_cpu: bool,
    /// With `--with app` (and `flows --app` among the separate rows).
    pub with_app: bool,
    /// The separate rows (tool and mode).
    pub separate: Vec<String>,
    /// Per round, the sum of the separate rows' wall, user and system
    /// times (peak RSS: the largest), over the rounds all of them ran.
    pub sum: ToolResult,
    /// The separate row with the longest median wall time.
    pub slowest: String,
    /// The one-pass row.
    pub one_pass: String,
    /// One pass over the sum of separate (< 1: the one pass is cheaper).
    pub vs_sum: Option<Ratio>,
    /// One pass over the slowest alone (1: no more than it).
    pub vs_slowest: Option<Ratio>,
    /// The one pass wrote as many records of each kind as the separate
    /// runs (flow records, HTTP transactions, alerts; last runs).
    pub same_records: Option<bool>,
}

/// One workload's results.
#[derive(Serialize, Deserialize, Clone, Debug)]
pub struct AppsWorkload {
    /// Short name.
    pub name: String,
    /// The capture file.
    pub file: String,
    /// Packets in the file.
    pub packets: u64,
    /// Sum of the packets' original lengths.
    pub wire_bytes: u64,
    /// UTC start of its runs.
    pub started: String,
    /// The host's load around its runs.
    pub host: HostLoad,
    /// Every row.
    pub rows: Vec<AppsRow>,
    /// Classification against plain flows and ndpiReader, http against
    /// tshark.
    pub comparisons: Vec<Comparison>,
    /// The one-pass runs against the separate ones.
    pub one_pass: Vec<OnePass>,
}

/// Everything `streamcap-bench apps` measured (`--json`).
#[derive(Serialize, Deserialize)]
pub struct AppsReport {
    /// Where, when and what.
    #[serde(flatten)]
    pub header: RunHeader,
    /// nDPI's version line (`ndpiReader -h`).
    pub ndpi_version: Option<String>,
    /// `tshark -v`'s first line.
    pub tshark_version: Option<String>,
    /// The NIDS rules: `streamcap-bench nids-rules --count N --seed S`,
    /// or the file given.
    pub rules: String,
    /// `--wait-idle`: the most CPUs other processes may keep busy before
    /// a round starts.
    pub wait_idle: Option<f64>,
    /// One entry per workload.
    pub workloads: Vec<AppsWorkload>,
    /// Tools that did not run.
    pub skipped: Vec<Skipped>,
}

/// The first line of `prog args...`'s output (stdout, else stderr) that
/// contains `needle`.
fn version_line(prog: &Path, args: &[&str], needle: &str) -> Option<String> {
    let out = Command::new(prog).args(args).output().ok()?;
    let text = format!(
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    text.lines()
        .find(|l| l.contains(needle))
        .map(|l| l.trim().to_string())
}

/// The row of `role`, pinned or not.
fn find(rows: &[AppsRow], role: Role, pinned: bool) -> Option<&AppsRow> {
    rows.iter()
        .find(|x| x.role == role && x.result.pinned_cpu.is_some() == pinned)
}

fn label(r: &ToolResult) -> String {
    format!("{} {}", r.tool, r.mode)
}

/// `num`'s time over `den`'s, paired by round.
fn compare(rows: &[AppsRow], what: &str, num: Role, den: Role, pinned: bool) -> Option<Comparison> {
    let (n, d) = (find(rows, num, pinned)?, find(rows, den, pinned)?);
    Some(Comparison {
        what: what.into(),
        numerator: label(&n.result),
        denominator: label(&d.result),
        one_cpu: pinned,
        ratio: d.result.ratio_to(&n.result),
    })
}

/// The one-pass row against the separate rows `parts`.
fn one_pass(
    rows: &[AppsRow],
    pass: Role,
    parts: &[Role],
    pinned: bool,
    (packets, wire_bytes): (u64, u64),
) -> Option<OnePass> {
    let p = find(rows, pass, pinned)?;
    let sep: Vec<&AppsRow> = parts
        .iter()
        .map(|&r| find(rows, r, pinned))
        .collect::<Option<_>>()?;
    let rounds: Vec<usize> = p.result.runs.iter().map(|s| s.round).collect();
    let mut runs = Vec::new();
    for round in rounds {
        let samples: Option<Vec<&RunSample>> = sep
            .iter()
            .map(|r| r.result.runs.iter().find(|s| s.round == round))
            .collect();
        let Some(samples) = samples else { continue };
        let sum = |f: &dyn Fn(&RunSample) -> Option<f64>| -> Option<f64> {
            samples.iter().map(|s| f(s)).sum()
        };
        runs.push(RunSample {
            round,
            wall_s: samples.iter().map(|s| s.wall_s).sum(),
            user_s: sum(&|s| s.user_s),
            sys_s: sum(&|s| s.sys_s),
            max_rss_kib: samples.iter().filter_map(|s| s.max_rss_kib).max(),
        });
    }
    let names: Vec<String> = sep.iter().map(|r| label(&r.result)).collect();
    let found: Option<u64> = sep.iter().map(|r| r.result.found).sum();
    let modes: Vec<&str> = sep
        .iter()
        .map(|r| r.result.mode.trim_end_matches(", 1 CPU"))
        .collect();
    let sum = ToolResult::summarise(
        "sum of separate",
        &format!(
            "{}{}",
            modes.join(" + "),
            if pinned { ", 1 CPU" } else { "" }
        ),
        p.result.pinned_cpu,
        String::new(),
        runs,
        found,
        "records",
        (packets, wire_bytes),
    )?;
    let slowest = sep
        .iter()
        .max_by(|a, b| a.result.wall_s.median.total_cmp(&b.result.wall_s.median))?;
    // Flow records, HTTP transactions and alerts of the separate rows.
    let want = |key: &str| sep.iter().find_map(|r| r.records.parts.get(key).copied());
    let same_records = ["flows", "http", "alerts"]
        .iter()
        .map(|k| Some(p.records.parts.get(*k).copied()? == want(k)?))
        .collect::<Option<Vec<bool>>>()
        .map(|v| v.iter().all(|&b| b));
    Some(OnePass {
        one_cpu: pinned,
        with_app: pass == Role::OnePassApp,
        separate: names,
        vs_sum: sum.ratio_to(&p.result),
        vs_slowest: slowest.result.ratio_to(&p.result),
        sum,
        slowest: label(&slowest.result),
        one_pass: label(&p.result),
        same_records,
    })
}

/// Runs every row on one workload.
#[allow(clippy::too_many_arguments)]
fn run_workload(
    o: &Opts,
    rows: &[Row],
    (name, file, input): (&str, &Path, &Path),
    (packets, wire_bytes): (u64, u64),
    rules: &Path,
    gnu_time: Option<&Path>,
    clk_tck: f64,
    skipped: &mut Vec<Skipped>,
) -> AppsWorkload {
    let started = host::utc_now();
    let mark = HostMark::now();
    let plan = RoundsPlan {
        runs: o.runs,
        slow_limit: o.slow_limit,
        wait_idle: o.wait_idle,
    };
    let Rounds {
        runs,
        found: founds,
        failed,
    } = run_rounds(
        rows,
        plan,
        clk_tck,
        &format!("apps on {name}"),
        |r| format!("{} {}", r.tool, r.mode),
        |r, round| run_once(r, round, (input, rules), &o.tmp, gnu_time),
    );
    let measured: f64 = runs
        .iter()
        .flatten()
        .filter_map(RunSample::cpu_s)
        .sum::<f64>();
    let host_load = mark.since(measured, clk_tck);
    let mut out = Vec::new();
    for (((r, rs), fs_), f) in rows.iter().zip(runs).zip(founds).zip(failed) {
        if let Some(e) = f {
            skipped.push(Skipped {
                tool: format!("{} {} ({name})", r.tool, r.mode),
                reason: e,
            });
            continue;
        }
        let unit = match r.role {
            Role::Flows | Role::FlowsApp => "flow records",
            Role::NdpiQuiet => "-",
            Role::NdpiCsv => "nDPI flows",
            Role::Http => "HTTP transactions",
            Role::Tshark => "frames with HTTP",
            Role::Nids => "alerts",
            Role::OnePass | Role::OnePassApp => "records",
        };
        let Some(res) = ToolResult::summarise(
            &r.tool,
            &r.mode,
            r.pin,
            r.argv.join(" "),
            rs,
            fs_.last().and_then(|f| f.total),
            unit,
            (packets, wire_bytes),
        ) else {
            continue;
        };
        eprintln!(
            "streamcap-bench:   {:<10} {:<58} {:>8.3} s  {}",
            res.tool,
            res.mode,
            res.wall_s.median,
            res.found.map_or("-".into(), |f| format!("{f} {unit}"))
        );
        out.push(AppsRow {
            role: r.role,
            result: res,
            found_per_run: fs_.iter().map(|f| f.total).collect(),
            records: fs_.last().cloned().unwrap_or_default(),
        });
    }
    let mut comparisons = Vec::new();
    let mut passes = Vec::new();
    for pinned in [true, false] {
        comparisons.extend(
            [
                (
                    "classification cost: flows --app over flows",
                    Role::FlowsApp,
                    Role::Flows,
                ),
                (
                    "ndpiReader -q over flows --app",
                    Role::NdpiQuiet,
                    Role::FlowsApp,
                ),
                (
                    "ndpiReader -q -C over flows --app",
                    Role::NdpiCsv,
                    Role::FlowsApp,
                ),
                ("ndpiReader -q over flows", Role::NdpiQuiet, Role::Flows),
                ("tshark over http", Role::Tshark, Role::Http),
            ]
            .iter()
            .filter_map(|&(what, n, d)| compare(&out, what, n, d, pinned)),
        );
        let totals = (packets, wire_bytes);
        passes.extend(one_pass(
            &out,
            Role::OnePass,
            &[Role::Flows, Role::Http, Role::Nids],
            pinned,
            totals,
        ));
        passes.extend(one_pass(
            &out,
            Role::OnePassApp,
            &[Role::FlowsApp, Role::Http, Role::Nids],
            pinned,
            totals,
        ));
    }
    AppsWorkload {
        name: name.into(),
        file: file.display().to_string(),
        packets,
        wire_bytes,
        started,
        host: host_load,
        rows: out,
        comparisons,
        one_pass: passes,
    }
}

/// `streamcap-bench apps ...`.
pub fn cmd_apps(args: &[String]) -> Result<(), String> {
    let o = parse(args)?;
    if let Some(j) = &o.replot {
        let text = fs::read_to_string(j).map_err(|e| format!("{}: {e}", j.display()))?;
        let report: AppsReport =
            serde_json::from_str(&text).map_err(|e| format!("{}: {e}", j.display()))?;
        print!("{}", markdown(&report));
        return Ok(());
    }
    fs::create_dir_all(&o.tmp).map_err(|e| format!("{}: {e}", o.tmp.display()))?;
    let started = host::utc_now();
    let loadavg_start = host::loadavg();
    let clk_tck = host::clk_tck();
    let gnu_time = which("/usr/bin/time");
    if gnu_time.is_none() {
        eprintln!("streamcap-bench: /usr/bin/time missing (apt-get install time): CPU and RSS not measured");
    }
    let (rules, rules_what) = match &o.rules_file {
        Some(f) => (f.clone(), f.display().to_string()),
        None => {
            let p = o.tmp.join(format!("rules-{}.rules", o.rules));
            fs::write(&p, crate::nids_rules::rules_text(o.rules, o.seed))
                .map_err(|e| format!("{}: {e}", p.display()))?;
            (
                p,
                format!(
                    "streamcap-bench nids-rules --count {} --seed {}",
                    o.rules, o.seed
                ),
            )
        }
    };
    let (rows, mut skipped) = rows(&o);
    for s in &skipped {
        eprintln!("streamcap-bench: skipping {}: {}", s.tool, s.reason);
    }
    let mut workloads = Vec::new();
    for (name, file) in &o.workloads {
        let (packets, wire_bytes) =
            capinfo::totals(file).map_err(|e| format!("{}: {e}", file.display()))?;
        eprintln!(
            "streamcap-bench: apps workload {name}: {} ({packets} packets, {:.1} MB on the wire)",
            file.display(),
            wire_bytes as f64 / 1e6
        );
        // Every tool reads one fresh copy in tmpfs, in the page cache.
        let input = o.tmp.join(format!(
            "fresh-{}",
            file.file_name()
                .map_or("input".into(), |n| n.to_string_lossy().into_owned())
        ));
        let input = match fs::copy(file, &input) {
            Ok(_) => input,
            Err(_) => file.clone(),
        };
        let _ = fs::read(&input);
        workloads.push(run_workload(
            &o,
            &rows,
            (name, file, &input),
            (packets, wire_bytes),
            &rules,
            gnu_time.as_deref(),
            clk_tck,
            &mut skipped,
        ));
        if &input != file {
            let _ = fs::remove_file(&input);
        }
    }
    let report = AppsReport {
        header: RunHeader::ending_now(
            o.commit.clone(),
            started,
            o.runs,
            rows.iter().find_map(|r| r.pin),
            &o.streamcap,
            loadavg_start,
        ),
        ndpi_version: o
            .ndpi
            .as_deref()
            .and_then(|p| version_line(p, &["-h"], "nDPI")),
        tshark_version: o
            .tshark
            .as_deref()
            .and_then(|p| version_line(p, &["-v"], "TShark")),
        rules: rules_what,
        wait_idle: o.wait_idle,
        workloads,
        skipped,
    };
    print!("{}", markdown(&report));
    if let Some(j) = &o.json {
        if let Some(d) = j.parent() {
            let _ = fs::create_dir_all(d);
        }
        let text = serde_json::to_string_pretty(&report).map_err(|e| e.to_string())?;
        fs::write(j, text + "\n").map_err(|e| format!("{}: {e}", j.display()))?;
        eprintln!("streamcap-bench: wrote {}", j.display());
    }
    let _ = fs::remove_dir_all(&o.tmp);
    Ok(())
}

fn fmt_ratio(r: Option<&Spread>) -> String {
    r.map_or("-".into(), fmt_spread_ratio)
}

fn median(s: Option<Spread>) -> String {
    s.map_or("-".into(), |s| format!("{:.2}", s.median))
}

/// A row of the figures table.
fn figures_line(x: &ToolResult) -> String {
    format!(
        "| {} | {} | {} | {:.3} | {:.3}–{:.3} | {} | {} | {:.2} | {} |",
        x.tool,
        x.mode,
        x.wall_s.n,
        x.wall_s.median,
        x.wall_s.min,
        x.wall_s.max,
        median(x.cpu_s),
        x.max_rss_kib
            .map_or("-".into(), |k| format!("{:.1}", k as f64 / 1024.0)),
        x.mpps,
        x.found
            .map_or("-".into(), |f| format!("{f} {}", x.found_unit)),
    )
}

/// The Markdown report.
pub fn markdown(r: &AppsReport) -> String {
    use std::fmt::Write;
    let mut s = r.header.markdown(
        "streamcap applications benchmark",
        &format!(
            " · {} · {} · rules: {}",
            r.ndpi_version.as_deref().unwrap_or("no ndpiReader"),
            r.tshark_version.as_deref().unwrap_or("no tshark"),
            r.rules,
        ),
        &wait_note(r.wait_idle),
    );
    for w in &r.workloads {
        let h = &w.host;
        let _ = writeln!(s);
        let _ = writeln!(
            s,
            "## {} — {} ({} packets, {:.1} MB on the wire)",
            w.name,
            w.file,
            w.packets,
            w.wire_bytes as f64 / 1e6
        );
        let _ = writeln!(s);
        let _ = writeln!(
            s,
            "{:.0} s of runs, load average {} at start, {} at end{}.",
            h.elapsed_s,
            fmt_load(h.loadavg_start),
            fmt_load(h.loadavg_end),
            h.other_cpus
                .map_or(String::new(), |o| format!(", other processes {o:.2} CPUs"))
        );
        let _ = writeln!(s);
        let _ = writeln!(
            s,
            "| tool | mode | runs | wall s (median) | wall s (min–max) | CPU s (user+sys) | peak RSS MiB | Mpps | found |"
        );
        let _ = writeln!(s, "|---|---|---:|---:|---:|---:|---:|---:|---:|");
        for row in &w.rows {
            let _ = writeln!(s, "{}", figures_line(&row.result));
        }
        if !w.comparisons.is_empty() {
            let _ = writeln!(s);
            let _ = writeln!(
                s,
                "Ratios: the first row's time over the second's, paired by round; median (min–max)."
            );
            let _ = writeln!(s);
            let _ = writeln!(s, "| comparison | pinned | wall | CPU (user+sys) |");
            let _ = writeln!(s, "|---|---|---:|---:|");
            for c in &w.comparisons {
                let x = c.ratio.as_ref();
                let _ = writeln!(
                    s,
                    "| {} | {} | {} | {} |",
                    c.what,
                    if c.one_cpu { "1 CPU" } else { "no" },
                    fmt_ratio(x.map(|r| &r.wall)),
                    fmt_ratio(x.and_then(|r| r.cpu.as_ref())),
                );
            }
        }
        for p in &w.one_pass {
            let _ = writeln!(s);
            let _ = writeln!(
                s,
                "One pass{}{}: `{}` against {} run separately.",
                if p.with_app {
                    " with classification"
                } else {
                    ""
                },
                if p.one_cpu { ", 1 CPU" } else { ", unpinned" },
                p.one_pass,
                p.separate.join(", ")
            );
            let _ = writeln!(s);
            let _ = writeln!(
                s,
                "| | wall s (median) | CPU s (user+sys) | one pass over it, wall | CPU |"
            );
            let _ = writeln!(s, "|---|---:|---:|---:|---:|");
            let pass = w
                .rows
                .iter()
                .find(|x| label(&x.result) == p.one_pass)
                .map(|x| &x.result);
            let slow = w
                .rows
                .iter()
                .find(|x| label(&x.result) == p.slowest)
                .map(|x| &x.result);
            let line = |name: &str, x: Option<&ToolResult>, r: Option<&Ratio>| {
                format!(
                    "| {name} | {} | {} | {} | {} |",
                    x.map_or("-".into(), |x| format!("{:.3}", x.wall_s.median)),
                    x.map_or("-".into(), |x| median(x.cpu_s)),
                    fmt_ratio(r.map(|r| &r.wall)),
                    fmt_ratio(r.and_then(|r| r.cpu.as_ref())),
                )
            };
            let _ = writeln!(
                s,
                "{}",
                line("sum of separate", Some(&p.sum), p.vs_sum.as_ref())
            );
            let _ = writeln!(
                s,
                "{}",
                line(
                    &format!("slowest alone ({})", p.slowest),
                    slow,
                    p.vs_slowest.as_ref()
                )
            );
            let _ = writeln!(s, "{}", line("one pass", pass, None));
            let _ = writeln!(s);
            let _ = writeln!(
                s,
                "Records of the one pass equal to the separate runs' (flows, HTTP transactions, alerts): {}.",
                match p.same_records {
                    Some(true) => "yes",
                    Some(false) => "NO",
                    None => "not known",
                }
            );
        }
    }
    let mut any = false;
    for sk in &r.skipped {
        if !any {
            let _ = writeln!(s);
        }
        let _ = writeln!(s, "skipped: {}: {}", sk.tool, sk.reason);
        any = true;
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::tests::sample;

    fn args(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn options_and_rows() {
        let o = parse(&args(&[
            "--streamcap",
            "/bin/sc",
            "--ndpi",
            "none",
            "--tshark",
            "none",
            "--one-cpu",
            "none",
            "w=f.pcap",
        ]))
        .unwrap();
        let (rows, skipped) = rows(&o);
        // flows, flows --app, http, nids, two one-pass rows; unpinned.
        assert_eq!(rows.len(), 6);
        assert!(rows
            .iter()
            .all(|r| r.pin.is_none() && r.tool == "streamcap"));
        assert_eq!(skipped.len(), 2);
        let pass = rows.iter().find(|r| r.role == Role::OnePass).unwrap();
        assert!(pass.argv.contains(&"nids={RULES}".to_string()));
        assert!(parse(&args(&["--streamcap", "x"])).is_err());
        assert!(parse(&args(&["--streamcap", "x", "--unpinned", "x", "w=f"])).is_err());
    }

    #[test]
    fn pinned_and_unpinned_rows() {
        let Some(ts) = which("taskset") else { return };
        let o = parse(&args(&[
            "--streamcap",
            "/bin/sc",
            "--ndpi",
            "/bin/sh",
            "--tshark",
            "/bin/sh",
            "--one-cpu",
            "0",
            "w=f.pcap",
        ]))
        .unwrap();
        let (rows, _) = rows(&o);
        // 9 pinned rows, 6 streamcap rows unpinned.
        assert_eq!(rows.len(), 15);
        assert_eq!(rows.iter().filter(|r| r.pin == Some(0)).count(), 9);
        assert_eq!(rows[0].argv[0], ts.display().to_string());
        assert!(rows
            .iter()
            .filter(|r| r.pin.is_none())
            .all(|r| r.role.is_streamcap()));
    }

    fn row(role: Role, pinned: bool, walls: &[f64], parts: &[(&str, u64)]) -> AppsRow {
        let runs: Vec<RunSample> = walls
            .iter()
            .enumerate()
            .map(|(i, &w)| sample(i, w, w, 0.0))
            .collect();
        let records = Found {
            total: Some(parts.iter().map(|p| p.1).sum()),
            parts: parts.iter().map(|(k, v)| (k.to_string(), *v)).collect(),
        };
        AppsRow {
            role,
            result: ToolResult::summarise(
                "streamcap",
                &format!("{role:?}"),
                pinned.then_some(0),
                String::new(),
                runs,
                records.total,
                "records",
                (1000, 1000),
            )
            .unwrap(),
            found_per_run: vec![records.total; walls.len()],
            records,
        }
    }

    #[test]
    fn one_pass_against_sum_and_slowest() {
        let rows = vec![
            row(Role::Flows, true, &[1.0, 1.0], &[("flows", 10)]),
            row(Role::Http, true, &[1.0, 2.0], &[("http", 5)]),
            row(Role::Nids, true, &[2.0, 3.0], &[("alerts", 7)]),
            row(
                Role::OnePass,
                true,
                &[2.0, 3.0],
                &[("flows", 10), ("http", 5), ("alerts", 7)],
            ),
        ];
        let p = one_pass(
            &rows,
            Role::OnePass,
            &[Role::Flows, Role::Http, Role::Nids],
            true,
            (1000, 1000),
        )
        .unwrap();
        // Sums 4 and 6; one pass 2 and 3: 0.5 in both rounds.
        assert_eq!(p.sum.wall_s.median, 5.0);
        assert_eq!(p.sum.found, Some(22));
        let r = p.vs_sum.unwrap();
        assert_eq!((r.wall.median, r.wall.n), (0.5, 2));
        assert!(p.slowest.contains("Nids"));
        assert_eq!(p.vs_slowest.unwrap().wall.median, 1.0);
        assert_eq!(p.same_records, Some(true));
        // No unpinned rows: no comparison.
        assert!(one_pass(&rows, Role::OnePass, &[Role::Flows], false, (1, 1)).is_none());
        let c = compare(&rows, "x", Role::Nids, Role::Flows, true).unwrap();
        assert_eq!(c.ratio.unwrap().wall.median, 2.5);
    }

    #[test]
    fn record_counts() {
        let dir = std::env::temp_dir().join(format!("appsbench-{}", std::process::id()));
        fs::create_dir_all(dir.join("run")).unwrap();
        fs::write(dir.join("flows.json"), "{}\n{}\n").unwrap();
        fs::write(dir.join("ndpi.csv"), "#flow_id,protocol\n1,6\n2,17\n3,6\n").unwrap();
        fs::write(dir.join("run/flows.json"), "{}\n").unwrap();
        fs::write(dir.join("run/http.log"), "").unwrap();
        let f = found(Role::Flows, &dir, &dir.join("stdout"));
        assert_eq!(f.total, Some(2));
        assert_eq!(found(Role::NdpiCsv, &dir, &dir).total, Some(3));
        assert_eq!(found(Role::NdpiQuiet, &dir, &dir), Found::default());
        // eve.json missing: total unknown, the parts read are kept.
        let f = found(Role::OnePass, &dir, &dir);
        assert_eq!(f.total, None);
        assert_eq!(f.parts.get("flows"), Some(&1));
        assert_eq!(f.parts.get("http"), Some(&0));
        let _ = fs::remove_dir_all(&dir);
    }
}
