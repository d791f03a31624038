//! The analysis stage from the command line (`--analysis-threads`) and the
//! run statistics (`--stats-json`).

mod common;

use common::*;
use std::collections::BTreeMap;
use std::path::Path;

fn sorted_lines(bytes: &[u8]) -> Vec<String> {
    let mut v: Vec<String> = String::from_utf8_lossy(bytes)
        .lines()
        .map(str::to_string)
        .collect();
    v.sort();
    v
}

fn files_of(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut m = BTreeMap::new();
    for e in std::fs::read_dir(dir).expect("dir").flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if name != "streams.jsonl" {
            m.insert(name, std::fs::read(e.path()).expect("file"));
        }
    }
    m
}

/// Handlers that take no decisions give the same records and stream files
/// inline and on analysis threads.
#[test]
fn analysis_threads_give_the_same_records_and_files() {
    let dir = tempdir("analysis-threads");
    let trace = dir.join("campus.pcap");
    let (bytes, _, _) = streamcap_gen::Campus::new(streamcap_gen::CampusConfig {
        packets: 30_000,
        ..Default::default()
    })
    .to_bytes();
    std::fs::write(&trace, bytes).expect("write trace");
    let sample = "../../samples/sample.pcap".to_string();
    for input in [sample, trace.display().to_string()] {
        let mut digests = Vec::new();
        let mut streams = Vec::new();
        for threads in ["0", "1", "3"] {
            let o = run(&[
                "flows",
                "-q",
                "--digest",
                "-r",
                &input,
                "--analysis-threads",
                threads,
            ]);
            assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
            digests.push(sorted_lines(&o.stdout));
            let w = dir.join(format!("w{threads}"));
            let ws = w.display().to_string();
            let o = run(&[
                "streams",
                "-q",
                "-r",
                &input,
                "-w",
                &ws,
                "--force",
                "--analysis-threads",
                threads,
            ]);
            assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
            streams.push((sorted_lines(&o.stdout), files_of(&w)));
        }
        assert!(!digests[0].is_empty());
        for i in 1..digests.len() {
            assert_eq!(digests[0], digests[i], "{input}: flows --digest");
            assert_eq!(streams[0].0, streams[i].0, "{input}: streams records");
            assert_eq!(streams[0].1, streams[i].1, "{input}: stream files");
        }
    }
    let o = run(&[
        "flows",
        "-r",
        "../../samples/sample.pcap",
        "--analysis-threads",
        "65",
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let o = run(&[
        "flows",
        "-r",
        "../../samples/sample.pcap",
        "--digest",
        "--analysis-threads",
        "2",
    ]);
    assert!(
        stderr(&o).contains("  analysis     2 threads: "),
        "{}",
        stderr(&o)
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// `--stats-json` holds the summary's figures, with -q too, and never
/// mixes with the records.
#[test]
fn stats_json_holds_the_summary() {
    let dir = tempdir("stats-json");
    let path = dir.join("stats.json");
    let ps = path.display().to_string();
    let s = "../../samples/sample.pcap";
    let o = run(&[
        "flows",
        "-q",
        "--digest",
        "-r",
        s,
        "--memory",
        "8KiB",
        "--rate",
        "1Gbit/s",
        "--stats-json",
        &ps,
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(o.stderr.is_empty(), "{}", stderr(&o));
    let records = json_lines(&o.stdout);
    assert_eq!(records.len(), 40);
    assert!(records.iter().all(|r| r.get("overload").is_none()));
    let text = std::fs::read_to_string(&path).expect("stats");
    let v: serde_json::Value = serde_json::from_str(&text).expect("json");
    assert_eq!(v["packets"]["read"], 472);
    assert_eq!(v["memory"]["limit"], 8192);
    let g = |k: &str| v["streams"][k].as_u64().unwrap_or(u64::MAX);
    assert_eq!(
        g("captured") + g("discarded") + g("dropped") + g("missing"),
        g("stream_bytes")
    );
    let levels = v["overload"]["levels"].as_array().expect("levels");
    let dropped: u64 = levels
        .iter()
        .map(|l| l["dropped"].as_u64().unwrap_or(0))
        .sum();
    assert_eq!(dropped, g("dropped"));
    assert!(dropped > 0);
    assert!(v["ring"]["drops"].is_u64() && v["ring"]["size"] == 32 << 20);
    assert_eq!(v["analysis"]["threads"], 1);
    // Unpaced and inline: no ring, no analysis stage.
    let o = run(&["flows", "-q", "-r", s, "--stats-json", &ps]);
    assert_eq!(o.status.code(), Some(0));
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).expect("stats")).expect("json");
    assert!(v["ring"].is_null() && v["analysis"].is_null());
    // Not the input, not the records' output.
    let copy = dir.join("in.pcap");
    std::fs::copy(s, &copy).expect("copy");
    let cs = copy.display().to_string();
    let o = run(&["flows", "-q", "-r", &cs, "--stats-json", &cs]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(std::fs::read(&copy)
        .map(|b| b.len() > 1000)
        .unwrap_or(false));
    let out = dir.join("out.json").display().to_string();
    let o = run(&["flows", "-q", "-r", s, "-o", &out, "--stats-json", &out]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let _ = std::fs::remove_dir_all(&dir);
}
