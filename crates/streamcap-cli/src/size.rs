//! Byte sizes on the command line: `512`, `10k`, `10KiB`, `1MB`, `1M`, `1.5G`.
//!
//! GNU coreutils convention: a bare unit letter or an `iB` suffix is binary
//! (`1K` = `1KiB` = 1024), a `B` suffix after the letter is decimal
//! (`1KB` = 1000). Letters are case-insensitive; `B` alone means bytes.

/// Parses a byte size.
pub fn parse_size(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let unit = unit.trim();
    if num.is_empty() {
        return Err(format!(
            "invalid size {s:?}: expected a number such as 512, 10KiB, 1MB or 1M"
        ));
    }
    let mult: u64 = match unit.to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kib" | "ki" => 1 << 10,
        "kb" => 1_000,
        "m" | "mib" | "mi" => 1 << 20,
        "mb" => 1_000_000,
        "g" | "gib" | "gi" => 1 << 30,
        "gb" => 1_000_000_000,
        "t" | "tib" | "ti" => 1 << 40,
        "tb" => 1_000_000_000_000,
        _ => {
            return Err(format!(
                "invalid size {s:?}: unknown unit {unit:?} (use B, K/KiB, KB, M/MiB, MB, G/GiB, GB, T/TiB, TB)"
            ))
        }
    };
    let bad = || format!("invalid size {s:?}: not a number");
    let too_big = || format!("invalid size {s:?}: too large");
    if let Some((int, frac)) = num.split_once('.') {
        if int.is_empty() && frac.is_empty() || frac.contains('.') {
            return Err(bad());
        }
        let i: u64 = if int.is_empty() {
            0
        } else {
            int.parse().map_err(|_| bad())?
        };
        let whole = i.checked_mul(mult).ok_or_else(too_big)?;
        // Fraction, rounded down to whole bytes, computed exactly on at most 9 digits.
        let digits = &frac[..frac.len().min(9)];
        let f: u64 = if digits.is_empty() {
            0
        } else {
            digits.parse().map_err(|_| bad())?
        };
        let scale = 10u64.pow(digits.len() as u32);
        let part = (u128::from(f) * u128::from(mult) / u128::from(scale)) as u64;
        whole.checked_add(part).ok_or_else(too_big)
    } else {
        let n: u64 = num.parse().map_err(|_| too_big())?;
        n.checked_mul(mult).ok_or_else(too_big)
    }
}

/// Parses a size that may also be `unlimited` / `none` (→ `None`).
pub fn parse_limit(s: &str) -> Result<Option<u64>, String> {
    match s.trim().to_ascii_lowercase().as_str() {
        "unlimited" | "none" | "inf" | "max" => Ok(None),
        _ => parse_size(s).map(Some),
    }
}

/// `n` bytes in binary units, as the size options take them: `512 MiB`,
/// `1.5 GiB`, `100 B` (at most one decimal, dropped when it is 0).
pub fn binary(n: u64) -> String {
    const UNITS: [&str; 6] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
    let mut unit = 0;
    let mut scaled = n as f64;
    while scaled >= 1024.0 && unit + 1 < UNITS.len() {
        scaled /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        return format!("{n} B");
    }
    let text = format!("{scaled:.1}");
    let text = text.strip_suffix(".0").unwrap_or(&text);
    format!("{text} {}", UNITS[unit])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn binary_units() {
        assert_eq!(binary(0), "0 B");
        assert_eq!(binary(1023), "1023 B");
        assert_eq!(binary(1024), "1 KiB");
        assert_eq!(binary(512 << 20), "512 MiB");
        assert_eq!(binary(32 << 20), "32 MiB");
        assert_eq!(binary(3 << 29), "1.5 GiB");
        assert_eq!(binary(100 << 30), "100 GiB");
        assert_eq!(binary(u64::MAX), "16384 PiB");
    }

    #[test]
    fn plain_and_units() {
        assert_eq!(parse_size("512"), Ok(512));
        assert_eq!(parse_size("0"), Ok(0));
        assert_eq!(parse_size("512B"), Ok(512));
        assert_eq!(parse_size("10KiB"), Ok(10 * 1024));
        assert_eq!(parse_size("10k"), Ok(10 * 1024));
        assert_eq!(parse_size("10K"), Ok(10 * 1024));
        assert_eq!(parse_size("10KB"), Ok(10_000));
        assert_eq!(parse_size("1MB"), Ok(1_000_000));
        assert_eq!(parse_size("1M"), Ok(1 << 20));
        assert_eq!(parse_size("1mib"), Ok(1 << 20));
        assert_eq!(parse_size("2G"), Ok(2 << 30));
        assert_eq!(parse_size("2GB"), Ok(2_000_000_000));
        assert_eq!(parse_size("1T"), Ok(1 << 40));
        assert_eq!(parse_size(" 16 KiB "), Ok(16 << 10));
    }

    #[test]
    fn fractions() {
        assert_eq!(parse_size("1.5K"), Ok(1536));
        assert_eq!(parse_size("0.5M"), Ok(512 << 10));
        assert_eq!(parse_size(".5KB"), Ok(500));
        assert_eq!(parse_size("1.0001"), Ok(1));
    }

    #[test]
    fn errors() {
        for bad in [
            "",
            "K",
            "abc",
            "10 XB",
            "1.2.3",
            ".",
            "-5",
            "99999999999999999999",
            "20000000T",
        ] {
            assert!(parse_size(bad).is_err(), "{bad:?} should fail");
        }
        assert!(parse_size("10XB").unwrap_err().contains("unknown unit"));
    }

    #[test]
    fn limits() {
        assert_eq!(parse_limit("unlimited"), Ok(None));
        assert_eq!(parse_limit("none"), Ok(None));
        assert_eq!(parse_limit("4k"), Ok(Some(4096)));
    }
}
