//! The capture stage's clock for paced replay, and how it waits for a
//! packet that is not yet due.
//!
//! [`WallClock`] waits on the calling thread, with no helper thread: it
//! sleeps while the due time is more than [`YIELD_WINDOW`] away, in slices
//! of at most [`SLEEP_SLICE`] (so that a stop request is seen within one
//! slice), and for the rest it yields the CPU (`sched_yield`) between
//! clock reads. A sleep on Linux ends up to the thread's timer slack
//! (50 µs by default) late; stopping the sleeps that much before the due
//! time keeps the wait from overshooting, at the cost of yielding for the
//! last tens of microseconds of each wait. A packet is therefore taken at
//! its due time or a few microseconds after it, and never before.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// How close to the due time [`WallClock::wait_until`] stops sleeping and
/// yields instead: 60 µs.
pub const YIELD_WINDOW: Duration = Duration::from_micros(60);

/// The longest single sleep of a wait: 20 ms.
pub const SLEEP_SLICE: Duration = Duration::from_millis(20);

/// A monotonic clock in nanoseconds, and a way to wait on it. Tests inject
/// their own to make pacing deterministic.
pub trait Clock {
    /// Nanoseconds since an origin of the clock's choosing; never decreases.
    fn now_ns(&mut self) -> u64;

    /// Waits until the clock reads at least `t`, and returns the reading
    /// then; returns `None` instead if `stop` is set first.
    fn wait_until(&mut self, t: u64, stop: Option<&AtomicBool>) -> Option<u64>;
}

/// Real time ([`Instant`]), waited for by sleeping and then yielding.
#[derive(Copy, Clone, Debug)]
pub struct WallClock {
    origin: Instant,
}

impl WallClock {
    /// A clock reading 0 now.
    pub fn new() -> WallClock {
        WallClock {
            origin: Instant::now(),
        }
    }
}

impl Default for WallClock {
    fn default() -> Self {
        WallClock::new()
    }
}

impl Clock for WallClock {
    fn now_ns(&mut self) -> u64 {
        u64::try_from(self.origin.elapsed().as_nanos()).unwrap_or(u64::MAX)
    }

    fn wait_until(&mut self, t: u64, stop: Option<&AtomicBool>) -> Option<u64> {
        let window = YIELD_WINDOW.as_nanos() as u64;
        loop {
            let now = self.now_ns();
            if now >= t {
                return Some(now);
            }
            if stop.is_some_and(|s| s.load(Ordering::Relaxed)) {
                return None;
            }
            let left = t - now;
            if left > window {
                std::thread::sleep(Duration::from_nanos(left - window).min(SLEEP_SLICE));
            } else {
                std::thread::yield_now();
            }
        }
    }
}
