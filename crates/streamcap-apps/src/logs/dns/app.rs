//! `dns.log` as an application ([`crate::compose::App`]): every UDP or TCP
//! connection whose first message the classifier's DNS probe recognises
//! (on any port) is followed to its end; the others are given up at their
//! first message. Queries and responses are paired per connection
//! ([`DnsFlow`]); records go to a [`Records`] sink as pairs complete, and
//! the rest when the connection ends.

use super::{DnsFlow, DnsProto, DnsRecord, TcpDnsFramer};
use crate::classify::probe::{self, Hint};
use crate::compose::{App, Notes, Reply, Want};
use crate::conn_id::ConnId;
use crate::sink::Records;
use std::collections::HashMap;
use streamcap::deliver::{Chunk, FlowEnd, Stream};
use streamcap::flow::Direction;

/// Connections followed at once per worker; past it new ones are not
/// logged (counted in [`DnsStats::over_limit`]).
pub const MAX_FLOWS: usize = 1 << 20;

/// A direction's state: for TCP, the framing of its messages.
#[derive(Default)]
pub struct DnsDir {
    framer: Option<Box<TcpDnsFramer>>,
    /// The first message was looked at.
    checked: bool,
}

/// What the DNS log did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DnsStats {
    /// Connections logged.
    pub flows: u64,
    /// Records written.
    pub records: u64,
    /// Connections not logged: too many followed at once.
    pub over_limit: u64,
}

/// The DNS log: records to `K`.
pub struct DnsLog<K> {
    flows: HashMap<u64, DnsFlow>,
    out: Vec<DnsRecord>,
    stats: DnsStats,
    /// Where the records go.
    pub sink: K,
}

impl<K: Records<DnsRecord>> DnsLog<K> {
    /// A log whose records go to `sink`.
    pub fn new(sink: K) -> DnsLog<K> {
        DnsLog {
            flows: HashMap::new(),
            out: Vec::new(),
            stats: DnsStats::default(),
            sink,
        }
    }

    /// What it did so far.
    pub fn stats(&self) -> &DnsStats {
        &self.stats
    }

    fn drain(&mut self) {
        self.stats.records += self.out.len() as u64;
        for r in self.out.drain(..) {
            self.sink.record(r);
        }
    }

    /// One message of `s`'s connection; `false` if the connection is not
    /// followed (not DNS, or over the limit).
    fn message<S>(&mut self, s: &Stream<'_, S>, msg: &[u8]) -> bool {
        let conn = s.info().conn_id;
        if !self.flows.contains_key(&conn) {
            if self.flows.len() >= MAX_FLOWS {
                self.stats.over_limit += 1;
                return false;
            }
            let id = ConnId::of_stream(s);
            let proto = if s.proto() == 6 {
                DnsProto::Tcp
            } else {
                DnsProto::Udp
            };
            self.flows
                .insert(conn, DnsFlow::new(id.uid(), id.orig, id.resp, proto));
            self.stats.flows += 1;
        }
        if let Some(f) = self.flows.get_mut(&conn) {
            f.message(s.info().end, msg, &mut self.out);
        }
        self.drain();
        true
    }
}

/// Whether `msg` is, by the classifier's probe, a DNS message.
fn is_dns(msg: &[u8]) -> bool {
    matches!(probe::datagram(msg), Some(Hint::Dns { .. }))
}

impl<K: Records<DnsRecord>> App for DnsLog<K> {
    type State = DnsDir;

    fn prepare<S>(&self, s: &mut Stream<'_, S>) {
        crate::compose::datagrams_whole(s);
    }

    fn start<S>(&mut self, s: &Stream<'_, S>, _: &mut DnsDir) -> Want {
        match s.proto() {
            6 | 17 => Want::All,
            _ => Want::Nothing,
        }
    }

    fn data<S>(&mut self, s: &Stream<'_, S>, st: &mut DnsDir, chunk: &Chunk<'_>) -> Reply {
        let data = chunk.new_data();
        if s.proto() == 17 {
            if !st.checked {
                st.checked = true;
                // A direction joins a connection already followed (the
                // responses of a recognised query), or starts one.
                if !self.flows.contains_key(&s.info().conn_id) && !is_dns(data) {
                    return Want::Nothing.into();
                }
            }
            return if self.message(s, data) {
                Want::All.into()
            } else {
                Want::Nothing.into()
            };
        }
        if chunk.gap.is_some() {
            if let Some(f) = st.framer.as_mut() {
                f.gap();
            }
            return Want::Nothing.into();
        }
        let framer = st.framer.get_or_insert_with(Default::default);
        let mut msgs: Vec<Vec<u8>> = Vec::new();
        framer.push(data, |m| msgs.push(m.to_vec()));
        for m in msgs {
            if !st.checked {
                st.checked = true;
                let followed = self.flows.contains_key(&s.info().conn_id);
                if !followed && !is_dns(&m) {
                    return Want::Nothing.into();
                }
            }
            if !self.message(s, &m) {
                return Want::Nothing.into();
            }
        }
        // Nothing framed yet: a length prefix that cannot be DNS (more than
        // a few KiB before the first message) ends the wait.
        if !st.checked && chunk.offset + chunk.data.len() as u64 > 4096 {
            return Want::Nothing.into();
        }
        Want::All.into()
    }

    fn flow_end<S>(
        &mut self,
        fe: &FlowEnd<'_, S>,
        orig: &mut DnsDir,
        resp: &mut DnsDir,
        _: &mut Notes,
    ) {
        let conn = fe.stream(Direction::Orig).conn_id;
        if let Some(mut flow) = self.flows.remove(&conn) {
            let ts = fe.last_ts();
            for st in [orig, resp] {
                if let Some(f) = st.framer.take() {
                    f.finish(|m| flow.message(ts, m, &mut self.out));
                }
            }
            flow.finish(&mut self.out);
            self.drain();
        }
    }
}
