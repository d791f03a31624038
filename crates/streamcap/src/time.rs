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

/// A timestamp's UTC calendar date and time of day.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Utc {
    /// Year (1970 and later).
    pub year: u32,
    /// Month, 1 to 12.
    pub month: u8,
    /// Day of the month, 1 to 31.
    pub day: u8,
    /// Hour, 0 to 23.
    pub hour: u8,
    /// Minute, 0 to 59.
    pub minute: u8,
    /// Second, 0 to 59.
    pub second: u8,
    /// Nanoseconds within the second.
    pub nanos: u32,
}

impl Timestamp {
    /// The UTC date and time (proleptic Gregorian calendar, no leap seconds).
    pub fn utc(self) -> Utc {
        let secs = self.secs();
        let days = (secs / 86_400) as i64;
        let rem = secs % 86_400;
        // Howard Hinnant's civil_from_days.
        let z = days + 719_468;
        let era = z.div_euclid(146_097);
        let doe = z - era * 146_097;
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
        let mp = (5 * doy + 2) / 153;
        let day = doy - (153 * mp + 2) / 5 + 1;
        let month = if mp < 10 { mp + 3 } else { mp - 9 };
        let year = yoe + era * 400 + i64::from(month <= 2);
        Utc {
            year: year as u32,
            month: month as u8,
            day: day as u8,
            hour: (rem / 3600) as u8,
            minute: (rem / 60 % 60) as u8,
            second: (rem % 60) as u8,
            nanos: self.subsec_nanos(),
        }
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

    #[test]
    fn calendar() {
        let utc = |s| Timestamp::from_secs_nanos(s, 7).utc();
        let u = utc(1_700_000_000);
        assert_eq!(
            (u.year, u.month, u.day, u.hour, u.minute, u.second, u.nanos),
            (2023, 11, 14, 22, 13, 20, 7)
        );
        let leap = utc(951_782_400);
        assert_eq!((leap.year, leap.month, leap.day), (2000, 2, 29));
        let epoch = utc(0);
        assert_eq!(
            (epoch.year, epoch.month, epoch.day, epoch.hour),
            (1970, 1, 1, 0)
        );
        let last = utc(4_102_444_799);
        assert_eq!(
            (
                last.year,
                last.month,
                last.day,
                last.hour,
                last.minute,
                last.second
            ),
            (2099, 12, 31, 23, 59, 59)
        );
    }
}
