//! Subzero copy on arbitrary Ethernet frames: the worker with the
//! in-memory flow-drop map in front of it (the XDP program's verdict and
//! counts, `streamcap::subzero::MemoryMap`) against the worker alone. No
//! panic; every stream's and the global counters add up; every entry is
//! taken back by the end; and the packets and IP bytes of the streams are
//! the same in both runs (what the map dropped is counted as if seen).
use std::sync::Arc;
use streamcap::subzero::{MemoryMap, SubzeroConfig};
use streamcap::Worker;

use super::common;

/// Runs the checks on one input (panics on a violation).
pub fn run(data: &[u8]) {
    let Some((&sel, rest)) = data.split_first() else {
        return;
    };
    let frames = common::frames(rest);
    let mut cfg = common::config(sel);
    // A cutoff, so that streams get past it; and room for every flow, so
    // that eviction (which the dropped packets, not touching their flow,
    // would reorder) does not pick other victims.
    cfg.cutoff = Some([0, 100][usize::from(sel & 1)]);
    cfg.max_flows = 1 << 16;
    let (cb, _) = common::checking_callbacks();
    let mut plain = Worker::new(cfg.clone(), cb);
    for p in &frames {
        plain.process(p);
    }
    let want = common::finish(&mut plain);

    let map = Arc::new(MemoryMap::new(1 + usize::from(sel >> 4) % 8));
    cfg.subzero = Some(SubzeroConfig {
        map: map.clone(),
        timeout: 1_000_000_000 * (1 + u64::from(sel % 5)),
    });
    let (cb, _) = common::checking_callbacks();
    let mut early = Worker::new(cfg, cb);
    for p in &frames {
        if map.offer(p) {
            early.advance_clock(p.ts);
        } else {
            early.process(p);
        }
    }
    let got = common::finish(&mut early);
    assert!(map.is_empty(), "{} entries left after finish", map.len());
    assert_eq!(
        (got.totals.pkts, got.totals.bytes),
        (want.totals.pkts, want.totals.bytes),
        "packets and bytes of the streams"
    );
}
