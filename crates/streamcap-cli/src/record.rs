//! The flow record: one per connection, the JSON contract of
//! `docs/json-format.md`, built from the engine's [`FlowEnd`].

use crate::json::Staging;
use serde::Serialize;
use serde_json::value::RawValue;
use std::net::IpAddr;
use streamcap::deliver::{FlowEnd, StreamErrors, StreamInfo};
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
    /// The stream's priority for overload control when it ended.
    pub priority: u8,
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
            priority: info.params.priority,
            sha256: None,
            file: None,
        }
    }
}

/// The `end` of an interim record (`--active-timeout`): the connection is
/// still open, and its counters are those so far.
pub const INTERIM_END: &str = "active";

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
    /// Why it ended, or [`INTERIM_END`] for an interim record.
    pub end: &'static str,
    /// Error flags of both directions (written as a list of names).
    #[serde(serialize_with = "error_names")]
    pub errors: StreamErrors,
    /// The tunnels the connection came through, outermost first
    /// (`streamcap::flow::Tunnel`'s text); absent outside tunnels.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tunnel: Option<String>,
    /// The application protocol the classifier found (`--app`); absent
    /// when the run did not classify.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub app: Option<&'static str>,
    /// Not serialised: data for the zeek format.
    #[serde(skip)]
    pub extra: Extra,
}

/// The flags' names as a JSON list, in their fixed order.
fn error_names<S: serde::Serializer>(e: &StreamErrors, s: S) -> Result<S::Ok, S::Error> {
    s.collect_seq(e.names())
}

/// Fields only the zeek format needs.
#[derive(Clone, Debug, Default)]
pub struct Extra {
    /// Zeek-style history letters.
    pub history: History,
    /// Connection serial number.
    pub conn_id: u64,
    /// The folded VLAN key (for the uid).
    pub vlan_key: u32,
    /// Zeek's `service` name of the classifier's label.
    pub service: Option<&'static str>,
    /// An interim record of a connection still open at its active timeout
    /// (`end` is `"active"`), not its end.
    pub interim: bool,
}

/// Zeek-style history letters, kept inline (a record is built per
/// connection, so no allocation for them): at most [`History::CAPACITY`]
/// ASCII letters, which is what the engine renders.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct History {
    letters: [u8; History::CAPACITY],
    len: u8,
}

impl History {
    /// The most letters kept.
    pub const CAPACITY: usize = 16;

    /// The first [`CAPACITY`](Self::CAPACITY) letters of `text` (history
    /// letters are ASCII; anything else is cut at a character boundary).
    pub fn new(text: &str) -> History {
        let mut end = text.len().min(Self::CAPACITY);
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        let mut letters = [0; Self::CAPACITY];
        letters[..end].copy_from_slice(&text.as_bytes()[..end]);
        History {
            letters,
            len: end as u8,
        }
    }

    /// The letters.
    pub fn as_str(&self) -> &str {
        std::str::from_utf8(&self.letters[..usize::from(self.len)]).unwrap_or_default()
    }
}

impl FlowRecord {
    /// Builds the record of an ended connection (no digest, no files).
    pub fn from_flow<S>(fe: &FlowEnd<'_, S>) -> FlowRecord {
        let (src_ip, src_port) = fe.orig_endpoint();
        let (dst_ip, dst_port) = fe.resp_endpoint();
        let o = fe.stream(Direction::Orig);
        let r = fe.stream(Direction::Resp);
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
            end: if fe.is_update() {
                INTERIM_END
            } else {
                fe.end_reason().name()
            },
            errors: o.errors.union(r.errors),
            tunnel: fe.key().tunnel().map(|t| t.to_string()),
            app: None,
            extra: Extra {
                history: History::new(fe.history()),
                conn_id: o.conn_id,
                vlan_key: fe.key().vlan_key(),
                service: None,
                interim: fe.is_update(),
            },
        }
    }

    /// The record as one line of JSON (no newline), by serde, with
    /// `community_id` appended as [`write_json`] writes it.
    #[cfg(test)]
    pub fn to_json(&self, community_id: Option<&str>) -> String {
        let mut j =
            serde_json::to_string(self).unwrap_or_else(|e| format!("{{\"error\":\"{e}\"}}"));
        j.pop();
        let cid = serde_json::to_string(&community_id).unwrap_or_default();
        format!("{j},\"community_id\":{cid}}}")
    }
}

/// Writes `r` as one JSON object (no newline) into `out`: byte for byte what
/// `serde_json::to_writer(out, r)` writes (a test checks it on many records),
/// several times faster, which matters in `flows` mode, where formatting
/// records was the largest cost after the engine itself (and under a SYN
/// flood, where every packet makes a record). Text is gathered in a small
/// stack buffer ([`Staging`]) and numbers are written digit by digit into it,
/// so a record costs one copy into `out` instead of some sixty short ones.
///
/// `community_id` (`null` when `None`) is the last field.
pub fn write_json(r: &FlowRecord, community_id: Option<&str>, out: &mut Vec<u8>) {
    let mut w = Staging::new(out);
    w.put(b"{\"ts\":");
    put_ts(&mut w, r.ts);
    w.put(b",\"last_ts\":");
    put_ts(&mut w, r.last_ts);
    w.put(b",\"proto\":");
    match r.proto.name() {
        Some(n) => w.plain_str(n),
        None => w.num(u64::from(r.proto.0)),
    }
    w.put(b",\"src_ip\":");
    w.ip(r.src_ip);
    w.put(b",\"src_port\":");
    w.num(u64::from(r.src_port));
    w.put(b",\"dst_ip\":");
    w.ip(r.dst_ip);
    w.put(b",\"dst_port\":");
    w.num(u64::from(r.dst_port));
    w.put(b",\"vlan\":");
    match r.vlan {
        Some(v) => w.num(u64::from(v)),
        None => w.put(b"null"),
    }
    w.put(b",\"orig\":");
    put_dir(&mut w, &r.orig);
    w.put(b",\"resp\":");
    put_dir(&mut w, &r.resp);
    w.put(b",\"end\":");
    // End reasons and error names are the library's fixed identifiers.
    w.plain_str(r.end);
    w.put(b",\"errors\":[");
    for (i, e) in r.errors.names().enumerate() {
        if i > 0 {
            w.put(b",");
        }
        w.plain_str(e);
    }
    w.put(b"]");
    if let Some(t) = &r.tunnel {
        w.put(b",\"tunnel\":");
        w.str(t);
    }
    if let Some(a) = r.app {
        w.put(b",\"app\":");
        // Labels are the classifier's fixed lowercase names.
        w.plain_str(a);
    }
    w.put(b",\"community_id\":");
    // "1:" and base64: nothing to escape.
    match community_id {
        Some(c) => w.plain_str(c),
        None => w.put(b"null"),
    }
    w.put(b"}");
    w.flush();
}

/// Seconds with exactly six decimals.
fn put_ts(w: &mut Staging<'_>, ts: Ts) {
    w.num(ts.0.secs());
    w.put(b".");
    // Microseconds (< 10^6), truncated from the nanoseconds.
    w.zero_padded(u64::from((ts.0.subsec_nanos() / 1000).min(999_999)), 6);
}

/// One direction's object.
fn put_dir(w: &mut Staging<'_>, d: &DirRecord) {
    w.put(b"{\"pkts\":");
    w.num(d.pkts);
    w.put(b",\"bytes\":");
    w.num(d.bytes);
    if d.stream_bytes | d.captured | d.discarded | d.dropped | d.missing == 0 {
        // No payload (a SYN, a scan, an unanswered direction): the most
        // common record under a flood, written in one copy.
        w.put(b",\"stream_bytes\":0,\"captured\":0,\"discarded\":0,\"dropped\":0,\"missing\":0");
    } else {
        w.put(b",\"stream_bytes\":");
        w.num(d.stream_bytes);
        w.put(b",\"captured\":");
        w.num(d.captured);
        w.put(b",\"discarded\":");
        w.num(d.discarded);
        w.put(b",\"dropped\":");
        w.num(d.dropped);
        w.put(b",\"missing\":");
        w.num(d.missing);
    }
    w.put(b",\"sha256\":");
    put_opt_str(w, d.sha256.as_deref());
    if let Some(file) = &d.file {
        w.put(b",\"file\":");
        put_opt_str(w, file.as_deref());
    }
    w.put(b",\"priority\":");
    w.num(u64::from(d.priority));
    w.put(b"}");
}

fn put_opt_str(w: &mut Staging<'_>, s: Option<&str>) {
    match s {
        Some(s) => w.str(s),
        None => w.put(b"null"),
    }
}

impl FlowRecord {
    /// A record of no packets, TCP between unspecified addresses at time
    /// 0, ended by the end of input: what a description of the record's
    /// fields (the Parquet schema) is made from.
    pub fn placeholder() -> FlowRecord {
        let d = DirRecord {
            pkts: 0,
            bytes: 0,
            stream_bytes: 0,
            captured: 0,
            discarded: 0,
            dropped: 0,
            missing: 0,
            priority: 0,
            sha256: None,
            file: None,
        };
        FlowRecord {
            ts: Ts(Timestamp::from_secs_nanos(0, 0)),
            last_ts: Ts(Timestamp::from_secs_nanos(0, 0)),
            proto: Proto(6),
            src_ip: IpAddr::from([0, 0, 0, 0]),
            src_port: 0,
            dst_ip: IpAddr::from([0, 0, 0, 0]),
            dst_port: 0,
            vlan: None,
            orig: d.clone(),
            resp: d,
            end: "eof",
            errors: StreamErrors::default(),
            tunnel: None,
            app: None,
            extra: Extra::default(),
        }
    }
}

#[cfg(test)]
impl FlowRecord {
    /// A test record: TCP from 10.0.0.1:`src_port` to 10.0.0.2:80 at
    /// 100.000000007, no packets, ended by the end of input.
    pub(crate) fn for_test(src_port: u16) -> FlowRecord {
        FlowRecord {
            ts: Ts(Timestamp::from_secs_nanos(100, 7)),
            last_ts: Ts(Timestamp::from_secs_nanos(100, 7)),
            src_ip: IpAddr::from([10, 0, 0, 1]),
            src_port,
            dst_ip: IpAddr::from([10, 0, 0, 2]),
            dst_port: 80,
            ..FlowRecord::placeholder()
        }
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
            priority: 0,
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
            errors: StreamErrors::GAP,
            tunnel: None,
            app: None,
            extra: Extra::default(),
        };
        let j = r.to_json(None);
        assert!(
            j.starts_with(r#"{"ts":1.000000,"last_ts":2.500000,"proto":"tcp","src_ip":"10.0.0.1""#),
            "{j}"
        );
        assert!(j.contains(r#""sha256":null,"priority":0}"#), "{j}");
        assert!(
            j.contains(r#""sha256":null,"file":null,"priority":0}"#),
            "{j}"
        );
        assert!(
            j.ends_with(r#""errors":["gap"],"community_id":null}"#),
            "{j}"
        );
        let v: serde_json::Value = serde_json::from_str(&j).unwrap();
        assert_eq!(v["errors"][0], "gap");
        assert_eq!(Proto(132).text(), "132");
        assert_eq!(serde_json::to_string(&Proto(132)).unwrap(), "132");
        assert_eq!(serde_json::to_string(&Proto(58)).unwrap(), "\"icmp6\"");
    }

    #[test]
    fn history_is_kept_inline() {
        assert_eq!(History::new("ShADadFf").as_str(), "ShADadFf");
        assert_eq!(History::default().as_str(), "");
        assert_eq!(History::new(&"x".repeat(40)).as_str(), "x".repeat(16));
        // Cut at a character boundary, never inside one.
        assert_eq!(
            History::new("abcdefghijklmno\u{e9}").as_str(),
            "abcdefghijklmno"
        );
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
            "a-file-name-longer-than-the-staging-buffer-",
        ];
        let long = names[5].repeat(20);
        let names = [names[0], names[1], names[2], names[3], names[4], &long];
        for i in 0..2000u64 {
            let dir = |n: &mut dyn FnMut() -> u64| {
                let mut d = DirRecord {
                    pkts: n() % 1000,
                    bytes: n(),
                    stream_bytes: n() >> (n() % 64),
                    captured: n() % 7,
                    discarded: 0,
                    dropped: n() % 100_000,
                    missing: u64::MAX,
                    priority: (n() % 256) as u8,
                    sha256: (n() % 2 == 0).then(|| format!("{:064x}", n())),
                    file: match n() % 3 {
                        0 => None,
                        1 => Some(None),
                        _ => Some(Some(names[(n() % 6) as usize].to_string())),
                    },
                };
                if n() % 3 == 0 {
                    // No payload (the writer's shortcut), or one counter set.
                    let counters = [
                        &mut d.stream_bytes,
                        &mut d.captured,
                        &mut d.discarded,
                        &mut d.dropped,
                        &mut d.missing,
                    ];
                    let set = (n() % 10) as usize;
                    for (k, c) in counters.into_iter().enumerate() {
                        *c = if k == set { 1 + n() % 9 } else { 0 };
                    }
                }
                d
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
                    // Every count of microsecond digits.
                    (next() % 1_000_000_000) >> (next() % 30),
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
                errors: StreamErrors(next() as u16),
                tunnel: (next() % 3 == 0).then(|| {
                    format!(
                        "vxlan 10.0.0.1<->10.0.0.{} vni {}",
                        next() % 256,
                        next() % 99
                    )
                }),
                app: (next() % 2 == 0).then_some("http"),
                extra: Extra::default(),
            };
            let cid = crate::community_id::of_record(&r, i as u16);
            let cid = cid.as_ref().map(crate::community_id::CommunityId::as_str);
            let mut fast = Vec::new();
            write_json(&r, cid, &mut fast);
            assert_eq!(String::from_utf8_lossy(&fast), r.to_json(cid));
        }
    }
}
