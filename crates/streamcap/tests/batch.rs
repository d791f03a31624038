//! `Worker::process_batch` (what file runs use: flows looked up a group at a
//! time before any is processed) gives exactly what `Worker::process` gives
//! packet by packet: the same events in the same order, the same chunks and
//! descriptors, the same statistics, whatever the batch sizes, also when
//! packets in one group create, evict, reuse or time out flows.

mod support;

use streamcap::source::{FileSource, PacketSource};
use streamcap::Worker;
use streamcap::{Config, ReassemblyMode};
use support::{impaired_campus, Recorder};

/// Everything a run produced, rendered for comparison.
fn outcome(w: &mut Worker<Recorder>) -> (String, String) {
    let stats = w.finish();
    assert!(stats.packets > 0, "nothing processed");
    let r = w.handler();
    (
        format!("{:?}\n{:?}\n{:?}", r.order, r.streams, r.flows),
        format!("{stats:?}"),
    )
}

/// Runs the capture through a worker, handing it batches of the sizes in
/// `sizes` in turn (a size of 0 means one `process` call per packet).
fn run(cfg: &Config, pcap: &[u8], sizes: &[usize]) -> (String, String) {
    let mut src = FileSource::from_bytes("batch-test", pcap.to_vec()).expect("generated pcap");
    // Callback times differ from run to run.
    let cfg = Config {
        measure_processing_time: false,
        ..cfg.clone()
    };
    let mut w = Worker::new(cfg, Recorder::default());
    let mut turn = 0;
    loop {
        let size = sizes[turn % sizes.len()];
        turn += 1;
        let mut batch = Vec::new();
        let failed = src.next_batch(&mut batch, size.max(1));
        assert!(failed.is_none(), "{failed:?}");
        if batch.is_empty() {
            break;
        }
        if size == 0 {
            for p in &batch {
                w.process(p);
            }
        } else {
            w.process_batch(&batch);
        }
    }
    outcome(&mut w)
}

#[test]
fn batches_give_the_per_packet_result() {
    let pcap = impaired_campus(3, 12_000, 200);
    let configs = [
        ("default", Config::default()),
        (
            "cutoff 0",
            Config {
                cutoff: Some(0),
                ..Config::default()
            },
        ),
        (
            "strict, 2 KiB cutoff, small chunks",
            Config {
                mode: ReassemblyMode::Strict,
                cutoff: Some(2048),
                chunk_size: 700,
                ..Config::default()
            },
        ),
        // Flows are evicted all the time, so a group's lookups go stale
        // before the group is processed.
        (
            "40 flows at most",
            Config {
                max_flows: 40,
                ..Config::default()
            },
        ),
        // Flows time out between packets of one group.
        (
            "short timeouts",
            Config {
                tcp_timeout: 2_000_000,
                udp_timeout: 1_000_000,
                close_linger: 500_000,
                ..Config::default()
            },
        ),
    ];
    for (name, cfg) in &configs {
        let want = run(cfg, &pcap, &[0]);
        for sizes in [&[32][..], &[1, 2, 3, 5, 8, 13, 21, 34], &[7, 64, 9]] {
            let got = run(cfg, &pcap, sizes);
            assert_eq!(got.1, want.1, "{name}, batches {sizes:?}: statistics");
            if got.0 != want.0 {
                let at = got
                    .0
                    .bytes()
                    .zip(want.0.bytes())
                    .take_while(|(a, b)| a == b)
                    .count();
                panic!(
                    "{name}, batches {sizes:?}: events differ from per-packet processing at byte {at}: got {} want {}",
                    &got.0[at.saturating_sub(300)..(at + 100).min(got.0.len())],
                    &want.0[at.saturating_sub(300)..(at + 100).min(want.0.len())]
                );
            }
        }
    }
}

/// Two workers sharing one file by flow hash, fed batches, split exactly
/// what two workers fed packet by packet split.
#[test]
fn sharded_batches_give_the_per_packet_result() {
    use streamcap::dispatch::fanout::{Fanout, Shard};
    let pcap = impaired_campus(5, 8_000, 200);
    for (i, shard) in Shard::split(2, Fanout::Hash).into_iter().enumerate() {
        let run_shard = |batched: bool| {
            let mut src = FileSource::from_bytes("batch-test", pcap.clone()).expect("pcap");
            let cfg = Config {
                measure_processing_time: false,
                ..Config::default()
            };
            let mut w = Worker::new(cfg, Recorder::default()).with_shard(shard.clone());
            loop {
                let mut batch = Vec::new();
                assert!(src.next_batch(&mut batch, 16).is_none());
                if batch.is_empty() {
                    break;
                }
                if batched {
                    w.process_batch(&batch);
                } else {
                    batch.iter().for_each(|p| w.process(p));
                }
            }
            outcome(&mut w)
        };
        let (want, got) = (run_shard(false), run_shard(true));
        assert_eq!(got.1, want.1, "shard {i}: statistics");
        assert!(got.0 == want.0, "shard {i}: events differ");
    }
}
