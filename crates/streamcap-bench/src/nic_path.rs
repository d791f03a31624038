//! `xdp-cutoff --nic-path`: frames that reach the capture interface the
//! way a NIC hands them to its driver, as raw buffers before any
//! `sk_buff` exists, so that a native XDP program there (streamcap's
//! `--xdp`) runs where it would in a NIC driver.
//!
//! On a plain veth pair the sender's `AF_PACKET` socket builds an
//! `sk_buff` for every frame, and the receiving veth's XDP hook runs on
//! that buffer (copying it when it lacks XDP's headroom). Here a second
//! pair `scc` ↔ `scd` is added to the namespace; an XDP program on `scb`
//! redirects every frame to `scc` (`bench/peers/xdp_redirect.bpf.c`), and
//! `scc` hands it to `scd` as an XDP frame. The receivers capture on
//! `scd`. A veth takes redirected frames only while it has an XDP program,
//! so `scd` carries a pass-everything program (`xdp_pass.bpf.c`; it then
//! builds an `sk_buff` for each frame, as a driver without XDP does),
//! which is taken off while streamcap's own program is on. The cost of the
//! first hop (the sender's buffer, the redirect) is the same for every
//! receiver and is in the baseline.

use crate::live::Netns;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The two programs' sources (bench/peers), built into the benchmark.
const REDIRECT_SRC: &str = include_str!("../../../bench/peers/xdp_redirect.bpf.c");
const PASS_SRC: &str = include_str!("../../../bench/peers/xdp_pass.bpf.c");

/// The capture interface of the NIC path.
pub(crate) const IFACE: &str = "scd";

/// The second veth pair, the redirect on `scb` and the pass program's
/// object (for putting it back on `scd`).
pub(crate) struct NicPath {
    pass: PathBuf,
}

impl NicPath {
    /// Adds `scc` ↔ `scd` (MTU 9000, up) to `ns`, compiles the two
    /// programs in `tmp` with clang, attaches the redirect to `scb` and the
    /// pass program to `scd`.
    pub(crate) fn new(ns: &Netns, tmp: &Path) -> Result<NicPath, String> {
        for args in [
            &[
                "link", "add", "name", "scc", "type", "veth", "peer", "name", "scd",
            ][..],
            &["link", "set", "dev", "scc", "mtu", "9000"],
            &["link", "set", "dev", "scd", "mtu", "9000"],
            &["link", "set", "dev", "scc", "up"],
            &["link", "set", "dev", "scd", "up"],
        ] {
            ip(ns, args)?;
        }
        let out = ns
            .cmd(&["cat", "/sys/class/net/scc/ifindex"])
            .output()
            .map_err(|e| format!("reading scc's index: {e}"))?;
        let scc: u32 = String::from_utf8_lossy(&out.stdout)
            .trim()
            .parse()
            .map_err(|e| format!("scc's index: {e}"))?;
        let (rsrc, psrc) = (tmp.join("xdp_redirect.bpf.c"), tmp.join("xdp_pass.bpf.c"));
        for (path, text) in [(&rsrc, REDIRECT_SRC), (&psrc, PASS_SRC)] {
            std::fs::write(path, text).map_err(|e| format!("{}: {e}", path.display()))?;
        }
        let redirect = compile(
            &rsrc,
            &tmp.join("xdp_redirect.o"),
            &[format!("-DTARGET_IFINDEX={scc}")],
        )?;
        let pass = compile(&psrc, &tmp.join("xdp_pass.o"), &[])?;
        attach(ns, "scb", &redirect)?;
        let path = NicPath { pass };
        path.restore(ns)?;
        Ok(path)
    }

    /// Takes the pass program off `scd` (before streamcap attaches its own).
    pub(crate) fn free(&self, ns: &Netns) -> Result<(), String> {
        ip(ns, &["link", "set", "dev", IFACE, "xdpdrv", "off"])
    }

    /// Puts the pass program back on `scd`.
    pub(crate) fn restore(&self, ns: &Netns) -> Result<(), String> {
        attach(ns, IFACE, &self.pass)
    }
}

/// `ip link ...` in `ns`.
fn ip(ns: &Netns, args: &[&str]) -> Result<(), String> {
    let mut full = vec!["ip"];
    full.extend_from_slice(args);
    let o = ns
        .cmd(&full)
        .output()
        .map_err(|e| format!("cannot run ip: {e}"))?;
    if o.status.success() {
        Ok(())
    } else {
        Err(format!(
            "ip {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&o.stderr).trim()
        ))
    }
}

/// Attaches the program of object `obj` (section `xdp.frags`) to `dev`
/// in the driver's hook.
fn attach(ns: &Netns, dev: &str, obj: &Path) -> Result<(), String> {
    let obj = obj.to_str().ok_or("a program path that is not UTF-8")?;
    ip(
        ns,
        &[
            "link",
            "set",
            "dev",
            dev,
            "xdpdrv",
            "obj",
            obj,
            "sec",
            "xdp.frags",
        ],
    )
}

/// Compiles a BPF program with clang (`$CLANG` names another).
fn compile(src: &Path, out: &Path, defs: &[String]) -> Result<PathBuf, String> {
    let clang = std::env::var("CLANG").unwrap_or_else(|_| "clang".into());
    let multiarch = format!("-I/usr/include/{}-linux-gnu", std::env::consts::ARCH);
    let o = Command::new(&clang)
        .args(["-O2", "-g", "-target", "bpf", &multiarch])
        .args(defs)
        .arg("-c")
        .arg(src)
        .arg("-o")
        .arg(out)
        .output()
        .map_err(|e| {
            format!("{clang} (clang and libbpf-dev compile the NIC path's programs): {e}")
        })?;
    if !o.status.success() {
        return Err(format!(
            "{clang} {}: {}",
            src.display(),
            String::from_utf8_lossy(&o.stderr).trim()
        ));
    }
    Ok(out.to_path_buf())
}
