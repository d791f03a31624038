//! Zeek-style connection history letters (`ShADadFf`…), kept in a few bytes
//! per connection.

/// Zeek-style connection history: one letter per event kind and direction,
/// in order of first occurrence. Each of the 16 (letter, direction) events
/// occurs at most once, so the order fits in 16 nibbles.
#[derive(Clone, Default)]
pub(crate) struct History {
    /// Event indices (letter index, +8 for the responder), 4 bits each, in
    /// order: a little-endian `u64` kept as bytes, so the record packs
    /// around it without padding.
    order: [u8; 8],
    seen: u16,
}

pub(crate) const HISTORY_LETTERS: &[u8; 8] = b"SHADFRTG";

impl History {
    pub(crate) fn push(&mut self, letter: u8, orig: bool) {
        // (A match rather than a search of `HISTORY_LETTERS`: the letter is
        // a constant at every call, so this folds away.)
        let i = match letter {
            b'S' => 0,
            b'H' => 1,
            b'A' => 2,
            b'D' => 3,
            b'F' => 4,
            b'R' => 5,
            b'T' => 6,
            b'G' => 7,
            _ => return,
        };
        let ev = i + if orig { 0 } else { 8 };
        let bit = 1u16 << ev;
        if self.seen & bit == 0 {
            let len = self.seen.count_ones();
            self.seen |= bit;
            let order = u64::from_le_bytes(self.order) | (ev as u64) << (4 * len);
            self.order = order.to_le_bytes();
        }
    }
    /// The letters, written into `buf`.
    pub(crate) fn render<'a>(&self, buf: &'a mut [u8; 16]) -> &'a str {
        let len = self.seen.count_ones() as usize;
        let order = u64::from_le_bytes(self.order);
        for (k, b) in buf.iter_mut().enumerate().take(len) {
            let ev = ((order >> (4 * k)) & 15) as usize;
            let c = HISTORY_LETTERS[ev & 7];
            *b = if ev < 8 { c } else { c.to_ascii_lowercase() };
        }
        std::str::from_utf8(&buf[..len]).unwrap_or("")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `History::push` maps each letter to its position in
    /// `HISTORY_LETTERS` (the match there and the table must agree).
    #[test]
    fn history_letters_match_their_bits() {
        for (i, &c) in HISTORY_LETTERS.iter().enumerate() {
            for orig in [true, false] {
                let mut h = History::default();
                h.push(c, orig);
                assert_eq!(h.seen, 1 << (i + if orig { 0 } else { 8 }), "{}", c as char);
            }
        }
    }
}
