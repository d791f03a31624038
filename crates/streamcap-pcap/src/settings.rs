//! The environment variables of `pcap-fanout.txt` Table I and the
//! configuration file ([`crate::config`]), resolved per device.
//!
//! | variable | meaning |
//! |---|---|
//! | `PCAP_CONFIG` | the configuration file; when unset, the first of `/etc/pcap.conf` and `$HOME/.pcap.conf` that exists; when empty, none |
//! | `PCAP_GROUP`, `PCAP_DEF_GROUP` | the default group (`PCAP_GROUP` wins when both are set) |
//! | `PCAP_GROUP_<dev>` | the group of the sockets opened on `<dev>` |
//! | `PCAP_FANOUT` | the fan-out mode of every group ([`FanoutSpec::parse`]) |
//! | `PCAP_CAPLEN` | the snap length, whatever the program asks for |
//! | `PCAP_CHANNEL_<dev>` | the number of combined channels of `<dev>` |
//! | `PCAP_IRQ_<dev>_<n>` | the CPUs serving the interrupt of channel n of `<dev>` (a CPU list) |
//! | `PCAP_LOCALITY` | locality buffering: packets per batch (0: off) |
//! | `PCAP_LOCALITY_TIMEOUT` | locality buffering: milliseconds a batch waits |
//! | `PCAP_DRIVER` | accepted, not applicable: streamcap uses the kernel's TPACKET socket |
//!
//! A device name inside a variable's name is written as it is (`PCAP_GROUP_eth0:1`,
//! `PCAP_GROUP_br-lan`) or with every character other than an ASCII
//! letter or digit replaced by `_` (`PCAP_GROUP_eth0_1`, `PCAP_GROUP_br_lan`),
//! which shells accept; when both are set, the name as it is wins.
//! An empty variable counts as unset. Environment variables override the
//! file; a malformed variable gives a [`Diagnostic`] (path `environment`,
//! key the variable's name) and is ignored. Other variables, `PCAP_*` ones
//! included, are ignored.

use crate::config::{self, Entry, Setting, Severity};
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

pub use crate::channels::{ChannelKind, ChannelRequest};
pub use crate::config::{cpu_list, interface_of, CpuSet, Diagnostic};
pub use crate::fanout::FanoutSpec;

/// The locality timeout when neither the environment nor the file sets
/// one, in milliseconds (the value of `locality-buffering.txt`'s
/// experiments).
pub const DEFAULT_LOCALITY_TIMEOUT_MS: u64 = 100;

/// The largest configuration file read, in bytes; a larger one is ignored
/// with a diagnostic.
pub const MAX_CONFIG_BYTES: u64 = 1 << 20;

/// The `path` of diagnostics about environment variables.
pub const ENVIRONMENT: &str = "environment";

/// The snap length the environment or the file asks for.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Caplen {
    /// `PCAP_CAPLEN`: applies whatever the program asked for.
    Override(u32),
    /// `caplen` or `caplen@N` of the file: applies only when the program
    /// set no snap length.
    Default(u32),
}

impl Caplen {
    /// The snap length.
    pub fn value(self) -> u32 {
        match self {
            Caplen::Override(n) | Caplen::Default(n) => n,
        }
    }

    /// The snap length the handle gets from this setting, or `None` when
    /// the program's own snap length stands (a default, and the program
    /// set one).
    pub fn applies(self, program_set_snaplen: bool) -> Option<u32> {
        match self {
            Caplen::Override(n) => Some(n),
            Caplen::Default(n) => (!program_set_snaplen).then_some(n),
        }
    }
}

/// Locality buffering (`locality-buffering.txt`): packets are gathered in
/// batches and each batch handed out sorted by port.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct Locality {
    /// Packets per batch, 1 to [`config::MAX_LOCALITY_BATCH`].
    pub batch: usize,
    /// How long a batch waits for more packets, in milliseconds, 1 to
    /// [`config::MAX_LOCALITY_TIMEOUT_MS`].
    pub timeout_ms: u64,
}

/// What a handle opened on one device gets from the environment and the
/// file ([`Settings::device`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeviceSettings {
    /// The real interface: the device name without a virtual device's
    /// `:<digits>` suffix ([`interface_of`]).
    pub interface: String,
    /// The fan-out group the handle joins, or `None` for no fan-out.
    pub group: Option<u16>,
    /// The fan-out mode of that group.
    pub fanout: FanoutSpec,
    /// The snap length asked for, if any.
    pub caplen: Option<Caplen>,
    /// Locality buffering, or `None` for off.
    pub locality: Option<Locality>,
    /// Channel counts requested for the interface (a setting written for
    /// one of its virtual devices, `combined_channels@eth0:1`, counts for
    /// the interface).
    pub channels: ChannelRequest,
    /// The CPUs of each channel's interrupt of the interface, by
    /// increasing channel number, each channel once
    /// ([`CpuSet::to_vec`] lists them).
    pub irq: Vec<(u32, CpuSet)>,
}

/// What the environment sets.
#[derive(Clone, Debug, Default)]
struct EnvLayer {
    /// `PCAP_GROUP`.
    group: Option<u16>,
    /// `PCAP_DEF_GROUP`.
    def_group: Option<u16>,
    /// `PCAP_GROUP_<dev>`, by the device as written in the name.
    groups: HashMap<String, u16>,
    fanout: Option<FanoutSpec>,
    caplen: Option<u32>,
    locality: Option<usize>,
    timeout_ms: Option<u64>,
    /// `PCAP_CHANNEL_<dev>`, by the interface of the device as written.
    channels: HashMap<String, u32>,
    /// `PCAP_IRQ_<dev>_<n>`, by the interface of the device as written.
    irq: HashMap<String, BTreeMap<u32, CpuSet>>,
}

/// What the file sets, the later line winning.
#[derive(Clone, Debug, Default)]
struct FileLayer {
    def_group: Option<u16>,
    /// `group_<dev>`, by the device as written.
    groups: HashMap<String, u16>,
    fanout: Option<FanoutSpec>,
    fanout_at: HashMap<u16, FanoutSpec>,
    caplen: Option<u32>,
    caplen_at: HashMap<u16, u32>,
    locality: Option<usize>,
    locality_at: HashMap<u16, usize>,
    timeout_ms: Option<u64>,
    timeout_at: HashMap<u16, u64>,
    /// By interface (a virtual device's settings go to its interface).
    channels: HashMap<String, ChannelRequest>,
    /// By interface.
    irq: HashMap<String, BTreeMap<u32, CpuSet>>,
}

impl FileLayer {
    fn apply(&mut self, entry: Entry) {
        match entry.setting {
            Setting::DefGroup(g) => self.def_group = Some(g),
            Setting::Fanout { group, spec } => {
                at(&mut self.fanout, &mut self.fanout_at, group, spec)
            }
            Setting::Caplen { group, caplen } => {
                at(&mut self.caplen, &mut self.caplen_at, group, caplen)
            }
            Setting::Locality { group, batch } => {
                at(&mut self.locality, &mut self.locality_at, group, batch)
            }
            Setting::LocalityTimeout { group, ms } => {
                at(&mut self.timeout_ms, &mut self.timeout_at, group, ms)
            }
            Setting::Group { device, group } => {
                self.groups.insert(device, group);
            }
            Setting::Channels {
                device,
                kind,
                count,
            } => self
                .channels
                .entry(interface_of(&device).to_string())
                .or_default()
                .set(kind, count),
            Setting::Irq {
                device,
                channel,
                cpus,
            } => {
                self.irq
                    .entry(interface_of(&device).to_string())
                    .or_default()
                    .insert(channel, cpus);
            }
        }
    }
}

/// Sets the global value (no group) or the value of one group.
fn at<T>(global: &mut Option<T>, by_group: &mut HashMap<u16, T>, group: Option<u16>, value: T) {
    match group {
        None => *global = Some(value),
        Some(g) => {
            by_group.insert(g, value);
        }
    }
}

/// `device` with every character other than an ASCII letter or digit
/// replaced by `_`: the form a device name takes in an environment
/// variable's name written for a shell.
pub fn env_name_form(device: &str) -> String {
    device
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect()
}

/// The environment variables and the configuration file, ready to be
/// resolved per device. Build it with [`Settings::from_env`] (the process's
/// environment and file) or [`Settings::from_parts`]; the default value
/// sets nothing.
#[derive(Clone, Debug, Default)]
pub struct Settings {
    env: EnvLayer,
    file: FileLayer,
}

impl Settings {
    /// The settings of this process: its environment and the
    /// configuration file it names (`PCAP_CONFIG`) or the first default
    /// file that exists, read up to [`MAX_CONFIG_BYTES`]. Prints every
    /// diagnostic on stderr, prefixed `libstreamcap_pcap: `. Environment
    /// variables whose name or value is not UTF-8 are ignored.
    pub fn from_env() -> Settings {
        let env: Vec<(String, String)> = std::env::vars_os()
            .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
            .collect();
        let home = env
            .iter()
            .rev()
            .find(|(k, _)| k == "HOME")
            .map(|(_, v)| v.as_str());
        let defaults = default_paths(home);
        let (settings, diagnostics) = load(&env, &defaults);
        for d in &diagnostics {
            eprintln!("libstreamcap_pcap: {d}");
        }
        settings
    }

    /// The settings of environment `env` (name, value pairs in the
    /// environment's order; for a name given twice, the later pair counts)
    /// and of the file `file` (its path, for diagnostics, and its text),
    /// with a diagnostic for every line or variable that is malformed or
    /// not applicable: the file's first, in line order. `PCAP_CONFIG` is
    /// not read here.
    pub fn from_parts<I, K, V>(env: I, file: Option<(&str, &str)>) -> (Settings, Vec<Diagnostic>)
    where
        I: IntoIterator<Item = (K, V)>,
        K: AsRef<str>,
        V: AsRef<str>,
    {
        let mut settings = Settings::default();
        let mut diagnostics = Vec::new();
        if let Some((path, text)) = file {
            let (entries, file_diagnostics) = config::parse(path, text);
            diagnostics.extend(file_diagnostics);
            for entry in entries {
                settings.file.apply(entry);
            }
        }
        for (name, value) in env {
            let (name, value) = (name.as_ref(), value.as_ref().trim());
            if let Err((message, severity)) = settings.env.apply(name, value) {
                diagnostics.push(Diagnostic::new(ENVIRONMENT, 0, name, message, severity));
            }
        }
        (settings, diagnostics)
    }

    /// The default group: `PCAP_GROUP`, `PCAP_DEF_GROUP`, then the file's
    /// `def_group`.
    pub fn default_group(&self) -> Option<u16> {
        self.env
            .group
            .or(self.env.def_group)
            .or(self.file.def_group)
    }

    /// What a handle opened on `opened_as` (an interface such as `eth0`, or
    /// a virtual device such as `eth0:1`) gets:
    ///
    /// - group: `PCAP_GROUP_<opened_as>`, then `group_<opened_as>` of the
    ///   file, then the default group ([`Settings::default_group`]); a
    ///   virtual device does not take its interface's group;
    /// - fan-out mode: `PCAP_FANOUT`, then `fanout@<group>`, then `fanout`,
    ///   then `hash`;
    /// - snap length: `PCAP_CAPLEN` as an override, else `caplen@<group>`
    ///   or `caplen` as a default;
    /// - locality: batch from `PCAP_LOCALITY`, then `locality@<group>`,
    ///   then `locality` (0: off); timeout likewise, then
    ///   [`DEFAULT_LOCALITY_TIMEOUT_MS`];
    /// - channels and IRQ CPUs of the interface: the environment's for
    ///   each count and channel, then the file's.
    pub fn device(&self, opened_as: &str) -> DeviceSettings {
        let interface = interface_of(opened_as);
        let mangled_device = env_name_form(opened_as);
        let mangled_interface = env_name_form(interface);
        let group = self
            .env
            .groups
            .get(opened_as)
            .or_else(|| self.env.groups.get(&mangled_device))
            .or_else(|| self.file.groups.get(opened_as))
            .copied()
            .or_else(|| self.default_group());
        let file = &self.file;
        let fanout = self
            .env
            .fanout
            .or_else(|| group.and_then(|g| file.fanout_at.get(&g).copied()))
            .or(file.fanout)
            .unwrap_or_default();
        let caplen = self.env.caplen.map(Caplen::Override).or_else(|| {
            group
                .and_then(|g| file.caplen_at.get(&g).copied())
                .or(file.caplen)
                .map(Caplen::Default)
        });
        let batch = self
            .env
            .locality
            .or_else(|| group.and_then(|g| file.locality_at.get(&g).copied()))
            .or(file.locality);
        let timeout_ms = self
            .env
            .timeout_ms
            .or_else(|| group.and_then(|g| file.timeout_at.get(&g).copied()))
            .or(file.timeout_ms)
            .unwrap_or(DEFAULT_LOCALITY_TIMEOUT_MS);
        let locality = batch
            .filter(|&b| b > 0)
            .map(|batch| Locality { batch, timeout_ms });

        let mut channels = file.channels.get(interface).copied().unwrap_or_default();
        if let Some(&n) = self
            .env
            .channels
            .get(interface)
            .or_else(|| self.env.channels.get(&mangled_interface))
        {
            channels.combined = Some(n);
        }
        let mut irq = file.irq.get(interface).cloned().unwrap_or_default();
        for key in [mangled_interface.as_str(), interface] {
            if let Some(env_irq) = self.env.irq.get(key) {
                irq.extend(env_irq.iter().map(|(&c, cpus)| (c, cpus.clone())));
            }
        }
        DeviceSettings {
            interface: interface.to_string(),
            group,
            fanout,
            caplen,
            locality,
            channels,
            irq: irq.into_iter().collect(),
        }
    }

    /// Whether locality buffering may apply to any handle (a batch size
    /// other than 0 is set anywhere): when not, the read calls go straight
    /// to libpcap without looking the handle up.
    pub fn locality_anywhere(&self) -> bool {
        let set = |b: &Option<usize>| b.is_some_and(|b| b > 0);
        set(&self.env.locality)
            || set(&self.file.locality)
            || self.file.locality_at.values().any(|&b| b > 0)
    }

    /// Locality buffering of a handle that reads a file (it has no device,
    /// hence no group): `PCAP_LOCALITY` or the file's `locality` (0: off),
    /// with `PCAP_LOCALITY_TIMEOUT`, the file's `locality_timeout` or
    /// [`DEFAULT_LOCALITY_TIMEOUT_MS`].
    pub fn locality_for_offline(&self) -> Option<Locality> {
        let batch = self.env.locality.or(self.file.locality)?;
        let timeout_ms = self
            .env
            .timeout_ms
            .or(self.file.timeout_ms)
            .unwrap_or(DEFAULT_LOCALITY_TIMEOUT_MS);
        (batch > 0).then_some(Locality { batch, timeout_ms })
    }
}

impl EnvLayer {
    /// Takes in variable `name` (its value trimmed); `Err` with the
    /// diagnostic's message when it is malformed or not applicable.
    fn apply(&mut self, name: &str, value: &str) -> Result<(), (String, Severity)> {
        if !name.starts_with("PCAP_") || value.is_empty() {
            return Ok(());
        }
        let err = |message: String| (message, Severity::Error);
        match name {
            "PCAP_CONFIG" => {}
            "PCAP_DRIVER" => {
                return Err((
                    "not applicable: streamcap captures through the kernel's TPACKET socket"
                        .to_string(),
                    Severity::NotApplicable,
                ))
            }
            "PCAP_GROUP" => self.group = Some(config::parse_group(value).map_err(err)?),
            "PCAP_DEF_GROUP" => self.def_group = Some(config::parse_group(value).map_err(err)?),
            "PCAP_FANOUT" => self.fanout = Some(FanoutSpec::parse(value).map_err(err)?),
            "PCAP_CAPLEN" => self.caplen = Some(config::parse_caplen(value).map_err(err)?),
            "PCAP_LOCALITY" => self.locality = Some(config::parse_locality(value).map_err(err)?),
            "PCAP_LOCALITY_TIMEOUT" => {
                self.timeout_ms = Some(config::parse_locality_timeout(value).map_err(err)?)
            }
            _ => {
                if let Some(device) = name.strip_prefix("PCAP_GROUP_") {
                    config::check_device(device).map_err(err)?;
                    let group = config::parse_group(value).map_err(err)?;
                    self.groups.insert(device.to_string(), group);
                } else if let Some(device) = name.strip_prefix("PCAP_CHANNEL_") {
                    config::check_device(device).map_err(err)?;
                    let count = config::parse_channel_count(value).map_err(err)?;
                    self.channels
                        .insert(interface_of(device).to_string(), count);
                } else if let Some(rest) = name.strip_prefix("PCAP_IRQ_") {
                    let Some((device, channel)) = rest.rsplit_once('_') else {
                        return Err(err("expected PCAP_IRQ_<dev>_<channel>".to_string()));
                    };
                    config::check_device(device).map_err(err)?;
                    let channel = config::parse_channel(channel).map_err(err)?;
                    let cpus = CpuSet::parse(value).map_err(err)?;
                    self.irq
                        .entry(interface_of(device).to_string())
                        .or_default()
                        .insert(channel, cpus);
                }
            }
        }
        Ok(())
    }
}

/// The configuration files tried when `PCAP_CONFIG` is unset:
/// `/etc/pcap.conf`, then `$HOME/.pcap.conf`.
fn default_paths(home: Option<&str>) -> Vec<PathBuf> {
    let mut paths = vec![PathBuf::from("/etc/pcap.conf")];
    if let Some(home) = home.filter(|h| !h.is_empty()) {
        paths.push(Path::new(home).join(".pcap.conf"));
    }
    paths
}

/// The settings of `env`, with the file `PCAP_CONFIG` names, or the first
/// of `defaults` that exists.
fn load(env: &[(String, String)], defaults: &[PathBuf]) -> (Settings, Vec<Diagnostic>) {
    let named = env
        .iter()
        .rev()
        .find(|(k, _)| k == "PCAP_CONFIG")
        .map(|(_, v)| v.trim());
    let path = match named {
        Some("") => None,
        Some(p) => Some(PathBuf::from(p)),
        None => defaults.iter().find(|p| p.exists()).cloned(),
    };
    let mut diagnostics = Vec::new();
    let mut text = None;
    if let Some(path) = &path {
        match read_config(path) {
            Ok(t) => text = Some(t),
            Err(message) => diagnostics.push(Diagnostic::new(
                &path.display().to_string(),
                0,
                "",
                message,
                Severity::Error,
            )),
        }
    }
    let shown = path.as_ref().map(|p| p.display().to_string());
    let file = shown.as_deref().zip(text.as_deref());
    let (settings, more) = Settings::from_parts(env.iter().map(|(k, v)| (k, v)), file);
    diagnostics.extend(more);
    (settings, diagnostics)
}

/// The text of the configuration file at `path`: a regular file of at
/// most [`MAX_CONFIG_BYTES`], bytes that are not UTF-8 replaced by U+FFFD.
fn read_config(path: &Path) -> Result<String, String> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    let too_large = || format!("cannot read: larger than {MAX_CONFIG_BYTES} bytes");
    let meta = std::fs::metadata(path).map_err(|e| format!("cannot read: {e}"))?;
    if !meta.is_file() {
        return Err("cannot read: not a regular file".to_string());
    }
    if meta.len() > MAX_CONFIG_BYTES {
        return Err(too_large());
    }
    // Non-blocking, in case the file was replaced by a FIFO since.
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| format!("cannot read: {e}"))?;
    let mut bytes = Vec::new();
    file.take(MAX_CONFIG_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("cannot read: {e}"))?;
    if bytes.len() as u64 > MAX_CONFIG_BYTES {
        return Err(too_large());
    }
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use streamcap::source::KernelFanout;

    const NO_ENV: [(&str, &str); 0] = [];

    fn settings(env: &[(&str, &str)], file: &str) -> Settings {
        let (s, diagnostics) = Settings::from_parts(env.iter().copied(), Some(("t.conf", file)));
        assert!(diagnostics.is_empty(), "{diagnostics:?}");
        s
    }

    fn diagnostics(env: &[(&str, &str)], file: &str) -> (Settings, Vec<String>) {
        let (s, d) = Settings::from_parts(env.iter().copied(), Some(("t.conf", file)));
        (s, d.iter().map(ToString::to_string).collect())
    }

    fn fanout(mode: KernelFanout, rollover: bool) -> FanoutSpec {
        FanoutSpec { mode, rollover }
    }

    fn cpus(list: &str) -> CpuSet {
        CpuSet::parse(list).unwrap()
    }

    #[test]
    fn nothing_set() {
        let (s, d) = Settings::from_parts(NO_ENV, None);
        assert!(d.is_empty());
        assert_eq!(
            s.device("eth0"),
            DeviceSettings {
                interface: "eth0".into(),
                group: None,
                fanout: FanoutSpec::default(),
                caplen: None,
                locality: None,
                channels: ChannelRequest::default(),
                irq: vec![],
            }
        );
        assert_eq!(s.locality_for_offline(), None);
        assert_eq!(Settings::default().device("lo").group, None);
    }

    #[test]
    fn group_precedence() {
        let file = "def_group = 1\ngroup_eth0 = 2\n";
        let s = settings(&[], file);
        assert_eq!(s.device("eth0").group, Some(2));
        assert_eq!(s.device("eth1").group, Some(1));
        let s = settings(&[("PCAP_DEF_GROUP", "3")], file);
        assert_eq!(
            (s.device("eth0").group, s.device("eth1").group),
            (Some(2), Some(3))
        );
        // PCAP_GROUP wins over PCAP_DEF_GROUP, in either order.
        for env in [
            [("PCAP_GROUP", "4"), ("PCAP_DEF_GROUP", "3")],
            [("PCAP_DEF_GROUP", "3"), ("PCAP_GROUP", "4")],
        ] {
            let s = settings(&env, file);
            assert_eq!(
                (s.device("eth0").group, s.device("eth1").group),
                (Some(2), Some(4))
            );
        }
        let s = settings(&[("PCAP_GROUP", "4"), ("PCAP_GROUP_eth0", "5")], file);
        assert_eq!(
            (s.device("eth0").group, s.device("eth1").group),
            (Some(5), Some(4))
        );
    }

    #[test]
    fn the_papers_per_device_example() {
        // PCAP_DEF_GROUP=42 PCAP_GROUP_eth0=11 tcpdump -n -i pfq:eth0^eth1
        let s = settings(&[("PCAP_DEF_GROUP", "42"), ("PCAP_GROUP_eth0", "11")], "");
        assert_eq!(s.device("eth0").group, Some(11));
        assert_eq!(s.device("eth1").group, Some(42));
        // PCAP_FANOUT="rnd" PCAP_GROUP=3 foo, whatever the file says.
        let file = "def_group = 7\nfanout = hash\nfanout@3 = cpu\n";
        let s = settings(&[("PCAP_FANOUT", "rnd"), ("PCAP_GROUP", "3")], file);
        let d = s.device("eth0");
        assert_eq!(
            (d.group, d.fanout),
            (Some(3), fanout(KernelFanout::Rnd, false))
        );
    }

    #[test]
    fn virtual_devices() {
        let s = settings(&[], "def_group = 5\ngroup_eth0 = 11\ngroup_eth0:1 = 23\n");
        let d = s.device("eth0:1");
        assert_eq!((d.interface.as_str(), d.group), ("eth0", Some(23)));
        let d = s.device("eth0");
        assert_eq!((d.interface.as_str(), d.group), ("eth0", Some(11)));
        // A virtual device no setting names: still eth0, the default group
        // (not eth0's).
        let d = s.device("eth0:2");
        assert_eq!((d.interface.as_str(), d.group), ("eth0", Some(5)));
        let s = settings(&[("PCAP_GROUP_eth0:1", "30")], "group_eth0:1 = 23\n");
        assert_eq!(s.device("eth0:1").group, Some(30));
        assert_eq!(s.device("eth0").group, None);
    }

    #[test]
    fn device_names_in_variable_names() {
        for (name, device) in [
            ("PCAP_GROUP_eth0:1", "eth0:1"),
            ("PCAP_GROUP_eth0_1", "eth0:1"),
            ("PCAP_GROUP_br-lan", "br-lan"),
            ("PCAP_GROUP_br_lan", "br-lan"),
            ("PCAP_GROUP_eth0.100", "eth0.100"),
            ("PCAP_GROUP_eth0_100", "eth0.100"),
        ] {
            let s = settings(&[(name, "9")], "");
            assert_eq!(s.device(device).group, Some(9), "{name}");
        }
        // The name as it is beats the shell form, in either order.
        for env in [
            [("PCAP_GROUP_br-lan", "1"), ("PCAP_GROUP_br_lan", "2")],
            [("PCAP_GROUP_br_lan", "2"), ("PCAP_GROUP_br-lan", "1")],
        ] {
            let s = settings(&env, "");
            assert_eq!(s.device("br-lan").group, Some(1));
            assert_eq!(s.device("br_lan").group, Some(2));
        }
        assert_eq!(env_name_form("eth0:1"), "eth0_1");
        assert_eq!(env_name_form("wlp2s0"), "wlp2s0");
    }

    #[test]
    fn fanout_precedence() {
        let file = "fanout = lb\nfanout@2 = cpu+rollover\n";
        let s = settings(&[], file);
        assert_eq!(s.device("eth0").fanout, fanout(KernelFanout::Lb, false));
        let s = settings(&[("PCAP_GROUP", "2")], file);
        assert_eq!(s.device("eth0").fanout, fanout(KernelFanout::Cpu, true));
        let s = settings(&[("PCAP_GROUP", "3")], file);
        assert_eq!(s.device("eth0").fanout, fanout(KernelFanout::Lb, false));
        let s = settings(&[("PCAP_GROUP", "2"), ("PCAP_FANOUT", "round_robin")], file);
        assert_eq!(s.device("eth0").fanout, fanout(KernelFanout::Lb, false));
        let s = settings(&[("PCAP_GROUP", "3")], "fanout@2 = qm\n");
        assert_eq!(s.device("eth0").fanout, FanoutSpec::default());
    }

    #[test]
    fn caplen_override_and_default() {
        let file = "caplen = 64\ncaplen@2 = 96\n";
        let s = settings(&[], file);
        assert_eq!(s.device("eth0").caplen, Some(Caplen::Default(64)));
        let s = settings(&[("PCAP_GROUP", "2")], file);
        assert_eq!(s.device("eth0").caplen, Some(Caplen::Default(96)));
        let s = settings(&[("PCAP_GROUP", "2"), ("PCAP_CAPLEN", "128")], file);
        assert_eq!(s.device("eth0").caplen, Some(Caplen::Override(128)));
        assert_eq!(Caplen::Override(128).applies(true), Some(128));
        assert_eq!(Caplen::Override(128).applies(false), Some(128));
        assert_eq!(Caplen::Default(64).applies(true), None);
        assert_eq!(Caplen::Default(64).applies(false), Some(64));
        assert_eq!(Caplen::Default(64).value(), 64);
    }

    #[test]
    fn locality_precedence_and_offline() {
        let file = "locality = 8000\nlocality_timeout = 50\nlocality@2 = 100\nlocality_timeout@2 = 10\nlocality@3 = 0\n";
        let s = settings(&[], file);
        let l = |batch, timeout_ms| Some(Locality { batch, timeout_ms });
        assert_eq!(s.device("eth0").locality, l(8000, 50));
        assert_eq!(s.locality_for_offline(), l(8000, 50));
        let s = settings(&[("PCAP_GROUP", "2")], file);
        assert_eq!(s.device("eth0").locality, l(100, 10));
        assert_eq!(s.locality_for_offline(), l(8000, 50));
        let s = settings(&[("PCAP_GROUP", "3")], file);
        assert_eq!(s.device("eth0").locality, None);
        let s = settings(&[("PCAP_GROUP", "2"), ("PCAP_LOCALITY", "0")], file);
        assert_eq!(s.device("eth0").locality, None);
        assert_eq!(s.locality_for_offline(), None);
        let s = settings(
            &[("PCAP_LOCALITY", "32"), ("PCAP_LOCALITY_TIMEOUT", "7")],
            file,
        );
        assert_eq!(s.device("eth0").locality, l(32, 7));
        assert_eq!(s.locality_for_offline(), l(32, 7));
        let s = settings(&[("PCAP_LOCALITY", "32")], "");
        assert_eq!(
            s.device("eth0").locality,
            l(32, DEFAULT_LOCALITY_TIMEOUT_MS)
        );
        assert_eq!(s.locality_for_offline(), l(32, 100));
        let s = settings(&[], "locality@2 = 5\n");
        assert_eq!(s.locality_for_offline(), None);
    }

    #[test]
    fn channels_and_irq() {
        let file = "combined_channels@eth0 = 2\nrx_channels@eth0 = 1\ntx_channels@eth0 = 3\nother_channels@eth0 = 1\n\
                    irq@eth0.0 = 0\nirq@eth0.1 = 1\nirq@eth0.2 = 2-3\nirq@eth1.0 = 5\n";
        let s = settings(&[], file);
        let d = s.device("eth0");
        let want = ChannelRequest {
            rx: Some(1),
            tx: Some(3),
            other: Some(1),
            combined: Some(2),
        };
        assert_eq!(d.channels, want);
        assert_eq!(d.irq, [(0, cpus("0")), (1, cpus("1")), (2, cpus("2,3"))]);
        // A virtual device's handle sees its interface's channels.
        assert_eq!(s.device("eth0:1").channels, want);
        assert_eq!(s.device("eth0:1").irq.len(), 3);
        assert_eq!(s.device("eth2").channels, ChannelRequest::default());
        assert!(s.device("eth2").irq.is_empty());

        let env = [
            ("PCAP_CHANNEL_eth0", "4"),
            ("PCAP_IRQ_eth0_1", "6-7"),
            ("PCAP_IRQ_eth0_3", "4"),
        ];
        let d = settings(&env, file).device("eth0");
        assert_eq!(d.channels.combined, Some(4));
        assert_eq!((d.channels.rx, d.channels.tx), (Some(1), Some(3)));
        assert_eq!(
            d.irq,
            [
                (0, cpus("0")),
                (1, cpus("6,7")),
                (2, cpus("2-3")),
                (3, cpus("4"))
            ]
        );
        assert!(!d.channels.is_empty());
        assert_eq!(d.channels.get(ChannelKind::Other), Some(1));
    }

    #[test]
    fn channel_variables_of_dotted_devices() {
        for env in [
            [("PCAP_CHANNEL_eth0.100", "2"), ("PCAP_IRQ_eth0.100_1", "3")],
            [("PCAP_CHANNEL_eth0_100", "2"), ("PCAP_IRQ_eth0_100_1", "3")],
        ] {
            let d = settings(&env, "").device("eth0.100");
            assert_eq!(d.channels.combined, Some(2), "{env:?}");
            assert_eq!(d.irq, [(1, cpus("3"))], "{env:?}");
        }
        // The name as it is wins.
        let env = [
            ("PCAP_IRQ_eth0.100_1", "3"),
            ("PCAP_IRQ_eth0_100_1", "4"),
            ("PCAP_CHANNEL_eth0_100", "8"),
            ("PCAP_CHANNEL_eth0.100", "2"),
        ];
        let d = settings(&env, "").device("eth0.100");
        assert_eq!(
            (d.channels.combined, d.irq),
            (Some(2), vec![(1, cpus("3"))])
        );
    }

    #[test]
    fn later_lines_override_earlier_ones() {
        let file =
            "def_group = 1\ndef_group = 2\nfanout = cpu\nfanout = rnd\ncaplen = 10\ncaplen = 20\n\
                    group_eth0 = 3\ngroup_eth0 = 4\nirq@eth0.0 = 1\nirq@eth0.0 = 2\n\
                    combined_channels@eth0 = 1\ncombined_channels@eth0:1 = 6\n";
        let d = settings(&[], file).device("eth0");
        assert_eq!(d.group, Some(4));
        assert_eq!(d.fanout, fanout(KernelFanout::Rnd, false));
        assert_eq!(d.caplen, Some(Caplen::Default(20)));
        assert_eq!(d.irq, [(0, cpus("2"))]);
        assert_eq!(d.channels.combined, Some(6));
        assert_eq!(settings(&[], file).default_group(), Some(2));
    }

    #[test]
    fn bad_variables_are_reported_and_ignored() {
        let file = "def_group = 1\nfanout = lb\ncaplen = 64\nlocality = 10\ngroup_eth0 = 8\n";
        let env = [
            ("PCAP_GROUP", "65536"),
            ("PCAP_FANOUT", "spray"),
            ("PCAP_CAPLEN", "0"),
            ("PCAP_LOCALITY", "lots"),
            ("PCAP_LOCALITY_TIMEOUT", "0"),
            ("PCAP_GROUP_eth0", "-1"),
            ("PCAP_GROUP_", "3"),
            ("PCAP_CHANNEL_eth0", "two"),
            ("PCAP_IRQ_eth0", "1"),
            ("PCAP_IRQ_eth0_x", "1"),
            ("PCAP_IRQ_eth0_0", "0-"),
        ];
        let (s, shown) = diagnostics(&env, file);
        assert_eq!(
            shown,
            [
                "environment: PCAP_GROUP: bad group `65536`: expected 0 to 65535",
                "environment: PCAP_FANOUT: unknown fan-out mode `spray`: expected hash, lb, round_robin, cpu, rollover, rnd or qm, optionally followed by +rollover",
                "environment: PCAP_CAPLEN: bad snap length `0`: expected 1 to 262144",
                "environment: PCAP_LOCALITY: bad locality batch `lots`: expected packets per batch, 1 to 1000000, or 0 for off",
                "environment: PCAP_LOCALITY_TIMEOUT: bad locality timeout `0`: expected milliseconds, 1 to 60000",
                "environment: PCAP_GROUP_eth0: bad group `-1`: expected 0 to 65535",
                "environment: PCAP_GROUP_: missing device name",
                "environment: PCAP_CHANNEL_eth0: bad channel count `two`: expected 0 to 4096",
                "environment: PCAP_IRQ_eth0: expected PCAP_IRQ_<dev>_<channel>",
                "environment: PCAP_IRQ_eth0_x: bad channel `x`: expected 0 to 4095",
                "environment: PCAP_IRQ_eth0_0: bad CPU ``: expected a number from 0 to 4095",
            ]
        );
        // The file's values stand.
        let d = s.device("eth0");
        assert_eq!(d.group, Some(8));
        assert_eq!(s.device("eth1").group, Some(1));
        assert_eq!(d.fanout, fanout(KernelFanout::Lb, false));
        assert_eq!(d.caplen, Some(Caplen::Default(64)));
        assert_eq!(d.locality.map(|l| l.batch), Some(10));
        assert_eq!(d.channels, ChannelRequest::default());
        assert!(d.irq.is_empty());
    }

    #[test]
    fn driver_is_not_applicable_and_other_variables_are_ignored() {
        let (s, d) = Settings::from_parts(
            [
                ("PCAP_DRIVER", "pfq"),
                ("PCAP_FRAMES", "x"),
                ("HOME", "/root"),
                ("PCAP_GROUP", ""),
                ("PCAP_CONFIG", "/nonexistent"),
            ],
            None,
        );
        assert_eq!(d.len(), 1);
        assert_eq!(d[0].severity, Severity::NotApplicable);
        assert_eq!(
            d[0].to_string(),
            "environment: PCAP_DRIVER: not applicable: streamcap captures through the kernel's TPACKET socket"
        );
        assert_eq!(s.device("eth0").group, None);
    }

    #[test]
    fn file_diagnostics_come_through_and_the_rest_applies() {
        let file = "caplen = 64\nfanout = spray\ngroup_eth0 = 3\nrx_slots = 4096\n";
        let (s, shown) = diagnostics(&[("PCAP_DRIVER", "pfq")], file);
        assert_eq!(shown.len(), 3);
        assert!(shown[0].starts_with("t.conf:2: fanout: unknown fan-out mode `spray`"));
        assert!(shown[1].starts_with("t.conf:4: rx_slots: not applicable"));
        assert!(shown[2].starts_with("environment: PCAP_DRIVER: not applicable"));
        let d = s.device("eth0");
        assert_eq!((d.group, d.caplen), (Some(3), Some(Caplen::Default(64))));
        assert_eq!(d.fanout, FanoutSpec::default());
    }

    fn env(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn load_reads_the_named_file_or_the_first_default() {
        let dir = tempfile::tempdir().unwrap();
        let named = dir.path().join("named.conf");
        let second = dir.path().join("second.conf");
        std::fs::write(&named, "def_group = 1\n").unwrap();
        std::fs::write(&second, "def_group = 2\nbogus\n").unwrap();
        let missing = dir.path().join("missing.conf");
        let defaults = [missing.clone(), second.clone()];

        let named_str = named.to_str().unwrap();
        let (s, d) = load(&env(&[("PCAP_CONFIG", named_str)]), &defaults);
        assert!(d.is_empty(), "{d:?}");
        assert_eq!(s.default_group(), Some(1));

        let (s, d) = load(&env(&[]), &defaults);
        assert_eq!(s.default_group(), Some(2));
        assert_eq!(d.len(), 1);
        assert_eq!(
            d[0].to_string(),
            format!(
                "{}:2: bogus: no `=`: expected key[@group] = value",
                second.display()
            )
        );

        // An empty PCAP_CONFIG: no file at all.
        let (s, d) = load(&env(&[("PCAP_CONFIG", "")]), &defaults);
        assert!(d.is_empty());
        assert_eq!(s.default_group(), None);

        // A named file that cannot be read; the environment still applies.
        let missing_str = missing.to_str().unwrap();
        let (s, d) = load(
            &env(&[("PCAP_CONFIG", missing_str), ("PCAP_GROUP", "4")]),
            &defaults,
        );
        assert_eq!(d.len(), 1);
        assert!(d[0]
            .to_string()
            .starts_with(&format!("{}: cannot read: ", missing.display())));
        assert_eq!(s.default_group(), Some(4));

        let dir_str = dir.path().to_str().unwrap();
        let (_, d) = load(&env(&[("PCAP_CONFIG", dir_str)]), &defaults);
        assert!(d[0].message.contains("not a regular file"), "{d:?}");

        let big = dir.path().join("big.conf");
        std::fs::write(&big, vec![b'#'; MAX_CONFIG_BYTES as usize + 1]).unwrap();
        let (_, d) = load(&env(&[("PCAP_CONFIG", big.to_str().unwrap())]), &defaults);
        assert!(d[0].message.contains("larger than 1048576 bytes"), "{d:?}");
    }

    #[test]
    fn default_paths_are_etc_then_home() {
        assert_eq!(
            default_paths(Some("/home/u")),
            [
                PathBuf::from("/etc/pcap.conf"),
                PathBuf::from("/home/u/.pcap.conf")
            ]
        );
        assert_eq!(default_paths(None), [PathBuf::from("/etc/pcap.conf")]);
        assert_eq!(default_paths(Some("")), [PathBuf::from("/etc/pcap.conf")]);
    }

    #[test]
    fn the_papers_configuration_example() {
        let file = "combined_channels@eth0 = 2\nirq@eth0.0 = 0\nirq@eth0.1 = 1\n";
        let d = settings(&[], file).device("eth0");
        assert_eq!(d.channels.combined, Some(2));
        assert_eq!(
            d.irq
                .iter()
                .map(|(c, s)| (*c, s.to_vec()))
                .collect::<Vec<_>>(),
            [(0, vec![0]), (1, vec![1])]
        );
    }
}
