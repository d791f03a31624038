//! `streamcap forward` end to end: a capture replayed into a sender
//! namespace's veth reaches the forwarder's namespace on IN; `forward`
//! sends what passes the filter on OUT, whose peer sits in a receiver
//! namespace where tcpdump writes what arrives. The frames tcpdump saw
//! must be exactly, byte for byte and in order, the frames of the replayed
//! capture that pass the filter (`tcpdump -r in.pcap -w expected.pcap
//! FILTER`). The live part needs root and tcpdump; the devmap path also a
//! build with `--features xdp` and clang (`scripts/test-xdp.sh`). Each
//! skips with a message otherwise.

mod common;

use common::*;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;
use streamcap::PacketSource;

/// The filters each path is checked with: everything, TCP only, IPv6 or
/// VLAN-tagged frames, and one no frame of the sample passes.
const FILTERS: &[&str] = &["", "tcp", "ip6 or vlan", "ether proto 0x1234"];

/// A missing interface is a usage error that names it.
#[test]
fn a_missing_interface_is_named() {
    let o = run(&["forward", "-i", "lo", "--to", "no-such-if0"]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("no-such-if0"), "{err}");
    assert!(o.stdout.is_empty());
    let o = run(&["forward", "-i", "lo", "--to", "lo"]);
    assert_eq!(o.status.code(), Some(2));
    let o = run(&["forward", "-i", "lo", "--to", "x", "tcp and and"]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("invalid filter"), "{err}");
}

/// A build without the feature refuses `--via devmap`, saying how to
/// rebuild.
#[cfg(not(feature = "xdp"))]
#[test]
fn a_build_without_xdp_refuses_devmap() {
    for via in ["devmap", "af_xdp"] {
        let o = run(&["forward", "-i", "lo", "--to", "x", "--via", via]);
        assert_eq!(o.status.code(), Some(2));
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(
            err.contains("built without XDP") && err.contains("--features xdp"),
            "{via}: {err}"
        );
    }
}

/// Three namespaces: sender `fs` <-> `fin` forwarder `fout` <-> `fr`
/// receiver; deleted on drop.
struct Topology {
    sender: String,
    forwarder: String,
    receiver: String,
}

impl Topology {
    fn new(test: &str) -> Option<Topology> {
        let root = Command::new("id")
            .arg("-u")
            .output()
            .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0");
        if !root {
            skip("forwarding tests need root");
            return None;
        }
        if !have("ip", "-V") || !have("tcpdump", "--version") {
            skip("forwarding tests need ip (iproute2) and tcpdump");
            return None;
        }
        let base = format!("scf-{}-{test}", std::process::id());
        let t = Topology {
            sender: format!("{base}-s"),
            forwarder: format!("{base}-f"),
            receiver: format!("{base}-r"),
        };
        let mut steps: Vec<Vec<String>> = Vec::new();
        for ns in [&t.sender, &t.forwarder, &t.receiver] {
            steps.push(vec!["ip".into(), "netns".into(), "add".into(), ns.clone()]);
            // No IPv6: the kernel then sends nothing of its own.
            for key in ["all", "default"] {
                steps.push(
                    [
                        "ip",
                        "netns",
                        "exec",
                        ns,
                        "sysctl",
                        "-qw",
                        &format!("net.ipv6.conf.{key}.disable_ipv6=1"),
                    ]
                    .map(String::from)
                    .to_vec(),
                );
            }
        }
        let link = |a: &str, ns_a: &str, b: &str, ns_b: &str| -> Vec<String> {
            [
                "ip", "link", "add", a, "netns", ns_a, "type", "veth", "peer", "name", b, "netns",
                ns_b,
            ]
            .map(String::from)
            .to_vec()
        };
        steps.push(link("fs", &t.sender, "fin", &t.forwarder));
        steps.push(link("fout", &t.forwarder, "fr", &t.receiver));
        for (ns, dev) in [
            (&t.sender, "fs"),
            (&t.forwarder, "fin"),
            (&t.forwarder, "fout"),
            (&t.receiver, "fr"),
        ] {
            steps.push(
                ["ip", "-n", ns, "link", "set", dev, "up"]
                    .map(String::from)
                    .to_vec(),
            );
        }
        for args in &steps {
            match Command::new(&args[0]).args(&args[1..]).output() {
                Ok(o) if o.status.success() => {}
                Ok(o) => {
                    skip(format!(
                        "{}: {}",
                        args.join(" "),
                        String::from_utf8_lossy(&o.stderr).trim()
                    ));
                    return None;
                }
                Err(e) => {
                    skip(format!("cannot run {}: {e}", args[0]));
                    return None;
                }
            }
        }
        Some(t)
    }

    fn exec(ns: &str, args: &[&str]) -> Command {
        let mut c = Command::new("ip");
        c.args(["netns", "exec", ns]).args(args);
        c
    }

    /// Replays `input` from the sender into `fs` at 20,000 packets per
    /// second and checks that the replay succeeded.
    fn replay(&self, input: &Path) {
        let o = Topology::exec(
            &self.sender,
            &[
                BIN,
                "replay",
                "-r",
                input.to_str().unwrap_or_default(),
                "-i",
                "fs",
                "--pps",
                "20000",
            ],
        )
        .output()
        .expect("run streamcap replay");
        assert!(
            o.status.success(),
            "replay failed: {}",
            String::from_utf8_lossy(&o.stderr)
        );
    }
}

impl Drop for Topology {
    fn drop(&mut self) {
        for ns in [&self.sender, &self.forwarder, &self.receiver] {
            let _ = Command::new("ip").args(["netns", "del", ns]).output();
        }
    }
}

/// A child process killed (and waited for) if the test ends before it.
struct Running(Option<Child>);

impl Running {
    /// Starts `cmd` and waits for a stderr line containing `ready`; the
    /// rest of stderr is collected in the background.
    fn start(mut cmd: Command, ready: &str) -> (Running, std::thread::JoinHandle<String>) {
        cmd.stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = cmd.spawn().expect("start a process");
        let stderr = child.stderr.take().expect("stderr");
        let mut lines = BufReader::new(stderr).lines();
        let mut seen = Vec::new();
        loop {
            match lines.next() {
                Some(Ok(l)) if l.contains(ready) => break,
                Some(Ok(l)) => seen.push(l),
                _ => panic!("the process ended before {ready:?}: {}", seen.join("\n")),
            }
        }
        let rest =
            std::thread::spawn(move || lines.map_while(Result::ok).collect::<Vec<_>>().join("\n"));
        (Running(Some(child)), rest)
    }

    /// SIGINT, then waits; the exit status and stdout.
    fn interrupt(mut self) -> std::process::Output {
        let child = self.0.take().expect("running");
        let _ = Command::new("kill")
            .args(["-INT", &child.id().to_string()])
            .status();
        child.wait_with_output().expect("wait")
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if let Some(mut c) = self.0.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// The frames of a capture file, in order.
fn frames(path: &Path) -> Vec<Vec<u8>> {
    let mut src = streamcap::FileSource::open(path)
        .unwrap_or_else(|e| panic!("open {}: {e}", path.display()));
    let mut out = Vec::new();
    while let Some(p) = src.next_packet() {
        out.push(p.expect("a readable frame").data.to_vec());
    }
    out
}

/// How many whole frames a capture being written holds so far.
fn readable_frames(path: &Path) -> usize {
    let Ok(mut src) = streamcap::FileSource::open(path) else {
        return 0;
    };
    let mut n = 0;
    while let Some(Ok(_)) = src.next_packet() {
        n += 1;
    }
    n
}

/// A number that follows `before` in the summary, e.g. "forwarded 12".
fn number_after(summary: &str, before: &str) -> u64 {
    let at = summary
        .find(before)
        .unwrap_or_else(|| panic!("{before:?} not in the summary:\n{summary}"));
    summary[at + before.len()..]
        .split_whitespace()
        .next()
        .and_then(|w| w.parse().ok())
        .unwrap_or_else(|| panic!("no number after {before:?}:\n{summary}"))
}

/// The number before `after`, e.g. "3 filtered out".
fn number_before(summary: &str, after: &str) -> u64 {
    let at = summary
        .find(after)
        .unwrap_or_else(|| panic!("{after:?} not in the summary:\n{summary}"));
    summary[..at]
        .split_whitespace()
        .last()
        .and_then(|w| w.parse().ok())
        .unwrap_or_else(|| panic!("no number before {after:?}:\n{summary}"))
}

/// Replays `input` through `forward ARGS FILTER` and checks that the
/// receiver saw exactly the frames of `input` that pass FILTER, and that
/// the summary counts them.
fn forwards_exactly(t: &Topology, dir: &Path, input: &Path, args: &[&str], filter: &str) {
    let expected_path = dir.join("expected.pcap");
    let mut cmd = Command::new("tcpdump");
    cmd.args(["-r", input.to_str().unwrap_or_default(), "-w"])
        .arg(&expected_path);
    if !filter.is_empty() {
        cmd.arg(filter);
    }
    let o = cmd.output().expect("run tcpdump -r");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let expected = frames(&expected_path);
    let all = frames(input);

    let got_path = dir.join("got.pcap");
    let _ = std::fs::remove_file(&got_path);
    let (tcpdump, tcpdump_err) = Running::start(
        Topology::exec(
            &t.receiver,
            &[
                "tcpdump",
                "-i",
                "fr",
                "-Q",
                "in",
                "-U",
                "--immediate-mode",
                "-n",
                // Small frames and a large buffer: immediate mode uses a
                // ring of whole snapshot-length slots, which a burst of
                // forwarded frames would overflow at -s 0.
                "-s",
                "2000",
                "-B",
                "65536",
                "-w",
                got_path.to_str().unwrap_or_default(),
            ],
        ),
        "listening on",
    );
    let mut fwd_args = vec![BIN, "forward", "-i", "fin", "--to", "fout"];
    fwd_args.extend_from_slice(args);
    if !filter.is_empty() {
        fwd_args.push(filter);
    }
    let (fwd, fwd_err) = Running::start(Topology::exec(&t.forwarder, &fwd_args), "forwarding from");
    t.replay(input);
    // tcpdump writes each frame as it handles it (-U): wait until the
    // expected number is in the file (or 5 s), then a little longer for
    // any frame too many.
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while readable_frames(&got_path) < expected.len() && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(300));
    let out = fwd.interrupt();
    let summary = fwd_err.join().unwrap_or_default();
    let _ = tcpdump.interrupt();
    let summary = format!(
        "{summary}\ntcpdump: {}",
        tcpdump_err.join().unwrap_or_default()
    );
    assert!(out.status.success(), "forward failed:\n{summary}");
    assert!(out.stdout.is_empty(), "forward wrote to stdout");
    let got = frames(&got_path);
    let what = format!("forward {args:?} {filter:?}");
    assert_eq!(
        got.len(),
        expected.len(),
        "{what}: {} frames arrived, {} pass the filter\n{summary}",
        got.len(),
        expected.len()
    );
    for (i, (g, e)) in got.iter().zip(&expected).enumerate() {
        assert!(
            g == e,
            "{what}: frame {i} differs ({} bytes arrived, {} expected)",
            g.len(),
            e.len()
        );
    }
    assert_eq!(
        number_after(&summary, "forwarded "),
        expected.len() as u64,
        "{summary}"
    );
    assert_eq!(
        number_before(&summary, "filtered out"),
        (all.len() - expected.len()) as u64,
        "{summary}"
    );
    assert_eq!(number_before(&summary, "send errors"), 0, "{summary}");
    assert!(
        summary.contains("pps") && summary.contains("CPU s"),
        "{summary}"
    );
}

/// The project's sample (472 frames: TCP, UDP, IPv6, VLAN-tagged).
fn sample() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../samples/sample.pcap")
}

/// The AF_PACKET path delivers exactly the frames that pass each filter.
#[test]
fn af_packet_forwards_exactly_what_passes_the_filter() {
    let Some(t) = Topology::new("afp") else {
        return;
    };
    let dir = tempdir("forward-afp");
    for filter in FILTERS {
        forwards_exactly(&t, &dir, &sample(), &["--via", "af_packet"], filter);
    }
    // One send per frame too.
    forwards_exactly(&t, &dir, &sample(), &["--send", "frame"], "tcp");
}

/// `--count` stops the AF_PACKET path after that many frames passed.
#[test]
fn af_packet_stops_after_count() {
    let Some(t) = Topology::new("count") else {
        return;
    };
    let (fwd, err) = Running::start(
        Topology::exec(
            &t.forwarder,
            &[
                BIN, "forward", "-i", "fin", "--to", "fout", "-c", "10", "tcp",
            ],
        ),
        "forwarding from",
    );
    t.replay(&sample());
    let mut running = fwd;
    let child = running.0.take().expect("running");
    let out = child.wait_with_output().expect("wait");
    let summary = err.join().unwrap_or_default();
    assert!(out.status.success(), "{summary}");
    assert_eq!(number_after(&summary, "forwarded "), 10, "{summary}");
}

#[cfg(feature = "xdp")]
mod devmap {
    use super::*;

    /// Attaches an XDP program that passes everything to the receiver's
    /// veth `fr`, natively: a veth takes redirected frames only while its
    /// peer runs NAPI, which an XDP program starts (so does GRO, but GRO
    /// would merge TCP segments before tcpdump sees them, and an XDP
    /// program turns GRO off). Compiled with clang, loaded by iproute2.
    fn receiver_takes_redirects(t: &Topology, dir: &Path) -> bool {
        let src = dir.join("pass.bpf.c");
        let obj = dir.join("pass.bpf.o");
        std::fs::write(
            &src,
            "#include <linux/bpf.h>\n#include <bpf/bpf_helpers.h>\n\
             SEC(\"xdp\") int pass(struct xdp_md *ctx) { return XDP_PASS; }\n\
             char LICENSE[] SEC(\"license\") = \"GPL\";\n",
        )
        .expect("write the pass program");
        let arch = if cfg!(target_arch = "aarch64") {
            "aarch64-linux-gnu"
        } else {
            "x86_64-linux-gnu"
        };
        let clang = std::env::var("CLANG").unwrap_or_else(|_| "clang".into());
        let o = Command::new(&clang)
            .args(["-O2", "-target", "bpf", "-c"])
            .arg(format!("-I/usr/include/{arch}"))
            .arg(&src)
            .arg("-o")
            .arg(&obj)
            .output();
        match o {
            Ok(o) if o.status.success() => {}
            Ok(o) => {
                skip(format!(
                    "clang cannot compile an XDP program: {}",
                    String::from_utf8_lossy(&o.stderr)
                ));
                return false;
            }
            Err(e) => {
                skip(format!("no clang ({e})"));
                return false;
            }
        }
        let o = Command::new("ip")
            .args([
                "-n",
                &t.receiver,
                "link",
                "set",
                "dev",
                "fr",
                "xdpdrv",
                "obj",
            ])
            .arg(&obj)
            .args(["sec", "xdp"])
            .output()
            .expect("run ip");
        if !o.status.success() {
            skip(format!(
                "ip cannot attach an XDP program to the receiver's veth: {}",
                String::from_utf8_lossy(&o.stderr)
            ));
            return false;
        }
        true
    }

    /// The devmap path delivers exactly the frames that pass each filter,
    /// in native and in generic mode.
    #[test]
    fn devmap_forwards_exactly_what_passes_the_filter() {
        let Some(t) = Topology::new("devmap") else {
            return;
        };
        let dir = tempdir("forward-devmap");
        if !receiver_takes_redirects(&t, &dir) {
            return;
        }
        for filter in FILTERS {
            forwards_exactly(&t, &dir, &sample(), &["--via", "devmap"], filter);
        }
        forwards_exactly(
            &t,
            &dir,
            &sample(),
            &["--via", "devmap", "--xdp-mode", "generic"],
            "ip6 or vlan",
        );
    }

    /// The AF_XDP path delivers exactly the frames that pass each filter,
    /// sent from the pool's frames by a socket sharing its memory.
    #[test]
    fn af_xdp_forwards_exactly_what_passes_the_filter() {
        let Some(t) = Topology::new("xsk") else {
            return;
        };
        let dir = tempdir("forward-xsk");
        for filter in FILTERS {
            forwards_exactly(&t, &dir, &sample(), &["--via", "af_xdp"], filter);
        }
    }

    /// Without NAPI at the receiver's veth the redirected frames are lost
    /// after the redirect; the summary is followed by a line that says so.
    #[test]
    fn devmap_says_when_out_lost_frames() {
        let Some(t) = Topology::new("lost") else {
            return;
        };
        let (fwd, err) = Running::start(
            Topology::exec(
                &t.forwarder,
                &[
                    BIN, "forward", "-i", "fin", "--to", "fout", "--via", "devmap", "tcp",
                ],
            ),
            "forwarding from",
        );
        t.replay(&sample());
        std::thread::sleep(Duration::from_millis(300));
        let out = fwd.interrupt();
        let summary = err.join().unwrap_or_default();
        assert!(out.status.success(), "{summary}");
        assert_eq!(number_after(&summary, "forwarded "), 421, "{summary}");
        assert!(
            summary.contains("fout: sent 0 packets, fewer than the 421 redirected"),
            "{summary}"
        );
    }

    /// The program comes off IN when forward ends.
    #[test]
    fn the_program_comes_off_at_the_end() {
        let Some(t) = Topology::new("off") else {
            return;
        };
        let o = Topology::exec(
            &t.forwarder,
            &[
                BIN,
                "forward",
                "-i",
                "fin",
                "--to",
                "fout",
                "--via",
                "devmap",
                "--duration",
                "0.2",
            ],
        )
        .output()
        .expect("run forward");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(o.status.success(), "{err}");
        assert!(err.contains("XDP native mode"), "{err}");
        let o = Command::new("ip")
            .args(["-n", &t.forwarder, "link", "show", "fin"])
            .output()
            .expect("ip link show");
        let show = String::from_utf8_lossy(&o.stdout);
        assert!(!show.contains("xdp"), "{show}");
    }
}
