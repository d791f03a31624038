//! Subzero copy on arbitrary Ethernet frames: the worker with the
//! in-memory flow-drop map in front of it (the XDP program's verdict and
//! counts, `streamcap::subzero::MemoryMap`) against the worker alone. No
//! panic; every stream's and the global counters add up; every entry is
//! taken back by the end; and every packet is counted once, in a stream or
//! as a late packet of a closed connection, in both runs (what the map
//! dropped is counted as if seen), with the same IP bytes when the same
//! packets were late. (A hole in a dropped stretch counts as discarded and
//! moves the delivery point, from which a later RST is judged: a RST
//! valid in one run may not be in the other, and the packets after it are
//! then late in one run only.)
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
        got.totals.pkts + got.late_packets,
        want.totals.pkts + want.late_packets,
        "packets of the streams and late packets"
    );
    if got.late_packets == want.late_packets {
        assert_eq!(got.totals.bytes, want.totals.bytes, "bytes of the streams");
    }
}
