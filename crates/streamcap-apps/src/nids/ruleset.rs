//! A loaded rule set compiled for matching: the fast pattern of every rule
//! in one automaton per kind of traffic, the rules grouped by header, and
//! how far into a stream each group can match.

use super::classification::Classifications;
use super::matcher::{EngineKind, Matcher};
use super::rule::{Action, FlowDirection, Header, PayloadMatch, Rule, RuleProto};
use std::collections::HashMap;
use std::net::IpAddr;

/// Default bytes of a stream kept behind the newest chunk for the rules
/// whose conditions span several chunks ([`CompileOptions::window`]).
pub const DEFAULT_WINDOW: usize = 4096;

/// Largest window accepted.
pub const MAX_WINDOW: usize = 1 << 20;

/// How a rule set is compiled.
#[derive(Clone, Debug)]
pub struct CompileOptions {
    /// The multi-pattern engine. [default: Hyperscan where it loads
    /// ([`EngineKind::auto`]), else aho-corasick]
    pub engine: EngineKind,
    /// Bytes of a stream kept behind each chunk: a rule with several
    /// conditions matches when all of them lie within this window and the
    /// chunk that completes them.
    pub window: usize,
}

impl Default for CompileOptions {
    fn default() -> Self {
        CompileOptions {
            engine: EngineKind::auto(),
            window: DEFAULT_WINDOW,
        }
    }
}

/// The kinds of traffic a rule set is matched on, each with its automaton.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Traffic {
    /// TCP streams (rules `tcp` and `ip`).
    Tcp = 0,
    /// UDP datagrams (rules `udp` and `ip`).
    Udp = 1,
    /// Other protocols' packets, ICMP among them (rules `icmp` and `ip`).
    Other = 2,
}

impl Traffic {
    /// The kind of a transport protocol number.
    pub fn of(proto: u8) -> Traffic {
        match proto {
            6 => Traffic::Tcp,
            17 => Traffic::Udp,
            _ => Traffic::Other,
        }
    }
}

/// A rule as the matcher uses it.
#[derive(Debug)]
pub struct CompiledRule {
    /// The rule as parsed.
    pub rule: Rule,
    /// The EVE `category`: the classtype's description ("" without one).
    pub category: String,
    /// The EVE `severity`: the rule's priority, else its classtype's, else 3.
    pub severity: u8,
    /// Index of its header class.
    pub(crate) class: u32,
    /// Index in `rule.matches` of the content the automaton searches for.
    pub(crate) fast: Option<usize>,
    /// One absolute content and nothing else: checked at the hit itself.
    pub(crate) simple: bool,
    /// How far into the stream a match can end (`None`: anywhere).
    pub(crate) reach: Option<u64>,
    /// The rule's EVE `alert` object, written once when the rules are
    /// compiled ([`super::alert::eve_alert_object`]).
    pub(crate) eve_alert: Box<str>,
}

/// Rules that share a header and flow direction: whether they apply to a
/// stream is decided once, when the stream starts.
#[derive(Debug)]
pub(crate) struct HeaderClass {
    pub header: Header,
    pub direction: Option<FlowDirection>,
    /// The farthest reach of its rules, per traffic kind (`None`: unlimited).
    pub reach: [Option<u64>; 3],
    /// How many rules it has.
    pub rules: u32,
}

impl HeaderClass {
    /// Whether a stream of `proto` sending from `src` to `dst` in
    /// direction `to_server` is covered.
    pub fn covers(
        &self,
        proto: u8,
        src: (IpAddr, u16),
        dst: (IpAddr, u16),
        to_server: bool,
    ) -> bool {
        let proto_ok = match self.header.proto {
            RuleProto::Tcp => proto == 6,
            RuleProto::Udp => proto == 17,
            RuleProto::Icmp => proto == 1 || proto == 58,
            RuleProto::Ip => true,
        };
        let dir_ok = match self.direction {
            None => true,
            Some(FlowDirection::ToServer) => to_server,
            Some(FlowDirection::ToClient) => !to_server,
        };
        proto_ok && dir_ok && self.header.covers(src, dst)
    }
}

/// The rules of one traffic kind.
#[derive(Debug)]
pub(crate) struct TrafficRules {
    /// The automaton over the fast patterns.
    pub matcher: Matcher,
    /// Per pattern: the rules whose fast pattern it is.
    pub by_pattern: Vec<Vec<u32>>,
    /// Rules with payload conditions but no positive content: evaluated on
    /// every chunk.
    pub unprefiltered: Vec<u32>,
    /// Rules with no payload condition: they match when a stream starts.
    pub header_only: Vec<u32>,
    /// The header classes whose rules apply to this kind.
    pub classes: Vec<u32>,
    /// Whether any rule needs the window behind a chunk.
    pub needs_window: bool,
}

/// A compiled rule set, shared by every worker.
#[derive(Debug)]
pub struct RuleSet {
    pub(crate) rules: Vec<CompiledRule>,
    pub(crate) classes: Vec<HeaderClass>,
    pub(crate) traffic: [TrafficRules; 3],
    pub(crate) window: usize,
}

impl RuleSet {
    /// Compiles `rules`: classtypes give categories and severities; each
    /// rule's fast pattern (its `fast_pattern` content, else its longest
    /// positive content) goes into the automaton of every kind of traffic
    /// it applies to.
    pub fn compile(
        rules: Vec<Rule>,
        classes: &Classifications,
        opts: &CompileOptions,
    ) -> Result<RuleSet, String> {
        if opts.window > MAX_WINDOW {
            return Err(format!(
                "window of {} bytes: at most {MAX_WINDOW}",
                opts.window
            ));
        }
        let mut header_classes: Vec<HeaderClass> = Vec::new();
        let mut class_index: HashMap<(Header, Option<FlowDirection>), u32> = HashMap::new();
        let mut compiled = Vec::with_capacity(rules.len());
        for rule in rules {
            let mut key_header = rule.header.clone();
            key_header.action = Action::Alert;
            let key = (key_header.clone(), rule.flow.direction);
            let class = *class_index.entry(key).or_insert_with(|| {
                header_classes.push(HeaderClass {
                    header: key_header,
                    direction: rule.flow.direction,
                    reach: [Some(0); 3],
                    rules: 0,
                });
                (header_classes.len() - 1) as u32
            });
            let ct = rule.classtype.as_deref().and_then(|c| classes.get(c));
            let severity = rule.priority.or(ct.map(|c| c.priority)).unwrap_or(3);
            let category = ct.map(|c| c.description.clone()).unwrap_or_default();
            let fast = fast_pattern(&rule);
            let positives = rule
                .matches
                .iter()
                .filter(|m| matches!(m, PayloadMatch::Content(c) if !c.negated))
                .count();
            let simple = rule.matches.len() == 1
                && positives == 1
                && matches!(&rule.matches[0], PayloadMatch::Content(c) if !c.is_relative());
            let reach = reach(&rule);
            let eve_alert = super::alert::eve_alert_object(&rule, &category, severity);
            compiled.push(CompiledRule {
                rule,
                category,
                severity,
                class,
                fast,
                simple,
                reach,
                eve_alert,
            });
        }
        for r in &compiled {
            let c = &mut header_classes[r.class as usize];
            c.rules += 1;
            for t in kinds(r.rule.header.proto) {
                let slot = &mut c.reach[*t as usize];
                *slot = match (*slot, r.reach) {
                    (Some(a), Some(b)) => Some(a.max(b)),
                    _ => None,
                };
            }
        }
        let build = |t: Traffic| -> Result<TrafficRules, String> {
            let mut patterns: Vec<(Vec<u8>, bool)> = Vec::new();
            let mut index: HashMap<(Vec<u8>, bool), u32> = HashMap::new();
            let mut by_pattern: Vec<Vec<u32>> = Vec::new();
            let mut unprefiltered = Vec::new();
            let mut header_only = Vec::new();
            let mut classes_of: Vec<u32> = Vec::new();
            let mut needs_window = false;
            for (i, r) in compiled.iter().enumerate() {
                if !kinds(r.rule.header.proto).contains(&t) {
                    continue;
                }
                classes_of.push(r.class);
                needs_window |= !r.simple && !r.rule.matches.is_empty();
                match r.fast {
                    Some(f) => {
                        let PayloadMatch::Content(c) = &r.rule.matches[f] else {
                            continue;
                        };
                        let key = (c.pattern.clone(), c.nocase);
                        let id = *index.entry(key.clone()).or_insert_with(|| {
                            patterns.push(key);
                            by_pattern.push(Vec::new());
                            (patterns.len() - 1) as u32
                        });
                        by_pattern[id as usize].push(i as u32);
                    }
                    None if r.rule.matches.is_empty() => header_only.push(i as u32),
                    None => unprefiltered.push(i as u32),
                }
            }
            classes_of.sort_unstable();
            classes_of.dedup();
            let matcher = Matcher::build(opts.engine, &patterns)?;
            // A case-sensitive pattern found by a caseless automaton is
            // compared afterwards: its bytes must still be at hand.
            needs_window |= matcher.has_inexact_hits();
            Ok(TrafficRules {
                matcher,
                by_pattern,
                unprefiltered,
                header_only,
                classes: classes_of,
                needs_window,
            })
        };
        let traffic = [
            build(Traffic::Tcp)?,
            build(Traffic::Udp)?,
            build(Traffic::Other)?,
        ];
        Ok(RuleSet {
            rules: compiled,
            classes: header_classes,
            traffic,
            window: opts.window,
        })
    }

    /// The rules, in load order (an [`super::Alert`]'s `rule` indexes it).
    pub fn rules(&self) -> &[CompiledRule] {
        &self.rules
    }

    /// Number of rules.
    pub fn len(&self) -> usize {
        self.rules.len()
    }

    /// Whether there is no rule.
    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }

    /// The window kept behind each chunk, in bytes.
    pub fn window(&self) -> usize {
        self.window
    }

    /// A description of each automaton: traffic kind, patterns, engine,
    /// memory.
    pub fn describe(&self) -> Vec<String> {
        [
            ("tcp", Traffic::Tcp),
            ("udp", Traffic::Udp),
            ("other", Traffic::Other),
        ]
        .iter()
        .map(|(name, t)| {
            let tr = &self.traffic[*t as usize];
            if tr.by_pattern.is_empty() {
                return format!("{name}: no patterns");
            }
            format!(
                "{name}: {} patterns, {}, {} KiB",
                tr.by_pattern.len(),
                tr.matcher.describe(),
                tr.matcher.memory().div_ceil(1024)
            )
        })
        .collect()
    }
}

/// The traffic kinds a rule protocol applies to.
fn kinds(p: RuleProto) -> &'static [Traffic] {
    match p {
        RuleProto::Tcp => &[Traffic::Tcp],
        RuleProto::Udp => &[Traffic::Udp],
        RuleProto::Icmp => &[Traffic::Other],
        RuleProto::Ip => &[Traffic::Tcp, Traffic::Udp, Traffic::Other],
    }
}

/// The content the automaton searches for: the one marked `fast_pattern`,
/// else the longest positive content (the first of equal ones).
fn fast_pattern(rule: &Rule) -> Option<usize> {
    let positive = |m: &PayloadMatch| matches!(m, PayloadMatch::Content(c) if !c.negated && !c.pattern.is_empty());
    if let Some(i) = rule
        .matches
        .iter()
        .position(|m| positive(m) && matches!(m, PayloadMatch::Content(c) if c.fast_pattern))
    {
        return Some(i);
    }
    let mut best: Option<(usize, usize)> = None;
    for (i, m) in rule.matches.iter().enumerate() {
        if let PayloadMatch::Content(c) = m {
            if positive(m) && best.is_none_or(|(_, len)| c.pattern.len() > len) {
                best = Some((i, c.pattern.len()));
            }
        }
    }
    best.map(|(i, _)| i)
}

/// How far into a stream the rule's match can end: bounded when its first
/// positive content has a depth and every later positive element is held
/// by `within` or a depth; `None` otherwise.
fn reach(rule: &Rule) -> Option<u64> {
    let mut prev: u64 = 0;
    let mut far: u64 = 0;
    for m in &rule.matches {
        match m {
            PayloadMatch::Content(c) if c.negated => {}
            PayloadMatch::Content(c) => {
                let end = if c.is_relative() {
                    let w = c.within?;
                    let start = (prev as i64)
                        .saturating_add(i64::from(c.distance.unwrap_or(0)))
                        .max(0) as u64;
                    start + u64::from(w)
                } else {
                    u64::from(c.offset.unwrap_or(0)) + u64::from(c.depth?)
                };
                prev = end;
                far = far.max(end);
            }
            PayloadMatch::Pcre(_) => return None,
        }
    }
    Some(far)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nids::rule::Content;

    pub(crate) fn rule(sid: u32, proto: RuleProto, matches: Vec<PayloadMatch>) -> Rule {
        Rule::new(sid, proto, matches)
    }

    fn content(p: &str, f: impl FnOnce(&mut Content)) -> PayloadMatch {
        let mut c = Content::new(p.as_bytes());
        f(&mut c);
        PayloadMatch::Content(c)
    }

    #[test]
    fn fast_pattern_is_marked_or_longest() {
        let r = rule(
            1,
            RuleProto::Tcp,
            vec![
                content("ab", |_| {}),
                content("abcd", |_| {}),
                content("xyz", |c| c.negated = true),
            ],
        );
        assert_eq!(fast_pattern(&r), Some(1));
        let r = rule(
            2,
            RuleProto::Tcp,
            vec![
                content("ab", |c| c.fast_pattern = true),
                content("abcd", |_| {}),
            ],
        );
        assert_eq!(fast_pattern(&r), Some(0));
        let r = rule(3, RuleProto::Tcp, vec![content("ab", |c| c.negated = true)]);
        assert_eq!(fast_pattern(&r), None);
    }

    #[test]
    fn reach_is_bounded_only_by_depth_and_within() {
        let anchored = rule(
            1,
            RuleProto::Tcp,
            vec![
                content("GET", |c| c.depth = Some(3)),
                content("/x", |c| {
                    c.distance = Some(1);
                    c.within = Some(100);
                }),
            ],
        );
        assert_eq!(reach(&anchored), Some(104));
        let open = rule(2, RuleProto::Tcp, vec![content("GET", |_| {})]);
        assert_eq!(reach(&open), None);
        assert_eq!(reach(&rule(3, RuleProto::Tcp, vec![])), Some(0));
    }

    #[test]
    fn compiles_one_automaton_per_traffic_kind() {
        let rules = vec![
            rule(1, RuleProto::Tcp, vec![content("alpha", |_| {})]),
            rule(2, RuleProto::Udp, vec![content("beta", |_| {})]),
            rule(3, RuleProto::Ip, vec![content("gamma", |_| {})]),
            rule(
                4,
                RuleProto::Tcp,
                vec![
                    content("alpha", |_| {}),
                    content("delta", |c| c.distance = Some(0)),
                ],
            ),
        ];
        let set = RuleSet::compile(
            rules,
            &Classifications::default(),
            &CompileOptions::default(),
        )
        .unwrap();
        let tcp = &set.traffic[Traffic::Tcp as usize];
        assert_eq!(tcp.by_pattern.len(), 2, "alpha (rules 1 and 4), gamma");
        assert!(tcp.needs_window);
        assert_eq!(set.traffic[Traffic::Udp as usize].by_pattern.len(), 2);
        assert!(!set.traffic[Traffic::Udp as usize].needs_window);
        assert_eq!(set.traffic[Traffic::Other as usize].by_pattern.len(), 1);
        assert_eq!(set.classes.len(), 3, "tcp, udp and ip headers");
        assert!(set.rules[0].simple && !set.rules[3].simple);
    }

    #[test]
    fn mixed_case_needs_a_window_only_where_hits_are_inexact() {
        let rules = || {
            vec![
                rule(1, RuleProto::Tcp, vec![content("alpha", |_| {})]),
                rule(
                    2,
                    RuleProto::Tcp,
                    vec![content("Beta", |c| c.nocase = true)],
                ),
            ]
        };
        let compile = |engine| {
            let opts = CompileOptions {
                engine,
                ..CompileOptions::default()
            };
            RuleSet::compile(rules(), &Classifications::default(), &opts).unwrap()
        };
        // A caseless aho-corasick automaton: "alpha" is compared afterwards.
        let ac = compile(EngineKind::AhoCorasick);
        assert!(ac.traffic[Traffic::Tcp as usize].needs_window);
        if EngineKind::hyperscan_available().is_ok() {
            let hs = compile(EngineKind::Hyperscan);
            assert!(!hs.traffic[Traffic::Tcp as usize].needs_window);
        }
    }
}
