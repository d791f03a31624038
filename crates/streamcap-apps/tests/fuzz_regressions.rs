//! The `rules`, `nids_match` and `http_stream` fuzz targets' checks
//! (`fuzz/checks/`) on the stored inputs of
//! `fuzz/regressions/{rules,nids_match,http_stream}/`, on every rule file
//! Suricata installs and on pseudo-random inputs, in the normal test suite
//! (no nightly or cargo-fuzz needed).

use std::path::{Path, PathBuf};

#[path = "../../../fuzz/checks/rules.rs"]
mod rules;

#[path = "../../../fuzz/checks/nids_match.rs"]
mod nids_match;

#[path = "../../../fuzz/checks/http_stream.rs"]
mod http_stream;

fn files(dir: &Path, ext: Option<&str>) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.flatten()
                .map(|e| e.path())
                .filter(|p| p.is_file())
                .filter(|p| ext.is_none_or(|x| p.extension().is_some_and(|e| e == x)))
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

#[test]
fn stored_rule_inputs_pass_the_checks() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/regressions/rules");
    let inputs = files(&dir, None);
    assert!(!inputs.is_empty(), "no stored inputs in {}", dir.display());
    for f in inputs {
        eprintln!("rules: {}", f.display());
        rules::run(&std::fs::read(&f).unwrap_or_else(|e| panic!("{}: {e}", f.display())));
    }
}

#[test]
fn suricata_rule_files_pass_the_checks() {
    for dir in ["/etc/suricata/rules", "/usr/share/suricata/rules"] {
        for f in files(Path::new(dir), Some("rules")) {
            rules::run(&std::fs::read(&f).unwrap_or_else(|e| panic!("{}: {e}", f.display())));
        }
    }
}

#[test]
fn stored_matching_inputs_pass_the_checks() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/regressions/nids_match");
    let inputs = files(&dir, None);
    assert!(!inputs.is_empty(), "no stored inputs in {}", dir.display());
    for f in inputs {
        nids_match::run(&std::fs::read(&f).unwrap_or_else(|e| panic!("{}: {e}", f.display())));
    }
}

/// Pseudo-random inputs for the matching check: short patterns over a
/// small alphabet, so that they occur, overlap and straddle the cuts.
#[test]
fn random_matching_inputs_pass_the_checks() {
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    for _ in 0..60 {
        let mut input = vec![next() as u8, next() as u8 % 8];
        let alphabet = b"abcAB\x00";
        for _ in 0..=input[1] {
            let len = 1 + next() as u8 % 5;
            input.push(len - 1);
            input.extend((0..len).map(|_| alphabet[next() as usize % alphabet.len()]));
        }
        let ncut = next() as u8 % 12;
        input.push(ncut);
        input.extend((0..ncut).map(|_| next() as u8 % 9));
        input.extend((0..200 + next() % 300).map(|_| alphabet[next() as usize % alphabet.len()]));
        nids_match::run(&input);
    }
}

#[test]
fn stored_http_inputs_pass_the_checks() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/regressions/http_stream");
    let inputs = files(&dir, None);
    assert!(!inputs.is_empty(), "no stored inputs in {}", dir.display());
    for f in inputs {
        eprintln!("http_stream: {}", f.display());
        http_stream::run(&std::fs::read(&f).unwrap_or_else(|e| panic!("{}: {e}", f.display())));
    }
}

/// Pseudo-random conversations for the HTTP check: pieces of requests,
/// responses, framing and noise, shuffled between the directions, some
/// gaps; and the stored inputs mutated byte by byte.
#[test]
fn random_http_inputs_pass_the_checks() {
    let mut x: u64 = 0x2545_f491_4f6c_dd1d;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let parts: [&[u8]; 16] = [
        b"GET / HTTP/1.1\r\n",
        b"HEAD /h HTTP/1.0\r\n",
        b"POST /p HTTP/1.1\r\n",
        b"CONNECT a:1 HTTP/1.1\r\n",
        b"HTTP/1.1 200 OK\r\n",
        b"HTTP/1.1 100 Continue\r\n",
        b"HTTP/1.1 101 Switching\r\n",
        b"HTTP/1.0 304 NM\r\n",
        b"Content-Length: 3\r\n",
        b"Transfer-Encoding: chunked\r\n",
        b"Host: h\r\nUpgrade: x\r\n",
        b"\r\n",
        b"3;e\r\nabc\r\n0\r\n\r\n",
        b"xyz\n",
        b"\x00\xff",
        b"Authorization: Basic dTpw\r\n",
    ];
    for _ in 0..300 {
        let mut input = vec![next() as u8];
        for _ in 0..next() % 12 {
            let dir = (next() % 2) as u8;
            if next() % 9 == 0 {
                input.extend([dir | 2, (next() % 40) as u8]);
                continue;
            }
            let mut seg = Vec::new();
            for _ in 0..1 + next() % 6 {
                seg.extend_from_slice(parts[(next() % parts.len() as u64) as usize]);
            }
            seg.truncate(256);
            input.extend([dir, (seg.len() - 1) as u8]);
            input.extend(seg);
        }
        http_stream::run(&input);
    }
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/regressions/http_stream");
    for f in files(&dir, None) {
        let base = std::fs::read(&f).unwrap_or_default();
        for _ in 0..20 {
            let mut m = base.clone();
            for _ in 0..1 + next() % 4 {
                let i = (next() % m.len().max(1) as u64) as usize;
                if let Some(b) = m.get_mut(i) {
                    *b = next() as u8;
                }
            }
            http_stream::run(&m);
        }
    }
}
