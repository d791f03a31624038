//! Option values with a syntax of their own: CPU lists (`--pin`), cutoff
//! and priority classes (`--cutoff-class`, `--priority-class`) and
//! fractions (`--base-threshold`). Depends only on [`super::size`], so the fuzz
//! targets can include it as it is.

/// Parses a CPU list: `0,1`, `0-3`, `0-1,4`.
pub fn parse_cpus(s: &str) -> Result<CpuList, String> {
    let mut out = Vec::new();
    for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let num = |x: &str| {
            x.trim()
                .parse::<usize>()
                .map_err(|_| format!("{x:?} is not a CPU number (expected e.g. 0,1 or 0-3)"))
        };
        match part.split_once('-') {
            Some((a, b)) => {
                let (a, b) = (num(a)?, num(b)?);
                if a > b || b - a > 4096 {
                    return Err(format!("{part:?}: not a CPU range"));
                }
                out.extend(a..=b);
            }
            None => out.push(num(part)?),
        }
    }
    if out.is_empty() {
        return Err("empty CPU list".into());
    }
    Ok(CpuList(out))
}

/// CPUs to pin workers to (`--pin`).
#[derive(Clone, Debug)]
pub struct CpuList(pub Vec<usize>);

/// A `--cutoff-class FILTER=BYTES` option, parsed but not compiled yet.
#[derive(Clone, Debug)]
pub struct ClassArg {
    /// The filter expression.
    pub expr: String,
    /// The cutoff (`None` = unlimited).
    pub cutoff: Option<u64>,
}

/// Parses `FILTER=BYTES`: the last `=` separates them (a filter may contain
/// `=` itself, as in `tcp[13] = 2`; a size never does).
pub fn parse_class(s: &str) -> Result<ClassArg, String> {
    let (expr, size) = s
        .rsplit_once('=')
        .ok_or_else(|| format!("{s:?}: expected FILTER=BYTES, e.g. 'port 80=1MiB'"))?;
    if expr.trim().is_empty() {
        return Err(format!("{s:?}: the filter is empty"));
    }
    let cutoff = super::size::parse_limit(size.trim())?;
    Ok(ClassArg {
        expr: expr.trim().to_string(),
        cutoff,
    })
}

/// A `--priority-class FILTER=N` option, parsed but not compiled yet.
#[derive(Clone, Debug)]
pub struct PriorityClassArg {
    /// The filter expression.
    pub expr: String,
    /// The priority, 0 to 255.
    pub priority: u8,
}

/// Parses `FILTER=N` (the last `=` separates them, as in [`parse_class`]).
pub fn parse_priority_class(s: &str) -> Result<PriorityClassArg, String> {
    let (expr, n) = s
        .rsplit_once('=')
        .ok_or_else(|| format!("{s:?}: expected FILTER=PRIORITY, e.g. 'tcp port 22=1'"))?;
    if expr.trim().is_empty() {
        return Err(format!("{s:?}: the filter is empty"));
    }
    let priority = n
        .trim()
        .parse::<u8>()
        .map_err(|_| format!("{s:?}: {:?} is not a priority (0 to 255)", n.trim()))?;
    Ok(PriorityClassArg {
        expr: expr.trim().to_string(),
        priority,
    })
}

/// Parses a fraction of a whole: `0.5` or `50%`, from 0 to 1 (100 %).
pub fn parse_fraction(s: &str) -> Result<f64, String> {
    let t = s.trim();
    let (num, scale) = match t.strip_suffix('%') {
        Some(p) => (p.trim(), 100.0),
        None => (t, 1.0),
    };
    let v = num
        .parse::<f64>()
        .map_err(|_| format!("{s:?} is not a fraction (expected e.g. 0.5 or 50%)"))?
        / scale;
    if !(0.0..=1.0).contains(&v) {
        return Err(format!("{s:?} is outside 0 to 1 (0 % to 100 %)"));
    }
    Ok(v)
}

/// The longest `--active-timeout`: a million seconds (11.6 days).
pub const MAX_ACTIVE_TIMEOUT_SECS: f64 = 1e6;

/// Parses a timeout in seconds of capture time: `60`, `60s`, `1.5s`,
/// `500ms`, `2m`, `1h`; from 1 ms to [`MAX_ACTIVE_TIMEOUT_SECS`].
/// Nanoseconds.
pub fn parse_timeout(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let (num, scale) = if let Some(n) = t.strip_suffix("ms") {
        (n, 1e-3)
    } else if let Some(n) = t.strip_suffix('s') {
        (n, 1.0)
    } else if let Some(n) = t.strip_suffix('m') {
        (n, 60.0)
    } else if let Some(n) = t.strip_suffix('h') {
        (n, 3600.0)
    } else {
        (t, 1.0)
    };
    let v = num
        .trim()
        .parse::<f64>()
        .map_err(|_| format!("{s:?} is not a duration (expected e.g. 60s, 1.5s, 500ms, 2m)"))?
        * scale;
    if !(1e-3..=MAX_ACTIVE_TIMEOUT_SECS).contains(&v) {
        return Err(format!(
            "{s:?}: expected from 1ms to {MAX_ACTIVE_TIMEOUT_SECS} seconds"
        ));
    }
    Ok((v * 1e9).round() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timeouts() {
        assert_eq!(parse_timeout("60s"), Ok(60_000_000_000));
        assert_eq!(parse_timeout("10"), Ok(10_000_000_000));
        assert_eq!(parse_timeout("1.5s"), Ok(1_500_000_000));
        assert_eq!(parse_timeout("500ms"), Ok(500_000_000));
        assert_eq!(parse_timeout("2m"), Ok(120_000_000_000));
        assert_eq!(parse_timeout("1h"), Ok(3_600_000_000_000));
        for bad in ["", "0", "0s", "-1s", "abc", "NaN", "inf", "1e9s", "0.1ms"] {
            assert!(parse_timeout(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn cpu_lists() {
        assert_eq!(parse_cpus("0,1").map(|c| c.0), Ok(vec![0, 1]));
        assert_eq!(parse_cpus("0-2, 5").map(|c| c.0), Ok(vec![0, 1, 2, 5]));
        assert!(parse_cpus("").is_err());
        assert!(parse_cpus("3-1").is_err());
        assert!(parse_cpus("0-99999").is_err());
        assert!(parse_cpus("x").is_err());
    }

    #[test]
    fn priority_classes_and_fractions() {
        let c = parse_priority_class("tcp port 22 = 2").map(|c| (c.expr, c.priority));
        assert_eq!(c, Ok(("tcp port 22".to_string(), 2)));
        let c = parse_priority_class("tcp[13] = 2=7").map(|c| (c.expr, c.priority));
        assert_eq!(c, Ok(("tcp[13] = 2".to_string(), 7)));
        assert!(parse_priority_class("port 22").is_err());
        assert!(parse_priority_class("=1").is_err());
        assert!(parse_priority_class("port 22=256").is_err());
        assert!(parse_priority_class("port 22=-1").is_err());
        assert_eq!(parse_fraction("0.5"), Ok(0.5));
        assert_eq!(parse_fraction("50%"), Ok(0.5));
        assert_eq!(parse_fraction(" 100 % "), Ok(1.0));
        assert_eq!(parse_fraction("0"), Ok(0.0));
        for bad in ["1.5", "-0.1", "150%", "NaN", "x", "", "%"] {
            assert!(parse_fraction(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn cutoff_classes() {
        let c = parse_class("tcp[13] = 2=1MiB").map(|c| (c.expr, c.cutoff));
        assert_eq!(c, Ok(("tcp[13] = 2".to_string(), Some(1 << 20))));
        let c = parse_class(" udp = unlimited").map(|c| (c.expr, c.cutoff));
        assert_eq!(c, Ok(("udp".to_string(), None)));
        assert!(parse_class("port 80").is_err());
        assert!(parse_class("=5").is_err());
        assert!(parse_class("udp=5XB").is_err());
    }
}
