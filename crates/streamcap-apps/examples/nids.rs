//! Signature matching from a program: rules from a file (or the command
//! line's second argument), alerts printed as `fast.log` lines, counts
//! per signature at the end.
//!
//! `cargo run --release -p streamcap-apps --example nids -- samples/sample.pcap samples/sample.rules`
use std::sync::Arc;
use streamcap_apps::nids::alert::write_fast;
use streamcap_apps::nids::{load_rule_file, CompileOptions, FnSink, Nids, RuleSet, Vars};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let pcap = args.next().unwrap_or_else(|| "samples/sample.pcap".into());
    let rules = args.next().unwrap_or_else(|| "samples/sample.rules".into());
    let vars = Vars::default();
    let parsed = load_rule_file(rules.as_ref(), &vars)?;
    for e in &parsed.errors {
        eprintln!("rejected: {e}");
    }
    let set = RuleSet::compile(
        parsed.rules,
        &vars.classifications,
        &CompileOptions::default(),
    )?;
    // Every alert as a fast.log line, as it is found.
    let print = FnSink(|alert: &_, rules: &RuleSet| {
        let mut line = Vec::new();
        write_fast(alert, rules, &mut line);
        print!("{}", String::from_utf8_lossy(&line));
    });
    let report = streamcap::Capture::builder()
        .build()
        .run_file(&pcap, Nids::new(Arc::new(set), print))?;
    let mut nids = report.handler;
    let stats = nids.detector().stats().clone();
    for (rule, n) in nids.rules().rules().iter().zip(&stats.alerts) {
        if *n > 0 {
            eprintln!(
                "{n:>6}  [{}:{}] {}",
                rule.rule.gid, rule.rule.sid, rule.rule.msg
            );
        }
    }
    eprintln!(
        "{} bytes scanned, {} alerts",
        stats.bytes_scanned,
        stats.total_alerts()
    );
    Ok(())
}
