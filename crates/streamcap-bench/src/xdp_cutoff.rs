//! `streamcap-bench xdp-cutoff`: Scap's cutoff experiment (Figure 8: loss,
//! CPU and softirq load against the stream cutoff at a fixed rate) on a
//! veth pair.
//!
//! A network namespace of its own holds a veth pair (`sca` → `scb`);
//! `tcpreplay --preload-pcap --timer=nano` sends a trace onto `sca` at one
//! fixed rate, and one receiver at a time captures on `scb`:
//!
//! - `streamcap flows -i scb --cutoff C -o /dev/null` for each cutoff C:
//!   every packet is copied to user space and the bytes past the cutoff are
//!   discarded there;
//! - the same with `--xdp`: the packets of streams past their cutoff are
//!   dropped by an XDP program before the kernel's stack (a build with the
//!   `xdp` feature; skipped, with the reason, where the build or the
//!   kernel cannot);
//! - peers without a cutoff, measured once each: libnids
//!   (`nids_analyse -i scb -n 0`: every TCP stream reassembled and
//!   delivered, no analysis) and `tcpdump -w /dev/null -B 32768`;
//! - no receiver at all (the replay's own cost), before and after the
//!   others: the baseline.
//!
//! CPU is the whole machine's (/proc/stat over all CPUs: the window's
//! length times the CPUs, less their idle and iowait time) over the window
//! in which packets flow on `sca` ([`crate::replay_window`]): the kernel's
//! work on the veth, done in softirq on the sender's CPU and charged to no
//! receiver, is in it. The receiver's own CPU seconds (its rusage, from
//! start to exit) are reported next to it. A run in which other processes
//! kept more than `--max-others` CPUs busy (default 0.1) is run again, up
//! to `--tries` times (default 3). A packet is handled when the
//! receiver's socket took it without dropping it, or (`--xdp`) the XDP
//! program dropped it on purpose (the summary's `xdp:` line); loss is the
//! share of the packets sent that were not handled.

use crate::attacks::human_bytes;
use crate::live::{spawn_ready, Netns, Running, Tool};
use crate::nic_path::NicPath;
use crate::overload_live::{cannot_replay, field, nids_analyse, stop, tcpreplay, Sent};
use crate::plot::{self, Panel, Series};
use crate::replay_window::{net_dev_of, Sampler, Window};
use crate::{host, nids};
use serde::Serialize;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

/// The cutoffs measured unless `--cutoffs` says otherwise.
const DEFAULT_CUTOFFS: &str = "0,1KiB,10KiB,100KiB,1MiB,unlimited";

/// Streams longer than this are the trace's long streams.
const LONG_STREAM: u64 = 1 << 20;

/// The fixed rate of the replay.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
enum Rate {
    /// Gbit/s (`tcpreplay --mbps`).
    Gbps(f64),
    /// Packets per second (`tcpreplay --pps`).
    Pps(f64),
}

impl Rate {
    /// `0.5` or `0.5gbps` (Gbit/s), `500mbps`, `70000pps`; `gbit/s` and
    /// `mbit/s` too.
    fn parse(s: &str) -> Result<Rate, String> {
        let l = s.trim().to_ascii_lowercase();
        let (num, unit) = match l.find(|c: char| c.is_ascii_alphabetic()) {
            Some(i) => l.split_at(i),
            None => (l.as_str(), "gbps"),
        };
        let n: f64 = num.trim().parse().map_err(|e| format!("--rate {s}: {e}"))?;
        if !(n.is_finite() && n > 0.0) {
            return Err(format!("--rate {s}: must be positive"));
        }
        let r = match unit.trim() {
            "gbps" | "gbit/s" | "g" => Rate::Gbps(n),
            "mbps" | "mbit/s" | "m" => Rate::Gbps(n / 1000.0),
            "pps" => Rate::Pps(n),
            u => {
                return Err(format!(
                    "--rate {s}: unknown unit {u:?} (gbps, mbps or pps)"
                ))
            }
        };
        match r {
            Rate::Gbps(g) if g > 100.0 => Err(format!("--rate {s}: more than 100 Gbit/s")),
            _ => Ok(r),
        }
    }

    /// tcpreplay's rate option.
    fn tcpreplay_arg(self) -> String {
        match self {
            Rate::Gbps(g) => format!("--mbps={:.1}", g * 1000.0),
            Rate::Pps(p) => format!("--pps={p:.0}"),
        }
    }

    /// As the tables print it.
    fn describe(self) -> String {
        match self {
            Rate::Gbps(g) => format!("{g} Gbit/s"),
            Rate::Pps(p) => format!("{p:.0} packets/s"),
        }
    }
}

/// One cutoff: as streamcap's `--cutoff` takes it, and in bytes.
#[derive(Clone, Debug, PartialEq, Serialize)]
struct Cutoff {
    /// `0`, `1KiB`, ..., `unlimited`.
    label: String,
    /// Bytes (`None`: unlimited).
    bytes: Option<u64>,
}

impl Cutoff {
    /// A size with an optional unit (B, kB, MB, GB, KiB, MiB, GiB), or
    /// `unlimited`.
    fn parse(s: &str) -> Result<Cutoff, String> {
        let t = s.trim();
        if matches!(
            t.to_ascii_lowercase().as_str(),
            "unlimited" | "none" | "inf" | "max"
        ) {
            return Ok(Cutoff {
                label: "unlimited".into(),
                bytes: None,
            });
        }
        let at = t
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(t.len());
        let (num, unit) = t.split_at(at);
        let unit = if unit.trim().is_empty() {
            "B"
        } else {
            unit.trim()
        };
        let bytes = human_bytes(num, unit).ok_or_else(|| {
            format!("--cutoffs {t}: not a size (a number and B, kB, MB, GB, KiB, MiB or GiB, or unlimited)")
        })?;
        Ok(Cutoff {
            label: t.into(),
            bytes: Some(bytes as u64),
        })
    }
}

/// Parsed options.
struct Opts {
    streamcap: PathBuf,
    pcap: PathBuf,
    peers: Option<PathBuf>,
    rate: Rate,
    cutoffs: Vec<Cutoff>,
    packets: Option<u64>,
    wait_idle: Option<f64>,
    max_others: f64,
    tries: u32,
    json: Option<PathBuf>,
    png: Option<PathBuf>,
    /// Capture on the NIC path (`crate::nic_path`) instead of `scb`.
    nic_path: bool,
}

impl Opts {
    /// The interface the receivers capture on.
    fn iface(&self) -> &'static str {
        if self.nic_path {
            crate::nic_path::IFACE
        } else {
            "scb"
        }
    }
}

fn parse(args: &[String]) -> Result<Opts, String> {
    let mut o = Opts {
        streamcap: PathBuf::new(),
        pcap: PathBuf::new(),
        peers: None,
        rate: Rate::Gbps(0.5),
        cutoffs: Vec::new(),
        packets: None,
        wait_idle: None,
        max_others: 0.1,
        tries: 3,
        json: None,
        png: None,
        nic_path: false,
    };
    let mut cutoffs = DEFAULT_CUTOFFS.to_string();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut val = || it.next().cloned().ok_or(format!("{a} needs a value"));
        match a.as_str() {
            "--streamcap" => o.streamcap = PathBuf::from(val()?),
            "--pcap" => o.pcap = PathBuf::from(val()?),
            "--peers" => o.peers = Some(PathBuf::from(val()?)),
            "--rate" => o.rate = Rate::parse(&val()?)?,
            "--cutoffs" => cutoffs = val()?,
            "--packets" => {
                o.packets = Some(
                    val()?
                        .parse::<u64>()
                        .ok()
                        .filter(|&n| n > 0)
                        .ok_or("--packets: not a positive whole number")?,
                )
            }
            "--wait-idle" => {
                o.wait_idle = Some(val()?.parse().map_err(|e| format!("--wait-idle: {e}"))?)
            }
            "--max-others" => {
                o.max_others = val()?.parse().map_err(|e| format!("--max-others: {e}"))?
            }
            "--tries" => {
                o.tries = val()?
                    .parse::<u32>()
                    .ok()
                    .filter(|&n| n > 0)
                    .ok_or("--tries: not a positive whole number")?
            }
            "--json" => o.json = Some(PathBuf::from(val()?)),
            "--png" => o.png = Some(PathBuf::from(val()?)),
            "--nic-path" => o.nic_path = true,
            other => return Err(format!("unexpected argument {other}")),
        }
    }
    if o.streamcap.as_os_str().is_empty() || o.pcap.as_os_str().is_empty() {
        return Err("xdp-cutoff needs --streamcap BIN and --pcap FILE".into());
    }
    o.cutoffs = cutoffs
        .split(',')
        .map(Cutoff::parse)
        .collect::<Result<_, _>>()?;
    Ok(o)
}

/// A receiver under test (or none: the baseline).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Receiver {
    /// No receiver: the replay's own cost.
    Baseline,
    /// `streamcap flows -i --cutoff C`: discards in user space.
    Copy,
    /// The same with `--xdp` (the driver's hook where it has one).
    Xdp,
    /// The same with `--xdp --xdp-mode generic` (the kernel's generic hook).
    XdpGeneric,
    /// `nids_analyse -i -n 0`.
    Libnids,
    /// `tcpdump -w /dev/null -B 32768`.
    Tcpdump,
}

impl Receiver {
    /// Every receiver, in the tables' order.
    const ALL: [Receiver; 6] = [
        Receiver::Copy,
        Receiver::Xdp,
        Receiver::XdpGeneric,
        Receiver::Libnids,
        Receiver::Tcpdump,
        Receiver::Baseline,
    ];

    /// The name in the tables and the chart.
    fn name(self) -> &'static str {
        match self {
            Receiver::Baseline => "no receiver (replay alone)",
            Receiver::Copy => "streamcap (user-space discard)",
            Receiver::Xdp => "streamcap --xdp",
            Receiver::XdpGeneric => "streamcap --xdp (generic)",
            Receiver::Libnids => "libnids (nids_analyse -n 0)",
            Receiver::Tcpdump => "tcpdump -w /dev/null",
        }
    }

    /// Whether it takes a cutoff (else it is measured once).
    fn has_cutoff(self) -> bool {
        matches!(self, Receiver::Copy | Receiver::Xdp | Receiver::XdpGeneric)
    }
}

/// The `xdp:` line of streamcap's summary.
#[derive(Clone, Debug, Serialize)]
pub struct XdpLine {
    /// Packets the XDP program dropped.
    pub packets: u64,
    /// Bytes it dropped, where the line gives them.
    pub bytes: Option<u64>,
    /// `native` or `generic`, where the line says.
    pub mode: Option<String>,
    /// The line itself.
    pub line: String,
}

/// Reads the `xdp:` line of a summary leniently: the number before
/// `packets`, the one before `bytes` (or a size such as `12.3 MB`), and
/// the word native or generic.
fn parse_xdp(text: &str) -> Option<XdpLine> {
    let line = text
        .lines()
        .map(str::trim)
        .find(|l| l.starts_with("xdp:") || l.starts_with("xdp "))?;
    let w: Vec<&str> = line
        .split(|c: char| c.is_whitespace() || c == ',' || c == '(' || c == ')' || c == ';')
        .filter(|x| !x.is_empty())
        .collect();
    let before = |word: &str| w.windows(2).find(|p| p[1].starts_with(word)).map(|p| p[0]);
    let packets = before("packet")?.parse().ok()?;
    let bytes = before("byte").and_then(|n| n.parse().ok()).or_else(|| {
        w.windows(2)
            .find_map(|p| human_bytes(p[0], p[1]).map(|b| b as u64))
    });
    let mode = ["native", "generic", "driver", "skb"]
        .into_iter()
        .find(|m| w.iter().any(|x| x.eq_ignore_ascii_case(m)))
        .map(String::from);
    Some(XdpLine {
        packets,
        bytes,
        mode,
        line: line.to_string(),
    })
}

/// What one receiver did at one cutoff.
#[derive(Clone, Debug, Serialize)]
pub struct RunResult {
    /// The receiver.
    pub receiver: String,
    /// Its cutoff (`None`: it takes none).
    pub cutoff: Option<String>,
    /// The cutoff in bytes (`None`: unlimited or none).
    pub cutoff_bytes: Option<u64>,
    /// What tcpreplay reported.
    pub replay: Sent,
    /// The whole machine's CPU while packets flowed (`None`: unmeasured).
    pub window: Option<Window>,
    /// CPU seconds the receiver used (its rusage, start to exit).
    pub receiver_cpu_s: Option<f64>,
    /// Seconds from the receiver's start to its exit.
    pub receiver_wall_s: Option<f64>,
    /// Packets its socket received, drops included (kernel count).
    pub kernel_received: Option<u64>,
    /// Packets the kernel dropped at its socket (buffer full).
    pub kernel_dropped: Option<u64>,
    /// What the XDP program dropped on purpose (`--xdp` runs).
    pub xdp: Option<XdpLine>,
    /// Packets the veth pair dropped (`sca` tx, `scb` rx).
    pub veth_dropped: u64,
    /// Packets handled: taken by the socket and not dropped there, plus
    /// those dropped in XDP.
    pub handled: Option<u64>,
    /// Sent packets not handled, percent.
    pub loss_pct: Option<f64>,
    /// Times the point ran (again when other processes disturbed it).
    pub tries: u32,
}

/// A receiver that did not run, and why.
#[derive(Clone, Debug, Serialize)]
pub struct Skipped {
    /// The receiver.
    pub receiver: String,
    /// Why.
    pub reason: String,
}

/// The trace, from `streamcap flows -r` on it.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Trace {
    /// Packets (of them, the ones replayed: `--packets`).
    pub packets: u64,
    /// Bytes on the wire.
    pub wire_bytes: u64,
    /// TCP stream bytes, both directions.
    pub tcp_stream_bytes: u64,
    /// Share of them in streams longer than 1 MiB, percent.
    pub long_stream_pct: f64,
    /// Per cutoff: the share of the TCP stream bytes within it, percent.
    pub kept_pct: Vec<(String, f64)>,
}

/// The whole experiment, as `--json` writes it.
#[derive(Clone, Debug, Serialize)]
struct Report {
    /// When it ran (UTC).
    date: String,
    /// The machine.
    machine: host::Machine,
    /// /proc/loadavg before.
    load_before: Option<[f64; 3]>,
    /// /proc/loadavg after.
    load_after: Option<[f64; 3]>,
    /// The trace file.
    pcap: String,
    /// What is in it.
    trace: Trace,
    /// The rate asked of tcpreplay.
    rate: Rate,
    /// The streamcap build.
    streamcap: String,
    /// Where the receivers capture: `veth` (`scb`, frames that arrive as
    /// the sender's `sk_buff`) or `nic-path` (`scd`, frames that arrive as
    /// XDP frames, `crate::nic_path`).
    path: &'static str,
    /// Every run, the baselines first.
    runs: Vec<RunResult>,
    /// Receivers that did not run.
    skipped: Vec<Skipped>,
}

/// Reads the trace's packets, wire bytes and TCP stream sizes (a
/// `streamcap flows -r` run with `--stats-json`).
fn trace_info(o: &Opts) -> Result<Trace, String> {
    let tmp = std::env::temp_dir();
    let pid = std::process::id();
    let flows = tmp.join(format!("{pid}-xdp-cutoff-flows.jsonl"));
    let stats = tmp.join(format!("{pid}-xdp-cutoff-stats.json"));
    let mut cmd = Command::new(&o.streamcap);
    cmd.args(["flows", "-q", "-r"])
        .arg(&o.pcap)
        .arg("-o")
        .arg(&flows)
        .arg("--stats-json")
        .arg(&stats);
    if let Some(n) = o.packets {
        cmd.args(["-c", &n.to_string()]);
    }
    let st = cmd
        .stdout(Stdio::null())
        .status()
        .map_err(|e| format!("cannot run {}: {e}", o.streamcap.display()))?;
    let read = |p: &Path| std::fs::read_to_string(p).map_err(|e| format!("{}: {e}", p.display()));
    let texts = (read(&flows), read(&stats));
    let _ = std::fs::remove_file(&flows);
    let _ = std::fs::remove_file(&stats);
    if !st.success() {
        return Err(format!(
            "streamcap flows -r {} failed ({st})",
            o.pcap.display()
        ));
    }
    let (flows, stats) = (texts.0?, texts.1?);
    let s: serde_json::Value =
        serde_json::from_str(&stats).map_err(|e| format!("streamcap's --stats-json: {e}"))?;
    let mut sizes = Vec::new();
    for (i, l) in flows.lines().enumerate() {
        let v: serde_json::Value =
            serde_json::from_str(l).map_err(|e| format!("flow record {}: {e}", i + 1))?;
        if v["proto"] == "tcp" {
            for d in ["orig", "resp"] {
                sizes.push(v[d]["stream_bytes"].as_u64().unwrap_or(0));
            }
        }
    }
    Ok(stream_shares(
        s["packets"]["read"].as_u64().unwrap_or(0),
        s["wire_bytes"].as_u64().unwrap_or(0),
        &sizes,
        &o.cutoffs,
    ))
}

/// The trace's figures from its TCP stream sizes (one a direction).
fn stream_shares(packets: u64, wire_bytes: u64, sizes: &[u64], cutoffs: &[Cutoff]) -> Trace {
    let total: u64 = sizes.iter().sum();
    let pct = |n: u64| 100.0 * n as f64 / total.max(1) as f64;
    Trace {
        packets,
        wire_bytes,
        tcp_stream_bytes: total,
        long_stream_pct: pct(sizes.iter().filter(|&&b| b > LONG_STREAM).sum()),
        kept_pct: cutoffs
            .iter()
            .map(|c| {
                let kept = sizes.iter().map(|&b| c.bytes.map_or(b, |c| b.min(c))).sum();
                (c.label.clone(), pct(kept))
            })
            .collect(),
    }
}

/// The receiver's command on `scb`, and what its stderr says once it
/// captures.
fn command(ns: &Netns, o: &Opts, r: Receiver, cutoff: &str) -> Option<(Command, &'static str)> {
    let sc = o.streamcap.to_str().unwrap_or_default();
    match r {
        Receiver::Baseline => None,
        Receiver::Copy | Receiver::Xdp | Receiver::XdpGeneric => {
            let mut args = vec![sc, "flows", "-i", o.iface(), "--cutoff", cutoff];
            if r == Receiver::Xdp {
                args.push("--xdp");
            }
            if r == Receiver::XdpGeneric {
                args.extend(["--xdp", "--xdp-mode", "generic"]);
            }
            args.extend(["-o", "/dev/null"]);
            Some((ns.cmd(&args), "capturing on"))
        }
        Receiver::Libnids => {
            let nids = nids_analyse(o.peers.as_ref()?).ok()?;
            let nids = nids.to_str().unwrap_or_default();
            Some((ns.cmd(&[nids, "-i", o.iface(), "-n", "0"]), "capturing on"))
        }
        Receiver::Tcpdump => Some(Tool::Tcpdump.command_on(ns, &o.streamcap, o.iface())),
    }
}

/// Why a receiver cannot run here, if it cannot.
fn unavailable(o: &Opts, r: Receiver) -> Option<String> {
    match r {
        Receiver::Baseline | Receiver::Copy => None,
        Receiver::Xdp | Receiver::XdpGeneric => {
            let help = Command::new(&o.streamcap)
                .args(["flows", "--help"])
                .output()
                .map(|out| String::from_utf8_lossy(&out.stdout).into_owned())
                .unwrap_or_default();
            (!help.contains("--xdp")).then(|| {
                format!(
                    "{} has no --xdp (cargo build --release -p streamcap-cli --features xdp)",
                    o.streamcap.display()
                )
            })
        }
        Receiver::Libnids => match &o.peers {
            None => Some("no --peers DIR".into()),
            Some(p) => nids_analyse(p).err(),
        },
        Receiver::Tcpdump => match Command::new("tcpdump").arg("--version").output() {
            Ok(_) => None,
            Err(e) => Some(format!("tcpdump: {e}")),
        },
    }
}

/// Packets the veth pair dropped so far.
fn veth_dropped(anchor: u32) -> u64 {
    net_dev_of(anchor, "sca").map_or(0, |c| c.tx_dropped)
        + net_dev_of(anchor, "scb").map_or(0, |c| c.rx_dropped)
}

/// The receiver's counters from its stderr: (received, dropped, xdp).
fn counters(r: Receiver, text: &str) -> (Option<u64>, Option<u64>, Option<XdpLine>) {
    match r {
        Receiver::Baseline => (None, None, None),
        Receiver::Copy | Receiver::Xdp | Receiver::XdpGeneric => {
            let (received, dropped) = Tool::Streamcap.counters(text);
            (Some(received), Some(dropped), parse_xdp(text))
        }
        Receiver::Libnids => {
            let l = text.lines().find(|l| l.starts_with("pcap:"));
            (
                l.and_then(|l| field(l, "received=")),
                l.and_then(|l| field(l, "dropped=")),
                None,
            )
        }
        Receiver::Tcpdump => {
            let (received, dropped) = Tool::Tcpdump.counters(text);
            (Some(received), Some(dropped), None)
        }
    }
}

/// Runs one receiver (none: the baseline) through one replay.
fn run_one(
    ns: &Netns,
    anchor: u32,
    o: &Opts,
    nic: Option<&NicPath>,
    r: Receiver,
    cutoff: Option<&Cutoff>,
) -> Result<RunResult, String> {
    let veth0 = veth_dropped(anchor);
    let label = cutoff.map_or("unlimited", |c| c.label.as_str());
    // On the NIC path streamcap's program takes the place of the pass
    // program on `scd` for the run.
    let own_program = nic.filter(|_| r == Receiver::Xdp);
    if let Some(n) = own_program {
        n.free(ns)?;
    }
    let running = match command(ns, o, r, label) {
        Some((cmd, ready)) => spawn_ready(cmd, r.name(), ready).map(Some),
        None => Ok(None),
    };
    let running: Option<Running> = match running {
        Ok(r) => r,
        Err(e) => {
            if let Some(n) = own_program {
                n.restore(ns)?;
            }
            return Err(e);
        }
    };
    let sampler = Sampler::start(anchor, "sca");
    let sent = tcpreplay(ns, &o.pcap, &o.rate.tcpreplay_arg(), o.packets);
    let window = sampler.finish();
    let stopped = running.map(stop);
    if let Some(n) = own_program {
        n.restore(ns)?;
    }
    let sent = sent?;
    let (text, wall, cpu) = match &stopped {
        Some((t, w, c)) => (t.as_str(), Some(*w), Some(*c)),
        None => ("", None, None),
    };
    let (received, dropped, xdp) = counters(r, text);
    let handled = received
        .map(|n| n.saturating_sub(dropped.unwrap_or(0)) + xdp.as_ref().map_or(0, |x| x.packets));
    let loss_pct =
        handled.map(|h| 100.0 * sent.packets.saturating_sub(h) as f64 / sent.packets.max(1) as f64);
    Ok(RunResult {
        receiver: r.name().into(),
        cutoff: cutoff.map(|c| c.label.clone()),
        cutoff_bytes: cutoff.and_then(|c| c.bytes),
        window,
        receiver_cpu_s: cpu,
        receiver_wall_s: wall,
        kernel_received: received,
        kernel_dropped: dropped,
        xdp,
        veth_dropped: veth_dropped(anchor).saturating_sub(veth0),
        handled,
        loss_pct,
        tries: 1,
        replay: sent,
    })
}

/// [`run_one`] until other processes keep at most `--max-others` CPUs
/// busy during the run, `--tries` times at most (waiting for a quiet
/// machine before each with `--wait-idle`, else 5 s after a disturbed
/// one); the last run is kept, with the number of tries.
fn measure(
    ns: &Netns,
    anchor: u32,
    o: &Opts,
    nic: Option<&NicPath>,
    r: Receiver,
    cutoff: Option<&Cutoff>,
    what: &str,
) -> Result<RunResult, String> {
    let clk = host::clk_tck();
    let mut tries = 0;
    loop {
        tries += 1;
        if let Some(limit) = o.wait_idle {
            nids::wait_idle(limit, clk);
        }
        let mut run = run_one(ns, anchor, o, nic, r, cutoff)?;
        run.tries = tries;
        let others = run.window.and_then(|w| w.others_cpus).unwrap_or(0.0);
        if others <= o.max_others || tries >= o.tries {
            return Ok(run);
        }
        eprintln!(
            "streamcap-bench: {what}: other processes kept {others:.2} CPUs busy (over --max-others {}): again",
            o.max_others
        );
        if o.wait_idle.is_none() {
            std::thread::sleep(std::time::Duration::from_secs(5));
        }
    }
}

/// A process that sleeps in the namespace, so that its
/// `/proc/PID/net/dev` shows the veth pair's counters; killed on drop.
struct Anchor(Child);

impl Anchor {
    /// Starts `sleep` in `ns`.
    fn new(ns: &Netns) -> Result<Anchor, String> {
        let child = ns
            .cmd(&["sleep", "86400"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| format!("cannot start sleep in the namespace: {e}"))?;
        let a = Anchor(child);
        // `ip netns exec` enters the namespace, then execs sleep.
        for _ in 0..100 {
            if net_dev_of(a.0.id(), "sca").is_some() {
                return Ok(a);
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        Err("the veth pair does not show in /proc/PID/net/dev of a process in the namespace".into())
    }
}

impl Drop for Anchor {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Runs the experiment, prints the tables, writes `--json` and `--png`.
pub fn cmd_xdp_cutoff(args: &[String]) -> Result<(), String> {
    let o = parse(args)?;
    if let Some(why) = cannot_replay("xdp-cutoff") {
        println!("skipped: {why}");
        return Ok(());
    }
    let trace = trace_info(&o)?;
    let mut skipped = Vec::new();
    let mut receivers = Vec::new();
    for r in Receiver::ALL {
        let why = if o.nic_path && r == Receiver::XdpGeneric {
            Some("the NIC path needs a program in scd's driver hook, where the generic mode has none".to_string())
        } else {
            unavailable(&o, r)
        };
        match why {
            Some(reason) => {
                println!("skipped: {}: {reason}", r.name());
                skipped.push(Skipped {
                    receiver: r.name().into(),
                    reason,
                });
            }
            None => receivers.push(r),
        }
    }
    let load_before = host::loadavg();
    let ns = Netns::new()?;
    let nic = if o.nic_path {
        let tmp = std::env::temp_dir().join(format!("xdp-cutoff-{}", std::process::id()));
        std::fs::create_dir_all(&tmp).map_err(|e| format!("{}: {e}", tmp.display()))?;
        Some(NicPath::new(&ns, &tmp)?)
    } else {
        None
    };
    let anchor = Anchor::new(&ns)?;
    let pid = anchor.0.id();
    // The plan: baseline, each cutoff (user-space discard, then XDP), the
    // peers, the baseline again.
    let mut plan: Vec<(Receiver, Option<&Cutoff>)> = vec![(Receiver::Baseline, None)];
    for c in &o.cutoffs {
        for r in [Receiver::Copy, Receiver::Xdp, Receiver::XdpGeneric] {
            if receivers.contains(&r) {
                plan.push((r, Some(c)));
            }
        }
    }
    for r in [Receiver::Libnids, Receiver::Tcpdump] {
        if receivers.contains(&r) {
            plan.push((r, None));
        }
    }
    plan.push((Receiver::Baseline, None));
    let mut runs = Vec::new();
    for (i, &(r, cutoff)) in plan.iter().enumerate() {
        if skipped.iter().any(|s: &Skipped| s.receiver == r.name()) {
            continue;
        }
        let what = format!(
            "[{}/{}] {}{}",
            i + 1,
            plan.len(),
            r.name(),
            cutoff.map_or(String::new(), |c| format!(" at cutoff {}", c.label))
        );
        match measure(&ns, pid, &o, nic.as_ref(), r, cutoff, &what) {
            Ok(run) => {
                eprintln!(
                    "streamcap-bench: {what}: sent {:.3} Gbit/s, CPU {} (softirq {}), loss {}",
                    run.replay.gbps,
                    run.window
                        .map_or("unmeasured".into(), |w| format!("{:.1} %", w.busy_pct)),
                    run.window
                        .map_or("unmeasured".into(), |w| format!("{:.1} %", w.softirq_pct)),
                    run.loss_pct.map_or("-".into(), |l| format!("{l:.2} %"))
                );
                runs.push(run);
            }
            // A receiver that cannot start (XDP refused by the kernel, a
            // missing library) is left out from then on; a failed replay
            // ends the experiment.
            Err(e) if e.contains("did not start") || e.contains("cannot start") => {
                println!("skipped: {}: {e}", r.name());
                skipped.push(Skipped {
                    receiver: r.name().into(),
                    reason: e,
                });
            }
            Err(e) => return Err(e),
        }
    }
    drop(anchor);
    let report = Report {
        date: host::utc_now(),
        machine: host::Machine {
            timer: "CPU: /proc/stat of all CPUs over the window in which packets flow on the \
                    sender's veth (20 ms samples): busy = length x CPUs - idle - iowait; \
                    receiver: its rusage"
                .into(),
            ..host::machine()
        },
        load_before,
        load_after: host::loadavg(),
        pcap: o.pcap.display().to_string(),
        trace,
        rate: o.rate,
        streamcap: o.streamcap.display().to_string(),
        path: if o.nic_path { "nic-path" } else { "veth" },
        runs,
        skipped,
    };
    print_report(&report, &o.cutoffs);
    if let Some(j) = &o.json {
        let text = serde_json::to_string_pretty(&report).map_err(|e| e.to_string())?;
        std::fs::write(j, text + "\n").map_err(|e| format!("{}: {e}", j.display()))?;
    }
    if let Some(p) = &o.png {
        draw(p, &report, &o.cutoffs).map_err(|e| format!("{}: {e}", p.display()))?;
        eprintln!("streamcap-bench: wrote {}", p.display());
    }
    Ok(())
}

/// The mean of the baseline runs' busy and softirq percentages.
fn baseline(r: &Report) -> Option<(f64, f64)> {
    let w: Vec<Window> = r
        .runs
        .iter()
        .filter(|x| x.receiver == Receiver::Baseline.name())
        .filter_map(|x| x.window)
        .collect();
    let n = w.len() as f64;
    (n > 0.0).then(|| {
        (
            w.iter().map(|w| w.busy_pct).sum::<f64>() / n,
            w.iter().map(|w| w.softirq_pct).sum::<f64>() / n,
        )
    })
}

/// The run of `r` at `cutoff` (a receiver without cutoff: its one run).
fn run_of<'a>(rep: &'a Report, r: Receiver, cutoff: &Cutoff) -> Option<&'a RunResult> {
    rep.runs.iter().find(|x| {
        x.receiver == r.name()
            && (!r.has_cutoff() || x.cutoff.as_deref() == Some(cutoff.label.as_str()))
    })
}

/// The Markdown tables.
fn print_report(r: &Report, cutoffs: &[Cutoff]) {
    let pct = |v: Option<f64>| v.map_or("–".into(), |v| format!("{v:.1}"));
    println!();
    println!(
        "## XDP cutoff: CPU and loss against the stream cutoff — {} ({} packets, {:.1} MB on the wire) at {}, captured on {}",
        r.pcap,
        r.trace.packets,
        r.trace.wire_bytes as f64 / 1e6,
        r.rate.describe(),
        if r.path == "veth" {
            "the veth (scb)"
        } else {
            "the NIC path (scd, frames redirected in XDP)"
        }
    );
    println!();
    let kept: Vec<String> = r
        .trace
        .kept_pct
        .iter()
        .map(|(c, p)| format!("{c} {p:.1} %"))
        .collect();
    println!(
        "Trace: {:.1} % of its {:.1} MB of TCP stream bytes are in streams longer than 1 MiB; share within each cutoff: {}.",
        r.trace.long_stream_pct,
        r.trace.tcp_stream_bytes as f64 / 1e6,
        kept.join(", ")
    );
    let load = |l: Option<[f64; 3]>| l.map_or("?".into(), |l| format!("{:.2}", l[0]));
    println!(
        "{}, {} CPUs, kernel {}, {}; load average {} before, {} after.",
        r.machine.cpu_model,
        r.machine.cpus,
        r.machine.kernel,
        r.date,
        load(r.load_before),
        load(r.load_after)
    );
    let base = baseline(r);
    if let Some((b, s)) = base {
        println!(
            "CPU: % of all CPUs (/proc/stat) while packets flow; the replay alone takes {b:.1} % (softirq {s:.1} %)."
        );
    }
    println!();
    // One row a cutoff, CPU and loss of each receiver.
    let shown: Vec<Receiver> = Receiver::ALL
        .into_iter()
        .filter(|&x| x != Receiver::Baseline && r.runs.iter().any(|y| y.receiver == x.name()))
        .collect();
    print!("| cutoff |");
    for x in &shown {
        print!(" {} CPU % | above replay | loss % |", x.name());
    }
    println!();
    println!("|---|{}", "---:|---:|---:|".repeat(shown.len()));
    for c in cutoffs {
        print!("| {} |", c.label);
        for &x in &shown {
            match run_of(r, x, c) {
                Some(run) => {
                    let busy = run.window.map(|w| w.busy_pct);
                    print!(
                        " {} | {} | {} |",
                        pct(busy),
                        pct(busy.zip(base).map(|(b, (base, _))| b - base)),
                        run.loss_pct.map_or("–".into(), |l| format!("{l:.2}"))
                    );
                }
                None => print!(" – | – | – |"),
            }
        }
        println!();
    }
    println!();
    println!("| receiver | cutoff | sent Gbit/s | sent pps | window s | CPU % | CPU % (ticks) | softirq % | others' CPUs | tries | receiver CPU s | received | kernel drops | in XDP | veth drops | loss % |");
    println!("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    let num = |v: Option<u64>| v.map_or("–".into(), |v| v.to_string());
    for x in &r.runs {
        println!(
            "| {} | {} | {:.3} | {:.0} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            x.receiver,
            x.cutoff.as_deref().unwrap_or("–"),
            x.replay.gbps,
            x.replay.pps,
            x.window.map_or("–".into(), |w| format!("{:.2}", w.seconds)),
            pct(x.window.map(|w| w.busy_pct)),
            pct(x.window.map(|w| w.busy_pct_ticks)),
            pct(x.window.map(|w| w.softirq_pct)),
            x.window
                .and_then(|w| w.others_cpus)
                .map_or("–".into(), |c| format!("{c:.2}")),
            x.tries,
            x.receiver_cpu_s.map_or("–".into(), |c| format!("{c:.2}")),
            num(x.kernel_received),
            num(x.kernel_dropped),
            num(x.xdp.as_ref().map(|x| x.packets)),
            x.veth_dropped,
            x.loss_pct.map_or("–".into(), |l| format!("{l:.2}"))
        );
    }
    for x in r.runs.iter().filter_map(|x| x.xdp.as_ref()).take(1) {
        println!();
        println!("streamcap's xdp line, e.g.: `{}`", x.line);
    }
}

/// The chart: CPU, softirq and loss against the cutoff, one line a
/// receiver (those without a cutoff, and the baseline, flat).
fn draw(path: &Path, r: &Report, cutoffs: &[Cutoff]) -> Result<(), String> {
    let names: Vec<String> = cutoffs.iter().map(|c| c.label.clone()).collect();
    let lines = |value: &dyn Fn(&RunResult) -> Option<f64>| -> Vec<Series> {
        Receiver::ALL
            .into_iter()
            .filter(|&x| x != Receiver::Baseline)
            .map(|x| Series {
                name: x.name().into(),
                points: cutoffs
                    .iter()
                    .enumerate()
                    .filter_map(|(i, c)| Some((i as f64, value(run_of(r, x, c)?)?)))
                    .collect(),
            })
            .filter(|s| !s.points.is_empty())
            .collect()
    };
    let mut cpu = lines(&|x| x.window.map(|w| w.busy_pct));
    let mut soft = lines(&|x| x.window.map(|w| w.softirq_pct));
    let loss = lines(&|x| x.loss_pct);
    if let Some((b, s)) = baseline(r) {
        let flat = |y: f64| Series {
            name: Receiver::Baseline.name().into(),
            points: (0..cutoffs.len()).map(|i| (i as f64, y)).collect(),
        };
        cpu.push(flat(b));
        soft.push(flat(s));
    }
    let sent: Vec<f64> = r.runs.iter().map(|x| x.replay.gbps).collect();
    let reached = format!(
        "{:.2}-{:.2} Gbit/s reached",
        sent.iter().copied().fold(f64::INFINITY, f64::min),
        sent.iter().copied().fold(0.0, f64::max)
    );
    let panel = |title: &str, y: &'static str, series: Vec<Series>| Panel {
        title: format!(
            "{title} — {} asked, {reached}{}",
            r.rate.describe(),
            if r.path == "veth" { "" } else { ", NIC path" }
        ),
        labels: ("stream cutoff", y),
        series,
        x_names: names.clone(),
        headroom: 1.6,
        min_top: 1.0,
    };
    plot::panels(
        path,
        &[
            panel("CPU, all CPUs", "busy % of all CPUs", cpu),
            panel("Softirq", "softirq % of all CPUs", soft),
            panel("Packet loss", "% of packets sent", loss),
        ],
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_and_cutoffs_parse() {
        assert_eq!(Rate::parse("0.5"), Ok(Rate::Gbps(0.5)));
        assert_eq!(Rate::parse("2Gbit/s"), Ok(Rate::Gbps(2.0)));
        assert_eq!(Rate::parse("500mbps"), Ok(Rate::Gbps(0.5)));
        assert_eq!(Rate::parse("70000pps"), Ok(Rate::Pps(70000.0)));
        assert!(Rate::parse("0").is_err() && Rate::parse("1 furlong").is_err());
        assert_eq!(Rate::Gbps(0.5).tcpreplay_arg(), "--mbps=500.0");
        let c: Vec<Option<u64>> = DEFAULT_CUTOFFS
            .split(',')
            .map(|c| Cutoff::parse(c).map(|c| c.bytes))
            .collect::<Result<_, _>>()
            .expect("the default cutoffs parse");
        assert_eq!(
            c,
            [
                Some(0),
                Some(1024),
                Some(10240),
                Some(102400),
                Some(1 << 20),
                None
            ]
        );
        assert!(Cutoff::parse("10 furlongs").is_err());
    }

    #[test]
    fn options_are_checked() {
        let a = |s: &str| s.split(' ').map(String::from).collect::<Vec<_>>();
        assert!(parse(&a("--pcap x")).is_err());
        assert!(parse(&a("--pcap x --streamcap s --packets 0")).is_err());
        let o = parse(&a("--pcap x --streamcap s --rate 1 --cutoffs 0,unlimited")).ok();
        assert_eq!(o.as_ref().map(|o| o.rate), Some(Rate::Gbps(1.0)));
        assert_eq!(o.map(|o| o.cutoffs.len()), Some(2));
    }

    #[test]
    fn the_xdp_line_is_read_leniently() {
        let t = "streamcap: scb\n  kernel       10 passed the kernel filter, 0 dropped by the kernel (ring full), 0 queue freezes\n  \
                 xdp:         123456 packets, 98765432 bytes dropped in XDP (native)\n";
        let x = parse_xdp(t).expect("an xdp line");
        assert_eq!((x.packets, x.bytes), (123456, Some(98765432)));
        assert_eq!(x.mode.as_deref(), Some("native"));
        let x = parse_xdp("  xdp: dropped 42 packets (1.50 MB), mode generic\n").expect("read");
        assert_eq!((x.packets, x.bytes), (42, Some(1_500_000)));
        assert_eq!(x.mode.as_deref(), Some("generic"));
        assert!(parse_xdp("  kernel 1 passed the kernel filter\n").is_none());
        // As streamcap-cli's summary_line writes it.
        let x = parse_xdp(
            "  xdp          917 packets (1263026 bytes) dropped in XDP (generic mode); \
             4 streams listed, 0 listed again, 0 timed out, 0 not listed (map of 65536 full)\n",
        )
        .expect("read");
        assert_eq!((x.packets, x.bytes), (917, Some(1263026)));
        assert_eq!(x.mode.as_deref(), Some("generic"));
        assert_eq!(
            Tool::Streamcap.counters(t),
            (10, 0),
            "the kernel line of the same summary"
        );
    }

    #[test]
    fn stream_shares_count_bytes_within_each_cutoff() {
        let cutoffs: Vec<Cutoff> = ["0", "1KiB", "unlimited"]
            .into_iter()
            .map(|c| Cutoff::parse(c).expect("a cutoff"))
            .collect();
        let t = stream_shares(5, 50, &[500, 3 << 20, 1 << 20], &cutoffs);
        let total = 500 + (3 << 20) + (1 << 20);
        assert_eq!(t.tcp_stream_bytes, total);
        assert!((t.long_stream_pct - 100.0 * (3u64 << 20) as f64 / total as f64).abs() < 1e-9);
        let kept: Vec<f64> = t.kept_pct.iter().map(|k| k.1).collect();
        assert_eq!(kept[0], 0.0);
        assert!((kept[1] - 100.0 * (500 + 2048) as f64 / total as f64).abs() < 1e-9);
        assert!((kept[2] - 100.0).abs() < 1e-9);
    }
}
