//! `streamcap-bench imbalance`: WireCAP's load-imbalance experiment (Wu
//! and DeMar, §4, Figures 10–12 in spirit) on a veth pair with two
//! receive queues in a network namespace of its own.
//!
//! One sender thread, pinned to CPU 0, sends a hot set of `--flows` UDP
//! flows at `--rate` packets per second for `--seconds`; the sending end
//! has one transmit queue and a veth delivers on the queue its peer sent
//! on, so every packet arrives on queue 0 and queue 1 stays idle: the
//! imbalance. Two workers, one AF_XDP socket
//! (and pool) per queue, spend `--cost-ns` on each packet, as a buddy
//! group with each offload mode:
//!
//! - `off`: each worker processes its own queue (worker 1 idles);
//! - `packets`: above the threshold, worker 0 hands whole chunks to
//!   worker 1 (WireCAP's mechanism; connections are split);
//! - `flows`: packets go to their flow-hash bucket's owner, and busy
//!   buckets move with their connections (flow-affine).
//!
//! The report gives the loss, the throughput (packets processed per second
//! of the run) and each worker's share, median of `--rounds`.

use crate::live::Netns;
use crate::plot::{self, Series};
use serde::Serialize;
use std::path::PathBuf;
use std::process::Command;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

/// Parsed options.
struct Opts {
    rate: f64,
    seconds: f64,
    flows: u16,
    cost_ns: u64,
    rounds: usize,
    chunks: u32,
    frames: u32,
    json: Option<PathBuf>,
    png: Option<PathBuf>,
}

fn parse(args: &[String]) -> Result<Opts, String> {
    let mut o = Opts {
        rate: 60_000.0,
        seconds: 3.0,
        flows: 64,
        cost_ns: 20_000,
        rounds: 3,
        chunks: 64,
        frames: 64,
        json: None,
        png: None,
    };
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut val = || it.next().cloned().ok_or(format!("{a} needs a value"));
        let num = |v: String, what: &str| -> Result<f64, String> {
            v.parse::<f64>()
                .ok()
                .filter(|x| x.is_finite() && *x > 0.0)
                .ok_or(format!("{what} {v}: expected a positive number"))
        };
        match a.as_str() {
            "--rate" => o.rate = num(val()?, "--rate")?,
            "--seconds" => o.seconds = num(val()?, "--seconds")?.min(600.0),
            "--flows" => o.flows = num(val()?, "--flows")?.min(60_000.0) as u16,
            "--cost-ns" => o.cost_ns = num(val()?, "--cost-ns")? as u64,
            "--rounds" => o.rounds = num(val()?, "--rounds")? as usize,
            "--pool" => {
                let v = val()?;
                let (r, m) = v
                    .split_once(',')
                    .ok_or(format!("--pool {v}: expected R,M"))?;
                o.chunks = num(r.to_string(), "--pool")? as u32;
                o.frames = num(m.to_string(), "--pool")? as u32;
            }
            "--json" => o.json = Some(PathBuf::from(val()?)),
            "--png" => o.png = Some(PathBuf::from(val()?)),
            other => return Err(format!("unexpected argument {other}")),
        }
    }
    Ok(o)
}

/// One run of one mode.
#[derive(Clone, Debug, Serialize)]
struct Row {
    mode: String,
    sent: u64,
    send_pps: f64,
    processed: u64,
    loss_pct: f64,
    /// Packets processed per second of the run (from the first packet sent
    /// to the last processed).
    throughput_pps: f64,
    per_worker: Vec<u64>,
    moves: u64,
    buckets_moved: u64,
    flows_moved: u64,
    chunks_offloaded: u64,
    packets_handed: u64,
    socket_drops: u64,
}

/// The frame of hot flow `i`: UDP, 512 bytes.
#[cfg_attr(not(feature = "xdp"), allow(dead_code))]
fn frame(i: u16) -> Vec<u8> {
    let mut f = vec![0x02, 0, 0, 0, 0, 2, 0x02, 0, 0, 0, 0, 1, 0x08, 0x00];
    let ip_len: u16 = 512 - 14;
    f.extend_from_slice(&[0x45, 0]);
    f.extend_from_slice(&ip_len.to_be_bytes());
    f.extend_from_slice(&[0, 0, 0x40, 0, 64, 17, 0, 0, 10, 8, 0, 1, 10, 8, 0, 2]);
    f.extend_from_slice(&(10_000 + i).to_be_bytes());
    f.extend_from_slice(&53u16.to_be_bytes());
    f.extend_from_slice(&(ip_len - 20).to_be_bytes());
    f.extend_from_slice(&[0, 0]);
    f.resize(512, 0x33);
    f
}

/// Hooks that spend the fixed cost on each packet and count it.
#[cfg_attr(not(feature = "xdp"), allow(dead_code))]
struct Cost {
    ns: u64,
    done: Arc<AtomicU64>,
    last: Arc<AtomicU64>,
    origin: Instant,
}

impl streamcap::capture::RunHooks for Cost {
    fn inspect(&mut self, _pkt: &streamcap::RawPacket<'_>) -> streamcap::capture::Verdict {
        let start = Instant::now();
        while (start.elapsed().as_nanos() as u64) < self.ns {
            std::hint::spin_loop();
        }
        self.done.fetch_add(1, Ordering::Relaxed);
        self.last
            .fetch_max(self.origin.elapsed().as_nanos() as u64, Ordering::Relaxed);
        streamcap::capture::Verdict::Process
    }
}

/// A handler that keeps nothing (the cost is in the hooks).
#[derive(Default)]
#[cfg_attr(not(feature = "xdp"), allow(dead_code))]
struct Nothing;

impl streamcap::Handler for Nothing {
    type State = ();
}

/// Runs one mode inside the namespace.
#[cfg(feature = "xdp")]
fn run_mode(o: &Opts, mode: streamcap::dispatch::buddies::Offload) -> Result<Row, String> {
    use std::sync::atomic::AtomicBool;
    use std::time::Duration;
    use streamcap::dispatch::buddies::BuddyConfig;
    use streamcap::dispatch::workers::pin_current_thread;
    use streamcap::dispatch::workers::Parallel;
    use streamcap::source::af_xdp::{AfXdp, AfXdpConfig, PoolConfig};
    use streamcap::source::Injector;
    use streamcap::subzero::xdp::{AttachMode, XdpFlowDrop};
    let prog =
        Arc::new(XdpFlowDrop::attach("sqb", 1, AttachMode::Auto, None).map_err(|e| e.to_string())?);
    let pool = PoolConfig {
        chunks: o.chunks,
        frames_per_chunk: o.frames,
        frame_size: 2048,
    };
    let mut sockets = Vec::new();
    for q in 0..2 {
        let cfg = AfXdpConfig {
            queue: q,
            pool,
            ..AfXdpConfig::new("sqb")
        };
        sockets.push(AfXdp::open(&cfg, prog.clone()).map_err(|e| e.to_string())?);
    }
    let capture = streamcap::Capture::builder().build();
    let par = Parallel {
        workers: 2,
        pin: vec![1, 0],
        ..Parallel::default()
    };
    let cfg = BuddyConfig {
        offload: mode,
        threshold: u64::from(o.frames) * 4,
        ..BuddyConfig::default()
    };
    let done = Arc::new(AtomicU64::new(0));
    let last = Arc::new(AtomicU64::new(0));
    let origin = Instant::now();
    let sent_flag = AtomicBool::new(false);
    let frames: Vec<Vec<u8>> = (0..o.flows).map(frame).collect();
    let total = (o.rate * o.seconds) as u64;
    let stop = par.stop.clone();
    let (report, group, sent, send_pps) = std::thread::scope(|s| {
        let sender = s.spawn(|| -> Result<(u64, f64), String> {
            let _ = pin_current_thread(0);
            std::thread::sleep(Duration::from_millis(200));
            let mut tx = Injector::open("sqa").map_err(|e| e.to_string())?;
            let start = Instant::now();
            let mut sent = 0u64;
            while sent < total {
                // Batches of 32, paced to the rate with sleeps (the CPU is
                // shared with worker 1).
                for _ in 0..32 {
                    tx.send(&frames[(sent % frames.len() as u64) as usize])
                        .map_err(|e| e.to_string())?;
                    sent += 1;
                }
                let due = Duration::from_secs_f64(sent as f64 / o.rate);
                if let Some(wait) = due.checked_sub(start.elapsed()) {
                    std::thread::sleep(wait);
                }
            }
            let pps = sent as f64 / start.elapsed().as_secs_f64();
            sent_flag.store(true, Ordering::Relaxed);
            Ok((sent, pps))
        });
        let watcher = s.spawn(|| {
            // Stop once the sender is done and nothing was processed for
            // half a second.
            let mut seen = 0;
            let mut quiet = Instant::now();
            loop {
                std::thread::sleep(Duration::from_millis(100));
                let now = done.load(Ordering::Relaxed);
                if now != seen {
                    seen = now;
                    quiet = Instant::now();
                } else if sent_flag.load(Ordering::Relaxed)
                    && quiet.elapsed() > Duration::from_millis(500)
                {
                    stop.store(true, Ordering::Relaxed);
                    return;
                }
            }
        });
        let (report, group) = capture.run_buddies(sockets, &par, &cfg, |_| {
            (
                Nothing,
                Cost {
                    ns: o.cost_ns,
                    done: done.clone(),
                    last: last.clone(),
                    origin,
                },
            )
        });
        let res = sender.join().unwrap_or(Err("the sender panicked".into()));
        par.stop.store(true, Ordering::Relaxed);
        let _ = watcher.join();
        let (sent, pps) = res.unwrap_or((0, 0.0));
        (report, group, sent, pps)
    });
    let processed = done.load(Ordering::Relaxed);
    let secs = (last.load(Ordering::Relaxed) as f64 / 1e9 - 0.2).max(1e-3);
    Ok(Row {
        mode: mode.name().into(),
        sent,
        send_pps,
        processed,
        loss_pct: 100.0 * sent.saturating_sub(processed) as f64 / sent.max(1) as f64,
        throughput_pps: processed as f64 / secs,
        per_worker: report.workers.iter().map(|w| w.stats.packets).collect(),
        moves: group.moves,
        buckets_moved: group.buckets_moved,
        flows_moved: group.flows_moved,
        chunks_offloaded: group.chunks_offloaded,
        packets_handed: group.packets_handed,
        socket_drops: report
            .workers
            .iter()
            .filter_map(|w| w.xsk.map(|x| x.drops()))
            .sum(),
    })
}

#[cfg(not(feature = "xdp"))]
fn run_mode(_o: &Opts, _mode: ()) -> Result<Row, String> {
    Err("imbalance: this streamcap-bench was built without `--features xdp`".into())
}

/// The namespace's veth pair: `sqb` receives on two queues, and `sqa`
/// sends on one, so that every frame arrives on `sqb`'s queue 0 (a veth
/// delivers on the queue its peer sent on).
fn two_queues(ns: &Netns) -> Result<(), String> {
    let n = ns.name();
    for args in [
        &[
            "-n",
            n,
            "link",
            "add",
            "sqa",
            "numtxqueues",
            "1",
            "numrxqueues",
            "2",
            "type",
            "veth",
            "peer",
            "name",
            "sqb",
            "numtxqueues",
            "2",
            "numrxqueues",
            "2",
        ][..],
        &["-n", n, "link", "set", "sqa", "up"],
        &["-n", n, "link", "set", "sqb", "up"],
    ] {
        let o = Command::new("ip")
            .args(args)
            .output()
            .map_err(|e| format!("ip: {e}"))?;
        if !o.status.success() {
            return Err(format!(
                "ip {}: {}",
                args.join(" "),
                String::from_utf8_lossy(&o.stderr).trim()
            ));
        }
    }
    Ok(())
}

pub fn cmd_imbalance(args: &[String]) -> Result<(), String> {
    let o = parse(args)?;
    let ns = Netns::new()?;
    two_queues(&ns)?;
    let name = ns.name().to_string();
    eprintln!(
        "imbalance: {} hot UDP flows at {:.0} pps for {} s, all on queue 0; 2 workers at {} ns/packet ({:.0} pps each); pools of {} x {} frames",
        o.flows,
        o.rate,
        o.seconds,
        o.cost_ns,
        1e9 / o.cost_ns as f64,
        o.chunks,
        o.frames
    );
    #[cfg(feature = "xdp")]
    let modes = {
        use streamcap::dispatch::buddies::Offload;
        [Offload::Off, Offload::Packets, Offload::Flows]
    };
    #[cfg(not(feature = "xdp"))]
    let modes = [()];
    let mut rows = Vec::new();
    for mode in modes {
        let mut runs = Vec::new();
        for _ in 0..o.rounds {
            let r = crate::bursts::in_namespace(&name, || run_mode(&o, mode))??;
            eprintln!(
                "  {:>8}: sent {} at {:.0} pps, processed {} ({:.1} % lost), {:.0} pps, workers {:?}, {} moves ({} buckets, {} flows), {} chunks offloaded",
                r.mode,
                r.sent,
                r.send_pps,
                r.processed,
                r.loss_pct,
                r.throughput_pps,
                r.per_worker,
                r.moves,
                r.buckets_moved,
                r.flows_moved,
                r.chunks_offloaded
            );
            runs.push(r);
        }
        runs.sort_by(|a, b| a.loss_pct.total_cmp(&b.loss_pct));
        if let Some(m) = runs.get(runs.len() / 2) {
            rows.push(m.clone());
        }
    }
    println!("| offload | lost | throughput | worker 0 / worker 1 | moves (buckets, connections) | chunks handed |");
    println!("|---|---:|---:|---:|---:|---:|");
    for r in &rows {
        println!(
            "| {} | {:.1} % | {:.0} pps | {} / {} | {} ({}, {}) | {} |",
            r.mode,
            r.loss_pct,
            r.throughput_pps,
            r.per_worker.first().copied().unwrap_or(0),
            r.per_worker.get(1).copied().unwrap_or(0),
            r.moves,
            r.buckets_moved,
            r.flows_moved,
            r.chunks_offloaded
        );
    }
    if let Some(path) = &o.json {
        let text = serde_json::json!({
            "rate": o.rate, "seconds": o.seconds, "flows": o.flows, "cost_ns": o.cost_ns,
            "pool_chunks": o.chunks, "chunk_frames": o.frames, "rows": rows,
        });
        std::fs::write(
            path,
            serde_json::to_string_pretty(&text).map_err(|e| e.to_string())?,
        )
        .map_err(|e| format!("{}: {e}", path.display()))?;
    }
    if let Some(path) = &o.png {
        let series = vec![
            Series {
                name: "lost, %".into(),
                points: rows
                    .iter()
                    .enumerate()
                    .map(|(i, r)| (i as f64, r.loss_pct))
                    .collect(),
            },
            Series {
                name: "throughput, kpps".into(),
                points: rows
                    .iter()
                    .enumerate()
                    .map(|(i, r)| (i as f64, r.throughput_pps / 1e3))
                    .collect(),
            },
        ];
        plot::panels(
            path,
            &[plot::Panel {
                title: format!(
                    "Imbalance: all traffic on queue 0 ({:.0} pps, {} ns/packet); offload off, packets, flows",
                    o.rate, o.cost_ns
                ),
                labels: ("offload mode", "lost % / throughput kpps"),
                series,
                x_names: rows.iter().map(|r| r.mode.clone()).collect(),
                headroom: 1.3,
                min_top: 10.0,
            }],
        )?;
    }
    Ok(())
}
