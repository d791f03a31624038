//! Option values with a syntax of their own: CPU lists (`--pin`) and cutoff
//! classes (`--cutoff-class`). Depends only on [`super::size`], so the fuzz
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

#[cfg(test)]
mod tests {
    use super::*;

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
