//! The C library from C: the paper's example programs
//! (`examples/flow_stats.c`, `examples/pattern_match.c`) and
//! `tests/c/api_test.c` compiled against `include/streamcap.h` through
//! pkg-config and the `streamcap.pc` of this build, run on
//! `samples/sample.pcap`, compared with the command line and with the Rust
//! library, and run under valgrind's memcheck.
//!
//! The library is built by the first test that needs it (`cargo build -p
//! streamcap-c -p streamcap-cli`, same profile and target directory as
//! this test), since `cargo test` does not build a `cdylib` on its own.
//! Without a C compiler or pkg-config the tests say so and pass; without
//! valgrind, the valgrind test does.

use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;
use streamcap_core::deliver::Callbacks;
use streamcap_core::Capture;

/// Says why a test does not run, straight to stderr (the harness would
/// otherwise hide it).
fn skip(reason: &str) {
    let _ = writeln!(std::io::stderr(), "skipping: {reason}");
}

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn sample() -> PathBuf {
    workspace().join("samples/sample.pcap")
}

/// `target/<profile>`: where this test runs from (`deps/` below it).
fn profile_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("the test's path");
    exe.parent()
        .and_then(Path::parent)
        .expect("target/<profile>/deps/<test>")
        .to_path_buf()
}

/// What the tests use: the built library's directory, the command line.
struct Built {
    profile: PathBuf,
    cli: PathBuf,
}

/// Builds the C library and the command line once per test run.
fn built() -> &'static Built {
    static BUILT: OnceLock<Built> = OnceLock::new();
    BUILT.get_or_init(|| {
        let profile = profile_dir();
        let target = profile.parent().expect("target directory").to_path_buf();
        let name = profile
            .file_name()
            .and_then(|n| n.to_str())
            .expect("profile directory name")
            .to_string();
        let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
        let mut cmd = Command::new(cargo);
        cmd.current_dir(workspace())
            .args([
                "build",
                "-p",
                "streamcap-c",
                "-p",
                "streamcap-cli",
                "--target-dir",
            ])
            .arg(&target);
        match name.as_str() {
            "debug" => {}
            "release" => {
                cmd.arg("--release");
            }
            other => {
                cmd.args(["--profile", other]);
            }
        }
        let out = cmd.output().expect("run cargo");
        assert!(
            out.status.success(),
            "building the C library failed:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        for f in ["libstreamcap.so", "libstreamcap.a", "streamcap.pc"] {
            assert!(
                profile.join(f).exists(),
                "{} is missing after the build (streamcap.pc is written by \
                 crates/streamcap-c/build.rs: `touch crates/streamcap-c/build.rs` reruns it)",
                profile.join(f).display()
            );
        }
        Built {
            cli: profile.join("streamcap"),
            profile,
        }
    })
}

/// The C compiler, or `None` (with a message) when there is none, or no
/// pkg-config.
fn cc() -> Option<String> {
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    for (tool, arg) in [(cc.as_str(), "--version"), ("pkg-config", "--version")] {
        if Command::new(tool).arg(arg).output().is_err() {
            skip(&format!(
                "{tool} is not installed (Debian: gcc pkg-config; scripts/install-deps.sh)"
            ));
            return None;
        }
    }
    Some(cc)
}

/// `pkg-config ARGS streamcap` with `dir` on the search path, split.
fn pkg_config(dir: &Path, args: &[&str]) -> Vec<String> {
    let out = Command::new("pkg-config")
        .args(args)
        .arg("streamcap")
        .env("PKG_CONFIG_PATH", dir)
        .output()
        .expect("run pkg-config");
    assert!(
        out.status.success(),
        "pkg-config {args:?} streamcap (PKG_CONFIG_PATH={}): {}",
        dir.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .map(str::to_string)
        .collect()
}

/// Compiles `source` (relative to the crate) into `dir`, strictly, with
/// the flags `pkg-config --cflags --libs streamcap` gives for `pc_dir`.
fn compile(cc: &str, source: &str, dir: &Path, pc_dir: &Path) -> PathBuf {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join(source);
    let exe = dir.join(src.file_stem().expect("a file name"));
    let out = Command::new(cc)
        .args([
            "-std=c11",
            "-Wall",
            "-Wextra",
            "-Werror",
            "-pedantic",
            "-g",
            "-O1",
        ])
        .arg(&src)
        .args(pkg_config(pc_dir, &["--cflags", "--libs"]))
        .arg("-o")
        .arg(&exe)
        .output()
        .expect("run the C compiler");
    assert!(
        out.status.success(),
        "compiling {source} failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    exe
}

/// Runs `cmd`; panics with its output unless it exits 0.
fn run(cmd: &mut Command) -> Output {
    let out = cmd.output().expect("run the program");
    assert!(
        out.status.success(),
        "{cmd:?} failed ({}):\nstdout:\n{}\nstderr:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// The numbers of the output line that starts with `prefix` (`key value`
/// pairs after it).
fn numbers(stdout: &[u8], prefix: &str) -> HashMap<String, u64> {
    let text = String::from_utf8_lossy(stdout);
    let line = text
        .lines()
        .find(|l| l.starts_with(prefix))
        .unwrap_or_else(|| panic!("no line {prefix:?} in:\n{text}"));
    let words: Vec<&str> = line[prefix.len()..].split_whitespace().collect();
    words
        .chunks(2)
        .map(|kv| (kv[0].to_string(), kv[1].parse().expect("a number")))
        .collect()
}

/// What `streamcap flows -r samples/sample.pcap` says: the sums over its
/// records (flows, packets, bytes) and its statistics.
fn cli_flows(cli: &Path, dir: &Path) -> (HashMap<String, u64>, HashMap<String, u64>) {
    let stats_path = dir.join("stats.json");
    let out = run(Command::new(cli)
        .args(["flows", "-q", "-r"])
        .arg(sample())
        .arg("--stats-json")
        .arg(&stats_path));
    let (mut flows, mut packets, mut bytes, mut streams) = (0, 0, 0, 0);
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let r: serde_json::Value = serde_json::from_str(line).expect("a JSON record");
        flows += 1;
        for dir in ["orig", "resp"] {
            if let Some(d) = r.get(dir).filter(|d| !d.is_null()) {
                packets += d["pkts"].as_u64().expect("pkts");
                bytes += d["bytes"].as_u64().expect("bytes");
                streams += u64::from(d["pkts"].as_u64() > Some(0));
            }
        }
    }
    let totals = HashMap::from([
        ("flows".to_string(), flows),
        ("streams".to_string(), streams),
        ("packets".to_string(), packets),
        ("bytes".to_string(), bytes),
    ]);
    let s: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&stats_path).expect("stats JSON"))
            .expect("JSON");
    let created = &s["flows"]["created"];
    let stats = HashMap::from([
        (
            "packets".to_string(),
            s["packets"]["processed"].as_u64().expect("processed"),
        ),
        (
            "wire_bytes".to_string(),
            s["wire_bytes"].as_u64().expect("wire bytes"),
        ),
        (
            "flows".to_string(),
            ["tcp", "udp", "icmp", "other"]
                .iter()
                .map(|p| created[p].as_u64().expect("flows"))
                .sum(),
        ),
        (
            "streams".to_string(),
            s["streams"]["count"].as_u64().expect("streams"),
        ),
    ]);
    (totals, stats)
}

#[test]
fn flow_stats_in_c_gives_the_totals_of_streamcap_flows() {
    let Some(cc) = cc() else { return };
    let b = built();
    let dir = tempfile::tempdir().expect("a temporary directory");
    let exe = compile(&cc, "examples/flow_stats.c", dir.path(), &b.profile);
    let out = run(Command::new(&exe).arg(sample()));
    let totals = numbers(&out.stdout, "total ");
    let stats = numbers(&out.stdout, "stats ");
    let (cli_totals, cli_stats) = cli_flows(&b.cli, dir.path());
    assert_eq!(
        totals, cli_totals,
        "sums over the streams vs the CLI's records"
    );
    assert_eq!(stats, cli_stats, "sc_get_stats vs the CLI's statistics");
    // The shipped sample: 40 connections, 471 of its 472 packets in them
    // (two fragments make one datagram).
    assert_eq!(
        (totals["flows"], totals["packets"], stats["packets"]),
        (40, 471, 472)
    );
    // One line per stream before the totals.
    let lines = String::from_utf8_lossy(&out.stdout).lines().count() as u64;
    assert_eq!(lines, totals["streams"] + 2);
}

/// The streams of the sample whose bytes contain one of `patterns`, by
/// the Rust library: each stream's bytes collected whole (split at gaps,
/// which no match can span) and searched.
fn rust_matches(patterns: &[&str]) -> (u64, u64) {
    use std::cell::Cell;
    use std::rc::Rc;
    let pats: Vec<Vec<u8>> = patterns.iter().map(|p| p.as_bytes().to_vec()).collect();
    let (matched, all) = (Rc::new(Cell::new(0u64)), Rc::new(Cell::new(0u64)));
    let (m, a) = (matched.clone(), all.clone());
    let cb = Callbacks::<Vec<Vec<u8>>>::new()
        .on_data(|s, c| {
            let parts = s.state();
            if parts.is_empty() || c.gap.is_some() {
                parts.push(Vec::new());
            }
            if let Some(last) = parts.last_mut() {
                last.extend_from_slice(c.new_data());
            }
        })
        .on_close(move |s| {
            a.set(a.get() + 1);
            let hit = s.state().iter().any(|part| {
                pats.iter()
                    .any(|p| part.windows(p.len()).any(|w| w == p.as_slice()))
            });
            m.set(m.get() + u64::from(hit));
        });
    Capture::builder()
        .build()
        .run_file(sample(), cb)
        .expect("the sample");
    (matched.get(), all.get())
}

#[test]
fn pattern_match_in_c_finds_the_streams_rust_finds() {
    let Some(cc) = cc() else { return };
    let b = built();
    let dir = tempfile::tempdir().expect("a temporary directory");
    let exe = compile(&cc, "examples/pattern_match.c", dir.path(), &b.profile);
    let patterns = ["HTTP/1.1", "User-Agent:", "SSH-2.0"];
    let (want, streams) = rust_matches(&patterns);
    assert!(want > 0 && want < streams, "{want} of {streams}");
    // The default chunk size (whole streams in one chunk, mostly), and
    // 64-byte chunks, where patterns span chunks and only the overlap
    // finds them; one worker and two.
    for args in [
        &["-t", "1"][..],
        &["-t", "2"],
        &["-t", "1", "-c", "64"],
        &["-t", "2", "-c", "64"],
    ] {
        let out = run(Command::new(&exe).arg(sample()).args(args).args(patterns));
        let got = numbers(&out.stdout, "streams ");
        assert_eq!(
            (got["matched"], got["of"]),
            (want, streams),
            "pattern_match {args:?}"
        );
    }
    // Without patterns it searches the same three.
    let out = run(Command::new(&exe).arg(sample()));
    assert_eq!(numbers(&out.stdout, "streams ")["matched"], want);
}

/// Whether libpcap (for filters) can be loaded here.
fn have_libpcap() -> bool {
    streamcap_core::filter::libpcap::Libpcap::load().is_ok()
}

#[test]
fn the_api_contract_holds_from_c_and_panics_come_back_as_error_codes() {
    let Some(cc) = cc() else { return };
    let b = built();
    let dir = tempfile::tempdir().expect("a temporary directory");
    let exe = compile(&cc, "tests/c/api_test.c", dir.path(), &b.profile);
    let mut cmd = Command::new(&exe);
    cmd.arg(sample());
    if !have_libpcap() {
        skip("libpcap cannot be loaded: the filter checks only see SC_ERR_FILTER");
        cmd.arg("--no-libpcap");
    }
    let out = run(&mut cmd);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains(", 0 failed"), "{text}");
    // The forced panics were panics (their messages on stderr), and the
    // process lived on to report.
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("a panic forced inside sc_set_parameter"),
        "{err}"
    );
    assert!(err.contains("in a worker thread"), "{err}");
}

#[test]
fn the_static_library_links_too() {
    let Some(cc) = cc() else { return };
    let b = built();
    let dir = tempfile::tempdir().expect("a temporary directory");
    let exe = dir.path().join("flow_stats_static");
    // Libs.private with the archive in place of -lstreamcap.
    let libs: Vec<String> = pkg_config(&b.profile, &["--static", "--libs-only-l"])
        .into_iter()
        .filter(|l| l != "-lstreamcap")
        .collect();
    let out = Command::new(&cc)
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/flow_stats.c"))
        .args(pkg_config(&b.profile, &["--cflags"]))
        .arg(b.profile.join("libstreamcap.a"))
        .args(libs)
        .arg("-o")
        .arg(&exe)
        .output()
        .expect("run the C compiler");
    assert!(
        out.status.success(),
        "linking libstreamcap.a failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let ldd = Command::new("ldd").arg(&exe).output();
    if let Ok(ldd) = ldd {
        let text = String::from_utf8_lossy(&ldd.stdout);
        assert!(!text.contains("libstreamcap"), "{text}");
    }
    let out = run(Command::new(&exe).arg(sample()));
    assert_eq!(numbers(&out.stdout, "total ")["flows"], 40);
}

#[test]
fn the_install_script_installs_a_usable_copy() {
    let Some(cc) = cc() else { return };
    let b = built();
    let dir = tempfile::tempdir().expect("a temporary directory");
    let prefix = dir.path().join("prefix with space");
    run(Command::new("bash")
        .arg(workspace().join("scripts/install-c.sh"))
        .arg(&prefix)
        .arg("--from")
        .arg(&b.profile));
    for f in [
        "include/streamcap.h",
        "lib/libstreamcap.so",
        "lib/libstreamcap.a",
        "lib/pkgconfig/streamcap.pc",
    ] {
        assert!(prefix.join(f).is_file(), "{f} not installed");
    }
    let pc = std::fs::read_to_string(prefix.join("lib/pkgconfig/streamcap.pc")).expect("pc");
    assert!(pc.contains(&format!("prefix={}", prefix.display())), "{pc}");
    let header = std::fs::read(prefix.join("include/streamcap.h")).expect("header");
    let committed =
        std::fs::read(Path::new(env!("CARGO_MANIFEST_DIR")).join("include/streamcap.h"))
            .expect("header");
    assert_eq!(header, committed);
    // A prefix with a space in it is not something pkg-config's output
    // survives a shell split of; compile with the installed files through
    // a copy of the .pc at a plain path instead.
    let plain = dir.path().join("plain");
    std::fs::rename(&prefix, &plain).expect("rename");
    let pc = pc.replace(&prefix.display().to_string(), &plain.display().to_string());
    std::fs::write(plain.join("lib/pkgconfig/streamcap.pc"), pc).expect("write pc");
    let exe = compile(
        &cc,
        "examples/flow_stats.c",
        dir.path(),
        &plain.join("lib/pkgconfig"),
    );
    let out = run(Command::new(&exe)
        .arg(sample())
        .env("LD_LIBRARY_PATH", plain.join("lib")));
    assert_eq!(numbers(&out.stdout, "total ")["flows"], 40);
}

#[test]
fn valgrind_finds_no_error_and_no_leak() {
    let Some(cc) = cc() else { return };
    if Command::new("valgrind").arg("--version").output().is_err() {
        skip("valgrind is not installed (Debian: valgrind; scripts/install-deps.sh)");
        return;
    }
    let b = built();
    let dir = tempfile::tempdir().expect("a temporary directory");
    let flow_stats = compile(&cc, "examples/flow_stats.c", dir.path(), &b.profile);
    let pattern_match = compile(&cc, "examples/pattern_match.c", dir.path(), &b.profile);
    let api_test = compile(&cc, "tests/c/api_test.c", dir.path(), &b.profile);
    let no_libpcap = if have_libpcap() {
        None
    } else {
        Some("--no-libpcap")
    };
    let runs: [(&Path, Vec<&str>); 3] = [
        (&flow_stats, vec![]),
        (&pattern_match, vec!["-t", "2", "-c", "64"]),
        (&api_test, no_libpcap.into_iter().collect()),
    ];
    for (exe, args) in runs {
        let out = Command::new("valgrind")
            .args(["--error-exitcode=1", "--leak-check=full", "-q"])
            .arg(exe)
            .arg(sample())
            .args(&args)
            // Shorter panic messages in the log.
            .env("RUST_BACKTRACE", "0")
            .output()
            .expect("run valgrind");
        assert!(
            out.status.success(),
            "valgrind on {} {args:?}: {}\n{}",
            exe.display(),
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(
            !String::from_utf8_lossy(&out.stderr).contains("=="),
            "valgrind reported:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}
