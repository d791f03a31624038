//! Per-direction TCP sequence state: where delivery stands, the highest byte
//! seen, the FIN, what the peer acknowledged.
//!
//! Sequence numbers are 32 bits and wrap; stream offsets are 64 bits and do
//! not. [`offset_of`] maps a sequence number to the offset nearest the
//! delivery point, so wrap-around and streams longer than 4 GiB are handled.
//!
//! The engine keeps the stream start (`base`), the initial sequence number
//! and the window inline in every connection, and this state only once a
//! direction has carried payload or a FIN (all of it is zero before).

/// Sequence-space progress of one direction, as stream offsets.
#[derive(Clone, Debug, Default)]
pub struct TcpSeq {
    /// Delivery point: every byte below it is accounted for.
    pub next: u64,
    /// One past the highest byte seen.
    pub max_end: u64,
    /// Offset of the FIN, if one was seen.
    pub fin: Option<u64>,
    /// Highest offset (in this direction's space) acknowledged by the peer.
    pub acked: u64,
}

const HALF: i64 = 1 << 31;
const FULL: i64 = 1 << 32;

/// The stream offset of sequence number `seq` in a stream whose offset 0 is
/// sequence number `base`, taking the one nearest the delivery point `next`;
/// negative when it lies before the stream start.
#[inline]
pub fn offset_of(base: u32, next: u64, seq: u32) -> i64 {
    let rel = i64::from(seq.wrapping_sub(base));
    let next = next.min(i64::MAX as u64) as i64;
    let mut cand = (next & !(FULL - 1)) | rel;
    if cand - next > HALF {
        cand -= FULL;
    } else if next - cand > HALF {
        cand += FULL;
    }
    cand
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wraps_around() {
        let base = u32::MAX - 9;
        assert_eq!(offset_of(base, 0, u32::MAX - 9), 0);
        assert_eq!(offset_of(base, 0, 5), 15);
        assert_eq!(offset_of(base, 0, u32::MAX - 19), -10);
        let next = (1 << 32) + 100;
        // Far into the stream, past one wrap: the same seq maps near `next`.
        assert_eq!(
            offset_of(base, next, (u32::MAX - 9).wrapping_add(100)),
            (1 << 32) + 100
        );
    }
}
