//! Tests of the schedule, the ring model and the pacer, on injected clocks.

use super::*;
use crate::time::Timestamp;
use crate::LinkType;

const SEC: u64 = 1_000_000_000;

fn rate(bits_per_sec: f64) -> Pace {
    Pace::Rate { bits_per_sec }
}

fn at(secs: u64) -> Timestamp {
    Timestamp(secs * SEC)
}

#[test]
fn a_bit_rate_counts_every_wire_bit_up_to_the_packets_last() {
    let mut s = Schedule::new(rate(8.0));
    // 1, 2 and 1 bytes at 8 bit/s: the last bits arrive at 1, 3 and 4 s.
    let dues: Vec<u64> = [1, 2, 1].iter().map(|&n| s.next_due(at(0), n)).collect();
    assert_eq!(dues, [SEC, 3 * SEC, 4 * SEC]);
    // 0.85 Gbit/s: a 1500-byte frame takes 14,117.6 ns, rounded up.
    let mut s = Schedule::new(rate(0.85e9));
    assert_eq!(s.next_due(at(0), 1500), 14_118);
    assert_eq!(s.next_due(at(0), 1500), 28_236);
    // The timestamps play no part.
    let mut s = Schedule::new(rate(2e9));
    assert_eq!(s.next_due(at(100), 250), 1000);
    assert_eq!(s.next_due(at(0), 250), 2000);
    // A zero-length packet falls due with the one before it.
    assert_eq!(s.next_due(at(0), 0), 2000);
}

#[test]
fn a_packet_rate_spaces_packets_evenly_from_the_first() {
    let mut s = Schedule::new(Pace::Pps {
        packets_per_sec: 500_000.0,
    });
    let dues: Vec<u64> = (0..4).map(|_| s.next_due(at(7), 1500)).collect();
    assert_eq!(dues, [0, 2000, 4000, 6000]);
    let mut s = Schedule::new(Pace::Pps {
        packets_per_sec: 3.0,
    });
    let dues: Vec<u64> = (0..4).map(|_| s.next_due(at(0), 60)).collect();
    assert_eq!(dues, [0, 333_333_334, 666_666_667, SEC]);
}

#[test]
fn a_speed_divides_the_traces_own_time() {
    let mut s = Schedule::new(Pace::Speed(4.0));
    let dues: Vec<u64> = [10, 14, 18, 50]
        .iter()
        .map(|&t| s.next_due(at(t), 60))
        .collect();
    assert_eq!(dues, [0, SEC, 2 * SEC, 10 * SEC]);
    let mut s = Schedule::new(Pace::Speed(0.5));
    assert_eq!(s.next_due(Timestamp(5), 60), 0);
    assert_eq!(s.next_due(Timestamp(5 + 250_000), 60), 500_000);
}

#[test]
fn timestamps_going_backwards_never_move_time_back() {
    let mut s = Schedule::new(Pace::Speed(2.0));
    let dues: Vec<u64> = [10, 14, 12, 18, 9, 20]
        .iter()
        .map(|&t| s.next_due(at(t), 60))
        .collect();
    // 12 s is before 14 s and 9 s before the first packet: each falls due
    // with the packet before it.
    assert_eq!(dues, [0, 2 * SEC, 2 * SEC, 4 * SEC, 4 * SEC, 5 * SEC]);
}

#[test]
fn a_pace_too_slow_for_the_clock_saturates() {
    let mut s = Schedule::new(Pace::Pps {
        packets_per_sec: 1e-300,
    });
    assert_eq!(s.next_due(at(0), 60), 0);
    assert_eq!(s.next_due(at(0), 60), u64::MAX);
    assert_eq!(s.next_due(at(0), 60), u64::MAX);
}

#[test]
fn only_finite_positive_paces_pass_the_check() {
    for bad in [0.0, -1.0, -0.0, f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
        assert!(rate(bad).check().is_err(), "{bad}");
        assert!(Pace::Speed(bad).check().is_err(), "{bad}");
        assert!(Pace::Pps {
            packets_per_sec: bad
        }
        .check()
        .is_err());
    }
    assert_eq!(rate(1e-9).check(), Ok(rate(1e-9)));
    let e = Pace::Speed(f64::NAN).check().expect_err("NaN");
    assert_eq!(
        e.to_string(),
        "speed factor NaN: expected a finite number above 0"
    );
}

#[test]
fn the_frame_header_is_the_kernels() {
    assert_eq!(FRAME_HEADER, 80);
    assert_eq!(frame_cost(0), 80);
    assert_eq!(frame_cost(1514), 1594);
    #[cfg(target_os = "linux")]
    {
        use crate::source::{RingConfig, TPACKET_ALIGNMENT};
        assert_eq!(FRAME_HEADER % TPACKET_ALIGNMENT as u64, 0);
        assert_eq!(
            DEFAULT_RING_SIZE,
            RingConfig::default().total_size() as u64,
            "a file's ring defaults to a live capture's"
        );
    }
}

/// The ring model as the definition says, in O(n²): packet `j` is dropped
/// if the accepted packets before it that are taken after `due_j` hold so
/// many bytes that it does not fit.
pub(crate) fn reference(size: u64, offers: &[(u64, u64, u64)]) -> Vec<bool> {
    let mut accepted: Vec<(u64, u64)> = Vec::new();
    let mut out = Vec::new();
    let mut last_take = 0;
    for &(due, take, cost) in offers {
        let held: u64 = accepted
            .iter()
            .filter(|(t, _)| *t > due)
            .map(|(_, c)| c)
            .sum();
        let ok = held + cost <= size;
        if ok {
            last_take = take.max(due).max(last_take);
            accepted.push((last_take, cost));
        }
        out.push(ok);
    }
    out
}

fn run_ring(size: u64, offers: &[(u64, u64, u64)]) -> Vec<bool> {
    let mut r = RingModel::new(size);
    offers.iter().map(|&(d, t, c)| r.offer(d, t, c)).collect()
}

#[test]
fn the_ring_drops_exactly_what_does_not_fit_when_it_falls_due() {
    // (due, take, cost); a ring of 300 bytes.
    let offers = [
        (0, 10, 100),  // in the ring 0..10
        (1, 10, 100),  // 1..10: 200 held
        (2, 10, 100),  // 2..10: 300 held, full
        (3, 10, 100),  // dropped: nothing leaves before 10
        (9, 10, 100),  // dropped
        (10, 20, 100), // the first three were taken at 10: fits
        (11, 20, 150), // 250 held
        (12, 20, 100), // dropped: 350 > 300
        (12, 20, 50),  // fits exactly: 300
        (20, 20, 300), // everything before was taken at 20
    ];
    let got = run_ring(300, &offers);
    assert_eq!(
        got,
        [true, true, true, false, false, true, true, false, true, true]
    );
    assert_eq!(got, reference(300, &offers));
    let mut r = RingModel::new(300);
    for &(d, t, c) in &offers {
        r.offer(d, t, c);
    }
    assert_eq!(r.peak(), 300);
}

#[test]
fn a_ring_of_exactly_one_packet() {
    let cost = frame_cost(60);
    let offers = [
        (0, 5, cost),       // waits until 5
        (4, 9, cost),       // falls due while the first is still there: dropped
        (5, 9, cost),       // the first was taken at 5: fits
        (6, 9, cost),       // dropped
        (9, 9, cost),       // taken the moment it arrives
        (9, 12, cost),      // ... so it holds no room: fits
        (10, 12, cost + 1), // larger than the ring: dropped even if empty
        (12, 12, cost + 1), // likewise
    ];
    let got = run_ring(cost, &offers);
    assert_eq!(got, [true, false, true, false, true, true, false, false]);
    assert_eq!(got, reference(cost, &offers));
}

#[test]
fn zero_length_packets_still_take_their_frame_header() {
    let cost = frame_cost(0);
    // A ring of two empty frames: a third arriving meanwhile is dropped.
    let offers = [
        (0, 100, cost),
        (1, 100, cost),
        (2, 100, cost),
        (100, 100, cost),
    ];
    let got = run_ring(2 * cost, &offers);
    assert_eq!(got, [true, true, false, true]);
    // A ring smaller than one frame header drops every packet.
    assert_eq!(run_ring(cost - 1, &offers), [false; 4]);
}

#[test]
fn the_ring_agrees_with_the_definition_on_random_sequences() {
    // A small deterministic PRNG (xorshift64).
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let (mut taken, mut dropped) = (0, 0);
    for case in 0..200 {
        let size = 80 + next() % 2000;
        let (mut due, mut take) = (0u64, 0u64);
        let offers: Vec<(u64, u64, u64)> = (0..200)
            .map(|_| {
                due += next() % 50;
                // Busy now and then: taken late.
                take = take.max(due) + next() % 120;
                (due, take, frame_cost((next() % 400) as usize))
            })
            .collect();
        let got = run_ring(size, &offers);
        assert_eq!(got, reference(size, &offers), "case {case}");
        taken += got.iter().filter(|a| **a).count();
        dropped += got.iter().filter(|a| !**a).count();
    }
    assert!(
        taken > 1000 && dropped > 1000,
        "{taken} taken, {dropped} dropped"
    );
}

/// A clock that advances `step` ns every time it is read (the time the
/// capture stage spends on each packet) and jumps to the due time of a
/// wait.
#[derive(Debug)]
pub(crate) struct StepClock {
    pub(crate) now: u64,
    pub(crate) step: u64,
}

impl Clock for StepClock {
    fn now_ns(&mut self) -> u64 {
        let t = self.now;
        self.now += self.step;
        t
    }
    fn wait_until(&mut self, t: u64, stop: Option<&AtomicBool>) -> Option<u64> {
        if stop.is_some_and(|s| s.load(std::sync::atomic::Ordering::Relaxed)) {
            return None;
        }
        self.now = self.now.max(t);
        Some(self.now)
    }
}

fn packet(data: &[u8], orig_len: u32) -> RawPacket<'_> {
    RawPacket {
        ts: Timestamp::ZERO,
        link: LinkType::ETHERNET,
        data,
        orig_len,
        record: 0,
        interface: 0,
    }
}

#[test]
fn a_slow_capture_stage_drops_what_its_ring_cannot_hold() {
    // One packet every 100 ns; the stage needs 250 ns per packet; the ring
    // holds three empty frames.
    let pace = Pace::Pps {
        packets_per_sec: 1e7,
    };
    let mut p = Pacer::new(
        pace,
        3 * FRAME_HEADER,
        StepClock {
            now: 1000,
            step: 250,
        },
    );
    let got: Vec<Admit> = (0..12).map(|_| p.admit(&packet(&[], 60), None)).collect();
    // The same decisions from the definition: packet k falls due at 100k
    // and is looked at when the clock reads 250k.
    let offers: Vec<(u64, u64, u64)> = (0..12u64)
        .map(|k| (100 * k, 250 * k, FRAME_HEADER))
        .collect();
    let want: Vec<Admit> = reference(3 * FRAME_HEADER, &offers)
        .into_iter()
        .map(|ok| if ok { Admit::Take } else { Admit::Drop })
        .collect();
    assert_eq!(got, want);
    let drops = want.iter().filter(|a| **a == Admit::Drop).count() as u64;
    assert!(drops > 0);
    assert_eq!(p.ring_drops(), (drops, drops * 60));
    let s = p.stats();
    assert_eq!(s.ring_size, 240);
    assert_eq!(s.ring_peak, 240);
    assert_eq!(s.idle_ns, 0);
    // The last packet (due at 1100) is looked at 2750 ns after the first.
    assert_eq!(s.max_late_ns, 2750 - 1100);
}

#[test]
fn a_fast_capture_stage_waits_and_drops_nothing() {
    // 1 byte at 8 bit/s: one packet a second; the stage needs 1 µs.
    let mut p = Pacer::new(rate(8.0), frame_cost(1), StepClock { now: 0, step: 1000 });
    for _ in 0..5 {
        assert_eq!(p.admit(&packet(&[0], 1), None), Admit::Take);
    }
    let s = p.stats();
    assert_eq!(p.ring_drops(), (0, 0));
    assert_eq!(s.max_late_ns, 0);
    // Packet k falls due at k+1 s; the stage looks at it at k s (the
    // clock advances after each read).
    assert_eq!(s.idle_ns, 5 * SEC);
    assert_eq!(p.clock().now, 5 * SEC);
}

#[test]
fn a_stop_ends_a_wait() {
    let stop = AtomicBool::new(true);
    let mut p = Pacer::new(rate(8.0), frame_cost(1), StepClock { now: 0, step: 1 });
    assert_eq!(p.admit(&packet(&[0], 1), Some(&stop)), Admit::Stop);
    // Without a wait the flag plays no part.
    let mut p = Pacer::new(
        Pace::Pps {
            packets_per_sec: 1.0,
        },
        frame_cost(1),
        StepClock { now: 0, step: 1 },
    );
    assert_eq!(p.admit(&packet(&[0], 1), Some(&stop)), Admit::Take);
}

#[test]
fn the_wall_clock_waits_until_the_due_time() {
    let mut c = WallClock::new();
    let t = c.now_ns() + 2_000_000;
    let reached = c.wait_until(t, None).expect("no stop flag");
    assert!(reached >= t && c.now_ns() >= t);
    let stop = AtomicBool::new(true);
    assert_eq!(c.wait_until(u64::MAX, Some(&stop)), None);
}
