//! `streamcap-bench bursts`: WireCAP's burst experiment (Wu and DeMar,
//! §4, Figures 8–9 in spirit) on a veth pair in a network namespace of its
//! own.
//!
//! A consumer with a fixed cost per packet (a busy wait of `--cost-ns`,
//! pinned to one CPU) reads one end of the pair while the other end gets a
//! burst of `B` frames sent as fast as one sender thread can (pinned to the
//! other CPU, where the kernel's receive path runs too). The loss is the
//! share of the burst the consumer never saw, for each receiver:
//!
//! - `af_packet`: a TPACKET_V3 ring of `--ring` bytes (streamcap's default
//!   ring, 32 MiB);
//! - `af_packet_pool`: the same with a ring as large as the AF_XDP pool;
//! - `af_xdp`: an AF_XDP socket whose pool has `--pool R,M` chunks of
//!   frames (needs a build with `--features xdp`);
//! - `tcpdump`: `tcpdump -w /dev/null` with its default buffer (its own
//!   per-packet cost, not the fixed one).
//!
//! Each point is the median of `--rounds` bursts. The report gives the
//! rate the sender reached, the drops the socket counted (ring or pool)
//! and the rest (lost before the socket: the veth's queue).

use crate::live::Netns;
use crate::plot::{self, Series};
use serde::Serialize;
use std::fs::File;
use std::os::fd::AsRawFd;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};
use streamcap::dispatch::workers::pin_current_thread;
use streamcap::source::af_xdp::PoolConfig;
use streamcap::source::{AfPacket, Injector, LiveConfig, LiveSocket, RingConfig};

/// Parsed options.
struct Opts {
    bursts: Vec<u64>,
    cost_ns: u64,
    size: usize,
    pool: PoolConfig,
    ring: usize,
    rounds: usize,
    receivers: Vec<Receiver>,
    json: Option<PathBuf>,
    png: Option<PathBuf>,
}

/// Who reads the burst.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
enum Receiver {
    AfPacket,
    AfPacketPool,
    AfXdp,
    Tcpdump,
}

impl Receiver {
    fn name(self) -> &'static str {
        match self {
            Receiver::AfPacket => "af_packet",
            Receiver::AfPacketPool => "af_packet_pool",
            Receiver::AfXdp => "af_xdp",
            Receiver::Tcpdump => "tcpdump",
        }
    }

    fn parse(s: &str) -> Option<Receiver> {
        [
            Receiver::AfPacket,
            Receiver::AfPacketPool,
            Receiver::AfXdp,
            Receiver::Tcpdump,
        ]
        .into_iter()
        .find(|r| r.name() == s)
    }
}

fn parse(args: &[String]) -> Result<Opts, String> {
    let mut o = Opts {
        bursts: vec![
            1_000, 2_000, 5_000, 10_000, 20_000, 50_000, 100_000, 200_000,
        ],
        cost_ns: 4_000,
        size: 1_000,
        pool: PoolConfig::default(),
        ring: RingConfig::default().total_size(),
        rounds: 3,
        receivers: vec![
            Receiver::AfPacket,
            Receiver::AfPacketPool,
            Receiver::AfXdp,
            Receiver::Tcpdump,
        ],
        json: None,
        png: None,
    };
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut val = || it.next().cloned().ok_or(format!("{a} needs a value"));
        let num = |v: String, what: &str| -> Result<u64, String> {
            v.parse::<u64>().map_err(|e| format!("{what} {v}: {e}"))
        };
        match a.as_str() {
            "--bursts" => {
                o.bursts = val()?
                    .split(',')
                    .map(|b| num(b.trim().to_string(), "--bursts"))
                    .collect::<Result<_, _>>()?
            }
            "--cost-ns" => o.cost_ns = num(val()?, "--cost-ns")?,
            "--size" => o.size = num(val()?, "--size")? as usize,
            "--ring" => o.ring = num(val()?, "--ring")? as usize,
            "--rounds" => o.rounds = num(val()?, "--rounds")?.max(1) as usize,
            "--pool" => {
                let v = val()?;
                let (r, m) = v
                    .split_once(',')
                    .ok_or(format!("--pool {v}: expected R,M"))?;
                o.pool.chunks = num(r.to_string(), "--pool")? as u32;
                o.pool.frames_per_chunk = num(m.to_string(), "--pool")? as u32;
            }
            "--receivers" => {
                o.receivers = val()?
                    .split(',')
                    .map(|r| Receiver::parse(r.trim()).ok_or(format!("--receivers: unknown {r}")))
                    .collect::<Result<_, _>>()?
            }
            "--json" => o.json = Some(PathBuf::from(val()?)),
            "--png" => o.png = Some(PathBuf::from(val()?)),
            other => return Err(format!("unexpected argument {other}")),
        }
    }
    o.pool.validate()?;
    if !(60..=1500).contains(&o.size) {
        return Err(format!("--size {}: 60 to 1500 bytes", o.size));
    }
    if o.bursts.iter().any(|&b| b == 0 || b > 10_000_000) {
        return Err("--bursts: 1 to 10,000,000 packets each".into());
    }
    Ok(o)
}

/// One burst through one receiver.
#[derive(Clone, Debug, Serialize)]
struct Point {
    receiver: Receiver,
    burst: u64,
    /// Frames the sender sent.
    sent: u64,
    /// The sender's rate, packets per second.
    send_pps: f64,
    /// Frames the consumer saw.
    received: u64,
    /// Drops the socket counted (ring full, pool exhausted).
    socket_drops: u64,
    /// The share of the burst lost, %.
    loss_pct: f64,
    /// AF_XDP: the fewest free chunks of the pool.
    min_free_chunks: Option<u32>,
}

/// The frame sent: UDP from 10.9.0.1 to 10.9.0.2, `size` bytes.
fn frame(size: usize) -> Vec<u8> {
    let mut f = vec![0x02, 0, 0, 0, 0, 2, 0x02, 0, 0, 0, 0, 1, 0x08, 0x00];
    let ip_len = (size - 14) as u16;
    f.extend_from_slice(&[0x45, 0]);
    f.extend_from_slice(&ip_len.to_be_bytes());
    f.extend_from_slice(&[0, 0, 0x40, 0, 64, 17, 0, 0, 10, 9, 0, 1, 10, 9, 0, 2]);
    f.extend_from_slice(&4000u16.to_be_bytes());
    f.extend_from_slice(&9u16.to_be_bytes());
    f.extend_from_slice(&(ip_len - 20).to_be_bytes());
    f.extend_from_slice(&[0, 0]);
    f.resize(size, 0x5a);
    f
}

/// Spins for `ns` nanoseconds: the consumer's fixed work per packet.
fn work(ns: u64) {
    let start = Instant::now();
    while (start.elapsed().as_nanos() as u64) < ns {
        std::hint::spin_loop();
    }
}

/// Sends `n` copies of `frame` as fast as it can; returns the rate.
fn blast(tx: &mut Injector, frame: &[u8], n: u64) -> Result<f64, String> {
    let start = Instant::now();
    for _ in 0..n {
        tx.send(frame).map_err(|e| e.to_string())?;
    }
    Ok(n as f64 / start.elapsed().as_secs_f64().max(1e-9))
}

/// Reads `socket` with the fixed cost until `done` is set and nothing came
/// for 300 ms; returns what it saw and the socket's drops.
fn consume<S: LiveSocket>(
    mut socket: S,
    cost_ns: u64,
    seen: &AtomicU64,
    done: &AtomicBool,
) -> (u64, Option<u32>) {
    let _ = pin_current_thread(1);
    let mut quiet_since = Instant::now();
    loop {
        let n = socket
            .next_block(Duration::from_millis(20), &mut |_p| {
                work(cost_ns);
                seen.fetch_add(1, Ordering::Relaxed);
            })
            .unwrap_or(0);
        if n > 0 {
            quiet_since = Instant::now();
        } else if done.load(Ordering::Relaxed) && quiet_since.elapsed() > Duration::from_millis(300)
        {
            break;
        }
    }
    let drops = socket.stats().map(|s| s.drops).unwrap_or(0);
    let min_free = socket.xsk_stats().map(|x| x.pool.min_free);
    (drops, min_free)
}

/// One burst through an in-process receiver.
fn socket_point<S: LiveSocket>(
    socket: S,
    o: &Opts,
    burst: u64,
    receiver: Receiver,
) -> Result<Point, String> {
    let seen = AtomicU64::new(0);
    let done = AtomicBool::new(false);
    let f = frame(o.size);
    let mut tx = Injector::open("sca").map_err(|e| e.to_string())?;
    let (pps, (drops, min_free)) = std::thread::scope(|s| {
        let consumer = s.spawn(|| consume(socket, o.cost_ns, &seen, &done));
        // Let the consumer start waiting first.
        std::thread::sleep(Duration::from_millis(50));
        let _ = pin_current_thread(0);
        let pps = blast(&mut tx, &f, burst);
        done.store(true, Ordering::Relaxed);
        let r = consumer.join().unwrap_or((0, None));
        (pps, r)
    });
    let pps = pps?;
    let received = seen.load(Ordering::Relaxed);
    Ok(Point {
        receiver,
        burst,
        sent: burst,
        send_pps: pps,
        received,
        socket_drops: drops,
        loss_pct: 100.0 * burst.saturating_sub(received) as f64 / burst as f64,
        min_free_chunks: min_free,
    })
}

/// One burst through tcpdump.
fn tcpdump_point(ns_name: &str, o: &Opts, burst: u64) -> Result<Point, String> {
    let mut child = Command::new("ip")
        .args(["netns", "exec", ns_name, "taskset", "-c", "1"])
        .args(["tcpdump", "-i", "scb", "-n", "-w", "/dev/null"])
        .stderr(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .map_err(|e| format!("cannot start tcpdump: {e}"))?;
    // tcpdump says "listening on" once its socket is bound.
    std::thread::sleep(Duration::from_millis(700));
    let f = frame(o.size);
    let mut tx = Injector::open("sca").map_err(|e| e.to_string())?;
    let _ = pin_current_thread(0);
    let pps = blast(&mut tx, &f, burst)?;
    std::thread::sleep(Duration::from_millis(1500));
    // SIGINT: tcpdump prints its counters and exits.
    let _ = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status();
    let mut err = String::new();
    if let Some(mut e) = child.stderr.take() {
        use std::io::Read;
        let _ = e.read_to_string(&mut err);
    }
    let _ = child.wait();
    let count = |what: &str| -> u64 {
        err.lines()
            .find(|l| l.contains(what))
            .and_then(|l| l.split_whitespace().next())
            .and_then(|n| n.parse().ok())
            .unwrap_or(0)
    };
    let received = count("packets captured");
    let drops = count("dropped by kernel");
    Ok(Point {
        receiver: Receiver::Tcpdump,
        burst,
        sent: burst,
        send_pps: pps,
        received,
        socket_drops: drops,
        loss_pct: 100.0 * burst.saturating_sub(received) as f64 / burst as f64,
        min_free_chunks: None,
    })
}

/// One burst through `receiver`, inside the namespace.
fn point(ns_name: &str, o: &Opts, burst: u64, receiver: Receiver) -> Result<Point, String> {
    let open_packet = |bytes: usize| -> Result<AfPacket, String> {
        let cfg = LiveConfig {
            ring: RingConfig::with_total_size(bytes),
            promiscuous: false,
            ..LiveConfig::new("scb")
        };
        AfPacket::open(&cfg).map_err(|e| e.to_string())
    };
    match receiver {
        Receiver::AfPacket => socket_point(open_packet(o.ring)?, o, burst, receiver),
        Receiver::AfPacketPool => {
            socket_point(open_packet(o.pool.bytes() as usize)?, o, burst, receiver)
        }
        Receiver::AfXdp => xdp_point(o, burst),
        Receiver::Tcpdump => tcpdump_point(ns_name, o, burst),
    }
}

#[cfg(feature = "xdp")]
fn xdp_point(o: &Opts, burst: u64) -> Result<Point, String> {
    use std::sync::Arc;
    use streamcap::source::af_xdp::{AfXdp, AfXdpConfig};
    use streamcap::subzero::xdp::{AttachMode, XdpFlowDrop};
    let prog =
        Arc::new(XdpFlowDrop::attach("scb", 1, AttachMode::Auto, None).map_err(|e| e.to_string())?);
    let cfg = AfXdpConfig {
        pool: o.pool,
        ..AfXdpConfig::new("scb")
    };
    let socket = AfXdp::open(&cfg, prog).map_err(|e| e.to_string())?;
    socket_point(socket, o, burst, Receiver::AfXdp)
}

#[cfg(not(feature = "xdp"))]
fn xdp_point(_o: &Opts, _burst: u64) -> Result<Point, String> {
    Err("af_xdp: this streamcap-bench was built without `--features xdp`".into())
}

/// Runs `f` on a thread that entered network namespace `name`.
pub(crate) fn in_namespace<T: Send>(name: &str, f: impl FnOnce() -> T + Send) -> Result<T, String> {
    let path = format!("/run/netns/{name}");
    std::thread::scope(|s| {
        s.spawn(move || {
            let file = File::open(&path).map_err(|e| format!("open {path}: {e}"))?;
            // SAFETY: setns with a network namespace's descriptor and
            // CLONE_NEWNET switches only this thread's network namespace.
            let rc = unsafe { libc::setns(file.as_raw_fd(), libc::CLONE_NEWNET) };
            if rc != 0 {
                return Err(format!("setns {path}: {}", std::io::Error::last_os_error()));
            }
            Ok(f())
        })
        .join()
        .map_err(|_| "the namespace thread panicked".to_string())?
    })
}

/// The median of `xs` by loss (the middle round).
fn median(mut xs: Vec<Point>) -> Option<Point> {
    xs.sort_by(|a, b| a.loss_pct.total_cmp(&b.loss_pct));
    let mid = xs.len() / 2;
    xs.into_iter().nth(mid)
}

/// The whole report, as `--json` writes it.
#[derive(Serialize)]
struct Report {
    cost_ns: u64,
    frame_bytes: usize,
    pool_chunks: u32,
    chunk_frames: u32,
    frame_size: u32,
    pool_bytes: u64,
    ring_bytes: usize,
    rounds: usize,
    points: Vec<Point>,
    all_rounds: Vec<Point>,
}

pub fn cmd_bursts(args: &[String]) -> Result<(), String> {
    let o = parse(args)?;
    let ns = Netns::new()?;
    let name = ns.name().to_string();
    let mut points = Vec::new();
    let mut all = Vec::new();
    eprintln!(
        "bursts: {} B frames, consumer cost {} ns/packet ({:.0} kpps), pool {} x {} frames ({} MiB), ring {} MiB",
        o.size,
        o.cost_ns,
        1e6 / o.cost_ns.max(1) as f64,
        o.pool.chunks,
        o.pool.frames_per_chunk,
        o.pool.bytes() >> 20,
        o.ring >> 20
    );
    for &burst in &o.bursts {
        for &r in &o.receivers {
            let mut rounds = Vec::new();
            for _ in 0..o.rounds {
                let p = in_namespace(&name, || point(&name, &o, burst, r))??;
                eprintln!(
                    "  {:>15} burst {:>7}: sent at {:>7.0} pps, received {:>7}, socket drops {:>7}, loss {:5.1} %",
                    r.name(),
                    burst,
                    p.send_pps,
                    p.received,
                    p.socket_drops,
                    p.loss_pct
                );
                rounds.push(p);
            }
            all.extend(rounds.iter().cloned());
            if let Some(m) = median(rounds) {
                points.push(m);
            }
        }
    }
    println!(
        "| burst | {} |",
        o.receivers
            .iter()
            .map(|r| r.name())
            .collect::<Vec<_>>()
            .join(" | ")
    );
    println!("|---:|{}", "---:|".repeat(o.receivers.len()));
    for &burst in &o.bursts {
        let cells: Vec<String> = o
            .receivers
            .iter()
            .map(|&r| {
                points
                    .iter()
                    .find(|p| p.burst == burst && p.receiver == r)
                    .map_or("-".into(), |p| {
                        format!("{:.1} % ({:.0} kpps)", p.loss_pct, p.send_pps / 1e3)
                    })
            })
            .collect();
        println!("| {burst} | {} |", cells.join(" | "));
    }
    let report = Report {
        cost_ns: o.cost_ns,
        frame_bytes: o.size,
        pool_chunks: o.pool.chunks,
        chunk_frames: o.pool.frames_per_chunk,
        frame_size: o.pool.frame_size,
        pool_bytes: o.pool.bytes(),
        ring_bytes: o.ring,
        rounds: o.rounds,
        points,
        all_rounds: all,
    };
    if let Some(path) = &o.json {
        let text = serde_json::to_string_pretty(&report).map_err(|e| e.to_string())?;
        std::fs::write(path, text).map_err(|e| format!("{}: {e}", path.display()))?;
    }
    if let Some(path) = &o.png {
        let series: Vec<Series> = o
            .receivers
            .iter()
            .map(|&r| Series {
                name: r.name().into(),
                points: report
                    .points
                    .iter()
                    .filter(|p| p.receiver == r)
                    .map(|p| (p.burst as f64, p.loss_pct))
                    .collect(),
            })
            .collect();
        plot::lines_scaled(
            path,
            &format!(
                "Loss against burst size ({} B frames, consumer {} ns/packet, pool {} MiB)",
                o.size,
                o.cost_ns,
                o.pool.bytes() >> 20
            ),
            ("burst, packets", "lost, %"),
            &series,
            (true, false),
            1.2,
        )?;
    }
    Ok(())
}
