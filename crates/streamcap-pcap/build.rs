//! Writes `streamcap-pcap.pc` into the profile's output directory, beside
//! `libstreamcap_pcap.so`, so that a C program that calls the added
//! functions builds with
//!
//! ```sh
//! PKG_CONFIG_PATH=target/release cc prog.c $(pkg-config --cflags --libs streamcap-pcap)
//! ```
//!
//! The library comes before `-lpcap` on the link line, so its functions are
//! the ones the program calls; it hands the rest on to libpcap.

use std::path::{Path, PathBuf};

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    // OUT_DIR is <target>/<profile>/build/<package>-<hash>/out.
    let Some(profile_dir) = out.ancestors().nth(3) else {
        println!(
            "cargo:warning=cannot find the profile directory above {out:?}: no streamcap-pcap.pc"
        );
        return;
    };
    let manifest = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets it"));
    let version = std::env::var("CARGO_PKG_VERSION").unwrap_or_default();
    let pc = pc_file(profile_dir, &manifest.join("include"), &version);
    let path = profile_dir.join("streamcap-pcap.pc");
    if std::fs::read_to_string(&path).ok().as_deref() != Some(pc.as_str()) {
        if let Err(e) = std::fs::write(&path, pc) {
            println!("cargo:warning=cannot write {}: {e}", path.display());
        }
    }
}

/// The text of the build tree's `streamcap-pcap.pc`.
fn pc_file(libdir: &Path, includedir: &Path, version: &str) -> String {
    let esc = |p: &Path| p.display().to_string().replace(' ', "\\ ");
    format!(
        "# libstreamcap_pcap in its build tree (written by crates/streamcap-pcap/build.rs).\n\
         libdir={}\n\
         includedir={}\n\
         \n\
         Name: streamcap-pcap\n\
         Description: libpcap with kernel fan-out, a configuration file, channels and locality buffering\n\
         Version: {version}\n\
         Requires: libpcap\n\
         Libs: -L${{libdir}} -Wl,-rpath,${{libdir}} -lstreamcap_pcap\n\
         Cflags: -I${{includedir}}\n",
        esc(libdir),
        esc(includedir),
    )
}
