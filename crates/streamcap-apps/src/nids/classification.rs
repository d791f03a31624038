//! Classtypes: a rule's `classtype` gives its alert category and default
//! priority.
//!
//! The table is Suricata's `classification.config`: lines
//! `config classification: NAME,DESCRIPTION,PRIORITY`, blank lines and `#`
//! comments. [`Classifications::default`] holds the entries Suricata 7
//! ships; [`Classifications::load`] reads a user's file instead (as
//! Suricata's `classification-file` setting replaces the default file).
//! Names are matched without regard to ASCII case.

use super::rule::Rule;
use std::collections::HashMap;
use std::path::Path;

/// One classtype.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClassType {
    /// Short name (`web-application-attack`).
    pub name: String,
    /// Description, the EVE alert's `category`.
    pub description: String,
    /// Default priority (severity).
    pub priority: u8,
}

/// The known classtypes.
#[derive(Clone, Debug)]
pub struct Classifications {
    /// By lower-case name.
    by_name: HashMap<String, ClassType>,
}

/// The entries of Suricata 7's `classification.config` (name, description,
/// priority), in the file's order.
const DEFAULTS: &[(&str, &str, u8)] = &[
    ("not-suspicious", "Not Suspicious Traffic", 3),
    ("unknown", "Unknown Traffic", 3),
    ("bad-unknown", "Potentially Bad Traffic", 2),
    ("attempted-recon", "Attempted Information Leak", 2),
    ("successful-recon-limited", "Information Leak", 2),
    (
        "successful-recon-largescale",
        "Large Scale Information Leak",
        2,
    ),
    ("attempted-dos", "Attempted Denial of Service", 2),
    ("successful-dos", "Denial of Service", 2),
    ("attempted-user", "Attempted User Privilege Gain", 1),
    ("unsuccessful-user", "Unsuccessful User Privilege Gain", 1),
    ("successful-user", "Successful User Privilege Gain", 1),
    (
        "attempted-admin",
        "Attempted Administrator Privilege Gain",
        1,
    ),
    (
        "successful-admin",
        "Successful Administrator Privilege Gain",
        1,
    ),
    ("rpc-portmap-decode", "Decode of an RPC Query", 2),
    ("shellcode-detect", "Executable code was detected", 1),
    ("string-detect", "A suspicious string was detected", 3),
    (
        "suspicious-filename-detect",
        "A suspicious filename was detected",
        2,
    ),
    (
        "suspicious-login",
        "An attempted login using a suspicious username was detected",
        2,
    ),
    ("system-call-detect", "A system call was detected", 2),
    ("tcp-connection", "A TCP connection was detected", 4),
    ("trojan-activity", "A Network Trojan was detected", 1),
    (
        "unusual-client-port-connection",
        "A client was using an unusual port",
        2,
    ),
    ("network-scan", "Detection of a Network Scan", 3),
    (
        "denial-of-service",
        "Detection of a Denial of Service Attack",
        2,
    ),
    (
        "non-standard-protocol",
        "Detection of a non-standard protocol or event",
        2,
    ),
    (
        "protocol-command-decode",
        "Generic Protocol Command Decode",
        3,
    ),
    (
        "web-application-activity",
        "access to a potentially vulnerable web application",
        2,
    ),
    ("web-application-attack", "Web Application Attack", 1),
    ("misc-activity", "Misc activity", 3),
    ("misc-attack", "Misc Attack", 2),
    ("icmp-event", "Generic ICMP event", 3),
    (
        "inappropriate-content",
        "Inappropriate Content was Detected",
        1,
    ),
    (
        "policy-violation",
        "Potential Corporate Privacy Violation",
        1,
    ),
    (
        "default-login-attempt",
        "Attempt to login by a default username and password",
        2,
    ),
    (
        "targeted-activity",
        "Targeted Malicious Activity was Detected",
        1,
    ),
    ("exploit-kit", "Exploit Kit Activity Detected", 1),
    (
        "external-ip-check",
        "Device Retrieving External IP Address Detected",
        2,
    ),
    ("domain-c2", "Domain Observed Used for C2 Detected", 1),
    ("pup-activity", "Possibly Unwanted Program Detected", 2),
    (
        "credential-theft",
        "Successful Credential Theft Detected",
        1,
    ),
    (
        "social-engineering",
        "Possible Social Engineering Attempted",
        2,
    ),
    ("coin-mining", "Crypto Currency Mining Activity Detected", 2),
    (
        "command-and-control",
        "Malware Command and Control Activity Detected",
        1,
    ),
];

/// The priority of a rule with neither `priority` nor a classtype (as
/// Suricata).
pub const DEFAULT_PRIORITY: u8 = 3;

/// Suricata's default table.
impl Default for Classifications {
    fn default() -> Classifications {
        let mut c = Classifications::empty();
        for (name, description, priority) in DEFAULTS {
            c.insert(ClassType {
                name: (*name).to_string(),
                description: (*description).to_string(),
                priority: *priority,
            });
        }
        c
    }
}

impl Classifications {
    /// A table with no classtype.
    pub fn empty() -> Classifications {
        Classifications {
            by_name: HashMap::new(),
        }
    }

    /// The classtype called `name` (any ASCII case).
    pub fn get(&self, name: &str) -> Option<&ClassType> {
        if name.bytes().any(|b| b.is_ascii_uppercase()) {
            self.by_name.get(&name.to_ascii_lowercase())
        } else {
            self.by_name.get(name)
        }
    }

    /// Adds `class`, replacing a classtype of the same name.
    pub fn insert(&mut self, class: ClassType) {
        self.by_name.insert(class.name.to_ascii_lowercase(), class);
    }

    /// How many classtypes there are.
    pub fn len(&self) -> usize {
        self.by_name.len()
    }

    /// Whether there is none.
    pub fn is_empty(&self) -> bool {
        self.by_name.is_empty()
    }

    /// The classtypes, in no particular order.
    pub fn iter(&self) -> impl Iterator<Item = &ClassType> {
        self.by_name.values()
    }

    /// A rule's priority: its `priority` keyword, else its classtype's, else
    /// [`DEFAULT_PRIORITY`].
    pub fn priority_of(&self, rule: &Rule) -> u8 {
        rule.priority
            .or_else(|| {
                rule.classtype
                    .as_deref()
                    .and_then(|c| self.get(c))
                    .map(|c| c.priority)
            })
            .unwrap_or(DEFAULT_PRIORITY)
    }

    /// Parses a `classification.config` text read from `file` (a name for
    /// messages). The table holds only the file's entries; a later entry
    /// replaces an earlier one of the same name. Every bad line is reported,
    /// one per line of the error, as `file:line: reason`.
    pub fn parse(text: &str, file: &str) -> Result<Classifications, String> {
        let mut c = Classifications::empty();
        let mut errors = Vec::new();
        for (i, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            match parse_line(line) {
                Ok(class) => c.insert(class),
                Err(e) => errors.push(format!("{file}:{}: {e}", i + 1)),
            }
        }
        if errors.is_empty() {
            Ok(c)
        } else {
            Err(errors.join("\n"))
        }
    }

    /// Reads a `classification.config` file (see [`Classifications::parse`]).
    pub fn load(path: &Path) -> Result<Classifications, String> {
        let text = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
        Classifications::parse(&String::from_utf8_lossy(&text), &path.display().to_string())
    }
}

/// One `config classification: name,description,priority` line (trimmed,
/// not a comment). The description may hold commas: the priority follows
/// the last one.
fn parse_line(line: &str) -> Result<ClassType, String> {
    const WANT: &str = "expected `config classification: name,description,priority`";
    let rest = line
        .strip_prefix("config")
        .map(str::trim_start)
        .and_then(|r| r.strip_prefix("classification"))
        .map(str::trim_start)
        .and_then(|r| r.strip_prefix(':'))
        .ok_or_else(|| WANT.to_string())?;
    let (name, rest) = rest.split_once(',').ok_or_else(|| WANT.to_string())?;
    let (description, priority) = rest.rsplit_once(',').ok_or_else(|| WANT.to_string())?;
    let (name, description, priority) = (name.trim(), description.trim(), priority.trim());
    if name.is_empty()
        || !name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
    {
        return Err(format!(
            "classtype name `{name}` must be letters, digits, `-` and `_`"
        ));
    }
    if description.is_empty() {
        return Err(format!("classtype `{name}` has an empty description"));
    }
    let priority = priority
        .parse::<u8>()
        .ok()
        .filter(|p| *p >= 1)
        .ok_or_else(|| format!("classtype `{name}`: priority `{priority}` is not 1 to 255"))?;
    Ok(ClassType {
        name: name.to_string(),
        description: description.to_string(),
        priority,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_hold_suricatas_table() {
        let c = Classifications::default();
        assert_eq!(c.len(), DEFAULTS.len());
        let t = c.get("trojan-activity").unwrap();
        assert_eq!(t.description, "A Network Trojan was detected");
        assert_eq!(t.priority, 1);
        assert_eq!(c.get("TCP-Connection").unwrap().priority, 4);
        assert!(c.get("no-such-class").is_none());
    }

    #[test]
    fn parses_lines_comments_and_commas_in_descriptions() {
        let text = "# comment\n\n  config classification: a-b_c, Something, with a comma ,2\nconfig classification:x,Y,1\n";
        let c = Classifications::parse(text, "f").unwrap();
        assert_eq!(c.len(), 2);
        let a = c.get("a-b_c").unwrap();
        assert_eq!(a.description, "Something, with a comma");
        assert_eq!(a.priority, 2);
    }

    #[test]
    fn bad_lines_are_reported_with_file_and_line() {
        let text = "config classification: ok,Fine,1\nconfig classification: nopriority,Desc\nconfig classtype: x,y,1\nconfig classification: bad name,D,1\nconfig classification: p,D,0\nconfig classification: q,D,256\nconfig classification: r,,2\n";
        let e = Classifications::parse(text, "my.config").unwrap_err();
        let lines: Vec<&str> = e.lines().collect();
        assert_eq!(lines.len(), 6, "{e}");
        for (l, n) in lines.iter().zip(2..) {
            assert!(l.starts_with(&format!("my.config:{n}: ")), "{l}");
        }
        assert!(lines[2].contains("bad name"));
        assert!(lines[3].contains("priority `0`"));
    }

    #[test]
    fn priority_of_takes_keyword_then_classtype_then_three() {
        use crate::nids::rule::*;
        let c = Classifications::default();
        let mut r = Rule {
            header: Header {
                action: Action::Alert,
                proto: RuleProto::Tcp,
                src: AddrSpec::Any,
                src_ports: PortSpec::Any,
                bidirectional: false,
                dst: AddrSpec::Any,
                dst_ports: PortSpec::Any,
            },
            msg: String::new(),
            sid: 1,
            rev: 0,
            gid: 1,
            classtype: None,
            priority: None,
            references: vec![],
            metadata: vec![],
            flow: FlowOptions::default(),
            matches: vec![],
            source: RuleSource {
                file: "f".into(),
                line: 1,
            },
        };
        assert_eq!(c.priority_of(&r), 3);
        r.classtype = Some("attempted-admin".into());
        assert_eq!(c.priority_of(&r), 1);
        r.priority = Some(7);
        assert_eq!(c.priority_of(&r), 7);
    }

    /// Suricata's installed file, when there is one, parses whole and gives
    /// the embedded table.
    #[test]
    fn the_installed_suricata_file_matches_the_defaults() {
        let path = Path::new("/etc/suricata/classification.config");
        if !path.exists() {
            eprintln!("skipped: {} does not exist", path.display());
            return;
        }
        let loaded = Classifications::load(path).unwrap();
        let defaults = Classifications::default();
        assert_eq!(loaded.len(), defaults.len());
        for c in defaults.iter() {
            assert_eq!(loaded.get(&c.name), Some(c), "{}", c.name);
        }
    }
}
