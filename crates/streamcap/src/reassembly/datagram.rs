//! UDP streams (payloads concatenated in arrival order) and per-packet
//! delivery for other protocols: no sequence numbers, the cutoff still
//! applies.

use crate::deliver::context::{Cx, GapKind};
use crate::deliver::{DataReason, Handler, StreamErrors};

impl<H: Handler> Cx<'_, H> {
    /// Processes a UDP payload or another protocol's packet: appended at the
    /// end of the stream (no sequence numbers).
    pub(crate) fn datagram(&mut self, present: &[u8], wire: u64, per_packet: bool) {
        let start = self.next();
        let end = start + wire;
        self.e().tcp.max_end = end;
        let limit = self.cutoff_now();
        let ce = end.min(limit.max(start));
        let pe = (start + present.len() as u64).min(ce);
        let reason = if per_packet {
            DataReason::Packet
        } else {
            DataReason::Segment
        };
        // Prioritized packet loss applies to this datagram's own bytes.
        let consumed = self.commit_data(&present[..(pe - start) as usize], reason) as u64;
        self.ppl_drop = false;
        if consumed == pe - start && ce > pe {
            self.me.errors.insert(StreamErrors::TRUNCATED);
            self.commit_gap(ce - pe, GapKind::Missing);
        }
        // Past the cutoff: the captured bytes are discarded, the cut ones missing.
        let rest = self.next();
        if rest < end {
            let pe = (start + present.len() as u64).clamp(rest, end);
            self.commit_gap(pe - rest, GapKind::Discarded);
            if end > pe {
                self.me.errors.insert(StreamErrors::TRUNCATED);
                self.commit_gap(end - pe, GapKind::Missing);
            }
        }
        if per_packet {
            self.deliver(DataReason::Packet);
        }
        self.settle_cutoff();
    }
}
