//! Probes of binary TCP protocols: a fixed header at the start of a
//! direction.

use super::{prefix_of, starts, Hint, Verdict};
use crate::classify::INSPECT_LIMIT;

fn be16(b: &[u8], i: usize) -> Option<u16> {
    Some(u16::from_be_bytes([*b.get(i)?, *b.get(i + 1)?]))
}

fn be32(b: &[u8], i: usize) -> Option<u32> {
    Some(u32::from_be_bytes([
        *b.get(i)?,
        *b.get(i + 1)?,
        *b.get(i + 2)?,
        *b.get(i + 3)?,
    ]))
}

/// Checks the bytes present against per-position tests; `Yes` when all
/// `need` bytes are there and pass, `More` while those present pass.
fn fixed(
    buf: &[u8],
    need: usize,
    ok: impl Fn(usize, u8) -> bool,
    hint: impl FnOnce() -> Hint,
) -> Verdict {
    for (i, &b) in buf.iter().take(need).enumerate() {
        if !ok(i, b) {
            return Verdict::No;
        }
    }
    if buf.len() < need {
        Verdict::More
    } else {
        Verdict::Yes(hint())
    }
}

/// An SSLv2-format ClientHello (RFC 6101 appendix E): record length,
/// message type 1, version SSL 2 to TLS 1.2, cipher specs (3 bytes each),
/// session id of 0 or 16 bytes, challenge of 16 to 32 bytes, lengths adding up.
pub fn sslv2_hello(buf: &[u8]) -> Verdict {
    let ok = |i: usize, b: u8| match i {
        0 => b & 0x80 != 0,
        2 => b == 1,
        3 => b == 0 || b == 3,
        4 => b <= 3,
        _ => true,
    };
    match fixed(buf, 11, ok, || Hint::Sslv2Hello(0)) {
        Verdict::Yes(_) => {}
        v => return v,
    }
    let len = usize::from(be16(buf, 0).unwrap_or(0) & 0x7fff);
    let version = be16(buf, 3).unwrap_or(0);
    let specs = usize::from(be16(buf, 5).unwrap_or(0));
    let sid = usize::from(be16(buf, 7).unwrap_or(0));
    let challenge = usize::from(be16(buf, 9).unwrap_or(0));
    let version_ok = version == 2 || (0x0300..=0x0303).contains(&version);
    if version_ok
        && specs > 0
        && specs % 3 == 0
        && (sid == 0 || sid == 16)
        && (16..=32).contains(&challenge)
        && len == 9 + specs + sid + challenge
    {
        Verdict::Yes(Hint::Sslv2Hello(version))
    } else {
        Verdict::No
    }
}

/// An SMB header (`\xffSMB`, `\xfeSMB` or the transform header `\xfdSMB`)
/// in a NetBIOS session message, or a NetBIOS session request with an
/// encoded called name.
pub fn smb(buf: &[u8]) -> Verdict {
    match buf.first() {
        None => Verdict::More,
        Some(0x00) => {
            let v = fixed(
                buf,
                8,
                |i, b| match i {
                    4 => b == 0xff || b == 0xfe || b == 0xfd,
                    5 => b == b'S',
                    6 => b == b'M',
                    7 => b == b'B',
                    _ => true,
                },
                || Hint::Smb,
            );
            // At least an SMB1 header (32 bytes) in the message.
            if v == Verdict::Yes(Hint::Smb) {
                let len =
                    usize::from(buf[1]) << 16 | usize::from(buf[2]) << 8 | usize::from(buf[3]);
                if len < 32 {
                    return Verdict::No;
                }
            }
            v
        }
        Some(0x81) => fixed(
            buf,
            38,
            |i, b| match i {
                1 => b <= 1,
                4 => b == 0x20,
                5..=36 => (b'A'..=b'P').contains(&b),
                37 => b == 0,
                _ => true,
            },
            || Hint::NbssRequest,
        ),
        Some(_) => Verdict::No,
    }
}

/// A TPKT (RFC 1006) carrying an X.224 connection request or confirm; a
/// request with `Cookie: mstshash=` (or `msts=`) or an RDP negotiation
/// request, or a confirm with an RDP negotiation response or failure.
pub fn rdp(buf: &[u8]) -> Verdict {
    let head = fixed(
        buf,
        11,
        |i, b| match i {
            0 => b == 3,
            1 => b == 0,
            5 => b & 0xf0 == 0xe0 || b & 0xf0 == 0xd0,
            _ => true,
        },
        || Hint::TpktRequest,
    );
    if head != Verdict::Yes(Hint::TpktRequest) {
        return head;
    }
    let len = usize::from(be16(buf, 2).unwrap_or(0));
    if !(11..=1024).contains(&len) || usize::from(buf[4]) + 5 != len {
        return Verdict::No;
    }
    let Some(tpdu) = buf.get(..len) else {
        return Verdict::More;
    };
    let payload = &tpdu[11..];
    let neg = |ty: u8| {
        payload.len() >= 8 && {
            let n = &payload[payload.len() - 8..];
            n[0] == ty && n[2] == 8 && n[3] == 0
        }
    };
    if buf[5] & 0xf0 == 0xe0 {
        if payload.starts_with(b"Cookie: mstshash=")
            || payload.starts_with(b"Cookie: msts=")
            || neg(1)
        {
            Verdict::Yes(Hint::RdpRequest)
        } else {
            Verdict::Yes(Hint::TpktRequest)
        }
    } else if payload.len() == 8 && (neg(2) || neg(3)) {
        Verdict::Yes(Hint::RdpConfirm)
    } else {
        Verdict::Yes(Hint::TpktRequest)
    }
}

/// The BitTorrent peer handshake.
pub fn bittorrent(buf: &[u8]) -> Verdict {
    starts(buf, b"\x13BitTorrent protocol", Hint::BitTorrent)
}

/// An MQTT CONNECT (protocol name `MQTT` level 4 or 5, or `MQIsdp`
/// level 3) or a CONNACK.
pub fn mqtt(buf: &[u8]) -> Verdict {
    match buf.first() {
        None => Verdict::More,
        Some(0x10) => {
            // The remaining length: 1 to 4 bytes.
            let mut i = 1;
            let mut rem = 0usize;
            loop {
                let Some(&b) = buf.get(i) else {
                    return Verdict::More;
                };
                rem |= usize::from(b & 0x7f) << (7 * (i - 1));
                i += 1;
                if b & 0x80 == 0 {
                    break;
                }
                if i > 4 {
                    return Verdict::No;
                }
            }
            if rem < 10 {
                return Verdict::No;
            }
            let rest = &buf[i..];
            for (pat, levels) in [
                (&b"\x00\x04MQTT"[..], &[4u8, 5][..]),
                (b"\x00\x06MQIsdp", &[3]),
            ] {
                if prefix_of(rest, pat) || rest.len() == pat.len() && rest == pat {
                    return Verdict::More;
                }
                if rest.starts_with(pat) {
                    return if levels.contains(&rest[pat.len()]) {
                        Verdict::Yes(Hint::MqttConnect)
                    } else {
                        Verdict::No
                    };
                }
            }
            Verdict::No
        }
        Some(0x20) => fixed(
            buf,
            4,
            |i, b| match i {
                1 => (2..=127).contains(&b),
                2 => b <= 1,
                3 => b <= 5 || (0x80..=0x9f).contains(&b),
                _ => true,
            },
            || Hint::MqttConnack,
        ),
        Some(_) => Verdict::No,
    }
}

/// Digits then `\r\n`, from `buf[i]`: the position after, `Err(true)` to
/// wait, `Err(false)` for no.
fn digits_crlf(buf: &[u8], mut i: usize, signed: bool) -> Result<usize, bool> {
    let start = i;
    if signed && buf.get(i) == Some(&b'-') {
        i += 1;
    }
    while let Some(b) = buf.get(i) {
        if !b.is_ascii_digit() {
            break;
        }
        i += 1;
        if i - start > 10 {
            return Err(false);
        }
    }
    match (buf.get(i), buf.get(i + 1)) {
        (None, _) => Err(true),
        (Some(b'\r'), None) if i > start => Err(true),
        (Some(b'\r'), Some(b'\n')) if i > start => Ok(i + 2),
        _ => Err(false),
    }
}

/// A Redis command (`*N\r\n$M\r\n`), or a reply `+PONG`, `-ERR`,
/// `-NOAUTH`, `-WRONGPASS`, `:n` or `$n`.
pub fn redis(buf: &[u8]) -> Verdict {
    match buf.first() {
        None => Verdict::More,
        Some(b'*') => match digits_crlf(buf, 1, false) {
            Err(true) => Verdict::More,
            Err(false) => Verdict::No,
            Ok(i) => match buf.get(i) {
                None => Verdict::More,
                Some(b'$') => match digits_crlf(buf, i + 1, false) {
                    Err(true) => Verdict::More,
                    Err(false) => Verdict::No,
                    Ok(_) => Verdict::Yes(Hint::RedisCommand),
                },
                Some(_) => Verdict::No,
            },
        },
        Some(b':' | b'$') => match digits_crlf(buf, 1, true) {
            Err(true) => Verdict::More,
            Err(false) => Verdict::No,
            Ok(_) => Verdict::Yes(Hint::RedisReply),
        },
        Some(b'+') => starts(buf, b"+PONG\r\n", Hint::RedisReply),
        Some(b'-') => {
            for pat in [&b"-ERR "[..], b"-NOAUTH ", b"-WRONGPASS "] {
                match starts(buf, pat, Hint::RedisReply) {
                    Verdict::No => {}
                    v => return v,
                }
            }
            Verdict::No
        }
        Some(_) => Verdict::No,
    }
}

/// A PostgreSQL client's first message (StartupMessage 3.0 with its first
/// parameter name, SSLRequest, GSSENCRequest, CancelRequest), or a
/// server's authentication request.
pub fn postgresql(buf: &[u8]) -> Verdict {
    const SSL: u32 = 80_877_103;
    const GSS: u32 = 80_877_104;
    const CANCEL: u32 = 80_877_102;
    const V3: u32 = 196_608;
    if buf.first() == Some(&b'R') {
        return fixed(buf, 9, |_, _| true, || Hint::PgAuth).and_then(|| {
            let len = be32(buf, 1).unwrap_or(0);
            let code = be32(buf, 5).unwrap_or(99);
            (8..=2048).contains(&len) && matches!(code, 0 | 2 | 3 | 5..=12)
        });
    }
    let head = fixed(
        buf,
        8,
        |i, b| match i {
            0 | 1 => b == 0,
            4 => b == 0 || b == 0x04,
            5 => b == 0x03 || b == 0xd2,
            _ => true,
        },
        || Hint::PgStartup,
    );
    if head != Verdict::Yes(Hint::PgStartup) {
        return head;
    }
    let len = be32(buf, 0).unwrap_or(0);
    let code = be32(buf, 4).unwrap_or(0);
    match code {
        SSL | GSS if len == 8 => Verdict::Yes(Hint::PgStartup),
        CANCEL if len == 16 => Verdict::Yes(Hint::PgStartup),
        V3 if (9..=10_000).contains(&len) => {
            // The first parameter name: lowercase letters and `_`, then NUL.
            for (k, &b) in buf[8..].iter().enumerate().take(64) {
                if b == 0 {
                    return if k > 0 {
                        Verdict::Yes(Hint::PgStartup)
                    } else {
                        Verdict::No
                    };
                }
                if !(b.is_ascii_lowercase() || b == b'_') {
                    return Verdict::No;
                }
            }
            if buf.len() - 8 >= 64 {
                Verdict::No
            } else {
                Verdict::More
            }
        }
        _ => Verdict::No,
    }
}

/// A PostgreSQL server's one-byte answer to SSLRequest: `S` followed by
/// the server's TLS record, or `N` followed by an authentication request
/// or error.
pub fn pg_ssl_reply(buf: &[u8]) -> Verdict {
    match (buf.first(), buf.get(1)) {
        (None, _) | (Some(b'S' | b'N'), None) => Verdict::More,
        (Some(b'S'), Some(0x16)) | (Some(b'N'), Some(b'R' | b'E')) => {
            Verdict::Yes(Hint::PgSslReply)
        }
        _ => Verdict::No,
    }
}

/// A MySQL server greeting: packet length, sequence 0, protocol 10, a
/// version string starting with a digit, connection id, 8 bytes of
/// scramble and a zero filler.
pub fn mysql(buf: &[u8]) -> Verdict {
    let head = fixed(
        buf,
        6,
        |i, b| match i {
            3 => b == 0,
            4 => b == 0x0a,
            5 => b.is_ascii_digit(),
            _ => true,
        },
        || Hint::MysqlGreeting(String::new()),
    );
    if !matches!(head, Verdict::Yes(_)) {
        return head;
    }
    let len = usize::from(buf[0]) | usize::from(buf[1]) << 8 | usize::from(buf[2]) << 16;
    if !(30..=1024).contains(&len) {
        return Verdict::No;
    }
    let Some(nul) = buf[5..].iter().take(64).position(|&b| b == 0) else {
        return if buf.len() - 5 >= 64 {
            Verdict::No
        } else {
            Verdict::More
        };
    };
    let version = &buf[5..5 + nul];
    if !version.iter().all(|&b| (0x20..0x7f).contains(&b)) {
        return Verdict::No;
    }
    let filler = 5 + nul + 1 + 4 + 8;
    match buf.get(filler) {
        None => Verdict::More,
        Some(0) => Verdict::Yes(Hint::MysqlGreeting(
            String::from_utf8_lossy(version).into_owned(),
        )),
        Some(_) => Verdict::No,
    }
}

/// DNS over TCP: a 2-byte length, then a DNS message that reads whole
/// (when it fits the inspected bytes; else its header and questions).
pub fn dns_tcp(buf: &[u8]) -> Verdict {
    let Some(len) = be16(buf, 0) else {
        return Verdict::More;
    };
    let len = usize::from(len);
    if len < 12 {
        return Verdict::No;
    }
    let msg = &buf[2..];
    if msg.len() >= len {
        return match super::datagram::plausible_dns(&msg[..len], true) {
            Some(response) => Verdict::Yes(Hint::Dns { response }),
            None => Verdict::No,
        };
    }
    if buf.len() >= INSPECT_LIMIT {
        return match super::datagram::plausible_dns(msg, false) {
            Some(response) => Verdict::Yes(Hint::Dns { response }),
            None => Verdict::No,
        };
    }
    // Reject early what cannot be a DNS header.
    if msg.len() >= 12 && super::datagram::plausible_dns_header(msg).is_none() {
        return Verdict::No;
    }
    Verdict::More
}

trait AndThen {
    fn and_then(self, check: impl FnOnce() -> bool) -> Verdict;
}

impl AndThen for Verdict {
    /// A `Yes` that also passes `check`; `No` if it does not.
    fn and_then(self, check: impl FnOnce() -> bool) -> Verdict {
        match self {
            Verdict::Yes(h) if check() => Verdict::Yes(h),
            Verdict::Yes(_) => Verdict::No,
            v => v,
        }
    }
}
