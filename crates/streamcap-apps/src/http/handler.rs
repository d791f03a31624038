//! The analyser as a streamcap [`Handler`]: an [`HttpAnalyzer`] per
//! worker, records to a [`RecordSink`].

use super::analyzer::{HttpAnalyzer, HttpConfig, HttpState};
use super::record::RecordSink;
use crate::compose::{apply_want, App, Notes, Reply, Want};
use streamcap::deliver::{Chunk, FlowEnd, Handler, Stream};
use streamcap::flow::Direction;

/// HTTP/1.x transactions of a capture, as Zeek `http.log` records.
///
/// ```no_run
/// use streamcap_apps::http::{Http, HttpConfig, HttpRecord};
///
/// let http = Http::new(HttpConfig::default(), Vec::<HttpRecord>::new());
/// let report = streamcap::Capture::builder().build().run_file("trace.pcap", http)?;
/// for r in &report.handler.sink {
///     println!("{}", r.to_json());
/// }
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Http<K> {
    analyzer: HttpAnalyzer,
    /// Where records go.
    pub sink: K,
}

impl<K: RecordSink> Http<K> {
    /// A handler with these settings, writing to `sink`.
    pub fn new(config: HttpConfig, sink: K) -> Http<K> {
        Http {
            analyzer: HttpAnalyzer::new(config),
            sink,
        }
    }

    /// The analyser (counters, settings).
    pub fn analyzer(&mut self) -> &mut HttpAnalyzer {
        &mut self.analyzer
    }
}

impl<K: RecordSink> Handler for Http<K> {
    type State = HttpState;

    fn on_create(&mut self, s: &mut Stream<'_, HttpState>) {
        HttpAnalyzer::prepare(s);
        let mut st = std::mem::take(s.state());
        let want = self.analyzer.start(s, &mut st);
        *s.state() = st;
        apply_want(s, want);
    }

    fn on_data(&mut self, s: &mut Stream<'_, HttpState>, chunk: &Chunk<'_>) {
        let mut st = std::mem::take(s.state());
        let reply = self.analyzer.data(s, &mut st, chunk, &mut self.sink);
        *s.state() = st;
        if reply.keep {
            s.keep_chunk();
        }
        apply_want(s, reply.want);
    }

    fn on_close(&mut self, s: &mut Stream<'_, HttpState>) {
        let mut st = std::mem::take(s.state());
        self.analyzer.close(s, &mut st, &mut self.sink);
    }

    fn on_flow_end(&mut self, fe: &mut FlowEnd<'_, HttpState>) {
        let conn_id = fe.stream(Direction::Orig).conn_id;
        self.analyzer.flow_end(conn_id, &mut self.sink);
    }
}

/// HTTP among other applications ([`crate::compose`]).
impl<K: RecordSink> App for Http<K> {
    type State = HttpState;

    fn prepare<S>(&self, s: &mut Stream<'_, S>) {
        HttpAnalyzer::prepare(s);
    }

    fn start<S>(&mut self, s: &Stream<'_, S>, st: &mut HttpState) -> Want {
        self.analyzer.start(s, st)
    }

    fn data<S>(&mut self, s: &Stream<'_, S>, st: &mut HttpState, chunk: &Chunk<'_>) -> Reply {
        self.analyzer.data(s, st, chunk, &mut self.sink)
    }

    fn close<S>(&mut self, s: &Stream<'_, S>, st: &mut HttpState) {
        self.analyzer.close(s, st, &mut self.sink);
    }

    fn flow_end<S>(
        &mut self,
        fe: &FlowEnd<'_, S>,
        _: &mut HttpState,
        _: &mut HttpState,
        _: &mut Notes,
    ) {
        self.analyzer
            .flow_end(fe.stream(Direction::Orig).conn_id, &mut self.sink);
    }
}
