//! The whole machine's CPU use while a replay sends: /proc/stat (all
//! CPUs) and an interface's transmit counter sampled every few
//! milliseconds by a thread; the window runs from the last sample before
//! the counter moved to the first one at its final value. So the replay's
//! start-up (tcpreplay's preload of the file) and the receiver's drain
//! afterwards stay out, and the kernel's work for every packet (softirq on
//! whichever CPU, charged to no process) stays in.
//!
//! Busy time is the window's length times the CPUs, less their idle and
//! iowait time: the kernel measures idle time exactly (tickless idle),
//! while user, system and softirq are sampled at each tick, which misses
//! much of the work of a CPU that goes idle thousands of times a second,
//! as a paced sender's does (tcpreplay at 0.5 Gbit/s: its rusage 1.9 CPU
//! s, the ticks' busy sum 1.3 s). The ticks' figures are kept beside it.
//!
//! Other processes (not this one or its descendants, not kernel threads)
//! are measured too: their CPU seconds between the sampler's start and
//! end (/proc/PID/stat), so that a run disturbed by them can be told and
//! run again.
//!
//! The interface lives in a network namespace: its counters are read from
//! `/proc/PID/net/dev` of a process inside it (no process is started per
//! sample).

use crate::host::{self, CpuTicks};
use serde::Serialize;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How often the thread samples.
const PERIOD: Duration = Duration::from_millis(20);

/// One sample: when, the machine's CPU ticks, the interface's transmitted
/// packets.
#[derive(Clone, Copy, Debug)]
struct Sample {
    at: Instant,
    cpu: CpuTicks,
    tx_packets: u64,
}

/// The machine's CPU over the window in which packets were sent.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct Window {
    /// Seconds from the window's first sample to its last.
    pub seconds: f64,
    /// Packets the interface sent in it.
    pub packets: u64,
    /// Busy share of all CPUs, percent: the window's length times the
    /// CPUs, less their idle and iowait time.
    pub busy_pct: f64,
    /// CPUs kept busy on average (the same busy time over the window's
    /// length).
    pub busy_cpus: f64,
    /// Busy share from the ticks' samples, percent (user, nice, system,
    /// irq, softirq and steal over their total; low where CPUs go idle
    /// often).
    pub busy_pct_ticks: f64,
    /// Softirq share of all CPUs, percent (ticks' samples, over the
    /// window's length times the CPUs).
    pub softirq_pct: f64,
    /// CPUs other processes kept busy on average from the sampler's start
    /// to its end (`None`: not measured).
    pub others_cpus: Option<f64>,
}

/// A running sampler; [`Sampler::finish`] stops it.
pub struct Sampler {
    stop: Arc<AtomicBool>,
    thread: JoinHandle<Vec<Sample>>,
    started: Instant,
    others: HashMap<u32, f64>,
}

impl Sampler {
    /// Starts sampling /proc/stat and the `tx packets` of `dev` in
    /// `/proc/PID/net/dev` of `pid` (a process in the interface's
    /// namespace).
    pub fn start(pid: u32, dev: &str) -> Sampler {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&stop);
        let path = PathBuf::from(format!("/proc/{pid}/net/dev"));
        let dev = dev.to_string();
        let thread = std::thread::spawn(move || {
            let mut v = Vec::new();
            loop {
                let done = flag.load(Ordering::Relaxed);
                let tx = std::fs::read_to_string(&path)
                    .ok()
                    .and_then(|t| net_dev(&t, &dev))
                    .map(|c| c.tx_packets);
                if let (Some(cpu), Some(tx_packets)) = (host::cpu_ticks(), tx) {
                    v.push(Sample {
                        at: Instant::now(),
                        cpu,
                        tx_packets,
                    });
                }
                if done {
                    return v;
                }
                std::thread::sleep(PERIOD);
            }
        });
        Sampler {
            stop,
            thread,
            started: Instant::now(),
            others: others_cpu(),
        }
    }

    /// Stops the thread (after one last sample) and returns the window,
    /// or `None` when no packet was sent or the counters could not be read.
    pub fn finish(self) -> Option<Window> {
        let others = others_cpu();
        let secs = self.started.elapsed().as_secs_f64();
        self.stop.store(true, Ordering::Relaxed);
        let samples = self.thread.join().ok()?;
        let mut w = window(&samples)?;
        // A process that started meanwhile used all its time meanwhile.
        let used: f64 = others
            .iter()
            .map(|(pid, &t)| t - self.others.get(pid).copied().unwrap_or(0.0))
            .filter(|&t| t > 0.0)
            // From +0.0: an empty f64 sum() is -0.0.
            .fold(0.0, |a, t| a + t);
        w.others_cpus = (!self.others.is_empty()).then(|| used / secs.max(1e-9));
        Some(w)
    }
}

/// utime + stime, in seconds, of every process other than this one and its
/// descendants, kernel threads left out (the children of kthreadd, pid 2).
fn others_cpu() -> HashMap<u32, f64> {
    let clk = host::clk_tck();
    // pid -> (ppid, CPU seconds)
    let mut all: HashMap<u32, (u32, f64)> = HashMap::new();
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return HashMap::new();
    };
    for e in dir.flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        if let Some(v) = parse_stat(&stat) {
            all.insert(pid, (v.0, v.1 / clk));
        }
    }
    let me = std::process::id();
    let ours = |mut p: u32| {
        for _ in 0..64 {
            if p == me {
                return true;
            }
            match all.get(&p) {
                Some(&(pp, _)) if pp != 0 => p = pp,
                _ => return false,
            }
        }
        false
    };
    all.iter()
        .filter(|(&pid, &(ppid, _))| pid != 2 && ppid != 2 && !ours(pid))
        .map(|(&pid, &(_, t))| (pid, t))
        .collect()
}

/// (ppid, utime + stime in ticks) of a /proc/PID/stat line.
fn parse_stat(s: &str) -> Option<(u32, f64)> {
    let rest = s.rsplit_once(") ")?.1;
    let f: Vec<&str> = rest.split_whitespace().collect();
    // After the command: state, ppid (0-based 1), ... utime, stime (11, 12).
    let num = |i: usize| f.get(i).and_then(|v| v.parse::<f64>().ok());
    Some((f.get(1)?.parse().ok()?, num(11)? + num(12)?))
}

/// The window of `samples` in which the transmit counter moved.
fn window(s: &[Sample]) -> Option<Window> {
    let first = s.first()?;
    let last = s.last()?;
    // The last sample before the counter moved, the first at its end.
    let moved = s.iter().position(|x| x.tx_packets != first.tx_packets)?;
    let start = &s[moved.saturating_sub(1)];
    let end = s.iter().find(|x| x.tx_packets == last.tx_packets)?;
    let total = end.cpu.total.saturating_sub(start.cpu.total);
    let seconds = end.at.duration_since(start.at).as_secs_f64();
    if total == 0 || seconds <= 0.0 {
        return None;
    }
    let clk = host::clk_tck();
    let cpus = f64::from(end.cpu.cpus.max(1));
    let busy = end.cpu.busy.saturating_sub(start.cpu.busy);
    let idle = total - busy.min(total);
    let softirq = end.cpu.softirq.saturating_sub(start.cpu.softirq);
    let busy_cpus = (cpus - idle as f64 / clk / seconds).clamp(0.0, cpus);
    Some(Window {
        seconds,
        packets: end.tx_packets.saturating_sub(start.tx_packets),
        busy_pct: 100.0 * busy_cpus / cpus,
        busy_cpus,
        busy_pct_ticks: 100.0 * busy as f64 / total as f64,
        softirq_pct: 100.0 * softirq as f64 / clk / seconds / cpus,
        others_cpus: None,
    })
}

/// One interface's counters in /proc/net/dev.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NetDev {
    /// Packets received.
    pub rx_packets: u64,
    /// Packets dropped on receipt.
    pub rx_dropped: u64,
    /// Packets sent.
    pub tx_packets: u64,
    /// Packets dropped on sending.
    pub tx_dropped: u64,
}

/// The counters of `dev` in a /proc/net/dev text.
pub fn net_dev(text: &str, dev: &str) -> Option<NetDev> {
    let rest = text.lines().find_map(|l| {
        let (name, rest) = l.split_once(':')?;
        (name.trim() == dev).then_some(rest)
    })?;
    let v: Vec<u64> = rest
        .split_whitespace()
        .map(|x| x.parse().ok())
        .collect::<Option<_>>()?;
    // rx: bytes packets errs drop fifo frame compressed multicast, then tx:
    // bytes packets errs drop ...
    Some(NetDev {
        rx_packets: *v.get(1)?,
        rx_dropped: *v.get(3)?,
        tx_packets: *v.get(9)?,
        tx_dropped: *v.get(11)?,
    })
}

/// The counters of `dev` as a process in its namespace sees them.
pub fn net_dev_of(pid: u32, dev: &str) -> Option<NetDev> {
    net_dev(
        &std::fs::read_to_string(format!("/proc/{pid}/net/dev")).ok()?,
        dev,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_lines_and_other_processes() {
        let l = "4242 (a (b) c) S 17 4242 4242 0 -1 4194560 100 0 0 0 250 75 3 4 20 0 1 0";
        assert_eq!(parse_stat(l), Some((17, 325.0)));
        assert_eq!(parse_stat("garbage"), None);
        // This process is ours, not another's.
        assert!(!others_cpu().contains_key(&std::process::id()));
    }

    #[test]
    fn net_dev_lines_are_read() {
        let t = "Inter-|   Receive |  Transmit\n \
                 face |bytes packets errs drop fifo frame compressed multicast|bytes packets errs drop fifo colls carrier compressed\n    \
                 lo:       0       0    0    0    0     0          0         0        0       0    0    0    0     0       0          0\n   \
                 scb:     426       5    0    7    0     0          0         0      266       3    0    0    0     0       0          0\n   \
                 sca:     266       3    0    0    0     0          0         0      426       5    0    2    0     0       0          0\n";
        assert_eq!(
            net_dev(t, "scb"),
            Some(NetDev {
                rx_packets: 5,
                rx_dropped: 7,
                tx_packets: 3,
                tx_dropped: 0
            })
        );
        assert_eq!(net_dev(t, "sca").map(|c| c.tx_dropped), Some(2));
        assert_eq!(net_dev(t, "eth0"), None);
    }

    #[test]
    fn the_window_is_where_the_counter_moves() {
        let t0 = Instant::now();
        let clk = host::clk_tck();
        // Ticks of 2 CPUs over 1 s steps; `idle` of them idle, `busy`
        // sampled busy (fewer than the rest: ticks missed).
        let s = |step: u64, busy: f64, idle: f64, tx: u64| Sample {
            at: t0 + Duration::from_secs(step),
            cpu: CpuTicks {
                busy: (busy * clk) as u64,
                total: ((busy + idle) * clk) as u64,
                softirq: (busy * clk) as u64 / 2,
                cpus: 2,
            },
            tx_packets: tx,
        };
        // Preload (busy, nothing sent), sending from 2 to 4 s, drain.
        let v = [
            s(0, 0.0, 0.0, 10),
            s(1, 1.0, 1.0, 10),
            s(2, 1.5, 2.0, 10),
            s(3, 1.8, 3.0, 500),
            s(4, 2.1, 4.0, 1000),
            s(5, 2.5, 5.0, 1000),
        ];
        let w = window(&v).expect("a window");
        assert_eq!(w.packets, 990);
        assert!((w.seconds - 2.0).abs() < 1e-9);
        // 2 s x 2 CPUs, 2 s of them idle: 1 CPU busy, 50 %; the ticks saw
        // 0.6 s busy of 2.6 s.
        assert!((w.busy_cpus - 1.0).abs() < 1e-6 && (w.busy_pct - 50.0).abs() < 1e-4);
        assert!((w.busy_pct_ticks - 100.0 * 0.6 / 2.6).abs() < 1e-4);
        assert!((w.softirq_pct - 100.0 * 0.3 / 4.0).abs() < 1e-4);
        assert!(window(&v[..2]).is_none());
    }
}
