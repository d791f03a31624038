//! Shared by the engine targets: a configuration drawn from the input, and a
//! handler that checks what the engine delivers against its own statistics.
use std::cell::RefCell;
use std::rc::Rc;
use streamcap::deliver::{Callbacks, Chunk, Stream};
use streamcap::Worker;
use streamcap::{
    Config, GlobalStats, LinkType, OverlapPolicy, RawPacket, ReassemblyMode, Timestamp,
};

/// The worker the engine targets drive.
pub type FuzzWorker = Worker<Callbacks<()>>;

/// Feeds one Ethernet frame captured at `ts_ns`, `orig_len` bytes on the wire.
pub fn feed(w: &mut FuzzWorker, ts_ns: u64, frame: &[u8], orig_len: u32, record: u64) {
    w.process(&RawPacket {
        ts: Timestamp(ts_ns),
        link: LinkType::ETHERNET,
        data: frame,
        orig_len,
        record,
        interface: 0,
    });
}

/// Ethernet frames from fuzz input: each is one byte of time step (the
/// square of it in ms), two of length (little endian), then the frame
/// (cut where the input ends); the step's low two bits are bytes the
/// snapshot length cut.
pub fn frames(mut rest: &[u8]) -> Vec<RawPacket<'_>> {
    let mut frames = Vec::new();
    let mut ts = 1_000_000_000u64;
    let mut record = 0;
    while rest.len() >= 3 {
        let step = u64::from(rest[0]);
        let len = usize::from(u16::from_le_bytes([rest[1], rest[2]]));
        rest = &rest[3..];
        let frame = &rest[..len.min(rest.len())];
        rest = &rest[frame.len()..];
        ts += step * step * 1_000_000;
        record += 1;
        frames.push(RawPacket {
            ts: Timestamp(ts),
            link: LinkType::ETHERNET,
            data: frame,
            orig_len: frame.len() as u32 + u32::from(step as u8 & 3),
            record,
            interface: 0,
        });
    }
    frames
}

/// Ends the run and checks the global counters add up.
pub fn finish(w: &mut FuzzWorker) -> GlobalStats {
    let stats = w.finish();
    assert!(
        stats.totals.invariant_holds(),
        "global counters: {:?}",
        stats.totals
    );
    stats
}

/// A small configuration (tight limits, so they are exercised) chosen by `sel`.
pub fn config(sel: u8) -> Config {
    Config {
        memory_size: [1 << 10, 64 << 10, 16 << 20][usize::from(sel % 3)],
        mode: if sel & 4 == 0 {
            ReassemblyMode::Fast
        } else {
            ReassemblyMode::Strict
        },
        policy: OverlapPolicy::ALL[usize::from(sel >> 3) % OverlapPolicy::ALL.len()],
        cutoff: [None, Some(0), Some(100)][usize::from(sel >> 6) % 3],
        chunk_size: 64,
        overlap: 8,
        need_packets: sel & 0x20 != 0,
        max_flows: 16,
        max_ooo_segments: 8,
        max_ooo_bytes: 4096,
        // Callback times differ between runs of the same input.
        measure_processing_time: false,
        ..Config::default()
    }
}

/// What the handler saw, per direction, keyed by connection id and direction.
#[derive(Default)]
pub struct Seen {
    /// (conn id, orig?) -> (next stream offset expected, new bytes delivered).
    pub next: std::collections::HashMap<(u64, bool), (u64, u64)>,
}

/// Callbacks that check every chunk continues where the last one ended (or
/// after a reported gap) and every closed stream's counters add up.
pub fn checking_callbacks() -> (Callbacks<()>, Rc<RefCell<Seen>>) {
    let seen = Rc::new(RefCell::new(Seen::default()));
    let s1 = seen.clone();
    let cb = Callbacks::<()>::new()
        .on_data(move |s: &mut Stream<'_, ()>, c: &Chunk<'_>| {
            let info = s.info();
            let key = (
                info.conn_id,
                info.direction == streamcap::flow::Direction::Orig,
            );
            let new_at = c.offset + c.new_from as u64;
            let mut seen = s1.borrow_mut();
            let (next, got) = seen.next.entry(key).or_insert((0, 0));
            if c.reason != streamcap::deliver::DataReason::Packet {
                match c.gap {
                    // Without a gap report the new bytes continue the stream.
                    None => assert_eq!(new_at, *next, "chunk does not continue the stream"),
                    Some(g) => {
                        assert_eq!(
                            g.offset + g.len,
                            new_at,
                            "gap does not end at the new bytes"
                        );
                        assert!(g.offset >= *next, "gap overlaps delivered bytes");
                    }
                }
            }
            assert!(c.new_from <= c.data.len());
            *next = new_at + c.new_data().len() as u64;
            *got += c.new_data().len() as u64;
        })
        .on_close(|s: &mut Stream<'_, ()>| {
            let c = &s.info().counters;
            assert!(c.invariant_holds(), "stream counters do not add up: {c:?}");
        });
    (cb, seen)
}
