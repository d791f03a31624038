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
