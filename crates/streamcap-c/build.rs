//! Writes `streamcap.pc` into the profile's output directory
//! (`target/debug/` or `target/release/`, beside `libstreamcap.so` and
//! `libstreamcap.a`), so that a C program builds against the library just
//! built with
//!
//! ```sh
//! PKG_CONFIG_PATH=target/release cc prog.c $(pkg-config --cflags --libs streamcap)
//! ```
//!
//! The file names absolute paths: the library's directory (also as a
//! run-time search path, so the program runs without `LD_LIBRARY_PATH`)
//! and the header's, `crates/streamcap-c/include`. `scripts/install-c.sh`
//! writes the installed variant, with the prefix's paths.

use std::path::{Path, PathBuf};

/// What a program linked with the static library also needs (Rust's
/// standard library on Linux: `rustc --print native-static-libs`).
const LIBS_PRIVATE: &str = "-lgcc_s -lutil -lrt -lpthread -lm -ldl -lc";

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    // OUT_DIR is <target>/<profile>/build/<package>-<hash>/out.
    let Some(profile_dir) = out.ancestors().nth(3) else {
        println!("cargo:warning=cannot find the profile directory above {out:?}: no streamcap.pc");
        return;
    };
    let manifest = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets it"));
    let include = manifest.join("include");
    let version = std::env::var("CARGO_PKG_VERSION").unwrap_or_default();
    let pc = pc_file(profile_dir, &include, &version);
    let path = profile_dir.join("streamcap.pc");
    // Rewritten only when it changes, so its time stamp means something.
    if std::fs::read_to_string(&path).ok().as_deref() != Some(pc.as_str()) {
        if let Err(e) = std::fs::write(&path, pc) {
            println!("cargo:warning=cannot write {}: {e}", path.display());
        }
    }
}

/// The text of the build tree's `streamcap.pc`.
fn pc_file(libdir: &Path, includedir: &Path, version: &str) -> String {
    // pkg-config splits on spaces; a backslash keeps one in a path.
    let esc = |p: &Path| p.display().to_string().replace(' ', "\\ ");
    format!(
        "# streamcap in its build tree (written by crates/streamcap-c/build.rs).\n\
         # scripts/install-c.sh PREFIX installs it with PREFIX's paths.\n\
         libdir={}\n\
         includedir={}\n\
         \n\
         Name: streamcap\n\
         Description: Stream-oriented network capture (the Scap API in C)\n\
         Version: {version}\n\
         Libs: -L${{libdir}} -Wl,-rpath,${{libdir}} -lstreamcap\n\
         Libs.private: {LIBS_PRIVATE}\n\
         Cflags: -I${{includedir}}\n",
        esc(libdir),
        esc(includedir),
    )
}
