//! `streamcap nids` from the command line: rule loading and rejection,
//! variables, output formats and files, workers and engines, the summary
//! and `--stats-json`, and the connection names shared with `conn.log`.

mod common;

use common::{json_lines, run};
use std::collections::BTreeSet;
use std::path::PathBuf;

fn sample() -> String {
    repo().join("samples/sample.pcap").display().to_string()
}

fn rules() -> String {
    repo().join("samples/sample.rules").display().to_string()
}

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// (sid, src, dst) of every EVE alert.
fn alerts(stdout: &[u8]) -> BTreeSet<(u64, String, String)> {
    json_lines(stdout)
        .iter()
        .map(|a| {
            (
                a["alert"]["signature_id"].as_u64().unwrap_or(0),
                format!("{}:{}", a["src_ip"].as_str().unwrap_or(""), a["src_port"]),
                format!("{}:{}", a["dest_ip"].as_str().unwrap_or(""), a["dest_port"]),
            )
        })
        .collect()
}

#[test]
fn alerts_go_to_stdout_and_the_summary_to_stderr() {
    let out = run(&["nids", "-r", &sample(), "-S", &rules()]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lines = json_lines(&out.stdout);
    assert_eq!(lines.len(), 33);
    for a in &lines {
        assert_eq!(a["event_type"], "alert");
        for key in [
            "timestamp",
            "flow_id",
            "src_ip",
            "src_port",
            "dest_ip",
            "dest_port",
            "proto",
            "direction",
            "stream_offset",
            "uid",
        ] {
            assert!(a.get(key).is_some(), "{key} missing in {a}");
        }
        for key in [
            "action",
            "gid",
            "signature_id",
            "rev",
            "signature",
            "category",
            "severity",
        ] {
            assert!(a["alert"].get(key).is_some(), "alert.{key} missing in {a}");
        }
    }
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("samples/sample.rules:10: http.uri: keyword `http.uri` is not supported"),
        "{err}"
    );
    assert!(err.contains("7 rules loaded"), "{err}");
    assert!(
        err.contains("  alerts             14  [1:1000002:1] nginx answers"),
        "{err}"
    );
    // The classtype's description and priority.
    let poll = lines
        .iter()
        .find(|a| a["alert"]["signature_id"] == 1000001)
        .expect("sid 1000001");
    assert_eq!(
        poll["alert"]["category"],
        "Potential Corporate Privacy Violation"
    );
    assert_eq!(poll["alert"]["severity"], 1);
}

#[test]
fn fast_log_and_output_files() {
    let dir = tempfile::tempdir().unwrap();
    let fast = dir.path().join("fast.log");
    let out = run(&[
        "nids",
        "-r",
        &sample(),
        "-S",
        &rules(),
        "--format",
        "fast",
        "-q",
        "-o",
        fast.to_str().unwrap(),
    ]);
    assert!(out.status.success());
    assert!(out.stdout.is_empty(), "records go to -o only");
    let text = std::fs::read_to_string(&fast).unwrap();
    assert_eq!(text.lines().count(), 33);
    assert!(
        text.lines()
            .all(|l| l.contains("  [**] [1:100000") && l.contains(" -> ")),
        "{text}"
    );
    assert!(text
        .contains("[Classification: Potential Corporate Privacy Violation] [Priority: 1] {TCP}"));
}

#[test]
fn workers_engines_and_deliveries_give_the_same_alerts() {
    let base = run(&["nids", "-r", &sample(), "-S", &rules(), "-q"]);
    let want = alerts(&base.stdout);
    assert_eq!(want.len(), 33);
    let mut variants: Vec<Vec<&str>> = vec![
        vec!["--workers", "2"],
        vec!["--engine", "aho-corasick"],
        vec!["--delivery", "segments"],
        vec!["--chunk", "1"],
        vec!["--analysis-threads", "1"],
    ];
    let hs = run(&[
        "nids",
        "-r",
        &sample(),
        "-S",
        &rules(),
        "-q",
        "--engine",
        "hyperscan",
    ]);
    if hs.status.success() {
        variants.push(vec!["--engine", "hyperscan"]);
    } else {
        common::skip("--engine hyperscan (libhs.so.5 does not load)");
        let err = String::from_utf8_lossy(&hs.stderr);
        assert!(
            err.contains("libhyperscan5"),
            "the error names the package: {err}"
        );
        assert_eq!(hs.status.code(), Some(2));
    }
    let (pcap, rules) = (sample(), rules());
    for v in variants {
        let mut args = vec!["nids", "-r", &pcap, "-S", &rules, "-q"];
        args.extend(&v);
        let out = run(&args);
        assert!(
            out.status.success(),
            "{v:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(alerts(&out.stdout), want, "{v:?}");
    }
}

#[test]
fn variables_from_the_command_line_and_a_yaml_file() {
    // The API rule's header is $HOME_NET -> $EXTERNAL_NET: a HOME_NET that
    // holds none of the sample's clients silences it.
    let out = run(&[
        "nids",
        "-r",
        &sample(),
        "-S",
        &rules(),
        "-q",
        "--set",
        "HOME_NET=[10.0.0.0/8]",
    ]);
    assert!(out.status.success());
    let got = alerts(&out.stdout);
    assert!(!got.iter().any(|a| a.0 == 1000001), "{got:?}");
    assert!(got.iter().any(|a| a.0 == 1000003));
    let dir = tempfile::tempdir().unwrap();
    let yaml = dir.path().join("vars.yaml");
    std::fs::write(&yaml, "%YAML 1.1\n---\nvars:\n  address-groups:\n    HOME_NET: \"[10.0.0.0/8]\"\n  port-groups:\n    HTTP_PORTS: \"8080\"\n").unwrap();
    let out = run(&[
        "nids",
        "-r",
        &sample(),
        "-S",
        &rules(),
        "-q",
        "--vars",
        yaml.to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let got = alerts(&out.stdout);
    assert!(
        !got.iter().any(|a| a.0 == 1000001 || a.0 == 1000002),
        "{got:?}"
    );
    let (pcap, rules) = (sample(), rules());
    for bad in [
        vec!["--set", "HOME_NET"],
        vec!["--set", "HOME_NET=[10.0.0.0/33]"],
        vec!["--vars", "/nonexistent.yaml"],
    ] {
        let mut args = vec!["nids", "-r", &pcap, "-S", &rules, "-q"];
        args.extend(&bad);
        let out = run(&args);
        assert_eq!(out.status.code(), Some(2), "{bad:?}");
        assert!(out.stdout.is_empty());
        assert!(!out.stderr.is_empty());
    }
}

#[test]
fn unusable_rule_files_are_refused_before_any_packet() {
    let dir = tempfile::tempdir().unwrap();
    let none = dir.path().join("none.rules");
    std::fs::write(
        &none,
        "alert tcp any any -> any any (msg:\"x\"; http.uri; content:\"a\"; sid:1;)\n# a comment\n",
    )
    .unwrap();
    let out = run(&["nids", "-r", &sample(), "-S", none.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("none.rules:1: http.uri"), "{err}");
    assert!(err.contains("no rule loaded"), "{err}");
    let out = run(&["nids", "-r", &sample(), "-S", "/nonexistent.rules"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("/nonexistent.rules"));
    // Many rejected rules: the first ten, then a count per keyword.
    let many = dir.path().join("many.rules");
    let text: String = (1..=30)
        .map(|i| {
            format!(
                "alert tcp any any -> any any (msg:\"r{i}\"; {} content:\"a\"; sid:{i};)\n",
                if i % 2 == 0 {
                    "http.uri;"
                } else {
                    "dsize:>10;"
                }
            )
        })
        .chain(std::iter::once(
            "alert tcp any any -> any any (msg:\"ok\"; content:\"GET\"; sid:99;)\n".to_string(),
        ))
        .collect();
    std::fs::write(&many, text).unwrap();
    let out = run(&["nids", "-r", &sample(), "-S", many.to_str().unwrap(), "-q"]);
    assert!(out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.matches("rule rejected").count(), 10, "{err}");
    assert!(err.contains("20 more rules rejected"), "{err}");
    assert!(
        err.contains("dsize 10") && err.contains("http.uri 10"),
        "{err}"
    );
}

#[test]
fn stats_json_has_the_alerts_per_signature() {
    let dir = tempfile::tempdir().unwrap();
    let stats = dir.path().join("stats.json");
    let out = run(&[
        "nids",
        "-r",
        &sample(),
        "-S",
        &rules(),
        "-q",
        "-o",
        "/dev/null",
        "--stats-json",
        stats.to_str().unwrap(),
    ]);
    assert!(out.status.success());
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&stats).unwrap()).unwrap();
    let n = &v["nids"];
    assert_eq!(n["rules"], 7);
    assert_eq!(n["alerts"], 33);
    let sigs = n["signatures"].as_array().unwrap();
    assert_eq!(sigs[0]["sid"], 1000002);
    assert_eq!(sigs[0]["alerts"], 14);
    assert_eq!(
        sigs.iter()
            .map(|s| s["alerts"].as_u64().unwrap())
            .sum::<u64>(),
        33
    );
}

#[test]
fn alert_uids_are_the_conn_log_uids() {
    let eve = run(&["nids", "-r", &sample(), "-S", &rules(), "-q"]);
    let conn = run(&["flows", "-r", &sample(), "--format", "zeek", "-q"]);
    let uids: BTreeSet<String> = String::from_utf8_lossy(&conn.stdout)
        .lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| l.split('\t').nth(1).map(str::to_string))
        .collect();
    let alerts = json_lines(&eve.stdout);
    assert!(!alerts.is_empty());
    for a in alerts {
        let uid = a["uid"].as_str().unwrap_or("");
        assert!(uids.contains(uid), "{uid} of {a} not in conn.log");
    }
}

#[test]
fn a_cutoff_limits_what_is_matched() {
    // The API rule needs bytes 0..~19 of the request; the nginx one lies
    // further in the response; a 16-byte cutoff keeps only the banner rule
    // and the TLS record header.
    let out = run(&[
        "nids",
        "-r",
        &sample(),
        "-S",
        &rules(),
        "-q",
        "--cutoff",
        "16",
    ]);
    assert!(out.status.success());
    let sids: BTreeSet<u64> = alerts(&out.stdout).iter().map(|a| a.0).collect();
    assert!(
        sids.contains(&1000003) && sids.contains(&1000006),
        "{sids:?}"
    );
    assert!(
        !sids.contains(&1000002) && !sids.contains(&1000007),
        "{sids:?}"
    );
}
