//! The flow record: one per connection, the JSON contract of
//! `docs/json-format.md`, built from the engine's [`FlowEnd`].

use serde::Serialize;
use serde_json::value::RawValue;
use std::net::IpAddr;
use streamcap::deliver::{FlowEnd, StreamInfo};
use streamcap::flow::Direction;
use streamcap::Timestamp;

/// A timestamp printed as seconds with exactly 6 decimals (microseconds,
/// truncated from the capture's nanoseconds).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Ts(pub Timestamp);

impl Ts {
    /// `secs.micros`.
    pub fn text(self) -> String {
        format!("{}.{:06}", self.0.secs(), self.0.subsec_nanos() / 1000)
    }
}

impl Serialize for Ts {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let raw = RawValue::from_string(self.text()).map_err(serde::ser::Error::custom)?;
        raw.serialize(s)
    }
}

/// The transport protocol: a name for the common ones, else the number.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Proto(pub u8);

impl Proto {
    /// "tcp", "udp", "icmp", "icmp6", or None.
    pub fn name(self) -> Option<&'static str> {
        match self.0 {
            6 => Some("tcp"),
            17 => Some("udp"),
            1 => Some("icmp"),
            58 => Some("icmp6"),
            _ => None,
        }
    }
    /// The name or the number as text.
    pub fn text(self) -> String {
        self.name()
            .map_or_else(|| self.0.to_string(), str::to_string)
    }
}

impl Serialize for Proto {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self.name() {
            Some(n) => s.serialize_str(n),
            None => s.serialize_u8(self.0),
        }
    }
}

/// One direction of a flow.
#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
pub struct DirRecord {
    /// Packets.
    pub pkts: u64,
    /// IP-layer bytes.
    pub bytes: u64,
    /// Reassembled stream length.
    pub stream_bytes: u64,
    /// Bytes delivered.
    pub captured: u64,
    /// Bytes not delivered by decision (cutoff).
    pub discarded: u64,
    /// Bytes not delivered for lack of memory.
    pub dropped: u64,
    /// Bytes never seen.
    pub missing: u64,
    /// SHA-256 of the delivered bytes (`--digest`), else null.
    pub sha256: Option<String>,
    /// File of this direction's bytes (`streams -w` only; null when no bytes).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file: Option<Option<String>>,
}

impl DirRecord {
    /// From a stream descriptor.
    pub fn new(info: &StreamInfo) -> DirRecord {
        let c = &info.counters;
        DirRecord {
            pkts: c.pkts,
            bytes: c.bytes,
            stream_bytes: c.stream_bytes,
            captured: c.captured,
            discarded: c.discarded,
            dropped: c.dropped,
            missing: c.missing,
            sha256: None,
            file: None,
        }
    }
}

/// One connection.
#[derive(Clone, Debug, Serialize)]
pub struct FlowRecord {
    /// First packet.
    pub ts: Ts,
    /// Last packet.
    pub last_ts: Ts,
    /// Transport protocol.
    pub proto: Proto,
    /// Initiator address.
    pub src_ip: IpAddr,
    /// Initiator port.
    pub src_port: u16,
    /// Responder address.
    pub dst_ip: IpAddr,
    /// Responder port.
    pub dst_port: u16,
    /// Outer VLAN id.
    pub vlan: Option<u16>,
    /// From the initiator.
    pub orig: DirRecord,
    /// From the responder.
    pub resp: DirRecord,
    /// Why it ended.
    pub end: &'static str,
    /// Error flags of both directions.
    pub errors: Vec<&'static str>,
    /// Not serialised: data for the zeek format.
    #[serde(skip)]
    pub extra: Extra,
}

/// Fields only the zeek format needs.
#[derive(Clone, Debug, Default)]
pub struct Extra {
    /// Zeek-style history letters.
    pub history: String,
    /// Connection serial number.
    pub conn_id: u64,
    /// The folded VLAN key (for the uid).
    pub vlan_key: u32,
}

impl FlowRecord {
    /// Builds the record of an ended connection (no digest, no files).
    pub fn from_flow<S>(fe: &FlowEnd<'_, S>) -> FlowRecord {
        let (src_ip, src_port) = fe.orig_endpoint();
        let (dst_ip, dst_port) = fe.resp_endpoint();
        let o = fe.stream(Direction::Orig);
        let r = fe.stream(Direction::Resp);
        let mut errors: Vec<&'static str> = o.errors.union(r.errors).names().collect();
        errors.dedup();
        FlowRecord {
            ts: Ts(fe.first_ts()),
            last_ts: Ts(fe.last_ts()),
            proto: Proto(fe.proto()),
            src_ip,
            src_port,
            dst_ip,
            dst_port,
            vlan: fe.key().vlan(),
            orig: DirRecord::new(o),
            resp: DirRecord::new(r),
            end: fe.end_reason().name(),
            errors,
            extra: Extra {
                history: fe.history().to_string(),
                conn_id: o.conn_id,
                vlan_key: fe.key().vlan_key(),
            },
        }
    }

    /// The record as one line of JSON (no newline).
    #[cfg(test)]
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).unwrap_or_else(|e| format!("{{\"error\":\"{e}\"}}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_have_six_decimals() {
        assert_eq!(
            Ts(Timestamp::from_secs_nanos(12, 5_000)).text(),
            "12.000005"
        );
        assert_eq!(
            Ts(Timestamp::from_secs_nanos(1_700_000_000, 999_999_999)).text(),
            "1700000000.999999"
        );
        let d = DirRecord {
            pkts: 1,
            bytes: 2,
            stream_bytes: 3,
            captured: 3,
            discarded: 0,
            dropped: 0,
            missing: 0,
            sha256: None,
            file: None,
        };
        let r = FlowRecord {
            ts: Ts(Timestamp::from_secs_nanos(1, 0)),
            last_ts: Ts(Timestamp::from_secs_nanos(2, 500_000_000)),
            proto: Proto(6),
            src_ip: "10.0.0.1".parse().unwrap(),
            src_port: 1,
            dst_ip: "10.0.0.2".parse().unwrap(),
            dst_port: 2,
            vlan: None,
            orig: d.clone(),
            resp: DirRecord {
                file: Some(None),
                ..d
            },
            end: "fin",
            errors: vec!["gap"],
            extra: Extra::default(),
        };
        let j = r.to_json();
        assert!(
            j.starts_with(r#"{"ts":1.000000,"last_ts":2.500000,"proto":"tcp","src_ip":"10.0.0.1""#),
            "{j}"
        );
        assert!(j.contains(r#""sha256":null}"#), "{j}");
        assert!(j.contains(r#""sha256":null,"file":null}"#), "{j}");
        let v: serde_json::Value = serde_json::from_str(&j).unwrap();
        assert_eq!(v["errors"][0], "gap");
        assert_eq!(Proto(132).text(), "132");
        assert_eq!(serde_json::to_string(&Proto(132)).unwrap(), "132");
        assert_eq!(serde_json::to_string(&Proto(58)).unwrap(), "\"icmp6\"");
    }
}
