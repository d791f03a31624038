//! Rule variables (`$HOME_NET`, `$HTTP_PORTS`, ...) and the classtype table
//! rules are read with.
//!
//! Variables are address groups or port groups, as in Suricata's
//! `suricata.yaml`:
//!
//! ```yaml
//! vars:
//!   address-groups:
//!     HOME_NET: "[192.168.0.0/16,10.0.0.0/8,172.16.0.0/12]"
//!   port-groups:
//!     HTTP_PORTS: "80"
//! ```
//!
//! A value is kept as written and expanded when a rule uses it, so changing
//! `HOME_NET` changes `EXTERNAL_NET` (`!$HOME_NET`) too. Every value is
//! checked when it is set or loaded: it must parse as its kind of spec, the
//! variables it names must exist and be of the same kind, and no variable
//! may refer to itself, directly or through others.

use crate::nids::classification::Classifications;
use crate::nids::parse::address::Addresses;
use crate::nids::parse::ports::Ports;
use crate::nids::parse::spec::{self, too_deep, Kind, MAX_DEPTH};
use crate::nids::rule::{AddrSpec, PortSpec};
use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use yaml_rust2::{Yaml, YamlLoader};

/// Whether a variable is an address group or a port group.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum VarKind {
    /// `vars: address-groups:` (`$HOME_NET`).
    Address,
    /// `vars: port-groups:` (`$HTTP_PORTS`).
    Port,
}

impl VarKind {
    /// `address` or `port`.
    pub fn name(self) -> &'static str {
        match self {
            VarKind::Address => "address",
            VarKind::Port => "port",
        }
    }
}

/// Suricata 7's default address groups (`suricata.yaml`, `vars:`).
const DEFAULT_ADDRESSES: &[(&str, &str)] = &[
    ("HOME_NET", "[192.168.0.0/16,10.0.0.0/8,172.16.0.0/12]"),
    ("EXTERNAL_NET", "!$HOME_NET"),
    ("HTTP_SERVERS", "$HOME_NET"),
    ("SMTP_SERVERS", "$HOME_NET"),
    ("SQL_SERVERS", "$HOME_NET"),
    ("DNS_SERVERS", "$HOME_NET"),
    ("TELNET_SERVERS", "$HOME_NET"),
    ("AIM_SERVERS", "$EXTERNAL_NET"),
    ("DC_SERVERS", "$HOME_NET"),
    ("DNP3_SERVER", "$HOME_NET"),
    ("DNP3_CLIENT", "$HOME_NET"),
    ("MODBUS_CLIENT", "$HOME_NET"),
    ("MODBUS_SERVER", "$HOME_NET"),
    ("ENIP_CLIENT", "$HOME_NET"),
    ("ENIP_SERVER", "$HOME_NET"),
];

/// Suricata 7's default port groups.
const DEFAULT_PORTS: &[(&str, &str)] = &[
    ("HTTP_PORTS", "80"),
    ("SHELLCODE_PORTS", "!80"),
    ("ORACLE_PORTS", "1521"),
    ("SSH_PORTS", "22"),
    ("DNP3_PORTS", "20000"),
    ("MODBUS_PORTS", "502"),
    ("FILE_DATA_PORTS", "[$HTTP_PORTS,110,143]"),
    ("FTP_PORTS", "21"),
    ("GENEVE_PORTS", "6081"),
    ("VXLAN_PORTS", "4789"),
    ("TEREDO_PORTS", "3544"),
];

/// What rules are read with: address and port variables, and the classtype
/// table (a rule naming a classtype the table lacks is rejected).
///
/// [`parse_rules`](crate::nids::parse_rules) takes a `&Vars`; it is the
/// whole context of rule parsing.
#[derive(Clone, Debug)]
pub struct Vars {
    /// Name (without `$`) to kind and value as written.
    groups: BTreeMap<String, (VarKind, String)>,
    /// The classtypes rules may name.
    pub classifications: Classifications,
}

/// Suricata 7's default variables and classtypes.
impl Default for Vars {
    fn default() -> Vars {
        let mut groups = BTreeMap::new();
        for (name, value) in DEFAULT_ADDRESSES {
            groups.insert(
                (*name).to_string(),
                (VarKind::Address, (*value).to_string()),
            );
        }
        for (name, value) in DEFAULT_PORTS {
            groups.insert((*name).to_string(), (VarKind::Port, (*value).to_string()));
        }
        Vars {
            groups,
            classifications: Classifications::default(),
        }
    }
}

impl Vars {
    /// No variable at all (and the default classtypes).
    pub fn empty() -> Vars {
        Vars {
            groups: BTreeMap::new(),
            classifications: Classifications::default(),
        }
    }

    /// The kind and value (as written) of variable `name` (without `$`).
    pub fn get(&self, name: &str) -> Option<(VarKind, &str)> {
        self.groups.get(name).map(|(k, v)| (*k, v.as_str()))
    }

    /// Every variable: name, kind, value as written; by name.
    pub fn iter(&self) -> impl Iterator<Item = (&str, VarKind, &str)> {
        self.groups
            .iter()
            .map(|(n, (k, v))| (n.as_str(), *k, v.as_str()))
    }

    /// Variable `name` expanded, if it is an address group.
    pub fn address(&self, name: &str) -> Result<AddrSpec, String> {
        Resolver::new(self)
            .resolve::<Addresses>(name, 0)
            .map(|e| e.spec)
    }

    /// Variable `name` expanded, if it is a port group.
    pub fn ports(&self, name: &str) -> Result<PortSpec, String> {
        Resolver::new(self)
            .resolve::<Ports>(name, 0)
            .map(|e| e.spec)
    }

    /// Sets variable `name` (a leading `$` is allowed) to `value`, as the
    /// command line's `--set NAME=VALUE` does.
    ///
    /// The kind: a variable that exists keeps its kind; a new one is a port
    /// group if its name ends in `_PORTS` or `_PORT`, or if its value is a
    /// valid port spec but not a valid address spec (`8080`, `[80,443]`,
    /// `$HTTP_PORTS`); otherwise it is an address group (so `any` makes an
    /// address group unless the name says ports).
    ///
    /// The value is checked (see the module doc); on error nothing changes
    /// and the message names the variable.
    pub fn set(&mut self, name: &str, value: &str) -> Result<(), String> {
        let name = check_name(name)?;
        let value = value.trim();
        let kind = match self.groups.get(name) {
            Some((kind, _)) => *kind,
            None if name.ends_with("_PORTS") || name.ends_with("_PORT") => VarKind::Port,
            None => {
                let mut trial = self.clone();
                trial
                    .groups
                    .insert(name.to_string(), (VarKind::Address, value.to_string()));
                if trial.check(name).is_ok() {
                    VarKind::Address
                } else {
                    trial
                        .groups
                        .insert(name.to_string(), (VarKind::Port, value.to_string()));
                    if trial.check(name).is_ok() {
                        VarKind::Port
                    } else {
                        VarKind::Address
                    }
                }
            }
        };
        self.set_kind(name, kind, value)
    }

    /// Sets variable `name` as a group of `kind`, replacing a variable of
    /// the same name whatever its kind. Checked as [`Vars::set`].
    pub fn set_kind(&mut self, name: &str, kind: VarKind, value: &str) -> Result<(), String> {
        let name = check_name(name)?;
        let old = self
            .groups
            .insert(name.to_string(), (kind, value.trim().to_string()));
        let checked = self.check_all();
        if checked.is_err() {
            match old {
                Some(old) => self.groups.insert(name.to_string(), old),
                None => self.groups.remove(name),
            };
        }
        checked
    }

    /// `NAME=VALUE` (the command line's `--set` argument): [`Vars::set`].
    pub fn set_arg(&mut self, assignment: &str) -> Result<(), String> {
        let (name, value) = assignment
            .split_once('=')
            .ok_or_else(|| format!("`{assignment}`: expected NAME=VALUE"))?;
        self.set(name.trim(), value)
    }

    /// Reads the `vars:` section of a Suricata YAML file (the whole
    /// `suricata.yaml`, or a file holding only that section) and sets its
    /// address and port groups, over the ones already here (the others are
    /// kept). Every value is checked; on error nothing changes and the
    /// message names the file and the variables at fault.
    pub fn load_yaml(&mut self, path: &Path) -> Result<(), String> {
        let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
        self.load_yaml_str(
            &String::from_utf8_lossy(&bytes),
            &path.display().to_string(),
        )
    }

    /// [`Vars::load_yaml`] on a text read from `origin` (a name for
    /// messages).
    pub fn load_yaml_str(&mut self, text: &str, origin: &str) -> Result<(), String> {
        let docs = YamlLoader::load_from_str(text).map_err(|e| format!("{origin}: {e}"))?;
        let vars = docs
            .first()
            .map(|d| &d["vars"])
            .filter(|v| !v.is_badvalue())
            .ok_or_else(|| format!("{origin}: no `vars:` section"))?;
        if !vars.is_hash() {
            return Err(format!("{origin}: `vars:` is not a mapping"));
        }
        let mut next = self.clone();
        let mut errors = Vec::new();
        for (section, kind) in [
            ("address-groups", VarKind::Address),
            ("port-groups", VarKind::Port),
        ] {
            let groups = &vars[section];
            if groups.is_badvalue() || groups.is_null() {
                continue;
            }
            let Some(groups) = groups.as_hash() else {
                errors.push(format!("`vars: {section}:` is not a mapping"));
                continue;
            };
            for (name, value) in groups {
                let Some(name) = scalar(name) else {
                    errors.push(format!("{section}: a name is not a string"));
                    continue;
                };
                let Some(value) = scalar(value) else {
                    errors.push(format!(
                        "{section}: {name}: the value is not a string or a number"
                    ));
                    continue;
                };
                match check_name(&name) {
                    Ok(n) => {
                        next.groups
                            .insert(n.to_string(), (kind, value.trim().to_string()));
                    }
                    Err(e) => errors.push(format!("{section}: {e}")),
                }
            }
        }
        if errors.is_empty() {
            if let Err(e) = next.check_all() {
                errors.push(e);
            }
        }
        if errors.is_empty() {
            *self = next;
            Ok(())
        } else {
            Err(format!("{origin}: {}", errors.join("; ")))
        }
    }

    /// Checks that every variable expands.
    fn check_all(&self) -> Result<(), String> {
        let mut r = Resolver::new(self);
        let errors: Vec<String> = self
            .groups
            .keys()
            .filter_map(|n| r.check(n).err())
            .collect();
        if errors.is_empty() {
            Ok(())
        } else {
            Err(errors.join("; "))
        }
    }

    /// Checks that variable `name` expands; the message names it.
    fn check(&self, name: &str) -> Result<(), String> {
        Resolver::new(self).check(name)
    }
}

/// A YAML scalar as text (strings and numbers).
fn scalar(y: &Yaml) -> Option<String> {
    match y {
        Yaml::String(s) | Yaml::Real(s) => Some(s.clone()),
        Yaml::Integer(i) => Some(i.to_string()),
        _ => None,
    }
}

/// A variable name: letters, digits, `_` and `-`, after an optional `$`.
fn check_name(name: &str) -> Result<&str, String> {
    let bare = name.strip_prefix('$').unwrap_or(name);
    if bare.is_empty()
        || !bare
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
    {
        Err(format!(
            "`{name}` is not a variable name (letters, digits, `_` and `-`)"
        ))
    } else {
        Ok(bare)
    }
}

/// Expands variables for one parse: expanded specs are kept, so a rule file
/// expands each variable it uses once.
pub(crate) struct Resolver<'v> {
    vars: &'v Vars,
    /// Expanded address groups.
    pub(crate) addresses: HashMap<String, Expanded<AddrSpec>>,
    /// Expanded port groups.
    pub(crate) ports: HashMap<String, Expanded<PortSpec>>,
    /// The variables being expanded, outermost first (to find cycles).
    stack: Vec<String>,
}

impl<'v> Resolver<'v> {
    /// A resolver over `vars`.
    pub(crate) fn new(vars: &'v Vars) -> Resolver<'v> {
        Resolver {
            vars,
            addresses: HashMap::new(),
            ports: HashMap::new(),
            stack: Vec::new(),
        }
    }

    /// The vars resolved.
    pub(crate) fn vars(&self) -> &'v Vars {
        self.vars
    }

    /// Variable `name` of kind `K`, expanded at nesting level `depth`.
    pub(crate) fn resolve<K: Kind>(
        &mut self,
        name: &str,
        depth: usize,
    ) -> Result<Expanded<K::Spec>, String> {
        if let Some(done) = K::cache(self).get(name) {
            // As deep as expanding it again would go.
            if depth + done.height > MAX_DEPTH {
                return Err(too_deep());
            }
            return Ok(done.clone());
        }
        if self.stack.iter().any(|n| n == name) {
            let mut chain: Vec<String> = self
                .stack
                .iter()
                .skip_while(|n| *n != name)
                .map(|n| format!("${n}"))
                .collect();
            chain.push(format!("${name}"));
            return Err(format!(
                "`${name}` refers to itself ({})",
                chain.join(" -> ")
            ));
        }
        let vars = self.vars;
        let (kind, value) = match vars.groups.get(name) {
            Some(v) => v,
            None => return Err(format!("undefined variable `${name}`")),
        };
        if *kind != K::VAR_KIND {
            return Err(format!(
                "`${name}` is {} {} variable, not {} {} one",
                article(kind.name()),
                kind.name(),
                article(K::VAR_KIND.name()),
                K::VAR_KIND.name()
            ));
        }
        match self.expand::<K>(name, value, depth) {
            Ok(done) => {
                K::cache(self).insert(name.to_string(), done.clone());
                Ok(done)
            }
            Err(e) if e.starts_with('`') || e.starts_with("in `$") => Err(e),
            Err(e) => Err(format!("in `${name}` (`{value}`): {e}")),
        }
    }

    /// Parses `value`, the value of variable `name`, at `depth`.
    fn expand<K: Kind>(
        &mut self,
        name: &str,
        value: &str,
        depth: usize,
    ) -> Result<Expanded<K::Spec>, String> {
        self.stack.push(name.to_string());
        let result = spec::parse::<K>(value, self, depth);
        self.stack.pop();
        result
    }

    /// Checks that variable `name` (if it exists) expands from the top
    /// level; the message names it.
    fn check(&mut self, name: &str) -> Result<(), String> {
        let vars = self.vars;
        let result = match vars.groups.get(name) {
            Some((VarKind::Address, value)) => self.expand::<Addresses>(name, value, 0).map(drop),
            Some((VarKind::Port, value)) => self.expand::<Ports>(name, value, 0).map(drop),
            None => Ok(()),
        };
        result.map_err(|e| format!("${name}: {e}"))
    }
}

/// A spec with its variables expanded.
#[derive(Clone, Debug)]
pub(crate) struct Expanded<S> {
    /// The spec.
    pub(crate) spec: S,
    /// How many nodes it has.
    pub(crate) nodes: usize,
    /// How many levels of nesting its text and variables took.
    pub(crate) height: usize,
}

/// `an address`, `a port`.
fn article(noun: &str) -> &'static str {
    if noun.starts_with('a') {
        "an"
    } else {
        "a"
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn defaults_expand() {
        let v = Vars::default();
        assert_eq!(
            v.iter().count(),
            DEFAULT_ADDRESSES.len() + DEFAULT_PORTS.len()
        );
        for (name, kind, _) in v.iter() {
            match kind {
                VarKind::Address => assert!(v.address(name).is_ok(), "{name}"),
                VarKind::Port => assert!(v.ports(name).is_ok(), "{name}"),
            }
        }
        assert_eq!(v.ports("HTTP_PORTS").unwrap(), PortSpec::Range(80, 80));
        assert!(v
            .ports("HOME_NET")
            .unwrap_err()
            .contains("is an address variable"));
        assert!(v.address("NOPE").unwrap_err().contains("undefined"));
    }

    #[test]
    fn set_keeps_the_kind_of_an_existing_name_and_guesses_new_ones() {
        let mut v = Vars::default();
        v.set("HOME_NET", "[10.0.0.0/8]").unwrap();
        assert_eq!(v.get("HOME_NET"), Some((VarKind::Address, "[10.0.0.0/8]")));
        // EXTERNAL_NET follows.
        let ext = v.address("EXTERNAL_NET").unwrap();
        assert!(ext.contains("192.168.1.1".parse().unwrap()));
        assert!(!ext.contains("10.1.1.1".parse().unwrap()));
        // An address var cannot take ports, nor the reverse.
        let e = v.set("HOME_NET", "80").unwrap_err();
        assert!(e.contains("HOME_NET"), "{e}");
        assert!(v
            .set("HTTP_PORTS", "1.2.3.4")
            .unwrap_err()
            .contains("HTTP_PORTS"));
        assert_eq!(v.get("HTTP_PORTS"), Some((VarKind::Port, "80")));
        // New names.
        v.set("$MY_NET", "1.2.3.0/24").unwrap();
        assert_eq!(v.get("MY_NET").unwrap().0, VarKind::Address);
        v.set("WEB", "[80,443]").unwrap();
        assert_eq!(v.get("WEB").unwrap().0, VarKind::Port);
        v.set("ALT", "$HTTP_PORTS").unwrap();
        assert_eq!(v.get("ALT").unwrap().0, VarKind::Port);
        v.set("ALL", "any").unwrap();
        assert_eq!(v.get("ALL").unwrap().0, VarKind::Address);
        v.set("ALL_PORTS", "any").unwrap();
        assert_eq!(v.get("ALL_PORTS").unwrap().0, VarKind::Port);
        v.set_arg("X_PORT=8080").unwrap();
        assert_eq!(v.ports("X_PORT").unwrap(), PortSpec::Range(8080, 8080));
        // Bad values and names change nothing.
        let e = v.set("BAD", "[1.2.3.4").unwrap_err();
        assert!(e.contains("BAD"), "{e}");
        assert!(v.get("BAD").is_none());
        assert!(v.set("bad name", "any").is_err());
        assert!(v.set("", "any").is_err());
        assert!(v.set_arg("NOEQUALS").is_err());
        assert!(v
            .set("USES_UNKNOWN", "$NOPE")
            .unwrap_err()
            .contains("$NOPE"));
    }

    #[test]
    fn cycles_are_errors_not_overflows() {
        let mut v = Vars::default();
        // HOME_NET -> EXTERNAL_NET -> HOME_NET.
        let e = v.set("HOME_NET", "[$EXTERNAL_NET,1.2.3.4]").unwrap_err();
        assert!(e.contains("refers to itself"), "{e}");
        assert!(e.contains("HOME_NET"), "{e}");
        assert_eq!(
            v.get("HOME_NET").unwrap().1,
            "[192.168.0.0/16,10.0.0.0/8,172.16.0.0/12]"
        );
        let e = v.set("SELF", "!$SELF").unwrap_err();
        assert!(
            e.contains("`$SELF` refers to itself ($SELF -> $SELF)"),
            "{e}"
        );
        // A long chain is bounded by the nesting limit.
        let mut v = Vars::empty();
        v.set("V0", "1.2.3.4").unwrap();
        let mut failed = None;
        for i in 1..100 {
            if let Err(e) = v.set(&format!("V{i}"), &format!("$V{}", i - 1)) {
                failed = Some((i, e));
                break;
            }
        }
        let (i, e) = failed.expect("a 100-variable chain is refused");
        assert!(i > 20, "{i}");
        assert!(e.contains("nested more than"), "{e}");
    }

    #[test]
    fn exponential_expansion_is_bounded() {
        let mut v = Vars::empty();
        v.set("A0", "[1.2.3.4,5.6.7.8]").unwrap();
        let mut refused = false;
        for i in 1..30 {
            let prev = format!("$A{}", i - 1);
            if v.set(&format!("A{i}"), &format!("[{prev},{prev}]"))
                .is_err()
            {
                refused = true;
                break;
            }
        }
        assert!(refused);
    }

    #[test]
    fn load_yaml_section_only_file() {
        let mut f = tempfile::NamedTempFile::new().unwrap();
        writeln!(
            f,
            "vars:\n  address-groups:\n    HOME_NET: \"[10.0.0.0/8]\"\n    LAB: 192.0.2.0/24\n  port-groups:\n    HTTP_PORTS: \"[80,8080]\"\n    SSH_PORTS: 2222\n    NEW_ONE: any\n"
        )
        .unwrap();
        let mut v = Vars::default();
        v.load_yaml(f.path()).unwrap();
        assert_eq!(v.get("HOME_NET"), Some((VarKind::Address, "[10.0.0.0/8]")));
        assert_eq!(v.get("LAB").unwrap().0, VarKind::Address);
        assert_eq!(v.ports("SSH_PORTS").unwrap(), PortSpec::Range(2222, 2222));
        assert_eq!(v.get("NEW_ONE").unwrap().0, VarKind::Port);
        // Untouched defaults stay.
        assert_eq!(v.get("DNP3_PORTS"), Some((VarKind::Port, "20000")));
    }

    #[test]
    fn load_yaml_errors_name_the_variable_and_change_nothing() {
        let mut v = Vars::default();
        let e = v
            .load_yaml_str(
                "vars:\n  address-groups:\n    HOME_NET: \"[10.0.0.0/8\"\n  port-groups:\n    HTTP_PORTS: 99999\n",
                "bad.yaml",
            )
            .unwrap_err();
        assert!(e.starts_with("bad.yaml: "), "{e}");
        assert!(e.contains("$HOME_NET"), "{e}");
        assert!(e.contains("$HTTP_PORTS"), "{e}");
        assert_eq!(v.get("HTTP_PORTS").unwrap().1, "80");
        let e = v
            .load_yaml_str("vars:\n  port-groups:\n    X_PORTS: [1, 2]\n", "seq.yaml")
            .unwrap_err();
        assert!(e.contains("X_PORTS"), "{e}");
        assert!(v
            .load_yaml_str("other: 1\n", "none.yaml")
            .unwrap_err()
            .contains("no `vars:` section"));
        assert!(v.load_yaml_str("vars: [\n", "broken.yaml").is_err());
        assert!(v
            .load_yaml(Path::new("/nonexistent/suricata.yaml"))
            .is_err());
    }

    /// The real `suricata.yaml`, when Suricata is installed, loads, and its
    /// values are the defaults.
    #[test]
    fn load_the_installed_suricata_yaml() {
        let path = Path::new("/etc/suricata/suricata.yaml");
        if !path.exists() {
            eprintln!("skipped: {} does not exist", path.display());
            return;
        }
        let mut v = Vars::empty();
        v.load_yaml(path).unwrap();
        let d = Vars::default();
        for (name, kind, value) in d.iter() {
            assert_eq!(v.get(name), Some((kind, value)), "{name}");
        }
    }
}
