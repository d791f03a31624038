//! `streamcap-bench live`: the highest replay rate that a live capture takes
//! without kernel drops, for `streamcap flows -i` and for
//! `tcpdump -w /dev/null` on the same veth pair.
//!
//! A network namespace of its own holds a veth pair (`sca` → `scb`). For each
//! rate of a ladder, the capturing tool starts on `scb`, `streamcap replay`
//! sends a fixed number of frames of the workload onto `sca` at that rate,
//! and the tool is stopped with SIGINT; its kernel drop counter decides. The
//! sender is one thread doing one `send` per frame, so the highest rate it
//! reaches bounds the ladder: the achieved rate is reported next to the
//! asked one.

use serde::Serialize;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStderr, Command, Stdio};
use std::time::{Duration, Instant};

/// What one tool did at one rate.
#[derive(Clone, Debug, Serialize)]
pub struct Step {
    /// Packets per second asked of the sender (`None` = as fast as it goes).
    pub asked_pps: Option<f64>,
    /// Packets per second the sender reached.
    pub sent_pps: f64,
    /// Frames sent.
    pub sent: u64,
    /// Packets the tool's socket received (kernel count).
    pub received: u64,
    /// Packets the kernel dropped (ring or buffer full).
    pub dropped: u64,
}

/// One tool's ladder and its best loss-free rate.
#[derive(Clone, Debug, Serialize)]
pub struct ToolResult {
    /// The tool and mode.
    pub tool: String,
    /// Every rate tried.
    pub steps: Vec<Step>,
    /// The highest achieved send rate with zero kernel drops.
    pub best_lossless_pps: Option<f64>,
}

/// Parsed options.
struct Opts {
    streamcap: PathBuf,
    pcap: PathBuf,
    frames: u64,
    rates: Vec<Option<f64>>,
    json: Option<PathBuf>,
}

fn parse(args: &[String]) -> Result<Opts, String> {
    let mut o = Opts {
        streamcap: PathBuf::new(),
        pcap: PathBuf::new(),
        frames: 1_000_000,
        rates: vec![Some(100_000.0), Some(200_000.0), None],
        json: None,
    };
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut val = || it.next().cloned().ok_or(format!("{a} needs a value"));
        match a.as_str() {
            "--streamcap" => o.streamcap = PathBuf::from(val()?),
            "--pcap" => o.pcap = PathBuf::from(val()?),
            "--frames" => o.frames = val()?.parse().map_err(|e| format!("--frames: {e}"))?,
            "--json" => o.json = Some(PathBuf::from(val()?)),
            "--rates" => {
                o.rates = val()?
                    .split(',')
                    .map(|r| match r.trim() {
                        "max" => Ok(None),
                        n => n
                            .parse::<f64>()
                            .map(Some)
                            .map_err(|e| format!("--rates {n}: {e}")),
                    })
                    .collect::<Result<_, _>>()?
            }
            other => return Err(format!("unexpected argument {other}")),
        }
    }
    if o.streamcap.as_os_str().is_empty() || o.pcap.as_os_str().is_empty() {
        return Err("live needs --streamcap BIN and --pcap FILE".into());
    }
    Ok(o)
}

/// The test namespace; deleted on drop.
pub(crate) struct Netns(String);

impl Netns {
    /// Creates the namespace `scbench-PID` with the veth pair `sca` ↔
    /// `scb` (MTU 9000, up, IPv6 off).
    pub(crate) fn new() -> Result<Netns, String> {
        let ns = Netns(format!("scbench-{}", std::process::id()));
        let steps: [&[&str]; 7] = [
            &["netns", "add", &ns.0],
            &[
                "-n", &ns.0, "link", "add", "sca", "type", "veth", "peer", "name", "scb",
            ],
            &["-n", &ns.0, "link", "set", "sca", "mtu", "9000"],
            &["-n", &ns.0, "link", "set", "scb", "mtu", "9000"],
            &["-n", &ns.0, "link", "set", "sca", "up"],
            &["-n", &ns.0, "link", "set", "scb", "up"],
            &["-n", &ns.0, "link", "show", "scb"],
        ];
        for (i, args) in steps.iter().enumerate() {
            if i == 4 {
                let _ = ns
                    .cmd(&["sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1"])
                    .output();
            }
            let o = Command::new("ip")
                .args(*args)
                .output()
                .map_err(|e| format!("cannot run ip: {e}"))?;
            if !o.status.success() {
                return Err(format!(
                    "ip {}: {}",
                    args.join(" "),
                    String::from_utf8_lossy(&o.stderr).trim()
                ));
            }
        }
        Ok(ns)
    }

    /// The namespace's name.
    pub(crate) fn name(&self) -> &str {
        &self.0
    }

    /// `ip netns exec NS ARGS...`: a command run in the namespace.
    pub(crate) fn cmd(&self, args: &[&str]) -> Command {
        let mut c = Command::new("ip");
        c.args(["netns", "exec", &self.0]).args(args);
        c
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        let _ = Command::new("ip").args(["netns", "del", &self.0]).output();
    }
}

/// A capturing tool under test.
#[derive(Copy, Clone)]
pub(crate) enum Tool {
    /// `streamcap flows -i scb -o /dev/null`.
    Streamcap,
    /// `tcpdump -i scb -n -B 32768 -w /dev/null`.
    Tcpdump,
}

impl Tool {
    /// The name in the tables.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Tool::Streamcap => "streamcap flows -i",
            Tool::Tcpdump => "tcpdump -w /dev/null (-B 32768)",
        }
    }

    /// The command capturing on `scb` in `ns`, and the text of the stderr
    /// line that says it is capturing.
    pub(crate) fn command(self, ns: &Netns, streamcap: &Path) -> (Command, &'static str) {
        self.command_on(ns, streamcap, "scb")
    }

    /// [`Tool::command`] capturing on `iface` instead of `scb`.
    pub(crate) fn command_on(
        self,
        ns: &Netns,
        streamcap: &Path,
        iface: &str,
    ) -> (Command, &'static str) {
        match self {
            Tool::Streamcap => (
                ns.cmd(&[
                    streamcap.to_str().unwrap_or_default(),
                    "flows",
                    "-i",
                    iface,
                    "-o",
                    "/dev/null",
                ]),
                "capturing on",
            ),
            // The same 32 MiB of kernel buffer as streamcap's default ring.
            Tool::Tcpdump => (
                ns.cmd(&[
                    "tcpdump",
                    "-i",
                    iface,
                    "-n",
                    "-B",
                    "32768",
                    "-w",
                    "/dev/null",
                ]),
                "listening on",
            ),
        }
    }

    /// (received, dropped) from the tool's report on stderr: packets its
    /// socket received, drops included (the kernel's count), and those the
    /// kernel dropped there; 0 where the report lacks one.
    pub(crate) fn counters(self, text: &str) -> (u64, u64) {
        let num_before = |suffix: &str| -> u64 {
            text.lines()
                .find_map(|l| {
                    let i = l.find(suffix)?;
                    l[..i].split_whitespace().last()?.parse().ok()
                })
                .unwrap_or(0)
        };
        match self {
            Tool::Streamcap => (
                num_before(" passed the kernel filter"),
                num_before(" dropped by the kernel"),
            ),
            Tool::Tcpdump => (
                num_before(" packets received by filter"),
                num_before(" packets dropped by kernel"),
            ),
        }
    }
}

/// A receiver started by [`spawn_ready`], capturing.
pub(crate) struct Running {
    /// The process (`ip netns exec` execs the tool: this is its pid).
    pub(crate) child: Child,
    /// Its stderr, past the line that said it is capturing.
    pub(crate) err: BufReader<ChildStderr>,
    /// When it was started.
    pub(crate) started: Instant,
}

/// Starts `cmd` (stdin and stdout null, stderr piped) and returns when a
/// line of its stderr contains `ready`; when it exits first, the error
/// quotes what it wrote (`name` names it).
pub(crate) fn spawn_ready(mut cmd: Command, name: &str, ready: &str) -> Result<Running, String> {
    let started = Instant::now();
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot start {name}: {e}"))?;
    let stderr = child
        .stderr
        .take()
        .ok_or_else(|| format!("{name}: no stderr pipe"))?;
    let mut err = BufReader::new(stderr);
    let mut said = String::new();
    let mut line = String::new();
    loop {
        line.clear();
        match err.read_line(&mut line) {
            Ok(0) | Err(_) => {
                let _ = child.kill();
                let status = child.wait().map_or("?".into(), |s| s.to_string());
                return Err(format!("{name} did not start ({status}): {}", said.trim()));
            }
            Ok(_) if line.contains(ready) => break,
            Ok(_) => said.push_str(&line),
        }
    }
    Ok(Running {
        child,
        err,
        started,
    })
}

/// Starts the tool on `scb`; returns when it is capturing.
fn start(ns: &Netns, tool: Tool, streamcap: &Path) -> Result<Running, String> {
    let (cmd, ready) = tool.command(ns, streamcap);
    spawn_ready(cmd, tool.name(), ready)
}

/// Stops the tool with SIGINT and reads (received, dropped) from its report.
fn stop(mut run: Running, tool: Tool) -> (u64, u64) {
    std::thread::sleep(Duration::from_millis(500));
    let _ = Command::new("kill")
        .args(["-INT", &run.child.id().to_string()])
        .status();
    let mut text = String::new();
    let _ = std::io::Read::read_to_string(&mut run.err, &mut text);
    let _ = run.child.wait();
    tool.counters(&text)
}

/// Replays `frames` frames at `pps`; returns (sent, achieved pps).
fn replay(ns: &Netns, o: &Opts, pps: Option<f64>) -> Result<(u64, f64), String> {
    let mut args = vec![
        o.streamcap.to_str().unwrap_or_default().to_string(),
        "replay".into(),
        "-r".into(),
        o.pcap.to_str().unwrap_or_default().to_string(),
        "-i".into(),
        "sca".into(),
        "-c".into(),
        o.frames.to_string(),
    ];
    if let Some(p) = pps {
        args.extend(["--pps".into(), format!("{p:.0}")]);
    }
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = ns
        .cmd(&refs)
        .output()
        .map_err(|e| format!("cannot run streamcap replay: {e}"))?;
    let text = String::from_utf8_lossy(&out.stderr);
    if !out.status.success() {
        return Err(format!("streamcap replay failed: {text}"));
    }
    // "streamcap: N frames sent on sca, S skipped, T s, P pps, M Mbit/s"
    let sent = text
        .split_whitespace()
        .nth(1)
        .and_then(|n| n.parse().ok())
        .unwrap_or(0);
    let pps = text
        .split(", ")
        .find_map(|p| p.strip_suffix(" pps").and_then(|n| n.trim().parse().ok()))
        .unwrap_or(0.0);
    Ok((sent, pps))
}

/// Runs the ladder for every tool found and prints the table.
pub fn cmd_live(args: &[String]) -> Result<(), String> {
    let o = parse(args)?;
    let ns = Netns::new()?;
    let mut tools = vec![Tool::Streamcap];
    if Command::new("tcpdump").arg("--version").output().is_ok() {
        tools.push(Tool::Tcpdump);
    } else {
        println!("skipped: tcpdump: not installed");
    }
    let mut results = Vec::new();
    for tool in tools {
        let mut steps = Vec::new();
        for &rate in &o.rates {
            let running = start(&ns, tool, &o.streamcap)?;
            let sent = replay(&ns, &o, rate);
            let (received, dropped) = stop(running, tool);
            let (sent, sent_pps) = sent?;
            steps.push(Step {
                asked_pps: rate,
                sent_pps,
                sent,
                received,
                dropped,
            });
        }
        let best = steps
            .iter()
            .filter(|s| s.dropped == 0 && s.received >= s.sent)
            .map(|s| s.sent_pps)
            .fold(None, |m: Option<f64>, p| Some(m.map_or(p, |m| m.max(p))));
        results.push(ToolResult {
            tool: tool.name().into(),
            steps,
            best_lossless_pps: best,
        });
    }
    println!();
    println!(
        "## live capture on a veth pair — {} frames of {} per step",
        o.frames,
        o.pcap.display()
    );
    println!();
    println!("| tool | asked pps | sent pps | sent | received | kernel drops |");
    println!("|---|---:|---:|---:|---:|---:|");
    for r in &results {
        for s in &r.steps {
            println!(
                "| {} | {} | {:.0} | {} | {} | {} |",
                r.tool,
                s.asked_pps.map_or("max".into(), |p| format!("{p:.0}")),
                s.sent_pps,
                s.sent,
                s.received,
                s.dropped
            );
        }
    }
    println!();
    for r in &results {
        println!(
            "highest loss-free rate, {}: {}",
            r.tool,
            r.best_lossless_pps
                .map_or("none".into(), |p| format!("{:.0} pps", p))
        );
    }
    if let Some(j) = &o.json {
        let text = serde_json::to_string_pretty(&results).map_err(|e| e.to_string())?;
        std::fs::write(j, text + "\n").map_err(|e| format!("{}: {e}", j.display()))?;
    }
    Ok(())
}
