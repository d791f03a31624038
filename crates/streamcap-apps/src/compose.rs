//! Several applications on one capture and one reassembly (Scap §II-E,
//! §V-F): each application says how much of each stream it wants, the
//! stream is kept as long as any of them still wants its bytes (the
//! largest cutoff), and each application sees only the bytes it asked for.
//!
//! An application implements [`App`]: like a [`Handler`], but it does not
//! steer the stream itself; it answers each event with a [`Want`] (and,
//! for data, whether the chunk must be kept, [`Reply`]). [`Both`] joins
//! two applications into one (nest it for more); `Option<A>` is an
//! application that may be absent; [`Cutoff`] gives one a cutoff of its
//! own; [`Apps`] runs one (joined) application
//! as a [`Handler`], turning the wants into the stream's cutoff and
//! `discard`, and the keeps into `keep_chunk`.
//!
//! ```
//! use std::sync::Arc;
//! use streamcap_apps::compose::{Apps, Both};
//! use streamcap_apps::nids::{parse_rules, Alert, CompileOptions, Nids, RuleSet, Vars};
//!
//! let vars = Vars::default();
//! let rules = |text: &str| {
//!     let parsed = parse_rules(text, "inline", &vars);
//!     Arc::new(RuleSet::compile(parsed.rules, &vars.classifications, &CompileOptions::default()).unwrap())
//! };
//! // Two rule sets, one pass: the banner rule wants 16 bytes of each
//! // stream, the other every byte of port 80's.
//! let banners = Nids::new(rules(r#"alert tcp any any -> any 22 (msg:"ssh"; content:"SSH-2.0-"; depth:8; sid:1;)"#), Vec::<Alert>::new());
//! let web = Nids::new(rules(r#"alert tcp any any -> any 80 (msg:"api"; content:"/api/"; sid:2;)"#), Vec::<Alert>::new());
//! let report = streamcap::Capture::builder()
//!     .build()
//!     .run_file("../../samples/sample.pcap", Apps::new(Both(banners, web)))?;
//! let Both(banners, web) = report.handler.into_inner();
//! assert_eq!(banners.sink.len(), 2);
//! assert_eq!(web.sink.len(), 10);
//! # Ok::<(), streamcap::SourceError>(())
//! ```

use streamcap::deliver::{Chunk, Delivery, FlowEnd, Handler, Stream};
use streamcap::flow::Direction;

/// What a stream's bytes are still wanted for.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Want {
    /// Nothing more: no further data events for this application.
    Nothing,
    /// Bytes up to this stream offset (Scap's cutoff).
    UpTo(u64),
    /// Every byte.
    All,
}

impl Want {
    /// The larger of two wants: what a stream shared by both must keep.
    pub fn max(self, o: Want) -> Want {
        match (self, o) {
            (Want::All, _) | (_, Want::All) => Want::All,
            (Want::UpTo(a), Want::UpTo(b)) => Want::UpTo(a.max(b)),
            (Want::UpTo(a), Want::Nothing) | (Want::Nothing, Want::UpTo(a)) => Want::UpTo(a),
            (Want::Nothing, Want::Nothing) => Want::Nothing,
        }
    }

    /// The smaller of two wants.
    pub fn min(self, o: Want) -> Want {
        match (self, o) {
            (Want::Nothing, _) | (_, Want::Nothing) => Want::Nothing,
            (Want::UpTo(a), Want::UpTo(b)) => Want::UpTo(a.min(b)),
            (Want::UpTo(a), Want::All) | (Want::All, Want::UpTo(a)) => Want::UpTo(a),
            (Want::All, Want::All) => Want::All,
        }
    }

    /// The stream offset past which nothing is wanted (`u64::MAX`: none).
    pub fn limit(self) -> u64 {
        match self {
            Want::Nothing => 0,
            Want::UpTo(n) => n,
            Want::All => u64::MAX,
        }
    }
}

/// An application's answer to a data event.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Reply {
    /// What it still wants of the stream.
    pub want: Want,
    /// Keep the chunk: the next data event re-presents its bytes before the
    /// new ones (Scap's `keep_chunk`, e.g. for an incomplete header).
    pub keep: bool,
}

impl From<Want> for Reply {
    fn from(want: Want) -> Reply {
        Reply { want, keep: false }
    }
}

/// What the applications of one connection tell each other when it ends:
/// an earlier application in a [`Both`] fills it, a later one reads it
/// (the classifier's label, read by the flow records).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Notes {
    /// The connection's application protocol, if an application named it.
    pub app: Option<&'static str>,
    /// Its name for Zeek's `conn.log` `service` column.
    pub service: Option<&'static str>,
}

/// An application that shares the streams of a capture with others.
///
/// The stream handle is read-only: an application steers its own share
/// through its answers, and [`Apps`] steers the stream for all of them.
pub trait App {
    /// Per-direction state.
    type State: Default;

    /// A new stream's delivery as the application needs it, set before
    /// its first byte (e.g. [`DATAGRAM_CHUNK`]-byte segments for
    /// datagrams that must arrive whole: [`datagrams_whole`]). Every
    /// application of a [`Both`] sets its own; each must work with any
    /// delivery the others choose.
    fn prepare<S>(&self, s: &mut Stream<'_, S>) {
        let _ = s;
    }

    /// A stream starts: how much of it the application wants.
    fn start<S>(&mut self, s: &Stream<'_, S>, st: &mut Self::State) -> Want;

    /// Bytes of the stream within what the application wants (a chunk
    /// reaching past its limit is cut there).
    fn data<S>(&mut self, s: &Stream<'_, S>, st: &mut Self::State, chunk: &Chunk<'_>) -> Reply;

    /// The stream ended; its descriptor is final.
    fn close<S>(&mut self, s: &Stream<'_, S>, st: &mut Self::State) {
        let _ = (s, st);
    }

    /// The connection ended: both directions' states, and the notes of
    /// the applications before this one.
    fn flow_end<S>(
        &mut self,
        fe: &FlowEnd<'_, S>,
        orig: &mut Self::State,
        resp: &mut Self::State,
        notes: &mut Notes,
    ) {
        let _ = (fe, orig, resp, notes);
    }

    /// An active-timeout report of a connection still open
    /// ([`Handler::on_flow_update`]): both directions' states as they are
    /// (the connection goes on), and the notes of the applications before
    /// this one.
    fn flow_update<S>(
        &mut self,
        fe: &FlowEnd<'_, S>,
        orig: &mut Self::State,
        resp: &mut Self::State,
        notes: &mut Notes,
    ) {
        let _ = (fe, orig, resp, notes);
    }

    /// Live capture: called regularly while idle (to flush output).
    fn tick(&mut self) {}
}

/// One application's state for one stream, with what it still wants.
#[derive(Debug)]
pub struct Part<T> {
    /// The application's state.
    pub state: T,
    /// What it wants of the stream (`All` until it starts).
    pub want: Want,
}

impl<T: Default> Default for Part<T> {
    fn default() -> Self {
        Part {
            state: T::default(),
            want: Want::All,
        }
    }
}

/// The part of `chunk` below `limit`, or `None` if no new byte is.
fn clip<'a>(chunk: &Chunk<'a>, limit: u64) -> Option<Chunk<'a>> {
    let new_start = chunk.offset + chunk.new_from as u64;
    if new_start >= limit {
        return None;
    }
    let end = chunk.offset + chunk.data.len() as u64;
    if end <= limit {
        return Some(*chunk);
    }
    let keep = (limit - chunk.offset) as usize;
    Some(Chunk {
        data: &chunk.data[..keep],
        ..*chunk
    })
}

/// Offers a data event to one application: nothing if it wants no more,
/// else the part of the chunk within its limit.
fn offer<A: App, S>(
    app: &mut A,
    s: &Stream<'_, S>,
    part: &mut Part<A::State>,
    chunk: &Chunk<'_>,
) -> Reply {
    if part.want == Want::Nothing {
        return Want::Nothing.into();
    }
    match clip(chunk, part.want.limit()) {
        Some(c) => {
            let r = app.data(s, &mut part.state, &c);
            // A want never grows back past what was given up.
            part.want = r.want.min(part.want);
            Reply {
                want: part.want,
                keep: r.keep,
            }
        }
        None => {
            part.want = Want::Nothing;
            Want::Nothing.into()
        }
    }
}

/// Two applications as one: both see the streams, each within its own
/// wants; the stream is wanted as far as either wants it. At a
/// connection's end the first one runs first (its notes reach the second).
#[derive(Debug, Default)]
pub struct Both<A, B>(pub A, pub B);

impl<A: App, B: App> App for Both<A, B> {
    type State = (Part<A::State>, Part<B::State>);

    fn prepare<S>(&self, s: &mut Stream<'_, S>) {
        self.0.prepare(s);
        self.1.prepare(s);
    }

    fn start<S>(&mut self, s: &Stream<'_, S>, st: &mut Self::State) -> Want {
        st.0.want = self.0.start(s, &mut st.0.state);
        st.1.want = self.1.start(s, &mut st.1.state);
        st.0.want.max(st.1.want)
    }

    fn data<S>(&mut self, s: &Stream<'_, S>, st: &mut Self::State, chunk: &Chunk<'_>) -> Reply {
        let a = offer(&mut self.0, s, &mut st.0, chunk);
        let b = offer(&mut self.1, s, &mut st.1, chunk);
        Reply {
            want: a.want.max(b.want),
            keep: a.keep || b.keep,
        }
    }

    fn close<S>(&mut self, s: &Stream<'_, S>, st: &mut Self::State) {
        self.0.close(s, &mut st.0.state);
        self.1.close(s, &mut st.1.state);
    }

    fn flow_end<S>(
        &mut self,
        fe: &FlowEnd<'_, S>,
        orig: &mut Self::State,
        resp: &mut Self::State,
        notes: &mut Notes,
    ) {
        self.0
            .flow_end(fe, &mut orig.0.state, &mut resp.0.state, notes);
        self.1
            .flow_end(fe, &mut orig.1.state, &mut resp.1.state, notes);
    }

    fn flow_update<S>(
        &mut self,
        fe: &FlowEnd<'_, S>,
        orig: &mut Self::State,
        resp: &mut Self::State,
        notes: &mut Notes,
    ) {
        self.0
            .flow_update(fe, &mut orig.0.state, &mut resp.0.state, notes);
        self.1
            .flow_update(fe, &mut orig.1.state, &mut resp.1.state, notes);
    }

    fn tick(&mut self) {
        self.0.tick();
        self.1.tick();
    }
}

/// An application that may be absent (wants nothing when it is).
impl<A: App> App for Option<A> {
    type State = A::State;

    fn prepare<S>(&self, s: &mut Stream<'_, S>) {
        if let Some(a) = self {
            a.prepare(s);
        }
    }

    fn start<S>(&mut self, s: &Stream<'_, S>, st: &mut Self::State) -> Want {
        match self {
            Some(a) => a.start(s, st),
            None => Want::Nothing,
        }
    }

    fn data<S>(&mut self, s: &Stream<'_, S>, st: &mut Self::State, chunk: &Chunk<'_>) -> Reply {
        match self {
            Some(a) => a.data(s, st, chunk),
            None => Want::Nothing.into(),
        }
    }

    fn close<S>(&mut self, s: &Stream<'_, S>, st: &mut Self::State) {
        if let Some(a) = self {
            a.close(s, st);
        }
    }

    fn flow_end<S>(
        &mut self,
        fe: &FlowEnd<'_, S>,
        orig: &mut Self::State,
        resp: &mut Self::State,
        notes: &mut Notes,
    ) {
        if let Some(a) = self {
            a.flow_end(fe, orig, resp, notes);
        }
    }

    fn flow_update<S>(
        &mut self,
        fe: &FlowEnd<'_, S>,
        orig: &mut Self::State,
        resp: &mut Self::State,
        notes: &mut Notes,
    ) {
        if let Some(a) = self {
            a.flow_update(fe, orig, resp, notes);
        }
    }

    fn tick(&mut self) {
        if let Some(a) = self {
            a.tick();
        }
    }
}

/// An application with a cutoff of its own: it sees at most the first
/// `.1` bytes of each stream, whatever the others want
/// (`Cutoff(app, 10 << 10)`).
#[derive(Debug, Default)]
pub struct Cutoff<A>(pub A, pub u64);

impl<A: App> App for Cutoff<A> {
    type State = A::State;

    fn prepare<S>(&self, s: &mut Stream<'_, S>) {
        self.0.prepare(s);
    }

    fn start<S>(&mut self, s: &Stream<'_, S>, st: &mut Self::State) -> Want {
        let cut = if self.1 == 0 {
            Want::Nothing
        } else {
            Want::UpTo(self.1)
        };
        self.0.start(s, st).min(cut)
    }

    fn data<S>(&mut self, s: &Stream<'_, S>, st: &mut Self::State, chunk: &Chunk<'_>) -> Reply {
        let r = self.0.data(s, st, chunk);
        Reply {
            want: r.want.min(Want::UpTo(self.1)),
            keep: r.keep,
        }
    }

    fn close<S>(&mut self, s: &Stream<'_, S>, st: &mut Self::State) {
        self.0.close(s, st);
    }

    fn flow_end<S>(
        &mut self,
        fe: &FlowEnd<'_, S>,
        orig: &mut Self::State,
        resp: &mut Self::State,
        notes: &mut Notes,
    ) {
        self.0.flow_end(fe, orig, resp, notes);
    }

    fn flow_update<S>(
        &mut self,
        fe: &FlowEnd<'_, S>,
        orig: &mut Self::State,
        resp: &mut Self::State,
        notes: &mut Notes,
    ) {
        self.0.flow_update(fe, orig, resp, notes);
    }

    fn tick(&mut self) {
        self.0.tick();
    }
}

/// The largest payload of one datagram: with this chunk size, segment
/// delivery hands over each UDP datagram in one piece.
pub const DATAGRAM_CHUNK: usize = 65_536;

/// Sets a datagram stream (UDP, or another protocol delivered per packet)
/// to segment delivery with room for a whole datagram per event, so that
/// each data event is one datagram; TCP streams are left alone.
pub fn datagrams_whole<S>(s: &mut Stream<'_, S>) {
    if s.proto() != 6 {
        s.set_delivery(Delivery::Segments);
        s.set_chunk_size(DATAGRAM_CHUNK);
    }
}

/// A stream's state under [`Apps`]: one pointer inline in the connection;
/// the applications' states are allocated when the stream starts.
pub struct AppsState<T>(Option<Box<Part<T>>>);

impl<T> Default for AppsState<T> {
    fn default() -> Self {
        AppsState(None)
    }
}

/// Runs an application (usually a [`Both`] of several) as a [`Handler`]:
/// the stream's cutoff follows what the applications still want, a
/// stream none wants is discarded, and a kept chunk is kept.
pub struct Apps<A> {
    app: A,
}

impl<A: App> Apps<A> {
    /// Runs `app`.
    pub fn new(app: A) -> Apps<A> {
        Apps { app }
    }

    /// The application.
    pub fn app(&mut self) -> &mut A {
        &mut self.app
    }

    /// The application, after the run.
    pub fn into_inner(self) -> A {
        self.app
    }
}

/// Applies what is still wanted of a stream: Scap's cutoff, or discard.
pub fn apply_want<S>(s: &mut Stream<'_, S>, want: Want) {
    match want {
        Want::Nothing => s.discard(),
        Want::UpTo(n) if n < s.info().params.cutoff => s.set_cutoff(Some(n)),
        Want::UpTo(_) | Want::All => {}
    }
}

impl<A: App> Handler for Apps<A> {
    type State = AppsState<A::State>;

    fn on_create(&mut self, s: &mut Stream<'_, Self::State>) {
        self.app.prepare(s);
        let mut part = Box::new(Part::<A::State>::default());
        part.want = self.app.start(s, &mut part.state);
        let want = part.want;
        s.state().0 = Some(part);
        apply_want(s, want);
    }

    fn on_data(&mut self, s: &mut Stream<'_, Self::State>, chunk: &Chunk<'_>) {
        let Some(mut part) = s.state().0.take() else {
            return;
        };
        let reply = offer(&mut self.app, s, &mut part, chunk);
        s.state().0 = Some(part);
        if reply.keep {
            s.keep_chunk();
        }
        apply_want(s, reply.want);
    }

    fn on_close(&mut self, s: &mut Stream<'_, Self::State>) {
        let Some(mut part) = s.state().0.take() else {
            return;
        };
        self.app.close(s, &mut part.state);
        s.state().0 = Some(part);
    }

    fn on_flow_end(&mut self, fe: &mut FlowEnd<'_, Self::State>) {
        let mut orig = fe.state(Direction::Orig).0.take().unwrap_or_default();
        let mut resp = fe.state(Direction::Resp).0.take().unwrap_or_default();
        let mut notes = Notes::default();
        self.app
            .flow_end(fe, &mut orig.state, &mut resp.state, &mut notes);
    }

    fn on_flow_update(&mut self, fe: &mut FlowEnd<'_, Self::State>) {
        // The states are lent, not taken: the connection goes on. A
        // direction without a packet yet has no state, and keeps none.
        let mut orig = fe.state(Direction::Orig).0.take();
        let mut resp = fe.state(Direction::Resp).0.take();
        let mut spare = (Part::default(), Part::default());
        let o = orig.as_deref_mut().unwrap_or(&mut spare.0);
        let r = resp.as_deref_mut().unwrap_or(&mut spare.1);
        self.app
            .flow_update(fe, &mut o.state, &mut r.state, &mut Notes::default());
        fe.state(Direction::Orig).0 = orig;
        fe.state(Direction::Resp).0 = resp;
    }

    fn on_tick(&mut self) {
        self.app.tick();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wants_combine() {
        use Want::*;
        assert_eq!(UpTo(5).max(UpTo(9)), UpTo(9));
        assert_eq!(Nothing.max(UpTo(3)), UpTo(3));
        assert_eq!(UpTo(3).max(All), All);
        assert_eq!(UpTo(5).min(UpTo(9)), UpTo(5));
        assert_eq!(All.min(UpTo(2)), UpTo(2));
        assert_eq!(Nothing.min(All), Nothing);
    }

    #[test]
    fn chunks_are_cut_at_an_applications_limit() {
        let data = b"0123456789";
        let c = Chunk {
            data,
            offset: 100,
            new_from: 2,
            reason: streamcap::deliver::DataReason::Full,
            gap: None,
            packets: &[],
        };
        assert_eq!(clip(&c, u64::MAX).map(|c| c.data.len()), Some(10));
        assert_eq!(clip(&c, 105).map(|c| c.data), Some(&b"01234"[..]));
        assert!(clip(&c, 102).is_none(), "no new byte below the limit");
        let cut = clip(&c, 103).expect("one new byte");
        assert_eq!(cut.new_data(), b"2");
    }
}
