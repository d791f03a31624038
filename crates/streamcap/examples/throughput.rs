//! Measures engine throughput on a capture: statistics only (cutoff 0) and
//! full stream delivery to a no-op consumer, best of N runs each (default 3).
//!
//! `cargo run --release --example throughput -- trace.pcap [RUNS]`
use std::time::Instant;
use streamcap::{deliver::Callbacks, Capture};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let path = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "samples/sample.pcap".into());
    let runs: usize = std::env::args()
        .nth(2)
        .and_then(|r| r.parse().ok())
        .unwrap_or(3);
    for (name, cutoff) in [("flows (cutoff 0)", Some(0)), ("streams (no cutoff)", None)] {
        let mut b = Capture::builder();
        if let Some(c) = cutoff {
            b = b.cutoff(c);
        }
        let cap = b.build();
        let mut best = f64::MAX;
        let mut stats = None;
        for _ in 0..runs {
            let t = Instant::now();
            let r = cap.run_file(&path, Callbacks::<()>::new())?;
            best = best.min(t.elapsed().as_secs_f64());
            stats = Some(r.stats);
        }
        let s = stats.unwrap_or_default();
        println!(
            "{name:>20}: {:.3} s, {:.2} Gbit/s, {:.2} Mpps, {} flows, {} bytes captured",
            best,
            s.wire_bytes as f64 * 8.0 / best / 1e9,
            s.packets as f64 / best / 1e6,
            s.flows_created.iter().sum::<u64>(),
            s.totals.captured
        );
    }
    Ok(())
}
