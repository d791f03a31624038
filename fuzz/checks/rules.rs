//! The NIDS rule parser (`streamcap-apps`): arbitrary text as a rule file.
//! A first line `NAME=VALUE` (with no `(`) also sets a variable, as
//! `--set` does, whatever comes of it. Checks: no panic; every error and
//! every rule names a line of the input, and every error says something;
//! (gid, sid) pairs are unique; every content is non-empty and its depth
//! and within are not shorter than it; a loaded rule's header, written out
//! (variables expanded), parses back to the same header.
//!
//! Not in `checks/mod.rs`: that module is built by `streamcap`'s tests,
//! which do not depend on `streamcap-apps`; the stored inputs run through
//! `crates/streamcap-apps/tests/fuzz_regressions.rs`.
use std::collections::HashSet;
use streamcap_apps::nids::rule::PayloadMatch;
use streamcap_apps::nids::{parse_rules, Vars};

/// Runs the checks on one input (panics on a violation).
pub fn run(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let text = text.as_ref();
    let mut vars = Vars::default();
    if let Some(first) = text.lines().next() {
        if first.contains('=') && !first.contains('(') {
            let _ = vars.set_arg(first);
        }
    }
    let lines = text.lines().count();
    let parsed = parse_rules(text, "fuzz", &vars);
    for e in &parsed.errors {
        assert!(
            (1..=lines).contains(&e.source.line),
            "error on line {} of {lines}: {e}",
            e.source.line
        );
        assert!(!e.message.is_empty());
    }
    let mut ids = HashSet::new();
    for r in &parsed.rules {
        assert!(
            (1..=lines).contains(&r.source.line),
            "rule on line {}",
            r.source.line
        );
        assert!(
            ids.insert((r.gid, r.sid)),
            "duplicate gid {} sid {}",
            r.gid,
            r.sid
        );
        for m in &r.matches {
            if let PayloadMatch::Content(c) = m {
                assert!(!c.pattern.is_empty());
                let len = c.pattern.len() as u64;
                assert!(c.depth.is_none_or(|d| u64::from(d) >= len));
                assert!(c.within.is_none_or(|w| u64::from(w) >= len));
                assert!(!(c.is_relative() && (c.offset.is_some() || c.depth.is_some())));
            }
        }
        let again = format!("{} (sid:1;)", r.header);
        let reparsed = parse_rules(&again, "again", &Vars::empty());
        assert!(reparsed.errors.is_empty(), "{again}: {:?}", reparsed.errors);
        assert_eq!(reparsed.rules.len(), 1);
        assert_eq!(reparsed.rules[0].header, r.header, "{again}");
    }
}
