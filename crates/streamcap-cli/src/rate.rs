//! Replay rates on the command line: `--rate 2Gbit/s`, `--rate 500kpps`,
//! `--speed 4x`.
//!
//! A rate is a number and a unit, with decimal prefixes: bits per second
//! (`bit/s`, `kbit/s`, `Mbit/s`, `Gbit/s`, or `bps`, `kbps`, `Mbps`,
//! `Gbps`: bits, not bytes) or packets per second (`pps`, `kpps`, `Mpps`).
//! Units are case-insensitive. A speed is a factor, with or without a
//! trailing `x`. Every value must be a finite number above 0. Depends only
//! on the library, so the fuzz targets include it as it is.

use streamcap::source::pace::Pace;

/// The units of `--rate`: (name, multiplier, counts packets).
const UNITS: [(&str, f64, bool); 11] = [
    ("kbit/s", 1e3, false),
    ("mbit/s", 1e6, false),
    ("gbit/s", 1e9, false),
    ("bit/s", 1.0, false),
    ("kbps", 1e3, false),
    ("mbps", 1e6, false),
    ("gbps", 1e9, false),
    ("bps", 1.0, false),
    ("kpps", 1e3, true),
    ("mpps", 1e6, true),
    ("pps", 1.0, true),
];

/// The number in `text`, if it is a finite number above 0; the error
/// names `what` and says what was wrong.
fn positive(text: &str, what: &str) -> Result<f64, String> {
    let v: f64 = text
        .trim()
        .parse()
        .map_err(|_| format!("{what}: {:?} is not a number", text.trim()))?;
    if v.is_nan() {
        Err(format!("{what}: NaN is not a number"))
    } else if v.is_infinite() {
        Err(format!("{what}: must be finite"))
    } else if v <= 0.0 {
        Err(format!("{what}: must be above 0"))
    } else {
        Ok(v)
    }
}

/// Parses `--rate`: a bit rate or a packet rate.
pub fn parse_rate(s: &str) -> Result<Pace, String> {
    let t = s.trim();
    let lower = t.to_ascii_lowercase();
    // Longer names first, so that `kbit/s` is not read as `k` + `bit/s`.
    let hint = "use bit/s, kbit/s, Mbit/s, Gbit/s (or bps, kbps, Mbps, Gbps) or pps, kpps, Mpps, e.g. 2Gbit/s or 500kpps";
    let unknown = || format!("rate {t:?}: unknown unit: {hint}");
    let Some(&(unit, mult, packets)) = UNITS.iter().find(|(u, _, _)| lower.ends_with(u)) else {
        let no_unit = t.trim_end_matches(|c: char| c.is_ascii_alphabetic() || c == '/') == t;
        return Err(if no_unit {
            format!("rate {t:?} has no unit: {hint}")
        } else {
            unknown()
        });
    };
    let number = t[..t.len() - unit.len()].trim();
    // A letter before a known unit is an unknown prefix (`Tbit/s`), unless
    // the number is NaN or infinite (refused below with its own message).
    let named = matches!(
        number.to_ascii_lowercase().trim_start_matches(['+', '-']),
        "nan" | "inf" | "infinity"
    );
    if number.ends_with(|c: char| c.is_ascii_alphabetic()) && !named {
        return Err(unknown());
    }
    let v = positive(number, &format!("rate {t:?}"))? * mult;
    if !v.is_finite() {
        return Err(format!("rate {t:?}: too large"));
    }
    Ok(if packets {
        Pace::Pps { packets_per_sec: v }
    } else {
        Pace::Rate { bits_per_sec: v }
    })
}

/// Parses `--speed`: a factor such as `4x`, `0.5x` or `4`.
pub fn parse_speed(s: &str) -> Result<Pace, String> {
    let t = s.trim();
    let number = t
        .strip_suffix('x')
        .or_else(|| t.strip_suffix('X'))
        .unwrap_or(t);
    positive(number, &format!("speed {t:?}")).map(Pace::Speed)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bits(v: f64) -> Result<Pace, String> {
        Ok(Pace::Rate { bits_per_sec: v })
    }

    fn pps(v: f64) -> Result<Pace, String> {
        Ok(Pace::Pps { packets_per_sec: v })
    }

    #[test]
    fn rates_with_units() {
        assert_eq!(parse_rate("2Gbit/s"), bits(2e9));
        assert_eq!(parse_rate("0.85Gbit/s"), bits(0.85e9));
        assert_eq!(parse_rate("500Mbit/s"), bits(500e6));
        assert_eq!(parse_rate("500 Mbit/s"), bits(500e6));
        assert_eq!(parse_rate("64kbit/s"), bits(64e3));
        assert_eq!(parse_rate("9600bit/s"), bits(9600.0));
        assert_eq!(parse_rate("10Gbps"), bits(10e9));
        assert_eq!(parse_rate("100mbps"), bits(100e6));
        assert_eq!(parse_rate("56kbps"), bits(56e3));
        assert_eq!(parse_rate("300bps"), bits(300.0));
        assert_eq!(parse_rate("500kpps"), pps(500e3));
        assert_eq!(parse_rate("1Mpps"), pps(1e6));
        assert_eq!(parse_rate("1.5MPPS"), pps(1.5e6));
        assert_eq!(parse_rate("0.5pps"), pps(0.5));
    }

    #[test]
    fn bad_rates_say_what_is_wrong() {
        for (bad, says) in [
            ("0Gbit/s", "must be above 0"),
            ("-1Gbit/s", "must be above 0"),
            ("-0pps", "must be above 0"),
            ("NaNGbit/s", "NaN is not a number"),
            ("infbit/s", "must be finite"),
            ("1e308Gbit/s", "too large"),
            ("2GB/s", "unknown unit"),
            ("2Tbit/s", "unknown unit"),
            ("2 MB/s", "unknown unit"),
            ("1.2.3Mbps", "\"1.2.3\" is not a number"),
            ("5 furlongs", "unknown unit"),
            ("2", "has no unit"),
            ("", "has no unit"),
            ("Gbit/s", "\"\" is not a number"),
            ("fast", "unknown unit"),
        ] {
            let e = parse_rate(bad).expect_err(bad);
            assert!(e.contains(says), "{bad:?}: {e}");
        }
    }

    #[test]
    fn speeds() {
        assert_eq!(parse_speed("4x"), Ok(Pace::Speed(4.0)));
        assert_eq!(parse_speed("0.5x"), Ok(Pace::Speed(0.5)));
        assert_eq!(parse_speed("4"), Ok(Pace::Speed(4.0)));
        assert_eq!(parse_speed("2X"), Ok(Pace::Speed(2.0)));
        for (bad, says) in [
            ("0x", "must be above 0"),
            ("-2", "must be above 0"),
            ("NaN", "NaN is not a number"),
            ("inf", "must be finite"),
            ("fast", "not a number"),
            ("x", "not a number"),
        ] {
            let e = parse_speed(bad).expect_err(bad);
            assert!(e.contains(says), "{bad:?}: {e}");
        }
    }
}
