//! The configuration file's grammar (`pcap-fanout.txt` VI-A, VI-B and VII-A):
//!
//! ```text
//! # comment
//! key[@group] = value[,value…]
//! ```
//!
//! One setting per line. `#` starts a comment when it begins the line or
//! follows whitespace; blank lines are ignored; whitespace around the key,
//! the `@`, the `=` and each value is trimmed. The keys:
//!
//! | key | value |
//! |---|---|
//! | `def_group` | the default group, 0 to 65535 |
//! | `fanout`, `fanout@N` | a fan-out mode ([`FanoutSpec::parse`]) for every group, or for group N |
//! | `caplen`, `caplen@N` | snap length when the program sets none, 1 to [`MAX_CAPLEN`] |
//! | `group_<dev>` | the group of the sockets opened on `<dev>` (a virtual device such as `eth0:1` included) |
//! | `combined_channels@<dev>`, `rx_channels@<dev>`, `tx_channels@<dev>`, `other_channels@<dev>` | channel counts of `<dev>`, 0 to [`MAX_CHANNELS`] |
//! | `irq@<dev>.<n>` | the CPUs serving the interrupt of channel n ([`CpuSet::parse`]) |
//! | `locality`, `locality@N` | locality buffering: packets per batch, 1 to [`MAX_LOCALITY_BATCH`]; 0 turns it off |
//! | `locality_timeout`, `locality_timeout@N` | locality buffering: milliseconds a batch waits, 1 to [`MAX_LOCALITY_TIMEOUT_MS`] |
//!
//! After `@`, the fan-out, snap length and locality keys take a group
//! number; the channel keys take a device and `irq` a device, a dot and a
//! channel number (`irq@eth0.100.1` is channel 1 of `eth0.100`).
//!
//! PFQ's own keys ([`PFQ_KEYS`], such as `rx_slots`) and its bird-style
//! pfq-lang programs (lines starting with `>`) are accepted with a
//! [`Severity::NotApplicable`] diagnostic: streamcap captures through the
//! kernel's TPACKET socket and its fan-out modes. Any other malformed line
//! gives a [`Severity::Error`] diagnostic and is skipped; the lines around
//! it still apply. [`parse`] returns the entries in file order: when two
//! lines set the same key, the later one is the one that counts
//! ([`crate::settings::Settings`] applies them in that order).

pub use crate::channels::ChannelKind;
pub use crate::fanout::FanoutSpec;
use std::fmt;

/// The largest snap length `caplen` accepts (libpcap's largest).
pub const MAX_CAPLEN: u32 = 262_144;

/// The largest locality batch (`locality`), in packets.
pub const MAX_LOCALITY_BATCH: usize = 1_000_000;

/// The longest locality timeout (`locality_timeout`), in milliseconds.
pub const MAX_LOCALITY_TIMEOUT_MS: u64 = 60_000;

/// CPU numbers in a CPU list are below this.
pub const MAX_CPUS: usize = 4096;

/// The largest channel count, and one more than the largest channel
/// number of an `irq` key.
pub const MAX_CHANNELS: u32 = 4096;

/// The longest interface name the kernel accepts (`IFNAMSIZ` less the
/// terminating NUL).
pub const MAX_INTERFACE_LEN: usize = 15;

/// The longest device name accepted, a virtual device's `:<n>` included.
pub const MAX_DEVICE_LEN: usize = 32;

/// Keys of PFQ's configuration file that have no meaning for the kernel's
/// TPACKET socket: accepted (with or without `@…`) and reported as not
/// applicable.
pub const PFQ_KEYS: [&str; 9] = [
    "rx_slots",
    "tx_slots",
    "tx_sync",
    "tx_hw_queue",
    "tx_idx_thread",
    "tx_thread",
    "tx_queue",
    "vlan",
    "lang",
];

/// How much of a key or value a diagnostic quotes.
const QUOTE_LEN: usize = 64;

// ---------------------------------------------------------------------------
// Diagnostics
// ---------------------------------------------------------------------------

/// How serious a [`Diagnostic`] is.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Severity {
    /// The line (or environment variable) is malformed and was ignored.
    Error,
    /// The setting is understood but has no effect here (PFQ-only keys and
    /// programs, `PCAP_DRIVER`).
    NotApplicable,
}

/// A problem with one line of a configuration file or one environment
/// variable. Displays as `PATH:LINE: KEY: message`; without a line number
/// (environment variables, a file that cannot be read) as `PATH: KEY:
/// message`, and without a key as `PATH:LINE: message`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Diagnostic {
    /// The file's path, or `environment` for an environment variable.
    pub path: String,
    /// The line number, from 1; 0 when the diagnostic is not about a line.
    pub line: usize,
    /// The key as written (shortened to 64 characters), the variable's
    /// name, or empty.
    pub key: String,
    /// What is wrong.
    pub message: String,
    /// Whether the setting was ignored as malformed or has no effect here.
    pub severity: Severity,
}

impl Diagnostic {
    /// A diagnostic of `severity` about `key` at `path:line`.
    pub fn new(
        path: &str,
        line: usize,
        key: &str,
        message: impl Into<String>,
        severity: Severity,
    ) -> Diagnostic {
        Diagnostic {
            path: path.to_string(),
            line,
            key: quote(key),
            message: message.into(),
            severity,
        }
    }

    /// Whether the setting was ignored as malformed.
    pub fn is_error(&self) -> bool {
        self.severity == Severity::Error
    }
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.path)?;
        if self.line > 0 {
            write!(f, ":{}", self.line)?;
        }
        if !self.key.is_empty() {
            write!(f, ": {}", self.key)?;
        }
        write!(f, ": {}", self.message)
    }
}

/// `s`, shortened to [`QUOTE_LEN`] characters (with `…`) for a message.
pub(crate) fn quote(s: &str) -> String {
    match s.char_indices().nth(QUOTE_LEN) {
        Some((cut, _)) => format!("{}…", &s[..cut]),
        None => s.to_string(),
    }
}

// ---------------------------------------------------------------------------
// Values
// ---------------------------------------------------------------------------

/// A set of CPU numbers below [`MAX_CPUS`], held as a bit set of at
/// most 512 bytes (up to the word of its highest CPU).
#[derive(Clone, Default, PartialEq, Eq, Hash)]
pub struct CpuSet {
    /// Bit `cpu % 64` of word `cpu / 64`; never a zero last word, so that
    /// equal sets compare equal.
    words: Vec<u64>,
}

impl CpuSet {
    /// The empty set.
    pub fn new() -> CpuSet {
        CpuSet::default()
    }

    /// Reads a CPU list such as `0`, `0,2` or `0-3,8`: comma-separated CPU
    /// numbers and inclusive ranges, each below [`MAX_CPUS`], whitespace
    /// around each item trimmed. An empty list or item is an error.
    pub fn parse(text: &str) -> Result<CpuSet, String> {
        let mut set = CpuSet::new();
        if text.trim().is_empty() {
            return Err("empty CPU list".to_string());
        }
        for item in text.split(',') {
            let item = item.trim();
            if item.is_empty() {
                return Err("empty item in the CPU list".to_string());
            }
            let (first, last) = match item.split_once('-') {
                Some((a, b)) => (cpu_number(a.trim())?, cpu_number(b.trim())?),
                None => {
                    let n = cpu_number(item)?;
                    (n, n)
                }
            };
            if first > last {
                return Err(format!("CPU range `{}` runs backwards", quote(item)));
            }
            for cpu in first..=last {
                set.insert(cpu);
            }
        }
        Ok(set)
    }

    /// Adds `cpu`; returns false (and adds nothing) when it is not below
    /// [`MAX_CPUS`].
    pub fn insert(&mut self, cpu: usize) -> bool {
        if cpu >= MAX_CPUS {
            return false;
        }
        let word = cpu / 64;
        if self.words.len() <= word {
            self.words.resize(word + 1, 0);
        }
        self.words[word] |= 1 << (cpu % 64);
        true
    }

    /// Whether `cpu` is in the set.
    pub fn contains(&self, cpu: usize) -> bool {
        self.words
            .get(cpu / 64)
            .is_some_and(|w| w & (1 << (cpu % 64)) != 0)
    }

    /// How many CPUs the set holds.
    pub fn len(&self) -> usize {
        self.words.iter().map(|w| w.count_ones() as usize).sum()
    }

    /// Whether the set is empty.
    pub fn is_empty(&self) -> bool {
        self.words.is_empty()
    }

    /// The CPUs, in increasing order.
    pub fn iter(&self) -> impl Iterator<Item = usize> + '_ {
        (0..self.words.len() * 64).filter(|&cpu| self.contains(cpu))
    }

    /// The CPUs, in increasing order.
    pub fn to_vec(&self) -> Vec<usize> {
        self.iter().collect()
    }
}

impl fmt::Debug for CpuSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_set().entries(self.iter()).finish()
    }
}

/// One CPU number of a CPU list.
fn cpu_number(s: &str) -> Result<usize, String> {
    let max = MAX_CPUS as u64 - 1;
    number(s, 0, max)
        .map(|n| n as usize)
        .map_err(|_| format!("bad CPU `{}`: expected a number from 0 to {max}", quote(s)))
}

/// The CPUs of a list such as `0,2-3` (see [`CpuSet::parse`]), in
/// increasing order, each once; at most [`MAX_CPUS`] of them.
pub fn cpu_list(text: &str) -> Result<Vec<usize>, String> {
    CpuSet::parse(text).map(|set| set.to_vec())
}

/// A decimal number from `min` to `max`: ASCII digits only (no sign, no
/// spaces inside). `Err(())` when it is not one.
fn number(s: &str, min: u64, max: u64) -> Result<u64, ()> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return Err(());
    }
    // Leading zeros aside, more than 20 digits overflows u64 anyway.
    let n: u64 = s.parse().map_err(|_| ())?;
    if (min..=max).contains(&n) {
        Ok(n)
    } else {
        Err(())
    }
}

/// A group number, 0 to 65535 (a kernel fan-out group id).
pub fn parse_group(s: &str) -> Result<u16, String> {
    let s = s.trim();
    number(s, 0, u16::MAX.into())
        .map(|n| n as u16)
        .map_err(|_| format!("bad group `{}`: expected 0 to 65535", quote(s)))
}

/// A snap length, 1 to [`MAX_CAPLEN`].
pub fn parse_caplen(s: &str) -> Result<u32, String> {
    let s = s.trim();
    number(s, 1, MAX_CAPLEN.into())
        .map(|n| n as u32)
        .map_err(|_| format!("bad snap length `{}`: expected 1 to {MAX_CAPLEN}", quote(s)))
}

/// A channel count, 0 to [`MAX_CHANNELS`].
pub fn parse_channel_count(s: &str) -> Result<u32, String> {
    let s = s.trim();
    number(s, 0, MAX_CHANNELS.into())
        .map(|n| n as u32)
        .map_err(|_| {
            format!(
                "bad channel count `{}`: expected 0 to {MAX_CHANNELS}",
                quote(s)
            )
        })
}

/// A channel number, 0 to [`MAX_CHANNELS`] - 1.
pub fn parse_channel(s: &str) -> Result<u32, String> {
    let s = s.trim();
    number(s, 0, u64::from(MAX_CHANNELS) - 1)
        .map(|n| n as u32)
        .map_err(|_| {
            format!(
                "bad channel `{}`: expected 0 to {}",
                quote(s),
                MAX_CHANNELS - 1
            )
        })
}

/// A locality batch in packets, 0 (off) to [`MAX_LOCALITY_BATCH`].
pub fn parse_locality(s: &str) -> Result<usize, String> {
    let s = s.trim();
    number(s, 0, MAX_LOCALITY_BATCH as u64)
        .map(|n| n as usize)
        .map_err(|_| {
            format!(
                "bad locality batch `{}`: expected packets per batch, 1 to {MAX_LOCALITY_BATCH}, or 0 for off",
                quote(s)
            )
        })
}

/// A locality timeout in milliseconds, 1 to [`MAX_LOCALITY_TIMEOUT_MS`].
pub fn parse_locality_timeout(s: &str) -> Result<u64, String> {
    let s = s.trim();
    number(s, 1, MAX_LOCALITY_TIMEOUT_MS).map_err(|_| {
        format!(
            "bad locality timeout `{}`: expected milliseconds, 1 to {MAX_LOCALITY_TIMEOUT_MS}",
            quote(s)
        )
    })
}

/// The real interface of a device name: `eth0` for the virtual device
/// `eth0:1` (a name ending in `:` and digits, with something before the
/// `:`), the name itself otherwise. The suffix is always stripped, whether
/// or not a group setting names the virtual device.
pub fn interface_of(device: &str) -> &str {
    match device.rsplit_once(':') {
        Some((base, n))
            if !base.is_empty() && !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()) =>
        {
            base
        }
        _ => device,
    }
}

/// Checks a device name: 1 to [`MAX_DEVICE_LEN`] bytes, no whitespace,
/// control characters or `/`, and an interface part ([`interface_of`]) of
/// at most [`MAX_INTERFACE_LEN`] bytes.
pub fn check_device(device: &str) -> Result<(), String> {
    if device.is_empty() {
        return Err("missing device name".to_string());
    }
    if device.len() > MAX_DEVICE_LEN {
        return Err(format!(
            "device name `{}` is longer than {MAX_DEVICE_LEN} bytes",
            quote(device)
        ));
    }
    if device
        .chars()
        .any(|c| c.is_whitespace() || c.is_control() || c == '/')
    {
        return Err(format!(
            "bad device name `{}`: no whitespace, control characters or `/`",
            quote(device)
        ));
    }
    if interface_of(device).len() > MAX_INTERFACE_LEN {
        return Err(format!(
            "interface name `{}` is longer than {MAX_INTERFACE_LEN} bytes",
            quote(interface_of(device))
        ));
    }
    Ok(())
}

// ---------------------------------------------------------------------------
// Entries
// ---------------------------------------------------------------------------

/// One setting of the file, its value checked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Setting {
    /// `def_group = N`.
    DefGroup(u16),
    /// `fanout = mode` (`group` None) or `fanout@N = mode`.
    Fanout {
        /// The group after `@`, if any.
        group: Option<u16>,
        /// The mode.
        spec: FanoutSpec,
    },
    /// `caplen = n` or `caplen@N = n`.
    Caplen {
        /// The group after `@`, if any.
        group: Option<u16>,
        /// The snap length, 1 to [`MAX_CAPLEN`].
        caplen: u32,
    },
    /// `group_<dev> = N`.
    Group {
        /// The device as written (`eth0`, or a virtual `eth0:1`).
        device: String,
        /// The group.
        group: u16,
    },
    /// `combined_channels@<dev> = n` and the rx, tx and other forms.
    Channels {
        /// The device as written after `@`.
        device: String,
        /// Which count.
        kind: ChannelKind,
        /// The count, 0 to [`MAX_CHANNELS`].
        count: u32,
    },
    /// `irq@<dev>.<n> = cpus`.
    Irq {
        /// The device as written between `@` and the last `.`.
        device: String,
        /// The channel number, below [`MAX_CHANNELS`].
        channel: u32,
        /// The CPUs serving the channel's interrupt (not empty).
        cpus: CpuSet,
    },
    /// `locality = n` or `locality@N = n`: packets per batch, 0 for off.
    Locality {
        /// The group after `@`, if any.
        group: Option<u16>,
        /// Packets per batch, 0 (off) to [`MAX_LOCALITY_BATCH`].
        batch: usize,
    },
    /// `locality_timeout = ms` or `locality_timeout@N = ms`.
    LocalityTimeout {
        /// The group after `@`, if any.
        group: Option<u16>,
        /// Milliseconds, 1 to [`MAX_LOCALITY_TIMEOUT_MS`].
        ms: u64,
    },
}

/// A line of the file that parsed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    /// The line number, from 1.
    pub line: usize,
    /// The key as written, `@` part included, whitespace trimmed.
    pub key: String,
    /// What it sets.
    pub setting: Setting,
}

/// How a line that is not blank or a comment ended.
enum Line {
    /// A setting.
    Set(Setting),
    /// A PFQ key: understood, not applicable.
    Pfq,
}

/// Parses the text of a configuration file read from `path` (the path is
/// only used in diagnostics). Returns the entries that parsed, in file
/// order, and a diagnostic for every line that did not or that has no
/// effect here (see the module documentation). Both are at most one per
/// line.
pub fn parse(path: &str, text: &str) -> (Vec<Entry>, Vec<Diagnostic>) {
    let mut entries = Vec::new();
    let mut diagnostics = Vec::new();
    // Whether the previous line was part of a bird-style program.
    let mut in_program = false;
    for (index, raw) in text.lines().enumerate() {
        let line = index + 1;
        if raw.trim_start().starts_with('>') {
            if !in_program {
                diagnostics.push(Diagnostic::new(
                    path,
                    line,
                    ">",
                    "not applicable: a pfq-lang program (PFQ only); streamcap uses the kernel's fan-out modes (fanout = hash, lb, cpu, rollover, rnd or qm)",
                    Severity::NotApplicable,
                ));
            }
            in_program = true;
            continue;
        }
        in_program = false;
        let content = strip_comment(raw).trim();
        if content.is_empty() {
            continue;
        }
        let Some((key, value)) = content.split_once('=') else {
            let word = content.split_whitespace().next().unwrap_or(content);
            diagnostics.push(Diagnostic::new(
                path,
                line,
                word,
                "no `=`: expected key[@group] = value",
                Severity::Error,
            ));
            continue;
        };
        let key = key.trim();
        match parse_setting(key, value.trim()) {
            Ok(Line::Set(setting)) => entries.push(Entry {
                line,
                key: key.to_string(),
                setting,
            }),
            Ok(Line::Pfq) => diagnostics.push(Diagnostic::new(
                path,
                line,
                key,
                "not applicable: a PFQ socket setting; streamcap uses the kernel's TPACKET socket",
                Severity::NotApplicable,
            )),
            Err(message) => {
                diagnostics.push(Diagnostic::new(path, line, key, message, Severity::Error))
            }
        }
    }
    (entries, diagnostics)
}

/// `line` without its comment: from the first `#` that starts the line or
/// follows whitespace.
fn strip_comment(line: &str) -> &str {
    let mut previous_is_space = true;
    for (i, c) in line.char_indices() {
        if c == '#' && previous_is_space {
            return &line[..i];
        }
        previous_is_space = c.is_whitespace();
    }
    line
}

/// Parses `key = value` (both trimmed).
fn parse_setting(key: &str, value: &str) -> Result<Line, String> {
    if key.is_empty() {
        return Err("empty key before `=`".to_string());
    }
    let (name, at) = match key.split_once('@') {
        Some((name, at)) => (name.trim(), Some(at.trim())),
        None => (key, None),
    };
    if PFQ_KEYS.contains(&name) {
        return Ok(Line::Pfq);
    }
    let channel_kind = match name {
        "rx_channels" => Some(ChannelKind::Rx),
        "tx_channels" => Some(ChannelKind::Tx),
        "other_channels" => Some(ChannelKind::Other),
        "combined_channels" => Some(ChannelKind::Combined),
        _ => None,
    };
    let known = matches!(
        name,
        "def_group" | "fanout" | "caplen" | "locality" | "locality_timeout" | "irq"
    ) || channel_kind.is_some()
        || name.starts_with("group_");
    if !known {
        return Err(format!("unknown key `{}`", quote(name)));
    }
    if value.is_empty() {
        return Err("empty value".to_string());
    }
    // Every key but irq takes a single value.
    if name != "irq" && value.contains(',') {
        return Err(format!("takes one value, not a list (`{}`)", quote(value)));
    }
    let group = || at.map(parse_group).transpose();
    let setting = match name {
        "def_group" => {
            no_at(name, at)?;
            Setting::DefGroup(parse_group(value)?)
        }
        "fanout" => Setting::Fanout {
            group: group()?,
            spec: FanoutSpec::parse(value)?,
        },
        "caplen" => Setting::Caplen {
            group: group()?,
            caplen: parse_caplen(value)?,
        },
        "locality" => Setting::Locality {
            group: group()?,
            batch: parse_locality(value)?,
        },
        "locality_timeout" => Setting::LocalityTimeout {
            group: group()?,
            ms: parse_locality_timeout(value)?,
        },
        "irq" => {
            let Some(target) = at else {
                return Err("`irq` needs a device and a channel: irq@<dev>.<n>".to_string());
            };
            let Some((device, channel)) = target.rsplit_once('.') else {
                return Err(format!(
                    "`irq@{}` needs a channel: irq@<dev>.<n>",
                    quote(target)
                ));
            };
            let device = device.trim();
            check_device(device)?;
            Setting::Irq {
                device: device.to_string(),
                channel: parse_channel(channel)?,
                cpus: CpuSet::parse(value)?,
            }
        }
        _ => match (channel_kind, name.strip_prefix("group_")) {
            (Some(kind), _) => {
                let Some(device) = at else {
                    return Err(format!("`{name}` needs a device: {name}@<dev>"));
                };
                check_device(device)?;
                Setting::Channels {
                    device: device.to_string(),
                    kind,
                    count: parse_channel_count(value)?,
                }
            }
            (None, Some(device)) => {
                no_at(name, at)?;
                check_device(device)?;
                Setting::Group {
                    device: device.to_string(),
                    group: parse_group(value)?,
                }
            }
            (None, None) => return Err(format!("unknown key `{}`", quote(name))),
        },
    };
    Ok(Line::Set(setting))
}

/// An error when a key that takes no `@` part has one.
fn no_at(name: &str, at: Option<&str>) -> Result<(), String> {
    match at {
        None => Ok(()),
        Some(_) => Err(format!("`{}` takes no @ part", quote(name))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use streamcap::source::KernelFanout;

    fn one(text: &str) -> Setting {
        let (entries, diagnostics) = parse("t.conf", text);
        assert!(diagnostics.is_empty(), "{text:?}: {diagnostics:?}");
        assert_eq!(entries.len(), 1, "{text:?}");
        entries[0].setting.clone()
    }

    fn error(text: &str) -> String {
        let (entries, diagnostics) = parse("t.conf", text);
        assert!(entries.is_empty(), "{text:?}: {entries:?}");
        assert_eq!(diagnostics.len(), 1, "{text:?}");
        assert_eq!(diagnostics[0].severity, Severity::Error);
        diagnostics[0].to_string()
    }

    fn spec(mode: KernelFanout, rollover: bool) -> FanoutSpec {
        FanoutSpec { mode, rollover }
    }

    #[test]
    fn def_group() {
        assert_eq!(one("def_group = 11"), Setting::DefGroup(11));
        assert_eq!(one("def_group=0"), Setting::DefGroup(0));
        assert_eq!(one("def_group = 65535"), Setting::DefGroup(65535));
        assert!(error("def_group = 65536").contains("bad group `65536`"));
        assert!(error("def_group@2 = 1").contains("takes no @"));
    }

    #[test]
    fn fanout_every_mode_and_group() {
        for (text, mode) in [
            ("hash", KernelFanout::Hash),
            ("lb", KernelFanout::Lb),
            ("round_robin", KernelFanout::Lb),
            ("cpu", KernelFanout::Cpu),
            ("rollover", KernelFanout::Rollover),
            ("rnd", KernelFanout::Rnd),
            ("qm", KernelFanout::Qm),
            ("HASH", KernelFanout::Hash),
        ] {
            assert_eq!(
                one(&format!("fanout = {text}")),
                Setting::Fanout {
                    group: None,
                    spec: spec(mode, false)
                }
            );
            assert_eq!(
                one(&format!("fanout @ 3 = {text} + rollover")),
                Setting::Fanout {
                    group: Some(3),
                    spec: spec(mode, true)
                }
            );
        }
        assert!(error("fanout = steer_flow").contains("unknown fan-out mode `steer_flow`"));
        assert!(error("fanout = hash+defrag").contains("unknown fan-out flag `+defrag`"));
        assert!(error("fanout@x = hash").contains("bad group `x`"));
        assert!(error("fanout@ = hash").contains("bad group ``"));
        assert!(error("fanout@70000 = hash").contains("bad group `70000`"));
        assert!(error("fanout = hash,rnd").contains("takes one value"));
    }

    #[test]
    fn fanout_spec_round_trips() {
        for mode in KernelFanout::ALL {
            for rollover in [false, true] {
                let s = spec(mode, rollover);
                assert_eq!(FanoutSpec::parse(&s.to_string()), Ok(s));
            }
        }
        assert_eq!(FanoutSpec::default(), spec(KernelFanout::Hash, false));
        assert_eq!("lb+rollover".parse(), Ok(spec(KernelFanout::Lb, true)));
        assert!(FanoutSpec::parse("").is_err());
        assert!(FanoutSpec::parse("+rollover").is_err());
        assert!(FanoutSpec::parse("hash+rollover+rollover").is_err());
    }

    #[test]
    fn caplen() {
        assert_eq!(
            one("caplen = 64"),
            Setting::Caplen {
                group: None,
                caplen: 64
            }
        );
        assert_eq!(
            one("caplen@4 = 262144"),
            Setting::Caplen {
                group: Some(4),
                caplen: 262_144
            }
        );
        assert!(error("caplen = 0").contains("bad snap length `0`: expected 1 to 262144"));
        assert!(error("caplen = 262145").contains("bad snap length"));
        assert!(error("caplen = -1").contains("bad snap length"));
        assert!(error("caplen = +5").contains("bad snap length"));
        assert!(error("caplen = 99999999999999999999999").contains("bad snap length"));
        assert!(error("caplen = 6 4").contains("bad snap length `6 4`"));
    }

    #[test]
    fn group_of_devices_and_virtual_devices() {
        assert_eq!(
            one("group_eth0 = 2"),
            Setting::Group {
                device: "eth0".into(),
                group: 2
            }
        );
        assert_eq!(
            one("group_eth0:1 = 23"),
            Setting::Group {
                device: "eth0:1".into(),
                group: 23
            }
        );
        assert_eq!(
            one("group_enp3s0f1.100 = 7"),
            Setting::Group {
                device: "enp3s0f1.100".into(),
                group: 7
            }
        );
        assert!(error("group_ = 2").contains("missing device name"));
        assert!(error("group_eth0@1 = 2").contains("takes no @"));
        assert!(error("group_eth0 = x").contains("bad group `x`"));
        assert!(error("group_a/b = 1").contains("bad device name"));
        assert!(error("group_abcdefghijklmnop = 1").contains("longer than 15 bytes"));
    }

    #[test]
    fn channels_of_devices() {
        for (key, kind) in [
            ("combined_channels", ChannelKind::Combined),
            ("rx_channels", ChannelKind::Rx),
            ("tx_channels", ChannelKind::Tx),
            ("other_channels", ChannelKind::Other),
        ] {
            assert_eq!(
                one(&format!("{key}@eth0 = 2")),
                Setting::Channels {
                    device: "eth0".into(),
                    kind,
                    count: 2
                }
            );
            assert!(error(&format!("{key} = 2")).contains("needs a device"));
            assert!(error(&format!("{key}@eth0 = 4097")).contains("bad channel count"));
        }
        // The device after @ is not a group.
        assert_eq!(
            one("combined_channels@7 = 1"),
            Setting::Channels {
                device: "7".into(),
                kind: ChannelKind::Combined,
                count: 1
            }
        );
    }

    #[test]
    fn irq_of_channels() {
        let mut cpus = CpuSet::new();
        cpus.insert(0);
        assert_eq!(
            one("irq@eth0.0 = 0"),
            Setting::Irq {
                device: "eth0".into(),
                channel: 0,
                cpus
            }
        );
        let Setting::Irq {
            device,
            channel,
            cpus,
        } = one("irq@eth0.100.3 = 1, 4-6 ,9")
        else {
            panic!("not irq")
        };
        assert_eq!((device.as_str(), channel), ("eth0.100", 3));
        assert_eq!(cpus.to_vec(), [1, 4, 5, 6, 9]);
        assert!(error("irq@eth0 = 0").contains("needs a channel"));
        assert!(error("irq = 0").contains("needs a device and a channel"));
        assert!(error("irq@eth0.x = 0").contains("bad channel `x`"));
        assert!(error("irq@eth0.4096 = 0").contains("bad channel `4096`"));
        assert!(error("irq@.1 = 0").contains("missing device"));
        assert!(error("irq@eth0.1 = 4096").contains("bad CPU `4096`"));
        assert!(error("irq@eth0.1 = 3-1").contains("runs backwards"));
        assert!(error("irq@eth0.1 = 1,,2").contains("empty item"));
    }

    #[test]
    fn locality_and_its_timeout() {
        assert_eq!(
            one("locality = 8000"),
            Setting::Locality {
                group: None,
                batch: 8000
            }
        );
        assert_eq!(
            one("locality@9 = 0"),
            Setting::Locality {
                group: Some(9),
                batch: 0
            }
        );
        assert_eq!(
            one("locality_timeout = 100"),
            Setting::LocalityTimeout {
                group: None,
                ms: 100
            }
        );
        assert_eq!(
            one("locality_timeout@9 = 60000"),
            Setting::LocalityTimeout {
                group: Some(9),
                ms: 60_000
            }
        );
        assert!(error("locality = 1000001").contains("bad locality batch"));
        assert!(error("locality_timeout = 0").contains("bad locality timeout"));
        assert!(error("locality_timeout = 60001").contains("bad locality timeout"));
    }

    #[test]
    fn cpu_lists() {
        assert_eq!(cpu_list("0,2-3"), Ok(vec![0, 2, 3]));
        assert_eq!(cpu_list(" 3 , 1, 1-2 "), Ok(vec![1, 2, 3]));
        assert_eq!(cpu_list("4095"), Ok(vec![4095]));
        assert_eq!(cpu_list("0-4095").map(|v| v.len()), Ok(4096));
        assert!(cpu_list("").is_err());
        assert!(cpu_list("1-").is_err());
        assert!(cpu_list("-1").is_err());
        assert!(cpu_list("a").is_err());
        assert!(cpu_list("0-4096").is_err());
        let set = CpuSet::parse("1,64,4095").unwrap();
        assert_eq!((set.len(), set.is_empty()), (3, false));
        assert!(set.contains(64) && !set.contains(65) && !set.contains(5000));
        assert_eq!(format!("{set:?}"), "{1, 64, 4095}");
        assert!(CpuSet::new().is_empty());
        assert!(!CpuSet::new().insert(4096));
    }

    #[test]
    fn comments_blank_lines_and_whitespace() {
        let text = "# pcap.conf\n\n   \n  # indented comment\ncaplen = 64 # a comment\n\tdef_group\t=\t11\t\ngroup_eth#0 = 3\r\nfanout=hash#not a comment\n";
        let (entries, diagnostics) = parse("t.conf", text);
        assert_eq!(
            diagnostics.iter().map(ToString::to_string).collect::<Vec<_>>(),
            ["t.conf:8: fanout: unknown fan-out mode `hash#not a comment`: expected hash, lb, round_robin, cpu, rollover, rnd or qm, optionally followed by +rollover"]
        );
        let got: Vec<_> = entries.iter().map(|e| (e.line, e.key.as_str())).collect();
        assert_eq!(got, [(5, "caplen"), (6, "def_group"), (7, "group_eth#0")]);
        assert_eq!(entries[1].setting, Setting::DefGroup(11));
    }

    #[test]
    fn bad_lines_name_path_line_and_key_and_the_rest_applies() {
        let text = "caplen = 64\n\
                    no equals sign\n\
                    unknown_key = 1\n\
                    caplen = many\n\
                    fanout = spray\n\
                    fanout@group = hash\n\
                    def_group =\n\
                    = 5\n\
                    caplen = 128\n";
        let (entries, diagnostics) = parse("/etc/pcap.conf", text);
        let shown: Vec<String> = diagnostics.iter().map(ToString::to_string).collect();
        assert_eq!(
            shown,
            [
                "/etc/pcap.conf:2: no: no `=`: expected key[@group] = value",
                "/etc/pcap.conf:3: unknown_key: unknown key `unknown_key`",
                "/etc/pcap.conf:4: caplen: bad snap length `many`: expected 1 to 262144",
                "/etc/pcap.conf:5: fanout: unknown fan-out mode `spray`: expected hash, lb, round_robin, cpu, rollover, rnd or qm, optionally followed by +rollover",
                "/etc/pcap.conf:6: fanout@group: bad group `group`: expected 0 to 65535",
                "/etc/pcap.conf:7: def_group: empty value",
                "/etc/pcap.conf:8: empty key before `=`",
            ]
        );
        assert!(diagnostics.iter().all(Diagnostic::is_error));
        assert_eq!(
            entries.iter().map(|e| e.line).collect::<Vec<_>>(),
            [1, 9],
            "the lines around the bad ones still apply"
        );
    }

    #[test]
    fn pfq_lines_are_not_applicable() {
        let text = "# Pcap configuration file (PFQ flavor)\n\
                    def_group = 11\n\
                    caplen = 64\n\
                    rx_slots = 131072\n\
                    > main = do\n\
                    >     tcp\n\
                    >     steer_flow\n\
                    vlan@11 = 1,2,3\n\
                    > main = steer_ip\n";
        let (entries, diagnostics) = parse("pfq.conf", text);
        assert_eq!(entries.len(), 2);
        assert!(diagnostics
            .iter()
            .all(|d| d.severity == Severity::NotApplicable));
        let at: Vec<_> = diagnostics
            .iter()
            .map(|d| (d.line, d.key.as_str()))
            .collect();
        assert_eq!(at, [(4, "rx_slots"), (5, ">"), (8, "vlan@11"), (9, ">")]);
        assert!(diagnostics[0]
            .to_string()
            .starts_with("pfq.conf:4: rx_slots: not applicable"));
    }

    #[test]
    fn the_papers_examples_parse() {
        let text = "group_eth0 = 2\ngroup_eth3 = 3\nfanout@2 = hash\nfanout@3 = rnd\n\
                    group_eth0 = 11\ngroup_eth0:1 = 23\n\
                    combined_channels@eth0 = 2\nirq@eth0.0 = 0\nirq@eth0.1 = 1\n";
        let (entries, diagnostics) = parse("p", text);
        assert!(diagnostics.is_empty(), "{diagnostics:?}");
        assert_eq!(entries.len(), 9);
    }

    #[test]
    fn interface_of_strips_a_virtual_suffix() {
        assert_eq!(interface_of("eth0:1"), "eth0");
        assert_eq!(interface_of("eth0:12"), "eth0");
        assert_eq!(interface_of("eth0"), "eth0");
        assert_eq!(interface_of("eth0:"), "eth0:");
        assert_eq!(interface_of(":1"), ":1");
        assert_eq!(interface_of("eth0:a"), "eth0:a");
        assert_eq!(interface_of("eth0.100:2"), "eth0.100");
    }

    #[test]
    fn long_keys_and_values_are_shortened_in_messages() {
        let key = "k".repeat(1000);
        let shown = error(&format!("{key} = 1"));
        assert!(shown.len() < 300, "{shown}");
        assert!(shown.contains('…'));
        let d = Diagnostic::new("environment", 0, "PCAP_CAPLEN", "bad", Severity::Error);
        assert_eq!(d.to_string(), "environment: PCAP_CAPLEN: bad");
    }
}
