//! Every command example of the README and of docs/ runs, and prints what
//! the page shows.
//!
//! The examples are the ```` ```console ```` blocks of `README.md` and
//! `docs/*.md`: a line `$ COMMAND` (continued by a trailing `\`) is run by
//! `sh -c` in a scratch folder that holds `samples/` (the shipped sample),
//! with this build's `streamcap` first on `PATH` (`cargo run --release --`
//! at the start of a command stands for it); the lines up to the next
//! command are what it prints, its standard output and then its standard
//! error, matched with snapbox's patterns (`...` on a line of its own: any
//! lines; `[..]`: any text within a line). A last line `[exit: N]` expects
//! exit status N instead of 0. Blocks marked ```` ```console root ```` (live
//! capture) run where a live capture on `lo` works (as root), with `sudo`
//! dropped, `eth0` read as `lo` and `--duration` cut to one second, in a
//! network namespace of their own where `unshare` and `ip` allow (so that
//! nothing else on the machine's loopback reaches them); elsewhere they
//! are skipped with a message. Blocks marked
//! ```` ```console kafka ```` need a Kafka broker and the `kafka` feature:
//! tests/kafka.rs runs them; here they are skipped with a message. So are
//! blocks marked ```` ```console root xdp ```` (the `xdp` feature),
//! which tests/xdp.rs runs.
//!
//! A command of `streamcap` in any other code block of those pages fails
//! the test: every example is run.

mod common;

use common::examples::{repo, run_examples, Pick, NOT_RUN};
use std::process::Command;

#[test]
fn every_console_example_prints_what_the_page_shows() {
    let ran = run_examples("streamcap-docs", &["samples"], &[], |ex| {
        if ex.status == NOT_RUN {
            Pick::Fail(format!(
                "`{}` is in a code block that is not run (make it a console block)",
                ex.command
            ))
        } else if ex.kafka {
            Pick::Skip(
                "needs a Kafka broker: `cargo test -p streamcap-cli --features kafka --test kafka` runs it"
                    .into(),
            )
        } else if ex.xdp {
            Pick::Skip("needs the xdp feature and root: scripts/test-xdp.sh runs it".into())
        } else {
            Pick::Run
        }
    });
    assert!(ran >= 5, "only {ran} console examples found");
}

/// The README's first command (the main job on the shipped sample) runs and
/// prints a record per connection of the sample and its summary.
#[test]
fn readme_first_command_runs_the_main_job_on_the_sample() {
    let text = std::fs::read_to_string(repo().join("README.md")).expect("README.md");
    let first = text
        .lines()
        .skip_while(|l| !l.starts_with("```"))
        .nth(1)
        .expect("a first code block");
    let command = first.split('#').next().unwrap_or_default().trim();
    assert!(
        command.starts_with("cargo run --release -- flows -r samples/sample.pcap"),
        "{command}"
    );
    let args: Vec<&str> = command
        .trim_start_matches("cargo run --release -- ")
        .split_whitespace()
        .collect();
    let out = Command::new(common::BIN)
        .args(&args)
        .current_dir(repo())
        .output()
        .expect("run streamcap");
    assert_eq!(out.status.code(), Some(0));
    let records = common::json_lines(&out.stdout);
    assert_eq!(records.len(), 40, "the sample's 40 connections");
    let summary = String::from_utf8_lossy(&out.stderr);
    assert!(
        summary.starts_with("streamcap: samples/sample.pcap"),
        "{summary}"
    );
}
