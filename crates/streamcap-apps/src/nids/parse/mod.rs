//! Rule files in Suricata/Snort syntax: lines, headers, options.
//! (Being written.)

use super::rule::{Rule, RuleError};
use super::vars::Vars;
use std::path::Path;

/// The rules of a file (or text) that loaded, and the ones that did not.
#[derive(Debug, Default)]
pub struct Parsed {
    /// Rules that loaded, in file order.
    pub rules: Vec<Rule>,
    /// Rules rejected, each with file, line and reason.
    pub errors: Vec<RuleError>,
}

/// Parses the rules in `text`, read from `file` (a name for messages).
pub fn parse_rules(text: &str, file: &str, vars: &Vars) -> Parsed {
    let _ = (text, file, vars);
    Parsed::default()
}

/// Reads and parses a rule file.
pub fn load_rule_file(path: &Path, vars: &Vars) -> std::io::Result<Parsed> {
    let text = std::fs::read_to_string(path)?;
    Ok(parse_rules(&text, &path.display().to_string(), vars))
}
