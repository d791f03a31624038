//! Writing IPFIX messages: a header, then template and data sets, within a
//! size limit.

use super::ie::{self, FieldSpec};
use super::{IpfixFlow, HEADER_LEN, MAX_MESSAGE, SET_HEADER_LEN, TEMPLATE_SET, VERSION};
use std::net::{IpAddr, Ipv6Addr};

/// The smallest size limit accepted: room for the header and both
/// templates (300 bytes), so any message can be started with them.
pub const MIN_MESSAGE: usize = 512;

/// Builds one IPFIX message at a time into a buffer it owns (bounded by
/// its size limit, at most 65,535 bytes).
///
/// ```
/// use streamcap_apps::export::ipfix::{Decoder, MessageBuilder, IpfixFlow, DirCounts};
/// let flow = IpfixFlow {
///     src: "10.0.0.1".parse().unwrap(), dst: "10.0.0.2".parse().unwrap(),
///     src_port: 40000, dst_port: 80, proto: 6, vlan: 0,
///     start_ms: 1_700_000_000_000, end_ms: 1_700_000_000_250, end_reason: 3,
///     fwd: DirCounts { packets: 5, octets: 400, ..DirCounts::default() },
///     rev: DirCounts { packets: 4, octets: 3000, ..DirCounts::default() },
/// };
/// let mut m = MessageBuilder::new(7, 1400);
/// m.start(1_700_000_001, 0);
/// assert!(m.push_templates());
/// assert!(m.push(&flow));
/// let bytes = m.finish().to_vec();
/// let msg = Decoder::default().decode(&bytes).unwrap();
/// assert_eq!(msg.domain, 7);
/// assert_eq!(msg.flows(), vec![flow]);
/// ```
#[derive(Debug)]
pub struct MessageBuilder {
    buf: Vec<u8>,
    limit: usize,
    domain: u32,
    /// The open set: where its header starts, and its id.
    set: Option<(usize, u16)>,
    records: u32,
}

impl MessageBuilder {
    /// A builder of messages from observation domain `domain`, each at
    /// most `limit` bytes (clamped to [`MIN_MESSAGE`]..=65,535).
    pub fn new(domain: u32, limit: usize) -> MessageBuilder {
        let limit = limit.clamp(MIN_MESSAGE, MAX_MESSAGE);
        MessageBuilder {
            buf: Vec::with_capacity(limit),
            limit,
            domain,
            set: None,
            records: 0,
        }
    }

    /// The size limit.
    pub fn limit(&self) -> usize {
        self.limit
    }

    /// Starts a new message (dropping any unfinished one): `export_time`
    /// in seconds since the Unix epoch, `sequence` the count (mod 2^32) of
    /// data records sent before this message in the domain.
    pub fn start(&mut self, export_time: u32, sequence: u32) {
        self.buf.clear();
        self.buf.extend_from_slice(&VERSION.to_be_bytes());
        self.buf.extend_from_slice(&0u16.to_be_bytes()); // length, at finish
        self.buf.extend_from_slice(&export_time.to_be_bytes());
        self.buf.extend_from_slice(&sequence.to_be_bytes());
        self.buf.extend_from_slice(&self.domain.to_be_bytes());
        self.set = None;
        self.records = 0;
    }

    /// Data records in the message so far.
    pub fn records(&self) -> u32 {
        self.records
    }

    /// Whether the message holds no set yet.
    pub fn is_empty(&self) -> bool {
        self.buf.len() <= HEADER_LEN
    }

    /// Bytes in the message so far.
    pub fn len(&self) -> usize {
        self.buf.len()
    }

    /// Closes the open set, writing its length.
    fn close_set(&mut self) {
        if let Some((at, _)) = self.set.take() {
            let len = (self.buf.len() - at) as u16;
            self.buf[at + 2..at + 4].copy_from_slice(&len.to_be_bytes());
        }
    }

    /// Makes sure a set of `id` is open with room for `need` more bytes;
    /// false if the message has no room.
    fn open_set(&mut self, id: u16, need: usize) -> bool {
        let open = matches!(self.set, Some((_, s)) if s == id);
        let extra = if open { 0 } else { SET_HEADER_LEN };
        if self.buf.len() + extra + need > self.limit {
            return false;
        }
        if !open {
            self.close_set();
            self.set = Some((self.buf.len(), id));
            self.buf.extend_from_slice(&id.to_be_bytes());
            self.buf.extend_from_slice(&0u16.to_be_bytes());
        }
        true
    }

    /// Adds a template set with both templates (IPv4 and IPv6); false
    /// (and nothing added) if the message has no room for it.
    pub fn push_templates(&mut self) -> bool {
        let need = ie::template_len(&ie::FIELDS_V4) + ie::template_len(&ie::FIELDS_V6);
        if !self.open_set(TEMPLATE_SET, need) {
            return false;
        }
        for (id, fields) in [
            (ie::TEMPLATE_V4, &ie::FIELDS_V4),
            (ie::TEMPLATE_V6, &ie::FIELDS_V6),
        ] {
            self.buf.extend_from_slice(&id.to_be_bytes());
            self.buf
                .extend_from_slice(&(fields.len() as u16).to_be_bytes());
            for f in fields {
                put_spec(&mut self.buf, f);
            }
        }
        // Templates stand alone in their set.
        self.close_set();
        true
    }

    /// Adds `flow` as a data record (in the open data set of its template,
    /// or a new one); false (and nothing added) if the message has no room.
    pub fn push(&mut self, flow: &IpfixFlow) -> bool {
        let (id, len) = if flow.is_v6() {
            (ie::TEMPLATE_V6, ie::RECORD_LEN_V6)
        } else {
            (ie::TEMPLATE_V4, ie::RECORD_LEN_V4)
        };
        if !self.open_set(id, len) {
            return false;
        }
        let b = &mut self.buf;
        let start = b.len();
        match (flow.src, flow.dst) {
            (IpAddr::V4(s), IpAddr::V4(d)) => {
                b.extend_from_slice(&s.octets());
                b.extend_from_slice(&d.octets());
            }
            (s, d) => {
                b.extend_from_slice(&as_v6(s).octets());
                b.extend_from_slice(&as_v6(d).octets());
            }
        }
        b.extend_from_slice(&flow.src_port.to_be_bytes());
        b.extend_from_slice(&flow.dst_port.to_be_bytes());
        b.push(flow.proto);
        b.extend_from_slice(&flow.vlan.to_be_bytes());
        b.extend_from_slice(&flow.start_ms.to_be_bytes());
        b.extend_from_slice(&flow.end_ms.to_be_bytes());
        b.push(flow.end_reason);
        b.extend_from_slice(&flow.rev.tcp_flags.to_be_bytes());
        b.extend_from_slice(&flow.fwd.tcp_flags.to_be_bytes());
        for v in [
            flow.fwd.packets,
            flow.fwd.octets,
            flow.rev.packets,
            flow.rev.octets,
            flow.fwd.captured,
            flow.fwd.discarded,
            flow.fwd.dropped,
            flow.fwd.missing,
            flow.rev.captured,
            flow.rev.discarded,
            flow.rev.dropped,
            flow.rev.missing,
        ] {
            b.extend_from_slice(&v.to_be_bytes());
        }
        debug_assert_eq!(b.len() - start, len);
        self.records += 1;
        true
    }

    /// Ends the message (writes the lengths) and returns its bytes.
    pub fn finish(&mut self) -> &[u8] {
        self.close_set();
        let len = self.buf.len() as u16;
        if let Some(field) = self.buf.get_mut(2..4) {
            field.copy_from_slice(&len.to_be_bytes());
        }
        &self.buf
    }
}

/// An address as IPv6 (an IPv4 one mapped).
fn as_v6(a: IpAddr) -> Ipv6Addr {
    match a {
        IpAddr::V4(v4) => v4.to_ipv6_mapped(),
        IpAddr::V6(v6) => v6,
    }
}

/// Writes a field specifier: the element id (with the enterprise bit and
/// the PEN when it has one) and the length.
fn put_spec(b: &mut Vec<u8>, f: &FieldSpec) {
    let id = if f.pen == 0 { f.id } else { f.id | 0x8000 };
    b.extend_from_slice(&id.to_be_bytes());
    b.extend_from_slice(&f.len.to_be_bytes());
    if f.pen != 0 {
        b.extend_from_slice(&f.pen.to_be_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::super::{Decoder, DirCounts};
    use super::*;

    fn flow(i: u64, v6: bool) -> IpfixFlow {
        let (src, dst): (IpAddr, IpAddr) = if v6 {
            (
                "2001:db8::1".parse().unwrap(),
                "2001:db8::2".parse().unwrap(),
            )
        } else {
            ("10.0.0.1".parse().unwrap(), "10.0.0.2".parse().unwrap())
        };
        IpfixFlow {
            src,
            dst,
            src_port: i as u16,
            dst_port: 443,
            proto: 6,
            vlan: (i % 4096) as u16,
            start_ms: 1_700_000_000_000 + i,
            end_ms: 1_700_000_000_500 + i,
            end_reason: (i % 5 + 1) as u8,
            fwd: DirCounts {
                packets: i,
                octets: i * 100,
                tcp_flags: 0x13,
                captured: 1,
                discarded: 2,
                dropped: 3,
                missing: u64::MAX,
            },
            rev: DirCounts {
                packets: i + 1,
                ..DirCounts::default()
            },
        }
    }

    /// Records of both families, across several messages: each message
    /// within its limit, every record back in order, sets by template.
    #[test]
    fn messages_stay_within_their_limit_and_decode_back() {
        let mut m = MessageBuilder::new(3, 1400);
        let mut dec = Decoder::default();
        let flows: Vec<IpfixFlow> = (0..100).map(|i| flow(i, i % 3 == 0)).collect();
        let mut got = Vec::new();
        let mut seq = 0u32;
        let mut it = flows.iter().peekable();
        let mut first = true;
        while it.peek().is_some() {
            m.start(42, seq);
            if first {
                assert!(m.push_templates());
                first = false;
            }
            while let Some(f) = it.peek() {
                if !m.push(f) {
                    break;
                }
                it.next();
            }
            seq = seq.wrapping_add(m.records());
            let bytes = m.finish().to_vec();
            assert!(bytes.len() <= 1400);
            let msg = dec.decode(&bytes).expect("decodes");
            assert_eq!(msg.export_time, 42);
            got.extend(msg.flows());
        }
        assert_eq!(got, flows);
        assert_eq!(seq, 100);
    }

    /// An IPv4 address beside an IPv6 one: both exported as IPv6.
    #[test]
    fn mixed_families_go_out_as_ipv6() {
        let mut f = flow(1, false);
        f.dst = "2001:db8::9".parse().unwrap();
        let mut m = MessageBuilder::new(0, 0);
        assert_eq!(m.limit(), MIN_MESSAGE);
        m.start(0, 0);
        assert!(m.push_templates());
        assert!(m.push(&f));
        let msg = Decoder::default().decode(m.finish()).expect("decodes");
        let back = msg.flows()[0];
        assert_eq!(back.src, IpAddr::V6("::ffff:10.0.0.1".parse().unwrap()));
        assert_eq!(back.dst, f.dst);
    }
}
