//! Matching on streams: each stream direction's scan state, the hits of
//! the automaton checked against their rules, and the window kept behind
//! each chunk for rules whose conditions span chunks.
//!
//! TCP is matched as one byte stream per direction: the automaton's state
//! is carried from chunk to chunk, so every byte is scanned once and a
//! pattern split across segments or chunks is found in the chunk where its
//! last byte arrives. UDP and other protocols are matched per datagram
//! (per packet), the state reset between them, as Suricata does.
//!
//! A hit of a rule that has one content and nothing else is checked on the
//! spot (offset, depth, case). A hit of any other rule makes the rule a
//! candidate for the stream: it is evaluated on the window (the last
//! [`RuleSet::window`] bytes before the chunk, and the chunk) now and on
//! the following chunks while its fast pattern stays inside the window.

use super::alert::{Alert, AlertSink};
use super::inspect::{evaluate, Verdict, Window};
use super::matcher::{Hit, ScanState, Scratch};
use super::rule::{Action, PayloadMatch};
use super::ruleset::{RuleSet, Traffic};
use crate::conn_id::ConnId;
use std::collections::HashSet;
use std::sync::Arc;
use streamcap::deliver::{Chunk, Delivery, Stream};
use streamcap::flow::Direction;

/// The largest UDP (or other) payload: with this chunk size, segment
/// delivery hands over each datagram in one piece.
pub const DATAGRAM_CHUNK: usize = 65_536;

/// Default bytes of windows one detector (one worker) may hold at once.
pub const DEFAULT_WINDOW_MEMORY: usize = 64 << 20;

/// Counters of one detector; [`NidsStats::add`] sums workers'.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NidsStats {
    /// Stream directions inspected (some rule applied to them).
    pub streams: u64,
    /// Stream directions no rule applied to (discarded at once).
    pub streams_unwatched: u64,
    /// Streams whose cutoff the rules' reach set (Scap's early discard).
    pub streams_cut: u64,
    /// Bytes scanned by the automaton.
    pub bytes_scanned: u64,
    /// Hits of the automaton (fast patterns found).
    pub hits: u64,
    /// Evaluations of candidate rules on a window.
    pub evaluations: u64,
    /// Evaluations that ran out of their search budget.
    pub exhausted: u64,
    /// Chunks the automaton failed to scan (Hyperscan out of memory):
    /// the stream's scan state restarts after them.
    pub scan_errors: u64,
    /// Streams that wanted a window when the window memory was full: their
    /// multi-condition rules see only the current chunk.
    pub window_refusals: u64,
    /// Peak bytes of windows held.
    pub window_peak: u64,
    /// Connections a `pass` rule matched.
    pub passed: u64,
    /// Alerts, per rule (index of [`RuleSet::rules`]).
    pub alerts: Vec<u64>,
}

impl NidsStats {
    /// Adds `o` into `self`.
    pub fn add(&mut self, o: &NidsStats) {
        self.streams += o.streams;
        self.streams_unwatched += o.streams_unwatched;
        self.streams_cut += o.streams_cut;
        self.bytes_scanned += o.bytes_scanned;
        self.hits += o.hits;
        self.evaluations += o.evaluations;
        self.exhausted += o.exhausted;
        self.scan_errors += o.scan_errors;
        self.window_refusals += o.window_refusals;
        self.window_peak = self.window_peak.max(o.window_peak);
        self.passed += o.passed;
        if self.alerts.len() < o.alerts.len() {
            self.alerts.resize(o.alerts.len(), 0);
        }
        for (a, b) in self.alerts.iter_mut().zip(&o.alerts) {
            *a += b;
        }
    }

    /// All alerts.
    pub fn total_alerts(&self) -> u64 {
        self.alerts.iter().sum()
    }
}

/// What a stream's bytes are still wanted for.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Want {
    /// Nothing more: no rule can match any more.
    Nothing,
    /// Bytes up to this stream offset (Scap's cutoff).
    UpTo(u64),
    /// Every byte.
    All,
}

/// A stream direction's detection state (the engine's per-stream user
/// state: one pointer; what it holds is allocated when the stream starts).
#[derive(Default)]
pub struct NidsState(Option<Box<Inspect>>);

impl NidsState {
    /// Whether the stream is being inspected.
    pub fn is_active(&self) -> bool {
        self.0.as_ref().is_some_and(|i| !i.done)
    }
}

struct Inspect {
    traffic: Traffic,
    /// Bit `i`: header class `i` covers this stream.
    classes: Vec<u64>,
    /// Rules that apply and have not alerted yet.
    remaining: u32,
    scan: ScanState,
    /// Stream bytes behind the newest chunk, starting at `window_start`.
    window: Vec<u8>,
    window_start: u64,
    /// Whether this stream may hold a window.
    keeps_window: bool,
    /// Candidate rules: (rule, stream offset of their fast pattern's hit).
    pending: Vec<(u32, u64)>,
    /// Rules that alerted on this stream.
    alerted: Vec<u32>,
    /// Where the next byte is expected (a gap otherwise).
    next: u64,
    /// Nothing more to do (a pass rule matched, or every rule alerted).
    done: bool,
}

impl Inspect {
    fn applies(&self, class: u32) -> bool {
        self.classes
            .get(class as usize / 64)
            .is_some_and(|w| w & (1 << (class % 64)) != 0)
    }
}

/// Matches one worker's streams against a rule set (several detectors
/// share one [`RuleSet`]).
pub struct Detector {
    rules: Arc<RuleSet>,
    /// Per traffic kind, the automaton's scratch space.
    scratch: [Scratch; 3],
    hits: Vec<Hit>,
    /// The window and the chunk, contiguous, when a candidate needs both.
    joined: Vec<u8>,
    found: Vec<Alert>,
    /// Connections a pass rule matched (by serial number).
    passed: HashSet<u64>,
    window_bytes: usize,
    window_limit: usize,
    /// Per header class, the rules of that class (each rule has one).
    class_rules: Vec<u32>,
    stats: NidsStats,
}

impl Detector {
    /// A detector over `rules`.
    pub fn new(rules: Arc<RuleSet>) -> Detector {
        let n = rules.len();
        // A scratch that cannot be allocated leaves an empty one: every
        // scan of that kind then fails and is counted.
        let scratch = |t: Traffic| {
            rules.traffic[t as usize]
                .matcher
                .scratch()
                .unwrap_or_default()
        };
        let scratch = [
            scratch(Traffic::Tcp),
            scratch(Traffic::Udp),
            scratch(Traffic::Other),
        ];
        let mut class_rules = vec![0u32; rules.classes.len()];
        for r in &rules.rules {
            if let Some(n) = class_rules.get_mut(r.class as usize) {
                *n += 1;
            }
        }
        Detector {
            rules,
            class_rules,
            scratch,
            hits: Vec::new(),
            joined: Vec::new(),
            found: Vec::new(),
            passed: HashSet::new(),
            window_bytes: 0,
            window_limit: DEFAULT_WINDOW_MEMORY,
            stats: NidsStats {
                alerts: vec![0; n],
                ..NidsStats::default()
            },
        }
    }

    /// Sets the bytes of windows this detector may hold at once.
    pub fn set_window_memory(&mut self, bytes: usize) {
        self.window_limit = bytes;
    }

    /// The rule set.
    pub fn rules(&self) -> &Arc<RuleSet> {
        &self.rules
    }

    /// The counters so far.
    pub fn stats(&self) -> &NidsStats {
        &self.stats
    }

    /// A stream starts: decides which rules apply, alerts rules without
    /// payload conditions, and says how much of the stream is wanted.
    /// `state` is the stream's detection state (taken out of the user
    /// state by the caller). UDP and other protocols need each datagram
    /// whole: see [`Detector::prepare`].
    pub fn start<S>(
        &mut self,
        s: &mut Stream<'_, S>,
        state: &mut NidsState,
        sink: &mut impl AlertSink,
    ) -> Want {
        let traffic = Traffic::of(s.proto());
        let rules = Arc::clone(&self.rules);
        let tr = &rules.traffic[traffic as usize];
        let to_server = s.direction() == Direction::Orig;
        let (src, dst, proto) = (s.src(), s.dst(), s.proto());
        let mut classes = vec![0u64; rules.classes.len().div_ceil(64)];
        let mut any = false;
        let mut reach = Some(0u64);
        for &c in &tr.classes {
            let class = &rules.classes[c as usize];
            if class.covers(proto, src, dst, to_server) {
                classes[c as usize / 64] |= 1 << (c % 64);
                any = true;
                reach = match (reach, class.reach[traffic as usize]) {
                    (Some(a), Some(b)) => Some(a.max(b)),
                    _ => None,
                };
            }
        }
        if !any {
            self.stats.streams_unwatched += 1;
            return Want::Nothing;
        }
        self.stats.streams += 1;
        let mut inspect = Box::new(Inspect {
            traffic,
            classes,
            remaining: 0,
            scan: tr.matcher.state(0),
            window: Vec::new(),
            window_start: 0,
            keeps_window: traffic == Traffic::Tcp && tr.needs_window,
            pending: Vec::new(),
            alerted: Vec::new(),
            next: 0,
            done: false,
        });
        // The rules whose class covers the stream (counted per class, not
        // rule by rule: this runs for every stream).
        let remaining: u64 = tr
            .classes
            .iter()
            .filter(|&&c| inspect.applies(c))
            .map(|&c| u64::from(self.class_rules.get(c as usize).copied().unwrap_or(0)))
            .sum();
        inspect.remaining = u32::try_from(remaining).unwrap_or(u32::MAX);
        if inspect.keeps_window && self.window_bytes + rules.window > self.window_limit {
            inspect.keeps_window = false;
            self.stats.window_refusals += 1;
        }
        if inspect.keeps_window {
            self.window_bytes += rules.window;
            self.stats.window_peak = self.stats.window_peak.max(self.window_bytes as u64);
        }
        // Rules with no payload condition match the stream's first packet.
        for &ri in &tr.header_only {
            let r = &rules.rules[ri as usize];
            if inspect.applies(r.class) && flow_ok(&r.rule.flow, s) {
                self.found.push(alert_of(s, ri, 0, None));
            }
        }
        *state = NidsState(Some(inspect));
        let want = self.emit(s, state, sink);
        if want == Want::Nothing {
            return want;
        }
        match (traffic, reach) {
            (Traffic::Tcp, Some(r)) => {
                self.stats.streams_cut += 1;
                if r == 0 {
                    self.finish(state);
                    Want::Nothing
                } else {
                    Want::UpTo(r)
                }
            }
            _ => Want::All,
        }
    }

    /// Sets a new stream's delivery as the detector needs it: datagrams
    /// (UDP and other protocols) one per data event.
    pub fn prepare<S>(s: &mut Stream<'_, S>) {
        if Traffic::of(s.proto()) != Traffic::Tcp {
            s.set_delivery(Delivery::Segments);
            s.set_chunk_size(DATAGRAM_CHUNK);
        }
    }

    /// New bytes of a stream: scans them, checks hits and candidates,
    /// alerts. Returns what is still wanted.
    pub fn data<S>(
        &mut self,
        s: &mut Stream<'_, S>,
        state: &mut NidsState,
        chunk: &Chunk<'_>,
        sink: &mut impl AlertSink,
    ) -> Want {
        let Some(d) = state.0.as_mut() else {
            return Want::Nothing;
        };
        if d.done {
            return Want::Nothing;
        }
        if self.passed.contains(&s.info().conn_id) {
            self.finish(state);
            return Want::Nothing;
        }
        let new = chunk.new_data();
        if new.is_empty() {
            return Want::All;
        }
        let offset = chunk.offset + chunk.new_from as u64;
        let rules = Arc::clone(&self.rules);
        let tr = &rules.traffic[d.traffic as usize];
        let per_datagram = d.traffic != Traffic::Tcp;
        // A datagram is matched alone, from offset 0; a stream continues
        // where it stopped unless bytes are missing.
        let base = if per_datagram { 0 } else { offset };
        if per_datagram || offset != d.next || chunk.gap.is_some() {
            d.pending.clear();
            d.window.clear();
            d.window_start = base;
        }
        self.hits.clear();
        let scratch = &mut self.scratch[d.traffic as usize];
        if tr
            .matcher
            .scan(&mut d.scan, scratch, base, new, &mut self.hits)
            .is_err()
        {
            self.stats.scan_errors += 1;
        }
        self.stats.bytes_scanned += new.len() as u64;
        self.stats.hits += self.hits.len() as u64;
        let datagram = |rel: u64| {
            if per_datagram {
                (offset + rel, Some(rel))
            } else {
                (rel, None)
            }
        };
        for hit in &self.hits {
            for &ri in tr
                .by_pattern
                .get(hit.pattern as usize)
                .map_or(&[][..], |v| v.as_slice())
            {
                let r = &rules.rules[ri as usize];
                if !d.applies(r.class)
                    || d.alerted.contains(&ri)
                    || d.pending.iter().any(|p| p.0 == ri)
                {
                    continue;
                }
                let Some(PayloadMatch::Content(c)) = r.fast.and_then(|f| r.rule.matches.get(f))
                else {
                    continue;
                };
                let start = hit.end - c.pattern.len() as u64;
                if !hit.exact {
                    // Found by a caseless automaton: compare the bytes.
                    let Some(bytes) =
                        bytes_at(&d.window, d.window_start, new, base, start, c.pattern.len())
                    else {
                        continue;
                    };
                    if !bytes_equal(&bytes, &c.pattern) {
                        continue;
                    }
                }
                if r.simple {
                    let lo = u64::from(c.offset.unwrap_or(0));
                    let in_depth = c.depth.is_none_or(|dp| hit.end <= lo + u64::from(dp));
                    if start >= lo && in_depth && flow_ok(&r.rule.flow, s) {
                        let (so, dg) = datagram(start);
                        self.found.push(alert_of(s, ri, so, dg));
                        d.alerted.push(ri);
                    }
                } else {
                    d.pending.push((ri, start));
                }
            }
        }
        let unprefiltered = tr.unprefiltered.iter().filter(|&&ri| {
            let r = &rules.rules[ri as usize];
            d.applies(r.class) && !d.alerted.contains(&ri)
        });
        let mut candidates: Vec<(u32, u64)> = unprefiltered.map(|&ri| (ri, u64::MAX)).collect();
        candidates.append(&mut d.pending);
        if !candidates.is_empty() {
            let window = if d.window.is_empty() {
                Window { data: new, base }
            } else {
                self.joined.clear();
                self.joined.extend_from_slice(&d.window);
                self.joined.extend_from_slice(new);
                Window {
                    data: &self.joined,
                    base: d.window_start,
                }
            };
            // After this chunk the window begins here: a candidate whose
            // fast pattern lies before it can no longer match.
            let end = base + new.len() as u64;
            let next_start = end.saturating_sub(rules.window as u64);
            for (ri, fp) in candidates {
                let r = &rules.rules[ri as usize];
                if d.alerted.contains(&ri) {
                    continue;
                }
                let verdict = if flow_ok(&r.rule.flow, s) {
                    self.stats.evaluations += 1;
                    evaluate(&r.rule.matches, window)
                } else {
                    Verdict::NoMatch
                };
                match verdict {
                    Verdict::Match(at) => {
                        let (so, dg) = datagram(at);
                        self.found.push(alert_of(s, ri, so, dg));
                        d.alerted.push(ri);
                    }
                    Verdict::Exhausted | Verdict::NoMatch => {
                        if verdict == Verdict::Exhausted {
                            self.stats.exhausted += 1;
                        }
                        if !per_datagram && d.keeps_window && fp != u64::MAX && fp >= next_start {
                            d.pending.push((ri, fp));
                        }
                    }
                }
            }
        }
        if !per_datagram && d.keeps_window {
            slide(&mut d.window, &mut d.window_start, new, base, rules.window);
        }
        d.next = base + new.len() as u64;
        self.emit(s, state, sink)
    }

    /// A stream ends: frees its window.
    pub fn close(&mut self, state: &mut NidsState) {
        self.finish(state);
        state.0 = None;
    }

    /// A connection ended (its pass mark, if any, is dropped).
    pub fn flow_end(&mut self, conn_id: u64) {
        self.passed.remove(&conn_id);
    }

    /// Stops inspecting a stream and gives its window back.
    fn finish(&mut self, state: &mut NidsState) {
        if let Some(d) = state.0.as_mut() {
            if d.keeps_window {
                self.window_bytes = self.window_bytes.saturating_sub(self.rules.window);
                d.keeps_window = false;
            }
            d.done = true;
            d.window = Vec::new();
            d.pending = Vec::new();
        }
    }

    /// Hands the alerts found to `sink`: a matching pass rule suppresses
    /// the others found with it (Suricata's action order) and ends the
    /// connection's inspection.
    fn emit<S>(
        &mut self,
        s: &mut Stream<'_, S>,
        state: &mut NidsState,
        sink: &mut impl AlertSink,
    ) -> Want {
        if self.found.is_empty() {
            return Want::All;
        }
        let rules = Arc::clone(&self.rules);
        let pass = self
            .found
            .iter()
            .position(|a| rules.rules[a.rule as usize].rule.header.action == Action::Pass);
        let mut found = std::mem::take(&mut self.found);
        if let Some(p) = pass {
            let a = found.swap_remove(p);
            found.clear();
            found.push(a);
            self.passed.insert(s.info().conn_id);
            self.stats.passed += 1;
        }
        for a in &found {
            if let Some(n) = self.stats.alerts.get_mut(a.rule as usize) {
                *n += 1;
            }
            sink.alert(a, &rules);
        }
        let done = match state.0.as_mut() {
            Some(d) => {
                d.remaining = d.remaining.saturating_sub(found.len() as u32);
                pass.is_some() || d.remaining == 0
            }
            None => true,
        };
        found.clear();
        self.found = found;
        if done {
            self.finish(state);
            Want::Nothing
        } else {
            Want::All
        }
    }
}

/// Whether the rule's `flow` option holds for the stream now. A stream is
/// established once both directions have carried a packet (after the
/// handshake; for a connection picked up mid-stream, once both sides sent).
fn flow_ok<S>(f: &super::rule::FlowOptions, s: &Stream<'_, S>) -> bool {
    if !f.established && !f.not_established {
        return true;
    }
    let established = s.opposite().created;
    (f.established && established) || (f.not_established && !established)
}

/// The alert of rule `ri` on stream `s` at stream offset `at`.
fn alert_of<S>(s: &Stream<'_, S>, ri: u32, at: u64, datagram: Option<u64>) -> Alert {
    let info = s.info();
    let opp = s.opposite();
    let first = if opp.created {
        info.start.min(opp.start)
    } else {
        info.start
    };
    let (orig, resp) = match info.direction {
        Direction::Orig => (s.src(), s.dst()),
        Direction::Resp => (s.dst(), s.src()),
    };
    let key = s.key();
    Alert {
        rule: ri,
        ts: info.end,
        proto: s.proto(),
        src: s.src(),
        dst: s.dst(),
        direction: info.direction,
        stream_offset: at,
        datagram_offset: datagram,
        conn: ConnId {
            first,
            proto: s.proto(),
            orig,
            resp,
            vlan_key: key.vlan_key(),
            conn_id: info.conn_id,
            tunnel: key.tunnel().map(|t| t.to_string()),
        },
        vlan: key.vlan(),
    }
}

/// The `len` bytes at stream offset `at`, from the window and the chunk.
fn bytes_at(
    window: &[u8],
    wstart: u64,
    new: &[u8],
    base: u64,
    at: u64,
    len: usize,
) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(len);
    for o in at..at + len as u64 {
        let b = if o >= base {
            *new.get((o - base) as usize)?
        } else {
            *window.get(o.checked_sub(wstart)? as usize)?
        };
        out.push(b);
    }
    Some(out)
}

fn bytes_equal(a: &[u8], b: &[u8]) -> bool {
    a == b
}

/// Moves the window past `new` (stream offset `base`), keeping its last
/// `size` bytes.
fn slide(window: &mut Vec<u8>, start: &mut u64, new: &[u8], base: u64, size: usize) {
    if window.is_empty() || *start + window.len() as u64 != base {
        window.clear();
        *start = base;
    }
    if new.len() >= size {
        window.clear();
        window.extend_from_slice(&new[new.len() - size..]);
        *start = base + (new.len() - size) as u64;
        return;
    }
    window.extend_from_slice(new);
    if window.len() > size {
        let cut = window.len() - size;
        window.drain(..cut);
        *start += cut as u64;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_window_keeps_the_last_bytes() {
        let (mut w, mut start) = (Vec::new(), 0u64);
        slide(&mut w, &mut start, b"abcdef", 0, 4);
        assert_eq!((w.as_slice(), start), (&b"cdef"[..], 2));
        slide(&mut w, &mut start, b"gh", 6, 4);
        assert_eq!((w.as_slice(), start), (&b"efgh"[..], 4));
        slide(&mut w, &mut start, b"x", 20, 4);
        assert_eq!((w.as_slice(), start), (&b"x"[..], 20));
        assert_eq!(bytes_at(b"efgh", 4, b"ij", 8, 6, 4), Some(b"ghij".to_vec()));
        assert_eq!(bytes_at(b"efgh", 4, b"ij", 8, 2, 4), None);
    }
}
