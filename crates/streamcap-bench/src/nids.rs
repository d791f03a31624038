//! `streamcap-bench nids`: `streamcap nids` against Suricata (single run
//! mode) and against libnids with the same automaton (the C peer
//! `nids_match`: libnids + Hyperscan stream mode), on the same captures
//! with the same rules (`streamcap-bench nids-rules`: 100, 1,000 and 10,000
//! content rules by default).
//!
//! For each workload and rule count, every row runs `--runs` times,
//! round-robin (every row once, then every row again), under
//! `/usr/bin/time`, as in `streamcap-bench run`:
//!
//! * streamcap nids (`-q -o /dev/null`): engine `auto` (Hyperscan where
//!   `libhs.so.5` loads), `--engine aho-corasick`, `--cutoff 10KiB` (Scap's
//!   cutoff), `--cutoff 1MiB` (Suricata's default reassembly depth),
//!   `--delivery segments`;
//! * Suricata `-r FILE -S RULES --runmode single -k none -c YAML -l DIR`,
//!   with the configuration of [`suricata_yaml`] (its built-in defaults and
//!   EVE alerts only), and with every application-layer parser disabled;
//! * `nids_match RULES FILE` (bench/peers/nids_match.c);
//! * streamcap (engine auto), both Suricata configurations and nids_match
//!   pinned to one CPU with `taskset` (`1 CPU` rows);
//! * streamcap (both engines), Suricata and nids_match on a capture of one
//!   packet: their start-up with the rules, mostly loading and compiling
//!   them (`start-up` rows).
//!
//! Each tool's alerts are counted: streamcap's `--stats-json` (`nids.alerts`:
//! one per stream direction and rule), Suricata's eve.json lines of
//! `"event_type":"alert"`, nids_match's `alerts=` (one per TCP half-stream
//! or UDP address pair and rule).
//!
//! The report: per workload and rule count, the rows (median wall with
//! min–max, user + system CPU seconds, Gbit/s and Mpps of the median wall,
//! alerts), streamcap's paired ratios against Suricata and nids_match (wall,
//! CPU, one CPU), the cutoff's effect (time and alerts lost), the engines,
//! the delivery modes and the start-up times; `--json` keeps every run,
//! `--png` draws throughput against the number of rules.

use std::collections::HashSet;
use std::fs;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::capinfo;
use crate::host;
use crate::plot::{self, Series};
use crate::report::{fmt_load, HostLoad, Ratio, RunHeader, RunSample, Skipped, ToolResult};
use crate::runner::{parse_kv, run_template, which, HostMark};
use crate::stats::Spread;
use crate::table::fmt_spread_ratio;

/// Rule counts measured by default.
pub const DEFAULT_COUNTS: [usize; 3] = [100, 1_000, 10_000];

/// Which tool a row runs, for reading its alerts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
enum Kind {
    Streamcap,
    Suricata,
    NidsMatch,
}

/// What a row measures.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
enum Role {
    /// streamcap nids, engine auto: the row compared with the others.
    Main,
    /// streamcap with the aho-corasick engine.
    AhoCorasick,
    /// streamcap with `--cutoff 10KiB`.
    Cutoff,
    /// streamcap with `--cutoff 1MiB` (Suricata's default depth).
    Depth,
    /// streamcap with `--delivery segments`.
    Segments,
    /// streamcap, engine auto, the second build (`--streamcap-plain`).
    Plain,
    /// Suricata, default configuration.
    Suricata,
    /// Suricata without application-layer parsers.
    SuricataNoAppLayer,
    /// libnids + Hyperscan.
    NidsMatch,
}

#[derive(Clone, Debug)]
struct Row {
    tool: String,
    mode: String,
    kind: Kind,
    role: Role,
    /// On the 1-packet capture (start-up only).
    load: bool,
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

    fn on_load_capture(&self) -> Row {
        Row {
            mode: format!("{}, start-up (1-packet capture)", self.mode),
            load: true,
            ..self.clone()
        }
    }
}

struct Opts {
    streamcap: PathBuf,
    plain: Option<PathBuf>,
    peers: Option<PathBuf>,
    suricata: Option<PathBuf>,
    runs: usize,
    counts: Vec<usize>,
    other_counts: Vec<usize>,
    seed: u64,
    json: Option<PathBuf>,
    png: Option<PathBuf>,
    tmp: PathBuf,
    slow_limit: f64,
    one_cpu: Option<usize>,
    commit: Option<String>,
    wait_idle: Option<f64>,
    /// Only print and draw the report of this `--json` file.
    replot: Option<PathBuf>,
    workloads: Vec<(String, PathBuf)>,
}

fn parse_counts(v: &str, what: &str) -> Result<Vec<usize>, String> {
    v.split(',')
        .filter(|n| !n.trim().is_empty())
        .map(|n| n.trim().parse().map_err(|e| format!("{what} {n}: {e}")))
        .collect()
}

fn parse(args: &[String]) -> Result<Opts, String> {
    let mut o = Opts {
        streamcap: PathBuf::new(),
        plain: None,
        peers: None,
        suricata: which("suricata"),
        runs: 5,
        counts: DEFAULT_COUNTS.to_vec(),
        other_counts: vec![1_000],
        seed: 1,
        json: None,
        png: None,
        tmp: PathBuf::from("/dev/shm/streamcap-bench/nids"),
        slow_limit: 300.0,
        one_cpu: {
            let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
            (cpus > 1).then(host::first_allowed_cpu)
        },
        commit: None,
        wait_idle: None,
        replot: None,
        workloads: Vec::new(),
    };
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut val = || it.next().cloned().ok_or(format!("{a} needs a value"));
        match a.as_str() {
            "--streamcap" => o.streamcap = PathBuf::from(val()?),
            "--streamcap-plain" => o.plain = Some(PathBuf::from(val()?)),
            "--peers" => o.peers = Some(PathBuf::from(val()?)),
            "--suricata" => {
                let v = val()?;
                o.suricata = (v != "none").then(|| PathBuf::from(v));
            }
            "--runs" => o.runs = val()?.parse().map_err(|e| format!("--runs: {e}"))?,
            "--rules" => o.counts = parse_counts(&val()?, "--rules")?,
            "--other-rules" => o.other_counts = parse_counts(&val()?, "--other-rules")?,
            "--seed" => o.seed = val()?.parse().map_err(|e| format!("--seed: {e}"))?,
            "--json" => o.json = Some(PathBuf::from(val()?)),
            "--png" => o.png = Some(PathBuf::from(val()?)),
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
            "--commit" => o.commit = Some(val()?).filter(|c| !c.is_empty()),
            "--replot" => o.replot = Some(PathBuf::from(val()?)),
            "--wait-idle" => {
                o.wait_idle = Some(val()?.parse().map_err(|e| format!("--wait-idle: {e}"))?)
            }
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
    if o.counts.is_empty() {
        return Err("--rules: no rule count".into());
    }
    o.runs = o.runs.max(1);
    Ok(o)
}

/// Suricata's configuration for the benchmark (`-c`): its built-in
/// defaults for everything but the outputs, which are EVE alerts only
/// (`eve.json` in the `-l` directory), and the statistics counters, which
/// are off (no output would read them); with `app_layer` false, every
/// application-layer parser of Suricata 7 is disabled as well.
///
/// The built-in defaults that matter here (Suricata 7.0, as it logs them
/// at the `config` log level): stream reassembly depth 0 (unlimited: the
/// suricata.yaml Debian ships sets 1 MiB, this file does not), stream
/// memcap 64 MiB and reassembly memcap 256 MiB, raw stream inspection in
/// chunks of about 2,560 bytes per direction (randomised), no midstream
/// pickup, at most 15 alerts per packet, pattern matchers Hyperscan (MPM
/// and SPM `hs`), `detect.profile` medium, and every application-layer
/// parser on (HTTP, TLS, SSH, SMTP, FTP, DNS, SMB, ...) except DNP3 and
/// ENIP, which Suricata keeps off when not configured.
pub fn suricata_yaml(app_layer: bool) -> String {
    let mut s = String::from(
        "%YAML 1.1\n---\n\
         # streamcap-bench nids: Suricata's built-in defaults, EVE alerts only.\n\
         outputs:\n  \
           - eve-log:\n      \
               enabled: yes\n      \
               filetype: regular\n      \
               filename: eve.json\n      \
               types:\n        \
                 - alert\n\
         stats:\n  \
           enabled: no\n",
    );
    if !app_layer {
        s.push_str("# Every application-layer parser (and its protocol detection) off.\napp-layer:\n  protocols:\n");
        for p in SURICATA_APP_LAYER {
            s.push_str(&format!("    {p}:\n      enabled: no\n"));
        }
    }
    s
}

/// Suricata 7's application-layer protocols (`app-layer.protocols` of its
/// default suricata.yaml).
const SURICATA_APP_LAYER: &[&str] = &[
    "telnet",
    "rfb",
    "mqtt",
    "krb5",
    "bittorrent-dht",
    "snmp",
    "ike",
    "tls",
    "pgsql",
    "dcerpc",
    "ftp",
    "rdp",
    "ssh",
    "http2",
    "smtp",
    "imap",
    "smb",
    "nfs",
    "tftp",
    "dns",
    "http",
    "modbus",
    "dnp3",
    "enip",
    "ntp",
    "quic",
    "dhcp",
    "sip",
];

/// The rows, and the tools skipped with the reason.
fn rows(o: &Opts, yaml: &Path, yaml_no_app: &Path) -> (Vec<Row>, Vec<Skipped>) {
    let mut skipped = Vec::new();
    let sc = o.streamcap.display().to_string();
    let plain = o.plain.as_ref().map(|p| p.display().to_string());
    let streamcap = |mode: &str, role: Role, extra: &[&str]| {
        let bin = match (role, &plain) {
            (Role::Plain, Some(p)) => p.as_str(),
            _ => sc.as_str(),
        };
        let mut argv: Vec<String> = [bin, "nids", "-q", "-o", "/dev/null", "-S"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        argv.extend([
            "{RULES}".into(),
            "--stats-json".into(),
            "{OUT}/stats.json".into(),
        ]);
        argv.extend(extra.iter().map(|s| s.to_string()));
        argv.extend(["-r".into(), "{FILE}".into()]);
        Row {
            tool: "streamcap".into(),
            mode: mode.into(),
            kind: Kind::Streamcap,
            role,
            load: false,
            argv,
            pin: None,
        }
    };
    let mut main = vec![streamcap("nids, engine auto", Role::Main, &[])];
    let mut others = vec![
        streamcap(
            "nids --engine aho-corasick",
            Role::AhoCorasick,
            &["--engine", "aho-corasick"],
        ),
        streamcap("nids --cutoff 10KiB", Role::Cutoff, &["--cutoff", "10KiB"]),
        streamcap("nids --cutoff 1MiB", Role::Depth, &["--cutoff", "1MiB"]),
        streamcap(
            "nids --delivery segments",
            Role::Segments,
            &["--delivery", "segments"],
        ),
    ];
    if plain.is_some() {
        others.push(streamcap(
            "nids, engine auto, plain build",
            Role::Plain,
            &[],
        ));
    }
    match &o.suricata {
        Some(p) if p.is_file() => {
            for (mode, role, y) in [
                ("--runmode single", Role::Suricata, yaml),
                (
                    "--runmode single, app-layer off",
                    Role::SuricataNoAppLayer,
                    yaml_no_app,
                ),
            ] {
                main.push(Row {
                    tool: "suricata".into(),
                    mode: mode.into(),
                    kind: Kind::Suricata,
                    role,
                    load: false,
                    argv: vec![
                        p.display().to_string(),
                        "-r".into(),
                        "{FILE}".into(),
                        "-S".into(),
                        "{RULES}".into(),
                        "--runmode".into(),
                        "single".into(),
                        "-k".into(),
                        "none".into(),
                        "-c".into(),
                        y.display().to_string(),
                        "-l".into(),
                        "{OUT}".into(),
                    ],
                    pin: None,
                });
            }
        }
        _ => skipped.push(Skipped {
            tool: "suricata".into(),
            reason: "not installed (apt-get install suricata)".into(),
        }),
    }
    let peer = o.peers.as_ref().map(|d| d.join("nids_match"));
    match &peer {
        Some(p) if p.is_file() => main.push(Row {
            tool: "nids_match".into(),
            mode: "libnids + Hyperscan".into(),
            kind: Kind::NidsMatch,
            role: Role::NidsMatch,
            load: false,
            argv: vec![
                p.display().to_string(),
                "{RULES}".into(),
                "{FILE}".into(),
                (1u32 << 18).to_string(),
            ],
            pin: None,
        }),
        _ => skipped.push(Skipped {
            tool: "nids_match".into(),
            reason: crate::runner::peer_missing_reason(o.peers.as_deref(), "nids_match").replace(
                "libnids-dev/libpcap-dev",
                "libnids-dev/libpcap-dev/libhyperscan-dev",
            ),
        }),
    }
    let mut out = main.clone();
    out.append(&mut others);
    match (o.one_cpu, which("taskset")) {
        (Some(cpu), Some(ts)) => out.extend(main.iter().map(|r| r.pinned(&ts, cpu))),
        (Some(_), None) => skipped.push(Skipped {
            tool: "1 CPU rows".into(),
            reason: "taskset not found (util-linux)".into(),
        }),
        (None, _) => {}
    }
    // Start-up: streamcap (both engines), Suricata (default configuration)
    // and nids_match on the 1-packet capture.
    let load: Vec<Row> = out
        .iter()
        .filter(|r| {
            r.pin.is_none()
                && matches!(
                    r.role,
                    Role::Main | Role::AhoCorasick | Role::Suricata | Role::NidsMatch
                )
        })
        .map(Row::on_load_capture)
        .collect();
    out.extend(load);
    (out, skipped)
}

/// The start-up rows' capture: one Ethernet frame, an IPv4 UDP datagram
/// of 4 bytes from 192.0.2.1:1024 to 192.0.2.2:9 (Suricata refuses a file
/// without packets). No rule of `streamcap-bench nids-rules` matches it.
fn write_load_pcap(path: &Path) -> Result<(), String> {
    let payload = b"load";
    let ip_len = 20 + 8 + payload.len();
    let mut frame = Vec::with_capacity(14 + ip_len);
    frame.extend_from_slice(&[0x02, 0, 0, 0, 0, 2, 0x02, 0, 0, 0, 0, 1, 0x08, 0x00]);
    let mut ip = vec![
        0x45,
        0,
        (ip_len >> 8) as u8,
        ip_len as u8,
        0,
        1,
        0,
        0,
        64,
        17,
        0,
        0,
    ];
    ip.extend_from_slice(&[192, 0, 2, 1, 192, 0, 2, 2]);
    let sum = ip
        .chunks(2)
        .map(|w| u32::from(u16::from_be_bytes([w[0], w[1]])))
        .sum::<u32>();
    let sum = (sum & 0xffff) + (sum >> 16);
    let check = !((sum & 0xffff) + (sum >> 16)) as u16;
    ip[10..12].copy_from_slice(&check.to_be_bytes());
    frame.extend_from_slice(&ip);
    let udp_len = (8 + payload.len()) as u16;
    frame.extend_from_slice(&1024u16.to_be_bytes());
    frame.extend_from_slice(&9u16.to_be_bytes());
    frame.extend_from_slice(&udp_len.to_be_bytes());
    frame.extend_from_slice(&[0, 0]);
    frame.extend_from_slice(payload);
    let mut f = Vec::with_capacity(40 + frame.len());
    f.extend_from_slice(&0xa1b2_c3d4u32.to_le_bytes());
    f.extend_from_slice(&2u16.to_le_bytes());
    f.extend_from_slice(&4u16.to_le_bytes());
    f.extend_from_slice(&0i32.to_le_bytes());
    f.extend_from_slice(&0u32.to_le_bytes());
    f.extend_from_slice(&65_535u32.to_le_bytes());
    f.extend_from_slice(&1u32.to_le_bytes());
    // 2024-05-01T12:00:00Z.
    f.extend_from_slice(&1_714_564_800u32.to_le_bytes());
    f.extend_from_slice(&0u32.to_le_bytes());
    f.extend_from_slice(&(frame.len() as u32).to_le_bytes());
    f.extend_from_slice(&(frame.len() as u32).to_le_bytes());
    f.extend_from_slice(&frame);
    fs::write(path, f).map_err(|e| format!("{}: {e}", path.display()))
}

/// What one run alerted.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
pub struct Alerts {
    /// Alerts written.
    pub total: Option<u64>,
    /// Distinct (connection, direction, rule) triples among them: streamcap
    /// and nids_match alert once per triple, Suricata on every inspection
    /// that matches.
    pub distinct: Option<u64>,
    /// streamcap's `nids` statistics (`--stats-json`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stats: Option<serde_json::Value>,
}

/// The alerts of a Suricata eve.json: all, and distinct by flow, source
/// (the direction) and rule.
fn eve_alerts(path: &Path) -> Alerts {
    let Ok(f) = fs::File::open(path) else {
        return Alerts::default();
    };
    let (mut total, mut seen) = (0u64, HashSet::new());
    for line in BufReader::new(f).lines().map_while(Result::ok) {
        if !line.contains("\"event_type\":\"alert\"") {
            continue;
        }
        total += 1;
        if let Ok(v) = serde_json::from_str::<serde_json::Value>(&line) {
            seen.insert((
                v.get("flow_id").and_then(|x| x.as_u64()),
                v.pointer("/alert/signature_id").and_then(|x| x.as_u64()),
                v.get("src_ip").and_then(|x| x.as_str()).map(str::to_string),
                v.get("src_port").and_then(|x| x.as_u64()),
            ));
        }
    }
    Alerts {
        total: Some(total),
        distinct: Some(seen.len() as u64),
        stats: None,
    }
}

/// The alerts of streamcap's `--stats-json` (`nids.alerts`, one per
/// stream direction and rule) and its `nids` statistics.
fn streamcap_alerts(path: &Path) -> Alerts {
    let v: Option<serde_json::Value> = fs::read_to_string(path)
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok());
    let mut nids = v.and_then(|mut v| v.get_mut("nids").map(serde_json::Value::take));
    if let Some(serde_json::Value::Object(m)) = nids.as_mut() {
        // Per-signature counts: long, and in the rules already.
        m.remove("signatures");
    }
    let total = nids
        .as_ref()
        .and_then(|n| n.get("alerts"))
        .and_then(|a| a.as_u64());
    Alerts {
        total,
        distinct: total,
        stats: nids,
    }
}

/// One run of `r`: its figures and its alerts.
fn run_once(
    r: &Row,
    round: usize,
    inputs: (&Path, &Path),
    tmp: &Path,
    gnu_time: Option<&Path>,
) -> Result<(RunSample, Alerts), String> {
    let run = run_template(&r.argv, inputs, tmp, gnu_time)?;
    let alerts = match r.kind {
        Kind::Streamcap => streamcap_alerts(&run.out.join("stats.json")),
        Kind::Suricata => eve_alerts(&run.out.join("eve.json")),
        Kind::NidsMatch => {
            let n = parse_kv(
                &fs::read_to_string(&run.stdout).unwrap_or_default(),
                "alerts",
            );
            Alerts {
                total: n,
                distinct: n,
                stats: None,
            }
        }
    };
    run.clean();
    Ok((run.sample(round), alerts))
}

/// One row's results on one rule set.
#[derive(Serialize, Deserialize, Clone, Debug)]
pub struct NidsRow {
    /// What the row measures.
    role: Role,
    /// On the 1-packet capture (start-up only).
    load: bool,
    /// Figures and runs (`found`: alerts of the last run).
    #[serde(flatten)]
    result: ToolResult,
    /// Alerts of every run (they should not differ).
    alerts_per_run: Vec<Option<u64>>,
    /// The last run's alerts, distinct ones and statistics.
    alerts: Alerts,
}

/// Paired ratios of streamcap nids (engine auto) against one peer: the
/// peer's time over streamcap's (> 1: streamcap is faster).
#[derive(Serialize, Deserialize, Clone, Debug)]
pub struct VsPeer {
    /// The peer row.
    pub peer: String,
    /// Wall and CPU, both unpinned.
    pub unpinned: Option<Ratio>,
    /// Wall, both pinned to one CPU.
    pub one_cpu: Option<Ratio>,
}

/// The cutoff's effect on one rule set.
#[derive(Serialize, Deserialize, Clone, Debug)]
pub struct CutoffEffect {
    /// The cutoff row.
    pub mode: String,
    /// Wall time without the cutoff over wall time with it (paired).
    pub speedup: Option<Ratio>,
    /// Alerts without the cutoff.
    pub alerts: Option<u64>,
    /// Alerts with it.
    pub alerts_cut: Option<u64>,
}

/// All rows of one rule count on one workload.
#[derive(Serialize, Deserialize, Clone, Debug)]
pub struct RuleSetResult {
    /// Number of rules.
    pub rules: usize,
    /// The rules file.
    pub file: String,
    /// UTC start.
    pub started: String,
    /// The host's load around these runs.
    pub host: HostLoad,
    /// Every row.
    pub rows: Vec<NidsRow>,
    /// streamcap against Suricata (default configuration).
    pub vs_suricata: Option<VsPeer>,
    /// streamcap against Suricata without application-layer parsers.
    pub vs_suricata_no_app_layer: Option<VsPeer>,
    /// streamcap against nids_match.
    pub vs_nids_match: Option<VsPeer>,
    /// `--cutoff 10KiB` and `--cutoff 1MiB` against no cutoff.
    pub cutoffs: Vec<CutoffEffect>,
    /// aho-corasick's time over Hyperscan's (engine auto), paired.
    pub aho_corasick_vs_auto: Option<Ratio>,
    /// Segment delivery's time over chunk delivery's, paired.
    pub segments_vs_chunks: Option<Ratio>,
}

/// One workload's rule sets.
#[derive(Serialize, Deserialize, Clone, Debug)]
pub struct NidsWorkload {
    /// Short name.
    pub name: String,
    /// The capture file.
    pub file: String,
    /// Packets in the file.
    pub packets: u64,
    /// Sum of the packets' original lengths.
    pub wire_bytes: u64,
    /// One entry per rule count.
    pub sets: Vec<RuleSetResult>,
}

/// Everything `streamcap-bench nids` measured (`--json`).
#[derive(Serialize, Deserialize)]
pub struct NidsReport {
    /// Where, when and what.
    #[serde(flatten)]
    pub header: RunHeader,
    /// The engine `auto` picks (from streamcap's start-up line).
    pub engine_auto: Option<String>,
    /// `suricata -V`.
    pub suricata_version: Option<String>,
    /// Seed of the rule sets (`streamcap-bench nids-rules --seed`).
    pub rules_seed: u64,
    /// Suricata's configuration (`-c`), default and without app-layer.
    pub suricata_yaml: [String; 2],
    /// `--wait-idle`: the most CPUs other processes may keep busy before
    /// a round starts.
    pub wait_idle: Option<f64>,
    /// One entry per workload.
    pub workloads: Vec<NidsWorkload>,
    /// Tools that did not run.
    pub skipped: Vec<Skipped>,
}

/// CPUs kept busy by all processes over `secs` seconds (/proc/stat).
fn busy_cpus(secs: f64, clk_tck: f64) -> Option<f64> {
    let a = host::cpu_ticks()?;
    std::thread::sleep(Duration::from_secs_f64(secs));
    let b = host::cpu_ticks()?;
    Some(b.busy.saturating_sub(a.busy) as f64 / clk_tck / secs)
}

/// How rows are run: rounds, the slow limit, waiting for an idle machine.
#[derive(Clone, Copy)]
pub(crate) struct RoundsPlan {
    /// Rounds (runs per row, unless a row is slow).
    pub runs: usize,
    /// A row whose first run shows that its runs would exceed this many
    /// seconds runs fewer times.
    pub slow_limit: f64,
    /// Before each round, wait until others keep at most this many CPUs
    /// busy.
    pub wait_idle: Option<f64>,
}

/// What the rounds came to, row by row.
pub(crate) struct Rounds<T> {
    /// Each row's runs.
    pub runs: Vec<Vec<RunSample>>,
    /// What each of its runs found.
    pub found: Vec<Vec<T>>,
    /// The error that stopped a row.
    pub failed: Vec<Option<String>>,
}

/// Runs every row once per round, round-robin (`run(row, round)`), as
/// [`RoundsPlan`] says; `title` names the rounds in the progress lines,
/// `name` a row.
pub(crate) fn run_rounds<R, T>(
    rows: &[R],
    plan: RoundsPlan,
    clk_tck: f64,
    title: &str,
    name: impl Fn(&R) -> String,
    mut run: impl FnMut(&R, usize) -> Result<(RunSample, T), String>,
) -> Rounds<T> {
    let mut out = Rounds {
        runs: (0..rows.len()).map(|_| Vec::new()).collect(),
        found: (0..rows.len()).map(|_| Vec::new()).collect(),
        failed: vec![None; rows.len()],
    };
    let mut want = vec![plan.runs; rows.len()];
    for round in 0..plan.runs {
        if let Some(limit) = plan.wait_idle {
            wait_idle(limit, clk_tck);
        }
        eprintln!(
            "streamcap-bench: {title}: round {}/{} (load average {})",
            round + 1,
            plan.runs,
            host::loadavg().map_or("?".into(), |l| format!("{:.2}", l[0]))
        );
        for (i, r) in rows.iter().enumerate() {
            if out.failed[i].is_some() || round >= want[i] {
                continue;
            }
            match run(r, round) {
                Ok((s, f)) => {
                    if round == 0 && plan.runs > 1 && s.wall_s * plan.runs as f64 > plan.slow_limit
                    {
                        want[i] = ((plan.slow_limit / s.wall_s) as usize).clamp(1, plan.runs);
                        eprintln!(
                            "streamcap-bench:   {}: {:.1} s per run, {} run(s) only (--slow-limit {})",
                            name(r),
                            s.wall_s,
                            want[i],
                            plan.slow_limit
                        );
                    }
                    out.runs[i].push(s);
                    out.found[i].push(f);
                }
                Err(e) => {
                    eprintln!("streamcap-bench:   {} failed: {e}", name(r));
                    out.failed[i] = Some(e);
                }
            }
        }
    }
    out
}

/// Waits (at most 30 min) until other processes keep at most `limit` CPUs
/// busy over 3 s.
pub(crate) fn wait_idle(limit: f64, clk_tck: f64) {
    let deadline = Instant::now() + Duration::from_secs(1800);
    let mut said = false;
    loop {
        let Some(b) = busy_cpus(3.0, clk_tck) else {
            return;
        };
        if b <= limit {
            if said {
                eprintln!("streamcap-bench:   machine quiet ({b:.2} CPUs busy): going on");
            }
            return;
        }
        if Instant::now() > deadline {
            eprintln!("streamcap-bench:   still {b:.2} CPUs busy after 30 min: going on");
            return;
        }
        if !said {
            eprintln!(
                "streamcap-bench:   {b:.2} CPUs busy (load average {}): waiting for at most {limit}",
                host::loadavg().map_or("?".into(), |l| format!("{:.2}", l[0]))
            );
            said = true;
        }
        std::thread::sleep(Duration::from_secs(10));
    }
}

/// Runs every row on one workload with one rule set.
#[allow(clippy::too_many_arguments)]
fn run_set(
    o: &Opts,
    rows: &[Row],
    (file, load): (&Path, &Path),
    (packets, wire_bytes): (u64, u64),
    (count, rules): (usize, &Path),
    gnu_time: Option<&Path>,
    clk_tck: f64,
    skipped: &mut Vec<Skipped>,
    wl: &str,
) -> RuleSetResult {
    let started = host::utc_now();
    let mark = HostMark::now();
    let plan = RoundsPlan {
        runs: o.runs,
        slow_limit: o.slow_limit,
        wait_idle: o.wait_idle,
    };
    let Rounds {
        runs,
        found: alerts,
        failed,
    } = run_rounds(
        rows,
        plan,
        clk_tck,
        &format!("{wl}, {count} rules"),
        |r| format!("{} {}", r.tool, r.mode),
        |r, round| {
            let input = if r.load { load } else { file };
            run_once(r, round, (input, rules), &o.tmp, gnu_time)
        },
    );
    let measured: f64 = runs
        .iter()
        .flatten()
        .filter_map(RunSample::cpu_s)
        .sum::<f64>();
    let host_load = mark.since(measured, clk_tck);
    let mut out = Vec::new();
    for (((r, rs), al), f) in rows.iter().zip(runs).zip(alerts).zip(failed) {
        if let Some(e) = f {
            skipped.push(Skipped {
                tool: format!("{} {} ({wl}, {count} rules)", r.tool, r.mode),
                reason: e,
            });
            continue;
        }
        let (p, b) = if r.load {
            (0, 0)
        } else {
            (packets, wire_bytes)
        };
        let Some(res) = ToolResult::summarise(
            &r.tool,
            &r.mode,
            r.pin,
            r.argv.join(" "),
            rs,
            al.last().and_then(|a| a.total),
            "alerts",
            (p, b),
        ) else {
            continue;
        };
        eprintln!(
            "streamcap-bench:   {:<10} {:<52} {:>8.3} s  {}",
            res.tool,
            res.mode,
            res.wall_s.median,
            res.found.map_or("-".into(), |f| format!("{f} alerts"))
        );
        out.push(NidsRow {
            role: r.role,
            load: r.load,
            result: res,
            alerts_per_run: al.iter().map(|a| a.total).collect(),
            alerts: al.last().cloned().unwrap_or_default(),
        });
    }
    let find = |role: Role, pinned: bool| {
        out.iter()
            .find(|x| x.role == role && !x.load && x.result.pinned_cpu.is_some() == pinned)
            .map(|x| &x.result)
    };
    let vs = |role: Role| {
        let peer = find(role, false)?;
        Some(VsPeer {
            peer: format!("{} {}", peer.tool, peer.mode),
            unpinned: find(Role::Main, false).and_then(|m| m.ratio_to(peer)),
            one_cpu: find(Role::Main, true)
                .zip(find(role, true))
                .and_then(|(m, p)| m.ratio_to(p)),
        })
    };
    let main = find(Role::Main, false);
    let cutoffs = [Role::Cutoff, Role::Depth]
        .iter()
        .filter_map(|&role| {
            let c = find(role, false)?;
            Some(CutoffEffect {
                mode: c.mode.clone(),
                speedup: main.and_then(|m| c.ratio_to(m)),
                alerts: main.and_then(|m| m.found),
                alerts_cut: c.found,
            })
        })
        .collect();
    let against_main = |role: Role| main.zip(find(role, false)).and_then(|(m, x)| m.ratio_to(x));
    RuleSetResult {
        rules: count,
        file: rules.display().to_string(),
        started,
        host: host_load,
        vs_suricata: vs(Role::Suricata),
        vs_suricata_no_app_layer: vs(Role::SuricataNoAppLayer),
        vs_nids_match: vs(Role::NidsMatch),
        cutoffs,
        aho_corasick_vs_auto: against_main(Role::AhoCorasick),
        segments_vs_chunks: against_main(Role::Segments),
        rows: out,
    }
}

/// The engine `auto` picks: streamcap's start-up line (without `-q`) on
/// the 1-packet capture names it.
fn engine_auto(streamcap: &Path, rules: &Path, load: &Path) -> Option<String> {
    let out = Command::new(streamcap)
        .args(["nids", "-o", "/dev/null", "-S"])
        .arg(rules)
        .arg("-r")
        .arg(load)
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&out.stderr);
    let line = text.lines().find(|l| l.contains("rules loaded"))?;
    Some(if line.contains("Hyperscan") {
        "hyperscan".into()
    } else {
        "aho-corasick".into()
    })
}

fn suricata_version(bin: &Path) -> Option<String> {
    let out = Command::new(bin).arg("-V").output().ok()?;
    let v = String::from_utf8_lossy(&out.stdout).trim().to_string();
    (!v.is_empty()).then_some(v)
}

/// `streamcap-bench nids ...`.
pub fn cmd_nids(args: &[String]) -> Result<(), String> {
    let o = parse(args)?;
    if let Some(j) = &o.replot {
        let text = fs::read_to_string(j).map_err(|e| format!("{}: {e}", j.display()))?;
        let report: NidsReport =
            serde_json::from_str(&text).map_err(|e| format!("{}: {e}", j.display()))?;
        print!("{}", markdown(&report));
        if let Some(p) = &o.png {
            draw(p, &report).map_err(|e| format!("plot: {e}"))?;
            eprintln!("streamcap-bench: wrote {}", p.display());
        }
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
    let yamls = [suricata_yaml(true), suricata_yaml(false)];
    let (yaml, yaml_no_app) = (
        o.tmp.join("suricata.yaml"),
        o.tmp.join("suricata-no-app-layer.yaml"),
    );
    for (p, t) in [(&yaml, &yamls[0]), (&yaml_no_app, &yamls[1])] {
        fs::write(p, t).map_err(|e| format!("{}: {e}", p.display()))?;
    }
    let load = o.tmp.join("load.pcap");
    write_load_pcap(&load)?;
    let (rows, mut skipped) = rows(&o, &yaml, &yaml_no_app);
    for s in &skipped {
        eprintln!("streamcap-bench: skipping {}: {}", s.tool, s.reason);
    }
    let mut all_counts: Vec<usize> = o.counts.iter().chain(&o.other_counts).copied().collect();
    all_counts.sort_unstable();
    all_counts.dedup();
    let rule_files: Vec<(usize, PathBuf)> = all_counts
        .iter()
        .map(|&n| {
            let p = o.tmp.join(format!("rules-{n}.rules"));
            fs::write(&p, crate::nids_rules::rules_text(n, o.seed))
                .map(|()| (n, p.clone()))
                .map_err(|e| format!("{}: {e}", p.display()))
        })
        .collect::<Result<_, _>>()?;
    let engine_auto = rule_files
        .first()
        .and_then(|(_, p)| engine_auto(&o.streamcap, p, &load));
    let mut workloads = Vec::new();
    for (wi, (name, file)) in o.workloads.iter().enumerate() {
        let (packets, wire_bytes) =
            capinfo::totals(file).map_err(|e| format!("{}: {e}", file.display()))?;
        eprintln!(
            "streamcap-bench: nids workload {name}: {} ({packets} packets, {:.1} MB on the wire)",
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
        let counts = if wi == 0 { &o.counts } else { &o.other_counts };
        let mut sets = Vec::new();
        for (n, rules) in rule_files.iter().filter(|(n, _)| counts.contains(n)) {
            sets.push(run_set(
                &o,
                &rows,
                (&input, &load),
                (packets, wire_bytes),
                (*n, rules),
                gnu_time.as_deref(),
                clk_tck,
                &mut skipped,
                name,
            ));
        }
        if &input != file {
            let _ = fs::remove_file(&input);
        }
        workloads.push(NidsWorkload {
            name: name.clone(),
            file: file.display().to_string(),
            packets,
            wire_bytes,
            sets,
        });
    }
    let report = NidsReport {
        header: RunHeader::ending_now(
            o.commit.clone(),
            started,
            o.runs,
            rows.iter().find_map(|r| r.pin),
            &o.streamcap,
            loadavg_start,
        ),
        engine_auto,
        suricata_version: o.suricata.as_deref().and_then(suricata_version),
        rules_seed: o.seed,
        suricata_yaml: yamls,
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
    if let Some(p) = &o.png {
        match draw(p, &report) {
            Ok(()) => eprintln!("streamcap-bench: wrote {}", p.display()),
            Err(e) => eprintln!("streamcap-bench: plot failed: {e}"),
        }
    }
    let _ = fs::remove_dir_all(&o.tmp);
    Ok(())
}

/// The load line's note on `--wait-idle`, if it was given.
pub(crate) fn wait_note(wait_idle: Option<f64>) -> String {
    wait_idle.map_or(String::new(), |w| {
        format!("; each round waited until other processes kept at most {w} CPUs busy")
    })
}

fn fmt_ratio(r: Option<&Spread>) -> String {
    r.map_or("-".into(), fmt_spread_ratio)
}

fn median(s: Option<Spread>) -> String {
    s.map_or("-".into(), |s| format!("{:.2}", s.median))
}

/// The Markdown report.
pub fn markdown(r: &NidsReport) -> String {
    use std::fmt::Write;
    let mut s = r.header.markdown(
        "streamcap nids benchmark",
        &format!(
            " · engine auto = {} · {}",
            r.engine_auto.as_deref().unwrap_or("?"),
            r.suricata_version.as_deref().unwrap_or("no Suricata"),
        ),
        &wait_note(r.wait_idle),
    );
    for w in &r.workloads {
        let _ = writeln!(s);
        let _ = writeln!(
            s,
            "## {} — {} ({} packets, {:.1} MB on the wire)",
            w.name,
            w.file,
            w.packets,
            w.wire_bytes as f64 / 1e6
        );
        for set in &w.sets {
            let h = &set.host;
            let _ = writeln!(s);
            let _ = writeln!(
                s,
                "### {} rules — {:.0} s of runs, load average {} at start, {} at end{}",
                set.rules,
                h.elapsed_s,
                fmt_load(h.loadavg_start),
                fmt_load(h.loadavg_end),
                h.other_cpus
                    .map_or(String::new(), |o| format!(", other processes {o:.2} CPUs"))
            );
            let _ = writeln!(s);
            let _ = writeln!(
                s,
                "| tool | mode | runs | wall s (median) | wall s (min–max) | CPU s (user+sys) | peak RSS MiB | Gbit/s | Mpps | alerts |"
            );
            let _ = writeln!(s, "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|");
            for row in &set.rows {
                let x = &row.result;
                let rate = |v: f64| {
                    if row.load {
                        "-".to_string()
                    } else {
                        format!("{v:.2}")
                    }
                };
                let _ = writeln!(
                    s,
                    "| {} | {} | {} | {:.3} | {:.3}–{:.3} | {} | {} | {} | {} | {} |",
                    x.tool,
                    x.mode,
                    x.wall_s.n,
                    x.wall_s.median,
                    x.wall_s.min,
                    x.wall_s.max,
                    median(x.cpu_s),
                    x.max_rss_kib
                        .map_or("-".into(), |k| format!("{:.1}", k as f64 / 1024.0)),
                    rate(x.gbps),
                    rate(x.mpps),
                    if row.load {
                        "-".into()
                    } else {
                        match (row.alerts.total, row.alerts.distinct) {
                            (Some(t), Some(d)) if t != d => format!("{t} ({d} distinct)"),
                            (Some(t), _) => t.to_string(),
                            _ => "-".into(),
                        }
                    },
                );
            }
        }
        let _ = writeln!(s);
        let _ = writeln!(
            s,
            "streamcap nids (engine auto) against the others: the peer's time over streamcap's, paired by round (> 1: streamcap is faster); median (min–max)."
        );
        let _ = writeln!(s);
        let _ = writeln!(
            s,
            "| rules | peer | wall | CPU (user+sys) | wall, both on 1 CPU |"
        );
        let _ = writeln!(s, "|---:|---|---:|---:|---:|");
        for set in &w.sets {
            for v in [
                &set.vs_suricata,
                &set.vs_suricata_no_app_layer,
                &set.vs_nids_match,
            ]
            .into_iter()
            .flatten()
            {
                let u = v.unpinned.as_ref();
                let _ = writeln!(
                    s,
                    "| {} | {} | {} | {} | {} |",
                    set.rules,
                    v.peer,
                    fmt_ratio(u.map(|r| &r.wall)),
                    fmt_ratio(u.and_then(|r| r.cpu.as_ref())),
                    fmt_ratio(v.one_cpu.as_ref().map(|r| &r.wall)),
                );
            }
        }
        let _ = writeln!(s);
        let _ = writeln!(
            s,
            "Cutoff: streamcap nids with a cutoff against none (time without over time with, paired), and the alerts lost."
        );
        let _ = writeln!(s);
        let _ = writeln!(
            s,
            "| rules | mode | speed-up | alerts without | alerts with | lost | lost % |"
        );
        let _ = writeln!(s, "|---:|---|---:|---:|---:|---:|---:|");
        for set in &w.sets {
            for c in &set.cutoffs {
                let lost = c.alerts.zip(c.alerts_cut).map(|(a, b)| a as i64 - b as i64);
                let pct = c
                    .alerts
                    .zip(lost)
                    .filter(|(a, _)| *a > 0)
                    .map(|(a, l)| 100.0 * l as f64 / a as f64);
                let _ = writeln!(
                    s,
                    "| {} | {} | {} | {} | {} | {} | {} |",
                    set.rules,
                    c.mode,
                    fmt_ratio(c.speedup.as_ref().map(|r| &r.wall)),
                    c.alerts.map_or("-".into(), |a| a.to_string()),
                    c.alerts_cut.map_or("-".into(), |a| a.to_string()),
                    lost.map_or("-".into(), |l| l.to_string()),
                    pct.map_or("-".into(), |p| format!("{p:.1}")),
                );
            }
        }
        let _ = writeln!(s);
        let _ = writeln!(
            s,
            "Engines and delivery: aho-corasick's time over Hyperscan's (engine auto), segment delivery's over chunk delivery's, paired (> 1: the default is faster)."
        );
        let _ = writeln!(s);
        let _ = writeln!(
            s,
            "| rules | aho-corasick / auto, wall | CPU | segments / chunks, wall | CPU |"
        );
        let _ = writeln!(s, "|---:|---:|---:|---:|---:|");
        for set in &w.sets {
            let a = set.aho_corasick_vs_auto.as_ref();
            let g = set.segments_vs_chunks.as_ref();
            let _ = writeln!(
                s,
                "| {} | {} | {} | {} | {} |",
                set.rules,
                fmt_ratio(a.map(|r| &r.wall)),
                fmt_ratio(a.and_then(|r| r.cpu.as_ref())),
                fmt_ratio(g.map(|r| &r.wall)),
                fmt_ratio(g.and_then(|r| r.cpu.as_ref())),
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

/// Throughput (Gbit/s, median wall) against the number of rules on the
/// first workload, one line per row (start-up rows left out).
fn draw(path: &Path, r: &NidsReport) -> Result<(), String> {
    let w = r.workloads.first().ok_or("no workload")?;
    let mut series: Vec<Series> = Vec::new();
    for set in &w.sets {
        for row in set.rows.iter().filter(|x| !x.load) {
            // Nine lines at most (as many colours): the 1-CPU rows of
            // streamcap, Suricata's default configuration and nids_match.
            let pinned = row.result.pinned_cpu.is_some();
            if matches!(row.role, Role::Depth | Role::Segments | Role::Plain)
                || (pinned && row.role == Role::SuricataNoAppLayer)
            {
                continue;
            }
            let name = format!("{} {}", row.result.tool, row.result.mode);
            let point = (set.rules as f64, row.result.gbps);
            match series.iter_mut().find(|s| s.name == name) {
                Some(s) => s.points.push(point),
                None => series.push(Series {
                    name,
                    points: vec![point],
                }),
            }
        }
    }
    plot::lines_scaled(
        path,
        &format!(
            "NIDS throughput on {} ({} packets), median of runs",
            w.name, w.packets
        ),
        ("content rules", "Gbit/s"),
        &series,
        (true, false),
        1.8,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suricata_configuration() {
        let y = suricata_yaml(true);
        assert!(y.starts_with("%YAML 1.1\n---\n"));
        assert!(y.contains("filename: eve.json") && !y.contains("app-layer"));
        assert!(y.contains("stats:\n  enabled: no\n"));
        let n = suricata_yaml(false);
        assert!(n.contains("app-layer:\n  protocols:\n    telnet:\n      enabled: no\n"));
        assert_eq!(
            n.matches("enabled: no").count(),
            SURICATA_APP_LAYER.len() + 1
        );
    }

    #[test]
    fn options_and_rows() {
        let args = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let o = parse(&args(&[
            "--streamcap",
            "/bin/sc",
            "--suricata",
            "none",
            "--rules",
            "10,20",
            "--one-cpu",
            "none",
            "w=f.pcap",
        ]))
        .unwrap();
        assert_eq!(o.counts, [10, 20]);
        let (rows, skipped) = rows(&o, Path::new("y"), Path::new("n"));
        // streamcap: auto, aho-corasick, two cutoffs, segments; two loads.
        assert_eq!(rows.len(), 7);
        assert!(rows
            .iter()
            .all(|r| r.kind == Kind::Streamcap && r.pin.is_none()));
        assert_eq!(rows.iter().filter(|r| r.load).count(), 2);
        assert!(rows[0].argv.contains(&"--stats-json".to_string()));
        assert_eq!(skipped.len(), 2);
        assert!(parse(&args(&["--streamcap", "x"])).is_err());
    }

    #[test]
    fn alert_counters() {
        let dir = std::env::temp_dir().join(format!("nidsbench-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let eve = dir.join("eve.json");
        fs::write(
            &eve,
            "{\"event_type\":\"alert\",\"x\":1}\n{\"event_type\":\"stats\"}\n{\"event_type\":\"alert\"}\n",
        )
        .unwrap();
        let a = eve_alerts(&eve);
        assert_eq!((a.total, a.distinct), (Some(2), Some(1)));
        fs::write(
            &eve,
            concat!(
                r#"{"flow_id":7,"event_type":"alert","src_ip":"10.0.0.1","src_port":5,"alert":{"signature_id":1}}"#,
                "\n",
                r#"{"flow_id":7,"event_type":"alert","src_ip":"10.0.0.1","src_port":5,"alert":{"signature_id":1}}"#,
                "\n",
                r#"{"flow_id":7,"event_type":"alert","src_ip":"10.0.0.2","src_port":80,"alert":{"signature_id":1}}"#,
                "\n",
                r#"{"flow_id":7,"event_type":"alert","src_ip":"10.0.0.1","src_port":5,"alert":{"signature_id":2}}"#,
                "\n",
            ),
        )
        .unwrap();
        let a = eve_alerts(&eve);
        assert_eq!((a.total, a.distinct), (Some(4), Some(3)));
        assert_eq!(eve_alerts(&dir.join("missing")), Alerts::default());
        let st = dir.join("stats.json");
        fs::write(
            &st,
            r#"{"packets":5,"nids":{"alerts":42,"streams":3,"signatures":[1]}}"#,
        )
        .unwrap();
        let a = streamcap_alerts(&st);
        assert_eq!((a.total, a.distinct), (Some(42), Some(42)));
        assert_eq!(
            a.stats,
            Some(serde_json::json!({"alerts": 42, "streams": 3}))
        );
        let p = dir.join("load.pcap");
        write_load_pcap(&p).unwrap();
        let (packets, wire) = capinfo::totals(&p).unwrap();
        assert_eq!((packets, wire), (1, 14 + 20 + 8 + 4));
        let _ = fs::remove_dir_all(&dir);
    }
}
