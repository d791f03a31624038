//! The `pcap_config` fuzz target's checks (`fuzz/checks/pcap_config.rs`)
//! on the stored inputs of `fuzz/regressions/pcap_config/` and on
//! pseudo-random edits of them (bytes changed, grammar tokens inserted,
//! lines swapped), in the normal test suite (no nightly or cargo-fuzz
//! needed).

use std::path::{Path, PathBuf};

#[path = "../../../fuzz/checks/pcap_config.rs"]
mod pcap_config;

fn stored() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/regressions/pcap_config");
    let mut v: Vec<PathBuf> = std::fs::read_dir(&dir)
        .map(|rd| {
            rd.flatten()
                .map(|e| e.path())
                .filter(|p| p.is_file())
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    assert!(!v.is_empty(), "no stored inputs in {}", dir.display());
    v
}

fn read(f: &Path) -> Vec<u8> {
    std::fs::read(f).unwrap_or_else(|e| panic!("{}: {e}", f.display()))
}

#[test]
fn stored_inputs_pass_the_checks() {
    for f in stored() {
        eprintln!("pcap_config: {}", f.display());
        pcap_config::run(&read(&f));
    }
}

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

/// Pieces of the grammar an edit inserts.
const TOKENS: [&str; 28] = [
    "=",
    "@",
    ",",
    "-",
    "#",
    " # ",
    ">",
    "\n",
    "\r\n",
    ":1",
    ".",
    "0",
    "65535",
    "65536",
    "4095",
    "4096",
    "262144",
    "+rollover",
    "round_robin",
    "group_",
    "irq@",
    "fanout",
    "caplen@",
    "locality",
    "_channels@",
    "PCAP_GROUP_",
    "PCAP_IRQ_eth0_",
    "\u{e9}",
];

#[test]
fn edited_inputs_pass_the_checks() {
    let seeds: Vec<Vec<u8>> = stored().iter().map(|f| read(f)).collect();
    let mut rng = Rng(0x7063_6170_636f_6e66);
    for i in 0..3000 {
        let mut d = seeds[i % seeds.len()].clone();
        for _ in 0..1 + rng.below(6) {
            match rng.below(4) {
                0 if !d.is_empty() => {
                    let at = rng.below(d.len());
                    d[at] = rng.next() as u8;
                }
                1 => {
                    let at = rng.below(d.len() + 1);
                    let token = TOKENS[rng.below(TOKENS.len())].as_bytes();
                    d.splice(at..at, token.iter().copied());
                }
                2 if !d.is_empty() => {
                    let at = rng.below(d.len());
                    let len = rng.below(8).min(d.len() - at);
                    d.drain(at..at + len);
                }
                _ => {
                    // Two lines change places.
                    let text = String::from_utf8_lossy(&d).into_owned();
                    let mut lines: Vec<&str> = text.lines().collect();
                    if lines.len() > 1 {
                        let (a, b) = (rng.below(lines.len()), rng.below(lines.len()));
                        lines.swap(a, b);
                    }
                    d = lines.join("\n").into_bytes();
                }
            }
        }
        pcap_config::run(&d);
    }
}
