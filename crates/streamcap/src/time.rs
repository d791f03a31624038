//! Packet timestamps.

use std::fmt;

/// A capture timestamp: nanoseconds since the Unix epoch.
///
/// Nanosecond resolution covers every pcap and pcapng resolution in use, and a
/// `u64` reaches the year 2554, so pcapng files with 64-bit timestamps past
/// 2106 are represented exactly.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Timestamp(pub u64);

impl Timestamp {
    /// The Unix epoch.
    pub const ZERO: Timestamp = Timestamp(0);

    /// Builds a timestamp from whole seconds and nanoseconds (saturating).
    pub fn from_secs_nanos(secs: u64, nanos: u64) -> Timestamp {
        Timestamp(secs.saturating_mul(1_000_000_000).saturating_add(nanos))
    }

    /// Nanoseconds since the epoch.
    pub fn as_nanos(self) -> u64 {
        self.0
    }

    /// Seconds since the epoch as a float (what JSON output prints).
    pub fn as_secs_f64(self) -> f64 {
        (self.0 / 1_000_000_000) as f64 + (self.0 % 1_000_000_000) as f64 / 1e9
    }

    /// Whole seconds since the epoch.
    pub fn secs(self) -> u64 {
        self.0 / 1_000_000_000
    }

    /// Nanoseconds within the second.
    pub fn subsec_nanos(self) -> u32 {
        (self.0 % 1_000_000_000) as u32
    }

    /// `self + d`, saturating.
    pub fn add_nanos(self, d: u64) -> Timestamp {
        Timestamp(self.0.saturating_add(d))
    }

    /// Nanoseconds from `earlier` to `self`, or 0 if `earlier` is later.
    pub fn nanos_since(self, earlier: Timestamp) -> u64 {
        self.0.saturating_sub(earlier.0)
    }
}

impl fmt::Display for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{:09}", self.secs(), self.subsec_nanos())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conversions() {
        let t = Timestamp::from_secs_nanos(1_700_000_000, 123_456_789);
        assert_eq!(t.secs(), 1_700_000_000);
        assert_eq!(t.subsec_nanos(), 123_456_789);
        assert_eq!(t.to_string(), "1700000000.123456789");
        assert!((t.as_secs_f64() - 1_700_000_000.123_456_8).abs() < 1e-6);
        assert_eq!(t.add_nanos(1).nanos_since(t), 1);
        assert_eq!(t.nanos_since(t.add_nanos(5)), 0);
    }
}
