//! `streamcap-bench attacks`: every adversarial profile of streamcap-gen
//! (and the `normal` baseline of the same size) through `streamcap streams`
//! and `streamcap flows` with a fixed memory budget, checked against the
//! bounds the project promises:
//!
//! * stream-data peak ≤ the configured budget (`--memory`);
//! * peak RSS ≤ budget + the defragmenter's limit + a fixed overhead, the
//!   overhead being measured on an empty capture and on `normal` (see
//!   [`Overhead`]); fragments held for reassembly are bounded by their own
//!   limit (`DefragConfig::max_bytes`), not by the budget;
//! * throughput (packets/s) ≥ 50 % of `normal`'s, in both modes. Each
//!   profile's runs alternate with runs of `normal` (normal, attack,
//!   normal, attack, …), and its ratio is taken against the median of those
//!   paired `normal` runs: on a shared machine whose speed drifts by tens of
//!   percent within minutes, a baseline measured once at the start compared
//!   the attack with the machine's state minutes earlier;
//! * the byte accounting invariant (`stream bytes = captured + discarded +
//!   dropped + missing`) in the summary.
//!
//! The result is a report: the command exits 0 even when a bound fails and
//! marks the row `FAIL (why)`.

use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::Instant;

use serde::Serialize;
use streamcap_gen::attack::{generate_file, Profile};
use streamcap_gen::{Campus, PcapWriter};

use crate::runner::{parse_time, timed_command, which};

const MIB: u64 = 1 << 20;
/// Allocator and measurement slack added to the measured overhead, bytes.
const SLACK: u64 = 8 * MIB;
/// The most memory the defragmenter holds (streamcap's default
/// `DefragConfig::max_bytes`; the command line has no option for it).
fn defrag_limit() -> u64 {
    streamcap::decode::defrag::DefragConfig::default().max_bytes as u64
}

/// Lowest acceptable throughput relative to `normal`.
const MIN_RATIO: f64 = 0.5;

struct Opts {
    streamcap: PathBuf,
    packets: u64,
    memory: u64,
    runs: usize,
    json: Option<PathBuf>,
    tmp: Option<PathBuf>,
    seed: u64,
}

fn parse(args: &[String]) -> Result<Opts, String> {
    let mut o = Opts {
        streamcap: PathBuf::new(),
        packets: 200_000,
        memory: 32 * MIB,
        runs: 3,
        json: None,
        tmp: None,
        seed: 1,
    };
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut val = || it.next().cloned().ok_or(format!("{a} needs a value"));
        match a.as_str() {
            "--streamcap" => o.streamcap = PathBuf::from(val()?),
            "--packets" => o.packets = val()?.parse().map_err(|e| format!("--packets: {e}"))?,
            "--memory" => o.memory = val()?.parse().map_err(|e| format!("--memory: {e}"))?,
            "--runs" => o.runs = val()?.parse().map_err(|e| format!("--runs: {e}"))?,
            "--seed" => o.seed = val()?.parse().map_err(|e| format!("--seed: {e}"))?,
            "--json" => o.json = Some(PathBuf::from(val()?)),
            "--tmp" => o.tmp = Some(PathBuf::from(val()?)),
            other => return Err(format!("unexpected argument {other}")),
        }
    }
    if o.streamcap.as_os_str().is_empty() {
        return Err("missing --streamcap BIN".into());
    }
    if o.packets == 0 {
        return Err("--packets must be positive".into());
    }
    o.runs = o.runs.max(1);
    Ok(o)
}

/// What streamcap's stderr summary says.
#[derive(Serialize, Clone, Debug, Default, PartialEq)]
pub struct Summary {
    /// Packets read.
    pub packets: u64,
    /// Flows created.
    pub flows: u64,
    /// Flows ended, all reasons.
    pub flows_ended: u64,
    /// Flows evicted (flow table full).
    pub evicted: u64,
    /// Stream bytes.
    pub stream_bytes: u64,
    /// Captured (delivered) bytes.
    pub captured: u64,
    /// Discarded bytes.
    pub discarded: u64,
    /// Dropped bytes (budget).
    pub dropped: u64,
    /// Missing bytes.
    pub missing: u64,
    /// Stream-data peak, bytes (as printed: 3 significant digits).
    pub memory_peak: f64,
    /// Stream-data budget, bytes (as printed).
    pub memory_limit: f64,
    /// Budget refusals.
    pub refusals: u64,
    /// IP fragments seen (0 when the summary has no `fragments` line).
    pub fragments: u64,
    /// Fragments carried in reassembled datagrams.
    pub fragments_reassembled: u64,
    /// Fragments dropped (incomplete, evicted, malformed, over a limit).
    pub fragments_dropped: u64,
}

impl Summary {
    /// Whether the byte accounting adds up.
    pub fn invariant_holds(&self) -> bool {
        self.stream_bytes == self.captured + self.discarded + self.dropped + self.missing
    }

    /// Whether every IP fragment is accounted for: in a reassembled
    /// datagram or dropped (nothing is held at the end of a run).
    pub fn fragments_accounted(&self) -> bool {
        self.fragments == self.fragments_reassembled + self.fragments_dropped
    }
}

/// The first integer in `s` (digits only).
fn first_int(s: &str) -> Option<u64> {
    s.split(|c: char| !c.is_ascii_digit())
        .find(|w| !w.is_empty())?
        .parse()
        .ok()
}

/// The integer after `word ` in `s` (`"evicted 12"` → 12).
fn int_after(s: &str, word: &str) -> Option<u64> {
    let at = s.find(word)? + word.len();
    first_int(&s[at..])
}

/// streamcap's human size in bytes, from the number token and the unit
/// token that follows it: binary units as the summary's memory line prints
/// them (`"32 MiB"`, `"6.2 KiB"`, `"512 B"`), decimal ones as its bytes
/// line does (`"1.05 MB"`, `"3.4 kB"`).
pub(crate) fn human_bytes(num: &str, unit: &str) -> Option<f64> {
    let n: f64 = num.parse().ok()?;
    let m = match unit.trim_end_matches(',') {
        "B" => 1.0,
        "kB" => 1e3,
        "MB" => 1e6,
        "GB" => 1e9,
        "KiB" => 1024.0,
        "MiB" => 1024.0 * 1024.0,
        "GiB" => 1024.0 * 1024.0 * 1024.0,
        _ => return None,
    };
    Some((n * m).round())
}

/// Parses the `packets`, `flows`, `streams` and `memory` lines of
/// streamcap's summary, and its `fragments` line when there is one (crates/streamcap-cli/src/run.rs `summary`).
pub fn parse_summary(text: &str) -> Option<Summary> {
    let mut s = Summary::default();
    let mut seen = 0;
    for l in text.lines() {
        let l = l.trim_start();
        if let Some(r) = l.strip_prefix("packets ") {
            s.packets = first_int(r)?;
            seen += 1;
        } else if let Some(r) = l.strip_prefix("flows ") {
            s.flows = first_int(r)?;
            let (_, ended) = r.split_once("ended:")?;
            s.flows_ended = ended.split(',').filter_map(first_int).sum();
            s.evicted = int_after(ended, "evicted")?;
            seen += 1;
        } else if let Some(r) = l.strip_prefix("streams ") {
            let (_, r) = r.split_once(':')?;
            s.stream_bytes = first_int(r)?;
            s.captured = int_after(r, "captured")?;
            s.discarded = int_after(r, "discarded")?;
            s.dropped = int_after(r, "dropped")?;
            s.missing = int_after(r, "missing")?;
            seen += 1;
        } else if let Some(r) = l.strip_prefix("memory ") {
            let w: Vec<&str> = r.split_whitespace().collect();
            let peak = w.iter().position(|t| *t == "peak")?;
            s.memory_peak = human_bytes(w.get(peak + 1)?, w.get(peak + 2)?)?;
            let the = w.iter().position(|t| *t == "the")?;
            s.memory_limit = human_bytes(w.get(the + 1)?, w.get(the + 2)?)?;
            s.refusals = int_after(r, "budget,")?;
            seen += 1;
        } else if let Some(r) = l.strip_prefix("fragments ") {
            // "N = R in D reassembled datagrams + X dropped (n reason, ...); ..."
            s.fragments = first_int(r)?;
            s.fragments_reassembled = int_after(r, "=")?;
            s.fragments_dropped = int_after(r, "datagrams +")?;
        }
    }
    (seen == 4).then_some(s)
}

/// One streamcap mode on one file, over `runs` runs.
#[derive(Serialize, Clone, Debug)]
pub struct ModeResult {
    /// `streams` or `flows`.
    pub mode: String,
    /// Median wall time, s.
    pub median_wall_s: f64,
    /// Packets per second at the median wall time.
    pub pps: f64,
    /// Highest peak RSS over the runs, KiB.
    pub max_rss_kib: Option<u64>,
    /// The last run's summary.
    pub summary: Summary,
    /// Median packets per second of the `normal` runs that alternated with
    /// these runs (the ratio's denominator); `None` for `normal` itself.
    pub paired_normal_pps: Option<f64>,
}

/// One profile's row.
#[derive(Serialize, Clone, Debug)]
pub struct Row {
    /// Profile name.
    pub profile: String,
    /// What the traffic is.
    pub description: String,
    /// Packets in the pcap.
    pub packets: u64,
    /// Size of the pcap, bytes.
    pub pcap_bytes: u64,
    /// The RSS bound for this file: budget + defragmenter limit
    /// + allowance.
    pub rss_bound: u64,
    /// `streamcap streams`.
    pub streams: ModeResult,
    /// `streamcap flows`.
    pub flows: ModeResult,
    /// streams pps / the paired normal runs' pps.
    pub streams_ratio: f64,
    /// flows pps / the paired normal runs' pps.
    pub flows_ratio: f64,
    /// Bounds that failed (empty: pass).
    pub failures: Vec<String>,
}

/// How the RSS bound is derived.
#[derive(Serialize, Clone, Debug)]
pub struct Overhead {
    /// Peak RSS of `streamcap streams` on an empty capture, bytes.
    pub empty_rss: u64,
    /// Peak RSS of `streamcap streams` and `flows` on `normal` minus its
    /// stream-data peak, bytes.
    pub normal_rss_minus_data: u64,
    /// The allowance: the larger of the two, plus [`SLACK`].
    pub allowance: u64,
}

#[derive(Serialize)]
struct Report {
    packets: u64,
    memory_budget: u64,
    runs: usize,
    seed: u64,
    overhead: Overhead,
    rows: Vec<Row>,
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    match v.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

/// Runs `streamcap MODE --memory M -r FILE` once (summary on; records to
/// a scratch file).
fn run_once(
    o: &Opts,
    mode: &str,
    file: &Path,
    tmp: &Path,
    gnu_time: Option<&Path>,
    series: &mut Series,
) -> Result<(), String> {
    let argv: Vec<String> = vec![
        o.streamcap.display().to_string(),
        mode.into(),
        "--memory".into(),
        o.memory.to_string(),
        "-r".into(),
        file.display().to_string(),
    ];
    let (out, err, time) = (tmp.join("stdout"), tmp.join("stderr"), tmp.join("time"));
    let _ = fs::remove_file(&time);
    let mut cmd = timed_command(&argv, gnu_time, &time, &out, &err)?;
    let start = Instant::now();
    let status = cmd.status().map_err(|e| format!("{}: {e}", argv[0]))?;
    series.walls.push(start.elapsed().as_secs_f64());
    let mut text = String::new();
    let _ = fs::File::open(&err).and_then(|mut f| f.read_to_string(&mut text));
    let _ = fs::remove_file(&out);
    if !status.success() {
        let tail: Vec<&str> = text.lines().rev().take(3).collect();
        return Err(format!(
            "{} exited with {status}: {}",
            argv.join(" "),
            tail.join(" / ")
        ));
    }
    series.summary = Some(
        parse_summary(&text).ok_or_else(|| format!("{}: no summary on stderr", argv.join(" ")))?,
    );
    if let Some((_, _, _, m)) = fs::read_to_string(&time).ok().and_then(|t| parse_time(&t)) {
        series.rss = Some(series.rss.map_or(m, |r: u64| r.max(m)));
    }
    Ok(())
}

/// The runs of one mode on one file, as they accumulate.
#[derive(Default)]
struct Series {
    walls: Vec<f64>,
    rss: Option<u64>,
    summary: Option<Summary>,
}

impl Series {
    fn result(self, mode: &str, packets: u64, paired_normal_pps: Option<f64>) -> ModeResult {
        let wall = median(self.walls);
        ModeResult {
            mode: mode.into(),
            median_wall_s: wall,
            pps: packets as f64 / wall,
            max_rss_kib: self.rss,
            summary: self.summary.unwrap_or_default(),
            paired_normal_pps,
        }
    }
}

/// A file to run: its path and packet count.
struct Workload<'a> {
    file: &'a Path,
    packets: u64,
}

/// `runs` runs of `mode` on `w`; with a `baseline`, each run follows one of
/// the baseline (normal, attack, normal, attack, …) and the result carries
/// the baseline runs' median rate.
fn measure(
    o: &Opts,
    mode: &str,
    w: &Workload<'_>,
    baseline: Option<&Workload<'_>>,
    tmp: &Path,
    gnu_time: Option<&Path>,
) -> Result<ModeResult, String> {
    let (mut own, mut paired) = (Series::default(), Series::default());
    for _ in 0..o.runs {
        if let Some(b) = baseline {
            run_once(o, mode, b.file, tmp, gnu_time, &mut paired)?;
        }
        run_once(o, mode, w.file, tmp, gnu_time, &mut own)?;
    }
    let paired = baseline.map(|b| paired.result(mode, b.packets, None).pps);
    Ok(own.result(mode, w.packets, paired))
}

fn scratch_dir(o: &Opts) -> PathBuf {
    if let Some(t) = &o.tmp {
        return t.clone();
    }
    let shm = Path::new("/dev/shm");
    let base = if fs::metadata(shm).is_ok_and(|m| m.is_dir() && !m.permissions().readonly()) {
        shm.to_path_buf()
    } else {
        std::env::temp_dir()
    };
    base.join(format!("streamcap-attacks-{}", std::process::id()))
}

fn mib(b: f64) -> String {
    format!("{:.1} MiB", b / MIB as f64)
}

/// `streamcap-bench attacks ...`.
pub fn cmd_attacks(args: &[String]) -> Result<(), String> {
    let o = parse(args)?;
    let tmp = scratch_dir(&o);
    fs::create_dir_all(&tmp).map_err(|e| format!("{}: {e}", tmp.display()))?;
    let res = run_all(&o, &tmp);
    if o.tmp.is_none() {
        let _ = fs::remove_dir_all(&tmp);
    }
    res
}

fn run_all(o: &Opts, tmp: &Path) -> Result<(), String> {
    let gnu_time = which("/usr/bin/time");
    if gnu_time.is_none() {
        eprintln!(
            "streamcap-bench: /usr/bin/time missing (apt-get install time): RSS not measured, \
             the RSS bound is not checked"
        );
    }
    // The empty run: a pcap header and nothing else.
    let empty = tmp.join("empty.pcap");
    let f = fs::File::create(&empty).map_err(|e| format!("{}: {e}", empty.display()))?;
    PcapWriter::with_config(f, Campus::pcap_config())
        .map_err(|e| format!("{}: {e}", empty.display()))?;
    let empty_run = measure(
        o,
        "streams",
        &Workload {
            file: &empty,
            packets: 0,
        },
        None,
        tmp,
        gnu_time.as_deref(),
    )?;
    let _ = fs::remove_file(&empty);

    // Normal first (the baseline, kept until the end: every attack's runs
    // alternate with runs of it), then the attacks.
    let mut order = vec![Profile::Normal];
    order.extend(
        Profile::ALL
            .iter()
            .copied()
            .filter(|p| *p != Profile::Normal),
    );
    let normal_file = tmp.join(format!("{}.pcap", Profile::Normal.name()));
    let mut normal_packets = 0;
    let mut measured = Vec::new();
    let mut result = Ok(());
    for p in order {
        let file = tmp.join(format!("{}.pcap", p.name()));
        let st = match generate_file(p, o.packets, o.seed, &file) {
            Ok(st) => st,
            Err(e) => {
                result = Err(format!("generating {}: {e}", file.display()));
                break;
            }
        };
        eprintln!(
            "streamcap-bench: {:<16} {} packets, {:.1} MB: {}",
            p.name(),
            st.packets,
            st.pcap_bytes as f64 / 1e6,
            p.description()
        );
        let w = Workload {
            file: &file,
            packets: st.packets,
        };
        let baseline = if p == Profile::Normal {
            normal_packets = st.packets;
            None
        } else {
            Some(Workload {
                file: &normal_file,
                packets: normal_packets,
            })
        };
        let modes = ["streams", "flows"]
            .map(|m| measure(o, m, &w, baseline.as_ref(), tmp, gnu_time.as_deref()));
        if p != Profile::Normal {
            let _ = fs::remove_file(&file);
        }
        let [streams, flows] = modes;
        let (streams, flows) = match (streams, flows) {
            (Ok(s), Ok(f)) => (s, f),
            (Err(e), _) | (_, Err(e)) => {
                result = Err(e);
                break;
            }
        };
        eprintln!(
            "streamcap-bench:   streams {:.3} s, flows {:.3} s",
            streams.median_wall_s, flows.median_wall_s
        );
        measured.push((p, st.packets, st.pcap_bytes, streams, flows));
    }
    let _ = fs::remove_file(&normal_file);
    result?;
    let Some((_, _, _, ns, nf)) = measured.first().cloned() else {
        return Err("no normal run".into());
    };
    let kib = |k: Option<u64>| k.map(|k| k * 1024);
    let empty_rss = kib(empty_run.max_rss_kib).unwrap_or(0);
    let normal_extra = kib(ns.max_rss_kib.max(nf.max_rss_kib))
        .map_or(0, |r| r.saturating_sub(ns.summary.memory_peak as u64));
    let allowance = empty_rss.max(normal_extra) + SLACK;
    let overhead = Overhead {
        empty_rss,
        normal_rss_minus_data: normal_extra,
        allowance,
    };
    let rows: Vec<Row> = measured
        .into_iter()
        .map(|(p, packets, pcap_bytes, streams, flows)| {
            let rss_bound = o.memory + defrag_limit() + allowance;
            // Against the normal runs paired with this profile's (normal's
            // own row: 1).
            let streams_ratio = streams.pps / streams.paired_normal_pps.unwrap_or(streams.pps);
            let flows_ratio = flows.pps / flows.paired_normal_pps.unwrap_or(flows.pps);
            let mut failures = Vec::new();
            for m in [&streams, &flows] {
                let s = &m.summary;
                if s.memory_peak > o.memory as f64 {
                    failures.push(format!("{}: stream-data peak over budget", m.mode));
                }
                if !s.invariant_holds() {
                    failures.push(format!("{}: invariant", m.mode));
                }
                if !s.fragments_accounted() {
                    failures.push(format!("{}: fragments not accounted for", m.mode));
                }
                if s.flows != s.flows_ended {
                    failures.push(format!("{}: flows created != ended", m.mode));
                }
                if s.packets != packets {
                    failures.push(format!(
                        "{}: read {} of {packets} packets",
                        m.mode, s.packets
                    ));
                }
                if let Some(r) = kib(m.max_rss_kib) {
                    if gnu_time.is_some() && r > rss_bound {
                        failures.push(format!(
                            "{}: RSS {} > bound {}",
                            m.mode,
                            mib(r as f64),
                            mib(rss_bound as f64)
                        ));
                    }
                }
            }
            if streams_ratio < MIN_RATIO {
                failures.push(format!("streams throughput {:.0} %", streams_ratio * 100.0));
            }
            if flows_ratio < MIN_RATIO {
                failures.push(format!("flows throughput {:.0} %", flows_ratio * 100.0));
            }
            Row {
                profile: p.name().into(),
                description: p.description().into(),
                packets,
                pcap_bytes,
                rss_bound,
                streams,
                flows,
                streams_ratio,
                flows_ratio,
                failures,
            }
        })
        .collect();
    print_table(o, &overhead, &rows);
    if let Some(path) = &o.json {
        let report = Report {
            packets: o.packets,
            memory_budget: o.memory,
            runs: o.runs,
            seed: o.seed,
            overhead,
            rows,
        };
        let text = serde_json::to_string_pretty(&report).map_err(|e| e.to_string())?;
        fs::write(path, text + "\n").map_err(|e| format!("{}: {e}", path.display()))?;
        eprintln!("streamcap-bench: wrote {}", path.display());
    }
    Ok(())
}

fn print_table(o: &Opts, ov: &Overhead, rows: &[Row]) {
    let rss = |k: Option<u64>| k.map_or("-".into(), |k| mib(k as f64 * 1024.0));
    // "1041 k (0.66 of 1577 k)": the rate, and its ratio to the paired
    // normal runs' rate.
    let rate = |m: &ModeResult, ratio: f64| match m.paired_normal_pps {
        Some(n) => format!("{:.0} k ({ratio:.2} of {:.0} k)", m.pps / 1e3, n / 1e3),
        None => format!("{:.0} k ({ratio:.2})", m.pps / 1e3),
    };
    println!(
        "\n### Attack profiles: {} packets each, --memory {} ({}), median of {} run(s)\n",
        o.packets,
        o.memory,
        mib(o.memory as f64),
        o.runs
    );
    println!(
        "| attack | packets | pcap | peak RSS streams / flows | RSS bound | budget | stream-data peak | streams pkt/s (× paired normal's) | flows pkt/s (× paired normal's) | delivered | discarded | dropped | missing | refusals | flows (evicted) | IP fragments (reassembled / dropped) | result |"
    );
    println!(
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"
    );
    for r in rows {
        let s = &r.streams.summary;
        let result = if r.failures.is_empty() {
            "pass".to_string()
        } else {
            format!("**FAIL** ({})", r.failures.join("; "))
        };
        println!(
            "| {} | {} | {} | {} / {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} ({}) | {} | {} |",
            r.profile,
            r.packets,
            mib(r.pcap_bytes as f64),
            rss(r.streams.max_rss_kib),
            rss(r.flows.max_rss_kib),
            mib(r.rss_bound as f64),
            mib(o.memory as f64),
            mib(s.memory_peak),
            rate(&r.streams, r.streams_ratio),
            rate(&r.flows, r.flows_ratio),
            s.captured,
            s.discarded,
            s.dropped,
            s.missing,
            s.refusals,
            s.flows,
            s.evicted,
            if s.fragments == 0 {
                "-".to_string()
            } else {
                format!(
                    "{} ({} / {})",
                    s.fragments, s.fragments_reassembled, s.fragments_dropped
                )
            },
            result
        );
    }
    println!(
        "\nBounds: stream-data peak ≤ budget (streamcap's summary, 3 significant digits); \
         peak RSS (GNU time %M) ≤ budget + defragmenter limit ({}) + {} \
         (fragments held for reassembly have their own limit), the fixed allowance being \
         the larger of the empty run's RSS ({}) and normal's RSS minus its stream-data peak \
         ({}), plus {} slack; \
         throughput ≥ {:.0} % of normal's in the same mode, normal being run alternately \
         with each profile (normal, attack, normal, …) and the ratio taken against the \
         median of those paired runs; stream bytes = delivered + \
         discarded + dropped + missing; IP fragments = reassembled + dropped; flows \
         created = flows ended; every packet read. \
         Byte columns and the stream-data peak are from `streamcap streams`.",
        mib(defrag_limit() as f64),
        mib(ov.allowance as f64),
        mib(ov.empty_rss as f64),
        mib(ov.normal_rss_minus_data as f64),
        mib(SLACK as f64),
        MIN_RATIO * 100.0
    );
    let fails = rows.iter().filter(|r| !r.failures.is_empty()).count();
    if fails > 0 {
        println!("\nFAIL: {fails} of {} profiles broke a bound.", rows.len());
    } else {
        println!("\nAll {} profiles within bounds.", rows.len());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SUMMARY: &str = "streamcap: x.pcap
  packets      200000 read, 200000 IP, 0 truncated
  bytes        12.80 MB on the wire (processed packets)
  flows        200000 (tcp 200000, udp 0, icmp 0, other 0); ended: fin 0, rst 0, timeout 0, eof 1000, evicted 199000
  streams      400000: 1234 stream bytes = captured 1000 + discarded 4 + dropped 200 + missing 30
  memory       stream data peak 1.05 MiB of the 32 MiB budget, 7 refusals (budget full)
  decode       no errors
  time         0.120 s, 1.67 Mpkt/s, 0.853 Gbit/s
";

    #[test]
    fn parses_the_summary() {
        let s = parse_summary(SUMMARY).expect("parses");
        assert_eq!(s.packets, 200_000);
        assert_eq!(s.flows, 200_000);
        assert_eq!(s.flows_ended, 200_000);
        assert_eq!(s.evicted, 199_000);
        assert_eq!(
            (
                s.stream_bytes,
                s.captured,
                s.discarded,
                s.dropped,
                s.missing
            ),
            (1234, 1000, 4, 200, 30)
        );
        assert!(s.invariant_holds());
        assert_eq!(s.memory_peak, (1.05f64 * 1024.0 * 1024.0).round());
        assert_eq!(s.memory_limit, 32.0 * 1024.0 * 1024.0);
        assert_eq!(s.refusals, 7);
        let small = SUMMARY.replace("1.05 MiB", "512 B");
        assert_eq!(parse_summary(&small).map(|s| s.memory_peak), Some(512.0));
        assert!(parse_summary("streamcap: x\n  packets 3 read\n").is_none());
        assert_eq!(s.fragments, 0);
        assert!(s.fragments_accounted());
        let frag = SUMMARY.replace(
            "  decode",
            "  fragments    20000 = 11428 in 2857 reassembled datagrams + 8572 dropped \
             (6144 timed out, 2428 evicted from a full table); 5714 overlaps (5714 conflicting)\n  decode",
        );
        let f = parse_summary(&frag).expect("parses");
        assert_eq!(
            (f.fragments, f.fragments_reassembled, f.fragments_dropped),
            (20000, 11428, 8572)
        );
        assert!(f.fragments_accounted());
        let off = frag.replace("+ 8572 dropped", "+ 8571 dropped");
        assert!(!parse_summary(&off).is_some_and(|s| s.fragments_accounted()));
    }
}
