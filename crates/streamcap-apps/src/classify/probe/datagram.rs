//! Probes of UDP protocols: one whole datagram each.

use super::{text, Hint, NtpInfo, Verdict};
use crate::logs::dns::wire::{layout, read_name, Header, NameLimits, WireError, HEADER_LEN};

fn be32(b: &[u8], i: usize) -> Option<u32> {
    Some(u32::from_be_bytes(b.get(i..i + 4)?.try_into().ok()?))
}

fn be64(b: &[u8], i: usize) -> Option<u64> {
    Some(u64::from_be_bytes(b.get(i..i + 8)?.try_into().ok()?))
}

/// Whether the message's first name (right after the header) is a
/// NetBIOS name: one label of 32 letters `A` to `P` (RFC 1001 §14.1).
fn netbios_name_first(msg: &[u8]) -> bool {
    msg.get(HEADER_LEN) == Some(&32)
        && msg
            .get(HEADER_LEN + 1..HEADER_LEN + 33)
            .is_some_and(|l| l.iter().all(|b| (b'A'..=b'P').contains(b)))
}

/// A DNS header that DNS software would send: a known opcode (and the
/// NetBIOS name service's release, WACK and refresh, 6 to 9, before a
/// NetBIOS name), the reserved bit clear, a response code below 11, few
/// questions, and section counts that make sense for a query or a
/// response. Returns whether it is a response.
pub fn plausible_dns_header(msg: &[u8]) -> Option<bool> {
    let h = Header::parse(msg)?;
    let opcode_ok = match h.opcode() {
        0 | 1 | 2 | 4 | 5 => true,
        6..=9 => netbios_name_first(msg),
        _ => false,
    };
    if !opcode_ok || h.flags & 0x0040 != 0 || h.rcode() > 10 || h.qdcount > 16 {
        return None;
    }
    if h.qr() {
        if h.records() > 1024 || (h.qdcount == 0 && h.rcode() == 0 && h.ancount == 0) {
            return None;
        }
    } else if h.qdcount == 0 || h.ancount > 64 || h.nscount > 64 || h.arcount > 64 {
        return None;
    }
    Some(h.qr())
}

/// Whether a question name is one DNS software sends: visible ASCII, or
/// UTF-8 without control characters or spaces (mDNS and LLMNR names are
/// UTF-8: RFC 6762 §16, RFC 4795 §2.1).
fn plausible_name(name: &[u8]) -> bool {
    if name.iter().all(|&b| (0x21..0x7f).contains(&b)) {
        return true;
    }
    std::str::from_utf8(name)
        .is_ok_and(|s| s.chars().all(|c| !c.is_control() && !c.is_whitespace()))
}

/// A DNS message: a plausible header, and questions with names of
/// visible ASCII (or UTF-8) and a known class. `whole`: `msg` is the whole message,
/// whose records must then read to its end (trailing bytes only zeros) or
/// be cut short by it (a snapshot length); else only the questions that
/// fit are read.
pub fn plausible_dns(msg: &[u8], whole: bool) -> Option<bool> {
    let response = plausible_dns_header(msg)?;
    let h = Header::parse(msg)?;
    let mut p = HEADER_LEN;
    for _ in 0..h.qdcount {
        let mut name = Vec::new();
        let end = match read_name(msg, p, NameLimits::Dns, Some(&mut name)) {
            Ok(e) => e,
            Err(_) if !whole => return Some(response).filter(|_| p > HEADER_LEN),
            Err(_) => return None,
        };
        if !plausible_name(&name) {
            return None;
        }
        let (Some(t), Some(c)) = (msg.get(end..end + 2), msg.get(end + 2..end + 4)) else {
            return if whole { None } else { Some(response) };
        };
        let qtype = u16::from_be_bytes([t[0], t[1]]);
        let qclass = u16::from_be_bytes([c[0], c[1]]) & 0x7fff;
        if qtype == 0 || !matches!(qclass, 1 | 3 | 4 | 254 | 255) {
            return None;
        }
        p = end + 4;
    }
    if whole {
        match layout(msg, NameLimits::Dns) {
            Ok(l) if msg[l.end..].iter().all(|&b| b == 0) => {}
            // Cut short inside the records (a capture's snapshot length).
            Err(WireError::Truncated) => {}
            _ => return None,
        }
    }
    Some(response)
}

/// A DNS message over UDP (also mDNS, LLMNR, NetBIOS name service).
pub fn dns(d: &[u8]) -> Verdict {
    match plausible_dns(d, true) {
        Some(response) => Verdict::Yes(Hint::Dns { response }),
        None => Verdict::No,
    }
}

/// Whether a QUIC version is one in use: 1, 2, the IETF drafts, Facebook's
/// mvfst, Google's `Q046` and later, or 0 (version negotiation).
pub fn known_quic_version(v: u32) -> bool {
    matches!(v, 0 | 1 | 0x6b33_43cf | 0xff00_0001..=0xff00_0022 | 0xface_b001..=0xface_b00f)
        || (v >> 16 == 0x5130 && ((v >> 8) as u8).is_ascii_digit() && (v as u8).is_ascii_digit())
}

/// A QUIC long-header packet: form and fixed bits, a known version, and
/// (for IETF versions) connection ids of at most 20 bytes that fit.
pub fn quic(d: &[u8]) -> Verdict {
    let (Some(&b0), Some(v)) = (d.first(), be32(d, 1)) else {
        return Verdict::No;
    };
    if b0 & 0x80 == 0 || !known_quic_version(v) {
        return Verdict::No;
    }
    if v >> 16 == 0x5130 {
        return Verdict::Yes(Hint::Quic(v));
    }
    if b0 & 0x40 == 0 && v != 0 {
        return Verdict::No;
    }
    let Some(&dcil) = d.get(5) else {
        return Verdict::No;
    };
    let s = 6 + usize::from(dcil);
    let Some(&scil) = d.get(s) else {
        return Verdict::No;
    };
    let after = s + 1 + usize::from(scil);
    if dcil > 20 || scil > 20 || after > d.len() {
        return Verdict::No;
    }
    if v == 0 {
        // Version negotiation: a list of versions.
        let rest = d.len() - after;
        if rest == 0 || rest % 4 != 0 {
            return Verdict::No;
        }
    } else if after == d.len() {
        return Verdict::No;
    }
    Verdict::Yes(Hint::Quic(v))
}

/// A Google QUIC packet with the public header (versions up to Q043): the
/// version flag and an 8-byte connection id, then `Q0dd`.
pub fn gquic(d: &[u8]) -> Verdict {
    let Some(&b0) = d.first() else {
        return Verdict::No;
    };
    if b0 & 0x80 != 0 || b0 & 0x01 == 0 || b0 & 0x08 == 0 {
        return Verdict::No;
    }
    match d.get(9..13) {
        Some([b'Q', a, b, c]) if a.is_ascii_digit() && b.is_ascii_digit() && c.is_ascii_digit() => {
            Verdict::Yes(Hint::GQuic([b'Q', *a, *b, *c]))
        }
        _ => Verdict::No,
    }
}

/// A BOOTP message with the DHCP magic cookie.
pub fn dhcp(d: &[u8]) -> Verdict {
    if d.len() >= 240
        && matches!(d[0], 1 | 2)
        && (1..=40).contains(&d[1])
        && d[2] <= 16
        && d[3] <= 16
        && d[236..240] == [0x63, 0x82, 0x53, 0x63]
    {
        Verdict::Yes(Hint::Dhcp)
    } else {
        Verdict::No
    }
}

/// An NTP packet: 48 bytes or more in 4-byte words, version 1 to 4, mode 1
/// to 5, stratum at most 16, poll and precision in their usual ranges.
pub fn ntp(d: &[u8]) -> Verdict {
    if d.len() < 48 || d.len() > 1024 || d.len() % 4 != 0 {
        return Verdict::No;
    }
    let version = (d[0] >> 3) & 7;
    let mode = d[0] & 7;
    let poll = d[2] as i8;
    let precision = d[3] as i8;
    if !(1..=4).contains(&version)
        || !(1..=5).contains(&mode)
        || d[1] > 16
        || !(-6..=17).contains(&poll)
        || !(-32..=0).contains(&precision)
    {
        return Verdict::No;
    }
    Verdict::Yes(Hint::Ntp(NtpInfo {
        mode,
        version,
        origin: be64(d, 24).unwrap_or(0),
        transmit: be64(d, 40).unwrap_or(0),
    }))
}

/// A SIP request or status line.
pub fn sip(d: &[u8]) -> Verdict {
    for p in [text::request_line, text::status_line] {
        if let Verdict::Yes(h @ (Hint::SipRequest | Hint::SipResponse)) = p(d) {
            return Verdict::Yes(h);
        }
    }
    Verdict::No
}

/// A BitTorrent DHT (KRPC) query, response or error: a bencoded
/// dictionary whose first key is `a`, `r` or `e` (or `ip`, before them).
pub fn dht(d: &[u8]) -> Verdict {
    let prefixes: [&[u8]; 4] = [b"d1:ad2:id20:", b"d1:rd2:id20:", b"d1:eli", b"d2:ip6:"];
    if prefixes.iter().any(|p| d.starts_with(p)) {
        Verdict::Yes(Hint::BtDht)
    } else {
        Verdict::No
    }
}
