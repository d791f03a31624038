//! What the benchmark knows about the host: CPU model, kernel, CPUs, the
//! load average and the machine-wide CPU time from `/proc`, the date, and
//! the CPU that one-core rows are pinned to.

use std::fs;
use std::process::Command;
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

/// The machine a report was measured on.
#[derive(Serialize, Deserialize, Clone, Debug)]
pub struct Machine {
    /// CPUs this process may run on.
    pub cpus: usize,
    /// `model name` of /proc/cpuinfo.
    pub cpu_model: String,
    /// /proc/sys/kernel/osrelease.
    pub kernel: String,
    /// MemTotal of /proc/meminfo, MiB.
    pub mem_mib: Option<u64>,
    /// How the figures are taken.
    pub timer: String,
}

/// Reads the machine's description.
pub fn machine() -> Machine {
    let cpu_model = fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|c| {
            c.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split_once(':'))
                .map(|(_, v)| v.trim().to_string())
        })
        .unwrap_or_default();
    let mem_mib = fs::read_to_string("/proc/meminfo").ok().and_then(|m| {
        m.lines()
            .find_map(|l| l.strip_prefix("MemTotal:"))
            .and_then(|v| v.split_whitespace().next())
            .and_then(|kib| kib.parse::<u64>().ok())
            .map(|kib| kib / 1024)
    });
    Machine {
        cpus: std::thread::available_parallelism().map_or(1, |n| n.get()),
        cpu_model,
        kernel: fs::read_to_string("/proc/sys/kernel/osrelease")
            .unwrap_or_default()
            .trim()
            .to_string(),
        mem_mib,
        timer: "wall: Instant around /usr/bin/time; user, sys (0.01 s resolution), peak RSS: \
                /usr/bin/time -f '%e %U %S %M'"
            .into(),
    }
}

/// The 1, 5 and 15 minute load averages of /proc/loadavg.
pub fn loadavg() -> Option<[f64; 3]> {
    parse_loadavg(&fs::read_to_string("/proc/loadavg").ok()?)
}

/// The first three fields of a /proc/loadavg line.
pub fn parse_loadavg(text: &str) -> Option<[f64; 3]> {
    let mut it = text.split_whitespace().map(|v| v.parse::<f64>().ok());
    Some([it.next()??, it.next()??, it.next()??])
}

/// Machine-wide CPU time from the `cpu` line of /proc/stat, in clock ticks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CpuTicks {
    /// user + nice + system + irq + softirq + steal (guest time is part of user).
    pub busy: u64,
    /// busy + idle + iowait.
    pub total: u64,
    /// softirq alone (part of busy).
    pub softirq: u64,
    /// The `cpuN` lines: CPUs online.
    pub cpus: u32,
}

/// Reads /proc/stat.
pub fn cpu_ticks() -> Option<CpuTicks> {
    parse_proc_stat(&fs::read_to_string("/proc/stat").ok()?)
}

/// The aggregate `cpu ` line of a /proc/stat text.
pub fn parse_proc_stat(text: &str) -> Option<CpuTicks> {
    let line = text.lines().find(|l| l.starts_with("cpu "))?;
    let v: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .map_while(|x| x.parse().ok())
        .collect();
    let f = |i: usize| v.get(i).copied().unwrap_or(0);
    if v.len() < 4 {
        return None;
    }
    let busy = f(0) + f(1) + f(2) + f(5) + f(6) + f(7);
    Some(CpuTicks {
        busy,
        total: busy + f(3) + f(4),
        softirq: f(6),
        cpus: text
            .lines()
            .filter(|l| {
                l.strip_prefix("cpu")
                    .is_some_and(|r| r.starts_with(|c: char| c.is_ascii_digit()))
            })
            .count() as u32,
    })
}

/// Clock ticks per second of /proc/stat (`getconf CLK_TCK`, else 100).
pub fn clk_tck() -> f64 {
    Command::new("getconf")
        .arg("CLK_TCK")
        .output()
        .ok()
        .and_then(|o| {
            String::from_utf8_lossy(&o.stdout)
                .trim()
                .parse::<f64>()
                .ok()
        })
        .filter(|&t| t > 0.0)
        .unwrap_or(100.0)
}

/// The lowest CPU this process may run on (`Cpus_allowed_list` of
/// /proc/self/status), else 0.
pub fn first_allowed_cpu() -> usize {
    fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
                .and_then(|v| parse_first_cpu(v.trim()))
        })
        .unwrap_or(0)
}

/// The first CPU of a list such as `0-1`, `2,4-7`.
pub fn parse_first_cpu(list: &str) -> Option<usize> {
    list.split([',', '-']).next()?.trim().parse().ok()
}

/// The current time as `YYYY-MM-DDTHH:MM:SSZ`.
pub fn utc_now() -> String {
    let secs = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    utc_string(secs)
}

/// Seconds since the epoch as `YYYY-MM-DDTHH:MM:SSZ` (proleptic Gregorian).
pub fn utc_string(secs: u64) -> String {
    let u = streamcap::Timestamp::from_secs_nanos(secs, 0).utc();
    format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}Z",
        u.year, u.month, u.day, u.hour, u.minute, u.second
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loadavg_line() {
        assert_eq!(
            parse_loadavg("6.25 4.68 3.38 7/142 3440\n"),
            Some([6.25, 4.68, 3.38])
        );
        assert_eq!(parse_loadavg("1.0 x 2.0"), None);
        assert_eq!(parse_loadavg(""), None);
    }

    #[test]
    fn proc_stat_line() {
        let t = "cpu  288115 0 37741 104281 1123 0 235 180 0 0\ncpu0 1 2 3 4\n";
        let c = parse_proc_stat(t).unwrap();
        assert_eq!(c.busy, 288_115 + 37_741 + 235 + 180);
        assert_eq!(c.total, c.busy + 104_281 + 1123);
        assert_eq!((c.softirq, c.cpus), (235, 1));
        // Old kernels have only four fields.
        assert_eq!(
            parse_proc_stat("cpu 1 2 3 4\n"),
            Some(CpuTicks {
                busy: 6,
                total: 10,
                softirq: 0,
                cpus: 0
            })
        );
        assert_eq!(parse_proc_stat("cpu 1 2\n"), None);
        assert_eq!(parse_proc_stat("intr 5\n"), None);
    }

    #[test]
    fn first_cpu_of_list() {
        assert_eq!(parse_first_cpu("0-1"), Some(0));
        assert_eq!(parse_first_cpu("3,5-7"), Some(3));
        assert_eq!(parse_first_cpu("2"), Some(2));
        assert_eq!(parse_first_cpu(""), None);
    }

    #[test]
    fn utc_dates() {
        assert_eq!(utc_string(0), "1970-01-01T00:00:00Z");
        assert_eq!(utc_string(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(utc_string(1_700_000_000), "2023-11-14T22:13:20Z");
        assert_eq!(utc_string(4_102_444_799), "2099-12-31T23:59:59Z");
    }
}
