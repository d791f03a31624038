//! TCP reassembly driven by arbitrary segments of one connection (either
//! direction, any sequence number near the ISN, any flags, any bytes), under
//! every overlap policy and mode, delivered in chunks and segment by
//! segment: no panic, each delivered chunk continues its stream, no stream
//! delivers more than it captured, and both deliveries account alike.
use etherparse::PacketBuilder;
use streamcap::deliver::Delivery;
use streamcap::Config;
use streamcap::Worker;

use super::common;

const ISN: [u32; 2] = [0xffff_f000, 1000]; // the client's wraps around

/// Runs the checks on one input (panics on a violation).
pub fn run(data: &[u8]) {
    let Some((&sel, mut rest)) = data.split_first() else {
        return;
    };
    let mut frames = Vec::new();
    // Each segment: flags byte (bit 7: from the server), two bytes of
    // sequence offset, one of length, then that many payload bytes.
    while rest.len() >= 4 {
        let (flags, off, len) = (rest[0], u16::from_le_bytes([rest[1], rest[2]]), rest[3]);
        rest = &rest[4..];
        let payload = &rest[..usize::from(len).min(rest.len())];
        rest = &rest[payload.len()..];
        let server = flags & 0x80 != 0;
        let (src, dst, sp, dp) = if server {
            ([10, 0, 0, 2], [10, 0, 0, 1], 80, 40000)
        } else {
            ([10, 0, 0, 1], [10, 0, 0, 2], 40000, 80)
        };
        let me = usize::from(server);
        let seq = ISN[me].wrapping_add(u32::from(off)).wrapping_sub(64);
        let ack = ISN[1 - me].wrapping_add(1 + u32::from(off & 0x3ff));
        let mut b = PacketBuilder::ethernet2([1; 6], [2; 6])
            .ipv4(src, dst, 64)
            .tcp(sp, dp, seq, 65535);
        if flags & 1 != 0 {
            b = b.syn();
        }
        if flags & 2 != 0 {
            b = b.ack(ack);
        }
        if flags & 4 != 0 {
            b = b.fin();
        }
        if flags & 8 != 0 {
            b = b.rst();
        }
        if flags & 16 != 0 {
            b = b.psh();
        }
        let mut frame = Vec::new();
        if b.write(&mut frame, payload).is_ok() {
            frames.push(frame);
        }
    }
    let chunks = common::config(sel);
    // Segment delivery without overlap: the in-place path.
    let segments = Config {
        delivery: Delivery::Segments,
        overlap: 0,
        ..chunks.clone()
    };
    let totals = [chunks, segments].map(|cfg| {
        let (cb, seen) = common::checking_callbacks();
        let mut w = Worker::new(cfg, cb);
        for (n, frame) in (1u64..).zip(&frames) {
            common::feed(
                &mut w,
                1_000_000_000 + n * 1_000,
                frame,
                frame.len() as u32,
                n,
            );
        }
        let stats = common::finish(&mut w);
        let delivered: u64 = seen.borrow().next.values().map(|(_, got)| got).sum();
        assert!(
            delivered <= stats.totals.captured,
            "{delivered} delivered, {} captured",
            stats.totals.captured
        );
        (stats.totals, stats.memory_refusals)
    });
    // Segment delivery needs less memory for stream bytes (nothing for
    // in-order bytes): without packet records, when the budget refused
    // nothing with chunk delivery, it refused nothing with segments either.
    // Packet records are held differently: chunk delivery hands them over
    // with the pending chunk at a gap, segment delivery with the next bytes
    // it delivers, which a hole given up only in part (fast mode, up to the
    // acknowledgment) can put far off, so segments may hold more records.
    // Whenever neither refused anything, every byte ended the same way.
    // (Otherwise the budget's decisions differ, and the counts may.)
    let [(c, c_refusals), (s, s_refusals)] = totals;
    if c_refusals == 0 && !common::config(sel).need_packets {
        assert_eq!(s_refusals, 0);
    }
    if c_refusals == 0 && s_refusals == 0 {
        assert_eq!(
            (c.stream_bytes, c.captured, c.discarded, c.dropped),
            (s.stream_bytes, s.captured, s.discarded, s.dropped)
        );
        assert_eq!((c.missing, c.retransmitted), (s.missing, s.retransmitted));
    }
}
