//! Which connection a packet belongs to: bidirectional flow keys and the flow
//! table with inactivity expiry.

mod key;
mod table;
mod tunnel;

pub use key::{Direction, FlowKey, Side};
pub use table::{FlowHash, FlowTable, ListId};
pub use tunnel::{tunnel, tunnel_depth, tunnel_id, Tunnel, TunnelHop, MAX_TUNNELS};
