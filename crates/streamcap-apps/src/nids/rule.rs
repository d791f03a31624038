//! The rule model: what one Suricata/Snort signature says, after parsing
//! and variable expansion, before compilation into a matcher.
//!
//! Only the subset that content signatures use is modelled (see
//! `docs/nids.md`): the header, `msg`, `content` and its modifiers, `pcre`,
//! `flow`, and the metadata keywords (`sid`, `rev`, `gid`, `classtype`,
//! `priority`, `reference`, `metadata`).

use std::net::IpAddr;
use std::sync::Arc;

/// What a rule does when it matches. streamcap is passive: `drop` alerts
/// like `alert` (with EVE action `allowed`, as Suricata in IDS mode), and
/// `pass` stops inspection of the connection.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Action {
    /// Alert.
    Alert,
    /// Drop (alerts; nothing is dropped by a passive sensor).
    Drop,
    /// Pass: no further alerts for the connection.
    Pass,
}

impl Action {
    /// The keyword.
    pub fn name(self) -> &'static str {
        match self {
            Action::Alert => "alert",
            Action::Drop => "drop",
            Action::Pass => "pass",
        }
    }
}

/// The protocol a rule applies to.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum RuleProto {
    /// TCP streams.
    Tcp,
    /// UDP datagrams.
    Udp,
    /// ICMP (v4 and v6) messages, per packet.
    Icmp,
    /// Any IP traffic: TCP streams, UDP datagrams, other packets.
    Ip,
}

impl RuleProto {
    /// The keyword.
    pub fn name(self) -> &'static str {
        match self {
            RuleProto::Tcp => "tcp",
            RuleProto::Udp => "udp",
            RuleProto::Icmp => "icmp",
            RuleProto::Ip => "ip",
        }
    }
}

/// A set of addresses as a rule header or a variable gives it.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum AddrSpec {
    /// `any`.
    Any,
    /// One network: an address and a prefix length (32 or 128 for a host).
    Net(IpAddr, u8),
    /// `!spec`: every address `spec` does not hold.
    Not(Box<AddrSpec>),
    /// `[a, b, !c]`: the union of the positive elements (every address if
    /// there is none), less the union of the negated ones.
    List(Vec<AddrSpec>),
}

/// A set of ports as a rule header or a variable gives it.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum PortSpec {
    /// `any`.
    Any,
    /// `80` (`Range(80, 80)`), `1024:` (`Range(1024, 65535)`), `:1023`, `80:82`.
    Range(u16, u16),
    /// `!spec`.
    Not(Box<PortSpec>),
    /// `[80, 443, !8080]`: as [`AddrSpec::List`].
    List(Vec<PortSpec>),
}

impl AddrSpec {
    /// Whether `ip` is in the set.
    pub fn contains(&self, ip: IpAddr) -> bool {
        match self {
            AddrSpec::Any => true,
            AddrSpec::Net(net, len) => in_net(ip, *net, *len),
            AddrSpec::Not(inner) => !inner.contains(ip),
            AddrSpec::List(items) => list_contains(
                items,
                |s| s.contains(ip),
                |s| match s {
                    AddrSpec::Not(inner) => Some(&**inner),
                    _ => None,
                },
            ),
        }
    }
}

impl PortSpec {
    /// Whether `port` is in the set.
    pub fn contains(&self, port: u16) -> bool {
        match self {
            PortSpec::Any => true,
            PortSpec::Range(lo, hi) => (*lo..=*hi).contains(&port),
            PortSpec::Not(inner) => !inner.contains(port),
            PortSpec::List(items) => list_contains(
                items,
                |s| s.contains(port),
                |s| match s {
                    PortSpec::Not(inner) => Some(&**inner),
                    _ => None,
                },
            ),
        }
    }
}

/// Written in rule syntax (`any`, `10.0.0.0/8`, `!1.2.3.4`, `[a,b]`); a
/// host is written without a prefix length. Parsing the text gives the same
/// spec back.
impl std::fmt::Display for AddrSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            AddrSpec::Any => f.write_str("any"),
            AddrSpec::Net(ip, len) => {
                let host = if ip.is_ipv4() { 32 } else { 128 };
                if *len == host {
                    write!(f, "{ip}")
                } else {
                    write!(f, "{ip}/{len}")
                }
            }
            AddrSpec::Not(inner) => write!(f, "!{inner}"),
            AddrSpec::List(items) => write_list(f, items),
        }
    }
}

/// Written in rule syntax (`any`, `80`, `1024:65535`, `!80`, `[a,b]`).
/// Parsing the text gives the same spec back.
impl std::fmt::Display for PortSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PortSpec::Any => f.write_str("any"),
            PortSpec::Range(lo, hi) if lo == hi => write!(f, "{lo}"),
            PortSpec::Range(lo, hi) => write!(f, "{lo}:{hi}"),
            PortSpec::Not(inner) => write!(f, "!{inner}"),
            PortSpec::List(items) => write_list(f, items),
        }
    }
}

/// `[a,b,c]`.
fn write_list<T: std::fmt::Display>(
    f: &mut std::fmt::Formatter<'_>,
    items: &[T],
) -> std::fmt::Result {
    f.write_str("[")?;
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            f.write_str(",")?;
        }
        write!(f, "{item}")?;
    }
    f.write_str("]")
}

/// The list rule shared by addresses and ports: in one of the positive
/// elements (or there is none) and in none of the negated ones.
fn list_contains<T>(
    items: &[T],
    contains: impl Fn(&T) -> bool,
    negated: impl Fn(&T) -> Option<&T>,
) -> bool {
    let mut any_positive = false;
    let mut in_positive = false;
    for item in items {
        match negated(item) {
            Some(inner) => {
                if contains(inner) {
                    return false;
                }
            }
            None => {
                any_positive = true;
                in_positive = in_positive || contains(item);
            }
        }
    }
    !any_positive || in_positive
}

/// Whether `ip` lies in `net`/`len` (an IPv4 network never holds an IPv6
/// address, nor the reverse).
fn in_net(ip: IpAddr, net: IpAddr, len: u8) -> bool {
    match (ip, net) {
        (IpAddr::V4(a), IpAddr::V4(n)) => {
            let len = u32::from(len.min(32));
            let mask = if len == 0 { 0 } else { u32::MAX << (32 - len) };
            u32::from(a) & mask == u32::from(n) & mask
        }
        (IpAddr::V6(a), IpAddr::V6(n)) => {
            let len = u32::from(len.min(128));
            let mask = if len == 0 {
                0
            } else {
                u128::MAX << (128 - len)
            };
            u128::from(a) & mask == u128::from(n) & mask
        }
        _ => false,
    }
}

/// The rule header: `action proto src sport ->|<> dst dport`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Header {
    /// What a match does.
    pub action: Action,
    /// Which traffic it applies to.
    pub proto: RuleProto,
    /// Source addresses.
    pub src: AddrSpec,
    /// Source ports.
    pub src_ports: PortSpec,
    /// `<>`: the rule also applies with source and destination swapped.
    pub bidirectional: bool,
    /// Destination addresses.
    pub dst: AddrSpec,
    /// Destination ports.
    pub dst_ports: PortSpec,
}

impl Header {
    /// Whether a stream sending from `src` to `dst` is covered by the
    /// addresses and ports of the header (either way round for `<>`).
    pub fn covers(&self, src: (IpAddr, u16), dst: (IpAddr, u16)) -> bool {
        let one_way = |s: (IpAddr, u16), d: (IpAddr, u16)| {
            self.src.contains(s.0)
                && self.src_ports.contains(s.1)
                && self.dst.contains(d.0)
                && self.dst_ports.contains(d.1)
        };
        one_way(src, dst) || (self.bidirectional && one_way(dst, src))
    }
}

/// Written in rule syntax: `alert tcp any any -> 10.0.0.0/8 80`.
impl std::fmt::Display for Header {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let dir = if self.bidirectional { "<>" } else { "->" };
        write!(
            f,
            "{} {} {} {} {dir} {} {}",
            self.action.name(),
            self.proto.name(),
            self.src,
            self.src_ports,
            self.dst,
            self.dst_ports
        )
    }
}

/// The direction a `flow` option asks for.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum FlowDirection {
    /// `to_server` / `from_client`: the connection's initiator sends.
    ToServer,
    /// `to_client` / `from_server`: the responder sends.
    ToClient,
}

/// The `flow` option.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct FlowOptions {
    /// `established`.
    pub established: bool,
    /// `not_established`.
    pub not_established: bool,
    /// `stateless`: match whatever the connection's state (the default
    /// when neither `established` nor `not_established` is given).
    pub stateless: bool,
    /// `to_server` or `to_client`, if given.
    pub direction: Option<FlowDirection>,
}

/// One `content` and its modifiers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Content {
    /// The bytes (`|hex|` and escapes decoded).
    pub pattern: Vec<u8>,
    /// `nocase`: ASCII letters match either case.
    pub nocase: bool,
    /// `content:!"..."`: the rule needs the bytes to be absent.
    pub negated: bool,
    /// `offset`: first stream offset where the match may start.
    pub offset: Option<u32>,
    /// `depth`: the match must end within this many bytes of `offset` (or
    /// of the start).
    pub depth: Option<u32>,
    /// `distance`: the match starts at least this many bytes after the
    /// previous match's end (may be negative).
    pub distance: Option<i32>,
    /// `within`: the match ends within this many bytes of the previous
    /// match's end (plus `distance`).
    pub within: Option<u32>,
    /// `fast_pattern`: the content the multi-pattern matcher searches for.
    pub fast_pattern: bool,
}

impl Content {
    /// A content with no modifier.
    pub fn new(pattern: impl Into<Vec<u8>>) -> Content {
        Content {
            pattern: pattern.into(),
            nocase: false,
            negated: false,
            offset: None,
            depth: None,
            distance: None,
            within: None,
            fast_pattern: false,
        }
    }

    /// Whether the content is placed relative to the previous match.
    pub fn is_relative(&self) -> bool {
        self.distance.is_some() || self.within.is_some()
    }
}

/// One `pcre`, compiled.
#[derive(Clone, Debug)]
pub struct Pcre {
    /// The pattern between the slashes.
    pub pattern: String,
    /// The modifiers after the closing slash, as written.
    pub modifiers: String,
    /// `R`: the match starts at or after the previous match's end.
    pub relative: bool,
    /// `pcre:!"..."`: the rule needs the expression not to match.
    pub negated: bool,
    /// The compiled expression (PCRE2, with JIT where available).
    pub regex: pcre2::bytes::Regex,
}

impl PartialEq for Pcre {
    fn eq(&self, o: &Pcre) -> bool {
        self.pattern == o.pattern
            && self.modifiers == o.modifiers
            && self.relative == o.relative
            && self.negated == o.negated
    }
}

/// One element of a rule's payload inspection, in rule order: relative
/// elements refer to the element before them.
#[derive(Clone, Debug, PartialEq)]
pub enum PayloadMatch {
    /// `content`.
    Content(Content),
    /// `pcre`.
    Pcre(Pcre),
}

/// Where a rule was read.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct RuleSource {
    /// The file (or a name such as `<command line>`).
    pub file: Arc<str>,
    /// Line number (1-based) of the rule's first line.
    pub line: usize,
}

impl std::fmt::Display for RuleSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.file, self.line)
    }
}

/// A parsed rule.
#[derive(Clone, Debug, PartialEq)]
pub struct Rule {
    /// The header.
    pub header: Header,
    /// `msg`.
    pub msg: String,
    /// `sid`.
    pub sid: u32,
    /// `rev` (default 0, as Suricata).
    pub rev: u32,
    /// `gid` (default 1).
    pub gid: u32,
    /// `classtype`, if given.
    pub classtype: Option<String>,
    /// `priority`, if given (else the classtype's, else 3).
    pub priority: Option<u8>,
    /// `reference` values, as written (`url,example.com`).
    pub references: Vec<String>,
    /// `metadata` values, as written.
    pub metadata: Vec<String>,
    /// `flow`.
    pub flow: FlowOptions,
    /// `content` and `pcre`, in order.
    pub matches: Vec<PayloadMatch>,
    /// Where it was read.
    pub source: RuleSource,
}

impl Rule {
    /// `alert PROTO any any -> any any (msg:"rule SID"; …; sid:SID; rev:1;)`
    /// with these payload conditions: a rule built without text (by a
    /// program, a test), read from `<built>`.
    pub fn new(sid: u32, proto: RuleProto, matches: Vec<PayloadMatch>) -> Rule {
        Rule {
            header: Header {
                action: Action::Alert,
                proto,
                src: AddrSpec::Any,
                src_ports: PortSpec::Any,
                bidirectional: false,
                dst: AddrSpec::Any,
                dst_ports: PortSpec::Any,
            },
            msg: format!("rule {sid}"),
            sid,
            rev: 1,
            gid: 1,
            classtype: None,
            priority: None,
            references: Vec::new(),
            metadata: Vec::new(),
            flow: FlowOptions::default(),
            matches,
            source: RuleSource {
                file: "<built>".into(),
                line: 0,
            },
        }
    }
}

/// Why a rule was rejected.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RuleError {
    /// Where.
    pub source: RuleSource,
    /// The keyword at fault, if one is.
    pub keyword: Option<String>,
    /// What was wrong.
    pub message: String,
}

impl std::fmt::Display for RuleError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.keyword {
            Some(k) => write!(f, "{}: {k}: {}", self.source, self.message),
            None => write!(f, "{}: {}", self.source, self.message),
        }
    }
}

impl std::error::Error for RuleError {}

#[cfg(test)]
mod tests {
    use super::*;

    fn net(s: &str, len: u8) -> AddrSpec {
        AddrSpec::Net(s.parse().unwrap(), len)
    }

    #[test]
    fn address_lists_take_positives_less_negatives() {
        let home = AddrSpec::List(vec![
            net("10.0.0.0", 8),
            AddrSpec::Not(Box::new(net("10.1.0.0", 16))),
        ]);
        assert!(home.contains("10.2.3.4".parse().unwrap()));
        assert!(!home.contains("10.1.3.4".parse().unwrap()));
        assert!(!home.contains("192.168.1.1".parse().unwrap()));
        let only_not = AddrSpec::List(vec![AddrSpec::Not(Box::new(home.clone()))]);
        assert!(only_not.contains("192.168.1.1".parse().unwrap()));
        assert!(!only_not.contains("10.2.3.4".parse().unwrap()));
        assert!(only_not.contains("10.1.3.4".parse().unwrap()));
        assert!(!net("10.0.0.0", 8).contains("::1".parse().unwrap()));
        assert!(net("2001:db8::", 32).contains("2001:db8::1".parse().unwrap()));
        assert!(net("0.0.0.0", 0).contains("1.2.3.4".parse().unwrap()));
    }

    #[test]
    fn port_lists_and_ranges() {
        let p = PortSpec::List(vec![
            PortSpec::Range(80, 90),
            PortSpec::Not(Box::new(PortSpec::Range(85, 85))),
        ]);
        assert!(p.contains(80) && p.contains(90) && !p.contains(85) && !p.contains(91));
        assert!(PortSpec::Not(Box::new(PortSpec::Range(0, 1023))).contains(1024));
    }
}
