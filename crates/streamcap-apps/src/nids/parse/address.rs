//! Address specs: `any`, hosts (`1.2.3.4`, `2001:db8::1`), networks
//! (`10.0.0.0/8`, `10.0.0.0/255.0.0.0`, `2001:db8::/32`), `!spec`, lists
//! and `$VARIABLES` (the grammar is in [`super::spec`]).
//!
//! A network is kept with its host bits cleared (`10.1.2.3/8` is
//! `10.0.0.0/8`). Ranges (`1.2.3.4-1.2.3.9`) are not supported.

use super::spec::{self, Kind};
use crate::nids::rule::AddrSpec;
use crate::nids::vars::{Expanded, Resolver, VarKind};
use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// The address kind of spec.
pub(crate) struct Addresses;

impl Kind for Addresses {
    type Spec = AddrSpec;
    const NOUN: &'static str = "address";
    const VAR_KIND: VarKind = VarKind::Address;

    fn any() -> AddrSpec {
        AddrSpec::Any
    }

    fn not(inner: AddrSpec) -> AddrSpec {
        AddrSpec::Not(Box::new(inner))
    }

    fn list(items: Vec<AddrSpec>) -> AddrSpec {
        AddrSpec::List(items)
    }

    fn value(text: &str) -> Result<AddrSpec, String> {
        parse_net(text)
    }

    fn cache<'r>(r: &'r mut Resolver<'_>) -> &'r mut HashMap<String, Expanded<AddrSpec>> {
        &mut r.addresses
    }
}

/// Parses an address spec, expanding variables through `env`.
pub(crate) fn parse_addr(text: &str, env: &mut Resolver<'_>) -> Result<AddrSpec, String> {
    spec::parse::<Addresses>(text, env, 0).map(|e| e.spec)
}

/// One host or network.
fn parse_net(text: &str) -> Result<AddrSpec, String> {
    let bad = |why: &str| format!("invalid address `{text}`: {why}");
    let (ip, len) = match text.split_once('/') {
        None => (text, None),
        Some((ip, len)) => (ip, Some(len)),
    };
    let ip: IpAddr = ip.parse().map_err(|_| {
        if ip.contains('-') {
            bad("address ranges are not supported")
        } else {
            bad("not an IPv4 or IPv6 address")
        }
    })?;
    let max: u8 = if ip.is_ipv4() { 32 } else { 128 };
    let len = match len {
        None => max,
        Some(len) if !len.is_empty() && len.bytes().all(|b| b.is_ascii_digit()) => {
            match len.parse::<u8>() {
                Ok(n) if n <= max => n,
                _ => return Err(bad(&format!("prefix length {len} is more than {max}"))),
            }
        }
        Some(mask) => match (ip, mask.parse::<Ipv4Addr>()) {
            (IpAddr::V4(_), Ok(mask)) => {
                let m = u32::from(mask);
                if m.leading_ones() + m.trailing_zeros() != 32 {
                    return Err(bad(&format!("netmask {mask} is not contiguous")));
                }
                m.leading_ones() as u8
            }
            _ => return Err(bad(&format!("`{mask}` is not a prefix length"))),
        },
    };
    Ok(AddrSpec::Net(network(ip, len), len))
}

/// `ip` with the bits after the first `len` cleared.
fn network(ip: IpAddr, len: u8) -> IpAddr {
    match ip {
        IpAddr::V4(a) => {
            let mask = u32::MAX.checked_shl(32 - u32::from(len)).unwrap_or(0);
            IpAddr::V4(Ipv4Addr::from(u32::from(a) & mask))
        }
        IpAddr::V6(a) => {
            let mask = u128::MAX.checked_shl(128 - u32::from(len)).unwrap_or(0);
            IpAddr::V6(Ipv6Addr::from(u128::from(a) & mask))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nids::vars::Vars;

    fn p(text: &str) -> Result<AddrSpec, String> {
        let vars = Vars::default();
        parse_addr(text, &mut Resolver::new(&vars))
    }

    fn net(s: &str, len: u8) -> AddrSpec {
        AddrSpec::Net(s.parse().unwrap(), len)
    }

    fn not(s: AddrSpec) -> AddrSpec {
        AddrSpec::Not(Box::new(s))
    }

    #[test]
    fn values() {
        let table: &[(&str, AddrSpec)] = &[
            ("any", AddrSpec::Any),
            ("ANY", AddrSpec::Any),
            ("1.2.3.4", net("1.2.3.4", 32)),
            ("1.2.3.4/24", net("1.2.3.0", 24)),
            ("10.0.0.0/255.0.0.0", net("10.0.0.0", 8)),
            ("0.0.0.0/0", net("0.0.0.0", 0)),
            ("2001:db8::1", net("2001:db8::1", 128)),
            ("2001:db8::ff/32", net("2001:db8::", 32)),
            ("::/0", net("::", 0)),
            ("::ffff:1.2.3.4", net("::ffff:1.2.3.4", 128)),
        ];
        for (text, want) in table {
            assert_eq!(&p(text).unwrap(), want, "{text}");
        }
    }

    #[test]
    fn lists_negations_and_nesting() {
        assert_eq!(
            p("[1.2.3.4,[5.6.7.0/24,!5.6.7.8]]").unwrap(),
            AddrSpec::List(vec![
                net("1.2.3.4", 32),
                AddrSpec::List(vec![net("5.6.7.0", 24), not(net("5.6.7.8", 32))]),
            ])
        );
        assert_eq!(
            p("[ 1.2.3.4 , ::1 ]").unwrap(),
            AddrSpec::List(vec![net("1.2.3.4", 32), net("::1", 128)])
        );
        assert_eq!(p("!!1.2.3.4").unwrap(), not(not(net("1.2.3.4", 32))));
        assert_eq!(
            p("![1.2.3.4]").unwrap(),
            not(AddrSpec::List(vec![net("1.2.3.4", 32)]))
        );
    }

    #[test]
    fn variables_expand_also_in_lists_and_negated() {
        let home = p("$HOME_NET").unwrap();
        assert_eq!(
            home,
            AddrSpec::List(vec![
                net("192.168.0.0", 16),
                net("10.0.0.0", 8),
                net("172.16.0.0", 12)
            ])
        );
        assert_eq!(p("!$HOME_NET").unwrap(), not(home.clone()));
        assert_eq!(p("$EXTERNAL_NET").unwrap(), not(home.clone()));
        assert_eq!(
            p("[$HOME_NET,!1.2.3.4]").unwrap(),
            AddrSpec::List(vec![home.clone(), not(net("1.2.3.4", 32))])
        );
        // AIM_SERVERS is $EXTERNAL_NET, itself !$HOME_NET.
        assert_eq!(p("$AIM_SERVERS").unwrap(), not(home));
    }

    #[test]
    fn errors() {
        let table: &[(&str, &str)] = &[
            ("1.2.3.4/33", "prefix length 33"),
            ("::1/129", "prefix length 129"),
            ("1.2.3.4/255.0.255.0", "not contiguous"),
            ("::1/255.0.0.0", "not a prefix length"),
            ("1.2.3.4/x", "not a prefix length"),
            ("010.1.1.1", "not an IPv4 or IPv6"),
            ("1.2.3.4-1.2.3.9", "ranges are not supported"),
            ("host", "not an IPv4 or IPv6"),
            ("[]", "empty address list"),
            ("[1.2.3.4", "no closing `]`"),
            ("[1.2.3.4,]", "expected an address, found `]`"),
            ("[1.2.3.4 5.6.7.8]", "expected `,` or `]`"),
            ("1.2.3.4]", "unexpected `]`"),
            ("!", "expected an address"),
            ("", "expected an address"),
            ("$", "without a variable name"),
            ("$NOPE", "undefined variable `$NOPE`"),
            ("$HTTP_PORTS", "is a port variable"),
        ];
        for (text, want) in table {
            let e = p(text).unwrap_err();
            assert!(e.contains(want), "{text}: {e}");
        }
    }

    #[test]
    fn depth_is_bounded() {
        let deep = format!("{}1.2.3.4{}", "[".repeat(100), "]".repeat(100));
        assert!(p(&deep).unwrap_err().contains("nested more than"));
        let nots = format!("{}1.2.3.4", "!".repeat(100_000));
        assert!(p(&nots).unwrap_err().contains("nested more than"));
        let ok = format!("{}1.2.3.4{}", "[".repeat(20), "]".repeat(20));
        assert!(p(&ok).is_ok());
    }

    #[test]
    fn display_round_trips() {
        for text in [
            "any",
            "1.2.3.4",
            "10.0.0.0/8",
            "!2001:db8::/32",
            "[1.2.3.4,[5.6.7.0/24,!5.6.7.8],any]",
        ] {
            let spec = p(text).unwrap();
            assert_eq!(spec.to_string(), text);
            assert_eq!(p(&spec.to_string()).unwrap(), spec);
        }
    }
}
