//! Rule files in Suricata/Snort syntax: lines, headers, options.
//!
//! [`parse_rules`] reads a file's text (`lines.rs`: one rule a line, `\`
//! continuations, comments), then each rule's header (`header.rs`, with
//! address and port specs and their variables: `address.rs`, `ports.rs`,
//! `spec.rs`, `sets.rs`) and options (`options.rs` splits them,
//! `keywords.rs` applies them, `content.rs` and `pcre.rs` read those two).
//! A rule that cannot be used is rejected with a [`RuleError`] naming the
//! file, the rule's first line and, where one is at fault, the keyword (or
//! the unsupported action or protocol); the other rules still load.
//!
//! Supported: actions `alert`, `drop`, `pass`; protocols `tcp`, `udp`,
//! `icmp`, `ip`; the keywords `msg`, `content` (and `nocase`, `offset`,
//! `depth`, `distance`, `within`, `fast_pattern`), `pcre`, `flow`, `sid`,
//! `rev`, `gid`, `classtype`, `priority`, `reference`, `metadata`. Anything
//! else rejects the rule (`keywords.rs` has the table of what each keyword
//! accepts). Where Suricata 7 rejects a rule (a depth shorter than its
//! content, absolute and relative modifiers on one content, an empty address
//! set...), so does this parser; the differences are noted where they are
//! made (quotes protect `;` here, an unknown classtype is an error here and
//! a warning in Suricata, an indented rule is read here and skipped there).
//!
//! The input may be anything: nothing here panics on it, nesting is
//! bounded, and an error always names a line of the input.

pub(crate) mod address;
pub(crate) mod content;
pub(crate) mod header;
pub(crate) mod keywords;
pub(crate) mod lines;
pub(crate) mod options;
pub(crate) mod pcre;
pub(crate) mod ports;
pub(crate) mod sets;
pub(crate) mod spec;

#[cfg(test)]
mod tests;

use super::rule::{Rule, RuleError, RuleSource};
use super::vars::{Resolver, Vars};
use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

/// The rules of a file (or text) that loaded, and the ones that did not.
#[derive(Debug, Default)]
pub struct Parsed {
    /// Rules that loaded, in file order.
    pub rules: Vec<Rule>,
    /// Rules rejected, each with file, line and reason, in file order.
    pub errors: Vec<RuleError>,
}

impl Parsed {
    /// Adds the rules and errors of `other` (another file, say) after these,
    /// with the duplicate rule of [`parse_rules`] applied across the two.
    pub fn extend(&mut self, other: Parsed) {
        let mut rules: Vec<Option<Rule>> = std::mem::take(&mut self.rules)
            .into_iter()
            .map(Some)
            .collect();
        let mut index: HashMap<(u32, u32), usize> = rules
            .iter()
            .enumerate()
            .filter_map(|(i, r)| r.as_ref().map(|r| ((r.gid, r.sid), i)))
            .collect();
        self.errors.extend(other.errors);
        for rule in other.rules {
            add(&mut rules, &mut index, &mut self.errors, rule);
        }
        self.rules = rules.into_iter().flatten().collect();
    }
}

/// What went wrong in a rule, before its place is known.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Fault {
    /// The keyword at fault, if one is.
    pub(crate) keyword: Option<String>,
    /// What was wrong.
    pub(crate) message: String,
}

impl Fault {
    /// A fault of no particular keyword.
    pub(crate) fn new(message: String) -> Fault {
        Fault {
            keyword: None,
            message,
        }
    }

    /// A fault of keyword `kw`.
    pub(crate) fn keyword(kw: &str, message: String) -> Fault {
        Fault {
            keyword: Some(kw.to_string()),
            message,
        }
    }
}

/// Parses the rules in `text`, read from `file` (a name for messages).
///
/// `vars` is the whole context: its address and port variables are
/// expanded in headers, and its [`classifications`](Vars::classifications)
/// are the classtypes rules may name.
///
/// A rule whose (gid, sid) an earlier rule already has is a duplicate: as
/// Suricata, the one with the higher `rev` is kept (the earlier one when
/// they are equal), and the other is rejected with an error naming both
/// lines.
pub fn parse_rules(text: &str, file: &str, vars: &Vars) -> Parsed {
    parse_text(text, file, vars, false)
}

/// Reads and parses a rule file. A file that is not UTF-8 is read with the
/// bad bytes replaced, and the rules holding them are rejected.
pub fn load_rule_file(path: &Path, vars: &Vars) -> std::io::Result<Parsed> {
    let bytes = std::fs::read(path)?;
    let name = path.display().to_string();
    Ok(match String::from_utf8_lossy(&bytes) {
        std::borrow::Cow::Borrowed(text) => parse_text(text, &name, vars, false),
        std::borrow::Cow::Owned(text) => parse_text(&text, &name, vars, true),
    })
}

/// [`parse_rules`]; `lossy` tells that `text` had bytes that are not UTF-8
/// replaced by U+FFFD, so the rules holding one are rejected.
fn parse_text(text: &str, file: &str, vars: &Vars, lossy: bool) -> Parsed {
    let file: Arc<str> = Arc::from(file);
    let mut env = Resolver::new(vars);
    let mut rules: Vec<Option<Rule>> = Vec::new();
    let mut index: HashMap<(u32, u32), usize> = HashMap::new();
    let mut errors = Vec::new();
    for (line, rule_text) in lines::rules(text) {
        let source = RuleSource {
            file: file.clone(),
            line,
        };
        let result = if lossy && rule_text.contains('\u{fffd}') {
            Err(Fault::new(
                "the rule holds bytes that are not UTF-8".to_string(),
            ))
        } else {
            parse_rule(&rule_text, source.clone(), &mut env)
        };
        match result {
            Ok(rule) => add(&mut rules, &mut index, &mut errors, rule),
            Err(f) => errors.push(RuleError {
                source,
                keyword: f.keyword,
                message: f.message,
            }),
        }
    }
    errors.sort_by_key(|e| e.source.line);
    Parsed {
        rules: rules.into_iter().flatten().collect(),
        errors,
    }
}

/// One rule's text.
fn parse_rule(text: &str, source: RuleSource, env: &mut Resolver<'_>) -> Result<Rule, Fault> {
    let text = text.trim();
    let Some(open) = text.find('(') else {
        return Err(Fault::new(
            "the rule has no options: `(...)` must follow the header".to_string(),
        ));
    };
    let header = header::parse(&text[..open], env)?;
    let Some(body) = text[open + 1..].strip_suffix(')') else {
        return Err(Fault::new(
            "the rule does not end with `)` (text after the options, or no closing `)`)"
                .to_string(),
        ));
    };
    let options = options::split(body).map_err(|e| Fault {
        keyword: e.keyword,
        message: e.message,
    })?;
    let mut builder = keywords::Builder::new(&env.vars().classifications);
    for option in &options {
        builder.apply(option)?;
    }
    builder.finish(header, source)
}

/// Adds `rule` unless it duplicates one in `rules` (by gid and sid): then
/// the one with the higher rev stays (the earlier on a tie), the other is
/// taken out and reported in `errors`.
fn add(
    rules: &mut Vec<Option<Rule>>,
    index: &mut HashMap<(u32, u32), usize>,
    errors: &mut Vec<RuleError>,
    rule: Rule,
) {
    let key = (rule.gid, rule.sid);
    let Some(&at) = index.get(&key) else {
        index.insert(key, rules.len());
        rules.push(Some(rule));
        return;
    };
    let Some(earlier) = rules.get_mut(at).and_then(Option::take) else {
        index.insert(key, rules.len());
        rules.push(Some(rule));
        return;
    };
    if rule.rev > earlier.rev {
        // The later rule replaces the earlier one, in its own place in file
        // order.
        errors.push(RuleError {
            source: earlier.source.clone(),
            keyword: Some("sid".to_string()),
            message: format!(
                "duplicate of gid {} sid {}: the rule at {} has a higher rev ({} > {}) and is kept instead of this one",
                rule.gid, rule.sid, rule.source, rule.rev, earlier.rev
            ),
        });
        index.insert(key, rules.len());
        rules.push(Some(rule));
    } else {
        errors.push(RuleError {
            source: rule.source.clone(),
            keyword: Some("sid".to_string()),
            message: format!(
                "duplicate of gid {} sid {} at {} (rev {}): that rule is kept, as Suricata keeps the higher rev and this one's is not higher ({})",
                earlier.gid, earlier.sid, earlier.source, earlier.rev, rule.rev
            ),
        });
        rules[at] = Some(earlier);
    }
}
