//! `streamcap-bench overload-live`: the *rate vs loss* experiment (Scap
//! Fig. 3 style) on a live interface, for receivers that cannot be paced in
//! process: the trace is replayed by `tcpreplay --mbps` onto one end of a
//! veth pair in a network namespace of its own (`--preload-pcap
//! --timer=nano`), and each receiver captures
//! on the other end, one receiver at a time:
//!
//! - `libnids`: the `nids_analyse` peer (bench/peers), which hashes every
//!   chunk of new data of every TCP stream with SHA-256, `--rounds` times;
//! - `streamcap decoupled`: `streamcap flows -i --digest --analysis-threads 1`;
//! - `streamcap inline`: the same with `--analysis-threads 0`.
//!
//! A stream is *complete* when the live run delivered it as the same
//! receiver does reading the file itself (a reference run):
//!
//! - libnids: same client and server address and port, the same ending
//!   (closed, reset, or still open at the end) and the same bytes in each
//!   direction as a reference stream not yet matched;
//! - streamcap: a TCP record with the same 5-tuple and VLAN and, in both
//!   directions, the same `captured`, `dropped`, `missing` and `sha256` as a
//!   reference record (`streamcap flows -r FILE --digest`) not yet matched.
//!
//! The percentage is of the reference's streams (libnids) or TCP records
//! (streamcap). After each replay the receiver runs until it has been idle
//! (no CPU time used) for half a second, so that it drains the kernel's
//! buffer, and is then stopped with SIGINT.
//!
//! streamcap's `--digest` hashes each direction's bytes once (one streaming
//! SHA-256); `--rounds 1` gives libnids the same cost per byte, and larger
//! values load libnids only.

use crate::live::{spawn_ready, Netns, Running};
use serde::Serialize;
use std::collections::HashMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Parsed options.
struct Opts {
    pcap: PathBuf,
    peers: PathBuf,
    streamcap: PathBuf,
    rounds: u32,
    /// Gbit/s; `None` = tcpreplay's top speed.
    rates: Vec<Option<f64>>,
    json: Option<PathBuf>,
    tmp: PathBuf,
}

fn parse(args: &[String]) -> Result<Opts, String> {
    let mut o = Opts {
        pcap: PathBuf::new(),
        peers: PathBuf::new(),
        streamcap: PathBuf::new(),
        rounds: 1,
        rates: vec![Some(0.2), Some(0.5), Some(1.0), Some(2.0)],
        json: None,
        tmp: std::env::temp_dir(),
    };
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut val = || it.next().cloned().ok_or(format!("{a} needs a value"));
        match a.as_str() {
            "--pcap" => o.pcap = PathBuf::from(val()?),
            "--peers" => o.peers = PathBuf::from(val()?),
            "--streamcap" => o.streamcap = PathBuf::from(val()?),
            "--json" => o.json = Some(PathBuf::from(val()?)),
            "--tmp" => o.tmp = PathBuf::from(val()?),
            "--rounds" => o.rounds = val()?.parse().map_err(|e| format!("--rounds: {e}"))?,
            "--rates" => {
                o.rates = val()?
                    .split(',')
                    .map(|r| match r.trim() {
                        "max" => Ok(None),
                        n => match n.parse::<f64>() {
                            Ok(g) if g > 0.0 && g <= 100.0 => Ok(Some(g)),
                            Ok(g) => Err(format!("--rates {g}: not in (0, 100] Gbit/s")),
                            Err(e) => Err(format!("--rates {n}: {e}")),
                        },
                    })
                    .collect::<Result<_, _>>()?
            }
            other => return Err(format!("unexpected argument {other}")),
        }
    }
    if o.pcap.as_os_str().is_empty()
        || o.peers.as_os_str().is_empty()
        || o.streamcap.as_os_str().is_empty()
    {
        return Err("overload-live needs --pcap FILE, --peers DIR and --streamcap BIN".into());
    }
    if o.rounds == 0 || o.rates.is_empty() {
        return Err("--rounds and --rates must not be zero or empty".into());
    }
    Ok(o)
}

/// A receiver under test.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Receiver {
    Libnids,
    Decoupled,
    Inline,
}

impl Receiver {
    const ALL: [Receiver; 3] = [Receiver::Libnids, Receiver::Decoupled, Receiver::Inline];

    fn name(self) -> &'static str {
        match self {
            Receiver::Libnids => "libnids (nids_analyse)",
            Receiver::Decoupled => "streamcap decoupled (--analysis-threads 1)",
            Receiver::Inline => "streamcap inline (--analysis-threads 0)",
        }
    }
}

/// What one receiver did at one rate.
#[derive(Clone, Debug, Serialize)]
pub struct RunResult {
    /// The receiver.
    pub receiver: String,
    /// Gbit/s asked of tcpreplay (`None` = top speed).
    pub asked_gbps: Option<f64>,
    /// Gbit/s tcpreplay reports it reached (its "Rated" line).
    pub sent_gbps: f64,
    /// Packets tcpreplay sent, and failed to send.
    pub sent_packets: u64,
    /// Packets tcpreplay could not send.
    pub send_failed: u64,
    /// Seconds tcpreplay took, and the CPU seconds it used.
    pub replay_s: f64,
    /// CPU seconds tcpreplay used.
    pub replay_cpu_s: f64,
    /// Packets the veth pair dropped before any socket saw them (the
    /// sender's `tx_dropped` and the receiver's `rx_dropped`).
    pub veth_dropped: u64,
    /// Packets the receiver's socket received (kernel count; None: unknown).
    pub kernel_received: Option<u64>,
    /// Packets the kernel dropped at the receiver's socket (buffer full).
    pub kernel_dropped: Option<u64>,
    /// Streams the receiver reported (libnids: established TCP streams;
    /// streamcap: TCP records).
    pub streams: usize,
    /// Streams delivered as in the reference run.
    pub complete: usize,
    /// Streams of the reference run.
    pub reference: usize,
    /// `complete` as a percentage of `reference`.
    pub complete_pct: f64,
    /// Seconds from the receiver's start to its exit.
    pub wall_s: f64,
    /// CPU seconds the receiver used.
    pub cpu_s: f64,
}

/// The whole experiment, as `--json` writes it.
#[derive(Clone, Debug, Serialize)]
struct Report {
    pcap: String,
    rounds: u32,
    load_before: String,
    trace_packets: u64,
    trace_wire_bytes: u64,
    runs: Vec<RunResult>,
}

/// True when this process runs as root (effective uid 0).
fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("Uid:"))
                .and_then(|l| l.split_whitespace().nth(1).map(|u| u == "0"))
        })
        .unwrap_or(false)
}

/// utime + stime of a process (`self` or a pid), and with `children` also
/// those of its waited-for children, in seconds.
fn cpu_of(pid: &str, children: bool) -> Option<f64> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = s.rsplit_once(") ").map(|(_, r)| r)?;
    let f: Vec<f64> = rest
        .split_whitespace()
        .map(|v| v.parse().unwrap_or(0.0))
        .collect();
    let at = |i: usize| f.get(i).copied().unwrap_or(0.0);
    // After the command name: utime, stime, cutime, cstime are fields 12-15
    // (0-based 11-14).
    let t = at(11) + at(12) + if children { at(13) + at(14) } else { 0.0 };
    Some(t / 100.0)
}

/// A veth counter inside the namespace.
fn veth_counter(ns: &Netns, dev: &str, name: &str) -> u64 {
    ns.cmd(&["cat", &format!("/sys/class/net/{dev}/statistics/{name}")])
        .output()
        .ok()
        .and_then(|o| String::from_utf8_lossy(&o.stdout).trim().parse().ok())
        .unwrap_or(0)
}

fn veth_dropped(ns: &Netns) -> u64 {
    veth_counter(ns, "sca", "tx_dropped") + veth_counter(ns, "scb", "rx_dropped")
}

/// What tcpreplay reported.
#[derive(Clone, Debug, Serialize)]
pub struct Sent {
    /// Packets sent.
    pub packets: u64,
    /// Packets it could not send.
    pub failed: u64,
    /// Seconds it took to send them.
    pub seconds: f64,
    /// Gbit/s it reached (its "Rated" line).
    pub gbps: f64,
    /// Packets per second it reached.
    pub pps: f64,
    /// CPU seconds it used (its rusage), preloading the file included.
    pub cpu_s: f64,
}

/// Reads tcpreplay's summary.
fn parse_tcpreplay(text: &str) -> Sent {
    // "Actual: N packets (B bytes) sent in T seconds"
    // "Rated: X Bps, Y Mbps, Z pps"
    // "Failed packets:            F"
    let mut s = Sent {
        packets: 0,
        failed: 0,
        seconds: 0.0,
        gbps: 0.0,
        pps: 0.0,
        cpu_s: 0.0,
    };
    for l in text.lines().map(str::trim) {
        if let Some(r) = l.strip_prefix("Actual:") {
            let w: Vec<&str> = r.split_whitespace().collect();
            s.packets = w.first().and_then(|n| n.parse().ok()).unwrap_or(0);
            s.seconds = w
                .iter()
                .position(|x| *x == "in")
                .and_then(|i| w.get(i + 1))
                .and_then(|n| n.parse().ok())
                .unwrap_or(0.0);
        } else if let Some(r) = l.strip_prefix("Rated:") {
            let rated = |unit: &str| {
                r.split(", ")
                    .find_map(|p| p.trim().strip_suffix(unit))
                    .and_then(|n| n.trim().parse::<f64>().ok())
            };
            s.gbps = rated(" Mbps").map_or(0.0, |m| m / 1000.0);
            s.pps = rated(" pps").unwrap_or(0.0);
        } else if let Some(r) = l.strip_prefix("Failed packets:") {
            s.failed = r.trim().parse().unwrap_or(0);
        }
    }
    s
}

/// Replays the trace on `sca` at `gbps` (None: top speed).
fn replay(ns: &Netns, pcap: &Path, gbps: Option<f64>) -> Result<Sent, String> {
    let rate = match gbps {
        Some(g) => format!("--mbps={:.1}", g * 1000.0),
        None => "--topspeed".into(),
    };
    tcpreplay(ns, pcap, &rate, None)
}

/// The CPU seconds of this process's waited-for children (their rusage).
pub(crate) fn children_cpu() -> f64 {
    cpu_of("self", true).unwrap_or(0.0) - cpu_of("self", false).unwrap_or(0.0)
}

/// Replays the trace on `sca` with `tcpreplay --preload-pcap --timer=nano`
/// and the rate option `rate` (`--mbps=X`, `--pps=N` or `--topspeed`), at
/// most `limit` packets of it (`--limit`).
pub(crate) fn tcpreplay(
    ns: &Netns,
    pcap: &Path,
    rate: &str,
    limit: Option<u64>,
) -> Result<Sent, String> {
    let limit = limit.map(|n| format!("--limit={n}"));
    let mut args = vec![
        "tcpreplay",
        "--intf1=sca",
        "--preload-pcap",
        // Sleeps between packets instead of tcpreplay's default busy
        // wait on gettimeofday, which takes a whole core at any rate.
        "--timer=nano",
        rate,
    ];
    args.extend(limit.as_deref());
    args.push(pcap.to_str().unwrap_or_default());
    let cpu0 = children_cpu();
    let out = ns
        .cmd(&args)
        .output()
        .map_err(|e| format!("cannot run tcpreplay: {e}"))?;
    let cpu1 = children_cpu();
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    if !out.status.success() {
        return Err(format!("tcpreplay failed: {text}"));
    }
    let mut s = parse_tcpreplay(&text);
    s.cpu_s = (cpu1 - cpu0).max(0.0);
    Ok(s)
}

/// Where a receiver writes its output for one run.
fn out_path(o: &Opts, r: Receiver) -> PathBuf {
    let name = match r {
        Receiver::Libnids => "overload-live-nids.txt",
        Receiver::Decoupled | Receiver::Inline => "overload-live-flows.jsonl",
    };
    o.tmp.join(format!("{}-{name}", std::process::id()))
}

fn stats_path(o: &Opts) -> PathBuf {
    o.tmp
        .join(format!("{}-overload-live-stats.json", std::process::id()))
}

/// Starts the receiver on `scb`; returns when it is capturing.
fn start(ns: &Netns, o: &Opts, r: Receiver) -> Result<Running, String> {
    let out = out_path(o, r);
    let out = out.to_str().unwrap_or_default();
    let rounds = o.rounds.to_string();
    let nids = o.peers.join("nids_analyse");
    let sc = o.streamcap.to_str().unwrap_or_default();
    let stats = stats_path(o);
    let stats = stats.to_str().unwrap_or_default();
    let cmd = match r {
        Receiver::Libnids => ns.cmd(&[
            nids.to_str().unwrap_or_default(),
            "-i",
            "scb",
            "-n",
            &rounds,
            "-s",
            out,
        ]),
        Receiver::Decoupled | Receiver::Inline => ns.cmd(&[
            sc,
            "flows",
            "-i",
            "scb",
            "--digest",
            "--analysis-threads",
            if r == Receiver::Inline { "0" } else { "1" },
            "-o",
            out,
            "--stats-json",
            stats,
        ]),
    };
    spawn_ready(cmd, r.name(), "capturing on")
}

/// Waits until the receiver has used no CPU for half a second (it has
/// drained the socket's buffer; at most 120 s), stops it with SIGINT and
/// returns (its stderr, wall seconds, CPU seconds). The CPU seconds are its
/// rusage, its exit included (this process's children's times across the
/// wait; nothing else may be reaped meanwhile), else the last sample of
/// /proc/PID/stat before SIGINT.
pub(crate) fn stop(mut run: Running) -> (String, f64, f64) {
    let pid = run.child.id().to_string();
    let limit = Instant::now() + Duration::from_secs(120);
    let mut last = cpu_of(&pid, false).unwrap_or(0.0);
    loop {
        std::thread::sleep(Duration::from_millis(500));
        let now = cpu_of(&pid, false).unwrap_or(0.0);
        if now - last < 0.015 || Instant::now() > limit {
            last = now;
            break;
        }
        last = now;
    }
    let before = children_cpu();
    let _ = Command::new("kill").args(["-INT", &pid]).status();
    let mut text = String::new();
    let _ = run.err.read_to_string(&mut text);
    let waited = run.child.wait().is_ok();
    let used = children_cpu() - before;
    let cpu = if waited && used >= last - 0.02 {
        used
    } else {
        last
    };
    (text, run.started.elapsed().as_secs_f64(), cpu)
}

/// One libnids stream: (client, server, end) and the bytes each side sent.
type NidsKey = String;

/// Reads nids_analyse's stream list: key "CIP CPORT SIP SPORT END" ->
/// the (to_server, to_client) byte counts of each stream with that key.
fn read_nids(path: &Path) -> Result<HashMap<NidsKey, Vec<(u64, u64)>>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut m: HashMap<NidsKey, Vec<(u64, u64)>> = HashMap::new();
    for (i, l) in text.lines().enumerate() {
        let w: Vec<&str> = l.split_whitespace().collect();
        let (Some(key), Some(a), Some(b)) = (
            w.get(..5).map(|k| k.join(" ")),
            w.get(5).and_then(|n| n.parse().ok()),
            w.get(6).and_then(|n| n.parse().ok()),
        ) else {
            return Err(format!(
                "{} line {}: not a stream: {l}",
                path.display(),
                i + 1
            ));
        };
        m.entry(key).or_default().push((a, b));
    }
    Ok(m)
}

/// What decides whether a streamcap record is complete: per direction,
/// captured, dropped, missing and sha256.
type Sig = Vec<serde_json::Value>;

/// Reads streamcap's TCP records: key (5-tuple and VLAN) -> signatures.
fn read_flows(path: &Path) -> Result<HashMap<String, Vec<Sig>>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut m: HashMap<String, Vec<Sig>> = HashMap::new();
    for (i, l) in text.lines().enumerate() {
        let v: serde_json::Value = serde_json::from_str(l)
            .map_err(|e| format!("{} line {}: {e}", path.display(), i + 1))?;
        if v["proto"] != "tcp" {
            continue;
        }
        let key = format!(
            "{} {} {} {} {}",
            v["src_ip"], v["src_port"], v["dst_ip"], v["dst_port"], v["vlan"]
        );
        let mut sig = Vec::new();
        for d in ["orig", "resp"] {
            for f in ["captured", "dropped", "missing", "sha256"] {
                sig.push(v[d][f].clone());
            }
        }
        m.entry(key).or_default().push(sig);
    }
    Ok(m)
}

/// (streams in `live`, those matching an unmatched stream of `reference`,
/// streams in `reference`).
fn matched<T: PartialEq + Clone>(
    reference: &HashMap<String, Vec<T>>,
    live: &HashMap<String, Vec<T>>,
) -> (usize, usize, usize) {
    let mut complete = 0;
    for (k, items) in live {
        let mut left: Vec<T> = reference.get(k).cloned().unwrap_or_default();
        for it in items {
            if let Some(i) = left.iter().position(|x| x == it) {
                left.swap_remove(i);
                complete += 1;
            }
        }
    }
    let count = |m: &HashMap<String, Vec<T>>| m.values().map(Vec::len).sum();
    (count(live), complete, count(reference))
}

/// The number after `key=` in a nids_analyse stderr line.
pub(crate) fn field(text: &str, key: &str) -> Option<u64> {
    text.split_whitespace()
        .find_map(|w| w.strip_prefix(key))
        .and_then(|n| n.parse().ok())
}

/// Why the experiment `name` cannot replay here (not root, no
/// tcpreplay), if it cannot.
pub(crate) fn cannot_replay(name: &str) -> Option<String> {
    if !is_root() {
        return Some(format!(
            "{name} needs root (network namespace and veth pair)"
        ));
    }
    match Command::new("tcpreplay").arg("--version").output() {
        Ok(out) if out.status.success() => None,
        _ => Some("tcpreplay is not installed (scripts/install-deps.sh --bench)".into()),
    }
}

/// The libnids peer `nids_analyse` in `peers`, or why it is not there.
pub(crate) fn nids_analyse(peers: &Path) -> Result<PathBuf, String> {
    let nids = peers.join("nids_analyse");
    if nids.is_file() {
        Ok(nids)
    } else {
        Err(format!(
            "{} not found (bench/run.sh builds it: cc bench/peers/nids_analyse.c -lnids -lpcap -lcrypto)",
            nids.display()
        ))
    }
}

/// Runs the experiment and prints the tables.
pub fn cmd_overload_live(args: &[String]) -> Result<(), String> {
    let o = parse(args)?;
    if let Some(why) = cannot_replay("overload-live") {
        println!("skipped: {why}");
        return Ok(());
    }
    let nids = nids_analyse(&o.peers)?;
    let load_before = std::fs::read_to_string("/proc/loadavg")
        .unwrap_or_default()
        .trim()
        .to_string();

    // References: each receiver reading the file itself.
    let nids_ref_path = o.tmp.join(format!("{}-nids-ref.txt", std::process::id()));
    let st = Command::new(&nids)
        .args(["-r", o.pcap.to_str().unwrap_or_default(), "-n", "1", "-s"])
        .arg(&nids_ref_path)
        .stdout(Stdio::null())
        .status()
        .map_err(|e| format!("cannot run {}: {e}", nids.display()))?;
    if !st.success() {
        return Err(format!("{} -r {} failed", nids.display(), o.pcap.display()));
    }
    let nids_ref = read_nids(&nids_ref_path)?;
    let flows_ref_path = o
        .tmp
        .join(format!("{}-flows-ref.jsonl", std::process::id()));
    let ref_stats = stats_path(&o);
    let st = Command::new(&o.streamcap)
        .args(["flows", "-q", "--digest", "-r"])
        .arg(&o.pcap)
        .arg("-o")
        .arg(&flows_ref_path)
        .arg("--stats-json")
        .arg(&ref_stats)
        .status()
        .map_err(|e| format!("cannot run {}: {e}", o.streamcap.display()))?;
    if !st.success() {
        return Err(format!("streamcap flows -r {} failed", o.pcap.display()));
    }
    let flows_ref = read_flows(&flows_ref_path)?;
    let stats: serde_json::Value = std::fs::read_to_string(&ref_stats)
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or_default();
    let trace_packets = stats["packets"]["read"].as_u64().unwrap_or(0);
    let trace_wire_bytes = stats["wire_bytes"].as_u64().unwrap_or(0);
    let _ = std::fs::remove_file(&nids_ref_path);
    let _ = std::fs::remove_file(&flows_ref_path);

    let ns = Netns::new()?;
    let mut runs = Vec::new();
    for &rate in &o.rates {
        for r in Receiver::ALL {
            let out = out_path(&o, r);
            let _ = std::fs::remove_file(&out);
            let _ = std::fs::remove_file(stats_path(&o));
            let veth0 = veth_dropped(&ns);
            let running = start(&ns, &o, r)?;
            let sent = replay(&ns, &o.pcap, rate);
            let (text, wall_s, cpu_s) = stop(running);
            let sent = sent?;
            let veth = veth_dropped(&ns).saturating_sub(veth0);
            let ((streams, complete, reference), received, dropped) = match r {
                Receiver::Libnids => {
                    let pcap_line = text.lines().find(|l| l.starts_with("pcap:"));
                    (
                        matched(&nids_ref, &read_nids(&out)?),
                        pcap_line.and_then(|l| field(l, "received=")),
                        pcap_line.and_then(|l| field(l, "dropped=")),
                    )
                }
                Receiver::Decoupled | Receiver::Inline => {
                    let s: serde_json::Value = std::fs::read_to_string(stats_path(&o))
                        .ok()
                        .and_then(|t| serde_json::from_str(&t).ok())
                        .unwrap_or_default();
                    (
                        matched(&flows_ref, &read_flows(&out)?),
                        s["kernel"]["received"].as_u64(),
                        s["kernel"]["dropped"].as_u64(),
                    )
                }
            };
            let _ = std::fs::remove_file(&out);
            let run = RunResult {
                receiver: r.name().into(),
                asked_gbps: rate,
                sent_gbps: sent.gbps,
                sent_packets: sent.packets,
                send_failed: sent.failed,
                replay_s: sent.seconds,
                replay_cpu_s: sent.cpu_s,
                veth_dropped: veth,
                kernel_received: received,
                kernel_dropped: dropped,
                streams,
                complete,
                reference,
                complete_pct: 100.0 * complete as f64 / reference.max(1) as f64,
                wall_s,
                cpu_s,
            };
            eprintln!(
                "streamcap-bench: {} at {}: sent {:.3} Gbit/s, {}/{} streams complete, kernel drops {}, veth drops {}",
                run.receiver,
                rate.map_or("top speed".into(), |g| format!("{g} Gbit/s")),
                run.sent_gbps,
                run.complete,
                run.reference,
                run.kernel_dropped.map_or("unknown".into(), |d| d.to_string()),
                run.veth_dropped
            );
            runs.push(run);
        }
    }
    let _ = std::fs::remove_file(stats_path(&o));
    let report = Report {
        pcap: o.pcap.display().to_string(),
        rounds: o.rounds,
        load_before,
        trace_packets,
        trace_wire_bytes,
        runs,
    };
    print_markdown(&report);
    if let Some(j) = &o.json {
        let text = serde_json::to_string_pretty(&report).map_err(|e| e.to_string())?;
        std::fs::write(j, text + "\n").map_err(|e| format!("{}: {e}", j.display()))?;
    }
    Ok(())
}

fn print_markdown(r: &Report) {
    println!();
    println!(
        "## Rate vs loss on a veth pair (tcpreplay) — {} ({} packets, {:.1} MB on the wire)",
        r.pcap,
        r.trace_packets,
        r.trace_wire_bytes as f64 / 1e6
    );
    println!();
    println!(
        "Analysis: SHA-256 of every delivered chunk, {} round(s) for libnids; one streaming SHA-256 per direction for streamcap (`--digest`). Load average before: {}.",
        r.rounds, r.load_before
    );
    println!();
    let rates: Vec<Option<f64>> = r.runs.iter().fold(Vec::new(), |mut v, x| {
        if !v.contains(&x.asked_gbps) {
            v.push(x.asked_gbps);
        }
        v
    });
    print!("| Gbit/s asked |");
    for rc in Receiver::ALL {
        print!(" {} complete % | sent Gbit/s | kernel drops |", rc.name());
    }
    println!();
    println!("|---:|{}", "---:|---:|---:|".repeat(Receiver::ALL.len()));
    let drops = |d: Option<u64>| d.map_or("unknown".into(), |d| d.to_string());
    for rate in rates {
        print!(
            "| {} |",
            rate.map_or("top speed".into(), |g| format!("{g}"))
        );
        for rc in Receiver::ALL {
            match r
                .runs
                .iter()
                .find(|x| x.asked_gbps == rate && x.receiver == rc.name())
            {
                Some(x) => print!(
                    " {:.1} | {:.3} | {} |",
                    x.complete_pct,
                    x.sent_gbps,
                    drops(x.kernel_dropped)
                ),
                None => print!(" – | – | – |"),
            }
        }
        println!();
    }
    println!();
    println!("| receiver | Gbit/s asked | sent Gbit/s | replay s | replay CPU s | packets sent | veth drops | kernel received | kernel drops | streams | complete / reference | wall s | CPU s |");
    println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for x in &r.runs {
        println!(
            "| {} | {} | {:.3} | {:.2} | {:.2} | {} | {} | {} | {} | {} | {} / {} | {:.2} | {:.2} |",
            x.receiver,
            x.asked_gbps.map_or("top".into(), |g| format!("{g}")),
            x.sent_gbps,
            x.replay_s,
            x.replay_cpu_s,
            x.sent_packets,
            x.veth_dropped,
            x.kernel_received.map_or("unknown".into(), |d| d.to_string()),
            drops(x.kernel_dropped),
            x.streams,
            x.complete,
            x.reference,
            x.wall_s,
            x.cpu_s
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matching_counts_each_reference_stream_once() {
        let mut reference: HashMap<String, Vec<u32>> = HashMap::new();
        reference.insert("a".into(), vec![1, 1, 2]);
        reference.insert("b".into(), vec![3]);
        let mut live: HashMap<String, Vec<u32>> = HashMap::new();
        // Three copies of 1 against two in the reference; 4 is not there;
        // "c" is not in the reference at all.
        live.insert("a".into(), vec![1, 1, 1, 4]);
        live.insert("c".into(), vec![3]);
        assert_eq!(matched(&reference, &live), (5, 2, 4));
    }

    #[test]
    fn options_are_checked() {
        let a = |s: &str| s.split(' ').map(String::from).collect::<Vec<_>>();
        assert!(parse(&a("--pcap x --peers p")).is_err());
        let o = parse(&a(
            "--pcap x --peers p --streamcap s --rates 0.2,max --rounds 3",
        ));
        let o = o.ok();
        assert_eq!(
            o.as_ref().map(|o| o.rates.clone()),
            Some(vec![Some(0.2), None])
        );
        assert_eq!(o.map(|o| o.rounds), Some(3));
        assert!(parse(&a("--pcap x --peers p --streamcap s --rates 0")).is_err());
    }

    #[test]
    fn tcpreplay_and_peer_fields_are_read() {
        let t = "Actual: 200000 packets (123000000 bytes) sent in 4.92 seconds\n\
                 Rated: 25000000.0 Bps, 200.00 Mbps, 40650.40 pps\n\
                 \tFailed packets:            7\n";
        let s = parse_tcpreplay(t);
        assert_eq!((s.packets, s.failed), (200000, 7));
        assert!((s.seconds - 4.92).abs() < 1e-9 && (s.gbps - 0.2).abs() < 1e-9);
        assert_eq!(
            field("pcap: received=10 dropped=3 ifdropped=0", "dropped="),
            Some(3)
        );
    }
}
