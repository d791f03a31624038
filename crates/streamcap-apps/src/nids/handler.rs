//! The NIDS as a streamcap [`Handler`]: a [`Detector`] per worker, alerts
//! to an [`AlertSink`].

use super::alert::AlertSink;
use super::detector::{Detector, NidsState, Want};
use std::sync::Arc;
use streamcap::deliver::{Chunk, FlowEnd, Handler, Stream};

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

/// Applies what the detector still wants to the stream: Scap's cutoff.
pub fn apply_want<S>(s: &mut Stream<'_, S>, want: Want) {
    match want {
        Want::Nothing => s.discard(),
        Want::UpTo(n) if n < s.info().params.cutoff => s.set_cutoff(Some(n)),
        Want::UpTo(_) | Want::All => {}
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
        self.detector
            .flow_end(fe.stream(streamcap::flow::Direction::Orig).conn_id);
    }
}
