//! What `streamcap-bench run` measured, as written to `latest.json`: every
//! run of every tool on every workload, the per-row summaries (medians and
//! spreads) and the paired ratios to the two C baselines.

use serde::{Deserialize, Serialize};

use crate::host::Machine;
use crate::stats::{paired_ratio, Spread};

/// CPU times below this (seconds, user + sys of one run) are left out of
/// CPU-time ratios: /usr/bin/time reports them in hundredths of a second.
pub const CPU_RATIO_FLOOR_S: f64 = 0.10;

/// One run of one tool.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct RunSample {
    /// The round of the round-robin this run belongs to (0-based).
    pub round: usize,
    /// Wall time measured by the runner around the process, seconds.
    pub wall_s: f64,
    /// User CPU seconds (/usr/bin/time `%U`).
    pub user_s: Option<f64>,
    /// System CPU seconds (/usr/bin/time `%S`).
    pub sys_s: Option<f64>,
    /// Peak resident set size, KiB (/usr/bin/time `%M`).
    pub max_rss_kib: Option<u64>,
}

impl RunSample {
    /// User + system CPU seconds.
    pub fn cpu_s(&self) -> Option<f64> {
        Some(self.user_s? + self.sys_s?)
    }
}

/// A ratio `peer / tool` over paired runs (same round): > 1 means the tool
/// took less time than the peer.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct Ratio {
    /// The peer row compared with (tool and mode).
    pub peer: String,
    /// Wall-time ratios, one per round both ran in.
    pub wall: Spread,
    /// CPU-time (user + sys) ratios; pairs where either side used under
    /// [`CPU_RATIO_FLOOR_S`] are left out.
    pub cpu: Option<Spread>,
}

/// One row: a tool in one mode on one workload.
#[derive(Serialize, Deserialize, Clone, Debug)]
pub struct ToolResult {
    /// Tool name (`streamcap`, `nids_streams`, ...).
    pub tool: String,
    /// Mode label, with `, 1 CPU` for the rows pinned to one CPU.
    pub mode: String,
    /// The CPU the row is pinned to (`taskset -c`), if it is.
    pub pinned_cpu: Option<usize>,
    /// The command line (`{FILE}`: the workload).
    pub command: String,
    /// Every run, in round order.
    pub runs: Vec<RunSample>,
    /// Wall time over the runs, seconds.
    pub wall_s: Spread,
    /// User CPU seconds over the runs.
    pub user_s: Option<Spread>,
    /// System CPU seconds over the runs.
    pub sys_s: Option<Spread>,
    /// User + system CPU seconds over the runs (per run, then the spread).
    pub cpu_s: Option<Spread>,
    /// Largest peak RSS of the runs, KiB.
    pub max_rss_kib: Option<u64>,
    /// Wire bytes × 8 / median wall time, Gbit/s.
    pub gbps: f64,
    /// Packets / median wall time, millions per second.
    pub mpps: f64,
    /// What the tool found (of its last run), in `found_unit`.
    pub found: Option<u64>,
    /// What `found` counts.
    pub found_unit: String,
    /// Against nids_streams (pinned alike).
    pub vs_nids_streams: Option<Ratio>,
    /// Against pcap_flows (pinned alike).
    pub vs_pcap_flows: Option<Ratio>,
}

impl ToolResult {
    /// The row's summary of `runs` (at least one) on a workload of
    /// `packets` packets and `wire_bytes` bytes; ratios are filled in by
    /// [`Workload::fill_ratios`].
    #[allow(clippy::too_many_arguments)]
    pub fn summarise(
        tool: &str,
        mode: &str,
        pinned_cpu: Option<usize>,
        command: String,
        runs: Vec<RunSample>,
        found: Option<u64>,
        found_unit: &str,
        (packets, wire_bytes): (u64, u64),
    ) -> Option<ToolResult> {
        let wall_s = Spread::of(runs.iter().map(|r| r.wall_s))?;
        let all = |f: &dyn Fn(&RunSample) -> Option<f64>| {
            runs.iter()
                .map(f)
                .collect::<Option<Vec<f64>>>()
                .and_then(Spread::of)
        };
        let (user_s, sys_s, cpu_s) = (
            all(&|r| r.user_s),
            all(&|r| r.sys_s),
            all(&RunSample::cpu_s),
        );
        let max_rss_kib = runs.iter().filter_map(|r| r.max_rss_kib).max();
        let per_s = |x: f64| {
            if wall_s.median > 0.0 {
                x / wall_s.median
            } else {
                0.0
            }
        };
        Some(ToolResult {
            tool: tool.into(),
            mode: mode.into(),
            pinned_cpu,
            command,
            runs,
            wall_s,
            user_s,
            sys_s,
            cpu_s,
            max_rss_kib,
            gbps: per_s(wire_bytes as f64 * 8.0) / 1e9,
            mpps: per_s(packets as f64) / 1e6,
            found,
            found_unit: found_unit.into(),
            vs_nids_streams: None,
            vs_pcap_flows: None,
        })
    }

    /// Paired ratios `peer / self`, wall and CPU.
    pub fn ratio_to(&self, peer: &ToolResult) -> Option<Ratio> {
        let series = |r: &ToolResult, f: &dyn Fn(&RunSample) -> Option<f64>| {
            r.runs
                .iter()
                .filter_map(|s| Some((s.round, f(s)?)))
                .collect::<Vec<_>>()
        };
        let wall = paired_ratio(
            &series(peer, &|s| Some(s.wall_s)),
            &series(self, &|s| Some(s.wall_s)),
            0.0,
        )?;
        let cpu = paired_ratio(
            &series(peer, &RunSample::cpu_s),
            &series(self, &RunSample::cpu_s),
            CPU_RATIO_FLOOR_S,
        );
        Some(Ratio {
            peer: format!("{} {}", peer.tool, peer.mode),
            wall,
            cpu,
        })
    }
}

/// A tool or row that did not run, and why.
#[derive(Serialize, Deserialize, Clone, Debug)]
pub struct Skipped {
    /// The tool (and for a failure on one workload, its mode and workload).
    pub tool: String,
    /// Why.
    pub reason: String,
}

/// The host's state around one workload's runs.
#[derive(Serialize, Deserialize, Clone, Debug, Default)]
pub struct HostLoad {
    /// /proc/loadavg (1, 5, 15 min) before the first run.
    pub loadavg_start: Option<[f64; 3]>,
    /// /proc/loadavg after the last run.
    pub loadavg_end: Option<[f64; 3]>,
    /// Wall time from the first run's start to the last run's end, seconds.
    pub elapsed_s: f64,
    /// CPU seconds the whole machine was busy meanwhile (/proc/stat).
    pub busy_cpu_s: Option<f64>,
    /// CPU seconds of the measured runs (user + sys) meanwhile.
    pub measured_cpu_s: f64,
    /// (busy − measured) / elapsed: CPUs kept busy on average by other
    /// processes (the runner itself included).
    pub other_cpus: Option<f64>,
}

/// One workload's rows.
#[derive(Serialize, Clone, Debug)]
pub struct Workload {
    /// Short name (`campus`, `corpus-merged`, ...).
    pub name: String,
    /// The capture file.
    pub file: String,
    /// How the file was made (`FILE.about`, when there is one; its first
    /// line is printed under the table's title).
    pub about: Option<String>,
    /// File size, bytes.
    pub file_bytes: u64,
    /// Packets in the file.
    pub packets: u64,
    /// Sum of the packets' original lengths.
    pub wire_bytes: u64,
    /// UTC time the workload's runs started.
    pub started: String,
    /// The host's load around the runs.
    pub host: HostLoad,
    /// One row per tool and mode.
    pub results: Vec<ToolResult>,
}

impl Workload {
    /// The row of `tool` pinned or not like `pinned`.
    pub fn row(&self, tool: &str, pinned: bool) -> Option<&ToolResult> {
        self.results
            .iter()
            .find(|r| r.tool == tool && r.pinned_cpu.is_some() == pinned)
    }

    /// The row of streamcap in `mode`.
    pub fn streamcap(&self, mode: &str) -> Option<&ToolResult> {
        self.results
            .iter()
            .find(|r| r.tool == "streamcap" && r.mode == mode)
    }

    /// Fills `vs_nids_streams` and `vs_pcap_flows` of every row: pinned
    /// rows against the pinned peer, the others against the unpinned one.
    pub fn fill_ratios(&mut self) {
        let ratios: Vec<(Option<Ratio>, Option<Ratio>)> = self
            .results
            .iter()
            .map(|r| {
                let pinned = r.pinned_cpu.is_some();
                let vs = |peer: &str| self.row(peer, pinned).and_then(|p| r.ratio_to(p));
                (vs("nids_streams"), vs("pcap_flows"))
            })
            .collect();
        for (r, (n, p)) in self.results.iter_mut().zip(ratios) {
            r.vs_nids_streams = n;
            r.vs_pcap_flows = p;
        }
    }
}

/// What every report of a round-robin benchmark (`run`, `nids`, `apps`)
/// starts with: where, when and what was measured. Flattened into each
/// report's JSON, so its fields stand at the top level.
#[derive(Serialize, Deserialize, Clone, Debug)]
pub struct RunHeader {
    /// The host.
    pub machine: Machine,
    /// The streamcap commit measured (`--commit`; `-dirty` when the tree
    /// had changes).
    pub commit: Option<String>,
    /// UTC start of the run.
    pub started: String,
    /// UTC end of the run.
    pub finished: String,
    /// Runs asked per row (`--runs`; a slow tool may run fewer).
    pub runs: usize,
    /// The CPU the one-CPU rows are pinned to (`None`: no such rows).
    pub one_cpu: Option<usize>,
    /// The streamcap binary of the `streamcap` rows.
    pub streamcap: String,
    /// /proc/loadavg at the start of the run.
    pub loadavg_start: Option<[f64; 3]>,
    /// /proc/loadavg at the end of the run.
    pub loadavg_end: Option<[f64; 3]>,
}

impl RunHeader {
    /// The header of a run that began at `started` with load average
    /// `loadavg_start` and ends now.
    pub fn ending_now(
        commit: Option<String>,
        started: String,
        runs: usize,
        one_cpu: Option<usize>,
        streamcap: &std::path::Path,
        loadavg_start: Option<[f64; 3]>,
    ) -> RunHeader {
        RunHeader {
            machine: crate::host::machine(),
            commit,
            started,
            finished: crate::host::utc_now(),
            runs,
            one_cpu,
            streamcap: streamcap.display().to_string(),
            loadavg_start,
            loadavg_end: crate::host::loadavg(),
        }
    }

    /// The Markdown report's first lines: `# title`, the commit, times,
    /// host and runs (then `extra`, pieces each starting with ` · `), and
    /// the host's load average (then `load_note`).
    pub fn markdown(&self, title: &str, extra: &str, load_note: &str) -> String {
        use std::fmt::Write;
        let m = &self.machine;
        let mut s = String::new();
        let _ = writeln!(s, "# {title}");
        let _ = writeln!(s);
        let _ = writeln!(
            s,
            "commit {} · {} to {} · {}, {} CPUs{}, Linux {} · {} run(s) per row, round-robin{}{extra}",
            self.commit.as_deref().unwrap_or("unknown"),
            self.started,
            self.finished,
            if m.cpu_model.is_empty() {
                "unknown CPU"
            } else {
                &m.cpu_model
            },
            m.cpus,
            m.mem_mib.map_or(String::new(), |mib| format!(
                ", {:.0} GiB",
                mib as f64 / 1024.0
            )),
            m.kernel,
            self.runs,
            self.one_cpu.map_or(String::new(), |c| format!(
                " · `1 CPU` rows pinned with `taskset -c {c}`"
            )),
        );
        let _ = writeln!(s);
        let _ = writeln!(
            s,
            "Host load average (1/5/15 min, /proc/loadavg): {} at start, {} at end{load_note}.",
            fmt_load(self.loadavg_start),
            fmt_load(self.loadavg_end)
        );
        s
    }
}

/// `1.23/0.45/0.67`, or `?`.
pub fn fmt_load(l: Option<[f64; 3]>) -> String {
    l.map_or("?".into(), |[a, b, c]| format!("{a:.2}/{b:.2}/{c:.2}"))
}

/// Everything one `streamcap-bench run` measured (`--json`).
#[derive(Serialize)]
pub struct Report {
    /// Where, when and what.
    #[serde(flatten)]
    pub header: RunHeader,
    /// The second build of the `plain build` rows.
    pub streamcap_plain: Option<String>,
    /// One entry per workload.
    pub workloads: Vec<Workload>,
    /// Tools that did not run.
    pub skipped: Vec<Skipped>,
    /// Peak memory per tracked idle TCP connection (`--idle-conns`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub idle_connections: Option<crate::idle::IdleReport>,
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A sample with wall `w`, user `u`, sys `s`.
    pub(crate) fn sample(round: usize, w: f64, u: f64, s: f64) -> RunSample {
        RunSample {
            round,
            wall_s: w,
            user_s: Some(u),
            sys_s: Some(s),
            max_rss_kib: Some(1024 * (round as u64 + 1)),
        }
    }

    /// A row of `tool` (pinned to CPU 0 when `pinned`) with the given runs.
    pub(crate) fn row(tool: &str, pinned: bool, runs: Vec<RunSample>) -> ToolResult {
        let mode = if pinned { "m, 1 CPU" } else { "m" };
        ToolResult::summarise(
            tool,
            mode,
            pinned.then_some(0),
            format!("{tool} {{FILE}}"),
            runs,
            Some(7),
            "flows",
            (2_000_000, 1_000_000_000),
        )
        .unwrap()
    }

    pub(crate) fn workload(results: Vec<ToolResult>) -> Workload {
        let mut w = Workload {
            name: "w".into(),
            file: "/x.pcap".into(),
            about: None,
            file_bytes: 1,
            packets: 2_000_000,
            wire_bytes: 1_000_000_000,
            started: "2000-01-01T00:00:00Z".into(),
            host: HostLoad::default(),
            results,
        };
        w.fill_ratios();
        w
    }

    #[test]
    fn summary_medians_and_rates() {
        let r = row(
            "streamcap",
            false,
            vec![
                sample(0, 0.5, 0.8, 0.1),
                sample(1, 0.25, 0.4, 0.2),
                sample(2, 1.0, 0.6, 0.3),
            ],
        );
        assert_eq!(
            (r.wall_s.median, r.wall_s.min, r.wall_s.max),
            (0.5, 0.25, 1.0)
        );
        assert_eq!(r.wall_s.n, 3);
        assert_eq!(r.user_s.map(|s| s.median), Some(0.6));
        assert_eq!(r.sys_s.map(|s| s.median), Some(0.2));
        // Per-run sums 0.9, 0.6, 0.9.
        assert!(r
            .cpu_s
            .is_some_and(|s| (s.median - 0.9).abs() < 1e-9 && s.n == 3));
        assert_eq!(r.max_rss_kib, Some(3072));
        assert_eq!(r.gbps, 16.0);
        assert_eq!(r.mpps, 4.0);
        // A run without /usr/bin/time figures leaves CPU unknown.
        let mut s = sample(3, 1.0, 0.0, 0.0);
        s.user_s = None;
        let r = row("streamcap", false, vec![sample(0, 1.0, 1.0, 0.0), s]);
        assert!(r.user_s.is_none() && r.cpu_s.is_none());
        assert!(r.sys_s.is_some());
        assert!(
            ToolResult::summarise("t", "m", None, String::new(), vec![], None, "", (1, 1))
                .is_none()
        );
    }

    #[test]
    fn ratios_pair_rounds_and_pinning() {
        // streamcap: 2 CPUs' worth of CPU per wall second; nids: 1.
        let sc = row(
            "streamcap",
            false,
            vec![sample(0, 0.2, 0.3, 0.1), sample(1, 0.4, 0.3, 0.1)],
        );
        let sc1 = row(
            "streamcap",
            true,
            vec![sample(0, 0.5, 0.35, 0.05), sample(1, 0.5, 0.35, 0.05)],
        );
        let nids = row(
            "nids_streams",
            false,
            vec![sample(0, 0.8, 0.7, 0.1), sample(1, 0.8, 0.7, 0.1)],
        );
        let nids1 = row(
            "nids_streams",
            true,
            vec![sample(0, 1.0, 0.7, 0.1), sample(1, 0.5, 0.7, 0.1)],
        );
        let w = workload(vec![sc, sc1, nids, nids1]);
        let r = w.results[0].vs_nids_streams.as_ref().unwrap();
        assert_eq!(r.peer, "nids_streams m");
        // Rounds: 0.8/0.2 = 4, 0.8/0.4 = 2.
        assert_eq!(
            (r.wall.median, r.wall.min, r.wall.max, r.wall.n),
            (3.0, 2.0, 4.0, 2)
        );
        assert!(r.cpu.is_some_and(|c| (c.median - 2.0).abs() < 1e-9));
        // The pinned row against the pinned peer: 1.0/0.5, 0.5/0.5.
        let r = w.results[1].vs_nids_streams.as_ref().unwrap();
        assert_eq!(r.peer, "nids_streams m, 1 CPU");
        assert_eq!((r.wall.min, r.wall.max), (1.0, 2.0));
        assert!(w.results[1].vs_pcap_flows.is_none());
        // The peer against itself.
        let r = w.results[2].vs_nids_streams.as_ref().unwrap();
        assert_eq!((r.wall.median, r.wall.n), (1.0, 2));
    }

    #[test]
    fn cpu_ratio_leaves_out_tiny_cpu_times() {
        let sc = row("streamcap", false, vec![sample(0, 0.01, 0.0, 0.0)]);
        let pf = row("pcap_flows", false, vec![sample(0, 0.02, 0.01, 0.0)]);
        let w = workload(vec![sc, pf]);
        let r = w.results[0].vs_pcap_flows.as_ref().unwrap();
        assert_eq!(r.wall.median, 2.0);
        assert!(r.cpu.is_none());
    }
}
