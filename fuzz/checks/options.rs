//! The parsers of option values a user types: sizes and limits, CPU lists,
//! cutoff and priority classes, fractions (the base threshold), timeouts
//! (`--active-timeout`), replay
//! rates and speeds, fan-out modes, reassembly modes and overlap policies.
//! Arbitrary text: no panic, and what parses is consistent.
use super::{args, rate, size};
use streamcap::dispatch::fanout::Fanout;
use streamcap::source::KernelFanout;
use streamcap::{OverlapPolicy, ReassemblyMode};

/// Runs the checks on one input (panics on a violation).
pub fn run(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let s = text.as_ref();
    if let Ok(n) = size::parse_size(s) {
        // A size is also a limit, with the same value.
        assert_eq!(size::parse_limit(s), Ok(Some(n)), "{s:?}");
    }
    let _ = size::parse_limit(s);
    if let Ok(cpus) = args::parse_cpus(s) {
        assert!(!cpus.0.is_empty());
    }
    if let Ok(class) = args::parse_class(s) {
        assert!(!class.expr.is_empty());
        assert!(!class.expr.starts_with(char::is_whitespace));
        assert!(s.contains(&class.expr));
    }
    if let Ok(class) = args::parse_priority_class(s) {
        assert!(!class.expr.is_empty());
        assert!(s.contains(&class.expr));
    }
    if let Ok(f) = args::parse_fraction(s) {
        assert!((0.0..=1.0).contains(&f), "{s:?}: {f}");
    }
    if let Ok(ns) = args::parse_timeout(s) {
        // From 1 ms to 10^6 s (`--active-timeout`).
        assert!(
            (1_000_000..=1_000_000_000_000_000).contains(&ns),
            "{s:?}: {ns}"
        );
    }
    // A rate or speed that parses is one the library accepts.
    for pace in [rate::parse_rate(s), rate::parse_speed(s)]
        .into_iter()
        .flatten()
    {
        assert_eq!(pace.check(), Ok(pace), "{s:?}");
    }
    if let Ok(f) = s.parse::<Fanout>() {
        assert_eq!(f.name(), s);
    }
    if let Some(m) = KernelFanout::parse(s) {
        assert!(m.name().eq_ignore_ascii_case(s));
    }
    if let Ok(m) = s.parse::<ReassemblyMode>() {
        let _ = m;
    }
    if let Ok(p) = s.parse::<OverlapPolicy>() {
        assert!(OverlapPolicy::ALL.contains(&p));
    }
}
