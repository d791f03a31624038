//! The classifier as an application ([`crate::compose::App`]): each
//! direction is fed until its evidence is complete and then given up (Scap
//! §VII-C: the rest of a classified stream is only counted); when the
//! connection ends, both directions' evidence decide its label, which goes
//! into the connection's notes (for the flow records), the per-label
//! totals, and, for TLS, an `ssl.log` record.

use super::{decide, App, Classification, Evidence, Progress, Transport, TLS_WALK_LIMIT};
use crate::compose::{self, Notes, Reply, Want};
use crate::conn_id::ConnId;
use crate::logs::tls::SslRecord;
use crate::sink::Records;
use streamcap::deliver::{Chunk, FlowEnd, Stream};
use streamcap::flow::Direction;

/// What one label accounts for.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct LabelTotals {
    /// Connections.
    pub flows: u64,
    /// Packets, both directions.
    pub packets: u64,
    /// IP bytes, both directions.
    pub bytes: u64,
}

/// Per-label totals, in [`App::ALL`]'s order; TCP and UDP connections
/// only (others get no label).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClassifyStats {
    /// One entry per label.
    pub labels: Vec<(App, LabelTotals)>,
    /// Connections classified by a port alone (content was inconclusive).
    pub by_port: u64,
}

impl Default for ClassifyStats {
    fn default() -> Self {
        ClassifyStats {
            labels: App::ALL
                .iter()
                .map(|a| (*a, LabelTotals::default()))
                .collect(),
            by_port: 0,
        }
    }
}

impl ClassifyStats {
    /// Adds `o` into `self` (several workers).
    pub fn add(&mut self, o: &ClassifyStats) {
        for ((_, a), (_, b)) in self.labels.iter_mut().zip(&o.labels) {
            a.flows += b.flows;
            a.packets += b.packets;
            a.bytes += b.bytes;
        }
        self.by_port += o.by_port;
    }

    /// The totals of `app`.
    pub fn of(&self, app: App) -> LabelTotals {
        self.labels
            .iter()
            .find(|(a, _)| *a == app)
            .map(|(_, t)| *t)
            .unwrap_or_default()
    }
}

/// Classification of every TCP and UDP connection, with `ssl.log` records
/// of the TLS ones going to `K` (`()` to drop them).
pub struct Classify<K = ()> {
    stats: ClassifyStats,
    /// Where `ssl.log` records go.
    pub ssl: K,
    /// Each connection's classification, when asked for
    /// ([`Classify::keep_results`]).
    results: Option<Vec<(ConnId, Classification)>>,
}

impl<K: Records<SslRecord>> Classify<K> {
    /// A classifier whose `ssl.log` records go to `ssl`.
    pub fn new(ssl: K) -> Classify<K> {
        Classify {
            stats: ClassifyStats::default(),
            ssl,
            results: None,
        }
    }

    /// Also keeps every connection's classification (for tests and small
    /// captures: it grows with the connections).
    pub fn keep_results(mut self) -> Self {
        self.results = Some(Vec::new());
        self
    }

    /// The kept classifications ([`Classify::keep_results`]).
    pub fn results(&self) -> &[(ConnId, Classification)] {
        self.results.as_deref().unwrap_or(&[])
    }

    /// The per-label totals so far.
    pub fn stats(&self) -> &ClassifyStats {
        &self.stats
    }
}

impl<K: Records<SslRecord>> compose::App for Classify<K> {
    type State = Evidence;

    fn prepare<S>(&self, s: &mut Stream<'_, S>) {
        compose::datagrams_whole(s);
    }

    fn start<S>(&mut self, s: &Stream<'_, S>, _: &mut Evidence) -> Want {
        match Transport::from_ip_proto(s.proto()) {
            // TLS record headers are walked that far; other protocols are
            // done much earlier and say so.
            Some(Transport::Tcp) => Want::UpTo(TLS_WALK_LIMIT),
            Some(Transport::Udp) => Want::All,
            None => Want::Nothing,
        }
    }

    fn data<S>(&mut self, s: &Stream<'_, S>, st: &mut Evidence, chunk: &Chunk<'_>) -> Reply {
        let Some(t) = Transport::from_ip_proto(s.proto()) else {
            return Want::Nothing.into();
        };
        if chunk.gap.is_some() && t == Transport::Tcp {
            // What follows a hole is not the stream's start.
            st.finish();
            return Want::Nothing.into();
        }
        match st.feed_chunk(t, chunk) {
            Progress::Done => Want::Nothing.into(),
            // Without an ssl.log, TLS records past the hello tell nothing
            // the label needs.
            Progress::More if !self.ssl.active() && st.is_labelled() => Want::Nothing.into(),
            Progress::More => Want::All.into(),
        }
    }

    fn close<S>(&mut self, _: &Stream<'_, S>, st: &mut Evidence) {
        st.finish();
    }

    fn flow_end<S>(
        &mut self,
        fe: &FlowEnd<'_, S>,
        orig: &mut Evidence,
        resp: &mut Evidence,
        notes: &mut Notes,
    ) {
        let Some(t) = Transport::from_ip_proto(fe.proto()) else {
            return;
        };
        orig.finish();
        resp.finish();
        let (o, r) = (fe.orig_endpoint(), fe.resp_endpoint());
        let c = decide(t, o.1, r.1, orig, resp);
        notes.app = Some(c.app.name());
        notes.service = c.app.zeek_service();
        let (so, sr) = (fe.stream(Direction::Orig), fe.stream(Direction::Resp));
        if let Some((_, tot)) = self.stats.labels.iter_mut().find(|(a, _)| *a == c.app) {
            tot.flows += 1;
            tot.packets += so.counters.pkts + sr.counters.pkts;
            tot.bytes += so.counters.bytes + sr.counters.bytes;
        }
        self.stats.by_port += u64::from(c.by_port);
        let ssl = c.app == App::Tls && self.ssl.active();
        let id = (ssl || self.results.is_some()).then(|| ConnId::of_flow(fe));
        if let (true, Some(tls), Some(id)) = (ssl, &c.tls, &id) {
            let uid = id.uid();
            self.ssl.record(SslRecord::new(id.first, uid, o, r, tls));
        }
        if let (Some(v), Some(id)) = (self.results.as_mut(), id) {
            v.push((id, c));
        }
    }
}
