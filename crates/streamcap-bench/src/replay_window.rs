//! The whole machine's CPU use while a replay sends: /proc/stat (all
//! CPUs) and an interface's transmit counter sampled every few
//! milliseconds by a thread; the window runs from the last sample before
//! the counter moved to the first one at its final value. So the replay's
//! start-up (tcpreplay's preload of the file) and the receiver's drain
//! afterwards stay out, and the kernel's work for every packet (softirq on
//! whichever CPU, charged to no process) stays in.
//!
//! The interface lives in a network namespace: its counters are read from
//! `/proc/PID/net/dev` of a process inside it (no process is started per
//! sample).

use crate::host::{self, CpuTicks};
use serde::Serialize;
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
    /// Busy share of all CPUs, percent (user + nice + system + irq +
    /// softirq + steal over the total).
    pub busy_pct: f64,
    /// Softirq share of all CPUs, percent.
    pub softirq_pct: f64,
    /// CPUs kept busy on average (busy ticks over the window's length).
    pub busy_cpus: f64,
}

/// A running sampler; [`Sampler::finish`] stops it.
pub struct Sampler {
    stop: Arc<AtomicBool>,
    thread: JoinHandle<Vec<Sample>>,
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
        Sampler { stop, thread }
    }

    /// Stops the thread (after one last sample) and returns the window,
    /// or `None` when no packet was sent or the counters could not be read.
    pub fn finish(self) -> Option<Window> {
        self.stop.store(true, Ordering::Relaxed);
        let samples = self.thread.join().ok()?;
        window(&samples)
    }
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
    if total == 0 {
        return None;
    }
    let busy = end.cpu.busy.saturating_sub(start.cpu.busy);
    let softirq = end.cpu.softirq.saturating_sub(start.cpu.softirq);
    let seconds = end.at.duration_since(start.at).as_secs_f64();
    Some(Window {
        seconds,
        packets: end.tx_packets.saturating_sub(start.tx_packets),
        busy_pct: 100.0 * busy as f64 / total as f64,
        softirq_pct: 100.0 * softirq as f64 / total as f64,
        busy_cpus: busy as f64 / host::clk_tck() / seconds.max(1e-9),
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
        let s = |ms: u64, busy: u64, total: u64, tx: u64| Sample {
            at: t0 + Duration::from_millis(ms),
            cpu: CpuTicks {
                busy,
                total,
                softirq: busy / 2,
            },
            tx_packets: tx,
        };
        // Preload (busy, nothing sent), sending from 40 to 80 ms, drain.
        let v = [
            s(0, 0, 100, 10),
            s(20, 50, 200, 10),
            s(40, 60, 300, 10),
            s(60, 110, 400, 500),
            s(80, 160, 500, 1000),
            s(100, 170, 600, 1000),
        ];
        let w = window(&v).expect("a window");
        assert_eq!(w.packets, 990);
        assert!((w.seconds - 0.04).abs() < 1e-9);
        assert!((w.busy_pct - 50.0).abs() < 1e-9);
        assert!((w.softirq_pct - 25.0).abs() < 1e-9);
        assert!(window(&v[..2]).is_none());
    }
}
