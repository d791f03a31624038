//! Benchmark: `Worker::process_batch` (group lookups with prefetching, what
//! file runs use) against `Worker::process` packet by packet.
//!
//! Two workers get the same batches of the file alternately, so both run
//! under the same host conditions (on a shared machine, separate runs of the
//! two differ by more than the effect measured). Both see the shared cache
//! filled by the other, so the absolute times are higher than a run alone.
//!
//! ```text
//! cargo run --release -p streamcap --example lookahead -- FILE [flows|streams] [ROUNDS]
//! ```
//!
//! `flows` is cutoff 0 (statistics only), `streams` full reassembly to a
//! no-op handler. Prints each round's times and their ratio.
use std::time::{Duration, Instant};
use streamcap::deliver::Callbacks;
use streamcap::source::{FileSource, PacketSource};
use streamcap::Config;
use streamcap::Worker;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let Some(path) = args.get(1) else {
        eprintln!("usage: lookahead FILE [flows|streams] [ROUNDS]");
        std::process::exit(2);
    };
    let cutoff = match args.get(2).map(String::as_str) {
        Some("streams") => None,
        _ => Some(0),
    };
    let rounds: usize = args.get(3).and_then(|s| s.parse().ok()).unwrap_or(3);
    for round in 1..=rounds {
        let mut src = match FileSource::open(path) {
            Ok(s) => s,
            Err(e) => {
                eprintln!("lookahead: {e}");
                std::process::exit(1);
            }
        };
        let cfg = Config {
            cutoff,
            ..Config::default()
        };
        let mut single = Worker::new(cfg.clone(), Callbacks::<()>::new());
        let mut batched = Worker::new(cfg, Callbacks::<()>::new());
        let (mut t_single, mut t_batched) = (Duration::ZERO, Duration::ZERO);
        let mut batched_first = false;
        loop {
            let mut batch = Vec::with_capacity(32);
            if let Some(e) = src.next_batch(&mut batch, 32) {
                eprintln!("lookahead: {e}");
                break;
            }
            if batch.is_empty() {
                break;
            }
            batched_first = !batched_first;
            for turn in [batched_first, !batched_first] {
                let t = Instant::now();
                if turn {
                    batched.process_batch(&batch);
                    t_batched += t.elapsed();
                } else {
                    batch.iter().for_each(|p| single.process(p));
                    t_single += t.elapsed();
                }
            }
        }
        std::hint::black_box((single.finish(), batched.finish()));
        println!(
            "round {round}: packet by packet {:.3} s, batched {:.3} s, ratio {:.3}",
            t_single.as_secs_f64(),
            t_batched.as_secs_f64(),
            t_batched.as_secs_f64() / t_single.as_secs_f64()
        );
    }
}
