//! Signature-matching intrusion detection on reassembled streams (Scap
//! §VII-B).
//!
//! Rules in Suricata/Snort syntax ([`parse`]) are compiled into one
//! multi-pattern automaton per kind of traffic ([`RuleSet`]) whose state is
//! carried from one chunk of a stream to the next ([`matcher`]), so a
//! pattern split across segments or chunks is found without scanning any
//! byte twice. The other conditions of a rule are checked only where its
//! fast pattern occurs ([`inspect`]). A stream no rule can match any more
//! is discarded, the Scap way ([`Want`]).

pub mod alert;
pub mod classification;
pub mod detector;
pub mod handler;
pub mod inspect;
pub mod matcher;
pub mod parse;
pub mod rule;
pub mod ruleset;
pub mod vars;

pub use crate::compose::Want;
pub use alert::{Alert, AlertSink, FnSink};
pub use classification::{ClassType, Classifications};
pub use detector::{Detector, NidsState, NidsStats};
pub use handler::Nids;
pub use matcher::EngineKind;
pub use parse::{load_rule_file, parse_rules, Parsed};
pub use rule::{Rule, RuleError};
pub use ruleset::{CompileOptions, CompiledRule, RuleSet};
pub use vars::{VarKind, Vars};
