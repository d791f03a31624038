//! The rule header: `action proto src sport dir dst dport`.
//!
//! Fields are separated by white space, except inside `[...]` (so
//! `[1.2.3.4, 5.6.7.8]` is one field). The action is `alert`, `drop` or
//! `pass` and the protocol `tcp`, `udp`, `icmp` or `ip` (any ASCII case);
//! Suricata's other actions and protocols are rejected by name. The
//! direction is `->` or `<>`. Address and port specs are parsed with their
//! variables expanded, and a spec that holds nothing (`!any`,
//! `[80,!80]`) is rejected, as Suricata does.

use super::address::parse_addr;
use super::ports::parse_ports;
use super::sets::{addr_is_empty, ports_is_empty};
use super::Fault;
use crate::nids::rule::{Action, Header, RuleProto};
use crate::nids::vars::Resolver;

/// Actions Suricata knows that a passive sensor does not take.
const OTHER_ACTIONS: &[&str] = &[
    "reject",
    "rejectsrc",
    "rejectdst",
    "rejectboth",
    "config",
    "sdrop",
    "log",
    "activate",
    "dynamic",
];

/// Protocols Suricata (or Snort) knows besides `tcp`, `udp`, `icmp`, `ip`:
/// application layers and packet-level variants.
const OTHER_PROTOCOLS: &[&str] = &[
    "tcp-pkt",
    "tcp-stream",
    "udp-pkt",
    "pkthdr",
    "icmpv4",
    "icmpv6",
    "ipv4",
    "ip4",
    "ipv6",
    "ip6",
    "sctp",
    "http",
    "http1",
    "http2",
    "ftp",
    "ftp-data",
    "tls",
    "ssl",
    "smb",
    "dcerpc",
    "dns",
    "smtp",
    "imap",
    "pop3",
    "ssh",
    "modbus",
    "dnp3",
    "enip",
    "cip",
    "nfs",
    "ntp",
    "tftp",
    "ike",
    "ikev2",
    "krb5",
    "dhcp",
    "snmp",
    "sip",
    "rfb",
    "mqtt",
    "pgsql",
    "telnet",
    "quic",
    "bittorrent-dht",
    "websocket",
    "ldap",
    "rdp",
    "template",
];

/// Parses a header, expanding variables through `env`.
pub(crate) fn parse(text: &str, env: &mut Resolver<'_>) -> Result<Header, Fault> {
    let fields = fields(text)?;
    let [action, proto, src, sport, dir, dst, dport] = fields.as_slice() else {
        return Err(Fault::new(format!(
            "the header `{}` has {} fields, not 7 (action proto src_addr src_port -> dst_addr dst_port)",
            text.trim(),
            fields.len()
        )));
    };
    let action = parse_action(action)?;
    let proto = parse_proto(proto)?;
    let bidirectional = match *dir {
        "->" => false,
        "<>" => true,
        other => {
            return Err(Fault::new(format!(
                "`{other}` is not a direction (-> or <>)"
            )))
        }
    };
    let address = |what: &str, text: &str, env: &mut Resolver<'_>| {
        let spec = parse_addr(text, env).map_err(|e| Fault::new(format!("{what}: {e}")))?;
        if addr_is_empty(&spec) {
            return Err(Fault::new(format!("{what} `{text}` holds no address")));
        }
        Ok(spec)
    };
    let ports = |what: &str, text: &str, env: &mut Resolver<'_>| {
        let spec = parse_ports(text, env).map_err(|e| Fault::new(format!("{what}: {e}")))?;
        if ports_is_empty(&spec) {
            return Err(Fault::new(format!("{what} `{text}` holds no port")));
        }
        Ok(spec)
    };
    Ok(Header {
        action,
        proto,
        src: address("source address", src, env)?,
        src_ports: ports("source port", sport, env)?,
        bidirectional,
        dst: address("destination address", dst, env)?,
        dst_ports: ports("destination port", dport, env)?,
    })
}

/// The white-space separated fields, a `[...]` list being one.
fn fields(text: &str) -> Result<Vec<&str>, Fault> {
    let mut fields = Vec::with_capacity(7);
    let mut start = None;
    let mut depth = 0usize;
    for (i, b) in text.bytes().enumerate() {
        match b {
            b'[' => depth += 1,
            b']' => depth = depth.saturating_sub(1),
            _ => {}
        }
        if b.is_ascii_whitespace() && depth == 0 {
            if let Some(s) = start.take() {
                fields.push(&text[s..i]);
            }
        } else if start.is_none() {
            start = Some(i);
        }
    }
    if let Some(s) = start {
        fields.push(&text[s..]);
    }
    if depth > 0 {
        return Err(Fault::new(format!(
            "the header `{}` has a `[` without its `]`",
            text.trim()
        )));
    }
    Ok(fields)
}

fn parse_action(word: &str) -> Result<Action, Fault> {
    let lower = word.to_ascii_lowercase();
    match lower.as_str() {
        "alert" => Ok(Action::Alert),
        "drop" => Ok(Action::Drop),
        "pass" => Ok(Action::Pass),
        other if OTHER_ACTIONS.contains(&other) => Err(Fault::keyword(
            other,
            format!("action `{word}` is not supported (alert, drop and pass are)"),
        )),
        _ => Err(Fault::new(format!(
            "unknown action `{word}` (alert, drop and pass are supported)"
        ))),
    }
}

fn parse_proto(word: &str) -> Result<RuleProto, Fault> {
    let lower = word.to_ascii_lowercase();
    match lower.as_str() {
        "tcp" => Ok(RuleProto::Tcp),
        "udp" => Ok(RuleProto::Udp),
        "icmp" => Ok(RuleProto::Icmp),
        "ip" => Ok(RuleProto::Ip),
        other if OTHER_PROTOCOLS.contains(&other) => Err(Fault::keyword(
            other,
            format!("protocol `{word}` is not supported (tcp, udp, icmp and ip are)"),
        )),
        _ => Err(Fault::new(format!(
            "unknown protocol `{word}` (tcp, udp, icmp and ip are supported)"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nids::rule::{AddrSpec, PortSpec};
    use crate::nids::vars::Vars;

    fn h(text: &str) -> Result<Header, Fault> {
        let vars = Vars::default();
        parse(text, &mut Resolver::new(&vars))
    }

    #[test]
    fn headers() {
        let x = h("alert tcp any any -> any any").unwrap();
        assert_eq!(
            (x.action, x.proto, x.bidirectional),
            (Action::Alert, RuleProto::Tcp, false)
        );
        assert_eq!((x.src, x.dst), (AddrSpec::Any, AddrSpec::Any));
        let x = h("DROP UDP [1.2.3.4, 5.6.7.8] 1024: <> $HOME_NET [80, 443]").unwrap();
        assert_eq!(
            (x.action, x.proto, x.bidirectional),
            (Action::Drop, RuleProto::Udp, true)
        );
        assert_eq!(x.src.to_string(), "[1.2.3.4,5.6.7.8]");
        assert_eq!(x.src_ports, PortSpec::Range(1024, 65535));
        assert_eq!(
            x.dst.to_string(),
            "[192.168.0.0/16,10.0.0.0/8,172.16.0.0/12]"
        );
        assert_eq!(x.dst_ports.to_string(), "[80,443]");
        let x = h("  pass\ticmp $EXTERNAL_NET any  ->  ::1 any ").unwrap();
        assert_eq!(x.action, Action::Pass);
        assert_eq!(x.proto, RuleProto::Icmp);
        assert_eq!(
            h("alert ip any any -> any any").unwrap().proto,
            RuleProto::Ip
        );
        assert_eq!(
            h("alert tcp any any -> any any").unwrap().to_string(),
            "alert tcp any any -> any any"
        );
    }

    #[test]
    fn rejections() {
        let table: &[(&str, Option<&str>, &str)] = &[
            (
                "reject tcp any any -> any any",
                Some("reject"),
                "action `reject` is not supported",
            ),
            (
                "rejectsrc tcp any any -> any any",
                Some("rejectsrc"),
                "not supported",
            ),
            (
                "config tcp any any -> any any",
                Some("config"),
                "not supported",
            ),
            (
                "shout tcp any any -> any any",
                None,
                "unknown action `shout`",
            ),
            (
                "alert http any any -> any any",
                Some("http"),
                "protocol `http` is not supported",
            ),
            (
                "alert dns any any -> any any",
                Some("dns"),
                "protocol `dns`",
            ),
            (
                "alert tls any any -> any any",
                Some("tls"),
                "protocol `tls`",
            ),
            (
                "alert tcp-pkt any any -> any any",
                Some("tcp-pkt"),
                "protocol `tcp-pkt`",
            ),
            (
                "alert tcp-stream any any -> any any",
                Some("tcp-stream"),
                "protocol `tcp-stream`",
            ),
            (
                "alert pkthdr any any -> any any",
                Some("pkthdr"),
                "protocol `pkthdr`",
            ),
            (
                "alert foo any any -> any any",
                None,
                "unknown protocol `foo`",
            ),
            (
                "alert tcp any any <- any any",
                None,
                "`<-` is not a direction",
            ),
            ("alert tcp any any -> any", None, "has 6 fields"),
            ("alert tcp any any -> any any any", None, "has 8 fields"),
            ("alert tcp [1.2.3.4 any -> any any", None, "without its `]`"),
            (
                "alert tcp !any any -> any any",
                None,
                "source address `!any` holds no address",
            ),
            (
                "alert tcp [1.2.3.4,!1.2.3.0/24] any -> any any",
                None,
                "holds no address",
            ),
            (
                "alert tcp any any -> any [80,!80]",
                None,
                "destination port `[80,!80]` holds no port",
            ),
            (
                "alert tcp any !any -> any any",
                None,
                "source port `!any` holds no port",
            ),
            (
                "alert tcp any any -> 1.2.3.4/33 any",
                None,
                "destination address: invalid address",
            ),
            (
                "alert tcp any 70000 -> any any",
                None,
                "source port: invalid port",
            ),
            (
                "alert tcp $HTTP_PORTS any -> any any",
                None,
                "is a port variable",
            ),
            (
                "alert tcp any $HOME_NET -> any any",
                None,
                "is an address variable",
            ),
            (
                "alert tcp $NOPE any -> any any",
                None,
                "undefined variable `$NOPE`",
            ),
        ];
        for (text, kw, want) in table {
            let e = h(text).unwrap_err();
            assert_eq!(e.keyword.as_deref(), *kw, "{text}");
            assert!(e.message.contains(want), "{text}: {}", e.message);
        }
    }

    #[test]
    fn home_net_any_empties_external_net() {
        let mut vars = Vars::default();
        vars.set("HOME_NET", "any").unwrap();
        let e = parse(
            "alert tcp $EXTERNAL_NET any -> any any",
            &mut Resolver::new(&vars),
        )
        .unwrap_err();
        assert!(
            e.message.contains("`$EXTERNAL_NET` holds no address"),
            "{}",
            e.message
        );
    }
}
