//! The whole worker (decode, defragmentation, flow table, TCP/UDP
//! reassembly, delivery) on arbitrary Ethernet frames: no panic, chunks
//! continue their streams, every stream's and the global counters add up,
//! and processing the frames in groups (`Worker::process_batch`, what file
//! runs do) gives exactly what processing them one by one gives.
use streamcap::Worker;

use super::common;

/// Runs the checks on one input (panics on a violation).
pub fn run(data: &[u8]) {
    let Some((&sel, rest)) = data.split_first() else {
        return;
    };
    let frames = common::frames(rest);
    let (cb, seen) = common::checking_callbacks();
    let mut one_by_one = Worker::new(common::config(sel), cb);
    for p in &frames {
        one_by_one.process(p);
    }
    let want = common::finish(&mut one_by_one);
    let (cb, seen_grouped) = common::checking_callbacks();
    let mut grouped = Worker::new(common::config(sel), cb);
    for batch in frames.chunks(1 + usize::from(sel % 37)) {
        grouped.process_batch(batch);
    }
    let got = common::finish(&mut grouped);
    assert_eq!(
        format!("{got:?}"),
        format!("{want:?}"),
        "grouped statistics"
    );
    assert_eq!(
        seen_grouped.borrow().next,
        seen.borrow().next,
        "grouped deliveries"
    );
}
