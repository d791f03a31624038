//! Whether an address or port spec holds anything: Suricata rejects a rule
//! whose address or port set is empty (`!any`, `[1.2.3.4,!1.2.3.0/24]`,
//! `[80,!80]`), and so does this parser.
//!
//! A spec is evaluated into sorted disjoint intervals (IPv4 and IPv6 apart),
//! following the meaning [`AddrSpec::contains`] gives it.

use crate::nids::rule::{AddrSpec, PortSpec};
use std::net::IpAddr;

/// Sorted, disjoint, non-adjacent inclusive intervals.
type Set = Vec<(u128, u128)>;

/// Whether no address is in `spec`.
pub(crate) fn addr_is_empty(spec: &AddrSpec) -> bool {
    let (v4, v6) = addr_set(spec);
    v4.is_empty() && v6.is_empty()
}

/// Whether no port is in `spec`.
pub(crate) fn ports_is_empty(spec: &PortSpec) -> bool {
    port_set(spec).is_empty()
}

const V4_MAX: u128 = u32::MAX as u128;
const V6_MAX: u128 = u128::MAX;
const PORT_MAX: u128 = u16::MAX as u128;

/// The IPv4 and IPv6 intervals of `spec`.
fn addr_set(spec: &AddrSpec) -> (Set, Set) {
    match spec {
        AddrSpec::Any => (vec![(0, V4_MAX)], vec![(0, V6_MAX)]),
        AddrSpec::Net(IpAddr::V4(a), len) => {
            let host = V4_MAX.checked_shr(u32::from(*len)).unwrap_or(0);
            let lo = u128::from(u32::from(*a)) & !host & V4_MAX;
            (vec![(lo, lo | host)], vec![])
        }
        AddrSpec::Net(IpAddr::V6(a), len) => {
            let host = V6_MAX.checked_shr(u32::from(*len)).unwrap_or(0);
            let lo = u128::from(*a) & !host;
            (vec![], vec![(lo, lo | host)])
        }
        AddrSpec::Not(inner) => {
            let (v4, v6) = addr_set(inner);
            (complement(&v4, V4_MAX), complement(&v6, V6_MAX))
        }
        AddrSpec::List(items) => {
            let (mut pos4, mut pos6, mut neg4, mut neg6) = (vec![], vec![], vec![], vec![]);
            let mut any_positive = false;
            for item in items {
                match item {
                    AddrSpec::Not(inner) => {
                        let (v4, v6) = addr_set(inner);
                        neg4.extend(v4);
                        neg6.extend(v6);
                    }
                    _ => {
                        any_positive = true;
                        let (v4, v6) = addr_set(item);
                        pos4.extend(v4);
                        pos6.extend(v6);
                    }
                }
            }
            if !any_positive {
                pos4 = vec![(0, V4_MAX)];
                pos6 = vec![(0, V6_MAX)];
            }
            (
                minus(normalize(pos4), normalize(neg4), V4_MAX),
                minus(normalize(pos6), normalize(neg6), V6_MAX),
            )
        }
    }
}

/// The intervals of `spec`.
fn port_set(spec: &PortSpec) -> Set {
    match spec {
        PortSpec::Any => vec![(0, PORT_MAX)],
        PortSpec::Range(lo, hi) if lo <= hi => vec![(u128::from(*lo), u128::from(*hi))],
        PortSpec::Range(..) => vec![],
        PortSpec::Not(inner) => complement(&port_set(inner), PORT_MAX),
        PortSpec::List(items) => {
            let (mut pos, mut neg) = (vec![], vec![]);
            let mut any_positive = false;
            for item in items {
                match item {
                    PortSpec::Not(inner) => neg.extend(port_set(inner)),
                    _ => {
                        any_positive = true;
                        pos.extend(port_set(item));
                    }
                }
            }
            if !any_positive {
                pos = vec![(0, PORT_MAX)];
            }
            minus(normalize(pos), normalize(neg), PORT_MAX)
        }
    }
}

/// Sorts and merges overlapping or adjacent intervals.
fn normalize(mut v: Set) -> Set {
    v.sort_unstable();
    let mut out: Set = Vec::with_capacity(v.len());
    for (lo, hi) in v {
        match out.last_mut() {
            Some(last) if lo <= last.1.saturating_add(1) => last.1 = last.1.max(hi),
            _ => out.push((lo, hi)),
        }
    }
    out
}

/// Everything in `0..=max` that `set` (normalized) does not hold.
fn complement(set: &Set, max: u128) -> Set {
    let mut out = Vec::with_capacity(set.len() + 1);
    let mut next = Some(0u128);
    for &(lo, hi) in set {
        if let Some(n) = next {
            if lo > n {
                out.push((n, lo - 1));
            }
        }
        next = hi.checked_add(1).filter(|n| *n <= max);
    }
    if let Some(n) = next {
        out.push((n, max));
    }
    out
}

/// `a` less `b` (both normalized).
fn minus(a: Set, b: Set, max: u128) -> Set {
    let keep = complement(&b, max);
    let mut out = Vec::new();
    let (mut i, mut j) = (0, 0);
    while i < a.len() && j < keep.len() {
        let lo = a[i].0.max(keep[j].0);
        let hi = a[i].1.min(keep[j].1);
        if lo <= hi {
            out.push((lo, hi));
        }
        if a[i].1 < keep[j].1 {
            i += 1;
        } else {
            j += 1;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn net(s: &str, len: u8) -> AddrSpec {
        AddrSpec::Net(s.parse().unwrap(), len)
    }

    fn not<T>(s: T) -> Box<T> {
        Box::new(s)
    }

    #[test]
    fn empty_address_sets() {
        use AddrSpec::*;
        assert!(!addr_is_empty(&Any));
        assert!(addr_is_empty(&Not(not(Any))));
        assert!(!addr_is_empty(&Not(not(net("1.2.3.4", 32)))));
        assert!(addr_is_empty(&List(vec![
            net("1.2.3.4", 32),
            Not(not(net("1.2.3.4", 32)))
        ])));
        assert!(addr_is_empty(&List(vec![
            net("1.2.3.4", 32),
            Not(not(net("1.2.3.0", 24)))
        ])));
        assert!(!addr_is_empty(&List(vec![
            net("1.2.3.0", 24),
            Not(not(net("1.2.3.4", 32)))
        ])));
        assert!(!addr_is_empty(&List(vec![Not(not(net("1.2.3.4", 32)))])));
        assert!(addr_is_empty(&List(vec![
            Not(not(net("0.0.0.0", 0))),
            Not(not(net("::", 0)))
        ])));
        assert!(!addr_is_empty(&List(vec![
            net("::1", 128),
            Not(not(net("0.0.0.0", 0)))
        ])));
        assert!(addr_is_empty(&List(vec![
            net("10.0.0.0", 9),
            net("10.128.0.0", 9),
            Not(not(net("10.0.0.0", 8)))
        ])));
    }

    #[test]
    fn empty_port_sets() {
        use PortSpec::*;
        assert!(!ports_is_empty(&Any));
        assert!(ports_is_empty(&Not(not(Any))));
        assert!(ports_is_empty(&Not(not(Range(0, 65535)))));
        assert!(ports_is_empty(&List(vec![
            Range(80, 80),
            Not(not(Range(80, 80)))
        ])));
        assert!(!ports_is_empty(&List(vec![
            Range(1, 5),
            Not(not(Range(3, 4)))
        ])));
        assert!(!ports_is_empty(&List(vec![
            Not(not(Range(80, 80))),
            Not(not(Range(81, 81)))
        ])));
        assert!(ports_is_empty(&List(vec![
            Range(1, 5),
            Not(not(Range(0, 9)))
        ])));
        assert!(ports_is_empty(&List(vec![
            Not(not(Range(0, 100))),
            Not(not(Range(101, 65535)))
        ])));
    }

    #[test]
    fn interval_helpers() {
        assert_eq!(
            normalize(vec![(5, 9), (0, 3), (4, 4), (20, 30)]),
            vec![(0, 9), (20, 30)]
        );
        assert_eq!(complement(&vec![], 10), vec![(0, 10)]);
        assert_eq!(complement(&vec![(0, 10)], 10), vec![]);
        assert_eq!(complement(&vec![(2, 3), (7, 10)], 10), vec![(0, 1), (4, 6)]);
        assert_eq!(complement(&vec![(0, u128::MAX)], u128::MAX), vec![]);
        assert_eq!(
            minus(vec![(0, 10)], vec![(3, 4), (8, 20)], 100),
            vec![(0, 2), (5, 7)]
        );
    }
}
