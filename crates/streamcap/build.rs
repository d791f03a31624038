//! With the `xdp` feature, compiles the XDP programs (`bpf/flow_drop.bpf.c`,
//! the flow-drop stage, and `bpf/forward.bpf.c`, the devmap forwarder) for
//! the `bpf` target with clang; without it, does nothing (the default build
//! needs neither clang nor libbpf).

use std::path::PathBuf;
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-changed=bpf/flow_drop.bpf.c");
    println!("cargo:rerun-if-changed=bpf/forward.bpf.c");
    println!("cargo:rerun-if-env-changed=CLANG");
    if std::env::var_os("CARGO_FEATURE_XDP").is_none() {
        return;
    }
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    let clang = std::env::var("CLANG").unwrap_or_else(|_| "clang".into());
    // The kernel's uapi headers include <asm/types.h>, which Debian keeps
    // under the target's multiarch directory.
    let arch = std::env::var("CARGO_CFG_TARGET_ARCH").unwrap_or_default();
    let multiarch = match arch.as_str() {
        "x86_64" => "x86_64-linux-gnu",
        "aarch64" => "aarch64-linux-gnu",
        "riscv64" => "riscv64-linux-gnu",
        other => other,
    };
    for name in ["flow_drop", "forward"] {
        let status = Command::new(&clang)
            .args(["-O2", "-g", "-target", "bpf", "-Wall", "-Werror"])
            .arg(format!("-I/usr/include/{multiarch}"))
            .arg("-c")
            .arg(format!("bpf/{name}.bpf.c"))
            .arg("-o")
            .arg(out.join(format!("{name}.bpf.o")))
            .status();
        match status {
            Ok(s) if s.success() => {}
            Ok(s) => panic!(
                "the xdp feature: {clang} could not compile bpf/{name}.bpf.c ({s}); \
                 it needs libbpf-dev (bpf/bpf_helpers.h) and linux-libc-dev"
            ),
            Err(e) => panic!(
                "the xdp feature needs clang to compile the XDP programs ({clang}: {e}); \
                 install clang and libbpf-dev (apt-get install clang libbpf-dev)"
            ),
        }
    }
}
