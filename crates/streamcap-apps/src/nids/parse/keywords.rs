//! The option keywords, applied one by one to the rule being built.
//!
//! | keyword | value | checks (as Suricata's, unless said) |
//! |---|---|---|
//! | `msg` | quoted; `\x` is `x` | once; not empty |
//! | `content` | `[!]"..."` ([`super::content`]) | not empty |
//! | `nocase` | none | after a content; once per content |
//! | `offset` | 0..=65535 | after a content; once per content; not with `distance`/`within` |
//! | `depth` | 1..=65535 | as `offset`; not less than the content's length |
//! | `distance` | -65535..=65535 | after a content; once per content; not with `offset`/`depth` |
//! | `within` | 1..=65535 | as `distance`; not less than the content's length |
//! | `fast_pattern` | none, `only`, or `N,M` (inside the content) | after a content; one per rule; `only` not on a negated or placed content |
//! | `pcre` | [`super::pcre`] | |
//! | `flow` | comma list | once; no conflicting or repeated word; `only_stream`, `no_stream`, `only_frag`, `no_frag` unsupported |
//! | `sid` | 1..=u32::MAX | once; required |
//! | `rev` | 1..=u32::MAX | once |
//! | `gid` | u32 | once |
//! | `classtype` | a name in [`Classifications`] | unknown ones rejected (Suricata 7 only warns); if repeated, the one of highest priority (lowest number) is kept, as Suricata |
//! | `priority` | 1..=255 | if repeated, the last one |
//! | `reference` | `type,value`, kept as written | |
//! | `metadata` | kept as written, one entry per keyword | |
//!
//! The content modifiers apply to the most recent `content` (a `pcre` in
//! between does not count). Any other keyword rejects the rule.

use super::options::{negation, quoted, unescape, RawOption};
use super::{content, pcre, Fault};
use crate::nids::classification::Classifications;
use crate::nids::rule::{
    Content, FlowDirection, FlowOptions, Header, PayloadMatch, Rule, RuleSource,
};

/// The largest `offset`, `depth`, `distance` and `within` (Suricata's).
const MAX_POSITION: u32 = 65_535;

/// A rule under construction.
pub(crate) struct Builder<'c> {
    classifications: &'c Classifications,
    msg: Option<String>,
    sid: Option<u32>,
    rev: Option<u32>,
    gid: Option<u32>,
    classtype: Option<(String, u8)>,
    priority: Option<u8>,
    references: Vec<String>,
    metadata: Vec<String>,
    flow: Option<FlowOptions>,
    matches: Vec<PayloadMatch>,
    fast_pattern: bool,
    /// `fast_pattern:only` was given.
    fast_pattern_only: bool,
}

impl<'c> Builder<'c> {
    /// A rule with no option yet.
    pub(crate) fn new(classifications: &'c Classifications) -> Builder<'c> {
        Builder {
            classifications,
            msg: None,
            sid: None,
            rev: None,
            gid: None,
            classtype: None,
            priority: None,
            references: Vec::new(),
            metadata: Vec::new(),
            flow: None,
            matches: Vec::new(),
            fast_pattern: false,
            fast_pattern_only: false,
        }
    }

    /// Applies one option.
    pub(crate) fn apply(&mut self, option: &RawOption<'_>) -> Result<(), Fault> {
        let lower = option.keyword.to_ascii_lowercase();
        let kw = lower.as_str();
        let err = |message: String| Fault::keyword(kw, message);
        let value = option.value;
        match kw {
            "msg" => {
                if self.msg.is_some() {
                    return Err(err("`msg` is given twice".into()));
                }
                let text = quoted(required(kw, value)?).map_err(err)?;
                if text.is_empty() {
                    return Err(err("`msg` is empty".into()));
                }
                self.msg = Some(unescape(text));
            }
            "content" => {
                let (negated, rest) = negation(required(kw, value)?);
                let pattern = content::decode(quoted(rest).map_err(err)?).map_err(err)?;
                let mut c = Content::new(pattern);
                c.negated = negated;
                self.matches.push(PayloadMatch::Content(c));
            }
            "nocase" => {
                no_value(kw, value)?;
                let c = self.last_content(kw)?;
                if c.nocase {
                    return Err(err("`nocase` is given twice for one content".into()));
                }
                c.nocase = true;
            }
            "offset" => {
                let n = number(kw, value, 0, MAX_POSITION)?;
                let c = self.last_content(kw)?;
                absolute_allowed(kw, c)?;
                if c.offset.is_some() {
                    return Err(err("`offset` is given twice for one content".into()));
                }
                c.offset = Some(n);
            }
            "depth" => {
                let n = number(kw, value, 0, MAX_POSITION)?;
                let c = self.last_content(kw)?;
                absolute_allowed(kw, c)?;
                if c.depth.is_some() {
                    return Err(err("`depth` is given twice for one content".into()));
                }
                if (n as usize) < c.pattern.len() {
                    return Err(err(format!(
                        "depth {n} is less than the content's length {}",
                        c.pattern.len()
                    )));
                }
                c.depth = Some(n);
            }
            "distance" => {
                let n = signed(kw, value, MAX_POSITION)?;
                let c = self.last_content(kw)?;
                relative_allowed(kw, c)?;
                if c.distance.is_some() {
                    return Err(err("`distance` is given twice for one content".into()));
                }
                c.distance = Some(n);
            }
            "within" => {
                let n = signed(kw, value, MAX_POSITION)?;
                let c = self.last_content(kw)?;
                relative_allowed(kw, c)?;
                if c.within.is_some() {
                    return Err(err("`within` is given twice for one content".into()));
                }
                if n < 0 || (n as usize) < c.pattern.len() {
                    return Err(err(format!(
                        "within {n} is less than the content's length {}",
                        c.pattern.len()
                    )));
                }
                c.within = Some(n.unsigned_abs());
            }
            "fast_pattern" => {
                if self.fast_pattern {
                    return Err(err(
                        "`fast_pattern` is given to more than one content".into()
                    ));
                }
                let c = self.last_content(kw)?;
                fast_pattern_value(value.unwrap_or(""), c.pattern.len()).map_err(err)?;
                c.fast_pattern = true;
                self.fast_pattern = true;
                self.fast_pattern_only = value == Some("only");
            }
            "pcre" => {
                let p = pcre::parse(required(kw, value)?, !self.matches.is_empty()).map_err(err)?;
                self.matches.push(PayloadMatch::Pcre(p));
            }
            "flow" => {
                if self.flow.is_some() {
                    return Err(err("`flow` is given twice".into()));
                }
                self.flow = Some(flow(required(kw, value)?).map_err(err)?);
            }
            "sid" => {
                if self.sid.is_some() {
                    return Err(err("`sid` is given twice".into()));
                }
                self.sid = Some(number(kw, value, 1, u32::MAX)?);
            }
            "rev" => {
                if self.rev.is_some() {
                    return Err(err("`rev` is given twice".into()));
                }
                self.rev = Some(number(kw, value, 1, u32::MAX)?);
            }
            "gid" => {
                if self.gid.is_some() {
                    return Err(err("`gid` is given twice".into()));
                }
                self.gid = Some(number(kw, value, 0, u32::MAX)?);
            }
            "classtype" => {
                let name = required(kw, value)?;
                let class = self.classifications.get(name).ok_or_else(|| {
                    err(format!(
                        "unknown classtype `{name}` (not in the classification table)"
                    ))
                })?;
                match &self.classtype {
                    Some((_, p)) if *p <= class.priority => {}
                    _ => self.classtype = Some((class.name.clone(), class.priority)),
                }
            }
            "priority" => {
                self.priority = Some(number(kw, value, 1, 255)? as u8);
            }
            "reference" => {
                let text = required(kw, value)?;
                match text.split_once(',') {
                    Some((t, v)) if !t.trim().is_empty() && !v.trim().is_empty() => {}
                    _ => return Err(err(format!("expected `type,value`, found `{text}`"))),
                }
                self.references.push(text.to_string());
            }
            "metadata" => {
                self.metadata.push(required(kw, value)?.to_string());
            }
            _ => return Err(err(format!("keyword `{kw}` is not supported"))),
        }
        Ok(())
    }

    /// The most recent content, for a modifier `kw`.
    fn last_content(&mut self, kw: &str) -> Result<&mut Content, Fault> {
        self.matches
            .iter_mut()
            .rev()
            .find_map(|m| match m {
                PayloadMatch::Content(c) => Some(c),
                PayloadMatch::Pcre(_) => None,
            })
            .ok_or_else(|| Fault::keyword(kw, format!("`{kw}` needs a content before it")))
    }

    /// The rule, once every option is applied.
    pub(crate) fn finish(self, header: Header, source: RuleSource) -> Result<Rule, Fault> {
        let sid = self
            .sid
            .ok_or_else(|| Fault::keyword("sid", "the rule has no `sid`".to_string()))?;
        if self.fast_pattern_only {
            let placed = self.matches.iter().any(|m| match m {
                PayloadMatch::Content(c) => {
                    c.fast_pattern
                        && (c.negated || c.is_relative() || c.offset.is_some() || c.depth.is_some())
                }
                PayloadMatch::Pcre(_) => false,
            });
            if placed {
                return Err(Fault::keyword(
                    "fast_pattern",
                    "`fast_pattern:only` cannot be used on a negated content or one with offset, depth, distance or within".to_string(),
                ));
            }
        }
        Ok(Rule {
            header,
            msg: self.msg.unwrap_or_default(),
            sid,
            rev: self.rev.unwrap_or(0),
            gid: self.gid.unwrap_or(1),
            classtype: self.classtype.map(|(name, _)| name),
            priority: self.priority,
            references: self.references,
            metadata: self.metadata,
            flow: self.flow.unwrap_or_default(),
            matches: self.matches,
            source,
        })
    }
}

/// The value of `kw`, which needs one.
fn required<'a>(kw: &str, value: Option<&'a str>) -> Result<&'a str, Fault> {
    match value {
        Some(v) if !v.is_empty() => Ok(v),
        _ => Err(Fault::keyword(kw, format!("`{kw}` needs a value"))),
    }
}

/// `kw` takes no value (`nocase;` or `nocase:;`).
fn no_value(kw: &str, value: Option<&str>) -> Result<(), Fault> {
    match value {
        Some(v) if !v.is_empty() => Err(Fault::keyword(
            kw,
            format!("`{kw}` takes no value, found `{v}`"),
        )),
        _ => Ok(()),
    }
}

/// A decimal number in `min..=max`.
fn number(kw: &str, value: Option<&str>, min: u32, max: u32) -> Result<u32, Fault> {
    let v = required(kw, value)?;
    v.bytes()
        .all(|b| b.is_ascii_digit())
        .then(|| v.parse::<u32>().ok())
        .flatten()
        .filter(|n| (min..=max).contains(n))
        .ok_or_else(|| {
            Fault::keyword(
                kw,
                format!("`{kw}` needs a number from {min} to {max}, found `{v}`"),
            )
        })
}

/// A decimal number, `-` allowed, within `-max..=max`.
fn signed(kw: &str, value: Option<&str>, max: u32) -> Result<i32, Fault> {
    let v = required(kw, value)?;
    let (neg, digits) = match v.strip_prefix('-') {
        Some(d) => (true, d),
        None => (false, v),
    };
    let n = (!digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()))
        .then(|| digits.parse::<u32>().ok())
        .flatten()
        .filter(|n| *n <= max)
        .ok_or_else(|| {
            Fault::keyword(
                kw,
                format!("`{kw}` needs a number from -{max} to {max}, found `{v}`"),
            )
        })?;
    // max fits in i32.
    let n = i32::try_from(n).unwrap_or(i32::MAX);
    Ok(if neg { -n } else { n })
}

/// `offset`/`depth` on `c`: not if it is relative.
fn absolute_allowed(kw: &str, c: &Content) -> Result<(), Fault> {
    if c.is_relative() {
        return Err(Fault::keyword(
            kw,
            format!("`{kw}` (absolute) cannot be used with `distance` or `within` (relative) on one content"),
        ));
    }
    Ok(())
}

/// `distance`/`within` on `c`: not if it is absolute.
fn relative_allowed(kw: &str, c: &Content) -> Result<(), Fault> {
    if c.offset.is_some() || c.depth.is_some() {
        return Err(Fault::keyword(
            kw,
            format!("`{kw}` (relative) cannot be used with `offset` or `depth` (absolute) on one content"),
        ));
    }
    Ok(())
}

/// `fast_pattern`'s value: none, `only`, or `offset,length` within the
/// pattern (the part is not kept: the whole content is the fast pattern).
fn fast_pattern_value(value: &str, len: usize) -> Result<(), String> {
    if value.is_empty() || value == "only" {
        return Ok(());
    }
    let bad =
        || format!("`fast_pattern` takes nothing, `only` or `offset,length`, found `{value}`");
    let (o, l) = value.split_once(',').ok_or_else(bad)?;
    let o: usize = o.trim().parse().map_err(|_| bad())?;
    let l: usize = l.trim().parse().map_err(|_| bad())?;
    if o.saturating_add(l) > len {
        return Err(format!(
            "fast_pattern {o},{l} reaches past the content's length {len}"
        ));
    }
    Ok(())
}

/// `flow`'s comma list.
fn flow(value: &str) -> Result<FlowOptions, String> {
    let mut f = FlowOptions::default();
    for word in value.split(',') {
        let word = word.trim();
        match word.to_ascii_lowercase().as_str() {
            "established" => {
                if f.established {
                    return Err("`established` is given twice".into());
                }
                if f.not_established || f.stateless {
                    return Err(
                        "`established` conflicts with `not_established` or `stateless`".into(),
                    );
                }
                f.established = true;
            }
            "not_established" => {
                if f.not_established {
                    return Err("`not_established` is given twice".into());
                }
                if f.established || f.stateless {
                    return Err(
                        "`not_established` conflicts with `established` or `stateless`".into(),
                    );
                }
                f.not_established = true;
            }
            "stateless" => {
                if f.stateless {
                    return Err("`stateless` is given twice".into());
                }
                if f.established || f.not_established {
                    return Err(
                        "`stateless` conflicts with `established` or `not_established`".into(),
                    );
                }
                f.stateless = true;
            }
            d @ ("to_server" | "from_client" | "to_client" | "from_server") => {
                if f.direction.is_some() {
                    return Err(format!("`{d}`: the direction is given twice"));
                }
                f.direction = Some(if d == "to_server" || d == "from_client" {
                    FlowDirection::ToServer
                } else {
                    FlowDirection::ToClient
                });
            }
            "only_stream" | "no_stream" | "only_frag" | "no_frag" => {
                return Err(format!("flow option `{word}` is not supported"));
            }
            "" => return Err(format!("empty flow option in `{value}`")),
            _ => return Err(format!("unknown flow option `{word}`")),
        }
    }
    Ok(f)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flow_words() {
        let f = flow("established,to_server").unwrap();
        assert!(f.established && !f.stateless);
        assert_eq!(f.direction, Some(FlowDirection::ToServer));
        assert_eq!(
            flow(" from_server ").unwrap().direction,
            Some(FlowDirection::ToClient)
        );
        assert_eq!(
            flow("from_client").unwrap().direction,
            Some(FlowDirection::ToServer)
        );
        assert!(flow("stateless").unwrap().stateless);
        assert!(flow("not_established,to_client").unwrap().not_established);
        for (bad, want) in [
            (
                "established,to_server,to_client",
                "direction is given twice",
            ),
            ("established,not_established", "conflicts"),
            ("stateless,established", "conflicts"),
            ("established,established", "twice"),
            ("only_stream", "`only_stream` is not supported"),
            ("no_frag", "not supported"),
            ("bogus", "unknown flow option `bogus`"),
            ("established,", "empty flow option"),
        ] {
            let e = flow(bad).unwrap_err();
            assert!(e.contains(want), "{bad}: {e}");
        }
    }

    #[test]
    fn numbers() {
        assert_eq!(number("sid", Some("12"), 1, u32::MAX).unwrap(), 12);
        assert_eq!(
            number("sid", Some("4294967295"), 1, u32::MAX).unwrap(),
            u32::MAX
        );
        for bad in ["0", "4294967296", "-1", "+1", "1.0", "x", "\"1\"", " "] {
            assert!(number("sid", Some(bad), 1, u32::MAX).is_err(), "{bad}");
        }
        assert!(number("sid", None, 1, 9)
            .unwrap_err()
            .message
            .contains("needs a value"));
        assert_eq!(signed("distance", Some("-5"), 65535).unwrap(), -5);
        assert_eq!(signed("distance", Some("-65535"), 65535).unwrap(), -65535);
        assert!(signed("distance", Some("65536"), 65535).is_err());
        assert!(signed("distance", Some("-"), 65535).is_err());
        assert!(signed("distance", Some("--1"), 65535).is_err());
    }

    #[test]
    fn fast_pattern_values() {
        assert!(fast_pattern_value("", 3).is_ok());
        assert!(fast_pattern_value("only", 3).is_ok());
        assert!(fast_pattern_value("1,2", 3).is_ok());
        assert!(fast_pattern_value("1,5", 3).unwrap_err().contains("past"));
        assert!(fast_pattern_value("chop", 3).is_err());
        assert!(fast_pattern_value("1,x", 3).is_err());
        assert!(fast_pattern_value("99999999999999999999,1", 3).is_err());
    }
}
