//! What the application receives: stream descriptors, chunks of stream data,
//! events, and the memory budget that bounds everything held for delivery.

mod budget;
mod chunk;
mod handler;
mod pool;
mod stream;

pub use budget::Budget;
pub(crate) use chunk::{records_from, ChunkBuf};
pub use chunk::{Chunk, DataReason, Gap, PacketRecord};
pub use handler::{Callbacks, FlowEnd, Handler};
pub(crate) use pool::BufferPool;
pub(crate) use stream::Opposite;
pub use stream::{
    Delivery, EndReason, Stream, StreamCounters, StreamErrors, StreamInfo, StreamParams,
    StreamStatus,
};
