//! HTTP/1.x message bytes: heads, `Content-Length` and chunked bodies
//! (with chunk extensions and trailers), and the offsets where cutting a
//! segment is awkward for a parser.

use crate::prng::SplitMix64;

use super::Framing;

/// Encoded bytes with the offsets (within them) where a segment boundary
/// is awkward: inside the start line, between CR and LF, inside the
/// blank line ending the head, inside a chunk-size line, between chunk
/// data and its CRLF, inside the last chunk.
#[derive(Clone, Debug, Default)]
pub(super) struct Built {
    pub bytes: Vec<u8>,
    pub awkward: Vec<usize>,
}

impl Built {
    /// Appends `other`, shifting its offsets.
    pub(super) fn append(&mut self, other: Built) {
        let base = self.bytes.len();
        self.awkward
            .extend(other.awkward.into_iter().map(|o| o + base));
        self.bytes.extend(other.bytes);
    }

    pub(super) fn len(&self) -> usize {
        self.bytes.len()
    }
}

/// A head: the start line, the header fields, the empty line.
pub(super) fn head(start: &str, fields: &[(String, String)], rng: &mut SplitMix64) -> Built {
    let mut b = Built::default();
    b.bytes.extend_from_slice(start.as_bytes());
    // Inside the method or status code, and inside the version.
    b.awkward.push(rng.range(1, 3) as usize);
    b.awkward.push(start.len() - rng.range(1, 3) as usize);
    b.awkward.push(start.len() + 1); // between CR and LF
    b.bytes.extend_from_slice(b"\r\n");
    for (name, value) in fields {
        let at = b.bytes.len();
        b.awkward
            .push(at + 1 + rng.below(name.len().max(1) as u64) as usize);
        b.bytes.extend_from_slice(name.as_bytes());
        b.bytes.extend_from_slice(b": ");
        b.bytes.extend_from_slice(value.as_bytes());
        b.awkward.push(b.bytes.len() + 1);
        b.bytes.extend_from_slice(b"\r\n");
    }
    // Inside the CR LF CR LF that ends the head.
    let end = b.bytes.len();
    b.awkward.extend([end - 1, end, end + 1]);
    b.bytes.extend_from_slice(b"\r\n");
    b.awkward.retain(|&o| o > 0 && o < b.bytes.len());
    b
}

/// A body of `entity` in the given framing (chunked with random chunk
/// sizes, sometimes extensions, and `trailers`). `Length`, `Close` and
/// `None` send the entity as is.
pub(super) fn body(
    entity: &[u8],
    framing: Framing,
    trailers: &[(String, String)],
    rng: &mut SplitMix64,
) -> Built {
    let mut b = Built::default();
    if framing != Framing::Chunked {
        b.bytes.extend_from_slice(entity);
        return b;
    }
    let ext = rng.chance(1, 4);
    let upper = rng.chance(1, 3);
    let zeros = rng.chance(1, 6);
    let mut at = 0;
    while at < entity.len() {
        let max = *rng.pick(&[16u64, 512, 4096, 8192, 16_384]);
        let n = (rng.range(1, max) as usize).min(entity.len() - at);
        let mut size = if upper {
            format!("{n:X}")
        } else {
            format!("{n:x}")
        };
        if zeros {
            size = format!("00{size}");
        }
        b.awkward.push(b.bytes.len() + 1);
        b.bytes.extend_from_slice(size.as_bytes());
        if ext && rng.chance(1, 2) {
            let e = match rng.below(3) {
                0 => format!(";sig={:08x}", rng.next_u32()),
                1 => ";ieof".to_string(),
                _ => format!(";name=\"part {}\"", at),
            };
            b.bytes.extend_from_slice(e.as_bytes());
        }
        b.awkward.push(b.bytes.len() + 1);
        b.bytes.extend_from_slice(b"\r\n");
        b.bytes.extend_from_slice(&entity[at..at + n]);
        b.awkward.push(b.bytes.len());
        b.awkward.push(b.bytes.len() + 1);
        b.bytes.extend_from_slice(b"\r\n");
        at += n;
    }
    let last = if zeros { "000" } else { "0" };
    b.bytes.extend_from_slice(last.as_bytes());
    if ext && rng.chance(1, 3) {
        b.bytes.extend_from_slice(b";done");
    }
    b.awkward.push(b.bytes.len() + 1);
    b.bytes.extend_from_slice(b"\r\n");
    for (name, value) in trailers {
        b.bytes
            .extend_from_slice(format!("{name}: {value}\r\n").as_bytes());
        b.awkward.push(b.bytes.len() - 1);
    }
    let end = b.bytes.len();
    b.awkward.extend([end - 1, end, end + 1]);
    b.bytes.extend_from_slice(b"\r\n");
    b.awkward.retain(|&o| o > 0 && o < b.bytes.len());
    b
}

/// Words for text bodies.
const WORDS: &[&str] = &[
    "campus", "network", "library", "lecture", "schedule", "research", "student", "archive",
    "report", "release", "update", "project", "the", "of", "and", "to", "in", "for",
];

/// A text entity of about `n` bytes (exactly `n`).
pub(super) fn text_entity(rng: &mut SplitMix64, n: usize, json: bool) -> Vec<u8> {
    let mut s = if json {
        String::from("{\"items\":[")
    } else {
        String::from("<!DOCTYPE html>\n<html><body><p>")
    };
    while s.len() < n {
        s.push_str(rng.pick::<&str>(WORDS));
        s.push(' ');
    }
    let mut v = s.into_bytes();
    v.truncate(n);
    v
}
