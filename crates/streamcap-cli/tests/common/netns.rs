//! A network namespace with a veth pair for live-capture tests, and the
//! helpers that start `streamcap -i` in it, replay into it and read what
//! the runs printed (included by path by the live and XDP tests).

#![allow(dead_code)]

use crate::common::{self, have, json_lines, tempdir, TestFile, BIN};
use serde_json::Value;
use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::Duration;
use streamcap_gen::campus::{Campus, CampusConfig};

/// Replay rate of the tests: far below what loses packets on a veth.
pub(crate) const PPS: &str = "20000";

/// A network namespace with a veth pair `sca` <-> `scb`, deleted on drop.
pub(crate) struct Netns {
    pub(crate) name: String,
}

impl Netns {
    /// Creates the namespace, or says why it cannot (the test then skips).
    pub(crate) fn new(test: &str) -> Option<Netns> {
        let root = Command::new("id")
            .arg("-u")
            .output()
            .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0");
        if !root {
            common::skip("live capture tests need root");
            return None;
        }
        if !have("ip", "-V") {
            common::skip("the ip command (iproute2) is not installed");
            return None;
        }
        let name = format!("sc-{}-{test}", std::process::id());
        let ns = Netns { name };
        let steps: [&[&str]; 8] = [
            &["netns", "add", &ns.name],
            &[
                "-n", &ns.name, "link", "add", "sca", "type", "veth", "peer", "name", "scb",
            ],
            &["-n", &ns.name, "link", "set", "sca", "mtu", "9000"],
            &["-n", &ns.name, "link", "set", "scb", "mtu", "9000"],
            &["-n", &ns.name, "link", "set", "lo", "up"],
            &["-n", &ns.name, "link", "set", "sca", "up"],
            &["-n", &ns.name, "link", "set", "scb", "up"],
            &["-n", &ns.name, "link", "show", "scb"],
        ];
        // No IPv6 on the pair: the kernel itself then sends nothing on it.
        for (i, args) in steps.iter().enumerate() {
            if i == 5 {
                let _ = ns
                    .exec(&["sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1"])
                    .output();
            }
            let o = Command::new("ip").args(*args).output();
            match o {
                Ok(o) if o.status.success() => {}
                Ok(o) => {
                    common::skip(format!(
                        "ip {}: {}",
                        args.join(" "),
                        String::from_utf8_lossy(&o.stderr).trim()
                    ));
                    return None;
                }
                Err(e) => {
                    common::skip(format!("cannot run ip: {e}"));
                    return None;
                }
            }
        }
        Some(ns)
    }

    /// A command run inside the namespace.
    pub(crate) fn exec(&self, args: &[&str]) -> Command {
        let mut c = Command::new("ip");
        c.args(["netns", "exec", &self.name]).args(args);
        c
    }

    /// Starts `streamcap ARGS -i scb` inside the namespace and waits until
    /// its sockets are open (the "capturing on" line).
    pub(crate) fn capture(&self, args: &[&str]) -> Capturing {
        self.capture_on(args, "scb")
    }

    /// Starts `streamcap ARGS -i IFACE` inside the namespace.
    pub(crate) fn capture_on(&self, args: &[&str], iface: &str) -> Capturing {
        let mut cmd = self.exec(&[BIN]);
        cmd.args(args).args(["-i", iface]);
        start_capture(cmd, iface)
    }

    /// Replays `pcap` onto `sca` at the test rate.
    pub(crate) fn replay(&self, pcap: &Path) {
        self.replay_on(pcap, "sca");
    }

    /// Replays `pcap` onto `iface` at the test rate.
    pub(crate) fn replay_on(&self, pcap: &Path, iface: &str) {
        self.replay_at(pcap, iface, PPS);
    }

    /// Replays `pcap` onto `iface` at `pps` frames per second.
    pub(crate) fn replay_at(&self, pcap: &Path, iface: &str, pps: &str) {
        let o = self
            .exec(&[
                BIN,
                "replay",
                "-r",
                pcap.to_str().unwrap_or_default(),
                "-i",
                iface,
                "--pps",
                pps,
            ])
            .output()
            .expect("run streamcap replay");
        assert!(
            o.status.success(),
            "replay failed: {}",
            String::from_utf8_lossy(&o.stderr)
        );
    }
}

/// Runs a `streamcap ... -i IFACE` command and waits until its sockets are
/// open (the "capturing on" line).
pub(crate) fn start_capture(mut cmd: Command, iface: &str) -> Capturing {
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("start streamcap");
    let stderr = child.stderr.take().expect("stderr");
    let mut lines = BufReader::new(stderr).lines();
    let first = lines.next().and_then(Result::ok).unwrap_or_default();
    assert!(
        first.contains(&format!("capturing on {iface}")),
        "streamcap did not start capturing: {first}"
    );
    // Read the rest of stderr in the background (the summary).
    let rest =
        std::thread::spawn(move || lines.map_while(Result::ok).collect::<Vec<_>>().join("\n"));
    Capturing {
        child: Some(child),
        rest: Some(rest),
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        let _ = Command::new("ip")
            .args(["netns", "del", &self.name])
            .output();
    }
}

/// A running live capture; killed if the test ends (or fails) before
/// stopping it, so that no capture outlives its test.
pub(crate) struct Capturing {
    pub(crate) child: Option<Child>,
    pub(crate) rest: Option<std::thread::JoinHandle<String>>,
}

impl Capturing {
    /// Sends SIGINT (as Ctrl-C would) and collects the output.
    pub(crate) fn interrupt(self) -> (Output, String) {
        // Let the last block's timeout hand the tail of the replay over.
        std::thread::sleep(Duration::from_millis(300));
        if let Some(c) = &self.child {
            let _ = Command::new("kill")
                .args(["-INT", &c.id().to_string()])
                .status();
        }
        self.wait()
    }

    /// Waits for the process to end by itself (-c, --duration).
    pub(crate) fn wait(mut self) -> (Output, String) {
        let child = self.child.take().expect("a running capture");
        let out = child.wait_with_output().expect("wait for streamcap");
        let err = self.rest.take().map(|r| r.join().unwrap_or_default());
        (out, err.unwrap_or_default())
    }

    /// Kills the process (SIGKILL) and waits for it.
    pub(crate) fn kill(mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

impl Drop for Capturing {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

pub(crate) fn temp_capture(name: &str, cfg: Option<CampusConfig>) -> TestFile {
    let p = tempdir(&format!("live-{name}")).into_file("in.pcap");
    let bytes = match cfg {
        Some(cfg) => Campus::new(cfg).to_bytes().0,
        None => streamcap_gen::sample(streamcap_gen::SAMPLE_DEFAULT_SEED).to_pcap_bytes(),
    };
    std::fs::write(&p, bytes).expect("write capture");
    p
}

/// A generated campus trace with every kind of frame the live tests
/// compare: VLAN tags and IPv6 on a tenth of the connections each, and IP
/// fragments.
pub(crate) fn mixed_capture(name: &str, seed: u64, packets: u64, concurrency: usize) -> TestFile {
    temp_capture(
        name,
        Some(CampusConfig {
            seed,
            packets,
            concurrency,
            vlan: 0.1,
            ipv6: 0.1,
            fragment: 0.02,
            ..CampusConfig::default()
        }),
    )
}

/// Asserts that two runs gave the same records, connection by connection.
pub(crate) fn assert_same_records(
    want: &BTreeMap<String, Value>,
    got: &BTreeMap<String, Value>,
    tag: &str,
) {
    assert_eq!(want.len(), got.len(), "{tag}: record count");
    for (k, r) in want {
        assert_eq!(Some(r), got.get(k), "{tag}: {k}");
    }
}

/// Records by connection, without the capture times (live times differ).
pub(crate) fn by_connection(stdout: &[u8]) -> BTreeMap<String, Value> {
    json_lines(stdout)
        .into_iter()
        .map(|mut r| {
            let key = format!(
                "{} {}:{} {}:{} {}",
                r["proto"], r["src_ip"], r["src_port"], r["dst_ip"], r["dst_port"], r["vlan"]
            );
            if let Some(o) = r.as_object_mut() {
                o.remove("ts");
                o.remove("last_ts");
            }
            (key, r)
        })
        .collect()
}

/// The kernel line of the summary: (passed the filter, dropped).
pub(crate) fn kernel_counts(summary: &str) -> (u64, u64) {
    let line = summary
        .lines()
        .find(|l| l.trim_start().starts_with("kernel"))
        .unwrap_or_else(|| panic!("no kernel line in the summary:\n{summary}"));
    let nums: Vec<u64> = line
        .split_whitespace()
        .filter_map(|w| w.trim_end_matches(',').parse().ok())
        .collect();
    (nums[0], nums[1])
}
