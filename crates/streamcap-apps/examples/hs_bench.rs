//! Throughput of stream-mode literal matching: Hyperscan's stream mode
//! (loaded at run time) against aho-corasick's DFA and contiguous NFA walked
//! byte by byte with the state carried from chunk to chunk.
//!
//! ```sh
//! cargo run --release -p streamcap-apps --example hs_bench [-- MB]
//! ```
//!
//! A deterministic corpus of about MB megabytes (default 50; 1 MB = 10^6
//! bytes) is cut into flows of 1 MiB, each scanned through its own stream in
//! chunks of 1,460 bytes and of 16 KiB, for 100, 1,000 and 10,000 random
//! literals of 4 to 32 bytes, a quarter of them caseless. The corpus mixes
//! HTTP headers, HTML-like and JSON-like text and random binary. Of the
//! patterns, 1 % are cut from the corpus (they recur naturally), two thirds
//! of the rest are random printable strings and a third random bytes; one
//! occurrence of a random pattern is planted in every 4 KiB.
//!
//! aho-corasick has one case setting per automaton, so its automata are
//! ASCII-caseless and each match of an exact-case pattern is checked against
//! the bytes it covers, the last 31 bytes of the previous chunks being
//! carried with the state (the checking is included in the timings). Every
//! engine counts every (pattern, end) occurrence; the counts must agree.
//! Each figure is the best of three runs.
//!
//! Last run (2026-11-27, release build, 2-core AMD EPYC VM shared with other
//! jobs, libhyperscan5 5.4.0; MB/s for 1,460-byte / 16 KiB chunks; a first
//! run under heavier load was 10-50 % slower):
//!
//! | patterns | engine | compile | memory | state per stream | MB/s |
//! |---:|---|---:|---:|---:|---:|
//! | 100 | Hyperscan | 1.7 ms | 0.1 MB | 49 B | 3,584 / 4,037 |
//! | 100 | aho-corasick DFA | 2.8 ms | 1.7 MB | 4 B (+31 B carry) | 263 / 254 |
//! | 100 | aho-corasick contiguous NFA | 0.7 ms | 0.2 MB | 4 B (+31 B carry) | 152 / 153 |
//! | 1,000 | Hyperscan | 12.7 ms | 0.2 MB | 49 B | 3,001 / 3,570 |
//! | 1,000 | aho-corasick DFA | 31 ms | 16.9 MB | 4 B (+31 B carry) | 150 / 147 |
//! | 1,000 | aho-corasick contiguous NFA | 7.6 ms | 1.4 MB | 4 B (+31 B carry) | 138 / 140 |
//! | 10,000 | Hyperscan | 192 ms | 1.7 MB | 49 B | 1,285 / 1,421 |
//! | 10,000 | aho-corasick DFA | 410 ms | 169 MB | 4 B (+31 B carry) | 60 / 54 |
//! | 10,000 | aho-corasick contiguous NFA | 129 ms | 8.2 MB | 4 B (+31 B carry) | 73 / 85 |
//!
//! Occurrences found (all engines alike): 13,658, 12,220 and 22,661 in the
//! 50 MB.

use aho_corasick::automaton::{Automaton, StateID};
use aho_corasick::{dfa, nfa, Anchored, MatchKind};
use std::time::{Duration, Instant};
use streamcap_apps::nids::matcher::hyperscan::{HsDatabase, Hyperscan};

const FLOW: usize = 1 << 20;
const CHUNKS: [usize; 2] = [1460, 16 << 10];
const COUNTS: [usize; 3] = [100, 1_000, 10_000];
const RUNS: usize = 3;
const MAX_LEN: usize = 32;
/// One planted occurrence per this many bytes.
const PLANT_EVERY: usize = 4096;

/// splitmix64.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    fn pick<'a>(&mut self, list: &[&'a str]) -> &'a str {
        list[self.below(list.len())]
    }
}

const WORDS: &[&str] = &[
    "the",
    "of",
    "and",
    "to",
    "in",
    "is",
    "for",
    "on",
    "with",
    "as",
    "by",
    "this",
    "that",
    "from",
    "network",
    "packet",
    "stream",
    "server",
    "client",
    "session",
    "login",
    "password",
    "user",
    "admin",
    "error",
    "request",
    "response",
    "content",
    "length",
    "type",
    "application",
    "text",
    "html",
    "script",
    "function",
    "var",
    "return",
    "document",
    "window",
    "location",
    "cookie",
    "token",
    "select",
    "union",
    "insert",
    "update",
    "where",
    "value",
    "string",
    "number",
    "true",
    "false",
    "null",
    "data",
    "file",
    "download",
    "upload",
    "image",
    "video",
    "index",
    "search",
    "query",
    "result",
    "page",
    "news",
    "mail",
    "about",
    "contact",
    "privacy",
    "policy",
    "terms",
];
const HOSTS: &[&str] = &[
    "www.example.com",
    "api.example.net",
    "cdn.static.org",
    "mail.corp.local",
    "update.vendor.io",
];
const AGENTS: &[&str] = &[
    "Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0",
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0 Safari/537.36",
    "curl/8.5.0",
    "python-requests/2.31.0",
];
const TAGS: &[&str] = &["p", "div", "span", "a", "li", "td", "h2", "script"];

/// One segment of the corpus: HTTP header, HTML, JSON or binary.
fn segment(rng: &mut Rng, out: &mut Vec<u8>) {
    let words = |rng: &mut Rng, n: usize, out: &mut Vec<u8>| {
        for _ in 0..n {
            out.extend_from_slice(rng.pick(WORDS).as_bytes());
            out.push(b' ');
        }
    };
    match rng.below(20) {
        0..=3 => {
            let method = if rng.below(4) == 0 { "POST" } else { "GET" };
            out.extend_from_slice(format!("{method} /").as_bytes());
            for _ in 0..1 + rng.below(4) {
                out.extend_from_slice(rng.pick(WORDS).as_bytes());
                out.push(b'/');
            }
            out.extend_from_slice(
                format!(
                    "index.php?id={}&q={} HTTP/1.1\r\nHost: {}\r\nUser-Agent: {}\r\n\
                     Accept: text/html,application/xhtml+xml\r\nAccept-Encoding: gzip, deflate\r\n\
                     Cookie: session={:016x}\r\nConnection: keep-alive\r\n\r\n",
                    rng.below(100_000),
                    rng.pick(WORDS),
                    rng.pick(HOSTS),
                    rng.pick(AGENTS),
                    rng.next()
                )
                .as_bytes(),
            );
        }
        4..=8 => {
            out.extend_from_slice(
                b"HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=utf-8\r\n\r\n<html><body>\n",
            );
            for _ in 0..5 + rng.below(40) {
                let tag = rng.pick(TAGS);
                out.extend_from_slice(format!("<{tag} class=\"{}\">", rng.pick(WORDS)).as_bytes());
                let n = 3 + rng.below(20);
                words(rng, n, out);
                out.extend_from_slice(format!("</{tag}>\n").as_bytes());
            }
        }
        9..=10 => {
            out.extend_from_slice(b"{\"items\":[");
            for i in 0..3 + rng.below(30) {
                if i > 0 {
                    out.push(b',');
                }
                out.extend_from_slice(
                    format!(
                        "{{\"id\":{},\"{}\":\"{}\",\"{}\":{}}}",
                        rng.below(1 << 20),
                        rng.pick(WORDS),
                        rng.pick(WORDS),
                        rng.pick(WORDS),
                        rng.below(1000)
                    )
                    .as_bytes(),
                );
            }
            out.extend_from_slice(b"]}\n");
        }
        _ => {
            // Compressed or encrypted payload.
            let n = 500 + rng.below(8000);
            out.extend((0..n).map(|_| rng.next() as u8));
        }
    }
}

fn corpus(bytes: usize) -> Vec<u8> {
    let mut rng = Rng(0xc0_ffee);
    let mut out = Vec::with_capacity(bytes + (16 << 10));
    while out.len() < bytes {
        segment(&mut rng, &mut out);
    }
    out.truncate(bytes);
    out
}

/// `count` literals: 1 % cut from the corpus (they recur naturally), the
/// rest random, two thirds printable and one third any byte.
fn patterns(corpus: &[u8], count: usize, seed: u64) -> Vec<(Vec<u8>, bool)> {
    const PRINTABLE: &[u8] =
        b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 /.-_=&?%:;<>\"'";
    let mut rng = Rng(seed);
    (0..count)
        .map(|i| {
            let len = 4 + rng.below(MAX_LEN - 3);
            let p: Vec<u8> = if i % 100 == 0 {
                let at = rng.below(corpus.len() - len);
                corpus[at..at + len].to_vec()
            } else if i % 3 == 0 {
                (0..len).map(|_| rng.next() as u8).collect()
            } else {
                (0..len)
                    .map(|_| PRINTABLE[rng.below(PRINTABLE.len())])
                    .collect()
            };
            (p, rng.below(4) == 0)
        })
        .collect()
}

/// Writes one occurrence of a random pattern into every `PLANT_EVERY` bytes
/// of `corpus`, the letters of caseless ones in random case.
fn plant(corpus: &mut [u8], pats: &[(Vec<u8>, bool)], seed: u64) {
    let mut rng = Rng(seed);
    for block in corpus.chunks_mut(PLANT_EVERY) {
        let (p, nocase) = &pats[rng.below(pats.len())];
        if block.len() <= p.len() {
            continue;
        }
        let at = rng.below(block.len() - p.len());
        for (k, &b) in p.iter().enumerate() {
            block[at + k] = if *nocase && rng.below(2) == 0 {
                b.to_ascii_uppercase()
            } else {
                b
            };
        }
    }
}

/// The last `MAX_LEN - 1` bytes scanned, for checking exact-case matches that
/// began in an earlier chunk.
struct Tail {
    buf: [u8; MAX_LEN - 1],
    len: usize,
}

impl Tail {
    fn new() -> Tail {
        Tail {
            buf: [0; MAX_LEN - 1],
            len: 0,
        }
    }
    fn bytes(&self) -> &[u8] {
        &self.buf[..self.len]
    }
    fn push(&mut self, chunk: &[u8]) {
        let cap = self.buf.len();
        if chunk.len() >= cap {
            self.buf.copy_from_slice(&chunk[chunk.len() - cap..]);
            self.len = cap;
        } else {
            let keep = (cap - chunk.len()).min(self.len);
            self.buf.copy_within(self.len - keep..self.len, 0);
            self.buf[keep..keep + chunk.len()].copy_from_slice(chunk);
            self.len = keep + chunk.len();
        }
    }
}

/// Whether `p` ends at `end` of `chunk`, its start maybe in `tail`.
fn ends_with(tail: &[u8], chunk: &[u8], end: usize, p: &[u8]) -> bool {
    if p.len() <= end {
        &chunk[end - p.len()..end] == p
    } else {
        let from_tail = p.len() - end;
        tail.len() >= from_tail
            && tail[tail.len() - from_tail..] == p[..from_tail]
            && chunk[..end] == p[from_tail..]
    }
}

/// Scans `flows` through an aho-corasick automaton the streaming way; the
/// number of occurrences.
fn scan_ac<A: Automaton>(aut: &A, pats: &[(Vec<u8>, bool)], corpus: &[u8], chunk: usize) -> u64 {
    let start = aut.start_state(Anchored::No).expect("unanchored");
    let mut count = 0u64;
    for flow in corpus.chunks(FLOW) {
        let mut sid: StateID = start;
        let mut tail = Tail::new();
        for piece in flow.chunks(chunk) {
            for (i, &b) in piece.iter().enumerate() {
                sid = aut.next_state(Anchored::No, sid, b);
                if aut.is_special(sid) && aut.is_match(sid) {
                    for k in 0..aut.match_len(sid) {
                        let (p, nocase) = &pats[aut.match_pattern(sid, k).as_usize()];
                        if *nocase || ends_with(tail.bytes(), piece, i + 1, p) {
                            count += 1;
                        }
                    }
                }
            }
            tail.push(piece);
        }
    }
    count
}

fn scan_hs(db: &HsDatabase, corpus: &[u8], chunk: usize) -> u64 {
    let mut scratch = db.scratch().expect("scratch");
    let mut count = 0u64;
    for flow in corpus.chunks(FLOW) {
        let mut stream = db.open_stream().expect("stream");
        for piece in flow.chunks(chunk) {
            db.scan(&mut stream, &mut scratch, piece, &mut |_, _| count += 1)
                .expect("scan");
        }
    }
    count
}

/// The best of `RUNS` timings of `f`, and its result.
fn best(mut f: impl FnMut() -> u64) -> (Duration, u64) {
    let mut best = Duration::MAX;
    let mut result = 0;
    for _ in 0..RUNS {
        let t = Instant::now();
        result = std::hint::black_box(f());
        best = best.min(t.elapsed());
    }
    (best, result)
}

/// What a table row says about one engine at one pattern count.
struct Engine<'a> {
    patterns: usize,
    name: &'a str,
    compile: Duration,
    memory: usize,
    state: &'a str,
}

impl Engine<'_> {
    fn row(&self, chunk: usize, took: Duration, bytes: usize, matches: u64) {
        println!(
            "{:>8}  {:<16} {:>10.1} {:>10.1}  {:<8} {chunk:>6} {:>8.0} {matches:>10}",
            self.patterns,
            self.name,
            self.compile.as_secs_f64() * 1e3,
            self.memory as f64 / 1e6,
            self.state,
            bytes as f64 / 1e6 / took.as_secs_f64(),
        );
    }
}

fn main() {
    let mb: usize = std::env::args()
        .nth(1)
        .map(|a| a.parse().expect("MB is a number"))
        .unwrap_or(50);
    let base = corpus(mb * 1_000_000);
    let hs = match Hyperscan::load() {
        Ok(hs) => {
            println!("Hyperscan {} ({})", hs.version(), hs.name());
            Some(hs)
        }
        Err(e) => {
            println!("{e}: aho-corasick only");
            None
        }
    };
    println!(
        "corpus {:.1} MB in {} flows of 1 MiB; best of {RUNS} runs; MB = 10^6 bytes",
        base.len() as f64 / 1e6,
        base.len().div_ceil(FLOW)
    );
    println!(
        "{:>8}  {:<16} {:>10} {:>10}  {:<8} {:>6} {:>8} {:>10}",
        "patterns", "engine", "compile ms", "memory MB", "state", "chunk", "MB/s", "matches"
    );
    for (n, &count) in COUNTS.iter().enumerate() {
        let pats = patterns(&base, count, 7 + n as u64);
        let mut corpus = base.clone();
        plant(&mut corpus, &pats, 11 + n as u64);
        let mut counts = Vec::new();
        if let Some(hs) = &hs {
            let refs: Vec<(&[u8], bool)> = pats.iter().map(|(p, c)| (p.as_slice(), *c)).collect();
            let t = Instant::now();
            let db = HsDatabase::compile(hs, &refs).expect("compiles");
            let compile = t.elapsed();
            let state = format!("{} B", db.stream_size());
            let engine = Engine {
                patterns: count,
                name: "hyperscan",
                compile,
                memory: db.memory(),
                state: &state,
            };
            for chunk in CHUNKS {
                let (took, matches) = best(|| scan_hs(&db, &corpus, chunk));
                engine.row(chunk, took, corpus.len(), matches);
                counts.push(matches);
            }
        }
        // 4 bytes of StateID, plus the carried bytes for the exact-case check.
        let state = format!("4+{} B", MAX_LEN - 1);
        let t = Instant::now();
        let d = dfa::Builder::new()
            .match_kind(MatchKind::Standard)
            .ascii_case_insensitive(true)
            .build(pats.iter().map(|(p, _)| p))
            .expect("builds");
        let engine = Engine {
            patterns: count,
            name: "ac dfa",
            compile: t.elapsed(),
            memory: d.memory_usage(),
            state: &state,
        };
        for chunk in CHUNKS {
            let (took, matches) = best(|| scan_ac(&d, &pats, &corpus, chunk));
            engine.row(chunk, took, corpus.len(), matches);
            counts.push(matches);
        }
        drop(d);
        let t = Instant::now();
        let c = nfa::contiguous::Builder::new()
            .match_kind(MatchKind::Standard)
            .ascii_case_insensitive(true)
            .build(pats.iter().map(|(p, _)| p))
            .expect("builds");
        let engine = Engine {
            patterns: count,
            name: "ac contig. nfa",
            compile: t.elapsed(),
            memory: c.memory_usage(),
            state: &state,
        };
        for chunk in CHUNKS {
            let (took, matches) = best(|| scan_ac(&c, &pats, &corpus, chunk));
            engine.row(chunk, took, corpus.len(), matches);
            counts.push(matches);
        }
        assert!(
            counts.windows(2).all(|w| w[0] == w[1]),
            "the engines disagree: {counts:?}"
        );
    }
}
