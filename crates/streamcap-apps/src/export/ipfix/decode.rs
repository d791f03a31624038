//! Reading IPFIX messages back: templates (kept per observation domain)
//! and data records of any template, for tests, the fuzz target and tools.
//! Any input is safe: every length is checked, and what is kept is bounded
//! ([`MAX_TEMPLATES`]).

use super::ie::{self, iana, FieldSpec, REVERSE_BIT, REVERSE_PEN, STREAMCAP_PEN, VARIABLE_LENGTH};
use super::{
    DirCounts, IpfixFlow, HEADER_LEN, OPTIONS_TEMPLATE_SET, SET_HEADER_LEN, TEMPLATE_SET, VERSION,
};
use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// Templates kept at most (over all domains); more are refused.
pub const MAX_TEMPLATES: usize = 4096;

/// Why a message could not be read.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    /// Fewer bytes than the header or a length says.
    #[error("truncated message: {0}")]
    Truncated(&'static str),
    /// Not IPFIX.
    #[error("version {0}, not 10")]
    Version(u16),
    /// A set or template that breaks RFC 7011's rules.
    #[error("malformed: {0}")]
    Malformed(&'static str),
    /// More templates than [`MAX_TEMPLATES`].
    #[error("more than {MAX_TEMPLATES} templates")]
    TooManyTemplates,
}

/// One data record: its template and each field's bytes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Record {
    /// The template (set) id.
    pub template: u16,
    /// The fields in template order: specifier and value.
    pub fields: Vec<(FieldSpec, Vec<u8>)>,
}

/// A decoded message.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Message {
    /// Export time, seconds since the Unix epoch.
    pub export_time: u32,
    /// Data records sent in the domain before this message (mod 2^32).
    pub sequence: u32,
    /// The observation domain.
    pub domain: u32,
    /// Templates the message defined (id and fields), in order; a
    /// withdrawal has no fields.
    pub templates: Vec<(u16, Vec<FieldSpec>)>,
    /// Its data records, in order.
    pub records: Vec<Record>,
    /// Data sets skipped for want of their template.
    pub unknown_sets: u32,
}

impl Message {
    /// The data records that are streamcap flows ([`Record::flow`]).
    pub fn flows(&self) -> Vec<IpfixFlow> {
        self.records.iter().filter_map(Record::flow).collect()
    }
}

/// An unsigned number of 1 to 8 bytes (reduced-size encoding), big-endian.
fn unsigned(v: &[u8]) -> Option<u64> {
    if v.is_empty() || v.len() > 8 {
        return None;
    }
    Some(v.iter().fold(0u64, |n, &b| n << 8 | u64::from(b)))
}

impl Record {
    /// The value of element `id` of `pen`, if the record has it.
    pub fn get(&self, pen: u32, id: u16) -> Option<&[u8]> {
        self.fields
            .iter()
            .find(|(f, _)| f.pen == pen && f.id == id)
            .map(|(_, v)| v.as_slice())
    }

    /// The unsigned value of element `id` of `pen`.
    pub fn number(&self, pen: u32, id: u16) -> Option<u64> {
        self.get(pen, id).and_then(unsigned)
    }

    /// The record as a streamcap flow: it needs the addresses, ports,
    /// protocol and times; counters and flags absent are 0.
    pub fn flow(&self) -> Option<IpfixFlow> {
        let addr = |v4: u16, v6: u16| -> Option<IpAddr> {
            if let Some(v) = self.get(0, v4) {
                let o: [u8; 4] = v.try_into().ok()?;
                return Some(IpAddr::V4(Ipv4Addr::from(o)));
            }
            let o: [u8; 16] = self.get(0, v6)?.try_into().ok()?;
            Some(IpAddr::V6(Ipv6Addr::from(o)))
        };
        let n = |pen: u32, id: u16| self.number(pen, id).unwrap_or(0);
        let own = |id: u16| n(STREAMCAP_PEN, id);
        use ie::streamcap::*;
        Some(IpfixFlow {
            src: addr(iana::SOURCE_IPV4_ADDRESS, iana::SOURCE_IPV6_ADDRESS)?,
            dst: addr(
                iana::DESTINATION_IPV4_ADDRESS,
                iana::DESTINATION_IPV6_ADDRESS,
            )?,
            src_port: self.number(0, iana::SOURCE_TRANSPORT_PORT)? as u16,
            dst_port: self.number(0, iana::DESTINATION_TRANSPORT_PORT)? as u16,
            proto: self.number(0, iana::PROTOCOL_IDENTIFIER)? as u8,
            vlan: n(0, iana::VLAN_ID) as u16,
            start_ms: self.number(0, iana::FLOW_START_MILLISECONDS)?,
            end_ms: self.number(0, iana::FLOW_END_MILLISECONDS)?,
            end_reason: n(0, iana::FLOW_END_REASON) as u8,
            fwd: DirCounts {
                packets: n(0, iana::PACKET_DELTA_COUNT),
                octets: n(0, iana::OCTET_DELTA_COUNT),
                tcp_flags: n(0, iana::TCP_CONTROL_BITS) as u16,
                captured: own(CAPTURED_OCTETS),
                discarded: own(DISCARDED_OCTETS),
                dropped: own(DROPPED_OCTETS),
                missing: own(MISSING_OCTETS),
            },
            rev: DirCounts {
                packets: n(REVERSE_PEN, iana::PACKET_DELTA_COUNT),
                octets: n(REVERSE_PEN, iana::OCTET_DELTA_COUNT),
                tcp_flags: n(REVERSE_PEN, iana::TCP_CONTROL_BITS) as u16,
                captured: own(CAPTURED_OCTETS | REVERSE_BIT),
                discarded: own(DISCARDED_OCTETS | REVERSE_BIT),
                dropped: own(DROPPED_OCTETS | REVERSE_BIT),
                missing: own(MISSING_OCTETS | REVERSE_BIT),
            },
        })
    }
}

/// A reader of IPFIX messages that keeps the templates they define
/// (per observation domain), as a collector does for one transport
/// session.
#[derive(Debug, Default)]
pub struct Decoder {
    templates: HashMap<(u32, u16), Vec<FieldSpec>>,
}

/// A bounds-checked reader over a byte slice.
struct Cursor<'a> {
    b: &'a [u8],
    at: usize,
}

impl<'a> Cursor<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let end = self.at.checked_add(n)?;
        let s = self.b.get(self.at..end)?;
        self.at = end;
        Some(s)
    }
    fn u8(&mut self) -> Option<u8> {
        self.take(1).map(|s| s[0])
    }
    fn u16(&mut self) -> Option<u16> {
        self.take(2).map(|s| u16::from_be_bytes([s[0], s[1]]))
    }
    fn u32(&mut self) -> Option<u32> {
        self.take(4)
            .map(|s| u32::from_be_bytes([s[0], s[1], s[2], s[3]]))
    }
    fn left(&self) -> usize {
        self.b.len().saturating_sub(self.at)
    }
}

/// The length of the message at the start of `bytes` (from its header),
/// if the header is there: to split a stream or a file of messages.
pub fn message_len(bytes: &[u8]) -> Option<usize> {
    let l = bytes.get(2..4)?;
    Some(usize::from(u16::from_be_bytes([l[0], l[1]])))
}

impl Decoder {
    /// The templates known, by (domain, id).
    pub fn templates(&self) -> &HashMap<(u32, u16), Vec<FieldSpec>> {
        &self.templates
    }

    /// Reads one whole message (`bytes` is exactly the message).
    pub fn decode(&mut self, bytes: &[u8]) -> Result<Message, DecodeError> {
        let mut c = Cursor { b: bytes, at: 0 };
        let short = DecodeError::Truncated("header");
        let version = c.u16().ok_or(short.clone())?;
        if version != VERSION {
            return Err(DecodeError::Version(version));
        }
        let len = usize::from(c.u16().ok_or(short.clone())?);
        let mut msg = Message {
            export_time: c.u32().ok_or(short.clone())?,
            sequence: c.u32().ok_or(short.clone())?,
            domain: c.u32().ok_or(short)?,
            ..Message::default()
        };
        if len < HEADER_LEN || len > bytes.len() {
            return Err(DecodeError::Truncated("message length"));
        }
        if len != bytes.len() {
            return Err(DecodeError::Malformed("bytes after the message"));
        }
        while c.left() > 0 {
            let set_id = c.u16().ok_or(DecodeError::Truncated("set header"))?;
            let set_len = usize::from(c.u16().ok_or(DecodeError::Truncated("set header"))?);
            if set_len < SET_HEADER_LEN {
                return Err(DecodeError::Malformed("set shorter than its header"));
            }
            let body = c
                .take(set_len - SET_HEADER_LEN)
                .ok_or(DecodeError::Truncated("set"))?;
            match set_id {
                TEMPLATE_SET => self.templates_set(msg.domain, body, false, &mut msg)?,
                OPTIONS_TEMPLATE_SET => self.templates_set(msg.domain, body, true, &mut msg)?,
                0..=255 => return Err(DecodeError::Malformed("reserved set id")),
                id => match self.templates.get(&(msg.domain, id)) {
                    Some(fields) => data_set(id, fields, body, &mut msg.records)?,
                    None => msg.unknown_sets += 1,
                },
            }
        }
        Ok(msg)
    }

    /// Reads a (options) template set: each template is kept, replacing
    /// one of the same id; a template of no field withdraws it.
    fn templates_set(
        &mut self,
        domain: u32,
        body: &[u8],
        options: bool,
        msg: &mut Message,
    ) -> Result<(), DecodeError> {
        let mut c = Cursor { b: body, at: 0 };
        // A record header is at least 4 bytes (6 for options); less is padding.
        let min = if options { 6 } else { 4 };
        while c.left() >= min {
            let bad = DecodeError::Truncated("template");
            let id = c.u16().ok_or(bad.clone())?;
            let count = c.u16().ok_or(bad.clone())?;
            if options && count > 0 {
                c.u16().ok_or(bad.clone())?; // scope field count
            }
            if id < 256 {
                return Err(DecodeError::Malformed("template id below 256"));
            }
            let mut fields = Vec::with_capacity(usize::from(count).min(c.left() / 4));
            for _ in 0..count {
                let raw = c.u16().ok_or(bad.clone())?;
                let len = c.u16().ok_or(bad.clone())?;
                let pen = if raw & 0x8000 != 0 {
                    c.u32().ok_or(bad.clone())?
                } else {
                    0
                };
                fields.push(FieldSpec {
                    id: raw & 0x7fff,
                    len,
                    pen,
                });
            }
            if fields.is_empty() {
                self.templates.remove(&(domain, id));
            } else {
                if !self.templates.contains_key(&(domain, id))
                    && self.templates.len() >= MAX_TEMPLATES
                {
                    return Err(DecodeError::TooManyTemplates);
                }
                self.templates.insert((domain, id), fields.clone());
            }
            msg.templates.push((id, fields));
        }
        Ok(())
    }
}

/// Reads the records of a data set of template `id`; what is left after
/// the last whole record (less than a record) is padding.
fn data_set(
    id: u16,
    fields: &[FieldSpec],
    body: &[u8],
    out: &mut Vec<Record>,
) -> Result<(), DecodeError> {
    // The least a record can take: a variable-length field takes at least
    // its length byte.
    let min: usize = fields
        .iter()
        .map(|f| {
            if f.len == VARIABLE_LENGTH {
                1
            } else {
                usize::from(f.len)
            }
        })
        .sum();
    if min == 0 {
        // Records of no bytes: nothing to read (and no end to them).
        return Ok(());
    }
    let mut c = Cursor { b: body, at: 0 };
    while c.left() >= min {
        let mut values = Vec::with_capacity(fields.len());
        for f in fields {
            let bad = DecodeError::Truncated("data record");
            let len = if f.len == VARIABLE_LENGTH {
                match c.u8().ok_or(bad.clone())? {
                    255 => usize::from(c.u16().ok_or(bad.clone())?),
                    n => usize::from(n),
                }
            } else {
                usize::from(f.len)
            };
            values.push((*f, c.take(len).ok_or(bad)?.to_vec()));
        }
        out.push(Record {
            template: id,
            fields: values,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rejects_what_is_not_a_message() {
        let mut d = Decoder::default();
        assert_eq!(d.decode(&[]), Err(DecodeError::Truncated("header")));
        assert_eq!(d.decode(&[0, 9, 0, 16]), Err(DecodeError::Version(9)));
        let mut m = vec![0, 10, 0, 20];
        m.extend_from_slice(&[0; 12]);
        assert!(d.decode(&m).is_err(), "length past the end");
        m.extend_from_slice(&[1, 0, 0, 2]);
        assert_eq!(
            d.decode(&m),
            Err(DecodeError::Malformed("set shorter than its header"))
        );
    }

    /// A data set before its template is skipped and counted; a template
    /// of no field withdraws it; reduced-size and variable-length fields
    /// read back.
    #[test]
    fn templates_come_and_go() {
        let mut d = Decoder::default();
        let msg = |sets: &[u8]| {
            let mut m = vec![0, 10];
            m.extend_from_slice(&((16 + sets.len()) as u16).to_be_bytes());
            m.extend_from_slice(&[0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 5]);
            m.extend_from_slice(sets);
            m
        };
        // Data set 300 (one record: a 2-byte port, a variable-length field).
        let data = [1, 44, 0, 10, 0, 80, 3, b'a', b'b', b'c'];
        let m = d.decode(&msg(&data)).expect("decodes");
        assert_eq!((m.unknown_sets, m.records.len()), (1, 0));
        // Template 300: destinationTransportPort (2), an enterprise field of
        // variable length.
        let tpl = [
            0, 2, 0, 20, 1, 44, 0, 2, 0, 11, 0, 2, 0x80, 9, 0xff, 0xff, 0, 0, 0, 7,
        ];
        let mut both = tpl.to_vec();
        both.extend_from_slice(&data);
        let m = d.decode(&msg(&both)).expect("decodes");
        assert_eq!(m.domain, 5);
        assert_eq!(m.records.len(), 1);
        assert_eq!(m.records[0].number(0, 11), Some(80));
        assert_eq!(m.records[0].get(7, 9), Some(&b"abc"[..]));
        // Withdrawn: the data set is unknown again.
        let mut gone = vec![0, 2, 0, 8, 1, 44, 0, 0];
        gone.extend_from_slice(&data);
        let m = d.decode(&msg(&gone)).expect("decodes");
        assert_eq!((m.unknown_sets, m.records.len()), (1, 0));
        assert!(d.templates().is_empty());
    }
}
