//! The overload-control experiments (bench/README.md, "Overload control"),
//! after Scap's: a capture file replayed at chosen rates through the
//! library, with a real analysis cost per byte (SHA-256 of every chunk,
//! repeated `rounds` times), measuring what each priority loses.
//!
//! - *calibration*: the capture stage alone (decoupled, an analysis that
//!   only hands chunks back) and the analysis alone (SHA-256 rounds over
//!   chunks of the experiment's size), in Gbit/s of the trace's wire bytes;
//! - *priorities* (Scap Fig. 9): bytes lost by high- and low-priority
//!   streams against the offered rate, decoupled with PPL;
//! - *rate vs loss* (Scap Fig. 3 style): streams delivered completely
//!   against the offered rate, decoupled with PPL and inline;
//! - *analysis threads* (Scap Fig. 10): the highest rate without loss
//!   against the number of analysis threads;
//! - *queueing model* (excerpt §7): the M/M/1/N loss probability of
//!   high-priority packets beside PPL's measured on simulated Poisson
//!   arrivals and exponential service.
//!
//! Everything runs in this process, so the figures include no start-up
//! cost; CPU seconds are the process's (all threads).

use crate::plot::{self, Series};
use serde::Serialize;
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Instant;
use streamcap::deliver::{Chunk, Handler, Overload, Stream, StreamCounters};
use streamcap::dispatch::analysis::Decoupled;
use streamcap::filter::PriorityClass;
use streamcap::source::pace::Pace;
use streamcap::{Capture, Config, FileSource, GlobalStats};

/// Identifies a stream across runs: its direction's source and
/// destination, protocol and first packet time (connection serial numbers
/// differ when a run loses a connection's first packets).
type StreamKey = (String, u64);

/// The experiments' analysis: SHA-256 of every chunk's new bytes, `rounds`
/// times, and each stream's final counters.
#[derive(Default)]
struct Analyser {
    rounds: u32,
    streams: Streams,
    hashed: u64,
}

impl Handler for Analyser {
    type State = ();
    const WANTS_ON_CREATE: bool = false;
    fn on_data(&mut self, _s: &mut Stream<'_, ()>, c: &Chunk<'_>) {
        for _ in 0..self.rounds {
            let d = Sha256::digest(c.new_data());
            std::hint::black_box(d);
        }
        self.hashed += c.new_data().len() as u64;
    }
    fn on_close(&mut self, s: &mut Stream<'_, ()>) {
        let key = (
            format!("{:?}>{:?}/{}", s.src(), s.dst(), s.proto()),
            s.info().start.0,
        );
        let i = s.info();
        self.streams.insert(key, (i.params.priority, i.counters));
    }
}

/// How the analysis runs.
#[derive(Copy, Clone, Debug, Serialize)]
enum Mode {
    /// In the capture thread.
    Inline,
    /// On this many analysis threads.
    Decoupled(usize),
}

/// The settings every run shares.
#[derive(Clone)]
struct Setup {
    pcap: PathBuf,
    memory: usize,
    chunk: usize,
    base_threshold: f64,
    high: String,
    rounds: u32,
}

/// What one run produced.
#[derive(Clone, Debug, Serialize)]
struct RunResult {
    mode: Mode,
    /// Offered rate, Gbit/s of wire bytes (None: unpaced).
    offered_gbps: Option<f64>,
    wall_s: f64,
    cpu_s: f64,
    ring_drops: u64,
    /// Per priority: stream bytes of the reference run, bytes lost (dropped,
    /// or missing beyond the reference's own holes), PPL packet drops.
    levels: Vec<LevelLoss>,
    streams: usize,
    /// Streams whose captured bytes equal the reference's.
    complete: usize,
    /// Streams of the reference with no record in this run.
    without_record: usize,
    /// Streams whose counters break `stream_bytes = captured + discarded +
    /// dropped + missing`.
    invariant_broken: usize,
    memory_peak: usize,
}

#[derive(Clone, Debug, Serialize)]
struct LevelLoss {
    priority: u8,
    reference_bytes: u64,
    lost_bytes: u64,
    ppl_packets: u64,
}

impl RunResult {
    fn lost(&self, priority: u8) -> f64 {
        self.levels
            .iter()
            .find(|l| l.priority == priority)
            .map_or(0.0, |l| {
                100.0 * l.lost_bytes as f64 / l.reference_bytes.max(1) as f64
            })
    }
    fn lost_bytes(&self) -> u64 {
        self.levels.iter().map(|l| l.lost_bytes).sum()
    }
}

/// CPU seconds of this process so far (all threads), from /proc.
fn cpu_seconds() -> f64 {
    let Ok(s) = std::fs::read_to_string("/proc/self/stat") else {
        return 0.0;
    };
    // Fields after the command name (which may hold spaces): utime and
    // stime are the 14th and 15th fields of the line.
    let rest = s.rsplit_once(") ").map_or("", |(_, r)| r);
    let f: Vec<&str> = rest.split_whitespace().collect();
    let tick = |i: usize| f.get(i).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
    (tick(11) + tick(12)) / 100.0
}

fn capture(setup: &Setup, pace: Option<f64>) -> Result<Capture, String> {
    let class = PriorityClass::new(&setup.high, 1).map_err(|e| format!("{}: {e:?}", setup.high))?;
    let cfg = Config {
        memory_size: setup.memory,
        chunk_size: setup.chunk,
        base_threshold: setup.base_threshold,
        measure_processing_time: false,
        ..Config::default()
    };
    let b = Capture::builder().config(cfg).priority_class(class);
    Ok(match pace {
        Some(gbps) => b
            .pace(Pace::Rate {
                bits_per_sec: gbps * 1e9,
            })
            .map_err(|e| format!("{e:?}"))?
            .build(),
        None => b.build(),
    })
}

/// Each stream's priority and final counters.
type Streams = HashMap<StreamKey, (u8, StreamCounters)>;

/// One run: the streams' counters, the run's statistics, wall and CPU seconds.
fn run(
    setup: &Setup,
    mode: Mode,
    pace: Option<f64>,
) -> Result<(Streams, GlobalStats, f64, f64), String> {
    let cap = capture(setup, pace)?;
    let mut src = FileSource::open(&setup.pcap).map_err(|e| e.to_string())?;
    let (t0, c0) = (Instant::now(), cpu_seconds());
    let make = || Analyser {
        rounds: setup.rounds,
        ..Analyser::default()
    };
    let (streams, stats) = match mode {
        Mode::Inline => {
            let r = cap.run(&mut src, make());
            (r.handler.streams, r.stats)
        }
        Mode::Decoupled(n) => {
            let stage = Decoupled::spawn(n, |_| make()).map_err(|e| e.to_string())?;
            let r = cap.run(&mut src, stage);
            let (hs, _) = r.handler.finish();
            let mut all = HashMap::new();
            for h in hs {
                all.extend(h.streams);
            }
            (all, r.stats)
        }
    };
    Ok((
        streams,
        stats,
        t0.elapsed().as_secs_f64(),
        cpu_seconds() - c0,
    ))
}

/// The reference: unpaced, inline, nothing lost for lack of memory.
struct Reference {
    streams: Streams,
    wire_bytes: u64,
    payload: u64,
}

fn measure(
    setup: &Setup,
    reference: &Reference,
    mode: Mode,
    pace: Option<f64>,
) -> Result<RunResult, String> {
    let (streams, stats, wall, cpu) = run(setup, mode, pace)?;
    let mut levels: Vec<LevelLoss> = Vec::new();
    let mut complete = 0;
    let without_record = reference
        .streams
        .keys()
        .filter(|k| !streams.contains_key(*k))
        .count();
    let invariant_broken = streams
        .values()
        .filter(|(_, c)| !c.invariant_holds())
        .count();
    for (k, (prio, rc)) in &reference.streams {
        let got = streams.get(k).map(|(_, c)| *c).unwrap_or_default();
        let lost = rc.captured.saturating_sub(got.captured);
        if got.captured == rc.captured {
            complete += 1;
        }
        let l = match levels.iter_mut().find(|l| l.priority == *prio) {
            Some(l) => l,
            None => {
                levels.push(LevelLoss {
                    priority: *prio,
                    reference_bytes: 0,
                    lost_bytes: 0,
                    ppl_packets: 0,
                });
                levels.last_mut().ok_or("no level")?
            }
        };
        l.reference_bytes += rc.captured;
        l.lost_bytes += lost;
    }
    for l in &mut levels {
        l.ppl_packets = stats
            .overload
            .level(l.priority)
            .map_or(0, |s| s.ppl_packets());
    }
    levels.sort_by_key(|l| l.priority);
    Ok(RunResult {
        mode,
        offered_gbps: pace,
        wall_s: wall,
        cpu_s: cpu,
        ring_drops: stats.ring_drops,
        levels,
        streams: reference.streams.len(),
        complete,
        without_record,
        invariant_broken,
        memory_peak: stats.memory_peak,
    })
}

/// SHA-256 throughput over chunks of `chunk` bytes, bytes per second of
/// payload, for one round.
fn sha_rate(chunk: usize) -> f64 {
    let data = vec![0x5au8; chunk];
    let total = 256usize << 20;
    let t0 = Instant::now();
    let mut done = 0;
    while done < total {
        std::hint::black_box(Sha256::digest(&data));
        done += chunk;
    }
    done as f64 / t0.elapsed().as_secs_f64()
}

/// M/M/1/N: the probability that the N slots are full (Ploss by PASTA).
fn mm1n_loss(rho: f64, n: u32) -> f64 {
    if (rho - 1.0).abs() < 1e-12 {
        return 1.0 / (f64::from(n) + 1.0);
    }
    (1.0 - rho) * rho.powi(n as i32) / (1.0 - rho.powi(n as i32 + 1))
}

/// A small deterministic generator (xorshift*) for the simulation.
struct Rng(u64);
impl Rng {
    fn unit(&mut self) -> f64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        let x = self.0.wrapping_mul(0x2545_f491_4f6c_dd1d);
        ((x >> 11) as f64 + 0.5) / (1u64 << 53) as f64
    }
    fn exp(&mut self, rate: f64) -> f64 {
        -self.unit().ln() / rate
    }
}

/// PPL on Poisson arrivals of high- and low-priority packets (one memory
/// unit each) served one at a time with exponential service of rate 1:
/// the fraction of high-priority packets dropped. Memory: `base + 2n`
/// units, base threshold `base`, so each of the two levels has `n` units
/// above its lower watermark, as in the excerpt's analysis.
fn simulate_ppl(rho_high: f64, rho_low: f64, n: u32, packets: u64, seed: u64) -> f64 {
    let base = 16usize;
    let limit = base + 2 * n as usize;
    let fraction = base as f64 / limit as f64;
    let mut ppl = Overload::new(limit, fraction, None, [0u8, 1]);
    let mut rng = Rng(seed | 1);
    let (mut queue, mut t, mut next_done) = (0usize, 0.0f64, f64::INFINITY);
    let rate = rho_high + rho_low;
    let (mut high, mut high_lost) = (0u64, 0u64);
    let mut arrivals = 0;
    while arrivals < packets {
        let next_arrival = t + rng.exp(rate);
        while next_done <= next_arrival {
            t = next_done;
            queue -= 1;
            next_done = if queue > 0 {
                t + rng.exp(1.0)
            } else {
                f64::INFINITY
            };
        }
        t = next_arrival;
        arrivals += 1;
        let is_high = rng.unit() < rho_high / rate;
        let prio = u8::from(is_high);
        // PPL judges at arrival; the budget refuses what does not fit.
        let dropped = ppl.judge(queue, prio, 0).is_some() || queue + 1 > limit;
        if is_high {
            high += 1;
            high_lost += u64::from(dropped);
        }
        if !dropped {
            queue += 1;
            if queue == 1 {
                next_done = t + rng.exp(1.0);
            }
        }
    }
    high_lost as f64 / high.max(1) as f64
}

/// Everything the experiments measured, written to `--json`.
#[derive(Serialize)]
struct Report {
    pcap: String,
    packets_note: String,
    memory: usize,
    chunk: usize,
    base_threshold: f64,
    high: String,
    rounds: u32,
    high_share_of_bytes: f64,
    capture_alone_gbps: f64,
    capture_alone_cpu_s: f64,
    analysis_gbps: f64,
    sha256_one_round_gbps: f64,
    priorities: Vec<RunResult>,
    inline: Vec<RunResult>,
    threads: Vec<(usize, f64)>,
    queueing: Vec<(f64, u32, f64, f64)>,
}

pub fn cmd_overload(args: &[String]) -> Result<(), String> {
    let mut pcap = None;
    let mut json = None;
    let mut png = None;
    let mut memory = 32usize << 20;
    let mut chunk = 4096usize;
    let mut high = "tcp port 22".to_string();
    let mut rounds = None;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut val = || it.next().cloned().ok_or(format!("{a} needs a value"));
        match a.as_str() {
            "--pcap" => pcap = Some(PathBuf::from(val()?)),
            "--json" => json = Some(PathBuf::from(val()?)),
            "--png" => png = Some(PathBuf::from(val()?)),
            "--memory" => memory = val()?.parse().map_err(|e| format!("--memory: {e}"))?,
            "--chunk" => chunk = val()?.parse().map_err(|e| format!("--chunk: {e}"))?,
            "--high" => high = val()?,
            "--rounds" => rounds = Some(val()?.parse().map_err(|e| format!("--rounds: {e}"))?),
            _ => return Err(format!("overload: unknown argument {a}")),
        }
    }
    let pcap = pcap.ok_or("overload needs --pcap FILE")?;
    let mut setup = Setup {
        pcap: pcap.clone(),
        memory,
        chunk,
        base_threshold: 0.5,
        high: high.clone(),
        rounds: 0,
    };
    // The reference: everything captured.
    let big = Setup {
        memory: 4 << 30,
        ..setup.clone()
    };
    let (streams, stats, _, _) = run(&big, Mode::Inline, None)?;
    let payload: u64 = streams.values().map(|(_, c)| c.captured).sum();
    let reference = Reference {
        streams,
        wire_bytes: stats.wire_bytes,
        payload,
    };
    let high_bytes: u64 = reference
        .streams
        .values()
        .filter(|(p, _)| *p == 1)
        .map(|(_, c)| c.captured)
        .sum();
    let gbps = |bytes_per_s: f64| bytes_per_s * 8.0 / 1e9;
    let wire_per_payload = reference.wire_bytes as f64 / reference.payload.max(1) as f64;
    // The capture stage alone: decoupled, no hashing.
    let (_, s, wall, cpu) = run(&setup, Mode::Decoupled(1), None)?;
    let capture_alone = gbps(s.wire_bytes as f64 / wall);
    let sha1 = sha_rate(chunk);
    // The analysis stage alone: decoupled and unpaced with a budget that
    // holds every byte, so the capture stage never waits nor drops and the
    // run lasts as long as the analysis does (its handlers are joined).
    let roomy = Setup {
        memory: (reference.payload as usize).saturating_mul(2) + (64 << 20),
        base_threshold: 1.0,
        ..setup.clone()
    };
    let analysis_alone = |rounds: u32| -> Result<f64, String> {
        let setup = Setup {
            rounds,
            ..roomy.clone()
        };
        let (_, s, wall, _) = run(&setup, Mode::Decoupled(1), None)?;
        Ok(gbps(s.wire_bytes as f64 / wall))
    };
    let rounds = match rounds {
        Some(r) => r,
        None => {
            // About 1/2.5 of the capture stage's rate: a first guess from
            // the hash alone, corrected once by a measurement.
            let target = capture_alone / 2.5;
            let one = gbps(sha1 * wire_per_payload);
            let guess = ((one / target).ceil() as u32).max(1);
            let got = analysis_alone(guess)?;
            ((f64::from(guess) * got / target).ceil() as u32).max(1)
        }
    };
    setup.rounds = rounds;
    let analysis = analysis_alone(rounds)?;
    eprintln!(
        "overload: {}: capture stage alone {capture_alone:.2} Gbit/s ({cpu:.2} CPU s, {wall:.2} s); \
         SHA-256 one round {:.2} Gbit/s of wire bytes; analysis stage alone with {rounds} rounds {analysis:.2} Gbit/s; \
         high priority ({high}) {:.1} % of the payload",
        pcap.display(),
        gbps(sha1 * wire_per_payload),
        100.0 * high_bytes as f64 / reference.payload.max(1) as f64
    );
    // Priorities and rate vs loss.
    let factors = [0.5, 0.8, 1.0, 1.25, 1.5, 1.75, 2.0];
    let mut priorities = Vec::new();
    let mut inline = Vec::new();
    for f in factors {
        let rate = analysis * f;
        let r = measure(&setup, &reference, Mode::Decoupled(1), Some(rate))?;
        eprintln!(
            "  decoupled {rate:.2} Gbit/s: high lost {:.3} %, low lost {:.2} %, ring drops {}, complete {}/{}, without a record {}, invariant broken {} ({:.2} s, {:.2} CPU s)",
            r.lost(1), r.lost(0), r.ring_drops, r.complete, r.streams, r.without_record, r.invariant_broken, r.wall_s, r.cpu_s
        );
        priorities.push(r);
        let r = measure(&setup, &reference, Mode::Inline, Some(rate))?;
        eprintln!(
            "  inline    {rate:.2} Gbit/s: high lost {:.3} %, low lost {:.2} %, ring drops {}, complete {}/{}",
            r.lost(1), r.lost(0), r.ring_drops, r.complete, r.streams
        );
        inline.push(r);
    }
    // Analysis threads: the highest rate without loss, by bisection.
    let mut threads = Vec::new();
    for n in [1usize, 2] {
        let (mut lo, mut hi) = (analysis * 0.25, capture_alone * 1.2);
        for _ in 0..6 {
            let mid = (lo + hi) / 2.0;
            let r = measure(&setup, &reference, Mode::Decoupled(n), Some(mid))?;
            if r.lost_bytes() == 0 && r.ring_drops == 0 {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        eprintln!("  {n} analysis thread(s): no loss up to {lo:.2} Gbit/s");
        threads.push((n, lo));
    }
    // The queueing model beside PPL on simulated Poisson arrivals.
    let mut queueing = Vec::new();
    for rho in [0.1, 0.5, 0.9] {
        for n in [1u32, 2, 5, 10, 20, 50, 100, 150, 200] {
            let model = mm1n_loss(rho, n);
            let measured = simulate_ppl(
                rho,
                2.0,
                n,
                2_000_000,
                u64::from(n) * 7919 + (rho * 1e3) as u64,
            );
            queueing.push((rho, n, model, measured));
        }
    }
    let report = Report {
        pcap: pcap.display().to_string(),
        packets_note: format!(
            "{} wire bytes, {} payload bytes",
            reference.wire_bytes, reference.payload
        ),
        memory,
        chunk,
        base_threshold: setup.base_threshold,
        high,
        rounds,
        high_share_of_bytes: high_bytes as f64 / reference.payload.max(1) as f64,
        capture_alone_gbps: capture_alone,
        capture_alone_cpu_s: cpu,
        analysis_gbps: analysis,
        sha256_one_round_gbps: gbps(sha1 * wire_per_payload),
        priorities,
        inline,
        threads,
        queueing,
    };
    print_markdown(&report);
    if let Some(j) = json {
        let text = serde_json::to_string_pretty(&report).map_err(|e| e.to_string())?;
        std::fs::write(&j, text).map_err(|e| format!("{}: {e}", j.display()))?;
    }
    if let Some(p) = png {
        draw(&p, &report)?;
    }
    Ok(())
}

fn print_markdown(r: &Report) {
    println!(
        "Capture stage alone {:.2} Gbit/s ({:.2} CPU s); analysis ({} SHA-256 rounds per chunk) {:.2} Gbit/s: ratio {:.2}. High priority `{}`: {:.1} % of the payload. Memory {} MiB, chunks {} B, base threshold {}.\n",
        r.capture_alone_gbps,
        r.capture_alone_cpu_s,
        r.rounds,
        r.analysis_gbps,
        r.capture_alone_gbps / r.analysis_gbps.max(1e-9),
        r.high,
        100.0 * r.high_share_of_bytes,
        r.memory >> 20,
        r.chunk,
        r.base_threshold
    );
    println!("| offered Gbit/s | x analysis | decoupled+PPL: high lost | low lost | ring drops | complete streams | without record | CPU s | inline: high lost | low lost | ring drops | complete streams |");
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|");
    for (d, i) in r.priorities.iter().zip(&r.inline) {
        let rate = d.offered_gbps.unwrap_or(0.0);
        println!(
            "| {:.2} | {:.2} | {:.3} % | {:.2} % | {} | {}/{} | {} | {:.2} | {:.3} % | {:.2} % | {} | {}/{} |",
            rate,
            rate / r.analysis_gbps.max(1e-9),
            d.lost(1),
            d.lost(0),
            d.ring_drops,
            d.complete,
            d.streams,
            d.without_record,
            d.cpu_s,
            i.lost(1),
            i.lost(0),
            i.ring_drops,
            i.complete,
            i.streams
        );
    }
    println!();
    for (n, rate) in &r.threads {
        println!("- {n} analysis thread(s): no loss up to {rate:.2} Gbit/s");
    }
    println!();
    println!("| rho | N | M/M/1/N loss | PPL simulated |");
    println!("|---|---|---|---|");
    for (rho, n, m, s) in &r.queueing {
        println!("| {rho} | {n} | {m:.2e} | {s:.2e} |");
    }
}

fn draw(prefix: &Path, r: &Report) -> Result<(), String> {
    let path = |name: &str| {
        let mut p = prefix.as_os_str().to_owned();
        p.push(format!("-{name}.png"));
        PathBuf::from(p)
    };
    let rate = |x: &RunResult| x.offered_gbps.unwrap_or(0.0);
    plot::lines(
        &path("priorities"),
        &format!(
            "Bytes lost by priority, decoupled + PPL ({} SHA-256 rounds per chunk)",
            r.rounds
        ),
        ("offered rate, Gbit/s", "stream bytes lost, %"),
        &[
            Series {
                name: format!("high priority ({})", r.high),
                points: r.priorities.iter().map(|x| (rate(x), x.lost(1))).collect(),
            },
            Series {
                name: "low priority".into(),
                points: r.priorities.iter().map(|x| (rate(x), x.lost(0))).collect(),
            },
        ],
        false,
    )?;
    let complete = |x: &RunResult| 100.0 * x.complete as f64 / x.streams.max(1) as f64;
    plot::lines(
        &path("rate-loss"),
        "Streams delivered completely",
        ("offered rate, Gbit/s", "streams complete, %"),
        &[
            Series {
                name: "decoupled + PPL".into(),
                points: r
                    .priorities
                    .iter()
                    .map(|x| (rate(x), complete(x)))
                    .collect(),
            },
            Series {
                name: "inline".into(),
                points: r.inline.iter().map(|x| (rate(x), complete(x))).collect(),
            },
        ],
        false,
    )?;
    plot::lines(
        &path("threads"),
        "Highest rate without loss",
        ("analysis threads", "Gbit/s"),
        &[Series {
            name: "decoupled".into(),
            points: r.threads.iter().map(|(n, g)| (*n as f64, *g)).collect(),
        }],
        false,
    )?;
    let mut series = Vec::new();
    for rho in [0.1, 0.5, 0.9] {
        let pick = |model: bool| -> Vec<(f64, f64)> {
            r.queueing
                .iter()
                .filter(|q| q.0 == rho)
                .map(|q| (f64::from(q.1), if model { q.2 } else { q.3 }))
                .collect()
        };
        series.push(Series {
            name: format!("M/M/1/N, rho {rho}"),
            points: pick(true),
        });
        series.push(Series {
            name: format!("PPL simulated, rho {rho}"),
            points: pick(false),
        });
    }
    plot::lines(
        &path("queueing"),
        "High-priority loss probability",
        ("N (memory slots per level)", "loss probability"),
        &series,
        true,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mm1n_matches_known_values() {
        // rho 0.5, N 1: (0.5 * 0.5) / (1 - 0.25) = 1/3.
        assert!((mm1n_loss(0.5, 1) - 1.0 / 3.0).abs() < 1e-12);
        assert!((mm1n_loss(1.0, 4) - 0.2).abs() < 1e-12);
        assert!(mm1n_loss(0.1, 10) < 1e-9);
    }

    #[test]
    fn the_simulated_high_level_loses_about_what_the_model_says() {
        // With heavy low-priority load the queue sits at watermark 1 and
        // the high level has its n slots: the M/M/1/n figure.
        let m = mm1n_loss(0.5, 5);
        let s = simulate_ppl(0.5, 2.0, 5, 400_000, 42);
        assert!(s > m / 4.0 && s < m * 4.0, "model {m}, simulated {s}");
    }
}
