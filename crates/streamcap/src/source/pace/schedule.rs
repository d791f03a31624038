//! When each packet of a paced replay falls due: nanoseconds after the
//! first packet was read, from a bit rate, a packet rate or the trace's own
//! timestamps ([`super::Pace`]).

use super::Pace;
use crate::time::Timestamp;

/// The due times of a paced replay, packet after packet. Due times never
/// decrease; each is rounded up to a whole nanosecond and saturates at
/// `u64::MAX` (a pace so slow that a packet would fall due after 584 years).
#[derive(Clone, Debug)]
pub struct Schedule {
    pace: Pace,
    /// Packets scheduled so far.
    count: u64,
    /// On-the-wire bits of those packets.
    bits: u64,
    /// The first packet's timestamp.
    first_ts: Option<Timestamp>,
    /// The last due time handed out.
    last: u64,
}

/// `x` seconds in whole nanoseconds, rounded up; `x` below 0 or NaN is 0.
fn ceil_ns(x: f64) -> u64 {
    // `as` saturates (and maps NaN to 0).
    (x * 1e9).ceil() as u64
}

impl Schedule {
    /// The schedule of `pace`, before its first packet.
    pub fn new(pace: Pace) -> Schedule {
        Schedule {
            pace,
            count: 0,
            bits: 0,
            first_ts: None,
            last: 0,
        }
    }

    /// When the next packet, captured at `ts` with `wire_len` bytes on the
    /// wire, falls due: nanoseconds after the first packet was read, never
    /// before the packet before it.
    pub fn next_due(&mut self, ts: Timestamp, wire_len: u32) -> u64 {
        let k = self.count;
        self.count += 1;
        self.bits = self.bits.saturating_add(u64::from(wire_len) * 8);
        let due = match self.pace {
            // Multiplied first: exact while the product is below 2^53, so a
            // due time that is a whole number of nanoseconds is not rounded up.
            Pace::Rate { bits_per_sec } => (self.bits as f64 * 1e9 / bits_per_sec).ceil() as u64,
            Pace::Pps { packets_per_sec } => (k as f64 * 1e9 / packets_per_sec).ceil() as u64,
            Pace::Speed(factor) => {
                let first = *self.first_ts.get_or_insert(ts);
                ceil_ns(ts.nanos_since(first) as f64 / 1e9 / factor)
            }
        };
        self.last = self.last.max(due);
        self.last
    }
}
