//! Which connection a packet belongs to: bidirectional flow keys and the flow
//! table with inactivity expiry.

mod key;
mod table;

pub use key::{Direction, FlowKey, Side};
pub use table::{FlowHash, FlowTable, ListId};
