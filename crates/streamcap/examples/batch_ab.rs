//! Temporary A/B: per-packet `process` against `process_batch`, two workers
//! fed the same batches alternately, so both see the same host conditions.
use std::time::{Duration, Instant};
use streamcap::deliver::Callbacks;
use streamcap::engine::Worker;
use streamcap::source::{FileSource, PacketSource};
use streamcap::Config;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let path = &args[1];
    let cutoff = match args[2].as_str() {
        "flows" => Some(0),
        _ => None,
    };
    let rounds: usize = args.get(3).and_then(|s| s.parse().ok()).unwrap_or(3);
    for _ in 0..rounds {
        let mut src = FileSource::open(path).expect("open");
        let cfg = Config {
            cutoff,
            ..Config::default()
        };
        let mut a = Worker::new(cfg.clone(), Callbacks::<()>::new());
        let mut b = Worker::new(cfg, Callbacks::<()>::new());
        let (mut ta, mut tb) = (Duration::ZERO, Duration::ZERO);
        let mut flip = false;
        loop {
            let mut batch = Vec::with_capacity(32);
            src.next_batch(&mut batch, 32);
            if batch.is_empty() {
                break;
            }
            flip = !flip;
            for k in 0..2 {
                if (k == 0) == flip {
                    let t = Instant::now();
                    for p in &batch {
                        a.process(p);
                    }
                    ta += t.elapsed();
                } else {
                    let t = Instant::now();
                    b.process_batch(&batch);
                    tb += t.elapsed();
                }
            }
        }
        std::hint::black_box((a.finish(), b.finish()));
        println!(
            "per-packet {:.3} s, batch {:.3} s, ratio {:.3}",
            ta.as_secs_f64(),
            tb.as_secs_f64(),
            tb.as_secs_f64() / ta.as_secs_f64()
        );
    }
}
