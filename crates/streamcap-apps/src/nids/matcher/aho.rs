//! The `aho-corasick` crate's automata walked by hand, so that the state
//! reached at the end of one chunk is where the next chunk's scan begins.
//!
//! The crate's own search functions take a whole haystack; its
//! [`Automaton`] trait exposes the transitions for exactly this use. A DFA
//! is built while it stays small enough (below [`DFA_STATE_LIMIT`] states),
//! a contiguous NFA otherwise. Where the automaton has a prefilter (few
//! patterns), the scan jumps from the start state to the prefilter's next
//! candidate, as the crate's own search does; near the end of a chunk,
//! where a match may begin and end in the next chunk, it walks byte by
//! byte so that the carried state is exact.

use aho_corasick::automaton::{Automaton, Candidate, StateID};
use aho_corasick::{dfa, nfa, Anchored, MatchKind, Span};

/// Patterns (sum of lengths) up to which a DFA is built; above, a
/// contiguous NFA (a DFA of many thousand patterns takes hundreds of MiB).
pub const DFA_STATE_LIMIT: usize = 200_000;

/// One automaton over all patterns.
pub(crate) enum AhoMatcher {
    /// A DFA: one table lookup per byte.
    Dfa(dfa::DFA),
    /// A contiguous NFA: smaller, a little slower.
    Nfa(nfa::contiguous::NFA),
}

impl std::fmt::Debug for AhoMatcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.kind())
    }
}

/// Where a scan ended: the automaton state (carried to the next chunk).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) struct AhoState(StateID);

impl Default for AhoState {
    fn default() -> Self {
        AhoState(StateID::ZERO)
    }
}

impl AhoMatcher {
    /// Builds the automaton; `caseless` makes every pattern match either
    /// case of ASCII letters.
    pub(crate) fn build(patterns: &[&[u8]], caseless: bool) -> Result<AhoMatcher, String> {
        let total: usize = patterns.iter().map(|p| p.len()).sum();
        if total <= DFA_STATE_LIMIT {
            let d = dfa::Builder::new()
                .match_kind(MatchKind::Standard)
                .ascii_case_insensitive(caseless)
                .start_kind(aho_corasick::StartKind::Unanchored)
                .byte_classes(true)
                .build(patterns)
                .map_err(|e| e.to_string())?;
            return Ok(AhoMatcher::Dfa(d));
        }
        let n = nfa::contiguous::Builder::new()
            .match_kind(MatchKind::Standard)
            .ascii_case_insensitive(caseless)
            .build(patterns)
            .map_err(|e| e.to_string())?;
        Ok(AhoMatcher::Nfa(n))
    }

    /// "dfa" or "nfa".
    pub(crate) fn kind(&self) -> &'static str {
        match self {
            AhoMatcher::Dfa(_) => "aho-corasick DFA",
            AhoMatcher::Nfa(_) => "aho-corasick contiguous NFA",
        }
    }

    /// Heap bytes of the automaton.
    pub(crate) fn memory(&self) -> usize {
        match self {
            AhoMatcher::Dfa(a) => a.memory_usage(),
            AhoMatcher::Nfa(a) => a.memory_usage(),
        }
    }

    /// The state a stream starts in.
    pub(crate) fn start(&self) -> AhoState {
        // An unanchored start state always exists (the automata are built
        // with `StartKind::Unanchored`, the NFA's default).
        let sid = match self {
            AhoMatcher::Dfa(a) => a.start_state(Anchored::No),
            AhoMatcher::Nfa(a) => a.start_state(Anchored::No),
        };
        AhoState(sid.unwrap_or_default())
    }

    /// Scans `data` from `state`; calls `hit(pattern, end)` for every
    /// occurrence ending in `data`, `end` being the index in `data` just
    /// past its last byte. Occurrences that began in earlier chunks are
    /// reported too.
    #[inline]
    pub(crate) fn scan(&self, state: &mut AhoState, data: &[u8], hit: &mut impl FnMut(u32, usize)) {
        match self {
            AhoMatcher::Dfa(a) => walk(a, state, data, hit),
            AhoMatcher::Nfa(a) => walk(a, state, data, hit),
        }
    }
}

/// The scan loop, for either automaton.
#[inline(always)]
fn walk<A: Automaton>(
    aut: &A,
    state: &mut AhoState,
    data: &[u8],
    hit: &mut impl FnMut(u32, usize),
) {
    let Ok(start) = aut.start_state(Anchored::No) else {
        return;
    };
    let prefilter = aut.prefilter();
    // From here on a match may end past the chunk: the prefilter (which
    // only knows whole matches) is not used there.
    let tail = data
        .len()
        .saturating_sub(aut.max_pattern_len().saturating_sub(1));
    let mut sid = state.0;
    let mut i = 0;
    let mut use_prefilter = prefilter.is_some();
    while i < data.len() {
        if use_prefilter && sid == start {
            if let Some(pre) = prefilter {
                let next = match pre.find_in(data, Span::from(i..data.len())) {
                    Candidate::None => None,
                    Candidate::Match(m) => Some(m.start()),
                    Candidate::PossibleStartOfMatch(p) => Some(p),
                };
                match next {
                    Some(p) if p < tail => i = p,
                    _ => {
                        // No match starts before the tail: walk the tail.
                        i = i.max(tail);
                        use_prefilter = false;
                        if i >= data.len() {
                            break;
                        }
                    }
                }
            }
        }
        sid = aut.next_state(Anchored::No, sid, data[i]);
        i += 1;
        if aut.is_special(sid) && aut.is_match(sid) {
            for k in 0..aut.match_len(sid) {
                hit(aut.match_pattern(sid, k).as_u32(), i);
            }
        }
    }
    state.0 = sid;
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every (pattern, end) of `pats` in `text`, by brute force.
    fn naive(pats: &[&[u8]], text: &[u8], caseless: bool) -> Vec<(u32, usize)> {
        let mut v = Vec::new();
        for end in 1..=text.len() {
            for (pi, p) in pats.iter().enumerate() {
                if p.len() <= end {
                    let w = &text[end - p.len()..end];
                    let eq = if caseless {
                        w.eq_ignore_ascii_case(p)
                    } else {
                        w == *p
                    };
                    if eq {
                        v.push((pi as u32, end));
                    }
                }
            }
        }
        v.sort();
        v
    }

    fn scan_split(m: &AhoMatcher, text: &[u8], cuts: &[usize]) -> Vec<(u32, usize)> {
        let mut st = m.start();
        let mut v = Vec::new();
        let mut from = 0;
        for &c in cuts.iter().chain(std::iter::once(&text.len())) {
            let base = from;
            m.scan(&mut st, &text[from..c], &mut |p, e| v.push((p, base + e)));
            from = c;
        }
        v.sort();
        v
    }

    #[test]
    fn matches_across_every_split_point() {
        let pats: Vec<&[u8]> = vec![b"abc", b"bcd", b"c", b"abcdabc", b"GET /x"];
        let text = b"xxabcdabcdd GET /x abc GET /";
        for caseless in [false, true] {
            let m = AhoMatcher::build(&pats, caseless).unwrap();
            let want = naive(&pats, text, caseless);
            assert!(!want.is_empty());
            assert_eq!(scan_split(&m, text, &[]), want);
            for cut in 0..=text.len() {
                assert_eq!(scan_split(&m, text, &[cut]), want, "cut at {cut}");
            }
            let every: Vec<usize> = (1..text.len()).collect();
            assert_eq!(scan_split(&m, text, &every), want, "byte by byte");
        }
    }

    #[test]
    fn prefilter_never_loses_a_match_that_ends_in_the_next_chunk() {
        // One or two patterns: the automaton gets a prefilter.
        for pats in [
            vec![&b"needle-in-a-haystack"[..]],
            vec![&b"zq"[..], &b"needle-x"[..]],
        ] {
            let m = AhoMatcher::build(&pats, false).unwrap();
            let mut text = vec![b'.'; 300];
            text.extend_from_slice(pats[pats.len() - 1]);
            text.extend_from_slice(&[b'.'; 50]);
            let want = naive(&pats, &text, false);
            for cut in 290..330 {
                assert_eq!(scan_split(&m, &text, &[cut]), want, "cut at {cut}");
            }
        }
    }

    #[test]
    fn a_large_set_uses_the_nfa_and_finds_the_same() {
        let owned: Vec<Vec<u8>> = (0..30_000u32)
            .map(|i| format!("pattern-{i:06}-x").into_bytes())
            .collect();
        let pats: Vec<&[u8]> = owned.iter().map(|p| p.as_slice()).collect();
        let m = AhoMatcher::build(&pats, false).unwrap();
        assert_eq!(m.kind(), "aho-corasick contiguous NFA");
        let text = b"..pattern-012345-x..pattern-000001-pattern-029999-x";
        let got = scan_split(&m, text, &[10, 11, 30]);
        assert_eq!(got, vec![(12345, 18), (29999, text.len())]);
    }
}
