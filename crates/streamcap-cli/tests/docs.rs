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
//! are skipped with a message.
//!
//! A command of `streamcap` in any other code block of those pages fails
//! the test: every example is run.

mod common;

use common::skip;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The status of a command found outside a console block.
const NOT_RUN: i32 = -1000;

/// One example: where it is, the command, and what it prints.
#[derive(Debug)]
struct Example {
    place: String,
    command: String,
    expected: String,
    status: i32,
    root: bool,
    /// The console block it is in (the commands of a block share a folder).
    block: usize,
}

impl Example {
    /// Takes a last `[exit: N]` line of the expected output as the status.
    fn close(mut self) -> Example {
        let mut lines: Vec<&str> = self.expected.lines().collect();
        let code = lines
            .last()
            .and_then(|l| l.strip_prefix("[exit: "))
            .and_then(|l| l.strip_suffix(']'))
            .map(|c| {
                c.parse()
                    .unwrap_or_else(|_| panic!("{}: bad exit line", self.place))
            });
        if let Some(code) = code {
            self.status = code;
            lines.pop();
        }
        self.expected = lines.join("\n");
        self
    }
}

/// Where the parser is in a page.
enum Block {
    /// Outside any code block.
    Text,
    /// Inside a code block that is not run (`text`: a synopsis, whose
    /// lines may look like commands).
    Other { text: bool },
    /// Inside a console block (`root`: run as root only).
    Console { root: bool },
}

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The console examples of one Markdown page.
fn examples(page: &Path) -> Vec<Example> {
    let text = std::fs::read_to_string(page).unwrap_or_else(|e| panic!("{}: {e}", page.display()));
    let name = page
        .strip_prefix(repo())
        .unwrap_or(page)
        .display()
        .to_string();
    let mut out = Vec::new();
    let mut block = Block::Text;
    let mut blocks = 0;
    let mut current: Option<Example> = None;
    let mut continued = false;
    for (n, line) in text.lines().enumerate() {
        if let Some(info) = line.trim_start().strip_prefix("```") {
            block = match block {
                Block::Text => {
                    let mut words = info.split_whitespace();
                    if words.next() == Some("console") {
                        blocks += 1;
                        Block::Console {
                            root: words.any(|w| w == "root"),
                        }
                    } else {
                        Block::Other {
                            text: info.trim() == "text",
                        }
                    }
                }
                Block::Other { .. } | Block::Console { .. } => {
                    out.extend(current.take().map(Example::close));
                    Block::Text
                }
            };
            continue;
        }
        let root = match block {
            Block::Console { root } => root,
            Block::Other { text: false } => {
                let command = ["$ ", "streamcap ", "sudo streamcap "]
                    .iter()
                    .any(|p| line.starts_with(p));
                if command {
                    // An example that nothing runs.
                    out.push(Example {
                        place: format!("{name}:{}", n + 1),
                        command: line.to_string(),
                        expected: String::new(),
                        status: NOT_RUN,
                        root: false,
                        block: 0,
                    });
                }
                continue;
            }
            Block::Text | Block::Other { text: true } => continue,
        };
        if continued {
            if let Some(ex) = current.as_mut() {
                let part = line.trim_end();
                continued = part.ends_with('\\');
                ex.command.push(' ');
                ex.command.push_str(part.trim_end_matches('\\').trim());
            }
        } else if let Some(cmd) = line.strip_prefix("$ ") {
            out.extend(current.take().map(Example::close));
            let cmd = cmd.trim_end();
            continued = cmd.ends_with('\\');
            current = Some(Example {
                place: format!("{name}:{}", n + 1),
                command: cmd.trim_end_matches('\\').trim().to_string(),
                expected: String::new(),
                status: 0,
                root,
                block: blocks,
            });
        } else if let Some(ex) = current.as_mut() {
            ex.expected.push_str(line);
            ex.expected.push('\n');
        }
    }
    out
}

/// The pages whose examples are checked.
fn pages() -> Vec<PathBuf> {
    let mut pages = vec![repo().join("README.md")];
    if let Ok(rd) = std::fs::read_dir(repo().join("docs")) {
        let mut docs: Vec<PathBuf> = rd
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|e| e == "md"))
            .collect();
        docs.sort();
        pages.extend(docs);
    }
    pages
}

/// Whether live capture works here: root (or the capabilities) and an
/// `AF_PACKET` socket on the loopback interface.
fn can_capture_live() -> bool {
    Command::new(common::BIN)
        .args([
            "flows",
            "-i",
            "lo",
            "--duration",
            "0.1",
            "-q",
            "-o",
            "/dev/null",
        ])
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Whether a command can run in a network namespace of its own
/// (`unshare --net`, root) with its loopback interface up (`ip`).
fn own_network_works() -> bool {
    Command::new("unshare")
        .args(["--net", "ip", "link", "set", "lo", "up"])
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Runs one example in `dir`; returns what went wrong, if anything.
fn check(ex: &Example, dir: &Path, path: &str) -> Result<(), String> {
    let mut cmd = ex.command.replace("cargo run --release -- ", "streamcap ");
    let mut expected = ex.expected.clone();
    if ex.root {
        // Live capture: on the loopback interface, for a second.
        cmd = cmd.replace("sudo ", "").replace("eth0", "lo");
        expected = expected.replace("eth0", "lo");
        let words: Vec<&str> = cmd.split(' ').collect();
        let mut out = Vec::new();
        let mut i = 0;
        while i < words.len() {
            out.push(words[i]);
            if words[i] == "--duration" && i + 1 < words.len() {
                out.push("1");
                i += 1;
            }
            i += 1;
        }
        cmd = out.join(" ");
    }
    let mut runner = Command::new("sh");
    if ex.root && own_network_works() {
        // A network namespace of its own: the loopback interface carries
        // nothing but what the example sends, whatever else runs here.
        runner = Command::new("unshare");
        runner.args(["--net", "sh", "-c"]);
        cmd = format!("ip link set lo up && {cmd}");
    } else {
        runner.arg("-c");
    }
    let out = runner
        .arg(&cmd)
        .current_dir(dir)
        .env("PATH", path)
        .output()
        .map_err(|e| format!("sh: {e}"))?;
    let mut actual = String::from_utf8_lossy(&out.stdout).into_owned();
    actual.push_str(&String::from_utf8_lossy(&out.stderr));
    let status = out.status.code().unwrap_or(-1);
    if status != ex.status && actual.contains("install libpcap0.8 to use filters") {
        // Filters are compiled by libpcap, loaded at run time.
        skip(format!(
            "{}: a filter example, and libpcap is not installed (apt-get install libpcap0.8)",
            ex.place
        ));
        return Ok(());
    }
    if status != ex.status {
        return Err(format!(
            "exit status {status}, the page says {}\n{actual}",
            ex.status
        ));
    }
    snapbox::Assert::new()
        .normalize_paths(false)
        .try_eq(
            None,
            snapbox::Data::text(actual.trim_end()),
            snapbox::Data::text(expected),
        )
        .map_err(|e| e.to_string())
}

#[test]
fn every_console_example_prints_what_the_page_shows() {
    let bin = Path::new(common::BIN);
    let bin_dir = bin.parent().expect("the binary's folder");
    let path = format!(
        "{}:{}",
        bin_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let live = can_capture_live();
    let (mut ran, mut failures) = (0, Vec::new());
    // The scratch folder of the block being run, if any.
    let mut current: Option<PathBuf> = None;
    for page in pages() {
        for ex in examples(&page) {
            if ex.status == NOT_RUN {
                failures.push(format!(
                    "{}: `{}` is in a code block that is not run (make it a console block)",
                    ex.place, ex.command
                ));
                continue;
            }
            if ex.root && !live {
                skip(format!(
                    "{}: live capture on lo is not possible here (needs root or CAP_NET_RAW)",
                    ex.place
                ));
                continue;
            }
            // A fresh folder per console block: its commands run in turn
            // in it, and no other block sees what they write.
            let dir = std::env::temp_dir().join(format!(
                "streamcap-docs-{}-{}-{}",
                std::process::id(),
                page.file_name()
                    .map(|n| n.to_string_lossy())
                    .unwrap_or_default(),
                ex.block
            ));
            if current.as_ref() != Some(&dir) {
                if let Some(old) = current.take() {
                    let _ = std::fs::remove_dir_all(old);
                }
                let _ = std::fs::remove_dir_all(&dir);
                std::fs::create_dir_all(&dir).expect("scratch folder");
                std::os::unix::fs::symlink(repo().join("samples"), dir.join("samples"))
                    .expect("link the samples");
                current = Some(dir.clone());
            }
            if let Err(e) = check(&ex, &dir, &path) {
                failures.push(format!("{}: $ {}\n{e}", ex.place, ex.command));
            }
            ran += 1;
        }
    }
    if let Some(old) = current {
        let _ = std::fs::remove_dir_all(old);
    }
    assert!(
        failures.is_empty(),
        "{} of {ran} examples differ:\n\n{}",
        failures.len(),
        failures.join("\n\n")
    );
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
