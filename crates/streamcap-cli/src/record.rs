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

/// Writes `r` as one JSON object (no newline) into `out`: byte for byte what
/// `serde_json::to_writer(out, r)` writes (a test checks it on many records),
/// about five times faster, which matters in `flows` mode, where formatting
/// records was the largest cost after the engine itself.
pub fn write_json(r: &FlowRecord, out: &mut Vec<u8>) {
    let mut num = itoa::Buffer::new();
    out.extend_from_slice(b"{\"ts\":");
    write_ts(r.ts, out, &mut num);
    out.extend_from_slice(b",\"last_ts\":");
    write_ts(r.last_ts, out, &mut num);
    out.extend_from_slice(b",\"proto\":");
    match r.proto.name() {
        Some(n) => {
            out.push(b'"');
            out.extend_from_slice(n.as_bytes());
            out.push(b'"');
        }
        None => out.extend_from_slice(num.format(r.proto.0).as_bytes()),
    }
    out.extend_from_slice(b",\"src_ip\":");
    write_ip(r.src_ip, out, &mut num);
    out.extend_from_slice(b",\"src_port\":");
    out.extend_from_slice(num.format(r.src_port).as_bytes());
    out.extend_from_slice(b",\"dst_ip\":");
    write_ip(r.dst_ip, out, &mut num);
    out.extend_from_slice(b",\"dst_port\":");
    out.extend_from_slice(num.format(r.dst_port).as_bytes());
    out.extend_from_slice(b",\"vlan\":");
    match r.vlan {
        Some(v) => out.extend_from_slice(num.format(v).as_bytes()),
        None => out.extend_from_slice(b"null"),
    }
    out.extend_from_slice(b",\"orig\":");
    write_dir(&r.orig, out, &mut num);
    out.extend_from_slice(b",\"resp\":");
    write_dir(&r.resp, out, &mut num);
    out.extend_from_slice(b",\"end\":");
    write_str(r.end, out);
    out.extend_from_slice(b",\"errors\":[");
    for (i, e) in r.errors.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        write_str(e, out);
    }
    out.extend_from_slice(b"]}");
}

fn write_ts(ts: Ts, out: &mut Vec<u8>, num: &mut itoa::Buffer) {
    out.extend_from_slice(num.format(ts.0.secs()).as_bytes());
    out.push(b'.');
    let micros = num.format(ts.0.subsec_nanos() / 1000);
    out.extend(std::iter::repeat_n(b'0', 6 - micros.len().min(6)));
    out.extend_from_slice(micros.as_bytes());
}

fn write_ip(ip: IpAddr, out: &mut Vec<u8>, num: &mut itoa::Buffer) {
    out.push(b'"');
    match ip {
        IpAddr::V4(v4) => {
            for (i, o) in v4.octets().into_iter().enumerate() {
                if i > 0 {
                    out.push(b'.');
                }
                out.extend_from_slice(num.format(o).as_bytes());
            }
        }
        IpAddr::V6(v6) => {
            use std::io::Write;
            // Writing to a Vec cannot fail.
            let _ = write!(out, "{v6}");
        }
    }
    out.push(b'"');
}

fn write_dir(d: &DirRecord, out: &mut Vec<u8>, num: &mut itoa::Buffer) {
    let fields: [(&[u8], u64); 7] = [
        (b"{\"pkts\":", d.pkts),
        (b",\"bytes\":", d.bytes),
        (b",\"stream_bytes\":", d.stream_bytes),
        (b",\"captured\":", d.captured),
        (b",\"discarded\":", d.discarded),
        (b",\"dropped\":", d.dropped),
        (b",\"missing\":", d.missing),
    ];
    for (name, v) in fields {
        out.extend_from_slice(name);
        out.extend_from_slice(num.format(v).as_bytes());
    }
    out.extend_from_slice(b",\"sha256\":");
    write_opt_str(d.sha256.as_deref(), out);
    if let Some(file) = &d.file {
        out.extend_from_slice(b",\"file\":");
        write_opt_str(file.as_deref(), out);
    }
    out.push(b'}');
}

fn write_opt_str(s: Option<&str>, out: &mut Vec<u8>) {
    match s {
        Some(s) => write_str(s, out),
        None => out.extend_from_slice(b"null"),
    }
}

/// A JSON string, escaped as serde_json escapes it.
fn write_str(s: &str, out: &mut Vec<u8>) {
    if s.bytes().all(|b| b >= 0x20 && b != b'"' && b != b'\\') {
        out.push(b'"');
        out.extend_from_slice(s.as_bytes());
        out.push(b'"');
    } else {
        // Rare (file names are ASCII without quotes): let serde_json escape it.
        let _ = serde_json::to_writer(&mut *out, s);
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

    /// The hand-written writer produces exactly serde's bytes.
    #[test]
    fn fast_json_equals_serde() {
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let names = [
            "a",
            "q\"uote",
            "back\\slash",
            "ctl\u{1}",
            "010.000.000.001.00080-x",
        ];
        for i in 0..2000u64 {
            let dir = |n: &mut dyn FnMut() -> u64| DirRecord {
                pkts: n() % 1000,
                bytes: n(),
                stream_bytes: n() >> (n() % 64),
                captured: n() % 7,
                discarded: 0,
                dropped: n() % 100_000,
                missing: u64::MAX,
                sha256: (n() % 2 == 0).then(|| format!("{:064x}", n())),
                file: match n() % 3 {
                    0 => None,
                    1 => Some(None),
                    _ => Some(Some(names[(n() % 5) as usize].to_string())),
                },
            };
            let v6 = next() % 2 == 0;
            let ip = |n: u64| -> IpAddr {
                if v6 {
                    IpAddr::V6(std::net::Ipv6Addr::from(u128::from(n) << (n % 96)))
                } else {
                    IpAddr::V4(std::net::Ipv4Addr::from(n as u32))
                }
            };
            let r = FlowRecord {
                ts: Ts(Timestamp::from_secs_nanos(
                    next() % 4_000_000_000,
                    next() % 1_000_000_000,
                )),
                last_ts: Ts(Timestamp::from_secs_nanos(i, (i * 7919) % 1_000_000_000)),
                proto: Proto((next() % 256) as u8),
                src_ip: ip(next()),
                src_port: next() as u16,
                dst_ip: ip(next()),
                dst_port: next() as u16,
                vlan: (next() % 2 == 0).then(|| (next() % 4096) as u16),
                orig: dir(&mut next),
                resp: dir(&mut next),
                end: ["fin", "rst", "timeout", "eof", "evicted"][(i % 5) as usize],
                errors: ["gap", "no_handshake", "bad_seq"][..(i % 4) as usize].to_vec(),
                extra: Extra::default(),
            };
            let mut fast = Vec::new();
            write_json(&r, &mut fast);
            assert_eq!(String::from_utf8_lossy(&fast), r.to_json());
        }
    }
}
