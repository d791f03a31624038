//! The NIDS as a streamcap [`Handler`]: a [`Detector`] per worker, alerts
//! to an [`AlertSink`].

use super::alert::AlertSink;
use super::detector::{Detector, NidsState};
use crate::compose::{self, apply_want, App, Notes, Reply, Want};
use std::sync::Arc;
use streamcap::deliver::{Chunk, FlowEnd, Handler, Stream};
use streamcap::flow::Direction;

use super::ruleset::RuleSet;

/// Signature matching on a capture's streams.
///
/// ```no_run
/// use std::sync::Arc;
/// use streamcap_apps::nids::{Alert, Classifications, CompileOptions, Nids, RuleSet, Vars};
///
/// let parsed = streamcap_apps::nids::parse_rules(
///     r#"alert tcp any any -> any 80 (msg:"admin page"; content:"/admin"; sid:1;)"#,
///     "inline",
///     &Vars::default(),
/// );
/// let rules = RuleSet::compile(parsed.rules, &Classifications::default(), &CompileOptions::default())?;
/// let nids = Nids::new(Arc::new(rules), Vec::<Alert>::new());
/// let report = streamcap::Capture::builder().build().run_file("trace.pcap", nids)?;
/// for a in &report.handler.sink {
///     println!("sid {} at offset {}", report.handler.rules().rules()[a.rule as usize].rule.sid, a.stream_offset);
/// }
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Nids<K> {
    detector: Detector,
    /// Where alerts go.
    pub sink: K,
}

impl<K: AlertSink> Nids<K> {
    /// A handler matching `rules`, alerting to `sink`.
    pub fn new(rules: Arc<RuleSet>, sink: K) -> Nids<K> {
        Nids {
            detector: Detector::new(rules),
            sink,
        }
    }

    /// The rule set.
    pub fn rules(&self) -> &Arc<RuleSet> {
        self.detector.rules()
    }

    /// The detector (counters, settings).
    pub fn detector(&mut self) -> &mut Detector {
        &mut self.detector
    }
}

impl<K: AlertSink> Handler for Nids<K> {
    type State = NidsState;

    fn on_create(&mut self, s: &mut Stream<'_, NidsState>) {
        Detector::prepare(s);
        let mut st = std::mem::take(s.state());
        let want = self.detector.start(s, &mut st, &mut self.sink);
        *s.state() = st;
        apply_want(s, want);
    }

    fn on_data(&mut self, s: &mut Stream<'_, NidsState>, chunk: &Chunk<'_>) {
        let mut st = std::mem::take(s.state());
        let want = self.detector.data(s, &mut st, chunk, &mut self.sink);
        *s.state() = st;
        apply_want(s, want);
    }

    fn on_close(&mut self, s: &mut Stream<'_, NidsState>) {
        self.detector.close(s.state());
    }

    fn on_flow_end(&mut self, fe: &mut FlowEnd<'_, NidsState>) {
        self.detector.flow_end(fe.stream(Direction::Orig).conn_id);
    }
}

/// The NIDS as one application among several ([`crate::compose`]).
impl<K: AlertSink> App for Nids<K> {
    type State = NidsState;

    fn prepare<S>(&self, s: &mut Stream<'_, S>) {
        compose::datagrams_whole(s);
    }

    fn start<S>(&mut self, s: &Stream<'_, S>, st: &mut NidsState) -> Want {
        self.detector.start(s, st, &mut self.sink)
    }

    fn data<S>(&mut self, s: &Stream<'_, S>, st: &mut NidsState, chunk: &Chunk<'_>) -> Reply {
        self.detector.data(s, st, chunk, &mut self.sink).into()
    }

    fn close<S>(&mut self, _s: &Stream<'_, S>, st: &mut NidsState) {
        self.detector.close(st);
    }

    fn flow_end<S>(
        &mut self,
        fe: &FlowEnd<'_, S>,
        _: &mut NidsState,
        _: &mut NidsState,
        _: &mut Notes,
    ) {
        self.detector.flow_end(fe.stream(Direction::Orig).conn_id);
    }
}
