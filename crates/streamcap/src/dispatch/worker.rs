//! The worker: one flow shard's whole data path, from a captured frame to the
//! application's callbacks.
//!
//! A [`Worker`] owns its flow table, its memory budget, its fragment
//! reassembler and its handler, so N workers can run side by side, each on its
//! own shard of flows. Time is packet time: the worker's clock is the highest
//! timestamp seen, so offline results do not depend on how fast the input is
//! read. The stages it runs live beside their kind: decoding in
//! [`crate::decode`], connection tracking, expiry and termination in
//! [`crate::flow`], TCP reassembly in [`crate::reassembly`], chunk delivery
//! in [`crate::deliver`]; `dispatch::batch` is its grouped fast path.

use crate::config::Config;
use crate::decode::defrag::{DefragOutcome, Defragmenter, FragKey, Fragment};
use crate::decode::tunnel::Decapsulator;
use crate::decode::{decode_ip, decode_transport, FragmentInfo, NetPacket, Transport};
use crate::deliver::context::{cx, FlushQueue, Outcome};
use crate::deliver::{
    Budget, BufferPool, EndReason, Handler, Overload, PacketRecord, StreamParams,
};
use crate::dispatch::fanout::Shard;
use crate::dispatch::locality::LocalityStage;
use crate::flow::closed::ClosedConns;
use crate::flow::conn::{pair, Conn, Kind};
use crate::flow::direction::{params_for, DirState, F_CREATED, F_DISCARD};
use crate::flow::history::History;
use crate::flow::{Direction, FlowKey, FlowOf, FlowTable, Side};
use crate::source::RawPacket;
use crate::stats::{GlobalStats, ProtoClass};
use crate::time::Timestamp;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// The ports a flow key takes from a transport header: ICMP's type and
/// code or counterpart type ([`crate::decode::IcmpMessage::flow_ports`]),
/// none for other protocols.
#[inline]
pub(crate) fn ports(t: &Transport<'_>) -> (u16, u16) {
    match t {
        Transport::Tcp(seg) => (seg.src_port, seg.dst_port),
        Transport::Udp(u) => (u.src_port, u.dst_port),
        Transport::Icmp(m) => m.flow_ports(),
        Transport::Other { .. } => (0, 0),
    }
}

/// One flow shard: decodes frames, tracks connections, reassembles streams,
/// and calls the handler.
///
/// ```
/// use streamcap::{deliver::Callbacks, Config, Worker};
/// let mut w = Worker::new(Config::default(), Callbacks::<()>::new());
/// // feed frames with w.process(&raw_packet) ...
/// let stats = w.finish();
/// assert_eq!(stats.packets, 0);
/// ```
pub struct Worker<H: Handler> {
    pub(crate) cfg: Config,
    /// Stream parameters from `cfg`, by direction (orig, resp).
    pub(crate) defaults: [StreamParams; 2],
    pub(crate) handler: H,
    pub(crate) table: FlowTable<Conn<H::State>>,
    /// Connections that closed and ended, whose late packets are not a new
    /// connection.
    pub(crate) closed: ClosedConns,
    pub(crate) budget: Budget,
    /// Prioritized packet loss over `budget`.
    pub(crate) overload: Overload,
    /// Spare chunk-buffer vectors, reused across streams.
    pub(crate) pool: BufferPool,
    pub(crate) defrag: Defragmenter,
    pub(crate) flush: FlushQueue,
    pub(crate) now: Timestamp,
    /// No flow can time out before this (a lower bound of the list heads' deadlines).
    pub(crate) next_check: Timestamp,
    pub(crate) next_conn_id: u64,
    /// How far apart this worker's connection ids are
    /// ([`Worker::with_conn_ids`]).
    pub(crate) conn_id_step: u64,
    pub(crate) stats: GlobalStats,
    pub(crate) scratch: Vec<u8>,
    /// The share of the input this worker owns, when several workers read
    /// the same input (file runs); `None` processes everything.
    pub(crate) shard: Option<Shard>,
    /// Some stream may start with a cutoff above 0 (by default or by a
    /// cutoff class), so payload may be copied into chunk buffers: worth
    /// prefetching their ends in [`Worker::process_batch`].
    pub(crate) copies_payload: bool,
    /// Finds tunnels (IP-in-IP, GRE, VXLAN, ...) and opens them.
    pub(crate) decap: Decapsulator,
    /// Streams terminated so far (the default priority's count is the
    /// rest of them, [`Worker::stats`]).
    pub(crate) streams_ended: u64,
    /// What the handler gave back, reused between packets
    /// ([`Worker::collect_returns`]).
    pub(crate) returns: crate::deliver::Returns,
    /// The slot of the connection of the packet being processed (set by
    /// `begin_packet`), where subzero copy looks after the packet.
    pub(crate) last_slot: u32,
    /// Locality buffering ([`crate::dispatch::locality`]); `None`: off.
    pub(crate) locality: Option<Box<LocalityStage>>,
    /// A locality batch is being processed: no timer fires until it ends.
    pub(crate) timers_held: bool,
    /// The flow-hash buckets this worker owns in a group that moves them
    /// between workers ([`crate::dispatch::offload`]); `None`: not in one.
    pub(crate) owned: Option<Box<crate::dispatch::offload::handover::Owned>>,
}

impl<H: Handler> Worker<H> {
    /// A worker with configuration `cfg` delivering to `handler`.
    pub fn new(cfg: Config, handler: H) -> Self {
        let copies_payload = cfg.cutoff_for(Direction::Orig) > 0
            || cfg.cutoff_for(Direction::Resp) > 0
            || cfg.cutoff_classes.iter().any(|c| c.cutoff() > 0);
        Worker {
            locality: LocalityStage::new(&cfg.locality),
            timers_held: false,
            copies_payload,
            decap: Decapsulator::from_config(&cfg),
            budget: Budget::new(cfg.memory_size),
            overload: Overload::new(
                cfg.memory_size,
                cfg.base_threshold,
                cfg.overload_cutoff,
                std::iter::once(cfg.priority)
                    .chain(cfg.priority_classes.iter().map(|c| c.priority())),
            ),
            pool: BufferPool::default(),
            defrag: Defragmenter::new(cfg.defrag.clone()),
            defaults: [
                params_for(&cfg, Direction::Orig),
                params_for(&cfg, Direction::Resp),
            ],
            cfg,
            handler,
            table: FlowTable::new(),
            closed: ClosedConns::default(),
            flush: BinaryHeap::new(),
            now: Timestamp::ZERO,
            next_check: Timestamp::ZERO,
            next_conn_id: 0,
            conn_id_step: 1,
            owned: None,
            stats: GlobalStats::default(),
            scratch: Vec::new(),
            shard: None,
            returns: Default::default(),
            streams_ended: 0,
            last_slot: u32::MAX,
        }
    }

    /// Makes this worker one of several reading the same input: it processes
    /// and counts only the packets its [`Shard`] owns, and skips the others
    /// without counting them (see [`crate::dispatch::fanout`]). Every worker
    /// of the run must see every packet, in the same order.
    pub fn with_shard(mut self, shard: Shard) -> Self {
        self.shard = Some(shard.with_tunnels(self.decap.clone()));
        self
    }

    /// The shard this worker owns, if it is one of several.
    pub fn shard(&self) -> Option<&Shard> {
        self.shard.as_ref()
    }

    /// Advances the worker's clock to `now` without a packet (live capture on
    /// an idle link), so that inactivity and flush timeouts still fire. A
    /// time earlier than the clock is ignored.
    ///
    /// With locality buffering ([`crate::Config::locality`]) it first
    /// processes the gathered packets if the first of them has waited the
    /// batch timeout, and leaves the clock where it is while packets still
    /// wait (they are processed first, when their batch fills or times out).
    #[inline]
    pub fn advance_clock(&mut self, now: Timestamp) {
        if self.locality.is_some() {
            self.advance_idle(now);
        } else {
            self.step_clock(now);
        }
    }

    /// Advances the clock to a packet's time `now` (or leaves it, if
    /// earlier) and fires the timers that fall due.
    #[inline(always)]
    pub(crate) fn step_clock(&mut self, now: Timestamp) {
        if now > self.now {
            self.now = now;
        }
        let due = self.flush.peek().map_or(u64::MAX, |Reverse(e)| e.0);
        if self.now >= self.next_check || self.now.0 >= due {
            self.expire();
        }
        if self.defrag.in_progress() > 0 {
            self.defrag.expire(self.now);
        }
    }

    /// The configuration.
    pub fn config(&self) -> &Config {
        &self.cfg
    }

    /// The handler.
    pub fn handler(&self) -> &H {
        &self.handler
    }

    /// The handler, mutably.
    pub fn handler_mut(&mut self) -> &mut H {
        &mut self.handler
    }

    /// Consumes the worker, returning the handler.
    pub fn into_handler(self) -> H {
        self.handler
    }

    /// Statistics so far (stream totals cover terminated streams only).
    pub fn stats(&self) -> GlobalStats {
        let mut s = self.stats.clone();
        s.memory_peak = self.budget.peak();
        s.memory_limit = self.budget.limit();
        s.memory_refusals = self.budget.refusals();
        s.defrag = self.defrag.stats().clone();
        // Terminations count only the streams of other priorities than
        // the default, by level: the default's are the rest.
        let (mut streams, mut others) = (0, crate::deliver::StreamCounters::default());
        for l in &s.overload.levels {
            if l.priority != self.cfg.priority {
                streams += l.streams;
                others.add(&l.totals);
            }
        }
        let rest = self.streams_ended.saturating_sub(streams);
        let t = &s.totals;
        let level = s.overload.level_mut(self.cfg.priority);
        level.streams = rest;
        level.totals = t.minus(&others);
        s
    }

    /// Flows currently tracked.
    pub fn active_flows(&self) -> usize {
        self.table.len()
    }

    /// Memory budget in use, bytes.
    pub fn memory_used(&self) -> usize {
        self.budget.used()
    }

    /// The worker's clock: the latest packet time seen.
    pub fn now(&self) -> Timestamp {
        self.now
    }

    /// Processes one captured frame (with locality buffering, gathers it:
    /// it is processed with its batch).
    #[inline]
    pub fn process(&mut self, pkt: &RawPacket<'_>) {
        self.collect_returns();
        self.process_taken(pkt);
    }

    /// [`Worker::process`] without taking back the handler's returns.
    #[inline]
    pub(crate) fn process_taken(&mut self, pkt: &RawPacket<'_>) {
        if self.locality.is_some() {
            self.gather(std::slice::from_ref(pkt));
        } else {
            self.process_one(pkt);
        }
    }

    /// Takes back what the handler returns before the next packet, when it
    /// analyses chunks elsewhere ([`Handler::TAKES_CHUNKS`]; see
    /// [`crate::dispatch::analysis`]); nothing otherwise.
    #[inline(always)]
    pub(crate) fn collect_returns(&mut self) {
        if H::TAKES_CHUNKS {
            self.apply_returns();
        }
    }

    /// [`Worker::process`] without taking back the handler's returns and
    /// without locality buffering: the frame is processed now.
    #[inline]
    pub(crate) fn process_one(&mut self, pkt: &RawPacket<'_>) {
        self.step_clock(pkt.ts);
        let net = match decode_ip(pkt.link, pkt.data) {
            Ok(n) => n,
            Err(e) => {
                if self
                    .shard
                    .as_ref()
                    .is_none_or(|s| s.owns_record(pkt.record))
                {
                    self.count_frame(pkt);
                    self.stats.decode_errors[e.index()] += 1;
                }
                return;
            }
        };
        if let Some(f) = net.fragment {
            self.process_fragment(pkt, &net, f);
            return;
        }
        if let Some(s) = &self.shard {
            if !s.owns_packet(&net, net.payload) {
                return;
            }
        }
        self.count_frame(pkt);
        self.stats.ip_packets += 1;
        self.handle_ip(pkt, &net, net.payload, net.payload_wire_len, net.ip_len);
    }

    /// Processes an IP fragment (decoded as `net`, at position `f`): it
    /// goes to the defragmenter, and a datagram it completes to the
    /// transport layer.
    pub(crate) fn process_fragment(
        &mut self,
        pkt: &RawPacket<'_>,
        net: &NetPacket<'_>,
        f: FragmentInfo,
    ) {
        let key = FragKey {
            src: net.src,
            dst: net.dst,
            id: f.id,
            proto: net.proto,
            vlan: net.fragment_context(),
        };
        if net.tunnel != 0 {
            // Inside a tunnel: its frame was counted with the outer packet.
            self.stats.fragments += 1;
        } else if self.shard.as_ref().is_none_or(|s| s.owns_fragment(&key))
            && self
                .owned
                .as_deref()
                .is_none_or(|o| o.has(o.map.of_fragment(&key)))
        {
            self.count_frame(pkt);
            self.stats.ip_packets += 1;
            self.stats.fragments += 1;
        }
        let frag = Fragment {
            offset: f.offset,
            more: f.more,
        };
        match self
            .defrag
            .process(self.now, key, frag, net.payload, net.payload_wire_len)
        {
            DefragOutcome::Pending => {}
            DefragOutcome::Complete(d) => {
                if net.tunnel == 0
                    && (self
                        .shard
                        .as_ref()
                        .is_some_and(|s| !s.owns_packet(net, d.data))
                        || self
                            .owned
                            .as_deref()
                            .is_some_and(|o| !o.has(o.map.of_packet(net, d.data))))
                {
                    return;
                }
                let wire_len = d.wire_len;
                let mut scratch = std::mem::take(&mut self.scratch);
                scratch.clear();
                scratch.extend_from_slice(d.data);
                // The datagram counts as one packet of its reassembled IP
                // length: the headers before the fragmented part (an IPv6
                // fragment header is not part of the datagram) and the
                // payload on the wire (a datagram cut by the snapshot length
                // is passed on with what was captured, as an unfragmented
                // packet would be).
                let mut header = net.ip_len.saturating_sub(net.payload_wire_len);
                if net.src.is_ipv6() {
                    header = header.saturating_sub(8);
                }
                let ip_len = header.saturating_add(wire_len);
                self.handle_ip(pkt, net, &scratch, wire_len, ip_len);
                self.scratch = scratch;
            }
        }
    }

    /// The flow of a decoded packet: its key, the packet's side and the
    /// key's hash in the flow table.
    #[inline]
    pub(crate) fn flow_of(&self, net: &NetPacket<'_>, t: &Transport<'_>) -> FlowOf {
        let (sport, dport) = ports(t);
        let (key, side) = FlowKey::new(net.src, sport, net.dst, dport, net.proto, net.vlan_key());
        self.flow_of_key((key.with_tunnel(net.tunnel), side))
    }

    /// A packet's flow from its key and side: the key's hash added.
    #[inline]
    pub(crate) fn flow_of_key(&self, (key, side): (FlowKey, Side)) -> FlowOf {
        FlowOf {
            key,
            side,
            hash: self.table.hash_of(&key),
            slot_hint: None,
        }
    }

    /// The slot of `flow`, if the table has it: its hint when that slot
    /// holds the key, else a full look-up.
    #[inline(always)]
    pub(crate) fn find_flow(&self, flow: &FlowOf) -> Option<u32> {
        match flow.slot_hint {
            Some(i) if self.table.entry(i).is_some_and(|(k, _)| *k == flow.key) => Some(i),
            _ => self.table.find_hashed(&flow.key, flow.hash),
        }
    }

    /// Counts a frame this worker owns in the global packet counters.
    pub(crate) fn count_frame(&mut self, pkt: &RawPacket<'_>) {
        self.stats.packets += 1;
        self.stats.wire_bytes += u64::from(pkt.orig_len);
        if pkt.is_truncated() {
            self.stats.truncated_packets += 1;
        }
    }

    /// Handles an IP packet (`payload` is its transport header and data,
    /// reassembled if it came in fragments); `frame` is the captured frame
    /// that carried it (or its last fragment).
    pub(crate) fn handle_ip(
        &mut self,
        frame: &RawPacket<'_>,
        net: &NetPacket<'_>,
        payload: &[u8],
        wire_len: u32,
        ip_len: u32,
    ) {
        let t = match decode_transport(net.proto, payload, wire_len) {
            Ok(t) => t,
            Err(e) => {
                self.stats.decode_errors[e.index()] += 1;
                return;
            }
        };
        let flow = self.flow_of(net, &t);
        self.handle_transport(frame, net.proto, &t, &flow, ip_len);
        if self.decap.carrier(net.proto, &t) {
            self.decapsulate(frame, net, &t);
        }
    }

    /// Processes the packet inside tunnel packet `outer` (transport layer
    /// `t`, already handled in the outer flow) as one that came through the
    /// tunnel; its frame was counted with `outer`. A tunnel header or inner
    /// packet that does not decode, or a tunnel past the limits, is counted
    /// under its decode error.
    #[inline(never)]
    fn decapsulate(&mut self, frame: &RawPacket<'_>, outer: &NetPacket<'_>, t: &Transport<'_>) {
        match self.decap.open(outer, t) {
            Ok(None) => {}
            Ok(Some(inner)) => match inner.fragment {
                Some(f) => self.process_fragment(frame, &inner, f),
                None => self.handle_ip(
                    frame,
                    &inner,
                    inner.payload,
                    inner.payload_wire_len,
                    inner.ip_len,
                ),
            },
            Err(e) => self.stats.decode_errors[e.index()] += 1,
        }
    }

    /// Handles a decoded transport-layer packet of protocol `proto` in `flow`.
    #[inline]
    pub(crate) fn handle_transport(
        &mut self,
        frame: &RawPacket<'_>,
        proto: u8,
        t: &Transport<'_>,
        flow: &FlowOf,
        ip_len: u32,
    ) {
        self.stats.proto_packets[ProtoClass::of(proto) as usize] += 1;
        let subzero = self.cfg.subzero.is_some();
        match t {
            Transport::Tcp(seg) => self.handle_tcp(frame, seg, flow, ip_len),
            Transport::Udp(u) => self.handle_datagram(
                frame,
                flow,
                Kind::Udp,
                u.payload,
                u.payload_wire_len,
                ip_len,
            ),
            Transport::Icmp(m) => self.handle_datagram(
                frame,
                flow,
                Kind::Other,
                m.payload,
                m.payload_wire_len,
                ip_len,
            ),
            Transport::Other {
                payload,
                payload_wire_len,
            } => self.handle_datagram(frame, flow, Kind::Other, payload, *payload_wire_len, ip_len),
        }
        if subzero {
            self.subzero_after(flow);
        }
    }

    /// The cutoff of the first cutoff class the frame matches, if any.
    pub(crate) fn class_cutoff(&self, frame: &RawPacket<'_>) -> Option<u64> {
        self.cfg
            .cutoff_classes
            .iter()
            .find(|c| c.matches(frame))
            .map(|c| c.cutoff())
    }

    /// The priority of the first priority class the frame matches, if any.
    pub(crate) fn class_priority(&self, frame: &RawPacket<'_>) -> Option<u8> {
        self.cfg
            .priority_classes
            .iter()
            .find(|c| c.matches(frame))
            .map(|c| c.priority())
    }

    pub(crate) fn create_conn(
        &mut self,
        frame: &RawPacket<'_>,
        flow: &FlowOf,
        orig_side: Side,
        kind: Kind,
    ) -> u32 {
        let key = flow.key;
        if self.table.len() >= self.cfg.max_flows.max(1) {
            if let Some(victim) = self.table.eviction_candidate() {
                self.terminate(victim, EndReason::Evicted);
            }
        }
        let id = self.next_conn_id;
        self.next_conn_id += self.conn_id_step;
        let mk = |side: Side| {
            DirState::new(if side == orig_side {
                Direction::Orig
            } else {
                Direction::Resp
            })
        };
        // The connection's first packet time is the start of the direction
        // that `begin_packet` creates first, right after this.
        let mut dirs = [mk(Side::A), mk(Side::B)];
        if let Some(cutoff) = self.class_cutoff(frame) {
            for d in &mut dirs {
                if d.params(&self.defaults).cutoff != cutoff {
                    d.x(&self.defaults).params.cutoff = cutoff;
                }
            }
        }
        if let Some(priority) = self.class_priority(frame) {
            for d in &mut dirs {
                if d.params(&self.defaults).priority != priority {
                    d.x(&self.defaults).params.priority = priority;
                }
            }
        }
        let conn = Conn {
            dirs,
            conn_id: id,
            history: History::default(),
            kind,
            orig_side,
            closing: None,
            handshake: 0,
            first_side: orig_side,
        };
        self.stats.flows_created[ProtoClass::of(key.proto()) as usize] += 1;
        let idx = self
            .table
            .insert_hashed(key, flow.hash, kind.list(), self.now, conn);
        self.note_deadline(kind.list());
        self.schedule_active(idx, id);
        self.stats.max_flows = self.stats.max_flows.max(self.table.len() as u64);
        idx
    }

    /// Marks the direction as created (firing `on_create`) and counts the
    /// packet (a reassembled datagram is one packet of its IP length).
    #[inline(always)]
    pub(crate) fn begin_packet(&mut self, idx: u32, side: Side, ip_len: u32, ts: Timestamp) {
        let (pkts, bytes) = (1, u64::from(ip_len));
        self.last_slot = idx;
        let Some((key, conn)) = self.table.entry_mut(idx) else {
            return;
        };
        let conn_id = conn.conn_id;
        if !conn.dirs[0].has(F_CREATED) && !conn.dirs[1].has(F_CREATED) {
            conn.first_side = side;
        }
        let (me, opp) = pair(&mut conn.dirs, side);
        me.count(pkts, bytes, &self.defaults);
        me.end = me.end.max(ts);
        if !me.has(F_CREATED) {
            me.set_flag(F_CREATED, true);
            me.start = ts;
            self.stats.streams += 1;
            if H::WANTS_ON_CREATE {
                let mut cx = cx!(self, key, side, me, &*opp, conn_id, idx, self.now, false);
                cx.call(|h, s| h.on_create(s));
            }
        }
    }

    pub(crate) fn record_packet(&mut self, idx: u32, side: Side, rec: PacketRecord) {
        if !self.cfg.need_packets {
            return;
        }
        let Some(conn) = self.table.get_mut(idx) else {
            return;
        };
        let dir = &mut conn.dirs[side.index()];
        let may_deliver = !dir.has(F_DISCARD) && dir.tcp().next < dir.params(&self.defaults).cutoff;
        if may_deliver && self.budget.try_charge(std::mem::size_of::<PacketRecord>()) {
            dir.x(&self.defaults).buf_mut().packets.push(rec);
        }
    }

    #[allow(clippy::too_many_arguments)]
    pub(crate) fn handle_datagram(
        &mut self,
        frame: &RawPacket<'_>,
        flow: &FlowOf,
        kind: Kind,
        payload: &[u8],
        wire: u32,
        ip_len: u32,
    ) {
        let ts = frame.ts;
        let side = flow.side;
        let idx = match self.find_flow(flow) {
            Some(i) => i,
            None => self.create_conn(frame, flow, side, kind),
        };
        self.begin_packet(idx, side, ip_len, ts);
        let mut ppl_drop = false;
        if wire > 0 {
            if let Some(c) = self.table.get_mut(idx) {
                let is_orig = side == c.orig_side;
                c.history.push(b'D', is_orig);
            }
            let pressured = self.overload.pressured(self.budget.used());
            if let Some(c) = self.table.get(idx).filter(|_| pressured) {
                let d = &c.dirs[side.index()];
                let p = d.params(&self.defaults);
                // A direction's first packet creates its stream: never
                // judged; nor are bytes that would not be stored anyway.
                ppl_drop = d.counters().pkts > 1
                    && !d.has(F_DISCARD)
                    && d.tcp().next < p.cutoff
                    && self.overload.drops(
                        &mut self.stats.overload,
                        self.budget.used(),
                        p.priority,
                        d.tcp().next,
                        u64::from(wire),
                    );
            }
        }
        if wire > 0 && !ppl_drop {
            let off = self
                .table
                .get(idx)
                .map_or(0, |c| c.dirs[side.index()].tcp().next);
            self.record_packet(
                idx,
                side,
                PacketRecord {
                    ts,
                    offset: off,
                    len: wire,
                    ip_len,
                    seq: 0,
                    ack: 0,
                    flags: 0,
                    window: 0,
                },
            );
        }
        let Some((key, conn)) = self.table.entry_mut(idx) else {
            return;
        };
        let conn_id = conn.conn_id;
        let (me, opp) = pair(&mut conn.dirs, side);
        let mut cx = cx!(self, key, side, me, &*opp, conn_id, idx, self.now, false);
        cx.ppl_drop = ppl_drop;
        if wire > 0 {
            let before = Outcome::of(&cx.e().counters);
            cx.datagram(payload, u64::from(wire), kind == Kind::Other);
            before.classify(&mut cx.e().counters);
        }
        self.touch(idx, kind.list());
    }
}
