//! Reading a `--format parquet` file back with the parquet crate, each row
//! shaped as the JSON record of the same connection, so that the two can
//! be compared as they are. Included by path by the tests that need it.
#![allow(dead_code)]

use parquet::file::reader::{FileReader, SerializedFileReader};
use parquet::record::Field;
use serde_json::{Map, Value};
use std::path::Path;

/// Microseconds since the epoch as the JSON record writes them: seconds
/// with six decimals.
pub fn ts_text(us: i64) -> String {
    format!(
        "{}.{:06}",
        us.div_euclid(1_000_000),
        us.rem_euclid(1_000_000)
    )
}

/// The text of a number field of a JSON line (`"ts":1.000005`): times are
/// compared as text (an f64 would round them).
pub fn raw<'a>(line: &'a str, key: &str) -> &'a str {
    let pat = format!("\"{key}\":");
    let at = line.find(&pat).unwrap_or_else(|| panic!("{key} in {line}")) + pat.len();
    let rest = &line[at..];
    &rest[..rest.find([',', '}']).unwrap_or(rest.len())]
}

/// The JSON records of `text` (JSON lines), with `ts` and `last_ts` as
/// their text.
pub fn json_records(text: &[u8]) -> Vec<Value> {
    String::from_utf8_lossy(text)
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let mut v: Value =
                serde_json::from_str(l).unwrap_or_else(|e| panic!("bad JSON line {l:?}: {e}"));
            for k in ["ts", "last_ts"] {
                v[k] = Value::String(raw(l, k).to_string());
            }
            v
        })
        .collect()
}

/// A field as JSON: numbers, strings, null, lists; timestamps as
/// [`ts_text`].
fn field_json(f: &Field) -> Value {
    match f {
        Field::Null => Value::Null,
        Field::Str(s) => Value::String(s.clone()),
        Field::UByte(n) => (*n).into(),
        Field::UShort(n) => (*n).into(),
        Field::UInt(n) => (*n).into(),
        Field::ULong(n) => (*n).into(),
        Field::TimestampMicros(us) => Value::String(ts_text(*us)),
        Field::ListInternal(l) => Value::Array(l.elements().iter().map(field_json).collect()),
        other => panic!("a field of an unexpected type: {other:?}"),
    }
}

/// Each row of the Parquet file at `path`, in file order, shaped as the
/// JSON record: the `orig_*` and `resp_*` columns as the `orig` and `resp`
/// objects, `tunnel` and `app` left out when null (JSON leaves them out),
/// `proto` a number when it is not a name. `ip_proto` is checked against
/// `proto` and dropped.
pub fn parquet_records(path: &Path) -> Vec<Value> {
    let file = std::fs::File::open(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let reader = SerializedFileReader::new(file)
        .unwrap_or_else(|e| panic!("{}: not a Parquet file: {e}", path.display()));
    let rows = reader
        .get_row_iter(None)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    rows.map(|row| {
        let row = row.unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let cols: Map<String, Value> = row
            .get_column_iter()
            .map(|(k, f)| (k.clone(), field_json(f)))
            .collect();
        shape(cols)
    })
    .collect()
}

/// Column `k` of a row, taken out of it.
fn take(cols: &mut Map<String, Value>, k: &str) -> Value {
    cols.remove(k)
        .unwrap_or_else(|| panic!("no column {k} in the row"))
}

/// A row's columns as the JSON record.
fn shape(mut cols: Map<String, Value>) -> Value {
    let cols = &mut cols;
    let mut m = Map::new();
    for k in ["ts", "last_ts"] {
        m.insert(k.into(), take(cols, k));
    }
    let proto = take(cols, "proto");
    let number = take(cols, "ip_proto");
    let name = proto.as_str().unwrap_or_default().to_string();
    let proto = match name.parse::<u8>() {
        Ok(n) => Value::from(n),
        Err(_) => proto,
    };
    let expected: u64 = match name.as_str() {
        "tcp" => 6,
        "udp" => 17,
        "icmp" => 1,
        "icmp6" => 58,
        n => n.parse().unwrap_or(u64::MAX),
    };
    assert_eq!(number.as_u64(), Some(expected), "ip_proto of {name}");
    m.insert("proto".into(), proto);
    for k in ["src_ip", "src_port", "dst_ip", "dst_port", "vlan"] {
        m.insert(k.into(), take(cols, k));
    }
    let files = cols.contains_key("orig_file");
    for d in ["orig", "resp"] {
        let mut dir = Map::new();
        let mut names = vec![
            "pkts",
            "bytes",
            "stream_bytes",
            "captured",
            "discarded",
            "dropped",
            "missing",
            "sha256",
        ];
        if files {
            names.push("file");
        }
        names.push("priority");
        for f in names {
            dir.insert(f.into(), take(cols, &format!("{d}_{f}")));
        }
        m.insert(d.into(), Value::Object(dir));
    }
    for k in ["end", "errors"] {
        m.insert(k.into(), take(cols, k));
    }
    for k in ["tunnel", "app"] {
        match cols.remove(k) {
            None | Some(Value::Null) => {}
            Some(v) => {
                m.insert(k.into(), v);
            }
        }
    }
    m.insert("community_id".into(), take(cols, "community_id"));
    assert!(cols.is_empty(), "columns of no JSON field: {cols:?}");
    Value::Object(m)
}

/// Compares JSON records and Parquet rows one by one (`ordered`) or as
/// multisets (several workers write in an order of their own); panics
/// with the first difference, named `what`.
pub fn assert_same(json: &[Value], rows: &[Value], ordered: bool, what: &str) {
    assert_eq!(
        rows.len(),
        json.len(),
        "{what}: {} Parquet rows, {} JSON records",
        rows.len(),
        json.len()
    );
    let sort = |v: &[Value]| {
        let mut s: Vec<String> = v.iter().map(canon).collect();
        if !ordered {
            s.sort();
        }
        s
    };
    let (a, b) = (sort(json), sort(rows));
    for (i, (j, p)) in a.iter().zip(&b).enumerate() {
        assert_eq!(p, j, "{what}: row {i} differs from its JSON record");
    }
}

/// `v` as text with every object's keys sorted (whatever order
/// serde_json's maps keep).
pub fn canon(v: &Value) -> String {
    match v {
        Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            let parts: Vec<String> = keys
                .into_iter()
                .map(|k| format!("{}:{}", Value::String(k.clone()), canon(&m[k])))
                .collect();
            format!("{{{}}}", parts.join(","))
        }
        Value::Array(a) => format!("[{}]", a.iter().map(canon).collect::<Vec<_>>().join(",")),
        other => other.to_string(),
    }
}
