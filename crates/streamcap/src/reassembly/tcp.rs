//! Per-direction TCP sequence state: where the stream starts, where delivery
//! stands, the highest byte seen, the FIN, the window.
//!
//! Sequence numbers are 32 bits and wrap; stream offsets are 64 bits and do
//! not. [`TcpDir::offset_of`] maps a sequence number to the offset nearest the
//! delivery point, so wrap-around and streams longer than 4 GiB are handled.

/// Sequence state of one direction.
#[derive(Clone, Debug, Default)]
pub struct TcpDir {
    /// Sequence number of stream offset 0 (the byte after the SYN, or the first
    /// byte seen when the connection was picked up mid-stream).
    pub base: Option<u32>,
    /// Initial sequence number from a SYN, if one was seen.
    pub isn: Option<u32>,
    /// Delivery point: every byte below it is accounted for.
    pub next: u64,
    /// One past the highest byte seen.
    pub max_end: u64,
    /// Offset of the FIN, if one was seen.
    pub fin: Option<u64>,
    /// Highest offset (in this direction's space) acknowledged by the peer.
    pub acked: u64,
    /// Last advertised window of this direction's sender (unscaled).
    pub window: u16,
    /// Window scale from this sender's SYN.
    pub wscale: Option<u8>,
}

const HALF: i64 = 1 << 31;
const FULL: i64 = 1 << 32;

impl TcpDir {
    /// The stream offset of sequence number `seq`, taking the one nearest the
    /// delivery point; negative when it lies before the stream start.
    /// Returns `None` when the base is not yet known.
    pub fn offset_of(&self, seq: u32) -> Option<i64> {
        let base = self.base?;
        let rel = i64::from(seq.wrapping_sub(base));
        let next = self.next.min(i64::MAX as u64) as i64;
        let mut cand = (next & !(FULL - 1)) | rel;
        if cand - next > HALF {
            cand -= FULL;
        } else if next - cand > HALF {
            cand += FULL;
        }
        Some(cand)
    }

    /// Whether the stream start is known.
    pub fn started(&self) -> bool {
        self.base.is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wraps_around() {
        let mut d = TcpDir {
            base: Some(u32::MAX - 9),
            ..Default::default()
        };
        assert_eq!(d.offset_of(u32::MAX - 9), Some(0));
        assert_eq!(d.offset_of(5), Some(15));
        assert_eq!(d.offset_of(u32::MAX - 19), Some(-10));
        d.next = (1 << 32) + 100;
        // Far into the stream, past one wrap: the same seq maps near `next`.
        assert_eq!(
            d.offset_of((u32::MAX - 9).wrapping_add(100)),
            Some((1 << 32) + 100)
        );
        assert_eq!(TcpDir::default().offset_of(1), None);
    }
}
