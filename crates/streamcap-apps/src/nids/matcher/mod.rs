//! Multi-pattern matchers with state carried across a stream's chunks.
//!
//! A [`Matcher`] holds every fast pattern of a rule set in one automaton.
//! Each stream direction has a [`ScanState`]: the automaton's state after
//! the last byte scanned, so that the next chunk continues where the last
//! one stopped and a pattern split across segments or chunks is found
//! without scanning any byte twice. A gap in the stream (bytes never seen)
//! resets the state: no match spans a gap.
//!
//! Two engines: the `aho-corasick` crate's automata walked by hand
//! ([`aho`]), always available, and Hyperscan's stream mode, used when
//! `libhs.so.5` can be loaded at run time.

pub(crate) mod aho;
pub mod hyperscan;

use aho::{AhoMatcher, AhoState};
use hyperscan::{HsDatabase, HsScratch, HsStream, Hyperscan};

/// Which automaton scans the streams.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub enum EngineKind {
    /// The `aho-corasick` crate (a DFA, or a contiguous NFA for large sets).
    #[default]
    AhoCorasick,
    /// Hyperscan's stream mode (needs `libhs.so.5`, Debian's `libhyperscan5`).
    Hyperscan,
}

impl EngineKind {
    /// The name used on the command line.
    pub fn name(self) -> &'static str {
        match self {
            EngineKind::AhoCorasick => "aho-corasick",
            EngineKind::Hyperscan => "hyperscan",
        }
    }
}

impl EngineKind {
    /// Whether Hyperscan can be used here (its library loads and the CPU
    /// has what it needs); the reason if not.
    pub fn hyperscan_available() -> Result<(), String> {
        Hyperscan::load().map(|_| ()).map_err(|e| e.to_string())
    }

    /// Hyperscan where it can be used, else aho-corasick.
    pub fn auto() -> EngineKind {
        if Self::hyperscan_available().is_ok() {
            EngineKind::Hyperscan
        } else {
            EngineKind::AhoCorasick
        }
    }
}

impl std::str::FromStr for EngineKind {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "aho-corasick" | "ac" => Ok(EngineKind::AhoCorasick),
            "hyperscan" | "hs" => Ok(EngineKind::Hyperscan),
            _ => Err(format!(
                "unknown engine {s:?} (expected aho-corasick or hyperscan)"
            )),
        }
    }
}

/// One occurrence of a pattern.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Hit {
    /// The pattern's index in the list the matcher was built from.
    pub pattern: u32,
    /// Stream offset just past the occurrence's last byte.
    pub end: u64,
    /// Whether the occurrence is confirmed as the pattern asks. `false`
    /// for a case-sensitive pattern found by a caseless automaton: its
    /// bytes must still be compared.
    pub exact: bool,
}

/// The automaton of one set of patterns.
#[derive(Debug)]
pub struct Matcher {
    engine: Inner,
    /// For each automaton pattern: our patterns it stands for.
    to_patterns: Vec<Vec<u32>>,
    /// Per pattern: whether a hit is exact (see [`Hit::exact`]).
    exact: Vec<bool>,
    /// The longest pattern's length.
    max_len: usize,
}

#[derive(Debug)]
enum Inner {
    /// No pattern: nothing ever matches.
    Empty,
    Aho(Box<AhoMatcher>),
    Hs(HsDatabase),
}

/// A stream direction's scan position.
#[derive(Debug)]
pub struct ScanState {
    aho: AhoState,
    /// The Hyperscan stream, opened at the first scan.
    hs: Option<HsStream>,
    /// Stream offset of the first byte the Hyperscan stream scanned (its
    /// match offsets count from there).
    origin: u64,
    /// Stream offset the next scanned byte must have; another offset means
    /// a gap, and the state is reset.
    next: u64,
}

/// What one thread needs to scan with a [`Matcher`] (Hyperscan's scratch
/// space); one per worker.
#[derive(Debug, Default)]
pub struct Scratch {
    hs: Option<HsScratch>,
}

/// A scan that could not be done (Hyperscan out of memory, or an internal
/// error); the stream's state is reset.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct ScanError(String);

impl Matcher {
    /// Builds a matcher for `patterns` (bytes, caseless) with `engine`.
    ///
    /// Every occurrence of every pattern is reported, also when a rule
    /// needs only the first. Hyperscan's `HS_FLAG_SINGLEMATCH` would stop
    /// the search for such patterns, but it keeps a bit per pattern in each
    /// stream's state: with 10,000 rules the state grew from 49 to 1,761
    /// bytes a stream, and `streamcap nids` on `campus` from 175 to 288 MiB,
    /// and took 9 % more time (bench/README.md, "Where streamcap nids
    /// spends its time").
    pub fn build(engine: EngineKind, patterns: &[(Vec<u8>, bool)]) -> Result<Matcher, String> {
        let max_len = patterns.iter().map(|p| p.0.len()).max().unwrap_or(0);
        if patterns.is_empty() {
            return Ok(Matcher {
                engine: Inner::Empty,
                to_patterns: Vec::new(),
                exact: Vec::new(),
                max_len,
            });
        }
        if patterns.iter().any(|p| p.0.is_empty()) {
            return Err("an empty pattern".into());
        }
        match engine {
            EngineKind::AhoCorasick => {
                // The crate's case folding is all or nothing: with any
                // caseless pattern the automaton is caseless, patterns that
                // differ only in case share one of its patterns, and hits
                // of case-sensitive patterns are compared afterwards.
                let caseless = patterns.iter().any(|p| p.1);
                let mut index: std::collections::HashMap<Vec<u8>, u32> = Default::default();
                let mut keys: Vec<Vec<u8>> = Vec::new();
                let mut to_patterns: Vec<Vec<u32>> = Vec::new();
                for (i, (bytes, _)) in patterns.iter().enumerate() {
                    let key = if caseless {
                        bytes.to_ascii_lowercase()
                    } else {
                        bytes.clone()
                    };
                    let id = *index.entry(key.clone()).or_insert_with(|| {
                        keys.push(key);
                        to_patterns.push(Vec::new());
                        (keys.len() - 1) as u32
                    });
                    to_patterns[id as usize].push(i as u32);
                }
                let refs: Vec<&[u8]> = keys.iter().map(|k| k.as_slice()).collect();
                let aho = AhoMatcher::build(&refs, caseless)?;
                let exact = patterns.iter().map(|p| p.1 || !caseless).collect();
                Ok(Matcher {
                    engine: Inner::Aho(Box::new(aho)),
                    to_patterns,
                    exact,
                    max_len,
                })
            }
            EngineKind::Hyperscan => {
                let hs = Hyperscan::load().map_err(|e| e.to_string())?;
                let refs: Vec<(&[u8], bool)> =
                    patterns.iter().map(|(p, c)| (p.as_slice(), *c)).collect();
                let db = HsDatabase::compile(&hs, &refs).map_err(|e| e.to_string())?;
                Ok(Matcher {
                    engine: Inner::Hs(db),
                    to_patterns: (0..patterns.len() as u32).map(|i| vec![i]).collect(),
                    exact: vec![true; patterns.len()],
                    max_len,
                })
            }
        }
    }

    /// A description of the automaton (engine, kind).
    pub fn describe(&self) -> String {
        match &self.engine {
            Inner::Empty => "no patterns".into(),
            Inner::Aho(a) => a.kind().into(),
            Inner::Hs(db) => format!("Hyperscan stream mode, {} B per stream", db.stream_size()),
        }
    }

    /// Heap bytes the automaton takes.
    pub fn memory(&self) -> usize {
        match &self.engine {
            Inner::Empty => 0,
            Inner::Aho(a) => a.memory(),
            Inner::Hs(db) => db.memory(),
        }
    }

    /// The longest pattern's length.
    pub fn max_len(&self) -> usize {
        self.max_len
    }

    /// Whether some hits may be inexact ([`Hit::exact`] false: a
    /// case-sensitive pattern found by a caseless aho-corasick automaton),
    /// so that their bytes must be compared afterwards. Hyperscan's hits
    /// are always exact.
    pub fn has_inexact_hits(&self) -> bool {
        self.exact.iter().any(|e| !e)
    }

    /// Whether the matcher has no pattern.
    pub fn is_empty(&self) -> bool {
        matches!(self.engine, Inner::Empty)
    }

    /// Scratch space for one thread.
    pub fn scratch(&self) -> Result<Scratch, ScanError> {
        match &self.engine {
            Inner::Hs(db) => Ok(Scratch {
                hs: Some(db.scratch().map_err(|e| ScanError(e.to_string()))?),
            }),
            _ => Ok(Scratch::default()),
        }
    }

    /// A new stream's scan state, starting at stream offset `offset` (a
    /// Hyperscan stream is opened at the first scan).
    pub fn state(&self, offset: u64) -> ScanState {
        let aho = match &self.engine {
            Inner::Aho(a) => a.start(),
            Inner::Empty | Inner::Hs(_) => AhoState::default(),
        };
        ScanState {
            aho,
            hs: None,
            origin: offset,
            next: offset,
        }
    }

    /// Scans `data`, the stream's bytes from `offset`, continuing from
    /// `state` (reset first if `offset` is not where the last scan ended);
    /// appends every occurrence that ends in `data` to `hits`, in order of
    /// their end. On an error the state is reset, as at a gap.
    pub fn scan(
        &self,
        state: &mut ScanState,
        scratch: &mut Scratch,
        offset: u64,
        data: &[u8],
        hits: &mut Vec<Hit>,
    ) -> Result<(), ScanError> {
        if offset != state.next {
            self.reset(state, scratch, offset);
        }
        state.next = offset + data.len() as u64;
        let (to, exact) = (&self.to_patterns, &self.exact);
        let mut push = |id: u32, end: u64| {
            for &p in to.get(id as usize).map_or(&[][..], |v| v.as_slice()) {
                hits.push(Hit {
                    pattern: p,
                    end,
                    exact: exact.get(p as usize).copied().unwrap_or(false),
                });
            }
        };
        match &self.engine {
            Inner::Empty => Ok(()),
            Inner::Aho(a) => {
                a.scan(&mut state.aho, data, &mut |id, end| {
                    push(id, offset + end as u64)
                });
                Ok(())
            }
            Inner::Hs(db) => {
                let fail = |e: hyperscan::HsError| ScanError(e.to_string());
                let Some(sc) = scratch.hs.as_mut() else {
                    return Err(ScanError("no Hyperscan scratch space".into()));
                };
                if state.hs.is_none() {
                    state.hs = Some(db.open_stream().map_err(fail)?);
                    state.origin = offset;
                }
                let origin = state.origin;
                let Some(stream) = state.hs.as_mut() else {
                    return Ok(());
                };
                let res = db.scan(stream, sc, data, &mut |id, end| push(id, origin + end));
                if res.is_err() {
                    // Forget the stream: the next scan opens another.
                    state.hs = None;
                    state.next = u64::MAX;
                }
                res.map_err(fail)
            }
        }
    }

    /// Forgets any partial match; the next byte scanned is at `offset`.
    pub fn reset(&self, state: &mut ScanState, scratch: &mut Scratch, offset: u64) {
        let failed = match (&self.engine, state.hs.as_mut(), scratch.hs.as_mut()) {
            (Inner::Hs(db), Some(stream), Some(sc)) => db.reset(stream, sc).is_err(),
            (Inner::Aho(a), _, _) => {
                state.aho = a.start();
                false
            }
            _ => false,
        };
        if failed {
            state.hs = None;
        }
        state.origin = offset;
        state.next = offset;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The engines to test: aho-corasick, and Hyperscan where it loads.
    fn engines() -> Vec<EngineKind> {
        let mut v = vec![EngineKind::AhoCorasick];
        match EngineKind::hyperscan_available() {
            Ok(()) => v.push(EngineKind::Hyperscan),
            Err(e) => crate::skip(format!("the Hyperscan part of the matcher tests: {e}")),
        }
        v
    }

    #[test]
    fn mixed_case_patterns_share_a_caseless_automaton() {
        let pats = vec![
            (b"Host:".to_vec(), false),
            (b"host:".to_vec(), true),
            (b"EVIL".to_vec(), false),
        ];
        let m = Matcher::build(EngineKind::AhoCorasick, &pats).unwrap();
        let mut st = m.state(0);
        let mut sc = m.scratch().unwrap();
        let mut hits = Vec::new();
        m.scan(&mut st, &mut sc, 0, b"HOST: evil", &mut hits)
            .unwrap();
        // The automaton finds all three; only the caseless one is exact.
        let mut got: Vec<(u32, u64, bool)> =
            hits.iter().map(|h| (h.pattern, h.end, h.exact)).collect();
        got.sort();
        assert_eq!(got, vec![(0, 5, false), (1, 5, true), (2, 10, false)]);
    }

    #[test]
    fn a_gap_resets_the_state() {
        for engine in engines() {
            let pats = vec![(b"abcdef".to_vec(), false)];
            let m = Matcher::build(engine, &pats).unwrap();
            let mut st = m.state(0);
            let mut sc = m.scratch().unwrap();
            let mut hits = Vec::new();
            m.scan(&mut st, &mut sc, 0, b"xxabc", &mut hits).unwrap();
            m.scan(&mut st, &mut sc, 5, b"def", &mut hits).unwrap();
            assert_eq!(hits.len(), 1, "{engine:?}");
            assert_eq!(hits[0].end, 8);
            hits.clear();
            m.scan(&mut st, &mut sc, 8, b"abc", &mut hits).unwrap();
            // Three bytes never seen: "abc" + "def" is no match.
            m.scan(&mut st, &mut sc, 14, b"def", &mut hits).unwrap();
            assert!(hits.is_empty(), "{engine:?}");
            // Offsets after the gap are stream offsets.
            m.scan(&mut st, &mut sc, 17, b"abcdef", &mut hits).unwrap();
            let ends: Vec<u64> = hits.iter().map(|h| h.end).collect();
            assert_eq!(ends, vec![23], "{engine:?}");
        }
    }

    #[test]
    fn both_engines_find_the_same_hits_at_every_split() {
        let pats: Vec<(Vec<u8>, bool)> = vec![
            (b"GET /".to_vec(), false),
            (b"host:".to_vec(), true),
            (b"\x00\xff\x00".to_vec(), false),
            (b"evil".to_vec(), false),
        ];
        let text = b"GET /evil HTTP/1.1\r\nHoSt: x\r\n\x00\xff\x00GET /GET /";
        let mut all = Vec::new();
        for engine in engines() {
            let m = Matcher::build(engine, &pats).unwrap();
            for cut in 0..=text.len() {
                let (mut st, mut sc) = (m.state(0), m.scratch().unwrap());
                let mut hits = Vec::new();
                m.scan(&mut st, &mut sc, 0, &text[..cut], &mut hits)
                    .unwrap();
                m.scan(&mut st, &mut sc, cut as u64, &text[cut..], &mut hits)
                    .unwrap();
                // A hit that is not exact is confirmed by its bytes.
                let mut got: Vec<(u32, u64)> = hits
                    .iter()
                    .filter(|h| {
                        let p = &pats[h.pattern as usize].0;
                        h.exact || &text[h.end as usize - p.len()..h.end as usize] == p.as_slice()
                    })
                    .map(|h| (h.pattern, h.end))
                    .collect();
                got.sort();
                all.push(got);
            }
        }
        assert!(all.windows(2).all(|w| w[0] == w[1]), "{all:?}");
        assert_eq!(all[0].len(), 6);
    }
}
