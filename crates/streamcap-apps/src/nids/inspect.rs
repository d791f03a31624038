//! A rule's payload conditions (`content` with its modifiers, `pcre`)
//! evaluated on a window of stream bytes, as Suricata's content inspection
//! does: in rule order, relative elements placed after the previous
//! match, backtracking over earlier occurrences while a later relative
//! element fails.

use super::rule::{Content, PayloadMatch, Pcre};

/// Most content and pcre searches one evaluation may make (Suricata's
/// inspection recursion limit is 3,000): a rule crafted to backtrack over
/// many occurrences gives up (no match) instead of taking quadratic time.
pub const SEARCH_BUDGET: u32 = 3000;

/// Stream bytes under inspection: `data[i]` is at stream offset `base + i`.
#[derive(Copy, Clone, Debug)]
pub struct Window<'a> {
    /// The bytes.
    pub data: &'a [u8],
    /// Stream offset of `data[0]`.
    pub base: u64,
}

/// The outcome of an evaluation.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Every condition holds; the stream offset where the first positive
    /// element's match starts (the window's start if there is none).
    Match(u64),
    /// Some condition fails in this window.
    NoMatch,
    /// The search budget ran out (counted; treated as no match).
    Exhausted,
}

/// Evaluates `matches` on `w`.
pub fn evaluate(matches: &[PayloadMatch], w: Window<'_>) -> Verdict {
    let mut budget = SEARCH_BUDGET;
    match step(matches, w, w.base, &mut budget) {
        Some(first) => Verdict::Match(first.unwrap_or(w.base)),
        None if budget == 0 => Verdict::Exhausted,
        None => Verdict::NoMatch,
    }
}

/// Window indices `[lo, hi_end)`: where a match may start (`lo`) and the
/// bound its end may not pass (`hi_end`), clipped to the window; `None`
/// if the range lies wholly outside it.
fn clip(w: Window<'_>, lo: i128, hi_end: Option<i128>) -> Option<(usize, usize)> {
    let base = i128::from(w.base);
    let len = w.data.len() as i128;
    let lo = (lo - base).clamp(0, len);
    let hi = hi_end.map_or(len, |h| (h - base).clamp(0, len));
    (lo <= hi).then_some((lo as usize, hi as usize))
}

/// Where a content may lie, given the previous match's end (stream offset).
fn content_range(c: &Content, w: Window<'_>, prev_end: u64) -> Option<(usize, usize)> {
    if c.is_relative() {
        let d = i128::from(c.distance.unwrap_or(0));
        let start = i128::from(prev_end) + d;
        let end = c.within.map(|wi| start + i128::from(wi));
        clip(w, start, end)
    } else {
        let off = i128::from(c.offset.unwrap_or(0));
        let end = c.depth.map(|d| off + i128::from(d));
        clip(w, off, end)
    }
}

/// Index of the first occurrence of `c` in `hay[from..]` ending by `hi`.
fn find(c: &Content, hay: &[u8], from: usize, hi: usize) -> Option<usize> {
    let n = c.pattern.len();
    if n == 0 || hi < n || from > hi - n {
        return None;
    }
    let region = &hay[from..hi];
    if !c.nocase {
        return memchr::memmem::find(region, &c.pattern).map(|i| from + i);
    }
    let first = c.pattern[0];
    let (lo_b, up_b) = (first.to_ascii_lowercase(), first.to_ascii_uppercase());
    let last_start = region.len() - n;
    let mut at = 0;
    while at <= last_start {
        let i = at + memchr::memchr2(lo_b, up_b, &region[at..=last_start])?;
        if region[i..i + n].eq_ignore_ascii_case(&c.pattern) {
            return Some(from + i);
        }
        at = i + 1;
    }
    None
}

/// Whether the element after `i` is placed relative to the match of `i`:
/// only then can another occurrence of `i` change the outcome.
fn next_is_relative(rest: &[PayloadMatch]) -> bool {
    match rest.first() {
        Some(PayloadMatch::Content(c)) => c.is_relative(),
        Some(PayloadMatch::Pcre(p)) => p.relative,
        None => false,
    }
}

/// Matches `ms` from `prev_end`: `Some(first)` if they all hold, `first`
/// being the start of the first positive match among them.
fn step(
    ms: &[PayloadMatch],
    w: Window<'_>,
    prev_end: u64,
    budget: &mut u32,
) -> Option<Option<u64>> {
    let Some((m, rest)) = ms.split_first() else {
        return Some(None);
    };
    if *budget == 0 {
        return None;
    }
    *budget -= 1;
    match m {
        PayloadMatch::Content(c) => {
            let (lo, hi) = content_range(c, w, prev_end)?;
            if c.negated {
                return match find(c, w.data, lo, hi) {
                    Some(_) => None,
                    None => step(rest, w, prev_end, budget),
                };
            }
            let mut from = lo;
            while let Some(at) = find(c, w.data, from, hi) {
                let end = w.base + (at + c.pattern.len()) as u64;
                if step(rest, w, end, budget).is_some() {
                    return Some(Some(w.base + at as u64));
                }
                if !next_is_relative(rest) || *budget == 0 {
                    return None;
                }
                *budget -= 1;
                from = at + 1;
            }
            None
        }
        PayloadMatch::Pcre(p) => pcre_step(p, rest, w, prev_end, budget),
    }
}

fn pcre_step(
    p: &Pcre,
    rest: &[PayloadMatch],
    w: Window<'_>,
    prev_end: u64,
    budget: &mut u32,
) -> Option<Option<u64>> {
    // The subject starts where the expression may start matching, so `^`
    // anchors there (Suricata passes the buffer from that point on).
    let start = if p.relative {
        clip(w, i128::from(prev_end), None)?.0
    } else {
        0
    };
    let subject = &w.data[start..];
    if p.negated {
        return match p.regex.is_match(subject) {
            Ok(true) => None,
            // A match error (e.g. the match limit) counts as no match.
            Ok(false) | Err(_) => step(rest, w, prev_end, budget),
        };
    }
    let mut from = 0;
    while from <= subject.len() {
        let m = match p.regex.find_at(subject, from) {
            Ok(Some(m)) => m,
            Ok(None) | Err(_) => return None,
        };
        let (ms, me) = (start + m.start(), start + m.end());
        let end = w.base + me as u64;
        if step(rest, w, end, budget).is_some() {
            return Some(Some(w.base + ms as u64));
        }
        if !next_is_relative(rest) || *budget == 0 {
            return None;
        }
        *budget -= 1;
        from = m.start() + 1;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn content(p: &str) -> Content {
        Content::new(p.as_bytes())
    }

    fn eval(ms: Vec<PayloadMatch>, data: &str, base: u64) -> Verdict {
        evaluate(
            &ms,
            Window {
                data: data.as_bytes(),
                base,
            },
        )
    }

    fn c(x: Content) -> PayloadMatch {
        PayloadMatch::Content(x)
    }

    #[test]
    fn offset_and_depth_are_stream_offsets() {
        let mut get = content("GET");
        get.depth = Some(3);
        assert_eq!(eval(vec![c(get.clone())], "GET /", 0), Verdict::Match(0));
        assert_eq!(eval(vec![c(get.clone())], " GET /", 0), Verdict::NoMatch);
        // The window starts later in the stream: the depth is behind it.
        assert_eq!(eval(vec![c(get.clone())], "GET /", 100), Verdict::NoMatch);
        let mut at = content("b");
        at.offset = Some(101);
        at.depth = Some(1);
        assert_eq!(eval(vec![c(at)], "ab", 100), Verdict::Match(101));
    }

    #[test]
    fn distance_and_within_follow_suricata() {
        // within counts from the previous end plus distance.
        let mut second = content("xyz");
        second.distance = Some(2);
        second.within = Some(3);
        let ms = vec![c(content("abc")), c(second.clone())];
        assert_eq!(eval(ms.clone(), "abc..xyz", 0), Verdict::Match(0));
        assert_eq!(eval(ms.clone(), "abc.xyz", 0), Verdict::NoMatch);
        assert_eq!(eval(ms.clone(), "abc...xyz", 0), Verdict::NoMatch);
        // Backtracking: the first "abc" is too far; the second fits.
        assert_eq!(eval(ms, "abc......abc..xyz", 0), Verdict::Match(9));
        // A negative distance looks back.
        let mut back = content("ab");
        back.distance = Some(-3);
        back.within = Some(2);
        assert_eq!(
            eval(vec![c(content("abc")), c(back)], "zabc", 0),
            Verdict::Match(1)
        );
    }

    #[test]
    fn nocase_and_negation() {
        let mut host = content("host:");
        host.nocase = true;
        assert_eq!(
            eval(vec![c(host.clone())], "GET / HTTP/1.1\r\nHOST: a", 0),
            Verdict::Match(16)
        );
        let mut not = content("evil");
        not.negated = true;
        assert_eq!(
            eval(vec![c(host.clone()), c(not.clone())], "Host: good", 0),
            Verdict::Match(0)
        );
        assert_eq!(
            eval(vec![c(host), c(not)], "Host: evil", 0),
            Verdict::NoMatch
        );
    }

    #[test]
    fn relative_pcre() {
        let re = pcre2::bytes::RegexBuilder::new()
            .build(r"^\s*[0-9]+")
            .unwrap();
        let p = Pcre {
            pattern: r"^\s*[0-9]+".into(),
            modifiers: "R".into(),
            relative: true,
            negated: false,
            regex: re,
        };
        let ms = vec![c(content("Length:")), PayloadMatch::Pcre(p)];
        assert_eq!(eval(ms.clone(), "Content-Length: 42", 0), Verdict::Match(8));
        assert_eq!(eval(ms, "Content-Length: x42", 0), Verdict::NoMatch);
    }

    #[test]
    fn pathological_backtracking_is_bounded() {
        let mut last = content("b");
        last.distance = Some(0);
        last.within = Some(1);
        let mut mid = content("a");
        mid.distance = Some(0);
        let ms = vec![
            c(content("a")),
            c(mid.clone()),
            c(mid.clone()),
            c(mid),
            c(last),
        ];
        let text = "a".repeat(5000);
        assert_eq!(eval(ms, &text, 0), Verdict::Exhausted);
    }
}
