//! Port specs: `any`, `80`, ranges `1024:` / `:1023` / `80:82`, `!spec`,
//! lists and `$VARIABLES` (the grammar is in [`super::spec`]).

use super::spec::{self, Kind};
use crate::nids::rule::PortSpec;
use crate::nids::vars::{Expanded, Resolver, VarKind};
use std::collections::HashMap;

/// The port kind of spec.
pub(crate) struct Ports;

impl Kind for Ports {
    type Spec = PortSpec;
    const NOUN: &'static str = "port";
    const VAR_KIND: VarKind = VarKind::Port;

    fn any() -> PortSpec {
        PortSpec::Any
    }

    fn not(inner: PortSpec) -> PortSpec {
        PortSpec::Not(Box::new(inner))
    }

    fn list(items: Vec<PortSpec>) -> PortSpec {
        PortSpec::List(items)
    }

    fn value(text: &str) -> Result<PortSpec, String> {
        parse_range(text)
    }

    fn cache<'r>(r: &'r mut Resolver<'_>) -> &'r mut HashMap<String, Expanded<PortSpec>> {
        &mut r.ports
    }
}

/// Parses a port spec, expanding variables through `env`.
pub(crate) fn parse_ports(text: &str, env: &mut Resolver<'_>) -> Result<PortSpec, String> {
    spec::parse::<Ports>(text, env, 0).map(|e| e.spec)
}

/// `80`, `80:82`, `1024:`, `:1023`.
fn parse_range(text: &str) -> Result<PortSpec, String> {
    let port = |s: &str| -> Result<u16, String> {
        if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
            return Err(format!("invalid port `{text}`"));
        }
        s.parse::<u16>()
            .map_err(|_| format!("invalid port `{text}`: {s} is more than 65535"))
    };
    match text.split_once(':') {
        None => {
            let p = port(text)?;
            Ok(PortSpec::Range(p, p))
        }
        Some(("", "")) => Err(format!("invalid port `{text}`")),
        Some((lo, hi)) => {
            let lo = if lo.is_empty() { 0 } else { port(lo)? };
            let hi = if hi.is_empty() { u16::MAX } else { port(hi)? };
            if lo > hi {
                return Err(format!(
                    "invalid port range `{text}`: {lo} is more than {hi}"
                ));
            }
            Ok(PortSpec::Range(lo, hi))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nids::vars::Vars;

    fn p(text: &str) -> Result<PortSpec, String> {
        let vars = Vars::default();
        parse_ports(text, &mut Resolver::new(&vars))
    }

    fn not(s: PortSpec) -> PortSpec {
        PortSpec::Not(Box::new(s))
    }

    #[test]
    fn values_lists_and_variables() {
        use PortSpec::*;
        let table: &[(&str, PortSpec)] = &[
            ("any", Any),
            ("80", Range(80, 80)),
            ("0", Range(0, 0)),
            ("1024:", Range(1024, 65535)),
            (":1023", Range(0, 1023)),
            ("80:82", Range(80, 82)),
            ("0:65535", Range(0, 65535)),
            ("!80", not(Range(80, 80))),
            ("[80:82,!81]", List(vec![Range(80, 82), not(Range(81, 81))])),
            (
                "[1,[2,[3]]]",
                List(vec![
                    Range(1, 1),
                    List(vec![Range(2, 2), List(vec![Range(3, 3)])]),
                ]),
            ),
            ("[80 , 81]", List(vec![Range(80, 80), Range(81, 81)])),
            ("$HTTP_PORTS", Range(80, 80)),
            ("$SHELLCODE_PORTS", not(Range(80, 80))),
            (
                "$FILE_DATA_PORTS",
                List(vec![Range(80, 80), Range(110, 110), Range(143, 143)]),
            ),
            (
                "[$HTTP_PORTS,8080]",
                List(vec![Range(80, 80), Range(8080, 8080)]),
            ),
        ];
        for (text, want) in table {
            assert_eq!(&p(text).unwrap(), want, "{text}");
        }
    }

    #[test]
    fn errors() {
        let table: &[(&str, &str)] = &[
            ("70000", "more than 65535"),
            ("82:80", "82 is more than 80"),
            ("http", "invalid port `http`"),
            ("-1", "invalid port"),
            ("1:2:3", "invalid port"),
            (":", "invalid port"),
            ("[]", "empty port list"),
            ("$HOME_NET", "is an address variable"),
            ("$NOPE", "undefined variable"),
        ];
        for (text, want) in table {
            let e = p(text).unwrap_err();
            assert!(e.contains(want), "{text}: {e}");
        }
    }

    #[test]
    fn display_round_trips() {
        for text in ["any", "80", "1024:65535", "!0:1023", "[80:82,!81,[443]]"] {
            let spec = p(text).unwrap();
            assert_eq!(spec.to_string(), text);
        }
    }
}
