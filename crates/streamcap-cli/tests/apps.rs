//! The applications from the command line: `flows --app`, `http`, and
//! `run --with …` (several applications in one pass, each with its own
//! cutoff and file), against the same applications run alone.

mod common;

use common::{json_lines, run};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn sample() -> String {
    repo().join("samples/sample.pcap").display().to_string()
}

fn rules() -> String {
    repo().join("samples/sample.rules").display().to_string()
}

fn lines(p: &Path) -> Vec<serde_json::Value> {
    json_lines(&std::fs::read(p).unwrap_or_else(|e| panic!("{}: {e}", p.display())))
}

#[test]
fn flows_app_labels_every_record() {
    let out = run(&["flows", "-r", &sample(), "--app"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let recs = json_lines(&out.stdout);
    assert_eq!(recs.len(), 40);
    let labels: BTreeSet<&str> = recs.iter().filter_map(|r| r["app"].as_str()).collect();
    assert_eq!(
        labels,
        ["dns", "http", "ntp", "smtp", "ssh", "tls"]
            .into_iter()
            .collect()
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("  app          http             17 flows"),
        "{err}"
    );
    // Without --app the records carry no label; the rest is the same.
    let plain = json_lines(&run(&["flows", "-r", &sample()]).stdout);
    assert!(plain.iter().all(|r| r.get("app").is_none()));
    let strip = |v: &[serde_json::Value]| -> Vec<(String, String, u64, u64)> {
        let mut k: Vec<_> = v
            .iter()
            .map(|r| {
                (
                    format!("{}:{}", r["src_ip"], r["src_port"]),
                    format!("{}:{}", r["dst_ip"], r["dst_port"]),
                    r["orig"]["pkts"].as_u64().unwrap_or(0),
                    r["resp"]["bytes"].as_u64().unwrap_or(0),
                )
            })
            .collect();
        k.sort();
        k
    };
    assert_eq!(strip(&recs), strip(&plain));
    // conn.log's service column and CSV's app column.
    let zeek = run(&["flows", "-r", &sample(), "--app", "--format", "zeek", "-q"]);
    let text = String::from_utf8_lossy(&zeek.stdout);
    assert!(
        text.lines().any(|l| l.split('\t').nth(7) == Some("ssl")),
        "TLS is Zeek's ssl"
    );
    let csv = run(&["flows", "-r", &sample(), "--app", "--format", "csv", "-q"]);
    let text = String::from_utf8_lossy(&csv.stdout);
    assert!(text
        .lines()
        .next()
        .is_some_and(|h| h.ends_with(",tunnel,app,community_id")));
}

#[test]
fn http_writes_zeek_json_and_tsv() {
    let out = run(&["http", "-r", &sample(), "-q"]);
    assert!(out.status.success());
    let recs = json_lines(&out.stdout);
    assert_eq!(recs.len(), 28);
    for r in &recs {
        for k in [
            "ts",
            "uid",
            "id.orig_h",
            "id.orig_p",
            "id.resp_h",
            "id.resp_p",
            "trans_depth",
            "method",
            "uri",
        ] {
            assert!(r.get(k).is_some(), "{k} missing in {r}");
        }
    }
    let tsv = run(&["http", "-r", &sample(), "-q", "--format", "zeek"]);
    let text = String::from_utf8_lossy(&tsv.stdout);
    assert!(text.starts_with("#separator \\x09\n"));
    assert!(text.contains("#path\thttp\n"));
    assert!(text
        .lines()
        .last()
        .is_some_and(|l| l.starts_with("#close\t")));
    assert_eq!(text.lines().filter(|l| !l.starts_with('#')).count(), 28);
    // The uids are conn.log's.
    let conn = run(&["flows", "-r", &sample(), "--format", "zeek", "-q"]);
    let uids: BTreeSet<String> = String::from_utf8_lossy(&conn.stdout)
        .lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| l.split('\t').nth(1).map(str::to_string))
        .collect();
    assert!(recs
        .iter()
        .all(|r| uids.contains(r["uid"].as_str().unwrap_or(""))));
}

#[test]
fn one_pass_gives_what_each_application_gives_alone() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let o = out.to_str().unwrap();
    let nids = format!("nids={}", rules());
    let res = run(&[
        "run",
        "-r",
        &sample(),
        "-w",
        o,
        "--with",
        "flows",
        "--with",
        "app",
        "--with",
        "http",
        "--with",
        "dns",
        "--with",
        "tls",
        "--with",
        &nids,
        "-q",
    ]);
    assert!(
        res.status.success(),
        "{}",
        String::from_utf8_lossy(&res.stderr)
    );
    for f in ["flows.json", "http.log", "dns.log", "ssl.log", "eve.json"] {
        assert!(out.join(f).exists(), "{f}");
    }
    // Each as it is alone.
    let alone_http = json_lines(&run(&["http", "-r", &sample(), "-q"]).stdout);
    assert_eq!(lines(&out.join("http.log")), alone_http);
    let alone_flows = json_lines(&run(&["flows", "-r", &sample(), "--app", "-q"]).stdout);
    let strip = |v: Vec<serde_json::Value>| -> Vec<String> {
        let mut s: Vec<String> = v
            .into_iter()
            .map(|mut r| {
                // Captured bytes depend on what the other applications want.
                for d in ["orig", "resp"] {
                    for k in ["captured", "discarded"] {
                        r[d][k] = serde_json::Value::Null;
                    }
                }
                r.to_string()
            })
            .collect();
        s.sort();
        s
    };
    assert_eq!(strip(lines(&out.join("flows.json"))), strip(alone_flows));
    let alerts = |v: Vec<serde_json::Value>| -> BTreeSet<String> {
        v.iter()
            .map(|a| {
                format!(
                    "{} {} {}",
                    a["alert"]["signature_id"], a["src_ip"], a["src_port"]
                )
            })
            .collect()
    };
    let alone_nids = json_lines(&run(&["nids", "-r", &sample(), "-S", &rules(), "-q"]).stdout);
    assert_eq!(alerts(lines(&out.join("eve.json"))), alerts(alone_nids));
    assert_eq!(lines(&out.join("dns.log")).len(), 14);
    assert_eq!(lines(&out.join("ssl.log")).len(), 4);
    // An earlier run's files are not overwritten without --force.
    let again = run(&["run", "-r", &sample(), "-w", o, "--with", "http", "-q"]);
    assert_eq!(again.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&again.stderr).contains("--force"));
    let forced = run(&[
        "run",
        "-r",
        &sample(),
        "-w",
        o,
        "--with",
        "http",
        "-q",
        "--force",
        "--log-format",
        "zeek",
    ]);
    assert!(forced.status.success());
    assert!(std::fs::read_to_string(out.join("http.log"))
        .unwrap()
        .starts_with("#separator"));
}

#[test]
fn per_application_cutoffs() {
    let dir = tempfile::tempdir().unwrap();
    let o = dir.path().join("out");
    let nids = format!("nids={},cutoff=16", rules());
    let res = run(&[
        "run",
        "-r",
        &sample(),
        "-w",
        o.to_str().unwrap(),
        "--with",
        "http",
        "--with",
        &nids,
        "-q",
    ]);
    assert!(
        res.status.success(),
        "{}",
        String::from_utf8_lossy(&res.stderr)
    );
    // HTTP still sees everything: its records equal those alone.
    let alone_http = json_lines(&run(&["http", "-r", &sample(), "-q"]).stdout);
    assert_eq!(lines(&o.join("http.log")), alone_http);
    // The NIDS sees 16 bytes of each stream: as `nids --cutoff 16`.
    let alone = json_lines(
        &run(&[
            "nids",
            "-r",
            &sample(),
            "-S",
            &rules(),
            "-q",
            "--cutoff",
            "16",
        ])
        .stdout,
    );
    let sids = |v: Vec<serde_json::Value>| -> BTreeSet<u64> {
        v.iter()
            .filter_map(|a| a["alert"]["signature_id"].as_u64())
            .collect()
    };
    assert_eq!(sids(lines(&o.join("eve.json"))), sids(alone));
}

#[test]
fn bad_run_arguments_are_usage_errors() {
    let dir = tempfile::tempdir().unwrap();
    let o = dir.path().join("out");
    let o = o.to_str().unwrap();
    for args in [
        vec!["--with", "smtp"],
        vec!["--with", "nids"],
        vec!["--with", "http", "--with", "http"],
        vec!["--with", "http,cutoff=lots"],
        vec!["--with", "http", "-o", "x.json"],
    ] {
        let s = sample();
        let mut a = vec!["run", "-r", &s, "-w", o];
        a.extend(args.iter().copied());
        let res = run(&a);
        assert_eq!(
            res.status.code(),
            Some(2),
            "{args:?}: {}",
            String::from_utf8_lossy(&res.stderr)
        );
    }
}
