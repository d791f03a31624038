//! Chunks: contiguous pieces of a stream handed to the data callback, and the
//! per-stream buffer that collects them.

use super::{Budget, BufferPool};
use crate::time::Timestamp;

/// Why a data event fired.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum DataReason {
    /// The chunk reached the chunk size.
    Full,
    /// The flush timeout passed since the chunk's first byte arrived.
    FlushTimeout,
    /// The stream reached its cutoff; no more data follows.
    Cutoff,
    /// The stream is terminating, or its delivery point reached its FIN
    /// (all of its data is known, before the closed connection's linger
    /// ends); this is its last data.
    Termination,
    /// A gap follows this data (the next chunk reports it).
    Gap,
    /// Per-packet delivery (protocols other than TCP and UDP): one packet's payload.
    Packet,
    /// Segment delivery ([`super::Delivery::Segments`]): new bytes handed
    /// over as soon as they were in order (a segment's payload, or a range
    /// that the out-of-order store could release).
    Segment,
}

/// Bytes missing from the stream right before a chunk's new data.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Gap {
    /// Stream offset of the first missing byte.
    pub offset: u64,
    /// Number of missing bytes (never seen, dropped for memory, or cut by the snapshot length).
    pub len: u64,
}

/// One packet of a stream, for applications that asked for packets
/// (Scap `need_pkts` / `scap_next_stream_packet`).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct PacketRecord {
    /// Capture time.
    pub ts: Timestamp,
    /// Stream offset of the packet's first payload byte.
    pub offset: u64,
    /// Payload bytes on the wire.
    pub len: u32,
    /// IP-layer length.
    pub ip_len: u32,
    /// TCP sequence number (0 for other protocols).
    pub seq: u32,
    /// TCP acknowledgment number.
    pub ack: u32,
    /// TCP flags.
    pub flags: u8,
    /// TCP window.
    pub window: u16,
}

/// A data event's payload: contiguous stream bytes starting at `offset`.
#[derive(Copy, Clone, Debug)]
pub struct Chunk<'a> {
    /// The bytes: kept or overlapping bytes of earlier chunks first, then the new ones.
    pub data: &'a [u8],
    /// Stream offset of `data[0]`.
    pub offset: u64,
    /// Index in `data` where the bytes never delivered before begin.
    pub new_from: usize,
    /// Why the event fired.
    pub reason: DataReason,
    /// Bytes missing right before `data[new_from]`, if any.
    pub gap: Option<Gap>,
    /// The packets that arrived since the last event and whose payload
    /// begins before this chunk's end (empty unless packets were
    /// requested): the packets of its bytes, and retransmissions of bytes
    /// already delivered. A packet stored out of order goes with the event
    /// that delivers its first byte; packets that arrive after a stream's
    /// last event are not delivered.
    pub packets: &'a [PacketRecord],
}

impl Chunk<'_> {
    /// Only the bytes not delivered before.
    pub fn new_data(&self) -> &[u8] {
        self.data.get(self.new_from..).unwrap_or(&[])
    }
}

/// Moves the records of packets whose payload begins at or past `end` out
/// of `records` (they go with a later event) and returns them, in order.
/// Allocates nothing when there are none.
pub(crate) fn records_from(records: &mut Vec<PacketRecord>, end: u64) -> Vec<PacketRecord> {
    if records.iter().all(|r| r.offset < end) {
        return Vec::new();
    }
    let mut later = Vec::new();
    records.retain(|r| {
        let past = r.offset >= end;
        if past {
            later.push(*r);
        }
        !past
    });
    later
}

/// The buffer collecting a stream's next chunk.
///
/// `data` holds `[kept/overlap bytes][new bytes]`; its first byte is at stream
/// offset `start`. All bytes in it are charged to the budget. The vector is
/// allocated once per stream and reused, so the in-order path does not
/// allocate per packet.
#[derive(Default)]
pub(crate) struct ChunkBuf {
    pub data: Vec<u8>,
    pub start: u64,
    /// Index of the first new byte.
    pub fresh: usize,
    /// Bytes kept by `keep_chunk` (they do not count toward the chunk size).
    pub kept: usize,
    /// When the first new byte arrived.
    pub pending_since: Option<Timestamp>,
    /// Gap right before the first new byte.
    pub gap: Option<Gap>,
    pub packets: Vec<PacketRecord>,
}

impl ChunkBuf {
    /// Stream offset just past the buffered bytes.
    #[inline]
    pub fn end(&self) -> u64 {
        self.start + self.data.len() as u64
    }

    /// Number of new (undelivered) bytes.
    #[inline]
    pub fn fresh_len(&self) -> usize {
        self.data.len() - self.fresh
    }

    /// Bytes that count toward the chunk size.
    #[inline]
    pub fn fill(&self) -> usize {
        self.data.len() - self.kept
    }

    /// Records a gap of `len` bytes at `offset` (the buffer must hold no new bytes).
    /// Kept and overlap bytes are released: they are not contiguous with what follows.
    pub fn note_gap(&mut self, offset: u64, len: u64, budget: &mut Budget) {
        debug_assert_eq!(self.fresh_len(), 0);
        budget.release(self.data.len());
        self.data.clear();
        self.fresh = 0;
        self.kept = 0;
        self.start = offset + len;
        self.gap = match self.gap {
            Some(g) if g.offset + g.len == offset => Some(Gap {
                offset: g.offset,
                len: g.len + len,
            }),
            _ => Some(Gap { offset, len }),
        };
    }

    /// After a delivery: keep everything (`keep`), or only the last `overlap` bytes.
    pub fn consume(&mut self, keep: bool, overlap: usize, budget: &mut Budget) {
        self.pending_since = None;
        self.gap = None;
        budget.release(self.packets.len() * std::mem::size_of::<PacketRecord>());
        self.packets.clear();
        if keep {
            self.fresh = self.data.len();
            self.kept = self.data.len();
            return;
        }
        let retain = overlap.min(self.data.len());
        let drop = self.data.len() - retain;
        self.data.drain(..drop);
        budget.release(drop);
        self.start += drop as u64;
        self.fresh = self.data.len();
        self.kept = 0;
    }

    /// After the stream's last chunk: frees the buffer's memory (kept and
    /// overlap bytes, packet records). The buffer stays, empty, at the same
    /// end offset, so the stream's accounting does not change.
    pub fn release_memory(&mut self, budget: &mut Budget, pool: &mut BufferPool) {
        budget.release(self.data.len());
        budget.release(self.packets.len() * std::mem::size_of::<PacketRecord>());
        self.start += self.data.len() as u64;
        pool.put(std::mem::take(&mut self.data));
        self.packets = Vec::new();
        self.fresh = 0;
        self.kept = 0;
        self.pending_since = None;
    }

    /// Releases everything (the data vector goes back to `pool`).
    pub fn clear(&mut self, budget: &mut Budget, pool: &mut BufferPool) {
        budget.release(self.data.len());
        budget.release(self.packets.len() * std::mem::size_of::<PacketRecord>());
        pool.put(std::mem::take(&mut self.data));
        self.packets = Vec::new();
        self.fresh = 0;
        self.kept = 0;
        self.gap = None;
        self.pending_since = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(offset: u64) -> PacketRecord {
        PacketRecord {
            ts: Timestamp::ZERO,
            offset,
            len: 10,
            ip_len: 50,
            seq: 0,
            ack: 0,
            flags: 0,
            window: 0,
        }
    }

    #[test]
    fn records_past_the_end_wait_for_a_later_event() {
        let mut now = vec![rec(0), rec(300), rec(100), rec(200)];
        let later = records_from(&mut now, 200);
        assert_eq!(now, [rec(0), rec(100)]);
        assert_eq!(later, [rec(300), rec(200)], "arrival order is kept");
        let mut all_before = vec![rec(5)];
        let none = records_from(&mut all_before, 10);
        assert!(none.is_empty() && none.capacity() == 0);
        assert_eq!(all_before, [rec(5)]);
    }
}
