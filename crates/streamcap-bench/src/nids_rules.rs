//! `streamcap-bench nids-rules`: a deterministic set of content rules in
//! Suricata syntax for the NIDS benchmark, read alike by `streamcap nids`,
//! Suricata and the libnids + Hyperscan peer (`bench/peers/nids_match.c`).
//!
//! Every rule is `alert PROTO any any -> any any (msg:"..."; content:"...";
//! [nocase;] sid:N; rev:1;)` with one content of 4 to 32 bytes. The rules
//! are one sequence drawn from one seed, and a set of N rules is its first N,
//! so the 100-rule set is part of the 1,000-rule set, which is part of the
//! 10,000-rule set. In that sequence:
//!
//! * the first three rules are the campus model's planted signatures
//!   ([`streamcap_gen::campus::default_signatures`], their first 32 bytes),
//!   which about 2 % of the campus flows carry;
//! * of the others, [`VOCABULARY_SHARE`] of the TCP rules are strings of the
//!   campus payloads ([`streamcap_gen::campus::vocabulary`] and the
//!   protocol lines of the campus scripts): server names as they appear in
//!   HTTP `Host` headers and SMTP dialogs, runs of three or four words of
//!   the text bodies (rare), runs of two words (common), HTTP request lines,
//!   `User-Agent`, `Server` and `Content-Type` headers, SMTP, FTP and SSH
//!   protocol lines; the rest are random: printable tokens, binary bytes, or
//!   printable bytes around a short binary block, of lengths skewed towards
//!   the short end as in published rule sets;
//! * [`UDP_SHARE`] of the rules are `udp` rules: half DNS query names in
//!   wire format (`|04|www3|07|example|03|org|00|`), half random;
//! * [`NOCASE_SHARE`] of the rules are `nocase`; a caseless vocabulary rule
//!   has its letters' case scrambled, so it still hits only because it is
//!   caseless.
//!
//! No pattern occurs twice in the sequence.

use std::collections::HashSet;

use streamcap_gen::campus::{default_signatures, host_name, vocabulary};
use streamcap_gen::nids::signature::content_string;
use streamcap_gen::SplitMix64;

/// Share of the TCP rules (after the planted ones) drawn from the campus
/// payloads' strings.
pub const VOCABULARY_SHARE: f64 = 0.15;
/// Share of the rules that are `udp` rules.
pub const UDP_SHARE: f64 = 0.05;
/// Share of the rules that are `nocase`.
pub const NOCASE_SHARE: f64 = 0.25;
/// The first sid; rule `i` (0-based) has sid `FIRST_SID + i`.
pub const FIRST_SID: u64 = 3_000_001;
/// Shortest and longest content, bytes.
pub const MIN_LEN: usize = 4;
/// See [`MIN_LEN`].
pub const MAX_LEN: usize = 32;

/// Protocol lines of the campus scripts (`streamcap-gen`'s
/// `campus/scripts.rs`): SMTP, FTP and SSH dialogs, HTTP response headers.
const PROTOCOL_LINES: &[&str] = &[
    "SSH-2.0-OpenSSH_9.6p1 Ubuntu",
    "SSH-2.0-PuTTY_Release_0.80",
    "SSH-2.0-OpenSSH_9.7",
    "SSH-2.0-OpenSSH_8.9p1 Debian",
    "ssh-ed25519",
    "EHLO client.campus.example.edu",
    "250-PIPELINING",
    "250-ENHANCEDSTATUSCODES",
    "250 2.1.0 Ok",
    "354 End data with",
    "MAIL FROM:<alice@",
    "MAIL FROM:<carol@",
    "MIME-Version: 1.0",
    "250 2.0.0 Ok: queued as",
    "221 2.0.0 Bye",
    "220 ProFTPD Server (Campus FTP)",
    "USER anonymous",
    "PASS guest@campus.example.edu",
    "230 Anonymous access granted",
    "215 UNIX Type: L8",
    "227 Entering Passive Mode",
    "150 Opening BINARY mode",
    "226 Transfer complete",
    "Server: nginx/1.24.0",
    "Server: Apache/2.4.58 (Ubuntu)",
    "Server: Microsoft-IIS/10.0",
    "Server: cloudflare",
    "Content-Type: image/png",
    "Content-Type: video/mp4",
    "Content-Type: application/json",
    "HTTP/1.1 404 Not Found",
    "HTTP/1.1 201 Created",
    "POST /upload HTTP/1.1",
    "Cache-Control: max-age=3600",
    "Accept-Language: en-US,en;q=0.5",
    "<!DOCTYPE html>",
    "ftypisom",
    "\u{1f}\u{8b}\u{8}\u{0}",
    "\u{89}PNG\r\n\u{1a}\n",
];

/// Bytes of random printable tokens: letters, digits and URL punctuation.
const TOKEN: &[u8] = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/._-=?&%";

/// One rule of the sequence.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BenchRule {
    /// `tcp` or `udp`.
    pub proto: &'static str,
    /// Where the pattern comes from (`planted`, `host`, `words`, ...).
    pub kind: &'static str,
    /// The content's bytes.
    pub pattern: Vec<u8>,
    /// Whether the rule is `nocase`.
    pub nocase: bool,
    /// The rule's sid.
    pub sid: u64,
}

impl BenchRule {
    /// The rule in Suricata syntax (one line, no newline).
    pub fn text(&self) -> String {
        format!(
            "alert {} any any -> any any (msg:\"nidsbench {} {}\"; content:\"{}\";{} sid:{}; rev:1;)",
            self.proto,
            self.kind,
            self.sid - FIRST_SID + 1,
            content_string(&self.pattern),
            if self.nocase { " nocase;" } else { "" },
            self.sid
        )
    }
}

/// The first `count` rules of the sequence of `seed`.
pub fn rules(count: usize, seed: u64) -> Vec<BenchRule> {
    let mut g = Gen {
        rng: SplitMix64::new(seed ^ 0x4e1d_5b3c),
        seen: HashSet::new(),
    };
    let mut out = Vec::with_capacity(count);
    for sig in default_signatures().into_iter().take(count) {
        let pattern = sig[..sig.len().min(MAX_LEN)].to_vec();
        g.seen.insert(pattern.clone());
        out.push(BenchRule {
            proto: "tcp",
            kind: "planted",
            pattern,
            nocase: false,
            sid: FIRST_SID + out.len() as u64,
        });
    }
    while out.len() < count {
        let udp = g.chance(UDP_SHARE);
        let nocase = g.chance(NOCASE_SHARE);
        let vocab = if udp { 0.5 } else { VOCABULARY_SHARE };
        let (kind, mut pattern) = if g.chance(vocab) {
            g.vocabulary(udp)
        } else {
            g.random()
        };
        if nocase && kind != "random" {
            scramble_case(&mut g.rng, &mut pattern);
        }
        out.push(BenchRule {
            proto: if udp { "udp" } else { "tcp" },
            kind,
            pattern,
            nocase,
            sid: FIRST_SID + out.len() as u64,
        });
    }
    out
}

/// The rules file: a comment saying how it was made, then one rule a line.
pub fn rules_text(count: usize, seed: u64) -> String {
    let mut s = format!(
        "# streamcap-bench nids-rules --count {count} --seed {seed}: {count} content rules \
         (the campus model's planted signatures, strings of its payloads, random patterns; \
         see crates/streamcap-bench/src/nids_rules.rs)\n"
    );
    for r in rules(count, seed) {
        s.push_str(&r.text());
        s.push('\n');
    }
    s
}

struct Gen {
    rng: SplitMix64,
    seen: HashSet<Vec<u8>>,
}

impl Gen {
    fn chance(&mut self, p: f64) -> bool {
        (self.rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64 <= p
    }

    /// A string of the campus payloads not drawn before (a random pattern
    /// after 16 draws that all were).
    fn vocabulary(&mut self, udp: bool) -> (&'static str, Vec<u8>) {
        for _ in 0..16 {
            let (kind, p) = if udp {
                ("dns", self.dns_name())
            } else {
                self.tcp_string()
            };
            if (MIN_LEN..=MAX_LEN).contains(&p.len()) && self.seen.insert(p.clone()) {
                return (kind, p);
            }
        }
        self.random()
    }

    fn tcp_string(&mut self) -> (&'static str, Vec<u8>) {
        let v = vocabulary();
        let r = &mut self.rng;
        // Weights: server names 4, runs of 3-4 words 4, of 2 words 1,
        // HTTP request lines and headers 1, protocol lines 1.
        match r.below(11) {
            0..=3 => {
                let h = host_name(r.below(v.servers));
                let s = match r.below(4) {
                    0 => format!("Host: {h}"),
                    1 => format!("RCPT TO:<info@{h}>"),
                    2 => format!("220 {h} ESMTP"),
                    _ => h,
                };
                ("host", s.into_bytes())
            }
            4..=7 => {
                let n = 3 + r.below(2) as usize;
                let words: Vec<&str> = (0..n).map(|_| *r.pick(v.words)).collect();
                ("words", words.join(" ").into_bytes())
            }
            8 => {
                let words = [*r.pick(v.words), *r.pick(v.words)];
                ("words", words.join(" ").into_bytes())
            }
            9 => {
                let s = match r.below(3) {
                    0 => format!("GET {} HTTP/1.1", r.pick(v.paths)),
                    1 => (*r.pick(v.paths)).to_string(),
                    _ => format!("User-Agent: {}", r.pick(v.user_agents)),
                };
                let mut b = s.into_bytes();
                b.truncate(MAX_LEN);
                ("http", b)
            }
            _ => ("protocol", r.pick(PROTOCOL_LINES).as_bytes().to_vec()),
        }
    }

    /// A DNS query name in wire format: a server name, or a word under one
    /// of the domains, as the campus DNS flows ask.
    fn dns_name(&mut self) -> Vec<u8> {
        let v = vocabulary();
        let name = if self.rng.chance(1, 2) {
            host_name(self.rng.below(v.servers))
        } else {
            format!("{}.{}", self.rng.pick(v.words), self.rng.pick(v.domains))
        };
        let mut out = Vec::new();
        for label in name.split('.') {
            out.push(label.len() as u8);
            out.extend_from_slice(label.as_bytes());
        }
        out.push(0);
        out
    }

    /// A random pattern not drawn before.
    fn random(&mut self) -> (&'static str, Vec<u8>) {
        loop {
            let r = &mut self.rng;
            let span = (MAX_LEN - MIN_LEN + 1) as u64;
            let len = MIN_LEN + r.below(span).min(r.below(span)) as usize;
            let p: Vec<u8> = match r.below(20) {
                // Printable tokens.
                0..=10 => (0..len).map(|_| *r.pick(TOKEN)).collect(),
                // Binary.
                11..=16 => r.bytes(len),
                // Printable with a binary block of 1 to 4 bytes.
                _ => {
                    let mut p: Vec<u8> = (0..len).map(|_| *r.pick(TOKEN)).collect();
                    let n = (1 + r.below(4) as usize).min(len);
                    let at = r.below((len - n + 1) as u64) as usize;
                    r.fill(&mut p[at..at + n]);
                    p
                }
            };
            if self.seen.insert(p.clone()) {
                return ("random", p);
            }
        }
    }
}

/// Flips the case of about half of the ASCII letters.
fn scramble_case(rng: &mut SplitMix64, p: &mut [u8]) {
    for b in p.iter_mut().filter(|b| b.is_ascii_alphabetic()) {
        if rng.chance(1, 2) {
            *b ^= 0x20;
        }
    }
}

/// `streamcap-bench nids-rules --count N -o FILE [--seed S]`.
pub fn cmd_nids_rules(args: &[String]) -> Result<(), String> {
    let (mut count, mut out, mut seed) = (None, None, 1u64);
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut val = || it.next().cloned().ok_or(format!("{a} needs a value"));
        match a.as_str() {
            "--count" => {
                count = Some(
                    val()?
                        .parse::<usize>()
                        .map_err(|e| format!("--count: {e}"))?,
                )
            }
            "-o" => out = Some(std::path::PathBuf::from(val()?)),
            "--seed" => seed = val()?.parse().map_err(|e| format!("--seed: {e}"))?,
            other => return Err(format!("unexpected argument {other}")),
        }
    }
    let count = count.ok_or("missing --count N")?;
    let out = out.ok_or("missing -o FILE")?;
    std::fs::write(&out, rules_text(count, seed))
        .map_err(|e| format!("writing {}: {e}", out.display()))?;
    eprintln!(
        "streamcap-bench: wrote {} ({count} rules, seed {seed})",
        out.display()
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sets_are_prefixes_and_deterministic() {
        let big = rules(2000, 1);
        let small = rules(300, 1);
        assert_eq!(&big[..300], &small[..]);
        assert_eq!(rules(300, 1), small);
        assert_ne!(rules(300, 2), small);
        let distinct: HashSet<&Vec<u8>> = big.iter().map(|r| &r.pattern).collect();
        assert_eq!(distinct.len(), big.len());
        assert!(big
            .iter()
            .all(|r| (MIN_LEN..=MAX_LEN).contains(&r.pattern.len())));
        assert_eq!(big[0].kind, "planted");
        assert_eq!(big[1].pattern, b"/etc/passwd%00");
        let sids: HashSet<u64> = big.iter().map(|r| r.sid).collect();
        assert_eq!(sids.len(), big.len());
    }

    #[test]
    fn shares_are_about_right() {
        let r = rules(10_000, 1);
        let share = |f: &dyn Fn(&BenchRule) -> bool| {
            r.iter().filter(|x| f(x)).count() as f64 / r.len() as f64
        };
        assert!((share(&|x| x.proto == "udp") - UDP_SHARE).abs() < 0.01);
        assert!((share(&|x| x.nocase) - NOCASE_SHARE).abs() < 0.02);
        let vocab = share(&|x| x.proto == "tcp" && x.kind != "random" && x.kind != "planted");
        assert!(
            (vocab - VOCABULARY_SHARE * (1.0 - UDP_SHARE)).abs() < 0.02,
            "{vocab}"
        );
    }

    #[test]
    fn rule_text_round_trips_through_the_parser() {
        let text = rules_text(500, 7);
        let parsed = streamcap_gen::nids::signature::parse_content;
        for (line, rule) in text.lines().skip(1).zip(rules(500, 7)) {
            let start = line.find("content:\"").expect("content") + 9;
            let end = start + line[start..].find('"').expect("closing quote");
            assert_eq!(parsed(&line[start..end]).expect("parses"), rule.pattern);
            assert_eq!(line.contains(" nocase;"), rule.nocase);
            assert!(line.starts_with(&format!("alert {} any any -> any any (", rule.proto)));
        }
    }
}
