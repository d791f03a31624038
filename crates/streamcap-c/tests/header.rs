//! `include/streamcap.h` is what cbindgen generates from the crate today.
//! `STREAMCAP_BLESS=1 cargo test -p streamcap-c --test header` rewrites it.

use std::path::Path;

#[test]
fn the_committed_header_is_cbindgens() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let config = cbindgen::Config::from_file(dir.join("cbindgen.toml")).expect("cbindgen.toml");
    let mut generated = Vec::new();
    cbindgen::Builder::new()
        .with_config(config)
        .with_src(dir.join("src/lib.rs"))
        .generate()
        .expect("cbindgen generates the header")
        .write(&mut generated);
    let generated = String::from_utf8(generated).expect("UTF-8");
    let path = dir.join("include/streamcap.h");
    if std::env::var_os("STREAMCAP_BLESS").is_some() {
        std::fs::write(&path, &generated).expect("write include/streamcap.h");
        return;
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    if committed != generated {
        let line = committed
            .lines()
            .zip(generated.lines())
            .position(|(a, b)| a != b)
            .unwrap_or_else(|| committed.lines().count().min(generated.lines().count()));
        panic!(
            "include/streamcap.h differs from what cbindgen generates from src/ \
             (first difference at line {}:\n  committed: {:?}\n  generated: {:?}).\n\
             Regenerate it with `STREAMCAP_BLESS=1 cargo test -p streamcap-c --test header` \
             and commit it (`git diff crates/streamcap-c/include` shows the change).",
            line + 1,
            committed.lines().nth(line).unwrap_or("(end of file)"),
            generated.lines().nth(line).unwrap_or("(end of file)"),
        );
    }
}
