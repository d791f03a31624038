//! What the tests of `libstreamcap_pcap.so` share: the library's path, a
//! network namespace with a veth pair, a replay into it (this test binary
//! run again inside the namespace), unmodified programs started under the
//! library, and the frames of a capture file.

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use streamcap::source::{FileSource, PacketSource};

#[path = "../../../streamcap/tests/support/shared.rs"]
mod shared;
pub use shared::TestDir;

/// Prints why a test does not run.
pub fn skip(why: &str) {
    eprintln!("skipping: {why}");
}

/// Whether the tests run as root.
pub fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
}

/// Whether `cmd args` runs.
pub fn have(cmd: &str, args: &[&str]) -> bool {
    Command::new(cmd)
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok()
}

/// The library under test, `target/<profile>/libstreamcap_pcap.so`, built
/// (once per test process) by `cargo build -p streamcap-pcap` with this
/// test's profile: `cargo test` builds only the rlib the tests link, not
/// the cdylib programs preload.
pub fn library() -> PathBuf {
    static BUILT: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    BUILT
        .get_or_init(|| {
            let exe = std::env::current_exe().expect("test binary path");
            // target/<profile>/deps/<test>-<hash>
            let profile = exe
                .parent()
                .and_then(Path::parent)
                .expect("target/<profile>");
            let target = profile.parent().expect("target directory");
            let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
            let mut cmd = Command::new(cargo);
            cmd.current_dir(env!("CARGO_MANIFEST_DIR"))
                .args(["build", "-p", "streamcap-pcap", "--target-dir"])
                .arg(target);
            match profile.file_name().and_then(|n| n.to_str()) {
                Some("debug") => {}
                Some("release") => {
                    cmd.arg("--release");
                }
                Some(other) => {
                    cmd.args(["--profile", other]);
                }
                None => panic!("no profile name in {}", profile.display()),
            }
            let o = cmd.output().expect("run cargo build");
            assert!(
                o.status.success(),
                "cargo build -p streamcap-pcap: {}",
                String::from_utf8_lossy(&o.stderr)
            );
            let so = profile.join("libstreamcap_pcap.so");
            assert!(so.exists(), "{} is missing after the build", so.display());
            so
        })
        .clone()
}

/// A fresh directory for one test's files, removed when the returned guard
/// is dropped (kept when the test fails).
pub fn tempdir(name: &str) -> TestDir {
    TestDir::new("streamcap-pcap", name)
}

/// The frames of a capture file, in order.
pub fn frames(path: &Path) -> Vec<Vec<u8>> {
    let mut src = FileSource::open(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut out = Vec::new();
    while let Some(p) = src.next_packet() {
        let p = p.unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        out.push(p.data.to_vec());
    }
    out
}

/// The connection of an Ethernet frame, the same for both directions:
/// (protocol, lower endpoint, higher endpoint); `None` without ports.
pub fn connection(frame: &[u8]) -> Option<(u8, String, String)> {
    let p = streamcap::decode::decode_ip(streamcap::LinkType::ETHERNET, frame).ok()?;
    if !matches!(p.proto, 6 | 17) || p.payload.len() < 4 {
        return None;
    }
    let sport = u16::from_be_bytes([p.payload[0], p.payload[1]]);
    let dport = u16::from_be_bytes([p.payload[2], p.payload[3]]);
    let a = format!("{}:{sport}", p.src);
    let b = format!("{}:{dport}", p.dst);
    Some(if a <= b {
        (p.proto, a, b)
    } else {
        (p.proto, b, a)
    })
}

/// The lower of an Ethernet frame's ports (`None` without ports).
pub fn lower_port(frame: &[u8]) -> Option<u16> {
    let p = streamcap::decode::decode_ip(streamcap::LinkType::ETHERNET, frame).ok()?;
    if !matches!(p.proto, 6 | 17) || p.payload.len() < 4 {
        return None;
    }
    let sport = u16::from_be_bytes([p.payload[0], p.payload[1]]);
    let dport = u16::from_be_bytes([p.payload[2], p.payload[3]]);
    Some(sport.min(dport))
}

/// Each frame with how often it occurs.
pub fn multiset(frames: &[Vec<u8>]) -> BTreeMap<Vec<u8>, usize> {
    let mut m = BTreeMap::new();
    for f in frames {
        *m.entry(f.clone()).or_insert(0) += 1;
    }
    m
}

/// A network namespace with a veth pair `sca` <-> `scb`, without IPv6 (so
/// the kernel sends nothing on it), deleted on drop.
pub struct Netns {
    /// The namespace's name.
    pub name: String,
}

impl Netns {
    /// Creates it, or says why it cannot (the test then skips). With
    /// `queues`, the veth has that many receive and send queues.
    pub fn new(test: &str, queues: Option<u32>) -> Option<Netns> {
        if !is_root() {
            skip("live tests need root (a network namespace and a veth pair)");
            return None;
        }
        if !have("ip", &["-V"]) {
            skip("the ip command (iproute2) is not installed");
            return None;
        }
        let ns = Netns {
            name: format!("scp-{}-{test}", std::process::id()),
        };
        let q = queues.map(|q| q.to_string()).unwrap_or_default();
        // Queue counts go after each end's name, so both ends get them.
        let end = |name: &'static str| {
            let mut v = vec![name];
            if queues.is_some() {
                v.extend(["numrxqueues", q.as_str(), "numtxqueues", q.as_str()]);
            }
            v
        };
        let mut add = vec!["-n", &ns.name, "link", "add"];
        add.extend(end("sca"));
        add.extend(["type", "veth", "peer", "name"]);
        add.extend(end("scb"));
        let run = |args: &[&str]| {
            let o = Command::new("ip").args(args).output().expect("run ip");
            assert!(
                o.status.success(),
                "ip {args:?}: {}",
                String::from_utf8_lossy(&o.stderr)
            );
        };
        run(&["netns", "add", &ns.name]);
        run(&add);
        let _ = ns
            .command("sysctl", &["-qw", "net.ipv6.conf.all.disable_ipv6=1"])
            .output();
        let _ = ns
            .command("sysctl", &["-qw", "net.ipv6.conf.default.disable_ipv6=1"])
            .output();
        // Room for the captures' largest frames.
        for dev in ["sca", "scb"] {
            run(&["-n", &ns.name, "link", "set", dev, "mtu", "9000"]);
        }
        for dev in ["lo", "sca", "scb"] {
            run(&["-n", &ns.name, "link", "set", dev, "up"]);
        }
        Some(ns)
    }

    /// `program args` inside the namespace.
    pub fn command(&self, program: &str, args: &[&str]) -> Command {
        let mut c = Command::new("ip");
        c.args(["netns", "exec", &self.name, program]).args(args);
        c
    }

    /// Replays `pcap` onto `sca` at `pps` frames per second: this test
    /// binary again, inside the namespace, running [`replay_here`].
    pub fn replay(&self, pcap: &Path, pps: u32) {
        let exe = std::env::current_exe().expect("test binary");
        let o = self
            .command(
                exe.to_str().unwrap_or_default(),
                &[
                    "--exact",
                    "replay_helper",
                    "--nocapture",
                    "--test-threads",
                    "1",
                ],
            )
            .env(
                "STREAMCAP_PCAP_REPLAY",
                format!("{}|sca|{pps}", pcap.display()),
            )
            .output()
            .expect("run the replay");
        assert!(
            o.status.success(),
            "replay: {}\n{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        );
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        let _ = Command::new("ip")
            .args(["netns", "del", &self.name])
            .output();
    }
}

/// The replay [`Netns::replay`] asked for, if this process is one:
/// `STREAMCAP_PCAP_REPLAY=FILE|IFACE|PPS`.
pub fn replay_here() {
    let Ok(spec) = std::env::var("STREAMCAP_PCAP_REPLAY") else {
        return;
    };
    let parts: Vec<&str> = spec.split('|').collect();
    let [file, iface, pps] = parts[..] else {
        panic!("STREAMCAP_PCAP_REPLAY={spec}");
    };
    let mut src = FileSource::open(file).expect("open the capture");
    let mut inj = streamcap::source::Injector::open(iface).expect("open the interface");
    let stop = std::sync::atomic::AtomicBool::new(false);
    let r = streamcap::source::replay(&mut src, &mut inj, pps.parse().ok(), &stop);
    assert!(r.error.is_none(), "replay: {:?}", r.error);
    eprintln!("replayed {} frames", r.sent);
}

/// An unmodified program running under the library, stopped with SIGINT.
pub struct Running {
    child: Child,
    /// Everything it printed on stderr so far.
    stderr: std::sync::Arc<std::sync::Mutex<String>>,
}

impl Running {
    /// Starts `cmd` (prepared with its environment) and waits until its
    /// stderr shows `ready` (tcpdump: "listening on").
    pub fn start(mut cmd: Command, ready: &str) -> Running {
        cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
        let mut child = cmd.spawn().expect("start the program");
        let err = child.stderr.take().expect("stderr");
        let stderr = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
        let (tx, rx) = std::sync::mpsc::channel();
        let want = ready.to_string();
        let seen = stderr.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(err).lines().map_while(Result::ok) {
                let mut s = seen.lock().unwrap_or_else(|e| e.into_inner());
                s.push_str(&line);
                s.push('\n');
                if line.contains(&want) {
                    let _ = tx.send(());
                }
            }
            let _ = tx.send(());
        });
        let _ = rx.recv_timeout(Duration::from_secs(20));
        let r = Running { child, stderr };
        assert!(
            r.stderr().contains(ready),
            "the program did not get ready: {}",
            r.stderr()
        );
        r
    }

    /// What it printed on stderr so far.
    pub fn stderr(&self) -> String {
        self.stderr
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Sends SIGINT and waits for the end; (stdout, stderr).
    pub fn stop(mut self) -> (String, String) {
        // `ip netns exec` runs the program in its own place (exec), so
        // the signal reaches it.
        let _ = Command::new("kill")
            .args(["-INT", &self.child.id().to_string()])
            .status();
        let t = Instant::now();
        loop {
            if let Ok(Some(_)) = self.child.try_wait() {
                break;
            }
            if t.elapsed() > Duration::from_secs(20) {
                let _ = self.child.kill();
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let mut out = String::new();
        if let Some(mut o) = self.child.stdout.take() {
            use std::io::Read;
            let _ = o.read_to_string(&mut out);
        }
        std::thread::sleep(Duration::from_millis(50));
        (out, self.stderr())
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
