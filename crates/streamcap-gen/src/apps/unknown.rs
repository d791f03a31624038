//! Flows of no protocol, which a classifier must call `unknown`: random
//! bytes over TCP and UDP, and text that follows no protocol. Every message
//! is redrawn until [`protocol_like`] finds nothing in it.

use crate::prng::SplitMix64;
use crate::sample::WORDS;

use super::dialog::{Dialog, C, S};

/// Byte strings that identify a protocol wherever they appear.
const MARKERS: &[&[u8]] = &[
    b"HTTP/",
    b"SSH-",
    b"SIP/",
    b"RTSP/",
    b"BitTorrent",
    b"IMAP",
    b"SMTP",
    b"FTP",
    b"MQTT",
    b"MQIsdp",
    b"mstshash",
    b"\xfeSMB",
    b"\xffSMB",
    b"\xfdSMB",
    b"\x63\x82\x53\x63",
    b"NTLMSSP",
    b"+OK",
    b"-ERR",
];

/// Command words of the text protocols (compared case-insensitively with
/// the first word of a text message).
const VERBS: &[&str] = &[
    "get",
    "post",
    "head",
    "put",
    "delete",
    "options",
    "connect",
    "trace",
    "patch",
    "user",
    "pass",
    "ehlo",
    "helo",
    "mail",
    "rcpt",
    "data",
    "quit",
    "auth",
    "capa",
    "stat",
    "list",
    "retr",
    "login",
    "select",
    "ping",
    "set",
    "info",
    "hello",
    "register",
    "invite",
    "ack",
    "bye",
    "cancel",
    "subscribe",
    "notify",
    "message",
    "syst",
    "type",
    "pasv",
    "port",
    "noop",
    "apop",
    "top",
    "uidl",
    "starttls",
    "capability",
    "logout",
    "describe",
    "setup",
    "play",
];

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

/// Whether a message of a flow that should be `unknown` holds anything a
/// reasonable payload classifier could take for a protocol: a protocol
/// marker anywhere, or first bytes that look like a record header
/// (TLS/SSLv2, TPKT, NetBIOS session, MQTT, RESP, BitTorrent, length
/// prefixes matching the message, a MySQL greeting, a QUIC long header
/// with a known version; over UDP also DNS, NTP, BOOTP, STUN and bencode),
/// or whose first word is a protocol command.
pub(super) fn protocol_like(b: &[u8], udp: bool) -> bool {
    if b.len() < 8 || MARKERS.iter().any(|m| contains(b, m)) {
        return true;
    }
    let n = b.len();
    let b0 = b[0];
    let be16 = usize::from(u16::from_be_bytes([b[0], b[1]]));
    let be32 = u32::from_be_bytes([b[0], b[1], b[2], b[3]]) as usize;
    let le24 = usize::from(b[0]) | usize::from(b[1]) << 8 | usize::from(b[2]) << 16;
    let first_word = b
        .split(|c| !c.is_ascii_alphanumeric())
        .next()
        .map(|w| String::from_utf8_lossy(w).to_ascii_lowercase())
        .unwrap_or_default();
    let quic_version = matches!(
        [b[1], b[2], b[3], b[4]],
        [0, 0, 0, 0] | [0, 0, 0, 1] | [0x6b, 0x33, 0x43, 0xcf] | [0xff, 0, 0, _]
    );
    let generic = ((0x14..=0x18).contains(&b0) && b[1] == 3)
        || (b0 & 0x80 != 0 && b[2] == 1)
        || (b0 == 3 && b[1] == 0)
        || matches!(
            b0,
            0 | 0x13 | 0x10 | 0x20 | 0x81 | 0x82 | 0x85 | 0x90 | 0xc0 | 0xd0 | 0xe0
        )
        || b"*+-$:%".contains(&b0)
        || b0.is_ascii_digit()
        || be16 + 2 == n
        || be32 == n
        || le24 + 4 == n
        || (b[3] <= 1 && b[4] == 10)
        || (b0 & 0x80 != 0 && quic_version)
        || VERBS.contains(&first_word.as_str())
        || b[..4].iter().all(u8::is_ascii_alphanumeric) && !b.is_ascii();
    let datagram = udp
        && (n == 48
            || (n >= 12 && b[4] == 0 && b[5] == 1)
            || (matches!(b0, 1 | 2) && b[1] == 1 && b[2] == 6)
            || b[4..8] == [0x21, 0x12, 0xa4, 0x42]
            || b0 == b'd'
            || b0 == b'<');
    generic || datagram
}

/// `len` random bytes that [`protocol_like`] accepts. After 64 draws (which
/// does not happen in practice) the first bytes are forced to a neutral
/// value.
fn random_msg(rng: &mut SplitMix64, len: usize, udp: bool) -> Vec<u8> {
    let mut b = rng.bytes(len);
    for _ in 0..64 {
        if !protocol_like(&b, udp) {
            return b;
        }
        b = rng.bytes(len);
    }
    b[..4].copy_from_slice(&[0x9a, 0x5c, 0x77, 0x3e]);
    b
}

/// Random bytes both ways: over TCP one to three exchanges (the server
/// speaking first sometimes), over UDP two to eight datagrams.
pub(super) fn random(rng: &mut SplitMix64, udp: bool) -> Dialog {
    let mut d = Dialog::new(if udp { "random-udp" } else { "random-tcp" });
    if udp {
        let mut dir = C;
        for _ in 0..rng.range(2, 8) {
            let mut len = rng.range(20, 1200) as usize;
            if len == 48 {
                len += 1;
            }
            d.push(dir, random_msg(rng, len, true));
            if rng.chance(1, 2) {
                dir = dir.reverse();
            }
        }
        return d;
    }
    let server_first = rng.chance(1, 4);
    for i in 0..rng.range(1, 3) {
        let (na, nb) = (rng.range(20, 600) as usize, rng.range(20, 3000) as usize);
        let a = random_msg(rng, na, false);
        let b = random_msg(rng, nb, false);
        if server_first && i == 0 {
            d.push(S, b);
            d.push(C, a);
        } else {
            d.push(C, a);
            d.push(S, b);
        }
    }
    d
}

/// A line of lower-case words (never starting with a protocol verb).
fn line(rng: &mut SplitMix64) -> String {
    loop {
        let n = rng.range(3, 12) as usize;
        let words: Vec<&str> = (0..n).map(|_| *rng.pick(WORDS)).collect();
        if !VERBS.contains(&words[0]) {
            return words.join(" ");
        }
    }
}

/// Text that is no protocol: chatty lines of words or JSON objects of a
/// made-up protocol, both ways.
pub(super) fn text(rng: &mut SplitMix64, udp: bool) -> Dialog {
    let json = rng.chance(1, 2);
    let mut d = Dialog::new(format!(
        "text-{}-{}",
        if json { "json" } else { "lines" },
        if udp { "udp" } else { "tcp" }
    ));
    for i in 0..rng.range(1, 4) {
        for dir in [C, S] {
            let mut msg;
            let mut tries = 0;
            loop {
                msg = if json {
                    format!(
                        "{{\"kind\":\"{}\",\"seq\":{i},\"note\":\"{}\"}}\n",
                        rng.pick(&["sync", "digest", "beacon", "tally"]),
                        line(rng)
                    )
                } else {
                    let mut s = String::new();
                    for _ in 0..rng.range(1, 4) {
                        s.push_str(&line(rng));
                        s.push('\n');
                    }
                    s
                };
                tries += 1;
                if !protocol_like(msg.as_bytes(), udp) || tries > 64 {
                    break;
                }
            }
            d.text(dir, &msg);
        }
    }
    d
}
