//! JSON text written fast, for the outputs that write one line per event
//! (flow records, EVE alerts). [`Staging`] gathers a line in a stack buffer
//! and writes numbers and IPv4 addresses digit by digit into it, so a line
//! costs one copy into the output instead of dozens of short `write!`
//! calls through `core::fmt`, and the text is byte for byte what
//! `serde_json` and `Display` write (the tests of each output compare the
//! two).

use std::net::IpAddr;

/// Room in [`Staging`]'s buffer: a typical line fits whole.
const STAGING: usize = 512;

/// The longest decimal `u64`.
const MAX_DIGITS: usize = 20;

/// Two decimal digits per entry, "00" to "99".
const DIGIT_PAIRS: &[u8; 200] = b"\
0001020304050607080910111213141516171819\
2021222324252627282930313233343536373839\
4041424344454647484950515253545556575859\
6061626364656667686970717273747576777879\
8081828384858687888990919293949596979899";

/// A write buffer on the stack in front of `out`: short appends are plain
/// stores into an array, and the array goes to `out` when full, on
/// [`flush`](Self::flush) and when the `Staging` is dropped.
pub struct Staging<'a> {
    out: &'a mut Vec<u8>,
    buf: [u8; STAGING],
    len: usize,
}

impl<'a> Staging<'a> {
    /// An empty buffer in front of `out`.
    pub fn new(out: &'a mut Vec<u8>) -> Self {
        Staging {
            out,
            buf: [0; STAGING],
            len: 0,
        }
    }

    /// Moves what is staged to `out`.
    pub fn flush(&mut self) {
        self.out.extend_from_slice(&self.buf[..self.len]);
        self.len = 0;
    }

    /// Makes room for `n` more bytes, if they fit at all.
    #[inline(always)]
    fn room(&mut self, n: usize) {
        if self.len + n > STAGING {
            self.flush();
        }
    }

    /// Appends `bytes` as they are.
    #[inline(always)]
    pub fn put(&mut self, bytes: &[u8]) {
        self.room(bytes.len());
        if let Some(dst) = self.buf.get_mut(self.len..self.len + bytes.len()) {
            dst.copy_from_slice(bytes);
            self.len += bytes.len();
        } else {
            // Longer than the whole buffer (a long file name): `room` sent
            // what was staged, so this goes straight out after it.
            self.out.extend_from_slice(bytes);
        }
    }

    /// `v` in decimal, written in place from its last digit backwards.
    #[inline(always)]
    pub fn num(&mut self, v: u64) {
        self.room(MAX_DIGITS);
        let Some(field) = self.buf.get_mut(self.len..self.len + MAX_DIGITS) else {
            return; // unreachable: `room` made space
        };
        if v < 10 {
            // Most counters in a record are 0 or one digit.
            field[0] = b'0' + v as u8;
            self.len += 1;
            return;
        }
        let digits = v.ilog10() as usize + 1;
        let (mut v, mut at) = (v, digits);
        while v >= 100 {
            let pair = (v % 100) as usize * 2;
            v /= 100;
            at -= 2;
            field[at..at + 2].copy_from_slice(&DIGIT_PAIRS[pair..pair + 2]);
        }
        if v >= 10 {
            let pair = v as usize * 2;
            field[..2].copy_from_slice(&DIGIT_PAIRS[pair..pair + 2]);
        } else {
            field[0] = b'0' + v as u8;
        }
        self.len += digits;
    }

    /// `v` in decimal with leading zeros to `width` digits, as
    /// `format!("{v:0width$}")` writes it (more digits when `v` needs
    /// them).
    pub fn zero_padded(&mut self, v: u64, width: usize) {
        let digits = if v == 0 { 1 } else { v.ilog10() as usize + 1 };
        for _ in digits..width {
            self.put(b"0");
        }
        self.num(v);
    }

    /// An address in quotes, as `Display` writes it.
    pub fn ip(&mut self, ip: IpAddr) {
        match ip {
            IpAddr::V4(v4) => {
                // The longest, with its quotes: "255.255.255.255".
                const MAX: usize = 17;
                self.room(MAX);
                let Some(field) = self.buf.get_mut(self.len..self.len + MAX) else {
                    return; // unreachable: `room` made space
                };
                field[0] = b'"';
                let mut at = 1;
                for (i, o) in v4.octets().into_iter().enumerate() {
                    if i > 0 {
                        field[at] = b'.';
                        at += 1;
                    }
                    let o = usize::from(o);
                    if o >= 100 {
                        field[at] = b'0' + (o / 100) as u8;
                        at += 1;
                    }
                    if o >= 10 {
                        let pair = o % 100 * 2;
                        field[at..at + 2].copy_from_slice(&DIGIT_PAIRS[pair..pair + 2]);
                        at += 2;
                    } else {
                        field[at] = b'0' + o as u8;
                        at += 1;
                    }
                }
                field[at] = b'"';
                self.len += at + 1;
            }
            IpAddr::V6(v6) => {
                use std::io::Write;
                let mut text = [0u8; 48];
                let mut cursor = std::io::Cursor::new(&mut text[..]);
                // 48 bytes hold the longest address text (39 bytes), and a
                // slice cursor cannot fail otherwise.
                let _ = write!(cursor, "\"{v6}\"");
                let n = cursor.position() as usize;
                self.put(&text[..n]);
            }
        }
    }

    /// A string known to need no escaping, in quotes.
    pub fn plain_str(&mut self, s: &str) {
        self.put(b"\"");
        self.put(s.as_bytes());
        self.put(b"\"");
    }

    /// A JSON string, escaped as serde_json escapes it.
    pub fn str(&mut self, s: &str) {
        if s.bytes().all(|b| b >= 0x20 && b != b'"' && b != b'\\') {
            self.plain_str(s);
        } else {
            // Rare (names and messages are mostly plain): let serde_json
            // escape it, after what is staged.
            self.flush();
            let _ = serde_json::to_writer(&mut *self.out, s);
        }
    }
}

impl Drop for Staging<'_> {
    /// What is still staged reaches `out` even when the caller returns
    /// early.
    fn drop(&mut self) {
        self.flush();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn written(f: impl FnOnce(&mut Staging<'_>)) -> String {
        let mut out = Vec::new();
        {
            let mut w = Staging::new(&mut out);
            f(&mut w);
        }
        String::from_utf8(out).unwrap_or_default()
    }

    #[test]
    fn numbers_as_display_writes_them() {
        for v in [0, 9, 10, 99, 100, 12_345, u64::from(u32::MAX), u64::MAX] {
            assert_eq!(written(|w| w.num(v)), v.to_string());
            for width in [0, 2, 4, 6, 25] {
                assert_eq!(written(|w| w.zero_padded(v, width)), format!("{v:0width$}"));
            }
        }
    }

    #[test]
    fn addresses_as_display_writes_them() {
        for ip in [
            "0.0.0.0",
            "10.1.20.255",
            "192.168.100.9",
            "::",
            "2001:db8::1",
            "::ffff:10.0.0.1",
        ] {
            let ip: IpAddr = ip.parse().unwrap_or(IpAddr::from([0, 0, 0, 0]));
            assert_eq!(written(|w| w.ip(ip)), format!("\"{ip}\""));
        }
    }

    #[test]
    fn strings_as_serde_json_writes_them() {
        for s in ["plain", "", "quote \" and \\ and \n and \u{1}", "ünïcode"] {
            assert_eq!(
                written(|w| w.str(s)),
                serde_json::to_string(s).unwrap_or_default()
            );
        }
    }

    #[test]
    fn lines_longer_than_the_buffer_keep_their_order() {
        let long = "x".repeat(3 * STAGING);
        let text = written(|w| {
            w.put(b"[");
            for i in 0..200 {
                w.num(i);
                w.put(b",");
            }
            w.plain_str(&long);
            w.put(b"]");
        });
        let expected = format!(
            "[{}\"{long}\"]",
            (0..200).map(|i| format!("{i},")).collect::<String>()
        );
        assert_eq!(text, expected);
    }
}
