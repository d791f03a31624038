//! `streamcap-bench pcap-plot --json FILE --png PREFIX`: the charts of
//! `bench/pcap-locality.sh` from its result file
//! (`bench/results/pcap-locality.json`, written by `bench/pcap_report.py`):
//! ndpiReader's misses per packet (PREFIX-misses.png) and run time
//! (PREFIX-time.png) against the locality batch size, each trace in a chart
//! of its own, with the run without the library as a flat line.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::plot::{self, Panel, Series};

/// The program whose runs are drawn.
const TOOL: &str = "ndpiReader";

pub fn cmd_pcap_plot(args: &[String]) -> Result<(), String> {
    let mut json: Option<PathBuf> = None;
    let mut png: Option<String> = None;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut val = || {
            it.next()
                .cloned()
                .ok_or_else(|| format!("{a} needs a value"))
        };
        match a.as_str() {
            "--json" => json = Some(PathBuf::from(val()?)),
            "--png" => png = Some(val()?),
            _ => return Err(format!("pcap-plot: unknown argument {a}")),
        }
    }
    let json = json.ok_or("pcap-plot needs --json FILE")?;
    let png = png.ok_or("pcap-plot needs --png PREFIX")?;
    let text = std::fs::read_to_string(&json).map_err(|e| format!("{}: {e}", json.display()))?;
    let doc: Value = serde_json::from_str(&text).map_err(|e| format!("{}: {e}", json.display()))?;
    let misses = PathBuf::from(format!("{png}-misses.png"));
    let time = PathBuf::from(format!("{png}-time.png"));
    draw(&doc, &misses, &time)?;
    eprintln!("wrote {} and {}", misses.display(), time.display());
    Ok(())
}

/// One run's figure, from `path` (keys) in its result object.
fn figure(r: &Value, path: &[&str]) -> Option<f64> {
    path.iter().try_fold(r, |v, k| v.get(k))?.as_f64()
}

/// A cache's size from its cachegrind spec `bytes,ways,line`.
fn cache_size(spec: &str) -> String {
    let bytes: u64 = spec
        .split(',')
        .next()
        .and_then(|b| b.parse().ok())
        .unwrap_or(0);
    if bytes >= 1 << 20 {
        format!("{} MiB", bytes >> 20)
    } else {
        format!("{} KiB", bytes >> 10)
    }
}

fn draw(doc: &Value, misses: &Path, time: &Path) -> Result<(), String> {
    let results = doc
        .get("results")
        .and_then(Value::as_array)
        .ok_or("no results")?;
    let traces: Vec<String> = doc
        .get("traces")
        .and_then(Value::as_array)
        .ok_or("no traces")?
        .iter()
        .filter_map(|t| t.get("name").and_then(Value::as_str).map(str::to_string))
        .collect();
    let ll = |k: &str| {
        doc.pointer(&format!("/cachegrind/LL/{k}"))
            .and_then(Value::as_str)
            .map(cache_size)
            .unwrap_or_default()
    };
    let (llc, l2) = (ll("llc"), ll("l2"));
    let mut miss_panels = Vec::new();
    let mut time_panels = Vec::new();
    for trace in &traces {
        let runs: Vec<&Value> = results
            .iter()
            .filter(|r| {
                r.get("trace").and_then(Value::as_str) == Some(trace)
                    && r.get("tool").and_then(Value::as_str) == Some(TOOL)
            })
            .collect();
        let mut batched: Vec<(u64, &Value)> = runs
            .iter()
            .filter_map(|r| r.get("batch").and_then(Value::as_u64).map(|b| (b, *r)))
            .collect();
        batched.sort_by_key(|(b, _)| *b);
        let Some(plain) = runs
            .iter()
            .find(|r| r.get("config").and_then(Value::as_str) == Some("plain"))
        else {
            continue;
        };
        if batched.is_empty() {
            continue;
        }
        let names: Vec<String> = batched.iter().map(|(b, _)| b.to_string()).collect();
        let n = batched.len();
        // A line over the batch sizes, and the run without the library as
        // a flat one.
        let pair = |what: &str, path: &[&str]| -> Vec<Series> {
            let line = batched
                .iter()
                .enumerate()
                .filter_map(|(i, (_, r))| figure(r, path).map(|y| (i as f64, y)))
                .collect();
            let flat = figure(plain, path)
                .map(|y| vec![(0.0, y), ((n - 1) as f64, y)])
                .unwrap_or_default();
            vec![
                Series {
                    name: format!("{what}, PCAP_LOCALITY=batch"),
                    points: line,
                },
                Series {
                    name: format!("{what}, no library"),
                    points: flat,
                },
            ]
        };
        let mut ll_series = pair(
            &format!("last level {llc}"),
            &["cachegrind", "llc", "per_packet", "ll_misses"],
        );
        ll_series.extend(pair(
            &format!("last level {l2} (L2-sized)"),
            &["cachegrind", "l2", "per_packet", "ll_misses"],
        ));
        miss_panels.push(Panel {
            title: format!("{trace}: {TOOL} last-level data misses per packet (cachegrind)"),
            labels: ("packets per locality batch", "DLmr + DLmw per packet"),
            series: ll_series,
            x_names: names.clone(),
            headroom: 1.35,
            min_top: 1.0,
        });
        miss_panels.push(Panel {
            title: format!("{trace}: {TOOL} D1 misses per packet (cachegrind)"),
            labels: ("packets per locality batch", "D1mr + D1mw per packet"),
            series: pair("D1", &["cachegrind", "llc", "per_packet", "d1_misses"]),
            x_names: names.clone(),
            headroom: 1.3,
            min_top: 1.0,
        });
        let mut t = pair("wall", &["time", "wall_median"]);
        t.extend(pair("user+sys", &["time", "cpu_median"]));
        time_panels.push(Panel {
            title: format!("{trace}: {TOOL} run time, median (taskset -c 0)"),
            labels: ("packets per locality batch", "seconds"),
            series: t,
            x_names: names,
            headroom: 1.35,
            min_top: 0.1,
        });
    }
    if miss_panels.is_empty() {
        return Err(format!("no {TOOL} runs with locality batches"));
    }
    plot::panels(misses, &miss_panels)?;
    plot::panels(time, &time_panels)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_charts_are_drawn_from_a_result_file() {
        let run = |config: &str, batch: Option<u64>, ll: f64| {
            serde_json::json!({
                "trace": "t", "tool": TOOL, "config": config, "batch": batch,
                "cachegrind": {
                    "llc": {"per_packet": {"ll_misses": ll, "d1_misses": 80.0}},
                    "l2": {"per_packet": {"ll_misses": ll * 3.0, "d1_misses": 80.0}}
                },
                "time": {"wall_median": 0.5, "cpu_median": 0.45}
            })
        };
        let doc = serde_json::json!({
            "traces": [{"name": "t"}],
            "cachegrind": {"LL": {"llc": "33554432,16,64", "l2": "1048576,8,64"}},
            "results": [
                run("plain", None, 4.0),
                run("locality-100", Some(100), 4.2),
                run("locality-8000", Some(8000), 3.9)
            ]
        });
        let dir = std::env::temp_dir().join(format!("streamcap-pcap-plot-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let (m, t) = (dir.join("m.png"), dir.join("t.png"));
        draw(&doc, &m, &t).expect("drawn");
        for p in [&m, &t] {
            assert!(std::fs::metadata(p)
                .map(|x| x.len() > 1000)
                .unwrap_or(false));
        }
        assert_eq!(cache_size("33554432,16,64"), "32 MiB");
        assert_eq!(cache_size("32768,8,64"), "32 KiB");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
