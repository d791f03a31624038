//! DNS over TCP (RFC 1035 §4.2.2): each message preceded by its length in
//! two bytes. A [`TcpDnsFramer`] takes one direction's stream bytes in
//! any pieces and hands out whole messages; a gap in the stream loses the
//! framing, so the direction is given up from there (Zeek's analyzer
//! cannot resynchronise either). A message cut by the end of the stream
//! is handed out by [`TcpDnsFramer::finish`], as Zeek parses a partial
//! message at the connection's end.

/// Splits one direction of a TCP DNS connection into messages.
#[derive(Default, Debug)]
pub struct TcpDnsFramer {
    buf: Vec<u8>,
    broken: bool,
}

impl TcpDnsFramer {
    /// A framer at the start of a stream.
    pub fn new() -> TcpDnsFramer {
        TcpDnsFramer::default()
    }

    /// The next bytes of the stream; `each` gets every message they complete.
    pub fn push(&mut self, mut data: &[u8], mut each: impl FnMut(&[u8])) {
        if self.broken {
            return;
        }
        while !data.is_empty() {
            if self.buf.len() < 2 {
                let take = (2 - self.buf.len()).min(data.len());
                self.buf.extend_from_slice(&data[..take]);
                data = &data[take..];
                if self.buf.len() < 2 {
                    return;
                }
            }
            let want = 2 + usize::from(u16::from_be_bytes([self.buf[0], self.buf[1]]));
            let take = (want - self.buf.len()).min(data.len());
            self.buf.extend_from_slice(&data[..take]);
            data = &data[take..];
            if self.buf.len() == want {
                each(&self.buf[2..]);
                self.buf.clear();
            }
        }
    }

    /// Bytes are missing from the stream: no message can be found after them.
    pub fn gap(&mut self) {
        self.broken = true;
        self.buf = Vec::new();
    }

    /// Whether a gap ended the framing.
    pub fn is_broken(&self) -> bool {
        self.broken
    }

    /// The stream ended: a partial message (past its length), if any.
    pub fn finish(mut self, mut each: impl FnMut(&[u8])) {
        if !self.broken && self.buf.len() > 2 {
            each(&self.buf[2..]);
        }
        self.buf.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_split_anywhere_come_out_whole() {
        let mut stream = Vec::new();
        let msgs: Vec<Vec<u8>> = (0..5u8).map(|i| vec![i; 12 + usize::from(i) * 7]).collect();
        for m in &msgs {
            stream.extend_from_slice(&(m.len() as u16).to_be_bytes());
            stream.extend_from_slice(m);
        }
        for piece in 1..=stream.len() {
            let mut f = TcpDnsFramer::new();
            let mut got = Vec::new();
            for c in stream.chunks(piece) {
                f.push(c, |m| got.push(m.to_vec()));
            }
            f.finish(|m| got.push(m.to_vec()));
            assert_eq!(got, msgs, "pieces of {piece}");
        }
    }

    #[test]
    fn a_gap_stops_and_the_end_flushes() {
        let mut f = TcpDnsFramer::new();
        let mut got = Vec::new();
        f.push(&[0, 20, 1, 2, 3], |m| got.push(m.to_vec()));
        f.finish(|m| got.push(m.to_vec()));
        assert_eq!(got, vec![vec![1, 2, 3]]);
        let mut f = TcpDnsFramer::new();
        f.push(&[0, 3, 1], |_| panic!());
        f.gap();
        assert!(f.is_broken());
        f.push(&[0, 1, 9], |_| panic!());
        f.finish(|_| panic!());
    }
}
