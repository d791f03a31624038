//! Chunks handed over by value, for handlers that analyse them on another
//! thread ([`crate::dispatch::analysis`]), and what comes back to the
//! engine: the memory to release, buffers to reuse, and the decisions the
//! application took in its callbacks.
//!
//! A handler with [`Handler::TAKES_CHUNKS`](super::Handler::TAKES_CHUNKS)
//! receives each chunk's buffer and packet records in an [`OwnedChunk`]
//! instead of a borrowed [`Chunk`]: the bytes are not copied again, and
//! they stay charged to the worker's memory budget until the handler
//! returns [`OwnedChunk::charged`] bytes through
//! [`Handler::collect_returns`](super::Handler::collect_returns). So the
//! budget bounds the bytes on their way to the application, wherever they
//! are.

use super::{Chunk, DataReason, Gap, PacketRecord, StreamParams};
use crate::flow::Side;

/// A data event's chunk, by value: the stream's buffer itself.
#[derive(Debug)]
pub struct OwnedChunk {
    /// The bytes: overlap bytes of the previous chunk first, then the new ones.
    pub data: Vec<u8>,
    /// Stream offset of `data[0]`.
    pub offset: u64,
    /// Index in `data` where the bytes never delivered before begin.
    pub new_from: usize,
    /// Why the event fired.
    pub reason: DataReason,
    /// Bytes missing right before `data[new_from]`, if any.
    pub gap: Option<Gap>,
    /// The packets of the chunk (as [`Chunk::packets`]).
    pub packets: Vec<PacketRecord>,
    /// Bytes of the worker's budget this chunk holds (its bytes and packet
    /// records): to be returned when the chunk is done with.
    pub charged: usize,
}

impl OwnedChunk {
    /// The chunk as a data callback sees it.
    pub fn as_chunk(&self) -> Chunk<'_> {
        Chunk {
            data: &self.data,
            offset: self.offset,
            new_from: self.new_from,
            reason: self.reason,
            gap: self.gap,
            packets: &self.packets,
        }
    }
}

/// A stream of a worker, as a decision names it: the connection's slot in
/// the flow table, its serial number (a slot is reused by later
/// connections), and the direction's side.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct StreamRef {
    pub(crate) slot: u32,
    pub(crate) conn_id: u64,
    pub(crate) side: Side,
}

/// What a callback decided for a stream: applied by the engine before the
/// next packet it processes after the decision comes back.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Decision {
    /// The stream.
    pub stream: StreamRef,
    /// `Stream::discard` was called.
    pub discard: bool,
    /// The stream's parameters after the callback, when a setter ran.
    pub params: Option<StreamParams>,
}

/// What a handler gives back to its worker, gathered by
/// [`Handler::collect_returns`](super::Handler::collect_returns).
#[derive(Debug, Default)]
pub struct Returns {
    /// Budget bytes to release (the `charged` bytes of chunks done with).
    pub released: usize,
    /// Emptied chunk buffers, for reuse.
    pub buffers: Vec<Vec<u8>>,
    /// Decisions, in the order they were taken.
    pub decisions: Vec<Decision>,
}

impl Returns {
    /// Nothing to give back.
    pub fn is_empty(&self) -> bool {
        self.released == 0 && self.buffers.is_empty() && self.decisions.is_empty()
    }
}
