//! Application payloads as pure functions of (flow, message, offset):
//! messages with a protocol header and a bulk body of seeded text,
//! pseudo-random bytes or TLS records, filled piece by piece on demand.

use super::dist::mix64;
use super::flow::Cx;
use crate::prng::SplitMix64;
use crate::sample::WORDS;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Body {
    /// Words from the shared text block.
    Text,
    /// Pseudo-random bytes (compressed / encrypted content).
    Random,
    /// TLS application-data records (5-byte header + up to 16384 bytes).
    Tls,
}

/// One application send: protocol bytes (`head`) then a lazily generated
/// body of `body_len` bytes. For UDP each message is one datagram.
#[derive(Clone, Debug)]
pub(super) struct Msg {
    pub(super) dir: u8,
    pub(super) head: Vec<u8>,
    pub(super) body_len: u64,
    pub(super) body: Body,
    pub(super) key: u64,
    /// Planted signature: (pattern index, offset within the body).
    pub(super) sig: Option<(u32, u64)>,
}

impl Msg {
    pub(super) fn new(dir: u8, head: impl Into<Vec<u8>>) -> Self {
        Msg {
            dir,
            head: head.into(),
            body_len: 0,
            body: Body::Random,
            key: 0,
            sig: None,
        }
    }

    pub(super) fn body(mut self, body: Body, len: u64, key: u64) -> Self {
        self.body = body;
        self.body_len = len;
        self.key = key;
        self
    }

    pub(super) fn len(&self) -> u64 {
        self.head.len() as u64 + self.body_len
    }
}

pub(super) const TLS_REC: u64 = 16_384 + 5;

/// Body length of TLS records carrying `data` bytes.
pub(super) fn tls_len(data: u64) -> u64 {
    data.max(1) + 5 * data.max(1).div_ceil(16_384)
}

pub(super) const TEXT_LEN: usize = 1 << 16;

pub(super) fn text_block(seed: u64) -> Vec<u8> {
    let mut rng = SplitMix64::new(seed ^ 0x7e57_7e57);
    let mut s = Vec::with_capacity(TEXT_LEN + 64);
    while s.len() < TEXT_LEN {
        let n = rng.range(6, 16);
        for i in 0..n {
            if i > 0 {
                s.push(b' ');
            }
            s.extend_from_slice(rng.pick(WORDS).as_bytes());
        }
        s.extend_from_slice(if rng.chance(1, 6) { b".\n" } else { b". " });
    }
    s.truncate(TEXT_LEN);
    s
}

pub(super) fn fill_random(key: u64, off: u64, out: &mut [u8]) {
    let mut i = 0;
    let mut pos = off;
    // Unaligned head.
    let within = (pos % 8) as usize;
    if within != 0 {
        let v = mix64(key ^ (pos / 8).wrapping_mul(0x9E37_79B9_7F4A_7C15)).to_le_bytes();
        let n = (8 - within).min(out.len());
        out[..n].copy_from_slice(&v[within..within + n]);
        i = n;
        pos += n as u64;
    }
    let mut blk = pos / 8;
    let mut chunks = out[i..].chunks_exact_mut(8);
    for c in &mut chunks {
        c.copy_from_slice(&mix64(key ^ blk.wrapping_mul(0x9E37_79B9_7F4A_7C15)).to_le_bytes());
        blk += 1;
    }
    let rest = chunks.into_remainder();
    if !rest.is_empty() {
        let v = mix64(key ^ blk.wrapping_mul(0x9E37_79B9_7F4A_7C15)).to_le_bytes();
        let n = rest.len();
        rest.copy_from_slice(&v[..n]);
    }
}

pub(super) fn fill_text(text: &[u8], key: u64, off: u64, out: &mut [u8]) {
    let mut p = ((key % TEXT_LEN as u64 + off) % TEXT_LEN as u64) as usize;
    let mut i = 0;
    while i < out.len() {
        let n = (TEXT_LEN - p).min(out.len() - i);
        out[i..i + n].copy_from_slice(&text[p..p + n]);
        i += n;
        p = 0;
    }
}

pub(super) fn fill_tls(key: u64, body_len: u64, off: u64, out: &mut [u8]) {
    let mut i = 0;
    while i < out.len() {
        let pos = off + i as u64;
        let rec = pos / TLS_REC;
        let within = pos % TLS_REC;
        if within < 5 {
            let rec_len = (body_len - rec * TLS_REC - 5).min(16_384) as u16;
            let h = [0x17, 0x03, 0x03, (rec_len >> 8) as u8, rec_len as u8];
            let n = ((5 - within) as usize).min(out.len() - i);
            out[i..i + n].copy_from_slice(&h[within as usize..within as usize + n]);
            i += n;
        } else {
            let n = ((TLS_REC - within) as usize).min(out.len() - i);
            fill_random(key, pos, &mut out[i..i + n]);
            i += n;
        }
    }
}

/// Writes bytes `[pos, pos + out.len())` of message `m` into `out`.
pub(super) fn fill_msg(m: &Msg, cx: &Cx, pos: u64, out: &mut [u8]) {
    let hl = m.head.len() as u64;
    let mut i = 0;
    if pos < hl {
        let n = ((hl - pos) as usize).min(out.len());
        out[..n].copy_from_slice(&m.head[pos as usize..pos as usize + n]);
        i = n;
    }
    if i < out.len() {
        let boff = pos + i as u64 - hl;
        let dst = &mut out[i..];
        match m.body {
            Body::Text => fill_text(&cx.text, m.key, boff, dst),
            Body::Random => fill_random(m.key, boff, dst),
            Body::Tls => fill_tls(m.key, m.body_len, boff, dst),
        }
    }
    if let Some((p, at)) = m.sig {
        let pat = &cx.signatures[p as usize];
        let (s, e) = (hl + at, hl + at + pat.len() as u64);
        let (a, b) = (s.max(pos), e.min(pos + out.len() as u64));
        if a < b {
            out[(a - pos) as usize..(b - pos) as usize]
                .copy_from_slice(&pat[(a - s) as usize..(b - s) as usize]);
        }
    }
}

// ---------------------------------------------------------------------------
// Checksums and frame building.

#[cfg(test)]
mod tests {
    use super::*;
    use crate::campus::flow::Cx;

    #[test]
    fn filler_is_a_function_of_offset() {
        let cx_text = text_block(3);
        let cx = Cx {
            text: cx_text,
            signatures: vec![b"SIG".to_vec()],
            sig_th: 0,
            reorder: 0,
            dup: 0,
            loss: 0,
            conflict: 0,
            fragment: 0,
            ipv6: 0,
            vlan: 0,
            small: false,
            gap: 1,
        };
        for body in [Body::Text, Body::Random, Body::Tls] {
            let mut m = Msg::new(0, &b"HEAD"[..]).body(body, tls_len(40_000), 77);
            m.sig = Some((0, 100));
            let n = m.len() as usize;
            let mut all = vec![0; n];
            fill_msg(&m, &cx, 0, &mut all);
            let mut pieces = vec![0; n];
            let mut at = 0;
            let mut step = 1;
            while at < n {
                let e = (at + step).min(n);
                fill_msg(&m, &cx, at as u64, &mut pieces[at..e]);
                at = e;
                step = step * 3 % 1501 + 1;
            }
            assert_eq!(all, pieces);
            assert_eq!(&all[104..107], b"SIG");
            if body == Body::Tls {
                assert_eq!(&all[4..9], &[0x17, 3, 3, 0x40, 0]);
            }
        }
    }
}
