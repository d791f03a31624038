//! `--format parquet`: the file read back with the parquet crate equals,
//! row by row and field by field, the JSON records of the same capture
//! (the shipped sample with `--app`, `--digest`, `--active-timeout`,
//! several workers, `streams -w`; every capture of the corpus); its
//! schema is the one docs/export.md documents; DuckDB (the Python wheel)
//! reads it and computes the aggregates the JSON records give; the file is
//! complete after a stop by a signal and after an abort; standard output
//! and unwritable paths are refused. The DuckDB tests skip with a message
//! where `python3 -c 'import duckdb'` fails (`scripts/install-deps.sh`
//! installs it; `STREAMCAP_PYTHON` names another interpreter).

mod common;

#[path = "common/parquet_rows.rs"]
mod parquet_rows;

use common::{captures, corpus, run, skip, tempdir, BIN};
use parquet::basic::{Compression, LogicalType, Repetition, TimeUnit};
use parquet::file::reader::{FileReader, SerializedFileReader};
use parquet::schema::types::Type;
use parquet_rows::{assert_same, canon, json_records, parquet_records};
use serde_json::{json, Map, Value};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

const SAMPLE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../samples/sample.pcap");

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn s(p: &Path) -> &str {
    p.to_str().expect("a UTF-8 path")
}

/// Runs `streamcap ARGS -q -o OUT` and checks that it succeeds.
fn run_ok(args: &[&str], out: &Path) {
    let mut all = args.to_vec();
    all.extend(["-q", "-o", s(out)]);
    let o = run(&all);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{all:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
}

/// Runs `streamcap ARGS -q -o OUT`; its exit status, 0 or 1 (an input
/// error, as a capture cut short: the records before it are written).
fn run_status(args: &[&str], out: &Path) -> i32 {
    let mut all = args.to_vec();
    all.extend(["-q", "-o", s(out)]);
    let o = run(&all);
    let code = o.status.code().unwrap_or(-1);
    assert!(
        code == 0 || code == 1,
        "{all:?}: exit {code}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    code
}

/// Runs `args` twice, records as JSON lines and as Parquet (with the same
/// exit status); the JSON records and the Parquet rows.
fn both(args: &[&str], dir: &Path, name: &str) -> (Vec<Value>, Vec<Value>) {
    let json = dir.join(format!("{name}.json"));
    let pq = dir.join(format!("{name}.parquet"));
    let code = run_status(args, &json);
    let mut pargs = args.to_vec();
    pargs.extend(["--format", "parquet"]);
    assert_eq!(run_status(&pargs, &pq), code, "{args:?}: exit status");
    let text = std::fs::read(&json).expect("read the JSON records");
    (json_records(&text), parquet_records(&pq))
}

#[test]
fn sample_rows_equal_the_json_records() {
    let dir = tempdir("parquet-sample");
    let variants: [(&str, &[&str], bool); 6] = [
        ("plain", &["flows", "-r", SAMPLE], true),
        (
            "digest-app",
            &["flows", "-r", SAMPLE, "--digest", "--app"],
            true,
        ),
        (
            "active",
            &["flows", "-r", SAMPLE, "--app", "--active-timeout", "50ms"],
            true,
        ),
        (
            "workers",
            &["flows", "-r", SAMPLE, "--workers", "2", "--digest"],
            false,
        ),
        (
            "seed-cutoff",
            &[
                "flows",
                "-r",
                SAMPLE,
                "--community-id-seed",
                "9",
                "--cutoff",
                "100",
                "--priority-class",
                "tcp port 443=3",
            ],
            true,
        ),
        (
            "workers-app-active",
            &[
                "flows",
                "-r",
                SAMPLE,
                "--workers",
                "2",
                "--app",
                "--active-timeout",
                "50ms",
            ],
            false,
        ),
    ];
    for (name, args, ordered) in variants {
        let (json, rows) = both(args, &dir, name);
        assert!(json.len() >= 40, "{name}: {} records", json.len());
        assert_same(&json, &rows, ordered, name);
        if name.contains("active") {
            let interim = rows.iter().filter(|r| r["end"] == "active").count();
            assert!(interim > 0, "{name}: interim rows");
        }
        if name.contains("app") {
            assert!(rows.iter().any(|r| r["app"] == "tls"), "{name}: app labels");
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// `run -w DIR --with flows,parquet`: `DIR/flows.parquet` holds the rows
/// of the `flows.json` that `--with flows` writes.
#[test]
fn run_with_flows_parquet_writes_flows_parquet() {
    let dir = tempdir("parquet-run");
    let (jdir, pdir) = (dir.join("j"), dir.join("p"));
    for (d, flows) in [(&jdir, "flows,digest"), (&pdir, "flows,digest,parquet")] {
        let o = run(&[
            "run",
            "-r",
            SAMPLE,
            "-w",
            s(d),
            "--with",
            flows,
            "--with",
            "app",
            "-q",
        ]);
        assert_eq!(
            o.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&o.stderr)
        );
    }
    assert!(!pdir.join("flows.json").exists());
    let json = json_records(&std::fs::read(jdir.join("flows.json")).expect("flows.json"));
    let rows = parquet_records(&pdir.join("flows.parquet"));
    assert_same(&json, &rows, true, "run --with flows,parquet");
    assert!(rows.iter().any(|r| r["app"] == "http"));
    let _ = std::fs::remove_dir_all(&dir);
}

/// `streams -w DIR`: the file columns.
#[test]
fn streams_rows_carry_the_file_names() {
    let dir = tempdir("parquet-streams");
    let (jdir, pdir) = (dir.join("j"), dir.join("p"));
    let (json, pq) = (dir.join("r.json"), dir.join("r.parquet"));
    run_ok(&["streams", "-r", SAMPLE, "-w", s(&jdir)], &json);
    run_ok(
        &[
            "streams",
            "-r",
            SAMPLE,
            "-w",
            s(&pdir),
            "--format",
            "parquet",
        ],
        &pq,
    );
    let json = json_records(&std::fs::read(&json).expect("read"));
    let rows = parquet_records(&pq);
    assert_same(&json, &rows, true, "streams -w");
    assert!(rows.iter().any(|r| r["orig"]["file"].is_string()));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn corpus_rows_equal_the_json_records() {
    let Some(corpus) = corpus() else { return };
    let files = captures(&corpus);
    if files.is_empty() {
        skip(format!("no captures in {}", corpus.display()));
        return;
    }
    let dir = tempdir("parquet-corpus");
    let (mut rows_total, mut tunnels, mut vlans, mut ipv6) = (0, 0, 0, 0);
    // No --active-timeout here: a capture whose clock jumps by months
    // (dns-udp/ndpi__quic.pcap) would make millions of interim records.
    for f in &files {
        let args = ["flows", "-r", s(f), "--app", "--digest"];
        let (json, rows) = both(&args, &dir, "c");
        assert_same(&json, &rows, true, &f.display().to_string());
        rows_total += rows.len();
        tunnels += rows.iter().filter(|r| r.get("tunnel").is_some()).count();
        vlans += rows.iter().filter(|r| !r["vlan"].is_null()).count();
        ipv6 += rows
            .iter()
            .filter(|r| r["src_ip"].as_str().is_some_and(|a| a.contains(':')))
            .count();
    }
    eprintln!(
        "{} captures, {rows_total} rows ({tunnels} in tunnels, {vlans} with a VLAN, {ipv6} IPv6) \
         equal their JSON records",
        files.len()
    );
    assert!(tunnels > 0 && vlans > 0 && ipv6 > 0);
    let _ = std::fs::remove_dir_all(&dir);
}

/// A generated campus trace (VLANs, fragments), two workers, interim
/// records every 2 s: more than one row group.
#[test]
fn campus_rows_with_interim_records_equal_the_json_records() {
    let dir = tempdir("parquet-campus");
    let trace = dir.join("campus.pcap");
    let cfg = streamcap_gen::CampusConfig {
        packets: 120_000,
        link_gbps: 0.005,
        vlan: 0.1,
        fragment: 0.01,
        ..Default::default()
    };
    let (bytes, _, _) = streamcap_gen::Campus::new(cfg).to_bytes();
    std::fs::write(&trace, bytes).expect("write trace");
    let args = [
        "flows",
        "-r",
        s(&trace),
        "--workers",
        "2",
        "--app",
        "--active-timeout",
        "2s",
    ];
    let (json, rows) = both(&args, &dir, "campus");
    assert_same(&json, &rows, false, "campus");
    eprintln!("campus: {} rows", rows.len());
    let interim = rows.iter().filter(|r| r["end"] == "active").count();
    assert!(
        rows.len() > 65_536 && interim > 40_000,
        "{} rows, {interim} interim",
        rows.len()
    );
    let reader =
        SerializedFileReader::new(std::fs::File::open(dir.join("campus.parquet")).expect("open"))
            .expect("reader");
    assert!(reader.metadata().num_row_groups() >= 2);
    let _ = std::fs::remove_dir_all(&dir);
}

/// The type of a top-level column as docs/export.md names it.
fn type_name(t: &Type) -> String {
    let info = t.get_basic_info();
    if t.is_group() {
        let leaf = t
            .get_fields()
            .first()
            .and_then(|l| l.get_fields().first())
            .map(|e| type_name(e))
            .unwrap_or_default();
        return format!("LIST<{leaf}>");
    }
    match info.logical_type_ref() {
        Some(LogicalType::Timestamp {
            is_adjusted_to_u_t_c: true,
            unit: TimeUnit::MICROS,
        }) => "TIMESTAMP(MICROS, UTC)".into(),
        Some(LogicalType::Integer {
            bit_width,
            is_signed: false,
        }) => format!("UINT{bit_width}"),
        Some(LogicalType::String) => "STRING".into(),
        other => format!("{other:?}"),
    }
}

/// docs/export.md's schema table: (column, type, nullable).
fn documented_schema() -> Vec<(String, String, bool)> {
    let text = std::fs::read_to_string(repo().join("docs/export.md")).expect("docs/export.md");
    let table = text
        .split("| column | Parquet type |")
        .nth(1)
        .expect("the Parquet schema table in docs/export.md");
    table
        .lines()
        .skip(2)
        .take_while(|l| l.starts_with('|'))
        .map(|l| {
            let cells: Vec<&str> = l.split('|').map(str::trim).collect();
            (
                cells[1].trim_matches('`').to_string(),
                cells[2].to_string(),
                cells[4] == "yes",
            )
        })
        .collect()
}

/// The file's schema is the documented one: every column, its type and
/// whether it may be null, in order (`orig_file`, `resp_file` and `app`
/// only with `-w` and `--app`).
#[test]
fn the_schema_is_the_documented_one() {
    let dir = tempdir("parquet-schema");
    let doc = documented_schema();
    assert!(doc.len() > 30, "{doc:?}");
    for (name, args, files, app) in [
        ("flows", vec!["flows", "-r", SAMPLE], false, false),
        ("app", vec!["flows", "-r", SAMPLE, "--app"], false, true),
        (
            "streams",
            vec!["streams", "-r", SAMPLE, "-w", "WDIR"],
            true,
            false,
        ),
    ] {
        let wdir = dir.join(format!("w-{name}"));
        let args: Vec<&str> = args
            .into_iter()
            .map(|a| if a == "WDIR" { s(&wdir) } else { a })
            .chain(["--format", "parquet"])
            .collect();
        let pq = dir.join(format!("{name}.parquet"));
        run_ok(&args, &pq);
        let reader =
            SerializedFileReader::new(std::fs::File::open(&pq).expect("open")).expect("reader");
        let schema = reader.metadata().file_metadata().schema();
        let got: Vec<(String, String, bool)> = schema
            .get_fields()
            .iter()
            .map(|t| {
                (
                    t.name().to_string(),
                    type_name(t),
                    t.get_basic_info().repetition() == Repetition::OPTIONAL,
                )
            })
            .collect();
        let want: Vec<(String, String, bool)> = doc
            .iter()
            .filter(|(c, _, _)| (files || !c.ends_with("_file")) && (app || c != "app"))
            .cloned()
            .collect();
        assert_eq!(got, want, "{name}: the schema differs from docs/export.md");
        let meta = reader.metadata();
        let codec = meta.row_group(0).column(0).compression();
        assert!(matches!(codec, Compression::ZSTD(_)), "{codec:?}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn standard_output_and_bad_paths_are_refused() {
    for out in [None, Some("-")] {
        let mut args = vec!["flows", "-r", SAMPLE, "--format", "parquet"];
        if let Some(o) = out {
            args.extend(["-o", o]);
        }
        let o = run(&args);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{err}");
        assert!(err.contains("--format parquet needs -o FILE"), "{err}");
        assert!(o.stdout.is_empty());
    }
    let o = run(&[
        "flows",
        "-r",
        SAMPLE,
        "--format",
        "parquet",
        "-o",
        "/nonexistent/dir/flows.parquet",
    ]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("/nonexistent/dir/flows.parquet: cannot create: No such file or directory"),
        "{err}"
    );
    // The input itself is never overwritten.
    let dir = tempdir("parquet-refuse");
    let input = dir.join("in.pcap");
    std::fs::copy(SAMPLE, &input).expect("copy");
    let o = run(&[
        "flows",
        "-r",
        s(&input),
        "--format",
        "parquet",
        "-o",
        s(&input),
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(
        std::fs::read(&input).expect("read"),
        std::fs::read(SAMPLE).expect("read")
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// The summary's line and `--stats-json`'s `exports` entry.
#[test]
fn the_summary_and_stats_report_the_file() {
    let dir = tempdir("parquet-summary");
    let (pq, stats) = (dir.join("f.parquet"), dir.join("stats.json"));
    let o = run(&[
        "flows",
        "-r",
        SAMPLE,
        "--active-timeout",
        "50ms",
        "--format",
        "parquet",
        "-o",
        s(&pq),
        "--stats-json",
        s(&stats),
    ]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{err}");
    let rows = parquet_records(&pq);
    let interim = rows.iter().filter(|r| r["end"] == "active").count();
    let size = std::fs::metadata(&pq).expect("size").len();
    let line = format!(
        "  parquet      {}: {} rows ({interim} interim) in 1 row group, {size} bytes, zstd",
        pq.display(),
        rows.len()
    );
    assert!(err.lines().any(|l| l == line), "{line:?} not in\n{err}");
    let v: Value = serde_json::from_slice(&std::fs::read(&stats).expect("stats")).expect("JSON");
    let e = &v["exports"][0];
    assert_eq!(e["kind"], "parquet");
    assert_eq!(e["rows"], rows.len());
    assert_eq!(e["interim_rows"], interim);
    assert_eq!(e["bytes"], size);
    let _ = std::fs::remove_dir_all(&dir);
}

/// The sample, fed into a pipe that stays open: SIGTERM stops the run,
/// which flushes every connection into a complete file.
#[test]
fn a_stop_by_signal_completes_the_file() {
    use std::io::Write;
    let dir = tempdir("parquet-signal");
    for sig in ["TERM", "INT"] {
        let pq = dir.join(format!("{sig}.parquet"));
        let mut child = Command::new(BIN)
            .args(["flows", "-q", "--format", "parquet", "-o", s(&pq)])
            .args(["-r", "-"])
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start streamcap");
        let mut stdin = child.stdin.take().expect("stdin");
        stdin
            .write_all(&std::fs::read(SAMPLE).expect("sample"))
            .expect("write the capture");
        stdin.flush().expect("flush");
        std::thread::sleep(Duration::from_millis(300));
        let killed = Command::new("kill")
            .args([&format!("-{sig}"), &child.id().to_string()])
            .status()
            .is_ok_and(|st| st.success());
        assert!(killed);
        let out = child.wait_with_output().expect("wait");
        drop(stdin);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "SIG{sig}: {err}");
        let rows = parquet_records(&pq);
        assert_eq!(rows.len(), 40, "SIG{sig}: every connection");
        assert_eq!(rows.iter().filter(|r| r["end"] == "eof").count(), 16);
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// A second signal aborts the run during its final flush (exit 130):
/// the file still has its footer, with the rows written so far.
#[test]
fn an_abort_leaves_a_readable_file() {
    let dir = tempdir("parquet-abort");
    let (pcap, _) =
        streamcap_gen::attack::generate_bytes(streamcap_gen::attack::Profile::SynFlood, 150_000, 5);
    let input = dir.join("syn.pcap");
    std::fs::write(&input, pcap).expect("write capture");
    let pq = dir.join("abort.parquet");
    let child = Command::new(BIN)
        .args(["flows", "-q", "--format", "parquet", "-o", s(&pq)])
        .args(["-r", s(&input), "--timeout", "1000", "--workers", "2"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start streamcap");
    std::thread::sleep(Duration::from_millis(200));
    for _ in 0..2 {
        let _ = Command::new("kill")
            .args(["-INT", &child.id().to_string()])
            .status();
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = child.wait_with_output().expect("wait");
    let err = String::from_utf8_lossy(&out.stderr);
    match out.status.code() {
        Some(130) => {}
        // The run was done before the signals (a fast machine).
        Some(0) => skip("the run ended before the second signal"),
        other => panic!("exit {other:?}: {err}"),
    }
    let rows = parquet_records(&pq);
    assert!(rows.len() <= 150_000, "{} rows", rows.len());
    eprintln!("aborted: {} rows in the file", rows.len());
    let _ = std::fs::remove_dir_all(&dir);
}

/// The Python interpreter of the DuckDB tests, if `import duckdb` works.
fn python_with_duckdb() -> Option<String> {
    let py = std::env::var("STREAMCAP_PYTHON").unwrap_or_else(|_| "python3".into());
    let ok = Command::new(&py)
        .args(["-c", "import duckdb"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|st| st.success());
    if ok {
        Some(py)
    } else {
        skip(format!(
            "`{py} -c 'import duckdb'` fails: pip install duckdb (scripts/install-deps.sh does)"
        ));
        None
    }
}

/// Per-file aggregates computed by DuckDB (see [`aggregates`]).
const DUCKDB_AGGREGATES: &str = r#"
import duckdb, json, sys
con = duckdb.connect()
out = {}
for f in sys.argv[1:]:
    quoted = f.replace("'", "''")
    con.execute(f"CREATE OR REPLACE VIEW r AS SELECT * FROM read_parquet('{quoted}')")
    cols = [c[0] for c in con.execute("DESCRIBE r").fetchall()]
    (rows, interim, op, ob, rp, rb, first, last, errors, vlans, tunnels, cids) = con.execute("""
        SELECT count(*), count(*) FILTER (WHERE "end" = 'active'),
               coalesce(sum(orig_pkts), 0), coalesce(sum(orig_bytes), 0),
               coalesce(sum(resp_pkts), 0), coalesce(sum(resp_bytes), 0),
               epoch_us(min(ts)), epoch_us(max(last_ts)),
               coalesce(sum(len(errors)), 0), count(vlan), count(tunnel),
               count(DISTINCT community_id)
        FROM r""").fetchone()
    by_proto = {p: [n, int(a), int(b), int(c), int(d)] for (p, n, a, b, c, d) in con.execute("""
        SELECT proto, count(*), sum(orig_pkts), sum(orig_bytes), sum(resp_pkts), sum(resp_bytes)
        FROM r GROUP BY proto""").fetchall()}
    by_end = dict(con.execute('SELECT "end", count(*) FROM r GROUP BY "end"').fetchall())
    apps = {}
    if "app" in cols:
        apps = {a or "null": n for (a, n) in
                con.execute("SELECT app, count(*) FROM r GROUP BY app").fetchall()}
    out[f] = {"rows": rows, "interim": interim, "orig_pkts": int(op), "orig_bytes": int(ob),
              "resp_pkts": int(rp), "resp_bytes": int(rb), "first_us": first, "last_us": last,
              "errors": int(errors), "vlans": vlans, "tunnels": tunnels, "community_ids": cids,
              "by_proto": by_proto, "by_end": by_end, "apps": apps}
print(json.dumps(out))
"#;

/// Microseconds of a JSON timestamp text.
fn us(text: &str) -> i64 {
    let (sec, frac) = text.split_once('.').expect("six decimals");
    sec.parse::<i64>().expect("seconds") * 1_000_000 + frac.parse::<i64>().expect("micros")
}

/// The aggregates [`DUCKDB_AGGREGATES`] computes, from the JSON records.
fn aggregates(json: &[Value], app: bool) -> Value {
    let n = |r: &Value, d: &str, f: &str| r[d][f].as_u64().expect("counter");
    let sum = |d: &str, f: &str| json.iter().map(|r| n(r, d, f)).sum::<u64>();
    let mut by_proto: BTreeMap<String, [u64; 5]> = BTreeMap::new();
    let mut by_end: BTreeMap<String, u64> = BTreeMap::new();
    let mut apps: BTreeMap<String, u64> = BTreeMap::new();
    let mut cids = std::collections::BTreeSet::new();
    for r in json {
        let p = match &r["proto"] {
            Value::String(p) => p.clone(),
            other => other.to_string(),
        };
        let e = by_proto.entry(p).or_default();
        e[0] += 1;
        e[1] += n(r, "orig", "pkts");
        e[2] += n(r, "orig", "bytes");
        e[3] += n(r, "resp", "pkts");
        e[4] += n(r, "resp", "bytes");
        *by_end
            .entry(r["end"].as_str().expect("end").to_string())
            .or_default() += 1;
        if app {
            let a = r["app"].as_str().unwrap_or("null").to_string();
            *apps.entry(a).or_default() += 1;
        }
        if let Some(c) = r["community_id"].as_str() {
            cids.insert(c.to_string());
        }
    }
    let ts = |k: &'static str| {
        json.iter()
            .map(move |r| us(r[k].as_str().expect("ts text")))
    };
    json!({
        "rows": json.len(),
        "interim": json.iter().filter(|r| r["end"] == "active").count(),
        "orig_pkts": sum("orig", "pkts"),
        "orig_bytes": sum("orig", "bytes"),
        "resp_pkts": sum("resp", "pkts"),
        "resp_bytes": sum("resp", "bytes"),
        "first_us": ts("ts").min(),
        "last_us": ts("last_ts").max(),
        "errors": json.iter().map(|r| r["errors"].as_array().map_or(0, Vec::len)).sum::<usize>(),
        "vlans": json.iter().filter(|r| !r["vlan"].is_null()).count(),
        "tunnels": json.iter().filter(|r| r.get("tunnel").is_some()).count(),
        "community_ids": cids.len(),
        "by_proto": by_proto,
        "by_end": by_end,
        "apps": apps,
    })
}

/// DuckDB reads every file (the sample's variants, and the corpus when it
/// is there) and its aggregates equal the JSON records': count, sums of
/// packets and bytes per direction, overall and per protocol, first and
/// last packet, end reasons, interim rows, error flags, VLANs, tunnels,
/// Community IDs, application labels.
#[test]
fn duckdb_aggregates_equal_the_json_records() {
    let Some(py) = python_with_duckdb() else {
        return;
    };
    let dir = tempdir("parquet-duckdb");
    let mut expected = Map::new();
    let mut inputs: Vec<(String, Vec<&str>)> = vec![
        ("sample".into(), vec!["flows", "-r", SAMPLE, "--app"]),
        (
            "sample-active".into(),
            vec![
                "flows",
                "-r",
                SAMPLE,
                "--active-timeout",
                "50ms",
                "--workers",
                "2",
            ],
        ),
    ];
    let corpus_files = corpus().map(|c| captures(&c)).unwrap_or_default();
    let names: Vec<String> = corpus_files.iter().map(|f| s(f).to_string()).collect();
    for (i, f) in names.iter().enumerate() {
        inputs.push((format!("corpus-{i}"), vec!["flows", "-r", f, "--app"]));
    }
    for (name, args) in &inputs {
        let (json, _) = both(args, &dir, name);
        let pq = dir.join(format!("{name}.parquet"));
        let app = args.contains(&"--app");
        expected.insert(s(&pq).to_string(), aggregates(&json, app));
    }
    let out = Command::new(&py)
        .arg("-c")
        .arg(DUCKDB_AGGREGATES)
        .args(expected.keys())
        .output()
        .expect("run python");
    assert!(
        out.status.success(),
        "python: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let got: Value = serde_json::from_slice(&out.stdout).expect("DuckDB's JSON");
    for (f, want) in &expected {
        assert_eq!(canon(&got[f]), canon(want), "{f}: DuckDB's aggregates");
    }
    eprintln!(
        "DuckDB's aggregates of {} files equal the JSON records'",
        expected.len()
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// The code block of `lang` that follows `after` in docs/export.md, and
/// the `text` block right after it (what it prints).
fn doc_example(after: &str, lang: &str) -> (String, String) {
    let text = std::fs::read_to_string(repo().join("docs/export.md")).expect("docs/export.md");
    let from = text
        .find(after)
        .unwrap_or_else(|| panic!("{after:?} in docs"));
    let block = |s: &str, lang: &str| -> (String, usize) {
        let open = format!("```{lang}\n");
        let at = s.find(&open).unwrap_or_else(|| panic!("a {lang} block")) + open.len();
        let end = s[at..].find("```").expect("the end of the block") + at;
        (s[at..end].to_string(), end + 3)
    };
    let (code, end) = block(&text[from..], lang);
    let (printed, _) = block(&text[from + end..], "text");
    (code, printed)
}

/// Runs the Python example of docs/export.md that follows `after` in
/// `dir` and checks that it prints what the page shows (trailing blanks
/// aside).
fn check_python_example(py: &str, dir: &Path, after: &str) {
    let (code, printed) = doc_example(after, "python");
    let out = Command::new(py)
        .args(["-c", &code])
        .current_dir(dir)
        .output()
        .expect("python");
    assert!(
        out.status.success(),
        "{after}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let trim = |t: &str| t.lines().map(str::trim_end).collect::<Vec<_>>().join("\n");
    assert_eq!(
        trim(&String::from_utf8_lossy(&out.stdout)),
        trim(&printed),
        "{after}: the example prints something else than the page"
    );
}

/// The docs' DuckDB and pandas examples print what the page shows, on
/// the file the page's command makes (pandas where pandas and pyarrow are
/// installed).
#[test]
fn the_docs_examples_print_what_the_page_shows() {
    let Some(py) = python_with_duckdb() else {
        return;
    };
    let dir = tempdir("parquet-docs");
    std::os::unix::fs::symlink(repo().join("samples"), dir.join("samples")).expect("link");
    let (command, _) = doc_example("### Reading it", "console");
    let command = command
        .lines()
        .find_map(|l| l.strip_prefix("$ "))
        .expect("a command");
    let bin_dir = Path::new(BIN).parent().expect("bin dir");
    let path = format!(
        "{}:{}",
        bin_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let made = Command::new("sh")
        .args(["-c", command])
        .current_dir(&dir)
        .env("PATH", &path)
        .output()
        .expect("sh");
    assert!(made.status.success(), "{command}");
    check_python_example(&py, &dir, "DuckDB (`pip install duckdb`)");
    let pandas = Command::new(&py)
        .args(["-c", "import pandas, pyarrow"])
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|st| st.success());
    if pandas {
        check_python_example(&py, &dir, "pandas reads it");
    } else {
        skip(format!(
            "`{py} -c 'import pandas, pyarrow'` fails: the pandas example is not run \
             (scripts/install-deps.sh installs both)"
        ));
    }
    let _ = std::fs::remove_dir_all(&dir);
}
