//! Signature-matching intrusion detection on reassembled streams (Scap
//! §VII-B).
//!
//! Rules in Suricata/Snort syntax ([`parse`]) are compiled into one
//! multi-pattern automaton per protocol ([`matcher`]) whose state is carried
//! from one chunk of a stream to the next, so a pattern split across
//! segments or chunks is found without scanning any byte twice. The other
//! conditions of a rule are checked only where its fast pattern occurs.

pub mod classification;
pub mod matcher;
pub mod parse;
pub mod rule;
pub mod vars;

pub use classification::{ClassType, Classifications};
pub use parse::{load_rule_file, parse_rules, Parsed};
pub use rule::{Rule, RuleError};
pub use vars::{VarKind, Vars};
