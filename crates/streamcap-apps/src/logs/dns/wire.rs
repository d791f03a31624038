//! The DNS wire format (RFC 1035 §4), read without allocating: the
//! header, names with compression pointers, questions and resource
//! records. Everything is bounds-checked; malformed input gives an error,
//! never a panic.
//!
//! Names follow Zeek's reader: a compression pointer must point before
//! itself (so no loop is possible), a label is at most 63 bytes (more is
//! allowed only for NetBIOS names, see [`NameLimits`]), and a name at most
//! [`MAX_NAME`] bytes written out. Names are written with `.` between
//! labels, no trailing dot, ASCII letters lowercased (the root is the empty
//! string).

/// Length of the fixed header.
pub const HEADER_LEN: usize = 12;

/// Most bytes of a name written out (Zeek's buffer holds 512).
pub const MAX_NAME: usize = 512;

/// Why a message could not be read further.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum WireError {
    /// The message ends inside a field.
    Truncated,
    /// A compression pointer that does not point before itself.
    ForwardPointer,
    /// A label longer than allowed, or of a reserved kind (`0x40`, `0x80`).
    BadLabel,
    /// A name longer than [`MAX_NAME`].
    NameTooLong,
}

/// The fixed header of a DNS message.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Header {
    /// Transaction id.
    pub id: u16,
    /// The flags word (QR, opcode, AA, TC, RD, RA, Z, rcode).
    pub flags: u16,
    /// Entries in the question section.
    pub qdcount: u16,
    /// Records in the answer section.
    pub ancount: u16,
    /// Records in the authority section.
    pub nscount: u16,
    /// Records in the additional section.
    pub arcount: u16,
}

impl Header {
    /// The header of `msg`, if it has 12 bytes.
    pub fn parse(msg: &[u8]) -> Option<Header> {
        let h = msg.get(..HEADER_LEN)?;
        let w = |i: usize| u16::from_be_bytes([h[i], h[i + 1]]);
        Some(Header {
            id: w(0),
            flags: w(2),
            qdcount: w(4),
            ancount: w(6),
            nscount: w(8),
            arcount: w(10),
        })
    }
    /// A response (QR set).
    pub fn qr(&self) -> bool {
        self.flags & 0x8000 != 0
    }
    /// The opcode (0 standard query, 1 inverse, 2 status, 4 notify, 5 update).
    pub fn opcode(&self) -> u8 {
        ((self.flags >> 11) & 0xf) as u8
    }
    /// Authoritative answer.
    pub fn aa(&self) -> bool {
        self.flags & 0x0400 != 0
    }
    /// Truncated.
    pub fn tc(&self) -> bool {
        self.flags & 0x0200 != 0
    }
    /// Recursion desired.
    pub fn rd(&self) -> bool {
        self.flags & 0x0100 != 0
    }
    /// Recursion available.
    pub fn ra(&self) -> bool {
        self.flags & 0x0080 != 0
    }
    /// The three bits between RA and rcode (Z, AD, CD), as Zeek's `Z`.
    pub fn z(&self) -> u8 {
        ((self.flags >> 4) & 0x7) as u8
    }
    /// The 4-bit response code.
    pub fn rcode(&self) -> u8 {
        (self.flags & 0xf) as u8
    }
    /// Records in the answer, authority and additional sections.
    pub fn records(&self) -> u32 {
        u32::from(self.ancount) + u32::from(self.nscount) + u32::from(self.arcount)
    }
}

/// How long a label may be.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum NameLimits {
    /// DNS: at most 63 bytes.
    Dns,
    /// NetBIOS name service (port 137): a label up to 255 bytes, as Zeek allows.
    NetBios,
}

fn u16_at(msg: &[u8], pos: usize) -> Result<u16, WireError> {
    match msg.get(pos..pos + 2) {
        Some(b) => Ok(u16::from_be_bytes([b[0], b[1]])),
        None => Err(WireError::Truncated),
    }
}

fn u32_at(msg: &[u8], pos: usize) -> Result<u32, WireError> {
    match msg.get(pos..pos + 4) {
        Some(b) => Ok(u32::from_be_bytes([b[0], b[1], b[2], b[3]])),
        None => Err(WireError::Truncated),
    }
}

/// Reads the name at `pos`; returns the position right after it (after
/// its first compression pointer, if any). With `out`, the name is
/// appended to it, lowercased, labels separated by `.`.
pub fn read_name(
    msg: &[u8],
    pos: usize,
    limits: NameLimits,
    mut out: Option<&mut Vec<u8>>,
) -> Result<usize, WireError> {
    let mut written = 0usize;
    let mut p = pos;
    // Where the caller continues: after the first pointer, or after the end.
    let mut resume: Option<usize> = None;
    // A pointer must point before everything read so far, so the walk moves
    // strictly backwards at each pointer and ends.
    let mut floor = pos;
    loop {
        let len = *msg.get(p).ok_or(WireError::Truncated)?;
        if len & 0xc0 == 0xc0 {
            let lo = *msg.get(p + 1).ok_or(WireError::Truncated)?;
            let target = (usize::from(len & 0x3f) << 8) | usize::from(lo);
            if target >= floor {
                return Err(WireError::ForwardPointer);
            }
            resume.get_or_insert(p + 2);
            floor = target;
            p = target;
            continue;
        }
        if len == 0 {
            return Ok(resume.unwrap_or(p + 1));
        }
        // Labels of 64 to 191 bytes (first bits 01 or 10) only for NetBIOS.
        if len > 63 && limits == NameLimits::Dns {
            return Err(WireError::BadLabel);
        }
        let n = usize::from(len);
        let label = msg.get(p + 1..p + 1 + n).ok_or(WireError::Truncated)?;
        let first = written == 0;
        written += n + usize::from(!first);
        if written > MAX_NAME {
            return Err(WireError::NameTooLong);
        }
        if let Some(o) = out.as_deref_mut() {
            if !first {
                o.push(b'.');
            }
            o.extend(label.iter().map(u8::to_ascii_lowercase));
        }
        p += 1 + n;
    }
}

/// Reads a name into a new string (lossless for ASCII; other bytes kept as
/// they are, to be escaped by the log writers).
pub fn name_string(
    msg: &[u8],
    pos: usize,
    limits: NameLimits,
) -> Result<(Vec<u8>, usize), WireError> {
    let mut v = Vec::new();
    let end = read_name(msg, pos, limits, Some(&mut v))?;
    Ok((v, end))
}

/// One entry of the question section.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Question {
    /// The name asked about, lowercased.
    pub name: Vec<u8>,
    /// QTYPE.
    pub qtype: u16,
    /// QCLASS (with mDNS's unicast-response bit, if set).
    pub qclass: u16,
}

/// Reads one question at `pos`; returns it and the position after it.
pub fn read_question(
    msg: &[u8],
    pos: usize,
    limits: NameLimits,
) -> Result<(Question, usize), WireError> {
    let (name, p) = name_string(msg, pos, limits)?;
    let qtype = u16_at(msg, p)?;
    let qclass = u16_at(msg, p + 2)?;
    Ok((
        Question {
            name,
            qtype,
            qclass,
        },
        p + 4,
    ))
}

/// A resource record's fixed fields and where its data lies.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Record {
    /// Position of the owner name.
    pub name_at: usize,
    /// TYPE.
    pub rtype: u16,
    /// CLASS (for OPT: the UDP payload size).
    pub class: u16,
    /// TTL (for OPT: extended rcode, version and flags).
    pub ttl: u32,
    /// Position of the RDATA.
    pub rdata_at: usize,
    /// Length of the RDATA.
    pub rdlength: usize,
}

impl Record {
    /// The RDATA bytes (the record was read from `msg`).
    pub fn rdata<'a>(&self, msg: &'a [u8]) -> &'a [u8] {
        msg.get(self.rdata_at..self.rdata_at + self.rdlength)
            .unwrap_or(&[])
    }
    /// Position after the record.
    pub fn end(&self) -> usize {
        self.rdata_at + self.rdlength
    }
}

/// Reads the record at `pos` (its owner name is checked, not copied).
pub fn read_record(msg: &[u8], pos: usize, limits: NameLimits) -> Result<Record, WireError> {
    let p = read_name(msg, pos, limits, None)?;
    let rtype = u16_at(msg, p)?;
    let class = u16_at(msg, p + 2)?;
    let ttl = u32_at(msg, p + 4)?;
    let rdlength = usize::from(u16_at(msg, p + 8)?);
    let rdata_at = p + 10;
    if rdata_at + rdlength > msg.len() {
        return Err(WireError::Truncated);
    }
    Ok(Record {
        name_at: pos,
        rtype,
        class,
        ttl,
        rdata_at,
        rdlength,
    })
}

/// How a message is laid out, found by walking all its sections.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Layout {
    /// The header.
    pub header: Header,
    /// Position of the answer section.
    pub answers_at: usize,
    /// Position right after the last record.
    pub end: usize,
}

/// Walks every section of `msg`; fails where a question or record does
/// not fit. Bytes after the last record are allowed (the layout's `end`
/// tells where they start).
pub fn layout(msg: &[u8], limits: NameLimits) -> Result<Layout, WireError> {
    let header = Header::parse(msg).ok_or(WireError::Truncated)?;
    let mut p = HEADER_LEN;
    for _ in 0..header.qdcount {
        p = read_name(msg, p, limits, None)? + 4;
        if p > msg.len() {
            return Err(WireError::Truncated);
        }
    }
    let answers_at = p;
    for _ in 0..header.records() {
        p = read_record(msg, p, limits)?.end();
    }
    Ok(Layout {
        header,
        answers_at,
        end: p,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn msg_with(name: &[u8]) -> Vec<u8> {
        let mut m = vec![0x12, 0x34, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0];
        m.extend_from_slice(name);
        m.extend_from_slice(&[0, 1, 0, 1]);
        m
    }

    #[test]
    fn names_with_and_without_pointers() {
        let m = msg_with(b"\x03WWW\x07example\x03com\x00");
        let (q, end) = read_question(&m, 12, NameLimits::Dns).unwrap();
        assert_eq!(q.name, b"www.example.com");
        assert_eq!((q.qtype, q.qclass), (1, 1));
        assert_eq!(end, m.len());
        // A pointer to the question's name, then a label before a pointer.
        let mut m2 = m.clone();
        m2.extend_from_slice(&[0xc0, 12]);
        let (n, e) = name_string(&m2, m.len(), NameLimits::Dns).unwrap();
        assert_eq!(n, b"www.example.com");
        assert_eq!(e, m.len() + 2);
        let mut m3 = m.clone();
        m3.extend_from_slice(b"\x04mail\xc0\x10");
        let (n, e) = name_string(&m3, m.len(), NameLimits::Dns).unwrap();
        assert_eq!(n, b"mail.example.com");
        assert_eq!(e, m3.len());
        // The root.
        let (n, _) = name_string(b"\x00", 0, NameLimits::Dns).unwrap();
        assert!(n.is_empty());
    }

    #[test]
    fn malformed_names_fail() {
        // Pointer to itself, forward, and a loop of two pointers.
        let mut m = vec![0u8; 12];
        m.extend_from_slice(&[0xc0, 12]);
        assert_eq!(
            read_name(&m, 12, NameLimits::Dns, None),
            Err(WireError::ForwardPointer)
        );
        let mut m = vec![0u8; 12];
        m.extend_from_slice(&[0xc0, 14, 0]);
        assert_eq!(
            read_name(&m, 12, NameLimits::Dns, None),
            Err(WireError::ForwardPointer)
        );
        let mut m = vec![0u8; 12];
        m.extend_from_slice(&[0xc0, 14, 0xc0, 12]);
        assert_eq!(
            read_name(&m, 14, NameLimits::Dns, None),
            Err(WireError::ForwardPointer)
        );
        // Truncated label, reserved label kinds, a 64-byte label.
        assert_eq!(
            read_name(b"\x05ab", 0, NameLimits::Dns, None),
            Err(WireError::Truncated)
        );
        assert_eq!(
            read_name(b"\x41", 0, NameLimits::Dns, None),
            Err(WireError::BadLabel)
        );
        let mut long = vec![64u8];
        long.extend([b'a'; 64]);
        long.push(0);
        assert_eq!(
            read_name(&long, 0, NameLimits::Dns, None),
            Err(WireError::BadLabel)
        );
        assert!(read_name(&long, 0, NameLimits::NetBios, None).is_ok());
        // Too long overall: 9 labels of 63 bytes.
        let mut big = Vec::new();
        for _ in 0..9 {
            big.push(63);
            big.extend([b'x'; 63]);
        }
        big.push(0);
        assert_eq!(
            read_name(&big, 0, NameLimits::Dns, None),
            Err(WireError::NameTooLong)
        );
    }

    #[test]
    fn header_fields_and_layout() {
        let mut m = vec![0xab, 0xcd, 0x85, 0xb3, 0, 1, 0, 1, 0, 0, 0, 0];
        m.extend_from_slice(b"\x01a\x00\x00\x01\x00\x01");
        m.extend_from_slice(&[0xc0, 12, 0, 1, 0, 1, 0, 0, 0, 60, 0, 4, 1, 2, 3, 4]);
        let h = Header::parse(&m).unwrap();
        assert_eq!(h.id, 0xabcd);
        assert!(h.qr() && h.aa() && h.rd() && h.ra() && !h.tc());
        assert_eq!((h.opcode(), h.z(), h.rcode()), (0, 3, 3));
        let l = layout(&m, NameLimits::Dns).unwrap();
        assert_eq!((l.answers_at, l.end), (19, m.len()));
        let r = read_record(&m, l.answers_at, NameLimits::Dns).unwrap();
        assert_eq!((r.rtype, r.class, r.ttl), (1, 1, 60));
        assert_eq!(r.rdata(&m), &[1, 2, 3, 4]);
        // Cut anywhere inside, the layout fails without a panic.
        for cut in 0..m.len() {
            assert!(layout(&m[..cut], NameLimits::Dns).is_err(), "cut {cut}");
        }
    }
}
