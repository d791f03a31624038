//! The command examples of the README and of docs/: the ```` ```console ````
//! blocks of the Markdown pages, parsed, and one example run and checked
//! (see `tests/docs.rs`, which runs them all, and `tests/kafka.rs`, which
//! runs the blocks marked `kafka` against a broker).

use super::skip;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The status of a command found outside a console block.
pub const NOT_RUN: i32 = -1000;

/// One example: where it is, the command, and what it prints.
#[derive(Debug)]
pub struct Example {
    /// The page and line.
    pub place: String,
    /// The command, continued lines joined.
    pub command: String,
    /// What it prints (stdout, then stderr), with snapbox's patterns.
    pub expected: String,
    /// Its exit status ([`NOT_RUN`]: a command outside a console block).
    pub status: i32,
    /// Marked `root`: a live capture.
    pub root: bool,
    /// Marked `kafka`: needs a Kafka broker on 127.0.0.1:9092 and a build
    /// with the `kafka` feature (run by tests/kafka.rs).
    pub kafka: bool,
    /// Marked `xdp`: needs a build with the `xdp` feature (run by
    /// tests/xdp.rs).
    pub xdp: bool,
    /// The console block it is in (the commands of a block share a folder).
    pub block: usize,
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
    /// Inside a console block (`root`: run as root only; `kafka`: with a
    /// broker; `xdp`: with the `xdp` feature).
    Console { root: bool, kafka: bool, xdp: bool },
}

pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The console examples of one Markdown page.
pub fn examples(page: &Path) -> Vec<Example> {
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
                        let tags: Vec<&str> = words.collect();
                        Block::Console {
                            root: tags.contains(&"root"),
                            kafka: tags.contains(&"kafka"),
                            xdp: tags.contains(&"xdp"),
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
        let (root, kafka, xdp) = match block {
            Block::Console { root, kafka, xdp } => (root, kafka, xdp),
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
                        kafka: false,
                        xdp: false,
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
                kafka,
                xdp,
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
pub fn pages() -> Vec<PathBuf> {
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
pub fn can_capture_live() -> bool {
    Command::new(super::BIN)
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

/// Runs one example in `dir`, with `path` as `PATH` and each `(from, to)`
/// of `replace` replaced in the command and in what it should print (a
/// broker's address); returns what went wrong, if anything.
pub fn check(ex: &Example, dir: &Path, path: &str, replace: &[(&str, &str)]) -> Result<(), String> {
    let mut cmd = ex.command.replace("cargo run --release -- ", "streamcap ");
    let mut expected = ex.expected.clone();
    for (from, to) in replace {
        cmd = cmd.replace(from, to);
        expected = expected.replace(from, to);
    }
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
    if ex.root && !ex.kafka && own_network_works() {
        // A network namespace of its own: the loopback interface carries
        // nothing but what the example sends, whatever else runs here.
        // (Not for an example that talks to a broker on the machine's
        // loopback.)
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

/// `PATH` with this build's `streamcap` first.
pub fn path_with_bin() -> String {
    let bin = Path::new(super::BIN);
    let bin_dir = bin.parent().expect("the binary's folder");
    format!(
        "{}:{}",
        bin_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    )
}

/// The scratch folders examples run in: a fresh one per console block
/// (its commands run in turn in it; no other block sees what they write),
/// holding links to some of the repository's folders; each is removed when
/// the next block starts, the last when this is dropped.
pub struct Scratch {
    prefix: &'static str,
    links: &'static [&'static str],
    current: Option<PathBuf>,
}

impl Scratch {
    /// Folders named `PREFIX-PID-PAGE-BLOCK` in the temporary folder, with
    /// links to `links` (`samples`, …) of the repository.
    pub fn new(prefix: &'static str, links: &'static [&'static str]) -> Scratch {
        Scratch {
            prefix,
            links,
            current: None,
        }
    }

    /// The folder of `ex`, a block of `page`: made when its block starts.
    pub fn folder(&mut self, page: &Path, ex: &Example) -> PathBuf {
        let dir = std::env::temp_dir().join(format!(
            "{}-{}-{}-{}",
            self.prefix,
            std::process::id(),
            page.file_name()
                .map(|n| n.to_string_lossy())
                .unwrap_or_default(),
            ex.block
        ));
        if self.current.as_ref() != Some(&dir) {
            if let Some(old) = self.current.take() {
                let _ = std::fs::remove_dir_all(old);
            }
            let _ = std::fs::remove_dir_all(&dir);
            std::fs::create_dir_all(&dir).expect("scratch folder");
            for link in self.links {
                std::os::unix::fs::symlink(repo().join(link), dir.join(link))
                    .expect("link into the repository");
            }
            self.current = Some(dir.clone());
        }
        dir
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        if let Some(old) = self.current.take() {
            let _ = std::fs::remove_dir_all(old);
        }
    }
}

/// What to do with one example.
pub enum Pick {
    /// Run it.
    Run,
    /// Not this runner's: pass over it silently.
    Other,
    /// Skip it, saying why.
    Skip(String),
    /// Count it as a failure, saying why.
    Fail(String),
}

/// Runs the examples of every page as `pick` decides, each in its
/// block's folder of a scratch folder named `prefix` (linking `links`),
/// with this build first on `PATH` and each `(from, to)` of `replace`
/// applied. An example of a `root` block is skipped with a message where a
/// live capture on `lo` is not possible. Fails listing every example that
/// printed something else; returns how many ran.
pub fn run_examples(
    prefix: &'static str,
    links: &'static [&'static str],
    replace: &[(&str, &str)],
    pick: impl Fn(&Example) -> Pick,
) -> usize {
    let path = path_with_bin();
    let live = can_capture_live();
    let (mut ran, mut failures) = (0, Vec::new());
    let mut scratch = Scratch::new(prefix, links);
    for page in pages() {
        for ex in examples(&page) {
            match pick(&ex) {
                Pick::Run => {}
                Pick::Other => continue,
                Pick::Skip(why) => {
                    crate::common::skip(format!("{}: {why}", ex.place));
                    continue;
                }
                Pick::Fail(why) => {
                    failures.push(format!("{}: {why}", ex.place));
                    continue;
                }
            }
            if ex.root && !live {
                crate::common::skip(format!(
                    "{}: live capture on lo is not possible here (needs root or CAP_NET_RAW)",
                    ex.place
                ));
                continue;
            }
            let dir = scratch.folder(&page, &ex);
            if let Err(e) = check(&ex, &dir, &path, replace) {
                failures.push(format!("{}: $ {}\n{e}", ex.place, ex.command));
            }
            ran += 1;
        }
    }
    drop(scratch);
    assert!(
        failures.is_empty(),
        "{} of {ran} examples differ:\n\n{}",
        failures.len(),
        failures.join("\n\n")
    );
    ran
}
