//! A network namespace with a veth pair for the live tests (AF_PACKET,
//! AF_XDP): both ends live in it, IPv6 is off and no address is set, so the
//! kernel itself sends nothing on the pair.
#![allow(dead_code)]

use std::fs::File;
use std::os::fd::AsRawFd;
use std::process::Command;

/// The sending end of the veth pair.
pub const TX: &str = "sca";
/// The capturing end.
pub const RX: &str = "scb";

/// A network namespace holding a veth pair `sca`/`scb` (MTU 9000, up, no
/// IPv6); deleted on drop, also when the test fails.
pub struct Netns {
    /// The namespace's name (`ip netns`).
    pub name: String,
}

/// Runs a command; the error gives its stderr.
pub fn run_cmd(args: &[&str]) -> Result<(), String> {
    let out = Command::new(args[0])
        .args(&args[1..])
        .output()
        .map_err(|e| format!("cannot run {}: {e}", args[0]))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "`{}` failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

/// Whether the process runs as root.
pub fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("Uid:"))
                .and_then(|l| l.split_whitespace().nth(2).map(|uid| uid == "0"))
        })
        .unwrap_or(false)
}

impl Netns {
    /// Creates the namespace and its veth pair.
    pub fn create(test: &str) -> Result<Netns, String> {
        if !is_root() {
            return Err("not root".into());
        }
        run_cmd(&["ip", "-V"]).map_err(|e| format!("`ip` is missing: {e}"))?;
        let name = format!("streamcap-{}-{test}", std::process::id());
        run_cmd(&["ip", "netns", "add", &name])
            .map_err(|e| format!("cannot create a network namespace: {e}"))?;
        let ns = Netns { name };
        let n = ns.name.as_str();
        run_cmd(&[
            "ip", "-n", n, "link", "add", TX, "type", "veth", "peer", "name", RX,
        ])?;
        for dev in [TX, RX] {
            run_cmd(&["ip", "-n", n, "link", "set", dev, "mtu", "9000"])?;
        }
        if std::path::Path::new("/proc/sys/net/ipv6").exists() {
            run_cmd(&[
                "ip",
                "netns",
                "exec",
                n,
                "sysctl",
                "-q",
                "-w",
                "net.ipv6.conf.all.disable_ipv6=1",
                "net.ipv6.conf.default.disable_ipv6=1",
            ])?;
        }
        for dev in [TX, RX] {
            run_cmd(&["ip", "-n", n, "link", "set", dev, "up"])?;
        }
        Ok(ns)
    }

    /// Runs `f` on a thread that has entered the namespace; sockets it
    /// creates belong to the namespace wherever they are used later.
    pub fn run<T: Send>(&self, f: impl FnOnce() -> T + Send) -> T {
        let path = format!("/run/netns/{}", self.name);
        std::thread::scope(|s| {
            s.spawn(move || {
                let file = File::open(&path).unwrap_or_else(|e| panic!("open {path}: {e}"));
                // SAFETY: setns with a valid descriptor of a network
                // namespace file and CLONE_NEWNET only switches the network
                // namespace of the calling thread (a thread of our own,
                // ending with this closure); no memory is involved.
                let rc = unsafe { libc::setns(file.as_raw_fd(), libc::CLONE_NEWNET) };
                assert_eq!(rc, 0, "setns {path}: {}", std::io::Error::last_os_error());
                f()
            })
            .join()
            .unwrap_or_else(|p| std::panic::resume_unwind(p))
        })
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        if let Err(e) = run_cmd(&["ip", "netns", "del", &self.name]) {
            eprintln!("warning: {e}");
        }
    }
}

/// The namespace for `test`, or `None` after printing why the test is skipped.
pub fn setup(test: &str) -> Option<Netns> {
    match Netns::create(test) {
        Ok(ns) => Some(ns),
        Err(reason) => {
            super::skip(reason);
            None
        }
    }
}
