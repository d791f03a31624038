//! Several applications on one capture: each gets exactly what it gets
//! alone, and the stream is copied only as far as the greediest wants.

use std::sync::Arc;
use streamcap::Capture;
use streamcap_apps::compose::{Apps, Both, Cutoff};
use streamcap_apps::nids::{parse_rules, Alert, CompileOptions, Nids, RuleSet, Vars};

fn rules(text: &str) -> Arc<RuleSet> {
    let vars = Vars::default();
    let parsed = parse_rules(text, "inline", &vars);
    assert!(parsed.errors.is_empty(), "{:?}", parsed.errors);
    Arc::new(
        RuleSet::compile(
            parsed.rules,
            &vars.classifications,
            &CompileOptions::default(),
        )
        .unwrap(),
    )
}

fn sample() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../samples/sample.pcap")
}

fn keyed(set: &RuleSet, alerts: &[Alert]) -> Vec<(u32, String, u64)> {
    let mut v: Vec<_> = alerts
        .iter()
        .map(|a| {
            (
                set.rules()[a.rule as usize].rule.sid,
                format!("{:?}{:?}", a.src, a.dst),
                a.stream_offset,
            )
        })
        .collect();
    v.sort();
    v
}

#[test]
fn each_application_sees_what_it_would_alone() {
    // Anchored rules (16 bytes of port 22, 3 of HTTP requests) and an
    // unanchored one on everything.
    let a = rules(
        r#"alert tcp any any -> any 22 (msg:"ssh"; content:"SSH-2.0-"; depth:8; sid:1;)
alert tcp any any -> any 80 (msg:"get"; content:"GET"; depth:3; sid:2;)"#,
    );
    let b = rules(r#"alert tcp any any <> any any (msg:"nginx"; content:"nginx/1.24"; sid:3;)"#);
    let alone = |set: &Arc<RuleSet>| {
        let r = Capture::builder()
            .build()
            .run_file(sample(), Nids::new(set.clone(), Vec::<Alert>::new()))
            .unwrap();
        (keyed(set, &r.handler.sink), r.stats.totals)
    };
    let (want_a, totals_a) = alone(&a);
    let (want_b, totals_b) = alone(&b);
    assert!(!want_a.is_empty() && !want_b.is_empty());
    let both = Capture::builder()
        .build()
        .run_file(
            sample(),
            Apps::new(Both(
                Nids::new(a.clone(), Vec::<Alert>::new()),
                Nids::new(b.clone(), Vec::<Alert>::new()),
            )),
        )
        .unwrap();
    let totals = both.stats.totals;
    let Both(na, nb) = both.handler.into_inner();
    assert_eq!(keyed(&a, &na.sink), want_a);
    assert_eq!(keyed(&b, &nb.sink), want_b);
    // The anchored set alone copies little; the shared run copies what
    // the greedier needs, and no more than the two alone together.
    assert!(
        totals_a.captured < totals_b.captured,
        "{totals_a:?} {totals_b:?}"
    );
    assert!(totals.captured >= totals_b.captured);
    assert!(totals.captured <= totals_a.captured + totals_b.captured);
    assert!(totals.invariant_holds());
}

#[test]
fn an_absent_application_changes_nothing() {
    let b = rules(r#"alert tcp any any <> any any (msg:"nginx"; content:"nginx/1.24"; sid:3;)"#);
    let alone = Capture::builder()
        .build()
        .run_file(sample(), Nids::new(b.clone(), Vec::<Alert>::new()))
        .unwrap();
    let none: Option<Nids<Vec<Alert>>> = None;
    let joined = Capture::builder()
        .build()
        .run_file(
            sample(),
            Apps::new(Both(none, Nids::new(b.clone(), Vec::<Alert>::new()))),
        )
        .unwrap();
    assert_eq!(joined.stats.totals, alone.stats.totals);
    let Both(_, nb) = joined.handler.into_inner();
    assert_eq!(keyed(&b, &nb.sink), keyed(&b, &alone.handler.sink));
}

#[test]
fn an_applications_cutoff_is_its_own() {
    // The nginx banner lies past byte 17 of each response: a 16-byte
    // cutoff on that application hides it, and the other still sees all.
    let b = rules(r#"alert tcp any any <> any any (msg:"nginx"; content:"nginx/1.24"; sid:3;)"#);
    let run = Capture::builder()
        .build()
        .run_file(
            sample(),
            Apps::new(Both(
                Cutoff(Nids::new(b.clone(), Vec::<Alert>::new()), 16),
                Nids::new(b.clone(), Vec::<Alert>::new()),
            )),
        )
        .unwrap();
    let alone = Capture::builder()
        .build()
        .run_file(sample(), Nids::new(b.clone(), Vec::<Alert>::new()))
        .unwrap();
    let Both(Cutoff(cut, _), full) = run.handler.into_inner();
    assert!(cut.sink.is_empty());
    assert!(!full.sink.is_empty());
    assert_eq!(keyed(&b, &full.sink), keyed(&b, &alone.handler.sink));
}

/// Counts the bytes it is given per direction, and what it saw of each
/// connection at its updates and at its end.
#[derive(Default)]
struct Counter {
    /// (update, orig bytes seen, resp bytes seen) per report.
    reports: Vec<(bool, u64, u64)>,
}

impl streamcap_apps::compose::App for Counter {
    type State = u64;
    fn start<S>(&mut self, _: &streamcap::deliver::Stream<'_, S>, _: &mut u64) -> Want {
        Want::All
    }
    fn data<S>(
        &mut self,
        _: &streamcap::deliver::Stream<'_, S>,
        st: &mut u64,
        c: &streamcap::deliver::Chunk<'_>,
    ) -> Reply {
        *st += c.new_data().len() as u64;
        Want::All.into()
    }
    fn flow_update<S>(
        &mut self,
        _: &streamcap::deliver::FlowEnd<'_, S>,
        o: &mut u64,
        r: &mut u64,
        _: &mut Notes,
    ) {
        self.reports.push((true, *o, *r));
    }
    fn flow_end<S>(
        &mut self,
        _: &streamcap::deliver::FlowEnd<'_, S>,
        o: &mut u64,
        r: &mut u64,
        _: &mut Notes,
    ) {
        self.reports.push((false, *o, *r));
    }
}

use streamcap_apps::compose::{Notes, Reply, Want};

/// Active timeouts reach every application of a `Both`, with the states as
/// they are (lent, not taken: the counts go on growing to the end).
#[test]
fn updates_reach_every_application_with_its_state() {
    let cfg = streamcap::Config {
        active_timeout: Some(1_000_000_000),
        cutoff: None,
        // Each segment delivered at once: the counts at an update are
        // what arrived so far (chunks would wait for 16 KiB).
        delivery: streamcap::deliver::Delivery::Segments,
        ..streamcap::Config::default()
    };
    let report = Capture::builder()
        .config(cfg)
        .build()
        .run_file(
            sample(),
            Apps::new(Both(Counter::default(), Counter::default())),
        )
        .expect("the sample runs");
    let Both(a, b) = report.handler.into_inner();
    assert_eq!(a.reports, b.reports);
    let updates = a.reports.iter().filter(|r| r.0).count();
    assert!(updates > 0, "the sample has connections longer than 1 s");
    assert_eq!(
        a.reports.len() - updates,
        report.stats.flows_created.iter().sum::<u64>() as usize
    );
    // Some update saw bytes, and no count went down between reports (the
    // connection's end comes with at least what its updates saw).
    assert!(a.reports.iter().any(|r| r.0 && r.1 + r.2 > 0));
}
