//! Zeek `conn.log` output: header, uid, conn_state, one TSV line per flow.

use crate::record::FlowRecord;
use sha2::{Digest, Sha256};
use streamcap_apps::conn_id::{base62_uid, ConnId};

/// The `#fields` line's names: Zeek's conn.log (base/protocols/conn/main.zeek,
/// `ip_proto` last, as Zeek 6 and later write it), then `community_id` as
/// policy/protocols/conn/community-id-logging.zeek adds it.
pub const FIELDS: [&str; 23] = [
    "ts",
    "uid",
    "id.orig_h",
    "id.orig_p",
    "id.resp_h",
    "id.resp_p",
    "proto",
    "service",
    "duration",
    "orig_bytes",
    "resp_bytes",
    "conn_state",
    "local_orig",
    "local_resp",
    "missed_bytes",
    "history",
    "orig_pkts",
    "orig_ip_bytes",
    "resp_pkts",
    "resp_ip_bytes",
    "tunnel_parents",
    "ip_proto",
    "community_id",
];

/// The `#types` line's types.
pub const TYPES: [&str; 23] = [
    "time",
    "string",
    "addr",
    "port",
    "addr",
    "port",
    "enum",
    "string",
    "interval",
    "count",
    "count",
    "string",
    "bool",
    "bool",
    "count",
    "string",
    "count",
    "count",
    "count",
    "count",
    "set[string]",
    "count",
    "string",
];

/// `YYYY-MM-DD-HH-MM-SS` (UTC) of Unix seconds, as Zeek's `#open` / `#close`.
pub fn log_time(unix_secs: u64) -> String {
    let u = streamcap::Timestamp::from_secs_nanos(unix_secs, 0).utc();
    format!(
        "{:04}-{:02}-{:02}-{:02}-{:02}-{:02}",
        u.year, u.month, u.day, u.hour, u.minute, u.second
    )
}

/// The header lines, each ending in a newline.
pub fn header(open: &str) -> String {
    format!(
        "#separator \\x09\n#set_separator\t,\n#empty_field\t(empty)\n#unset_field\t-\n#path\tconn\n#open\t{open}\n#fields\t{}\n#types\t{}\n",
        FIELDS.join("\t"),
        TYPES.join("\t")
    )
}

/// The trailer line.
pub fn footer(close: &str) -> String {
    format!("#close\t{close}\n")
}

/// "C" + 17 base62 characters, derived from a SHA-256 of the connection's
/// first timestamp, key and serial number: the same input gives the same
/// uid, and every log of a run names the connection alike
/// ([`streamcap_apps::conn_id::ConnId`]).
pub fn uid(r: &FlowRecord) -> String {
    ConnId {
        first: r.ts.0,
        proto: r.proto.0,
        orig: (r.src_ip, r.src_port),
        resp: (r.dst_ip, r.dst_port),
        vlan_key: r.extra.vlan_key,
        conn_id: r.extra.conn_id,
        tunnel: r.tunnel.clone(),
    }
    .uid()
}

/// The uid of a tunnel, for `tunnel_parents`: "C" and 17 base62
/// characters of a SHA-256 of its description, so every connection of one
/// tunnel names the same parent.
pub fn tunnel_uid(tunnel: &str) -> String {
    base62_uid(&Sha256::digest(tunnel.as_bytes()).into())
}

/// Zeek's TCP endpoint states, as far as the history letters tell them.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum TcpState {
    /// No packet.
    Inactive,
    /// Sent a SYN.
    SynSent,
    /// Sent a SYN-ACK.
    SynAckSent,
    /// Active without a SYN seen.
    Partial,
    /// Handshake completed.
    Established,
    /// Sent a FIN.
    Closed,
    /// Sent a RST.
    Reset,
}

/// The endpoint states of the initiator and responder from the history
/// (uppercase = initiator) and whether each side sent packets.
pub fn endpoint_states(
    history: &str,
    orig_active: bool,
    resp_active: bool,
) -> (TcpState, TcpState) {
    let has = |c: char| history.contains(c);
    let established = has('S') && has('h') && (has('A') || has('D'));
    let orig = if has('R') {
        TcpState::Reset
    } else if has('F') {
        TcpState::Closed
    } else if has('S') {
        if established {
            TcpState::Established
        } else {
            TcpState::SynSent
        }
    } else if has('H') {
        TcpState::SynAckSent
    } else if orig_active || history.chars().any(|c| c.is_ascii_uppercase()) {
        TcpState::Partial
    } else {
        TcpState::Inactive
    };
    let resp = if has('r') {
        TcpState::Reset
    } else if has('f') {
        TcpState::Closed
    } else if has('h') {
        if established {
            TcpState::Established
        } else {
            TcpState::SynAckSent
        }
    } else if has('s') {
        TcpState::SynSent
    } else if resp_active || history.chars().any(|c| c.is_ascii_lowercase()) {
        TcpState::Partial
    } else {
        TcpState::Inactive
    };
    (orig, resp)
}

/// Zeek's `RSTOS0` history pattern `^?S[^HAFGIQ]*R.*`.
fn rstos0_history(h: &str) -> bool {
    let h = h.strip_prefix('^').unwrap_or(h);
    let Some(rest) = h.strip_prefix('S') else {
        return false;
    };
    for c in rest.chars() {
        if c == 'R' {
            return true;
        }
        if "HAFGIQ".contains(c) {
            return false;
        }
    }
    false
}

/// Zeek's `conn_state` (base/protocols/conn/main.zeek) applied to the
/// endpoint states derived from the history.
pub fn conn_state(
    proto: u8,
    history: &str,
    orig_pkts: u64,
    resp_pkts: u64,
    orig_size: u64,
    resp_size: u64,
) -> &'static str {
    match proto {
        6 => {
            use TcpState::*;
            let (os, rs) = endpoint_states(history, orig_pkts > 0, resp_pkts > 0);
            let o_inactive = matches!(os, Inactive | Partial);
            let r_inactive = matches!(rs, Inactive | Partial);
            if rs == Reset {
                if matches!(os, SynSent | SynAckSent)
                    || (os == Reset && orig_size == 0 && resp_size == 0)
                {
                    "REJ"
                } else if o_inactive {
                    "RSTRH"
                } else {
                    "RSTR"
                }
            } else if os == Reset {
                if r_inactive {
                    if rstos0_history(history) {
                        "RSTOS0"
                    } else {
                        "OTH"
                    }
                } else {
                    "RSTO"
                }
            } else if rs == Closed && os == Closed {
                "SF"
            } else if os == Closed {
                if r_inactive {
                    "SH"
                } else {
                    "S2"
                }
            } else if rs == Closed {
                if o_inactive {
                    "SHR"
                } else {
                    "S3"
                }
            } else if os == SynSent && rs == Inactive {
                "S0"
            } else if os == Established && rs == Established {
                "S1"
            } else {
                "OTH"
            }
        }
        17 => match (orig_pkts > 0, resp_pkts > 0) {
            (true, true) => "SF",
            (true, false) => "S0",
            (false, true) => "SHR",
            (false, false) => "OTH",
        },
        _ => "OTH",
    }
}

/// One conn.log line (with newline); `community_id` is `-` when `None`.
pub fn line(r: &FlowRecord, community_id: Option<&str>) -> String {
    let proto = match r.proto.0 {
        6 => "tcp",
        17 => "udp",
        1 | 58 => "icmp",
        _ => "unknown_transport",
    };
    let dur_ns = r.last_ts.0.nanos_since(r.ts.0);
    let (duration, ob, rb) = if dur_ns > 0 {
        (
            format!(
                "{}.{:06}",
                dur_ns / 1_000_000_000,
                dur_ns % 1_000_000_000 / 1000
            ),
            r.orig.stream_bytes.to_string(),
            r.resp.stream_bytes.to_string(),
        )
    } else {
        ("-".into(), "-".into(), "-".into())
    };
    let state = conn_state(
        r.proto.0,
        r.extra.history.as_str(),
        r.orig.pkts,
        r.resp.pkts,
        r.orig.stream_bytes,
        r.resp.stream_bytes,
    );
    let history = if r.extra.history.as_str().is_empty() {
        "-"
    } else {
        r.extra.history.as_str()
    };
    let f: [String; 23] = [
        r.ts.text(),
        uid(r),
        r.src_ip.to_string(),
        r.src_port.to_string(),
        r.dst_ip.to_string(),
        r.dst_port.to_string(),
        proto.into(),
        r.extra.service.unwrap_or("-").into(),
        duration,
        ob,
        rb,
        state.into(),
        "-".into(),
        "-".into(),
        (r.orig.missing + r.resp.missing).to_string(),
        history.into(),
        r.orig.pkts.to_string(),
        r.orig.bytes.to_string(),
        r.resp.pkts.to_string(),
        r.resp.bytes.to_string(),
        r.tunnel.as_deref().map_or_else(|| "-".into(), tunnel_uid),
        r.proto.0.to_string(),
        community_id.unwrap_or("-").to_string(),
    ];
    let mut s = f.join("\t");
    s.push('\n');
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cs(h: &str) -> &'static str {
        conn_state(
            6,
            h,
            1,
            u64::from(h.chars().any(|c| c.is_ascii_lowercase())),
            0,
            0,
        )
    }

    #[test]
    fn conn_state_table() {
        assert_eq!(cs("S"), "S0");
        assert_eq!(cs("ShAD"), "S1");
        assert_eq!(cs("ShADadFf"), "SF");
        assert_eq!(cs("ShADdaFf"), "SF");
        assert_eq!(cs("Sr"), "REJ");
        assert_eq!(cs("ShADF"), "S2");
        assert_eq!(cs("ShADf"), "S3");
        assert_eq!(cs("ShADR"), "RSTO");
        assert_eq!(cs("ShADr"), "RSTR");
        assert_eq!(cs("SR"), "RSTOS0");
        assert_eq!(conn_state(6, "hr", 0, 2, 0, 0), "RSTRH");
        assert_eq!(cs("SF"), "SH");
        assert_eq!(conn_state(6, "hf", 0, 2, 0, 0), "SHR");
        assert_eq!(conn_state(6, "ShADR", 3, 1, 0, 0), "RSTO");
        assert_eq!(cs("DdA"), "OTH");
        assert_eq!(cs("Dd"), "OTH");
        // Midstream, both closed: SF like Zeek.
        assert_eq!(cs("DdFf"), "SF");
        // No SYN, originator RST, responder silent: not RSTOS0.
        assert_eq!(conn_state(6, "DR", 2, 0, 0, 0), "OTH");
        assert_eq!(conn_state(17, "", 1, 1, 0, 0), "SF");
        assert_eq!(conn_state(17, "", 1, 0, 0, 0), "S0");
        assert_eq!(conn_state(17, "", 0, 1, 0, 0), "SHR");
        assert_eq!(conn_state(1, "", 1, 1, 0, 0), "OTH");
    }

    #[test]
    fn rstos0_pattern() {
        assert!(rstos0_history("SR"));
        assert!(rstos0_history("^STR"));
        assert!(!rstos0_history("SAR"));
        assert!(!rstos0_history("DR"));
        assert!(!rstos0_history("S"));
    }

    #[test]
    fn uid_is_deterministic() {
        let mk = |port: u16, id: u64| FlowRecord {
            extra: crate::record::Extra {
                service: None,
                history: crate::record::History::new("S"),
                conn_id: id,
                vlan_key: 0,
                interim: false,
            },
            ..FlowRecord::for_test(port)
        };
        let a = uid(&mk(1000, 1));
        assert_eq!(a, uid(&mk(1000, 1)));
        assert_ne!(a, uid(&mk(1001, 1)));
        assert_ne!(a, uid(&mk(1000, 2)));
        assert_eq!(a.len(), 18);
        assert!(a.starts_with('C'));
        assert!(a[1..].bytes().all(|b| b.is_ascii_alphanumeric()));
        let l = line(&mk(1000, 1), Some("1:x="));
        assert_eq!(l.trim_end().split('\t').count(), 23);
        // No tunnel parent, then ip_proto and community_id.
        assert!(l.ends_with("\t-\t6\t1:x=\n"), "{l}");
        assert!(l.contains("\t-\t-\t-\tS0\t"), "{l}");
        // A tunnelled connection: another uid, and its tunnel's uid as parent.
        let t = FlowRecord {
            tunnel: Some("vxlan 10.0.0.1<->10.0.0.2 vni 5".into()),
            ..mk(1000, 1)
        };
        assert_ne!(uid(&t), a);
        let parent = tunnel_uid("vxlan 10.0.0.1<->10.0.0.2 vni 5");
        assert_ne!(parent, tunnel_uid("vxlan 10.0.0.1<->10.0.0.2 vni 6"));
        assert!(line(&t, None).ends_with(&format!("\t{parent}\t6\t-\n")));
    }

    #[test]
    fn log_times() {
        assert_eq!(log_time(0), "1970-01-01-00-00-00");
        assert_eq!(log_time(1_700_000_000), "2023-11-14-22-13-20");
        assert_eq!(log_time(951_782_400), "2000-02-29-00-00-00");
    }

    #[test]
    fn header_lines() {
        let h = header("2024-01-01-00-00-00");
        let lines: Vec<&str> = h.lines().collect();
        assert_eq!(lines[0], "#separator \\x09");
        assert_eq!(lines[1], "#set_separator\t,");
        assert_eq!(lines.len(), 8);
        assert_eq!(lines[6].split('\t').count(), 24);
        assert_eq!(lines[7].split('\t').count(), 24);
        assert!(lines[6].ends_with("\ttunnel_parents\tip_proto\tcommunity_id"));
        assert!(lines[7].ends_with("\tset[string]\tcount\tstring"));
    }
}
