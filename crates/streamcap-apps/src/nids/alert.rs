//! Alerts, and how Suricata writes them: EVE JSON lines
//! (`event_type: "alert"`) and `fast.log` lines.

use super::rule::Action;
use super::ruleset::RuleSet;
use crate::conn_id::ConnId;
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
    match proto {
        1 => "ICMP".into(),
        6 => "TCP".into(),
        17 => "UDP".into(),
        58 => "IPv6-ICMP".into(),
        132 => "SCTP".into(),
        n => n.to_string(),
    }
}

/// `2024-05-01T12:00:00.407907+0000`, as Suricata writes EVE timestamps.
pub fn eve_time(ts: Timestamp) -> String {
    let u = ts.utc();
    format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:06}+0000",
        u.year,
        u.month,
        u.day,
        u.hour,
        u.minute,
        u.second,
        u.nanos / 1000
    )
}

/// Appends `a` as one EVE JSON line (with its newline) to `out`.
pub fn write_eve(a: &Alert, rules: &RuleSet, out: &mut Vec<u8>) {
    let Some(r) = rules.rules().get(a.rule as usize) else {
        return;
    };
    let s = |v: &str| serde_json::Value::String(v.to_string()).to_string();
    let action = match r.rule.header.action {
        Action::Pass => "pass",
        // A passive sensor drops nothing: Suricata in IDS mode says so too.
        Action::Alert | Action::Drop => "allowed",
    };
    let (flow_id, uid) = a.conn.names();
    let _ = write!(
        out,
        "{{\"timestamp\":\"{}\",\"flow_id\":{flow_id},\"event_type\":\"alert\"",
        eve_time(a.ts),
    );
    if let Some(v) = a.vlan {
        let _ = write!(out, ",\"vlan\":[{v}]");
    }
    let _ = write!(
        out,
        ",\"src_ip\":\"{}\",\"src_port\":{},\"dest_ip\":\"{}\",\"dest_port\":{},\"proto\":\"{}\"",
        a.src.0,
        a.src.1,
        a.dst.0,
        a.dst.1,
        proto_name(a.proto)
    );
    let _ = write!(
        out,
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
    let _ = write!(
        out,
        ",\"direction\":\"{dir}\",\"stream_offset\":{}",
        a.stream_offset
    );
    if let Some(d) = a.datagram_offset {
        let _ = write!(out, ",\"datagram_offset\":{d}");
    }
    let _ = writeln!(out, ",\"uid\":\"{uid}\"}}");
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

    #[test]
    fn eve_times_have_microseconds_and_an_offset() {
        let ts = Timestamp::from_secs_nanos(1_714_564_800, 407_907_123);
        assert_eq!(eve_time(ts), "2024-05-01T12:00:00.407907+0000");
    }
}
