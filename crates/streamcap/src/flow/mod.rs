//! Which connection a packet belongs to, and the connection's life.
//!
//! - [`key`](FlowKey): bidirectional flow keys.
//! - `table`: the flow table with exact least-recently-active expiry queues.
//! - `conn`, `direction`, `history`: the connection record the table holds,
//!   its two directions, and its Zeek-style history letters.
//! - `tcp_state`: TCP connection tracking (handshake, reuse, RST, FIN, ACK).
//! - `expiry`: inactivity and flush timers on packet time.
//! - `termination`: ending connections and the end of the input.
//! - `closed`: recently closed connections, whose late packets are not a
//!   new connection.
//! - `tunnel`: the tunnels inner flows came through, interned for their keys.

pub(crate) mod closed;
pub(crate) mod conn;
pub(crate) mod direction;
mod expiry;
pub(crate) mod history;
mod key;
mod table;
mod tcp_state;
mod termination;
mod tunnel;

pub use key::{Direction, FlowKey, Side};
pub use table::{FlowHash, FlowTable, ListId};
pub use tunnel::{tunnel, tunnel_depth, tunnel_id, Tunnel, TunnelHop, MAX_TUNNELS};

/// A packet's flow: the key, the packet's side of it, and the key's hash in
/// the worker's flow table (computed once per packet).
pub(crate) struct FlowOf {
    pub(crate) key: FlowKey,
    pub(crate) side: Side,
    pub(crate) hash: FlowHash,
    /// The slot [`Worker::process_batch`]'s grouped look-up found for the
    /// hash, if any: where the flow probably is (checked against the key
    /// before use, so a stale or colliding one only costs the full look-up).
    pub(crate) slot_hint: Option<u32>,
}
