//! `streamcap-bench run`: runs streamcap's modes and the peer tools on each
//! workload, round-robin, and reports every run (`--json`) and a Markdown
//! summary (stdout, at the end).

use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::capinfo;
use crate::host;
use crate::report::{HostLoad, Report, RunHeader, RunSample, Skipped, ToolResult, Workload};
use crate::table;

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
    /// `streamcap flows --ipfix` to nfcapd: found is what nfcapd stored.
    StreamcapIpfix,
    /// `streamcap flows --format parquet` into a tmpfs file: found is the
    /// rows its `--stats-json` reports.
    StreamcapParquet,
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
    /// The CPU the row is pinned to (its `argv` starts with `taskset -c`).
    pin: Option<usize>,
}

impl Tool {
    /// The same tool pinned to `cpu` by `taskset`, its mode marked `1 CPU`.
    fn pinned(&self, taskset: &Path, cpu: usize) -> Tool {
        let mut argv = vec![taskset.display().to_string(), "-c".into(), cpu.to_string()];
        argv.extend(self.argv.iter().cloned());
        Tool {
            mode: format!("{}, 1 CPU", self.mode),
            argv,
            pin: Some(cpu),
            ..self.clone()
        }
    }
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
    /// A tool whose one run on a workload would take longer than this (at
    /// its rate per packet on the largest workload before) is skipped there.
    max_run: f64,
    workloads: Vec<(String, PathBuf)>,
    /// Sizes of the idle-connection measurement (empty: not run).
    idle: Vec<u64>,
    /// Connections in the idle measurement's baseline file.
    idle_baseline: u64,
    /// The CPU of the one-CPU rows (`None`: no such rows).
    one_cpu: Option<usize>,
    /// The commit measured, for the report.
    commit: Option<String>,
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
        max_run: 300.0,
        workloads: Vec::new(),
        idle: Vec::new(),
        idle_baseline: 1000,
        one_cpu: default_one_cpu(),
        commit: None,
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
            "--max-run" => o.max_run = val()?.parse().map_err(|e| format!("--max-run: {e}"))?,
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
            "--one-cpu" => {
                let v = val()?;
                o.one_cpu = match v.as_str() {
                    "none" | "off" => None,
                    n => Some(n.parse().map_err(|e| format!("--one-cpu {n}: {e}"))?),
                }
            }
            "--commit" => o.commit = Some(val()?).filter(|c| !c.is_empty()),
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

/// The CPU of the one-CPU rows by default: the first this process may run
/// on, when it may run on two or more (else the rows would repeat the
/// others).
fn default_one_cpu() -> Option<usize> {
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    (cpus > 1).then(host::first_allowed_cpu)
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
    let row = |bin: &str, (mode, args): (&str, &[&str])| {
        let mut argv = vec![bin.to_string()];
        argv.extend(args.iter().map(|a| a.to_string()));
        argv.extend(["-q".into(), "-r".into(), "{FILE}".into()]);
        Tool {
            tool: "streamcap".into(),
            mode: mode.into(),
            kind: Kind::Streamcap,
            argv,
            found_unit: "conn",
            pin: None,
        }
    };
    let mut skipped = Vec::new();
    // The one-CPU rows: `taskset -c CPU` before the command (util-linux).
    let taskset = match o.one_cpu {
        None => None,
        Some(cpu) => match which("taskset") {
            Some(p) => Some((p, cpu)),
            None => {
                skipped.push(Skipped {
                    tool: "1 CPU rows".into(),
                    reason: "taskset not found (util-linux)".into(),
                });
                None
            }
        },
    };
    let mut t: Vec<Tool> = modes.iter().map(|m| row(&sc, *m)).collect();
    if let Some((ts, cpu)) = &taskset {
        // streamcap's main rows, which use a read-ahead thread on a
        // second CPU when there is one.
        let main: Vec<Tool> = t.iter().take(3).map(|r| r.pinned(ts, *cpu)).collect();
        t.extend(main);
    }
    if let Some(p) = &o.plain {
        let p = p.display().to_string();
        t.extend(plain.iter().map(|m| row(&p, *m)));
    }
    let mut c_peers = Vec::new();
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
            c_peers.push(Tool {
                tool: name.into(),
                mode: mode.into(),
                kind,
                argv,
                found_unit: unit,
                pin: None,
            });
        } else {
            skipped.push(Skipped {
                tool: name.into(),
                reason: peer_missing_reason(o.peers.as_deref(), name),
            });
        }
    }
    if let Some((ts, cpu)) = &taskset {
        let pinned: Vec<Tool> = c_peers.iter().map(|p| p.pinned(ts, *cpu)).collect();
        c_peers.extend(pinned);
    }
    t.extend(c_peers);
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
            pin: None,
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
            pin: None,
        }),
        None => skipped.push(Skipped {
            tool: "tshark".into(),
            reason: "not installed (apt-get install tshark)".into(),
        }),
    }
    // The records of the `flows` row as a Parquet file (tmpfs) instead of
    // JSON lines: what the columnar encoding and zstd cost.
    t.push(Tool {
        tool: "streamcap".into(),
        mode: "flows --format parquet".into(),
        kind: Kind::StreamcapParquet,
        argv: vec![
            sc.clone(),
            "flows".into(),
            "-q".into(),
            "-r".into(),
            "{FILE}".into(),
            "--format".into(),
            "parquet".into(),
            "-o".into(),
            "{OUT}/flows.parquet".into(),
            "--stats-json".into(),
            "{OUT}/stats.json".into(),
        ],
        found_unit: "conn",
        pin: None,
    });
    if which("nfcapd").is_some() && which("nfdump").is_some() {
        // The records as the `flows` row writes them, and exported as
        // IPFIX (UDP, default pace) to nfcapd, as softflowd's row exports
        // NetFlow v5.
        t.push(Tool {
            tool: "streamcap".into(),
            mode: "flows --ipfix udp -> nfcapd".into(),
            kind: Kind::StreamcapIpfix,
            argv: vec![
                sc.clone(),
                "flows".into(),
                "-q".into(),
                "-r".into(),
                "{FILE}".into(),
                "--ipfix".into(),
                "udp://127.0.0.1:{PORT}".into(),
            ],
            found_unit: "nf flows",
            pin: None,
        });
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
            pin: None,
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
pub(crate) fn peer_missing_reason(peers: Option<&Path>, name: &str) -> String {
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
            let (prog, rest) = argv.split_first().ok_or("empty command line")?;
            let mut c = Command::new(prog);
            c.args(rest);
            c
        }
    };
    let create = |p: &Path| fs::File::create(p).map_err(|e| format!("{}: {e}", p.display()));
    cmd.stdin(Stdio::null())
        .stdout(create(stdout_path)?)
        .stderr(create(stderr_path)?);
    Ok(cmd)
}

/// A finished run of a command line template ([`run_template`]): where
/// its output went, and its times.
pub(crate) struct TemplateRun {
    /// The folder `{OUT}` named, emptied before the run.
    pub out: PathBuf,
    /// Its standard output.
    pub stdout: PathBuf,
    wall: f64,
    time_path: PathBuf,
}

impl TemplateRun {
    /// Its figures as round `round` of a row (GNU time's, when it ran
    /// under it).
    pub(crate) fn sample(&self, round: usize) -> RunSample {
        let timed = fs::read_to_string(&self.time_path)
            .ok()
            .and_then(|s| parse_time(&s));
        RunSample {
            round,
            wall_s: self.wall,
            user_s: timed.map(|t| t.1),
            sys_s: timed.map(|t| t.2),
            max_rss_kib: timed.map(|t| t.3),
        }
    }

    /// Removes what the run wrote (the `{OUT}` folder and its stdout).
    pub(crate) fn clean(&self) {
        let _ = fs::remove_dir_all(&self.out);
        let _ = fs::remove_file(&self.stdout);
    }
}

/// Runs `template` (with `{FILE}`, `{RULES}` and `{OUT}` replaced by
/// `file`, `rules` and a fresh folder in `tmp`) under GNU time when it is
/// installed; an exit status other than 0 is an error quoting the last
/// lines of its stderr.
pub(crate) fn run_template(
    template: &[String],
    (file, rules): (&Path, &Path),
    tmp: &Path,
    gnu_time: Option<&Path>,
) -> Result<TemplateRun, String> {
    let out = tmp.join("out");
    let _ = fs::remove_dir_all(&out);
    fs::create_dir_all(&out).map_err(|e| format!("{}: {e}", out.display()))?;
    let argv: Vec<String> = template
        .iter()
        .map(|a| {
            a.replace("{FILE}", &file.display().to_string())
                .replace("{RULES}", &rules.display().to_string())
                .replace("{OUT}", &out.display().to_string())
        })
        .collect();
    let (stdout_path, stderr_path, time_path) =
        (tmp.join("stdout"), tmp.join("stderr"), tmp.join("time"));
    let _ = fs::remove_file(&time_path);
    let mut cmd = timed_command(&argv, gnu_time, &time_path, &stdout_path, &stderr_path)?;
    let start = Instant::now();
    let status = cmd
        .status()
        .map_err(|e| format!("{}: {e}", argv.join(" ")))?;
    let wall = start.elapsed().as_secs_f64();
    if !status.success() {
        let err = fs::read_to_string(&stderr_path).unwrap_or_default();
        let err: Vec<&str> = err.lines().rev().take(3).collect();
        return Err(format!(
            "{} exited with {status}: {}",
            argv.join(" "),
            err.join(" / ")
        ));
    }
    Ok(TemplateRun {
        out,
        stdout: stdout_path,
        wall,
        time_path,
    })
}

/// One run of `t` on `file` in round `round`: its figures and what it found.
fn run_once(
    t: &Tool,
    round: usize,
    file: &Path,
    tmp: &Path,
    gnu_time: Option<&Path>,
) -> Result<(RunSample, Option<u64>), String> {
    let out_dir = tmp.join("out");
    let _ = fs::remove_dir_all(&out_dir);
    let port = free_udp_port();
    let collector = if matches!(t.kind, Kind::Softflowd | Kind::StreamcapIpfix) {
        Some(start_nfcapd(&tmp.join("nfcapd"), port)?)
    } else {
        None
    };
    if matches!(t.kind, Kind::Tcpflow | Kind::StreamcapParquet) {
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
    let status = cmd.status().map_err(|e| format!("{}: {e}", argv.join(" ")));
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
        Kind::Softflowd | Kind::StreamcapIpfix => found_nf,
        Kind::StreamcapParquet => parquet_rows(&out_dir.join("stats.json")),
    };
    if matches!(t.kind, Kind::Tcpflow | Kind::StreamcapParquet) {
        let _ = fs::remove_dir_all(&out_dir);
    }
    let timed = fs::read_to_string(&time_path)
        .ok()
        .and_then(|s| parse_time(&s));
    let sample = RunSample {
        round,
        wall_s: wall,
        user_s: timed.map(|t| t.1),
        sys_s: timed.map(|t| t.2),
        max_rss_kib: timed.map(|t| t.3),
    };
    Ok((sample, found))
}

/// The rows of the Parquet file that `streamcap --stats-json` reported
/// in `path` (its `exports` entry of kind `parquet`).
fn parquet_rows(path: &Path) -> Option<u64> {
    let v: serde_json::Value = serde_json::from_str(&fs::read_to_string(path).ok()?).ok()?;
    v.get("exports")?
        .as_array()?
        .iter()
        .find(|e| e.get("kind").and_then(|k| k.as_str()) == Some("parquet"))?
        .get("rows")?
        .as_u64()
}

/// A fresh copy of `file` in the scratch directory `tmp`, which every tool
/// reads for the workload (the original when copying fails), so that all
/// tools read one freshly written file with the same page-cache state.
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

/// Reads the whole file so that every run finds it in the page cache.
fn warm(file: &Path) {
    if let Ok(mut f) = fs::File::open(file) {
        let mut buf = vec![0u8; 1 << 20];
        while matches!(f.read(&mut buf), Ok(n) if n > 0) {}
    }
}

/// The text of `FILE.about` (how bench/run.sh made the file), if any.
fn about(file: &Path) -> Option<String> {
    let mut p = file.as_os_str().to_owned();
    p.push(".about");
    let text = fs::read_to_string(PathBuf::from(p)).ok()?;
    let text = text.trim();
    (!text.is_empty()).then(|| text.to_string())
}

/// One tool's runs on a workload, as they accumulate round by round.
struct Acc {
    runs: Vec<RunSample>,
    found: Option<u64>,
    failed: Option<String>,
    /// Why the tool is not run on this workload (`--max-run`).
    too_slow: Option<String>,
    /// Runs wanted (fewer than `--runs` for a slow tool).
    want: usize,
}

/// Machine-wide CPU ticks and the load average, taken before a workload.
pub(crate) struct HostMark {
    at: Instant,
    ticks: Option<host::CpuTicks>,
    loadavg: Option<[f64; 3]>,
}

impl HostMark {
    pub(crate) fn now() -> HostMark {
        HostMark {
            at: Instant::now(),
            ticks: host::cpu_ticks(),
            loadavg: host::loadavg(),
        }
    }

    /// The host's load from this mark to now, given the CPU seconds of the
    /// measured runs meanwhile.
    pub(crate) fn since(&self, measured_cpu_s: f64, clk_tck: f64) -> HostLoad {
        let elapsed_s = self.at.elapsed().as_secs_f64();
        let busy_cpu_s = self
            .ticks
            .zip(host::cpu_ticks())
            .map(|(a, b)| b.busy.saturating_sub(a.busy) as f64 / clk_tck);
        HostLoad {
            loadavg_start: self.loadavg,
            loadavg_end: host::loadavg(),
            elapsed_s,
            busy_cpu_s,
            measured_cpu_s,
            other_cpus: busy_cpu_s
                .filter(|_| elapsed_s > 0.0)
                .map(|b| (b - measured_cpu_s).max(0.0) / elapsed_s),
        }
    }
}

/// A tool's median seconds per packet on the workload with the most
/// packets it has run on so far (where start-up weighs least).
#[derive(Clone, Debug, PartialEq)]
struct Rate {
    workload: String,
    packets: u64,
    secs_per_packet: f64,
}

impl Rate {
    /// `old`, or this rate when its workload is larger.
    fn keep_largest(old: Option<Rate>, new: Rate) -> Rate {
        match old {
            Some(o) if o.packets >= new.packets => o,
            _ => new,
        }
    }
}

/// Why a tool is not run on a workload of `packets` packets: its `rate`
/// puts one run over `max_run` seconds.
fn too_slow(rate: Option<&Rate>, packets: u64, max_run: f64) -> Option<String> {
    let r = rate?;
    let est = r.secs_per_packet * packets as f64;
    (est > max_run).then(|| {
        format!(
            "one run would take about {est:.0} s at its rate on {} ({:.2} µs/packet), \
             over --max-run {max_run} s",
            r.workload,
            r.secs_per_packet * 1e6
        )
    })
}

/// Runs every tool `o.runs` times on one workload, round-robin, and
/// summarises the rows. Failed tools go to `skipped`. `rates` holds each
/// tool's [`Rate`] on the workloads before (updated here).
fn run_workload(
    o: &Opts,
    tools: &[Tool],
    (name, file): (&str, &Path),
    gnu_time: Option<&Path>,
    clk_tck: f64,
    rates: &mut [Option<Rate>],
    skipped: &mut Vec<Skipped>,
) -> Result<Workload, String> {
    let (packets, wire_bytes) =
        capinfo::totals(file).map_err(|e| format!("{}: {e}", file.display()))?;
    let file_bytes = fs::metadata(file).map(|m| m.len()).unwrap_or(0);
    eprintln!(
        "streamcap-bench: workload {name}: {} ({packets} packets, {:.1} MB on the wire)",
        file.display(),
        wire_bytes as f64 / 1e6
    );
    let input = fresh_copy(file, &o.tmp);
    warm(&input);
    let started = host::utc_now();
    let mark = HostMark::now();
    // Runs go round-robin (every tool once, then every tool again...) so
    // that a drift of the machine's speed during the workload touches
    // every tool alike, rather than the tools measured last, and so that
    // run i of one tool and run i of another make a pair for the ratios.
    let mut acc: Vec<Acc> = tools
        .iter()
        .zip(rates.iter())
        .map(|(_, rate)| Acc {
            runs: Vec::new(),
            found: None,
            failed: None,
            too_slow: too_slow(rate.as_ref(), packets, o.max_run),
            want: o.runs,
        })
        .collect();
    for round in 0..o.runs {
        for (t, a) in tools.iter().zip(acc.iter_mut()) {
            if a.failed.is_some() || a.too_slow.is_some() || round >= a.want {
                continue;
            }
            match run_once(t, round, &input, &o.tmp, gnu_time) {
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
    let measured: f64 = acc
        .iter()
        .flat_map(|a| a.runs.iter().filter_map(RunSample::cpu_s))
        .sum();
    let host_load = mark.since(measured, clk_tck);
    if input != file {
        let _ = fs::remove_file(&input);
    }
    let mut results = Vec::new();
    for ((t, a), rate) in tools.iter().zip(acc).zip(rates.iter_mut()) {
        if let Some(why) = a.too_slow {
            eprintln!(
                "streamcap-bench:   {} {}: skipped on {name}: {why}",
                t.tool, t.mode
            );
            skipped.push(Skipped {
                tool: format!("{} {} ({name})", t.tool, t.mode),
                reason: why,
            });
            continue;
        }
        if let Some(e) = a.failed {
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
        let Some(r) = ToolResult::summarise(
            &t.tool,
            &t.mode,
            t.pin,
            t.argv.join(" "),
            a.runs,
            a.found,
            t.found_unit,
            (packets, wire_bytes),
        ) else {
            continue;
        };
        if packets > 0 {
            let new = Rate {
                workload: name.to_string(),
                packets,
                secs_per_packet: r.wall_s.median / packets as f64,
            };
            *rate = Some(Rate::keep_largest(rate.take(), new));
        }
        eprintln!(
            "streamcap-bench:   {:<12} {:<44} {:>8.3} s  {}",
            r.tool,
            r.mode,
            r.wall_s.median,
            r.found
                .map_or("-".into(), |f| format!("{f} {}", r.found_unit))
        );
        results.push(r);
    }
    let mut w = Workload {
        name: name.to_string(),
        file: file.display().to_string(),
        about: about(file),
        file_bytes,
        packets,
        wire_bytes,
        started,
        host: host_load,
        results,
    };
    w.fill_ratios();
    Ok(w)
}

/// `streamcap-bench run ...`.
pub fn cmd_run(args: &[String]) -> Result<(), String> {
    let o = parse(args)?;
    fs::create_dir_all(&o.tmp).map_err(|e| format!("{}: {e}", o.tmp.display()))?;
    let started = host::utc_now();
    let loadavg_start = host::loadavg();
    let clk_tck = host::clk_tck();
    let gnu_time = which("/usr/bin/time");
    if gnu_time.is_none() {
        eprintln!("streamcap-bench: /usr/bin/time missing (apt-get install time): CPU and RSS not measured");
    }
    let (tools, mut skipped) = tools(&o);
    for s in &skipped {
        eprintln!("streamcap-bench: skipping {}: {}", s.tool, s.reason);
    }
    let mut workloads = Vec::new();
    let mut rates = vec![None; tools.len()];
    for (name, file) in &o.workloads {
        let w = run_workload(
            &o,
            &tools,
            (name, file),
            gnu_time.as_deref(),
            clk_tck,
            &mut rates,
            &mut skipped,
        )?;
        workloads.push(w);
    }
    let idle_connections = if o.idle.is_empty() {
        None
    } else {
        match crate::idle::run(
            &o.streamcap,
            o.peers.as_deref(),
            &o.idle,
            o.idle_baseline,
            &o.tmp.join("idle"),
            gnu_time.as_deref(),
        ) {
            Ok(r) => Some(r),
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
        header: RunHeader::ending_now(
            o.commit.clone(),
            started,
            o.runs,
            tools.iter().find_map(|t| t.pin),
            &o.streamcap,
            loadavg_start,
        ),
        streamcap_plain: o.plain.as_ref().map(|p| p.display().to_string()),
        workloads,
        skipped,
        idle_connections,
    };
    // The Markdown report, all at once on stdout.
    print!("{}", report.header.markdown("streamcap benchmark", "", ""));
    for w in &report.workloads {
        print!("{}", table::workload(w, report.header.machine.cpus));
        let suffix = format!(" ({})", w.name);
        print_skipped(
            report
                .skipped
                .iter()
                .filter(|s| !s.tool.ends_with(')') || s.tool.ends_with(&suffix)),
        );
    }
    if let Some(r) = &report.idle_connections {
        crate::idle::print(r);
        print_skipped(
            report
                .skipped
                .iter()
                .filter(|s| s.tool == "nids_streams" || s.tool == "nids_flows"),
        );
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn too_slow_estimates_from_the_largest_workload() {
        let rate = |workload: &str, packets, secs_per_packet| Rate {
            workload: workload.into(),
            packets,
            secs_per_packet,
        };
        // 20 µs/packet: 2 M packets = 40 s, 20 M = 400 s.
        let r = rate("campus", 2_000_000, 20e-6);
        assert_eq!(too_slow(Some(&r), 2_000_000, 300.0), None);
        let why = too_slow(Some(&r), 20_000_000, 300.0).unwrap();
        assert!(why.contains("about 400 s at its rate on campus"), "{why}");
        assert_eq!(too_slow(None, u64::MAX, 1.0), None);
        // A smaller workload (start-up weighs more) does not replace it,
        // nor does one of the same size; a larger one does.
        let small = rate("telnet", 14_000, 1e-3);
        assert_eq!(Rate::keep_largest(Some(r.clone()), small), r);
        let same = rate("campus-small", 2_000_000, 5e-6);
        assert_eq!(Rate::keep_largest(Some(r.clone()), same), r);
        let big = rate("corpus", 8_000_000, 1e-6);
        assert_eq!(Rate::keep_largest(Some(r), big.clone()), big);
        assert_eq!(Rate::keep_largest(None, big.clone()), big);
    }

    #[test]
    fn pinned_tool_runs_under_taskset() {
        let t = Tool {
            tool: "streamcap".into(),
            mode: "flows".into(),
            kind: Kind::Streamcap,
            argv: vec!["/bin/streamcap".into(), "flows".into()],
            found_unit: "conn",
            pin: None,
        };
        let p = t.pinned(Path::new("/usr/bin/taskset"), 1);
        assert_eq!(p.mode, "flows, 1 CPU");
        assert_eq!(p.pin, Some(1));
        assert_eq!(
            p.argv,
            ["/usr/bin/taskset", "-c", "1", "/bin/streamcap", "flows"]
        );
    }

    #[test]
    fn options_one_cpu_and_commit() {
        let args = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let o = parse(&args(&[
            "--streamcap",
            "sc",
            "--one-cpu",
            "none",
            "--commit",
            "abc",
            "w=f.pcap",
        ]))
        .unwrap();
        assert_eq!((o.one_cpu, o.commit.as_deref()), (None, Some("abc")));
        let o = parse(&args(&["--streamcap", "sc", "--one-cpu", "1", "w=f"])).unwrap();
        assert_eq!(o.one_cpu, Some(1));
        assert!(parse(&args(&["--streamcap", "sc", "--one-cpu", "x", "w=f"])).is_err());
    }

    #[test]
    fn parquet_rows_from_the_stats() {
        let dir = std::env::temp_dir().join(format!("sc-bench-pq-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let p = dir.join("stats.json");
        fs::write(
            &p,
            r#"{"exports":[{"kind":"ipfix","records":3},{"kind":"parquet","rows":40}]}"#,
        )
        .unwrap();
        assert_eq!(parquet_rows(&p), Some(40));
        fs::write(&p, r#"{"exports":[]}"#).unwrap();
        assert_eq!(parquet_rows(&p), None);
        assert_eq!(parquet_rows(&dir.join("missing.json")), None);
        let _ = fs::remove_dir_all(&dir);
    }

    #[test]
    fn gnu_time_line() {
        assert_eq!(
            parse_time("Command exited with non-zero status 1\n0.52 0.40 0.11 20480\n"),
            Some((0.52, 0.40, 0.11, 20480))
        );
        assert_eq!(parse_time("0.52 0.40 0.11\n"), None);
        assert_eq!(parse_time("a b c d\n"), None);
        assert_eq!(parse_time(""), None);
    }
}
