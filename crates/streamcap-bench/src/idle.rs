//! Peak memory per tracked idle TCP connection.
//!
//! For each size `N` (and a small baseline `B`), writes the idle-connection
//! workload ([`crate::conns`]) into the work directory (tmpfs), runs
//! `streamcap flows` and the libnids peers on it under `/usr/bin/time`, and
//! reports `(mem(N) - mem(B)) / (N - B)` bytes per connection, where `mem`
//! is the peak RSS (`%M`). Every tool reads its input with `read(2)`
//! through a buffer (streamcap a 1 MiB window, the peers libpcap's stdio
//! buffer), so the capture file is not part of any RSS. As a cross-check, the tool's `RssAnon` (anonymous memory only: heap,
//! stacks, no file pages) is sampled from `/proc/PID/status` every
//! millisecond while it runs; its maximum gives a second figure that needs
//! no subtraction (it can miss a spike shorter than the sampling period).
//! A third figure, *marginal*, divides the growth between two consecutive
//! sizes by the connections added: memory that both runs hold whatever the
//! count (streamcap's read-ahead buffers, which the baseline's small file
//! does not need; the partly used last huge page of its flow table) cancels
//! out of it, while the figure against the baseline charges it to the
//! connections.
//!
//! libnids preallocates its connection pool: `n_tcp_streams` hash slots
//! (8 bytes each) and `3/4 × n_tcp_streams` `struct tcp_stream`, all touched
//! at start-up, and it drops the oldest connection when more than that are
//! open. To hold `N` connections the peers are given
//! `n_tcp_streams = ceil(4N/3) + 4` (at least 1024), so their figure is
//! what libnids needs to be configured for `N` open connections.

use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::conns;

/// Everything measured, for the JSON report.
#[derive(Serialize, Debug)]
pub struct IdleReport {
    /// How the figures are computed.
    pub method: String,
    /// Connections in the baseline file.
    pub baseline: u64,
    /// Where the capture files were (should be tmpfs).
    pub work_dir: String,
    /// File system type of `work_dir` (from /proc/self/mounts).
    pub work_fs: String,
    /// One entry per connection count, the baseline first.
    pub points: Vec<IdlePoint>,
}

/// The tools' figures on one file.
#[derive(Serialize, Debug)]
pub struct IdlePoint {
    /// Idle connections in the file.
    pub connections: u64,
    /// Size of the capture file, bytes.
    pub file_bytes: u64,
    /// Packets in the file (3 per connection).
    pub packets: u64,
    /// One entry per tool that ran.
    pub tools: Vec<IdleTool>,
}

/// One tool on one file.
#[derive(Serialize, Debug, Clone)]
pub struct IdleTool {
    /// `streamcap flows`, `nids_streams` or `nids_flows`.
    pub tool: String,
    /// The command line.
    pub command: String,
    /// Peak RSS from `/usr/bin/time -f %M`, KiB.
    pub max_rss_kib: Option<u64>,
    /// Largest sampled `RssAnon`, KiB.
    pub peak_anon_kib: Option<u64>,
    /// Connections the tool reports having tracked.
    pub tracked: Option<u64>,
    /// Wall seconds.
    pub wall_s: f64,
    /// Peak RSS growth over the baseline, per connection.
    pub bytes_per_conn: Option<f64>,
    /// Sampled `RssAnon` growth over the baseline, per connection.
    pub anon_bytes_per_conn: Option<f64>,
    /// Peak RSS growth over the previous (smaller, non-baseline) point, per
    /// extra connection: what one more connection costs once both runs
    /// hold the same fixed memory (read buffers, a vector's partly used
    /// last huge page), which the figure against the small baseline
    /// charges to the connections. `None` for the first point after the
    /// baseline.
    pub marginal_bytes_per_conn: Option<f64>,
}

/// What one measured run gave.
struct Measured {
    wall_s: f64,
    max_rss_kib: Option<u64>,
    peak_anon_kib: Option<u64>,
    stdout: String,
    stderr: String,
}

/// Reads `key:  N kB` from a /proc status file.
fn status_kib(status: &str, key: &str) -> Option<u64> {
    status
        .lines()
        .find_map(|l| l.strip_prefix(key)?.strip_prefix(':'))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
}

/// The first child of `pid` (the tool under /usr/bin/time).
fn first_child(pid: u32) -> Option<u32> {
    fs::read_to_string(format!("/proc/{pid}/task/{pid}/children"))
        .ok()?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// Runs `argv` (under GNU time when available) and samples the tool's
/// `RssAnon` every millisecond.
fn measure(argv: &[String], tmp: &Path, gnu_time: Option<&Path>) -> Result<Measured, String> {
    let time_path = tmp.join("idle-time");
    let out_path = tmp.join("idle-stdout");
    let err_path = tmp.join("idle-stderr");
    let _ = fs::remove_file(&time_path);
    let mut cmd = crate::runner::timed_command(argv, gnu_time, &time_path, &out_path, &err_path)?;
    let start = Instant::now();
    let mut child = cmd.spawn().map_err(|e| format!("{}: {e}", argv[0]))?;
    let mut target = if gnu_time.is_some() {
        None
    } else {
        Some(child.id())
    };
    let mut peak_anon: Option<u64> = None;
    let mut last_hwm: Option<u64> = None;
    let status = loop {
        match child.try_wait() {
            Ok(Some(s)) => break s,
            Ok(None) => {}
            Err(e) => return Err(format!("{}: {e}", argv[0])),
        }
        if target.is_none() {
            target = first_child(child.id());
        }
        if let Some(pid) = target {
            if let Ok(s) = fs::read_to_string(format!("/proc/{pid}/status")) {
                if let Some(a) = status_kib(&s, "RssAnon") {
                    peak_anon = Some(peak_anon.map_or(a, |p| p.max(a)));
                }
                if let Some(h) = status_kib(&s, "VmHWM") {
                    last_hwm = Some(h);
                }
            }
        }
        std::thread::sleep(Duration::from_millis(1));
    };
    let wall_s = start.elapsed().as_secs_f64();
    let read = |p: &Path| {
        let mut s = String::new();
        let _ = fs::File::open(p).and_then(|mut f| f.read_to_string(&mut s));
        s
    };
    let stdout = read(&out_path);
    let stderr = read(&err_path);
    if !status.success() {
        let tail: Vec<&str> = stderr.lines().rev().take(3).collect();
        return Err(format!(
            "{} exited with {status}: {}",
            argv.join(" "),
            tail.join(" / ")
        ));
    }
    let max_rss_kib = fs::read_to_string(&time_path)
        .ok()
        .and_then(|s| crate::runner::parse_time(&s))
        .map(|t| t.3)
        .or(last_hwm);
    Ok(Measured {
        wall_s,
        max_rss_kib,
        peak_anon_kib: peak_anon,
        stdout,
        stderr,
    })
}

/// Connections streamcap's summary reports (`flows  N (...)`), and how many
/// were evicted.
fn streamcap_flows(stderr: &str) -> (Option<u64>, Option<u64>) {
    let line = stderr
        .lines()
        .find(|l| l.trim_start().starts_with("flows "));
    let flows = line.and_then(|l| l.split_whitespace().nth(1)?.parse().ok());
    let evicted = line.and_then(|l| {
        let at = l.find("evicted ")?;
        l[at + 8..]
            .split(|c: char| !c.is_ascii_digit())
            .next()?
            .parse()
            .ok()
    });
    (flows, evicted)
}

/// libnids `n_tcp_streams` that holds `n` connections (libnids keeps at
/// most 3/4 of it).
pub fn nids_table_size(n: u64) -> u64 {
    ((4 * n).div_ceil(3) + 4).max(1024)
}

/// File system type of the mount holding `dir`.
fn fs_type(dir: &Path) -> String {
    let dir = fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
    let mounts = fs::read_to_string("/proc/self/mounts").unwrap_or_default();
    mounts
        .lines()
        .filter_map(|l| {
            let mut f = l.split_whitespace();
            let (_, mnt, ty) = (f.next()?, f.next()?, f.next()?);
            dir.starts_with(mnt).then(|| (mnt.len(), ty.to_string()))
        })
        .max_by_key(|(n, _)| *n)
        .map_or_else(|| "unknown".into(), |(_, t)| t)
}

/// Runs the measurement for every size in `sizes` against `baseline`
/// connections. Peers missing from `peers` are left out.
pub fn run(
    streamcap: &Path,
    peers: Option<&Path>,
    sizes: &[u64],
    baseline: u64,
    tmp: &Path,
    gnu_time: Option<&Path>,
) -> Result<IdleReport, String> {
    fs::create_dir_all(tmp).map_err(|e| format!("{}: {e}", tmp.display()))?;
    let work_fs = fs_type(tmp);
    let nids: Vec<(String, PathBuf)> = ["nids_streams", "nids_flows"]
        .iter()
        .filter_map(|n| {
            let p = peers?.join(n);
            p.is_file().then(|| (n.to_string(), p))
        })
        .collect();
    let mut all: Vec<u64> = vec![baseline];
    all.extend(sizes.iter().copied().filter(|&n| n > baseline));
    let mut points: Vec<IdlePoint> = Vec::new();
    for &n in &all {
        let file = tmp.join(format!("idle-{n}.pcap"));
        let t0 = Instant::now();
        let packets =
            conns::write_conns(&file, n).map_err(|e| format!("{}: {e}", file.display()))?;
        let file_bytes = fs::metadata(&file).map(|m| m.len()).unwrap_or(0);
        eprintln!(
            "streamcap-bench: idle connections: {n} ({packets} packets, {:.1} MB, written in {:.1} s)",
            file_bytes as f64 / 1e6,
            t0.elapsed().as_secs_f64()
        );
        let fname = file.display().to_string();
        let mut runs: Vec<(String, Vec<String>)> = vec![(
            "streamcap flows".into(),
            vec![
                streamcap.display().to_string(),
                "flows".into(),
                "-r".into(),
                fname.clone(),
                "-o".into(),
                "/dev/null".into(),
            ],
        )];
        for (name, p) in &nids {
            runs.push((
                name.clone(),
                vec![
                    p.display().to_string(),
                    fname.clone(),
                    nids_table_size(n).to_string(),
                ],
            ));
        }
        let mut tools = Vec::new();
        for (name, argv) in runs {
            let m = match measure(&argv, tmp, gnu_time) {
                Ok(m) => m,
                Err(e) => {
                    eprintln!("streamcap-bench:   {name} failed on {n} idle connections: {e}");
                    continue;
                }
            };
            let tracked = if name.starts_with("streamcap") {
                let (flows, evicted) = streamcap_flows(&m.stderr);
                if evicted.is_some_and(|e| e > 0) {
                    eprintln!(
                        "streamcap-bench:   streamcap evicted {} connections (max_flows): the figure is not per tracked connection",
                        evicted.unwrap_or(0)
                    );
                }
                flows
            } else {
                crate::runner::parse_kv(&m.stdout, "streams")
            };
            if tracked.is_some_and(|t| t != n) {
                eprintln!(
                    "streamcap-bench:   {name} tracked {} of {n} connections",
                    tracked.unwrap_or(0)
                );
            }
            eprintln!(
                "streamcap-bench:   {name:<16} {:>7.3} s  peak RSS {} KiB  peak RssAnon {} KiB",
                m.wall_s,
                m.max_rss_kib.map_or("-".into(), |v| v.to_string()),
                m.peak_anon_kib.map_or("-".into(), |v| v.to_string()),
            );
            tools.push(IdleTool {
                tool: name,
                command: argv.join(" "),
                max_rss_kib: m.max_rss_kib,
                peak_anon_kib: m.peak_anon_kib,
                tracked,
                wall_s: m.wall_s,
                bytes_per_conn: None,
                anon_bytes_per_conn: None,
                marginal_bytes_per_conn: None,
            });
        }
        let _ = fs::remove_file(&file);
        points.push(IdlePoint {
            connections: n,
            file_bytes,
            packets,
            tools,
        });
    }
    per_connection(&mut points);
    Ok(IdleReport {
        method: "bytes/conn = (peak RSS at N − peak RSS at the baseline) / (N − baseline); \
                 marginal = (peak RSS at N − peak RSS at the previous N) / (N − previous N); \
                 peak RSS from /usr/bin/time %M; every tool read()s its input, so the file is in no RSS; \
                 anon = sampled max RssAnon from /proc/PID/status (1 ms); libnids peers get n_tcp_streams = ceil(4N/3)+4"
            .into(),
        baseline,
        work_dir: tmp.display().to_string(),
        work_fs,
        points,
    })
}

/// Fills in each tool's per-connection figures: against the baseline (the
/// first point) and, from the third point on, against the point before.
fn per_connection(points: &mut [IdlePoint]) {
    // Per-connection figures against the baseline point.
    if let Some((base, rest)) = points.split_first_mut() {
        for p in rest {
            let dn = (p.connections - base.connections) as f64;
            for t in &mut p.tools {
                let Some(b) = base.tools.iter().find(|b| b.tool == t.tool) else {
                    continue;
                };
                let net = |x: &IdleTool| x.max_rss_kib.map(|k| (k * 1024) as f64);
                t.bytes_per_conn = net(t).zip(net(b)).map(|(a, z)| (a - z) / dn);
                t.anon_bytes_per_conn = t
                    .peak_anon_kib
                    .zip(b.peak_anon_kib)
                    .map(|(a, z)| (a as f64 - z as f64) * 1024.0 / dn);
            }
        }
    }
    // Marginal figures: each point against the one before it (not the
    // baseline).
    for i in 2..points.len() {
        let (before, after) = points.split_at_mut(i);
        let (prev, p) = (&before[i - 1], &mut after[0]);
        let dn = p.connections.saturating_sub(prev.connections) as f64;
        if dn == 0.0 {
            continue;
        }
        for t in &mut p.tools {
            let Some(b) = prev.tools.iter().find(|b| b.tool == t.tool) else {
                continue;
            };
            t.marginal_bytes_per_conn = t
                .max_rss_kib
                .zip(b.max_rss_kib)
                .map(|(a, z)| (a as f64 - z as f64) * 1024.0 / dn);
        }
    }
}

fn cell<T>(v: Option<T>, f: impl Fn(T) -> String) -> String {
    v.map_or("-".into(), f)
}

/// Prints the Markdown table.
pub fn print(r: &IdleReport) {
    println!();
    println!(
        "## idle TCP connections — peak memory per tracked connection (baseline {} connections; files on {})",
        r.baseline, r.work_fs
    );
    println!();
    println!("| idle connections | file MiB | streamcap peak RSS MiB | streamcap bytes/conn (RSS) | streamcap bytes/conn (RssAnon) | streamcap marginal bytes/conn (RSS, over the row above) | libnids (nids_streams) peak RSS MiB | libnids bytes/conn | nids_flows bytes/conn |");
    println!("|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    let mib = |k: u64| format!("{:.1}", k as f64 / 1024.0);
    let bpc = |b: f64| format!("{b:.0}");
    for p in &r.points {
        let t = |name: &str| p.tools.iter().find(|t| t.tool == name);
        let sc = t("streamcap flows");
        let ns = t("nids_streams");
        let nf = t("nids_flows");
        println!(
            "| {} | {:.1} | {} | {} | {} | {} | {} | {} | {} |",
            p.connections,
            p.file_bytes as f64 / (1024.0 * 1024.0),
            cell(sc.and_then(|t| t.max_rss_kib), mib),
            cell(sc.and_then(|t| t.bytes_per_conn), bpc),
            cell(sc.and_then(|t| t.anon_bytes_per_conn), bpc),
            cell(sc.and_then(|t| t.marginal_bytes_per_conn), bpc),
            cell(ns.and_then(|t| t.max_rss_kib), mib),
            cell(ns.and_then(|t| t.bytes_per_conn), bpc),
            cell(nf.and_then(|t| t.bytes_per_conn), bpc),
        );
    }
    println!();
    println!("(bytes/conn: growth over the baseline divided by the extra connections; marginal: growth over the row above, per extra connection, so that memory both runs hold whatever the count (streamcap's read-ahead buffers, the partly used last huge page of its flow table) is not charged to connections; no tool maps its input; RssAnon is sampled every 1 ms. libnids is given n_tcp_streams = ceil(4N/3)+4, the smallest table that holds N connections; it preallocates and touches its stream pool at start-up.)");
    println!();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_streamcap_summary() {
        let s = "streamcap: x.pcap\n  packets      3000 read\n  flows        1000 (tcp 1000, udp 0, icmp 0, other 0); ended: fin 0, rst 0, timeout 0, eof 1000, evicted 7\n";
        assert_eq!(streamcap_flows(s), (Some(1000), Some(7)));
        assert_eq!(streamcap_flows("nothing"), (None, None));
    }

    #[test]
    fn parses_proc_status() {
        let s = "Name:\tx\nVmHWM:\t  2048 kB\nRssAnon:\t   512 kB\n";
        assert_eq!(status_kib(s, "RssAnon"), Some(512));
        assert_eq!(status_kib(s, "VmHWM"), Some(2048));
        assert_eq!(status_kib(s, "RssFile"), None);
    }

    #[test]
    fn per_connection_figures() {
        let tool = |rss_kib: u64| IdleTool {
            tool: "streamcap flows".into(),
            command: String::new(),
            max_rss_kib: Some(rss_kib),
            peak_anon_kib: Some(rss_kib - 1000),
            tracked: None,
            wall_s: 0.0,
            bytes_per_conn: None,
            anon_bytes_per_conn: None,
            marginal_bytes_per_conn: None,
        };
        let point = |connections: u64, rss_kib: u64| IdlePoint {
            connections,
            file_bytes: 0,
            packets: 0,
            tools: vec![tool(rss_kib)],
        };
        let mut points = vec![
            point(1_000, 4_000),
            point(201_000, 54_000),
            point(1_001_000, 244_000),
        ];
        per_connection(&mut points);
        let t = |i: usize| &points[i].tools[0];
        assert_eq!(t(0).bytes_per_conn, None);
        assert_eq!(t(1).bytes_per_conn, Some(50_000.0 * 1024.0 / 200_000.0));
        assert_eq!(t(1).anon_bytes_per_conn, t(1).bytes_per_conn);
        assert_eq!(t(1).marginal_bytes_per_conn, None);
        assert_eq!(t(2).bytes_per_conn, Some(240_000.0 * 1024.0 / 1_000_000.0));
        assert_eq!(
            t(2).marginal_bytes_per_conn,
            Some(190_000.0 * 1024.0 / 800_000.0)
        );
    }

    #[test]
    fn nids_table_holds_n() {
        for n in [0, 1000, 200_000, 1_000_000, 999_999] {
            assert!(3 * nids_table_size(n) / 4 >= n);
        }
    }
}
