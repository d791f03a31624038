//! The connection record: both directions of a flow, the connection's
//! kind, serial number, history and closing state, as the flow table stores
//! it.

use super::direction::DirState;
use super::history::History;
use super::{ListId, Side};
use crate::deliver::{EndReason, StreamStatus};
use crate::time::Timestamp;

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    Tcp,
    Udp,
    Other,
}

impl Kind {
    pub(crate) fn list(self) -> ListId {
        match self {
            Kind::Tcp => ListId::Tcp,
            Kind::Udp => ListId::Udp,
            Kind::Other => ListId::Other,
        }
    }
}

pub(crate) struct Conn<S> {
    pub(crate) dirs: [DirState<S>; 2],
    /// Serial number (unique within a worker).
    pub(crate) conn_id: u64,
    pub(crate) history: History,
    pub(crate) kind: Kind,
    pub(crate) orig_side: Side,
    pub(crate) closing: Option<EndReason>,
    /// bit 0: SYN from the initiator; bit 1: SYN-ACK from the responder.
    pub(crate) handshake: u8,
    /// The side whose packet created the connection: its start is the
    /// connection's first packet time.
    pub(crate) first_side: Side,
}

impl<S> Conn<S> {
    /// Asks the CPU to prefetch the connection's cache lines that a packet
    /// writes besides the ones a look-up reads: both directions' counters
    /// and times, and the connection's own fields after them (the record
    /// spans four or five lines, at no fixed alignment). A hint only.
    #[inline]
    pub(crate) fn warm(&self) {
        use prefetch_index::prefetch_index;
        use std::slice::from_ref;
        prefetch_index(from_ref(&self.dirs[0].end), 0);
        prefetch_index(from_ref(&self.dirs[1].end), 0);
        prefetch_index(from_ref(&self.dirs[1].user), 0);
        prefetch_index(from_ref(&self.history), 0);
    }

    /// Time of the connection's first packet.
    pub(crate) fn first(&self) -> Timestamp {
        self.dirs[self.first_side.index()].start
    }
    /// Time of the connection's latest packet.
    pub(crate) fn last(&self) -> Timestamp {
        self.dirs[0].end.max(self.dirs[1].end)
    }
}

pub(crate) fn pair<S>(
    dirs: &mut [DirState<S>; 2],
    side: Side,
) -> (&mut DirState<S>, &mut DirState<S>) {
    let (a, b) = dirs.split_at_mut(1);
    match side {
        Side::A => (&mut a[0], &mut b[0]),
        Side::B => (&mut b[0], &mut a[0]),
    }
}

/// Marks both directions of a closed (lingering) connection as closing.
pub(crate) fn mark_closing<S>(conn: &mut Conn<S>) {
    if let Some(reason) = conn.closing {
        for d in &mut conn.dirs {
            if d.status == StreamStatus::Active {
                d.status = StreamStatus::Closing(reason);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::flow::direction::Ext;

    /// An idle connection (handshake, no payload) is what a busy link holds
    /// most of: its record must stay small (libnids spends about 346 bytes
    /// on one; the target is 256 bytes per connection all in).
    #[test]
    fn connection_footprint() {
        use std::mem::size_of;
        let dir = size_of::<DirState<()>>();
        let conn = size_of::<Conn<()>>();
        // With 16 bytes of user state per direction (the CLI's is 8).
        let cli = size_of::<Conn<[usize; 2]>>();
        eprintln!(
            "direction {dir}, connection {conn} ({cli} with 16 bytes of user state per \
             direction), extension at the first payload byte {}",
            size_of::<Ext>()
        );
        assert!(dir <= 48, "{dir}");
        assert!(conn <= 120, "{conn}");
        assert!(cli <= 152, "{cli}");
    }
}
