//! The Markdown report `streamcap-bench run` prints at the end: a header
//! (commit, date, machine, runs, load average), then per workload the host's
//! load around its runs, one table row per tool and mode, and the lines
//! that say what the second CPU and a second worker change.

use std::fmt::Write;

use crate::report::{fmt_load, Ratio, Workload};
use crate::stats::Spread;

/// `3.46×`, with ` (3.10–3.60)` when the pairs differ at two decimals.
pub fn fmt_spread_ratio(s: &Spread) -> String {
    let (min, max) = (format!("{:.2}", s.min), format!("{:.2}", s.max));
    if min != max {
        format!("{:.2}× ({min}–{max})", s.median)
    } else {
        format!("{:.2}×", s.median)
    }
}

fn ratio_cells(r: Option<&Ratio>) -> (String, String) {
    match r {
        None => ("-".into(), "-".into()),
        Some(r) => (
            fmt_spread_ratio(&r.wall),
            r.cpu.as_ref().map_or("-".into(), fmt_spread_ratio),
        ),
    }
}

/// One workload's section: title, host load, table, notes.
pub fn workload(w: &Workload, cpus: usize) -> String {
    let mut s = String::new();
    let _ = writeln!(s);
    let _ = writeln!(
        s,
        "## {} — {} ({} packets, {:.1} MB on the wire, avg {:.0} B/packet)",
        w.name,
        w.file,
        w.packets,
        w.wire_bytes as f64 / 1e6,
        w.wire_bytes as f64 / w.packets.max(1) as f64
    );
    let _ = writeln!(s);
    if let Some(a) = w.about.as_deref().and_then(|a| a.lines().next()) {
        let _ = writeln!(s, "{a}");
        let _ = writeln!(s);
    }
    let h = &w.host;
    let _ = write!(
        s,
        "Host during these {:.0} s of runs: load average {} at start, {} at end",
        h.elapsed_s,
        fmt_load(h.loadavg_start),
        fmt_load(h.loadavg_end)
    );
    match h.other_cpus {
        Some(o) => {
            let _ = writeln!(
                s,
                "; other processes (the runner included) kept {o:.2} of {cpus} CPUs busy on average."
            );
        }
        None => {
            let _ = writeln!(s, ".");
        }
    }
    let _ = writeln!(s);
    let _ = writeln!(
        s,
        "| tool | mode | runs | wall s (median) | wall s (min–max) | user s | sys s | peak RSS MiB | Gbit/s | Mpps | found | vs nids_streams, wall | vs nids_streams, CPU | vs pcap_flows, wall | vs pcap_flows, CPU |"
    );
    let _ = writeln!(
        s,
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
    );
    let cpu = |c: Option<Spread>| c.map_or("-".into(), |c| format!("{:.2}", c.median));
    for r in &w.results {
        let (nw, nc) = ratio_cells(r.vs_nids_streams.as_ref());
        let (pw, pc) = ratio_cells(r.vs_pcap_flows.as_ref());
        let _ = writeln!(
            s,
            "| {} | {} | {} | {:.3} | {:.3}–{:.3} | {} | {} | {} | {:.2} | {:.2} | {} | {nw} | {nc} | {pw} | {pc} |",
            r.tool,
            r.mode,
            r.wall_s.n,
            r.wall_s.median,
            r.wall_s.min,
            r.wall_s.max,
            cpu(r.user_s),
            cpu(r.sys_s),
            r.max_rss_kib
                .map_or("-".into(), |m| format!("{:.1}", m as f64 / 1024.0)),
            r.gbps,
            r.mpps,
            r.found
                .map_or("-".into(), |f| format!("{f} {}", r.found_unit)),
        );
    }
    let _ = writeln!(s);
    let notes = notes(w);
    if !notes.is_empty() {
        for n in notes {
            let _ = writeln!(s, "- {n}");
        }
        let _ = writeln!(s);
    }
    s
}

/// The lines under a table: what one CPU instead of two changes for
/// streamcap's main modes, and what a second worker changes.
fn notes(w: &Workload) -> Vec<String> {
    let mut out = Vec::new();
    let wall_ratio = |r: Option<&Ratio>| r.map_or("-".into(), |r| format!("{:.2}×", r.wall.median));
    for m in ["flows", "streams", "streams --delivery segments"] {
        let (Some(two), Some(one)) = (w.streamcap(m), w.streamcap(&format!("{m}, 1 CPU"))) else {
            continue;
        };
        let cpu = |r: &crate::report::ToolResult| {
            r.cpu_s.map_or("?".into(), |c| format!("{:.2}", c.median))
        };
        out.push(format!(
            "`{m}` on 1 CPU: median wall {:.3} s against {:.3} s unpinned ({:.2}×), CPU s {} against {}; \
             vs nids_streams {} unpinned, {} on 1 CPU; vs pcap_flows {} unpinned, {} on 1 CPU (wall-time ratios).",
            one.wall_s.median,
            two.wall_s.median,
            one.wall_s.median / two.wall_s.median.max(1e-9),
            cpu(one),
            cpu(two),
            wall_ratio(two.vs_nids_streams.as_ref()),
            wall_ratio(one.vs_nids_streams.as_ref()),
            wall_ratio(two.vs_pcap_flows.as_ref()),
            wall_ratio(one.vs_pcap_flows.as_ref()),
        ));
    }
    for m in ["flows", "streams"] {
        if let (Some(one), Some(two)) = (w.streamcap(m), w.streamcap(&format!("{m} --workers 2"))) {
            out.push(format!(
                "2 workers vs 1, `{m}`: {:.2}× throughput (median wall times).",
                one.wall_s.median / two.wall_s.median.max(1e-9)
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::tests::{row, sample, workload as make};

    #[test]
    fn ratio_cell_forms() {
        let one = Spread {
            median: 3.456,
            min: 3.456,
            max: 3.456,
            n: 1,
        };
        assert_eq!(fmt_spread_ratio(&one), "3.46×");
        let many = Spread {
            median: 3.456,
            min: 3.1,
            max: 3.6,
            n: 5,
        };
        assert_eq!(fmt_spread_ratio(&many), "3.46× (3.10–3.60)");
    }

    #[test]
    fn table_rows_and_notes() {
        let runs = |w: f64, c: f64| vec![sample(0, w, c, 0.1), sample(1, w * 1.5, c, 0.1)];
        let mut sc = row("streamcap", false, runs(0.2, 0.3));
        sc.mode = "flows".into();
        let mut sc1 = row("streamcap", true, runs(0.3, 0.3));
        sc1.mode = "flows, 1 CPU".into();
        let nids = row("nids_streams", false, runs(0.6, 0.5));
        let nids1 = row("nids_streams", true, runs(0.6, 0.5));
        let t = workload(&make(vec![sc, sc1, nids, nids1]), 2);
        let lines: Vec<&str> = t.lines().collect();
        let flows = lines
            .iter()
            .find(|l| l.starts_with("| streamcap | flows |"))
            .unwrap();
        // Two runs, median 0.25, range 0.2–0.3, user 0.30, sys 0.10,
        // nids 3.00× in both rounds, CPU 0.6/0.4 = 1.5×, no pcap_flows.
        assert_eq!(
            *flows,
            "| streamcap | flows | 2 | 0.250 | 0.200–0.300 | 0.30 | 0.10 | 2.0 | 32.00 | 8.00 | 7 flows | 3.00× | 1.50× | - | - |"
        );
        assert!(t.contains(
            "`flows` on 1 CPU: median wall 0.375 s against 0.250 s unpinned (1.50×), CPU s 0.40 against 0.40; \
             vs nids_streams 3.00× unpinned, 2.00× on 1 CPU; vs pcap_flows - unpinned, - on 1 CPU"
        ));
        assert!(t.contains("other processes") || t.contains("load average ? at start"));
        // Every table line has the same number of cells as the header.
        let cells = |l: &str| l.matches('|').count();
        let head = lines.iter().find(|l| l.starts_with("| tool |")).unwrap();
        for l in lines.iter().filter(|l| l.starts_with('|')) {
            assert_eq!(cells(l), cells(head), "{l}");
        }
    }
}
