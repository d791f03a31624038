//! On every capture of the corpus, the TCP and UDP flow records are as many
//! as tshark's `conv,tcp` and `conv,udp` conversations, except for the
//! captures listed one by one, with the reason, in the table of
//! docs/conformance.md ("Flow counts"), whose counts must then be exactly
//! the ones the table gives. The table is read from the page, so the page
//! and the program cannot drift apart.

mod common;

use common::{captures, corpus, json_lines, run, skip};
use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

/// (capture relative to the corpus, protocol) -> (streamcap, tshark).
type Counts = BTreeMap<(String, String), (usize, usize)>;

/// The documented differences: the rows of the table under "Flow counts".
fn documented() -> Counts {
    let page = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/conformance.md");
    let text = std::fs::read_to_string(&page).unwrap_or_else(|e| panic!("{}: {e}", page.display()));
    let section = text
        .split("\n## ")
        .find(|s| s.starts_with("Flow counts"))
        .expect("a \"Flow counts\" section in docs/conformance.md");
    let mut rows = Counts::new();
    for line in section.lines().filter(|l| l.starts_with("| `")) {
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        // | `capture` | proto | streamcap | tshark | why |
        let (Some(file), Some(proto), Some(ours), Some(theirs)) =
            (cells.get(1), cells.get(2), cells.get(3), cells.get(4))
        else {
            panic!("bad row: {line}");
        };
        let n = |c: &str| {
            c.parse::<usize>()
                .unwrap_or_else(|_| panic!("not a count in {line}"))
        };
        rows.insert(
            (file.trim_matches('`').to_string(), proto.to_string()),
            (n(ours), n(theirs)),
        );
    }
    assert!(!rows.is_empty(), "no rows under \"Flow counts\"");
    rows
}

/// tshark's TCP and UDP conversations of `file`, in one pass.
fn tshark_conversations(file: &Path) -> (usize, usize) {
    let out = Command::new("tshark")
        .arg("-r")
        .arg(file)
        .args(["-q", "-z", "conv,tcp", "-z", "conv,udp"])
        .output()
        .expect("tshark runs");
    let text = String::from_utf8_lossy(&out.stdout);
    let (mut tcp, mut udp, mut section) = (0, 0, "");
    for line in text.lines() {
        if line.starts_with("TCP Conversations") {
            section = "tcp";
        } else if line.starts_with("UDP Conversations") {
            section = "udp";
        } else if line.contains("<->") {
            match section {
                "tcp" => tcp += 1,
                "udp" => udp += 1,
                _ => {}
            }
        }
    }
    (tcp, udp)
}

/// streamcap's TCP and UDP flow records of `file`.
fn streamcap_flows(file: &Path) -> (usize, usize) {
    let o = run(&["flows", "-q", "-r", &file.to_string_lossy()]);
    let recs = json_lines(&o.stdout);
    let count = |p: &str| recs.iter().filter(|r| r["proto"] == p).count();
    (count("tcp"), count("udp"))
}

#[test]
fn flow_counts_equal_tshark_conversations_but_for_documented_differences() {
    let Some(dir) = corpus() else { return };
    if Command::new("tshark").arg("-v").output().is_err() {
        skip("tshark not installed (apt-get install tshark)");
        return;
    }
    let files = captures(&dir);
    // Two threads: tshark takes most of the time.
    let half = files.len().div_ceil(2);
    let measured: Counts = std::thread::scope(|s| {
        let jobs: Vec<_> = files
            .chunks(half.max(1))
            .map(|part| {
                let dir = &dir;
                s.spawn(move || {
                    let mut m = Counts::new();
                    for f in part {
                        let rel = f.strip_prefix(dir).unwrap_or(f).display().to_string();
                        let (st, su) = streamcap_flows(f);
                        let (tt, tu) = tshark_conversations(f);
                        m.insert((rel.clone(), "tcp".into()), (st, tt));
                        m.insert((rel, "udp".into()), (su, tu));
                    }
                    m
                })
            })
            .collect();
        jobs.into_iter()
            .flat_map(|j| j.join().expect("a comparison thread"))
            .collect()
    });
    let documented = documented();
    let mut wrong = Vec::new();
    for (key, &(ours, theirs)) in &measured {
        match documented.get(key) {
            Some(&want) if want != (ours, theirs) => wrong.push(format!(
                "{} {}: streamcap {ours}, tshark {theirs}; the page says {} and {}",
                key.0, key.1, want.0, want.1
            )),
            Some(_) => {}
            None if ours != theirs => wrong.push(format!(
                "{} {}: streamcap {ours}, tshark {theirs}, not in the table",
                key.0, key.1
            )),
            None => {}
        }
    }
    for key in documented.keys() {
        if !measured.contains_key(key) {
            wrong.push(format!(
                "{} {}: in the table, not in the corpus",
                key.0, key.1
            ));
        }
    }
    let equal = measured.values().filter(|(a, b)| a == b).count();
    eprintln!(
        "{} captures: {equal} of {} TCP/UDP counts equal tshark's, {} documented differences",
        files.len(),
        measured.len(),
        documented.len()
    );
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}
