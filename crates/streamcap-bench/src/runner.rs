//! Running the tools and reporting.

use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::capinfo;

/// What a tool is, for setup and for reading what it found.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Kind {
    Streamcap,
    NidsStreams,
    NidsFlows,
    PcapFlows,
    Tcpflow,
    Tshark,
    Softflowd,
}

#[derive(Clone, Debug)]
struct Tool {
    tool: String,
    mode: String,
    kind: Kind,
    /// Program and arguments; `{FILE}`, `{OUT}`, `{PORT}` are substituted.
    argv: Vec<String>,
    /// What the `found` number counts.
    found_unit: &'static str,
}

#[derive(Serialize, Clone, Debug)]
pub struct RunSample {
    wall_s: f64,
    user_s: Option<f64>,
    sys_s: Option<f64>,
    max_rss_kib: Option<u64>,
}

#[derive(Serialize, Clone, Debug)]
pub struct ToolResult {
    pub tool: String,
    pub mode: String,
    pub command: String,
    pub runs: Vec<RunSample>,
    pub median_wall_s: f64,
    pub cpu_s: Option<f64>,
    pub max_rss_kib: Option<u64>,
    pub gbps: f64,
    pub mpps: f64,
    pub found: Option<u64>,
    pub found_unit: String,
    /// libnids (nids_streams) median wall time / this tool's: > 1 is faster.
    pub vs_nids_streams: Option<f64>,
    /// pcap_flows median wall time / this tool's: > 1 is faster.
    pub vs_pcap_flows: Option<f64>,
}

#[derive(Serialize, Clone, Debug)]
pub struct Workload {
    pub name: String,
    pub file: String,
    pub file_bytes: u64,
    pub packets: u64,
    pub wire_bytes: u64,
    pub results: Vec<ToolResult>,
}

#[derive(Serialize, Clone, Debug)]
struct Skipped {
    tool: String,
    reason: String,
}

#[derive(Serialize)]
struct Report {
    machine: Machine,
    runs: usize,
    workloads: Vec<Workload>,
    skipped: Vec<Skipped>,
    /// Peak memory per tracked idle TCP connection (`--idle-conns`).
    #[serde(skip_serializing_if = "Option::is_none")]
    idle_connections: Option<crate::idle::IdleReport>,
}

#[derive(Serialize)]
struct Machine {
    cpus: usize,
    cpu_model: String,
    kernel: String,
    timer: String,
}

struct Opts {
    streamcap: PathBuf,
    /// A second streamcap build (the plain release build when `streamcap`
    /// is the PGO one): its `flows` and `streams` rows are added for
    /// comparison.
    plain: Option<PathBuf>,
    peers: Option<PathBuf>,
    runs: usize,
    json: Option<PathBuf>,
    png: Option<PathBuf>,
    tmp: PathBuf,
    slow_limit: f64,
    workloads: Vec<(String, PathBuf)>,
    /// Sizes of the idle-connection measurement (empty: not run).
    idle: Vec<u64>,
    /// Connections in the idle measurement's baseline file.
    idle_baseline: u64,
}

fn parse(args: &[String]) -> Result<Opts, String> {
    let mut o = Opts {
        streamcap: PathBuf::new(),
        plain: None,
        peers: None,
        runs: 5,
        json: None,
        png: None,
        tmp: PathBuf::from("/dev/shm/streamcap-bench"),
        slow_limit: 90.0,
        workloads: Vec::new(),
        idle: Vec::new(),
        idle_baseline: 1000,
    };
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut val = || it.next().cloned().ok_or(format!("{a} needs a value"));
        match a.as_str() {
            "--streamcap" => o.streamcap = PathBuf::from(val()?),
            "--streamcap-plain" => o.plain = Some(PathBuf::from(val()?)),
            "--peers" => o.peers = Some(PathBuf::from(val()?)),
            "--runs" => o.runs = val()?.parse().map_err(|e| format!("--runs: {e}"))?,
            "--json" => o.json = Some(PathBuf::from(val()?)),
            "--png" => o.png = Some(PathBuf::from(val()?)),
            "--tmp" => o.tmp = PathBuf::from(val()?),
            "--slow-limit" => {
                o.slow_limit = val()?.parse().map_err(|e| format!("--slow-limit: {e}"))?
            }
            "--idle-conns" => {
                for n in val()?.split(',').filter(|n| !n.is_empty()) {
                    o.idle.push(
                        n.trim()
                            .parse()
                            .map_err(|e| format!("--idle-conns {n}: {e}"))?,
                    );
                }
            }
            "--idle-baseline" => {
                o.idle_baseline = val()?
                    .parse()
                    .map_err(|e| format!("--idle-baseline: {e}"))?
            }
            w if w.contains('=') && !w.starts_with('-') => {
                let (n, f) = w.split_once('=').unwrap_or_default();
                o.workloads.push((n.to_string(), PathBuf::from(f)));
            }
            other => return Err(format!("unexpected argument {other}")),
        }
    }
    if o.streamcap.as_os_str().is_empty() {
        return Err("missing --streamcap BIN".into());
    }
    if o.workloads.is_empty() && o.idle.is_empty() {
        return Err("no workload (NAME=FILE) and no --idle-conns".into());
    }
    o.runs = o.runs.max(1);
    Ok(o)
}

/// `prog` as a path (when it contains `/`) or found on `PATH` (and in
/// /usr/sbin, /sbin).
pub(crate) fn which(prog: &str) -> Option<PathBuf> {
    if prog.contains('/') {
        let p = PathBuf::from(prog);
        return p.is_file().then_some(p);
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .chain(["/usr/sbin".into(), "/sbin".into()])
        .map(|d| d.join(prog))
        .find(|p| p.is_file())
}

/// The tools to run, and the peers skipped with the reason.
fn tools(o: &Opts) -> (Vec<Tool>, Vec<Skipped>) {
    let sc = o.streamcap.display().to_string();
    // streamcap's modes: (label, arguments before `-r FILE`).
    let modes: [(&str, &[&str]); 6] = [
        ("flows", &["flows"]),
        ("streams", &["streams"]),
        (
            "streams --delivery segments",
            &["streams", "--delivery", "segments"],
        ),
        ("streams --cutoff 10KiB", &["streams", "--cutoff", "10KiB"]),
        ("flows --workers 2", &["flows", "--workers", "2"]),
        ("streams --workers 2", &["streams", "--workers", "2"]),
    ];
    let plain: [(&str, &[&str]); 3] = [
        ("flows, plain build", &["flows"]),
        ("streams, plain build", &["streams"]),
        (
            "streams --delivery segments, plain build",
            &["streams", "--delivery", "segments"],
        ),
    ];
    let builds = o.plain.iter().flat_map(|p| {
        let p = p.display().to_string();
        plain.iter().map(move |m| (p.clone(), *m))
    });
    let mut t: Vec<Tool> = modes
        .iter()
        .map(|m| (sc.clone(), *m))
        .chain(builds)
        .map(|(bin, (mode, args))| {
            let mut argv = vec![bin];
            argv.extend(args.iter().map(|a| a.to_string()));
            argv.extend(["-q".into(), "-r".into(), "{FILE}".into()]);
            Tool {
                tool: "streamcap".into(),
                mode: mode.into(),
                kind: Kind::Streamcap,
                argv,
                found_unit: "conn",
            }
        })
        .collect();
    let mut skipped = Vec::new();
    let peers = o.peers.clone().unwrap_or_default();
    for (name, kind, mode, unit) in [
        (
            "nids_streams",
            Kind::NidsStreams,
            "libnids, collect both directions",
            "tcp streams",
        ),
        (
            "nids_flows",
            Kind::NidsFlows,
            "libnids, collect nothing",
            "tcp streams",
        ),
        (
            "pcap_flows",
            Kind::PcapFlows,
            "libpcap + hash table",
            "flows",
        ),
    ] {
        let p = peers.join(name);
        if o.peers.is_some() && p.is_file() {
            let mut argv = vec![p.display().to_string(), "{FILE}".into()];
            if kind != Kind::PcapFlows {
                argv.push((1u32 << 18).to_string());
            }
            t.push(Tool {
                tool: name.into(),
                mode: mode.into(),
                kind,
                argv,
                found_unit: unit,
            });
        } else {
            skipped.push(Skipped {
                tool: name.into(),
                reason: peer_missing_reason(o.peers.as_deref(), name),
            });
        }
    }
    match which("tcpflow") {
        Some(p) => t.push(Tool {
            tool: "tcpflow".into(),
            mode: "-r FILE -o tmpfs dir".into(),
            kind: Kind::Tcpflow,
            argv: vec![
                p.display().to_string(),
                "-r".into(),
                "{FILE}".into(),
                "-o".into(),
                "{OUT}".into(),
            ],
            found_unit: "files",
        }),
        None => skipped.push(Skipped {
            tool: "tcpflow".into(),
            reason: "not installed (apt-get install tcpflow)".into(),
        }),
    }
    match which("tshark") {
        Some(p) => t.push(Tool {
            tool: "tshark".into(),
            mode: "-q -z conv,tcp".into(),
            kind: Kind::Tshark,
            argv: vec![
                p.display().to_string(),
                "-r".into(),
                "{FILE}".into(),
                "-q".into(),
                "-z".into(),
                "conv,tcp".into(),
            ],
            found_unit: "tcp conv",
        }),
        None => skipped.push(Skipped {
            tool: "tshark".into(),
            reason: "not installed (apt-get install tshark)".into(),
        }),
    }
    match (which("softflowd"), which("nfcapd"), which("nfdump")) {
        (Some(p), Some(_), Some(_)) => t.push(Tool {
            tool: "softflowd".into(),
            mode: "-r FILE -n 127.0.0.1 -> nfcapd".into(),
            kind: Kind::Softflowd,
            argv: vec![
                p.display().to_string(),
                "-r".into(),
                "{FILE}".into(),
                "-n".into(),
                "127.0.0.1:{PORT}".into(),
            ],
            found_unit: "nf flows",
        }),
        (sf, nc, nd) => skipped.push(Skipped {
            tool: "softflowd".into(),
            reason: format!(
                "needs softflowd, nfcapd and nfdump (apt-get install softflowd nfdump); missing:{}{}{}",
                if sf.is_none() { " softflowd" } else { "" },
                if nc.is_none() { " nfcapd" } else { "" },
                if nd.is_none() { " nfdump" } else { "" }
            ),
        }),
    }
    (t, skipped)
}

/// Why peer `name` is not in `peers`: the first error of its build log
/// (bench/run.sh leaves `DIR/NAME.log`) when there is one.
fn peer_missing_reason(peers: Option<&Path>, name: &str) -> String {
    let Some(dir) = peers else {
        return "no --peers directory given".into();
    };
    let log = dir.join(format!("{name}.log"));
    let text = fs::read_to_string(&log).unwrap_or_default();
    let first_error = text
        .lines()
        .find(|l| l.contains("error") || l.contains("cannot find") || l.contains("not found"))
        .or_else(|| text.lines().rev().find(|l| !l.trim().is_empty()));
    match first_error {
        Some(e) => format!("build failed: {} (see {})", e.trim(), log.display()),
        None => format!(
            "{} not built (cc or libnids-dev/libpcap-dev missing?)",
            dir.join(name).display()
        ),
    }
}

/// nfcapd collector for one softflowd run.
struct Collector {
    child: Child,
    dir: PathBuf,
}

fn free_udp_port() -> u16 {
    std::net::UdpSocket::bind("127.0.0.1:0")
        .and_then(|s| s.local_addr())
        .map(|a| a.port())
        .unwrap_or(29_995)
}

fn start_nfcapd(dir: &Path, port: u16) -> Result<Collector, String> {
    let _ = fs::remove_dir_all(dir);
    fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    // nfcapd 1.7 takes the directory with -w, older versions with -l.
    let help = Command::new("nfcapd")
        .arg("-h")
        .output()
        .map(|o| {
            String::from_utf8_lossy(&o.stdout).into_owned() + &String::from_utf8_lossy(&o.stderr)
        })
        .unwrap_or_default();
    let dflag = if help.contains("-w flowdir") || help.contains("-w <flowdir>") {
        "-w"
    } else {
        "-l"
    };
    let child = Command::new("nfcapd")
        .args([
            dflag,
            &dir.display().to_string(),
            "-p",
            &port.to_string(),
            "-b",
            "127.0.0.1",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("nfcapd: {e}"))?;
    std::thread::sleep(Duration::from_millis(500));
    Ok(Collector {
        child,
        dir: dir.to_path_buf(),
    })
}

/// Stops nfcapd (SIGTERM makes it flush its file) and counts the flows it stored.
fn stop_nfcapd(mut c: Collector) -> Option<u64> {
    std::thread::sleep(Duration::from_millis(500));
    let _ = Command::new("kill")
        .args(["-TERM", &c.child.id().to_string()])
        .status();
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if let Ok(Some(_)) = c.child.try_wait() {
            break;
        }
        if Instant::now() > deadline {
            let _ = c.child.kill();
            let _ = c.child.wait();
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let out = Command::new("nfdump")
        .args(["-R", &c.dir.display().to_string(), "-I"])
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    let n = text
        .lines()
        .find_map(|l| {
            l.trim()
                .strip_prefix("Flows:")
                .map(|v| v.trim().parse::<u64>())
        })
        .and_then(Result::ok);
    let _ = fs::remove_dir_all(&c.dir);
    n
}

/// The number after `key=` in `text` (the C peers' `streams=N` output).
pub(crate) fn parse_kv(text: &str, key: &str) -> Option<u64> {
    text.split_whitespace()
        .find_map(|w| w.strip_prefix(key)?.strip_prefix('=')?.parse().ok())
}

/// Parses GNU time's `-f "%e %U %S %M"` output (the last line; an earlier
/// line may say the command exited non-zero).
pub(crate) fn parse_time(text: &str) -> Option<(f64, f64, f64, u64)> {
    let l = text.lines().rev().find(|l| !l.trim().is_empty())?;
    let v: Vec<&str> = l.split_whitespace().collect();
    if v.len() != 4 {
        return None;
    }
    Some((
        v[0].parse().ok()?,
        v[1].parse().ok()?,
        v[2].parse().ok()?,
        v[3].parse().ok()?,
    ))
}

/// `argv` under GNU time (`-f "%e %U %S %M"` written to `time_path`, read
/// back with [`parse_time`]) when it is installed, else as is; no input,
/// stdout and stderr to the given files.
pub(crate) fn timed_command(
    argv: &[String],
    gnu_time: Option<&Path>,
    time_path: &Path,
    stdout_path: &Path,
    stderr_path: &Path,
) -> Result<Command, String> {
    let mut cmd = match gnu_time {
        Some(gt) => {
            let mut c = Command::new(gt);
            c.args(["-f", "%e %U %S %M", "-o"])
                .arg(time_path)
                .args(argv);
            c
        }
        None => {
            let mut c = Command::new(&argv[0]);
            c.args(&argv[1..]);
            c
        }
    };
    let create = |p: &Path| fs::File::create(p).map_err(|e| format!("{}: {e}", p.display()));
    cmd.stdin(Stdio::null())
        .stdout(create(stdout_path)?)
        .stderr(create(stderr_path)?);
    Ok(cmd)
}

fn run_once(
    t: &Tool,
    file: &Path,
    tmp: &Path,
    gnu_time: Option<&Path>,
) -> Result<(RunSample, Option<u64>), String> {
    let out_dir = tmp.join("out");
    let _ = fs::remove_dir_all(&out_dir);
    let port = free_udp_port();
    let collector = if t.kind == Kind::Softflowd {
        Some(start_nfcapd(&tmp.join("nfcapd"), port)?)
    } else {
        None
    };
    if t.kind == Kind::Tcpflow {
        fs::create_dir_all(&out_dir).map_err(|e| format!("{}: {e}", out_dir.display()))?;
    }
    let argv: Vec<String> = t
        .argv
        .iter()
        .map(|a| {
            a.replace("{FILE}", &file.display().to_string())
                .replace("{OUT}", &out_dir.display().to_string())
                .replace("{PORT}", &port.to_string())
        })
        .collect();
    let stdout_path = tmp.join("stdout");
    let stderr_path = tmp.join("stderr");
    let time_path = tmp.join("time");
    let _ = fs::remove_file(&time_path);
    let mut cmd = timed_command(&argv, gnu_time, &time_path, &stdout_path, &stderr_path)?;
    let start = Instant::now();
    let status = cmd.status().map_err(|e| format!("{}: {e}", argv[0]));
    let wall = start.elapsed().as_secs_f64();
    let found_nf = collector.and_then(stop_nfcapd);
    let status = status?;
    if !status.success() {
        let mut err = String::new();
        let _ = fs::File::open(&stderr_path).and_then(|mut f| f.read_to_string(&mut err));
        let err: String = err.lines().rev().take(3).collect::<Vec<_>>().join(" / ");
        return Err(format!("{} exited with {status}: {err}", argv.join(" ")));
    }
    let stdout = fs::read_to_string(&stdout_path).unwrap_or_default();
    let found = match t.kind {
        Kind::Streamcap => Some(stdout.lines().filter(|l| l.starts_with('{')).count() as u64),
        Kind::NidsStreams | Kind::NidsFlows => parse_kv(&stdout, "streams"),
        Kind::PcapFlows => parse_kv(&stdout, "flows"),
        Kind::Tshark => Some(stdout.lines().filter(|l| l.contains("<->")).count() as u64),
        Kind::Tcpflow => fs::read_dir(&out_dir).ok().map(|d| {
            d.filter_map(Result::ok)
                .filter(|e| {
                    let n = e.file_name();
                    let n = n.to_string_lossy();
                    !n.ends_with(".xml") && !n.starts_with('.')
                })
                .count() as u64
        }),
        Kind::Softflowd => found_nf,
    };
    if t.kind == Kind::Tcpflow {
        let _ = fs::remove_dir_all(&out_dir);
    }
    let timed = fs::read_to_string(&time_path)
        .ok()
        .and_then(|s| parse_time(&s));
    let sample = match timed {
        Some((_e, u, s, m)) => RunSample {
            wall_s: wall,
            user_s: Some(u),
            sys_s: Some(s),
            max_rss_kib: Some(m),
        },
        None => RunSample {
            wall_s: wall,
            user_s: None,
            sys_s: None,
            max_rss_kib: None,
        },
    };
    Ok((sample, found))
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n == 0 {
        return f64::NAN;
    }
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// A fresh copy of `file` in the scratch directory `tmp`, which every tool
/// reads for the workload (the original when copying fails). Until the
/// seventh session streamcap memory-mapped its input, and on this machine a
/// tmpfs file that had been around for some minutes could lose the kernel's
/// fault-around for memory mappings (183 k minor page faults and 0.60 s of
/// system time to map the 1.6 GB campus trace instead of 37 k and 0.27 s
/// for a fresh copy). No tool maps its input now; the copy stays so that
/// every tool reads the same freshly written file.
fn fresh_copy(file: &Path, tmp: &Path) -> PathBuf {
    let name = file
        .file_name()
        .map_or_else(|| "input".into(), |n| n.to_string_lossy().into_owned());
    let copy = tmp.join(format!("fresh-{name}"));
    match fs::copy(file, &copy) {
        Ok(_) => copy,
        Err(e) => {
            eprintln!(
                "streamcap-bench: cannot copy {} to {}: {e}; measuring the original",
                file.display(),
                copy.display()
            );
            let _ = fs::remove_file(&copy);
            file.to_path_buf()
        }
    }
}

fn warm(file: &Path) {
    // Read the whole file so every run finds it in the page cache.
    if let Ok(mut f) = fs::File::open(file) {
        let mut buf = vec![0u8; 1 << 20];
        while matches!(f.read(&mut buf), Ok(n) if n > 0) {}
    }
}

fn machine() -> Machine {
    let cpu_model = fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|c| {
            c.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split_once(':'))
                .map(|(_, v)| v.trim().to_string())
        })
        .unwrap_or_default();
    Machine {
        cpus: std::thread::available_parallelism().map_or(1, |n| n.get()),
        cpu_model,
        kernel: fs::read_to_string("/proc/sys/kernel/osrelease")
            .unwrap_or_default()
            .trim()
            .to_string(),
        timer: "wall: Instant around /usr/bin/time; cpu, rss: /usr/bin/time -f '%U %S %M'".into(),
    }
}

/// One tool's runs on a workload, as they accumulate round by round.
struct Acc {
    runs: Vec<RunSample>,
    found: Option<u64>,
    failed: Option<String>,
    /// Runs wanted (fewer than `--runs` for a slow tool).
    want: usize,
}

pub fn cmd_run(args: &[String]) -> Result<(), String> {
    let o = parse(args)?;
    fs::create_dir_all(&o.tmp).map_err(|e| format!("{}: {e}", o.tmp.display()))?;
    let gnu_time = which("/usr/bin/time");
    if gnu_time.is_none() {
        eprintln!("streamcap-bench: /usr/bin/time missing (apt-get install time): CPU and RSS not measured");
    }
    let (tools, skipped) = tools(&o);
    for s in &skipped {
        eprintln!("streamcap-bench: skipping {}: {}", s.tool, s.reason);
    }
    let mut skipped = skipped;
    let mut workloads = Vec::new();
    for (name, file) in &o.workloads {
        let (packets, wire_bytes) =
            capinfo::totals(file).map_err(|e| format!("{}: {e}", file.display()))?;
        let file_bytes = fs::metadata(file).map(|m| m.len()).unwrap_or(0);
        eprintln!(
            "streamcap-bench: workload {name}: {} ({packets} packets, {:.1} MB on the wire)",
            file.display(),
            wire_bytes as f64 / 1e6
        );
        warm(file);
        // Runs go round-robin (every tool once, then every tool again...)
        // so that a drift of the machine's speed during the workload
        // touches every tool alike, rather than the tools measured last.
        let input = fresh_copy(file, &o.tmp);
        let mut acc: Vec<Acc> = tools
            .iter()
            .map(|_| Acc {
                runs: Vec::new(),
                found: None,
                failed: None,
                want: o.runs,
            })
            .collect();
        for round in 0..o.runs {
            for (t, a) in tools.iter().zip(acc.iter_mut()) {
                if a.failed.is_some() || round >= a.want {
                    continue;
                }
                match run_once(t, &input, &o.tmp, gnu_time.as_deref()) {
                    Ok((s, f)) => {
                        if round == 0 && s.wall_s * o.runs as f64 > o.slow_limit && o.runs > 1 {
                            a.want = ((o.slow_limit / s.wall_s) as usize).clamp(1, o.runs);
                            eprintln!(
                                "streamcap-bench:   {} {}: {:.1} s per run, {} run(s) only (--slow-limit {})",
                                t.tool, t.mode, s.wall_s, a.want, o.slow_limit
                            );
                        }
                        a.runs.push(s);
                        a.found = f;
                    }
                    Err(e) => a.failed = Some(e),
                }
            }
        }
        if input != *file {
            let _ = fs::remove_file(&input);
        }
        let mut results = Vec::new();
        for (t, a) in tools.iter().zip(acc) {
            let Acc {
                runs,
                found,
                failed,
                ..
            } = a;
            if let Some(e) = failed {
                eprintln!(
                    "streamcap-bench:   {} {} failed on {name}: {e}",
                    t.tool, t.mode
                );
                skipped.push(Skipped {
                    tool: format!("{} {} ({name})", t.tool, t.mode),
                    reason: e,
                });
                continue;
            }
            let wall = median(runs.iter().map(|r| r.wall_s).collect());
            let cpu = runs
                .iter()
                .map(|r| Some(r.user_s? + r.sys_s?))
                .collect::<Option<Vec<f64>>>()
                .map(median);
            let rss = runs.iter().filter_map(|r| r.max_rss_kib).max();
            eprintln!(
                "streamcap-bench:   {:<10} {:<34} {:>8.3} s  {}",
                t.tool,
                t.mode,
                wall,
                found.map_or("-".into(), |f| format!("{f} {}", t.found_unit))
            );
            results.push(ToolResult {
                tool: t.tool.clone(),
                mode: t.mode.clone(),
                command: t.argv.join(" "),
                runs,
                median_wall_s: wall,
                cpu_s: cpu,
                max_rss_kib: rss,
                gbps: wire_bytes as f64 * 8.0 / wall / 1e9,
                mpps: packets as f64 / wall / 1e6,
                found,
                found_unit: t.found_unit.into(),
                vs_nids_streams: None,
                vs_pcap_flows: None,
            });
        }
        let base = |n: &str| {
            results
                .iter()
                .find(|r| r.tool == n)
                .map(|r| r.median_wall_s)
        };
        let (nids, pf) = (base("nids_streams"), base("pcap_flows"));
        for r in &mut results {
            r.vs_nids_streams = nids.map(|b| b / r.median_wall_s);
            r.vs_pcap_flows = pf.map(|b| b / r.median_wall_s);
        }
        let w = Workload {
            name: name.clone(),
            file: file.display().to_string(),
            file_bytes,
            packets,
            wire_bytes,
            results,
        };
        print_table(&w);
        let suffix = format!(" ({name})");
        print_skipped(
            skipped
                .iter()
                .filter(|s| !s.tool.ends_with(')') || s.tool.ends_with(&suffix)),
        );
        workloads.push(w);
    }
    let idle_connections = if o.idle.is_empty() {
        None
    } else {
        let peers = o.peers.as_deref();
        match crate::idle::run(
            &o.streamcap,
            peers,
            &o.idle,
            o.idle_baseline,
            &o.tmp.join("idle"),
            gnu_time.as_deref(),
        ) {
            Ok(r) => {
                crate::idle::print(&r);
                print_skipped(
                    skipped
                        .iter()
                        .filter(|s| s.tool == "nids_streams" || s.tool == "nids_flows"),
                );
                Some(r)
            }
            Err(e) => {
                eprintln!("streamcap-bench: idle-connection measurement failed: {e}");
                skipped.push(Skipped {
                    tool: "idle connections".into(),
                    reason: e,
                });
                None
            }
        }
    };
    let report = Report {
        machine: machine(),
        runs: o.runs,
        workloads,
        skipped,
        idle_connections,
    };
    if let Some(j) = &o.json {
        if let Some(d) = j.parent() {
            let _ = fs::create_dir_all(d);
        }
        let text = serde_json::to_string_pretty(&report).map_err(|e| e.to_string())?;
        fs::write(j, text + "\n").map_err(|e| format!("{}: {e}", j.display()))?;
        eprintln!("streamcap-bench: wrote {}", j.display());
    }
    if let Some(p) = &o.png {
        match crate::plot::draw(p, &report.workloads) {
            Ok(note) => eprintln!("streamcap-bench: wrote {}{note}", p.display()),
            Err(e) => eprintln!("streamcap-bench: plot failed: {e}"),
        }
    }
    let _ = fs::remove_dir_all(&o.tmp);
    Ok(())
}

/// Prints one `skipped: TOOL: reason` line per skipped tool, under a table.
fn print_skipped<'a>(s: impl Iterator<Item = &'a Skipped>) {
    let mut any = false;
    for s in s {
        println!("skipped: {}: {}", s.tool, s.reason);
        any = true;
    }
    if any {
        println!();
    }
}

fn fmt_ratio(r: Option<f64>) -> String {
    r.map_or("-".into(), |r| format!("{r:.2}x"))
}

fn print_table(w: &Workload) {
    println!();
    println!(
        "## {} — {} ({} packets, {:.1} MB on the wire, avg {:.0} B/packet)",
        w.name,
        w.file,
        w.packets,
        w.wire_bytes as f64 / 1e6,
        w.wire_bytes as f64 / w.packets.max(1) as f64
    );
    println!();
    println!("| tool | mode | wall s (median) | CPU s | peak RSS MiB | Gbit/s | Mpps | found | vs nids_streams | vs pcap_flows |");
    println!("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|");
    for r in &w.results {
        println!(
            "| {} | {} | {:.3} | {} | {} | {:.2} | {:.2} | {} | {} | {} |",
            r.tool,
            r.mode,
            r.median_wall_s,
            r.cpu_s.map_or("-".into(), |c| format!("{c:.2}")),
            r.max_rss_kib
                .map_or("-".into(), |m| format!("{:.1}", m as f64 / 1024.0)),
            r.gbps,
            r.mpps,
            r.found
                .map_or("-".into(), |f| format!("{f} {}", r.found_unit)),
            fmt_ratio(r.vs_nids_streams),
            fmt_ratio(r.vs_pcap_flows),
        );
    }
    println!();
    let wall = |mode: &str| {
        w.results
            .iter()
            .find(|r| r.tool == "streamcap" && r.mode == mode)
            .map(|r| r.median_wall_s)
    };
    for m in ["flows", "streams"] {
        if let (Some(one), Some(two)) = (wall(m), wall(&format!("{m} --workers 2"))) {
            println!("2 workers vs 1, {m}: {:.2}x throughput", one / two);
        }
    }
    println!();
}
