//! The in-order fast path allocates nothing per packet: a counting global
//! allocator watches a long in-order stream (both directions, chunks
//! delivered all along) after the connection is set up.

mod support;

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicU64, Ordering};
use streamcap::deliver::{Chunk, Handler, Stream};
use streamcap::Worker;
use streamcap::{Config, LinkType, RawPacket, Timestamp};
use support::*;

struct Counting;

static ALLOCS: AtomicU64 = AtomicU64::new(0);

// SAFETY: delegates every call to the system allocator unchanged; only counts.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        ALLOCS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: same contract as the caller's.
        unsafe { System.alloc(l) }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        // SAFETY: same contract as the caller's.
        unsafe { System.dealloc(p, l) }
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, n: usize) -> *mut u8 {
        ALLOCS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: same contract as the caller's.
        unsafe { System.realloc(p, l, n) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

#[derive(Default)]
struct Sum(u64);

impl Handler for Sum {
    type State = ();
    fn on_data(&mut self, _s: &mut Stream<'_, ()>, c: &Chunk<'_>) {
        self.0 += c.new_data().len() as u64;
    }
}

/// Both in one test: the counter is global, so the two runs must not overlap.
#[test]
fn in_order_fast_path_allocates_nothing_per_packet() {
    // Chunks delivered all along.
    check(Config::default(), 20_000 * 1100);
    // Statistics only (cutoff 0, the default of `streamcap flows`).
    check(
        Config {
            cutoff: Some(0),
            ..Config::default()
        },
        0,
    );
}

fn check(cfg: Config, want_delivered: u64) {
    let data = bytes(20_000 * 1000, 99);
    let mut c = Conv::new(ep("10.0.0.1", 1234), ep("10.0.0.2", 80), 7, 9);
    c.handshake();
    // Interleave both directions: request bytes and response bytes.
    for part in data.chunks(1000) {
        c.client(part, 1000);
        c.server(&part[..100], 100);
    }
    let frames = c.frames;
    let mut w = Worker::new(cfg, Sum::default());
    let feed_range = |w: &mut Worker<Sum>, r: std::ops::Range<usize>| {
        for i in r {
            let f = &frames[i];
            w.process(&RawPacket {
                ts: Timestamp::from_secs_nanos(1, i as u64 * 1000),
                link: LinkType::ETHERNET,
                data: f,
                orig_len: f.len() as u32,
                record: i as u64,
                interface: 0,
            });
        }
    };
    // Warm-up: the connection and both streams are created, and their chunk
    // buffers have grown to the chunk size (16 KiB: 200 server packets).
    feed_range(&mut w, 0..400);
    let before = ALLOCS.load(Ordering::Relaxed);
    feed_range(&mut w, 400..frames.len());
    let during = ALLOCS.load(Ordering::Relaxed) - before;
    let packets = frames.len() - 400;
    w.finish();
    let delivered = w.handler().0;
    assert_eq!(delivered, want_delivered);
    eprintln!("{packets} in-order packets, {during} allocations");
    assert_eq!(
        during, 0,
        "the in-order path allocated {during} times over {packets} packets"
    );
}
