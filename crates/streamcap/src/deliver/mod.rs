//! What the application receives: stream descriptors, chunks of stream data,
//! events, the memory budget that bounds everything held for delivery,
//! prioritized packet loss over it ([`overload`]), and the per-direction
//! context that fills chunks and calls the handler.

mod budget;
mod chunk;
pub(crate) mod context;
mod handler;
pub mod overload;
mod owned;
mod pool;
mod stream;

pub use budget::Budget;
pub(crate) use chunk::{records_from, ChunkBuf};
pub use chunk::{Chunk, DataReason, Gap, PacketRecord};
pub use handler::{Callbacks, FlowEnd, Handler};
pub use overload::{LevelStats, Overload, OverloadStats, PplRule};
pub use owned::{Decision, OwnedChunk, Returns, StreamRef};
pub(crate) use pool::BufferPool;
pub(crate) use stream::Opposite;
pub use stream::{
    Delivery, EndReason, Stream, StreamCounters, StreamErrors, StreamInfo, StreamParams,
    StreamStatus,
};
