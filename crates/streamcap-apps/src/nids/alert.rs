//! Alerts, and how Suricata writes them: EVE JSON lines
//! (`event_type: "alert"`) and `fast.log` lines.

use super::rule::{Action, Rule};
use super::ruleset::RuleSet;
use crate::conn_id::ConnId;
use crate::json::Staging;
use std::io::Write as _;
use std::net::IpAddr;
use streamcap::flow::Direction;
use streamcap::Timestamp;

/// One rule matching one stream direction.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Alert {
    /// Index of the rule in [`RuleSet::rules`].
    pub rule: u32,
    /// Time of the packet whose bytes completed the match (with chunk
    /// delivery, of the last packet of the chunk that held them).
    pub ts: Timestamp,
    /// Transport protocol number.
    pub proto: u8,
    /// Sender of the matching bytes.
    pub src: (IpAddr, u16),
    /// Receiver of the matching bytes.
    pub dst: (IpAddr, u16),
    /// `Orig`: client to server.
    pub direction: Direction,
    /// Stream offset of the match's first byte (UDP and per-packet
    /// protocols: in the concatenation of the direction's payloads).
    pub stream_offset: u64,
    /// Offset of the match within its datagram (UDP and other per-packet
    /// protocols; for ICMP, within the payload after the 8-byte header;
    /// `None` for TCP).
    pub datagram_offset: Option<u64>,
    /// The connection.
    pub conn: ConnId,
    /// Outer VLAN id.
    pub vlan: Option<u16>,
}

/// Where alerts go.
pub trait AlertSink {
    /// Takes one alert; `rules` holds the rule it names.
    fn alert(&mut self, alert: &Alert, rules: &RuleSet);
}

impl AlertSink for Vec<Alert> {
    fn alert(&mut self, alert: &Alert, _: &RuleSet) {
        self.push(alert.clone());
    }
}

/// An [`AlertSink`] made of a closure.
pub struct FnSink<F>(pub F);

impl<F: FnMut(&Alert, &RuleSet)> AlertSink for FnSink<F> {
    fn alert(&mut self, alert: &Alert, rules: &RuleSet) {
        (self.0)(alert, rules)
    }
}

/// EVE's protocol name.
pub fn proto_name(proto: u8) -> String {
    match known_proto_name(proto) {
        Some(n) => n.into(),
        None => proto.to_string(),
    }
}

/// EVE's name of a protocol it names.
fn known_proto_name(proto: u8) -> Option<&'static str> {
    match proto {
        1 => Some("ICMP"),
        6 => Some("TCP"),
        17 => Some("UDP"),
        58 => Some("IPv6-ICMP"),
        132 => Some("SCTP"),
        _ => None,
    }
}

/// `2024-05-01T12:00:00.407907+0000`, as Suricata writes EVE timestamps.
pub fn eve_time(ts: Timestamp) -> String {
    let mut out = Vec::with_capacity(31);
    put_eve_time(&mut Staging::new(&mut out), ts);
    String::from_utf8(out).unwrap_or_default()
}

fn put_eve_time(w: &mut Staging<'_>, ts: Timestamp) {
    let u = ts.utc();
    // Each field with its width and the separator after it.
    let fields = [
        (u.year, 4, b"-"),
        (u32::from(u.month), 2, b"-"),
        (u32::from(u.day), 2, b"T"),
        (u32::from(u.hour), 2, b":"),
        (u32::from(u.minute), 2, b":"),
        (u32::from(u.second), 2, b"."),
        (u.nanos / 1000, 6, b"+"),
    ];
    for (value, width, separator) in fields {
        w.zero_padded(u64::from(value), width);
        w.put(separator);
    }
    w.put(b"0000");
}

/// A rule's EVE `alert` object with the `,"alert":` before it: the same
/// for each of its alerts, so [`CompiledRule`](super::CompiledRule) keeps
/// it written.
pub(crate) fn eve_alert_object(rule: &Rule, category: &str, severity: u8) -> Box<str> {
    let action = match rule.header.action {
        Action::Pass => "pass",
        // A passive sensor drops nothing: Suricata in IDS mode says so too.
        Action::Alert | Action::Drop => "allowed",
    };
    let s = |v: &str| serde_json::Value::String(v.to_string()).to_string();
    format!(
        ",\"alert\":{{\"action\":\"{action}\",\"gid\":{},\"signature_id\":{},\"rev\":{},\"signature\":{},\"category\":{},\"severity\":{severity}}}",
        rule.gid,
        rule.sid,
        rule.rev,
        s(&rule.msg),
        s(category),
    )
    .into_boxed_str()
}

/// Writes alerts as EVE JSON lines. It remembers the names (`flow_id`,
/// `uid`) of the last connection it wrote, since one connection's alerts
/// come together, and each name costs a SHA-256 of the connection.
#[derive(Debug, Default)]
pub struct EveWriter {
    last: Option<(ConnId, u64, String)>,
}

impl EveWriter {
    /// A writer that remembers no connection yet.
    pub fn new() -> EveWriter {
        EveWriter::default()
    }

    /// Appends `a` as one EVE JSON line (with its newline) to `out`.
    pub fn write(&mut self, a: &Alert, rules: &RuleSet, out: &mut Vec<u8>) {
        let Some(r) = rules.rules().get(a.rule as usize) else {
            return;
        };
        let (flow_id, uid) = match &self.last {
            Some((conn, flow_id, uid)) if *conn == a.conn => (*flow_id, uid.as_str()),
            _ => {
                let (flow_id, uid) = a.conn.names();
                let (_, flow_id, uid) = self.last.insert((a.conn.clone(), flow_id, uid));
                (*flow_id, uid.as_str())
            }
        };
        let mut w = Staging::new(out);
        w.put(b"{\"timestamp\":\"");
        put_eve_time(&mut w, a.ts);
        w.put(b"\",\"flow_id\":");
        w.num(flow_id);
        w.put(b",\"event_type\":\"alert\"");
        if let Some(v) = a.vlan {
            w.put(b",\"vlan\":[");
            w.num(u64::from(v));
            w.put(b"]");
        }
        w.put(b",\"src_ip\":");
        w.ip(a.src.0);
        w.put(b",\"src_port\":");
        w.num(u64::from(a.src.1));
        w.put(b",\"dest_ip\":");
        w.ip(a.dst.0);
        w.put(b",\"dest_port\":");
        w.num(u64::from(a.dst.1));
        w.put(b",\"proto\":");
        match known_proto_name(a.proto) {
            Some(n) => w.plain_str(n),
            None => {
                w.put(b"\"");
                w.num(u64::from(a.proto));
                w.put(b"\"");
            }
        }
        w.put(r.eve_alert.as_bytes());
        w.put(match a.direction {
            Direction::Orig => b",\"direction\":\"to_server\",\"stream_offset\":",
            Direction::Resp => b",\"direction\":\"to_client\",\"stream_offset\":",
        });
        w.num(a.stream_offset);
        if let Some(d) = a.datagram_offset {
            w.put(b",\"datagram_offset\":");
            w.num(d);
        }
        // "C" and base62: nothing to escape.
        w.put(b",\"uid\":");
        w.plain_str(uid);
        w.put(b"}\n");
        w.flush();
    }
}

/// Appends `a` as one EVE JSON line (with its newline) to `out`
/// ([`EveWriter::write`] with nothing remembered).
pub fn write_eve(a: &Alert, rules: &RuleSet, out: &mut Vec<u8>) {
    EveWriter::new().write(a, rules, out);
}

/// Appends `a` as one `fast.log` line (with its newline) to `out`.
pub fn write_fast(a: &Alert, rules: &RuleSet, out: &mut Vec<u8>) {
    let Some(r) = rules.rules().get(a.rule as usize) else {
        return;
    };
    let u = a.ts.utc();
    let class = if r.category.is_empty() {
        "(null)"
    } else {
        r.category.as_str()
    };
    let ep = |(ip, port): (IpAddr, u16)| match ip {
        IpAddr::V4(v4) => format!("{v4}:{port}"),
        IpAddr::V6(v6) => format!("[{v6}]:{port}"),
    };
    let _ = writeln!(
        out,
        "{:02}/{:02}/{:04}-{:02}:{:02}:{:02}.{:06}  [**] [{}:{}:{}] {} [**] [Classification: {class}] [Priority: {}] {{{}}} {} -> {}",
        u.month,
        u.day,
        u.year,
        u.hour,
        u.minute,
        u.second,
        u.nanos / 1000,
        r.rule.gid,
        r.rule.sid,
        r.rule.rev,
        r.rule.msg,
        r.severity,
        proto_name(a.proto),
        ep(a.src),
        ep(a.dst)
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nids::parse::parse_rules;
    use crate::nids::ruleset::CompileOptions;
    use crate::nids::vars::Vars;

    #[test]
    fn eve_times_have_microseconds_and_an_offset() {
        let ts = Timestamp::from_secs_nanos(1_714_564_800, 407_907_123);
        assert_eq!(eve_time(ts), "2024-05-01T12:00:00.407907+0000");
        let ts = Timestamp::from_secs_nanos(0, 5_000);
        assert_eq!(eve_time(ts), "1970-01-01T00:00:00.000005+0000");
    }

    /// EVE lines written with `format!` and serde_json: what [`EveWriter`]
    /// must write byte for byte.
    fn reference_eve(a: &Alert, rules: &RuleSet) -> String {
        let r = &rules.rules()[a.rule as usize];
        let s = |v: &str| serde_json::Value::String(v.to_string()).to_string();
        let action = match r.rule.header.action {
            Action::Pass => "pass",
            Action::Alert | Action::Drop => "allowed",
        };
        let (flow_id, uid) = a.conn.names();
        let ts = a.ts.utc();
        let mut line = format!(
            "{{\"timestamp\":\"{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:06}+0000\",\"flow_id\":{flow_id},\"event_type\":\"alert\"",
            ts.year, ts.month, ts.day, ts.hour, ts.minute, ts.second, ts.nanos / 1000
        );
        if let Some(v) = a.vlan {
            line += &format!(",\"vlan\":[{v}]");
        }
        line += &format!(
            ",\"src_ip\":\"{}\",\"src_port\":{},\"dest_ip\":\"{}\",\"dest_port\":{},\"proto\":\"{}\"",
            a.src.0,
            a.src.1,
            a.dst.0,
            a.dst.1,
            proto_name(a.proto)
        );
        line += &format!(
            ",\"alert\":{{\"action\":\"{action}\",\"gid\":{},\"signature_id\":{},\"rev\":{},\"signature\":{},\"category\":{},\"severity\":{}}}",
            r.rule.gid,
            r.rule.sid,
            r.rule.rev,
            s(&r.rule.msg),
            s(&r.category),
            r.severity
        );
        let dir = match a.direction {
            Direction::Orig => "to_server",
            Direction::Resp => "to_client",
        };
        line += &format!(
            ",\"direction\":\"{dir}\",\"stream_offset\":{}",
            a.stream_offset
        );
        if let Some(d) = a.datagram_offset {
            line += &format!(",\"datagram_offset\":{d}");
        }
        line + &format!(",\"uid\":\"{uid}\"}}\n")
    }

    #[test]
    fn eve_lines_equal_the_formatted_reference() {
        let text = r#"
alert tcp any any -> any any (msg:"plain"; content:"abc"; classtype:trojan-activity; sid:1; rev:3;)
pass udp any any -> any any (msg:"quote \" back\\slash ünï"; content:"x"; priority:1; sid:2;)
drop ip any any -> any any (msg:"control \x01"; content:"y"; gid:7; sid:3;)
"#;
        let vars = Vars::default();
        let parsed = parse_rules(text, "test.rules", &vars);
        assert!(parsed.errors.is_empty(), "{:?}", parsed.errors);
        let rules = RuleSet::compile(
            parsed.rules,
            &vars.classifications,
            &CompileOptions::default(),
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let ip = |t: &str| t.parse::<IpAddr>().unwrap_or(IpAddr::from([0, 0, 0, 0]));
        let conn = |orig: &str, resp: &str, serial: u64| ConnId {
            first: Timestamp::from_secs_nanos(1_714_564_800, 1_000),
            proto: 6,
            orig: (ip(orig), 40_000),
            resp: (ip(resp), 80),
            vlan_key: 0,
            conn_id: serial,
            tunnel: None,
        };
        let base = Alert {
            rule: 0,
            ts: Timestamp::from_secs_nanos(1_714_564_800, 407_907_123),
            proto: 6,
            src: (ip("10.0.0.1"), 40_000),
            dst: (ip("192.168.200.34"), 80),
            direction: Direction::Orig,
            stream_offset: 0,
            datagram_offset: None,
            conn: conn("10.0.0.1", "192.168.200.34", 1),
            vlan: None,
        };
        let alerts = vec![
            base.clone(),
            // The same connection again: names from the writer's memory.
            Alert {
                rule: 1,
                proto: 17,
                stream_offset: 1_234_567,
                datagram_offset: Some(12),
                direction: Direction::Resp,
                vlan: Some(4094),
                ..base.clone()
            },
            Alert {
                rule: 2,
                proto: 47,
                src: (ip("2001:db8::1"), 0),
                dst: (ip("::ffff:10.0.0.1"), 65_535),
                conn: conn("2001:db8::1", "::ffff:10.0.0.1", 2),
                ..base.clone()
            },
            Alert {
                proto: 58,
                ts: Timestamp::from_secs_nanos(0, 999),
                ..base.clone()
            },
            Alert {
                proto: 1,
                conn: conn("10.0.0.1", "192.168.200.34", 3),
                ..base.clone()
            },
            Alert {
                proto: 132,
                ..base.clone()
            },
        ];
        let mut writer = EveWriter::new();
        for a in &alerts {
            let mut line = Vec::new();
            writer.write(a, &rules, &mut line);
            let expected = reference_eve(a, &rules);
            assert_eq!(String::from_utf8_lossy(&line), expected);
            assert!(serde_json::from_str::<serde_json::Value>(&expected).is_ok());
            let mut alone = Vec::new();
            write_eve(a, &rules, &mut alone);
            assert_eq!(alone, line);
        }
    }
}
