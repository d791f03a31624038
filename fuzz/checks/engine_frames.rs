//! The whole worker (decode, defragmentation, flow table, TCP/UDP
//! reassembly, delivery) on arbitrary Ethernet frames: no panic, chunks
//! continue their streams, every stream's and the global counters add up.
use streamcap::engine::Worker;

use super::common;

/// Runs the checks on one input (panics on a violation).
pub fn run(data: &[u8]) {
    let Some((&sel, mut rest)) = data.split_first() else {
        return;
    };
    let (cb, _seen) = common::checking_callbacks();
    let mut w = Worker::new(common::config(sel), cb);
    let mut ts = 1_000_000_000u64;
    let mut record = 0;
    // Each frame: one byte of time step, two of length, then the frame.
    while rest.len() >= 3 {
        let step = u64::from(rest[0]);
        let len = usize::from(u16::from_le_bytes([rest[1], rest[2]]));
        rest = &rest[3..];
        let frame = &rest[..len.min(rest.len())];
        rest = &rest[frame.len()..];
        ts += step * step * 1_000_000;
        record += 1;
        let orig_len = frame.len() as u32 + u32::from(step as u8 & 3);
        common::feed(&mut w, ts, frame, orig_len, record);
    }
    common::finish(&mut w);
}
