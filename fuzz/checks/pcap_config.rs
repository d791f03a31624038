//! The configuration file and environment of `libstreamcap_pcap.so`
//! (`streamcap-pcap`'s `config` and `settings`): arbitrary text as a
//! configuration file; its lines of the form `PCAP_NAME=value` (the first
//! 32) also set environment variables. Checks: no panic; parsing is
//! deterministic; at most one entry or diagnostic per line, each naming a
//! line of the input, in order, diagnostics displayed as
//! `fuzz.conf:LINE: …`; every value within its documented range and every
//! fan-out mode written out parses back; the file's diagnostics come first
//! from `Settings::from_parts`, then the environment's; a few devices
//! (fixed ones and those the input names) resolve to settings within the
//! ranges, IRQ channels in increasing order, the group, fan-out mode and
//! snap length the later lines set when the environment sets none; lines
//! appended to the text override it; CPU lists and fan-out modes on their
//! own parse consistently.
//!
//! Not in `checks/mod.rs`: that module is built by `streamcap`'s tests,
//! which do not depend on `streamcap-pcap`; the stored inputs run through
//! `crates/streamcap-pcap/tests/fuzz_regressions.rs`.
use streamcap_pcap::config::{
    self, check_device, interface_of, CpuSet, Entry, FanoutSpec, Setting, MAX_CAPLEN, MAX_CHANNELS,
    MAX_CPUS, MAX_LOCALITY_BATCH, MAX_LOCALITY_TIMEOUT_MS,
};
use streamcap_pcap::settings::{Caplen, DeviceSettings, Settings, ENVIRONMENT};

const PATH: &str = "fuzz.conf";

/// Runs the checks on one input (panics on a violation).
pub fn run(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let text = text.as_ref();
    let lines: Vec<&str> = text.lines().collect();
    let (entries, diagnostics) = config::parse(PATH, text);
    assert_eq!(
        config::parse(PATH, text),
        (entries.clone(), diagnostics.clone()),
        "parsing is deterministic"
    );
    assert!(entries.len() + diagnostics.len() <= lines.len());

    let mut previous = 0;
    for e in &entries {
        assert!(e.line > previous && e.line <= lines.len(), "{e:?}");
        previous = e.line;
        assert!(!e.key.is_empty());
        assert!(lines[e.line - 1].contains(&e.key), "{e:?}");
        check_setting(&e.setting);
    }
    let mut previous = 0;
    for d in &diagnostics {
        assert!(d.line > previous && d.line <= lines.len(), "{d:?}");
        previous = d.line;
        assert!(!d.message.is_empty());
        assert_eq!(d.path, PATH);
        assert!(d.to_string().starts_with(&format!("{PATH}:{}: ", d.line)));
    }

    let env: Vec<(&str, &str)> = lines
        .iter()
        .filter(|l| l.starts_with("PCAP_"))
        .filter_map(|l| l.split_once('='))
        .take(32)
        .collect();
    let (settings, all) = Settings::from_parts(env.iter().copied(), Some((PATH, text)));
    assert!(all.len() >= diagnostics.len());
    assert_eq!(all[..diagnostics.len()], diagnostics[..]);
    for d in &all[diagnostics.len()..] {
        assert_eq!((d.path.as_str(), d.line), (ENVIRONMENT, 0), "{d:?}");
        // The key names the variable (shortened when long).
        let shown = d.key.trim_end_matches('…');
        assert!(env.iter().any(|(k, _)| k.starts_with(shown)), "{d:?}");
    }

    let env_sets = |prefix: &str| {
        env.iter()
            .any(|(k, v)| k.starts_with(prefix) && !v.trim().is_empty())
    };
    let env_groups = env_sets("PCAP_GROUP") || env_sets("PCAP_DEF_GROUP");
    let mut devices = vec!["eth0", "eth0:1", "lo", "eth0.100", "any", ""];
    for e in entries.iter().take(8) {
        match &e.setting {
            Setting::Group { device, .. }
            | Setting::Channels { device, .. }
            | Setting::Irq { device, .. } => devices.push(device),
            _ => {}
        }
    }
    for device in devices {
        let d = settings.device(device);
        check_device_settings(device, &d);
        if !env_groups {
            assert_eq!(d.group, expected_group(&entries, device), "{device:?}");
        }
        if !env_sets("PCAP_FANOUT") {
            assert_eq!(d.fanout, expected_fanout(&entries, d.group), "{device:?}");
        }
        if !env_sets("PCAP_CAPLEN") {
            assert_eq!(
                d.caplen,
                expected_caplen(&entries, d.group).map(Caplen::Default),
                "{device:?}"
            );
        }
    }
    if let Some(l) = settings.locality_for_offline() {
        assert!((1..=MAX_LOCALITY_BATCH).contains(&l.batch));
        assert!((1..=MAX_LOCALITY_TIMEOUT_MS).contains(&l.timeout_ms));
    }

    // Lines appended override whatever the text set.
    if env.is_empty() {
        let more = format!(
            "{text}\ngroup_fz0 = 7\nfanout@7 = qm+rollover\ncaplen@7 = 99\nlocality@7 = 0\n"
        );
        let (settings, _) = Settings::from_parts(env.iter().copied(), Some((PATH, &more)));
        let d = settings.device("fz0");
        assert_eq!(d.group, Some(7));
        assert_eq!(d.fanout.to_string(), "qm+rollover");
        assert_eq!(d.caplen, Some(Caplen::Default(99)));
        assert_eq!(d.locality, None);
    }

    for line in lines.iter().take(64) {
        let value = line.split_once('=').map_or(*line, |(_, v)| v);
        if let Ok(cpus) = config::cpu_list(value) {
            assert!(!cpus.is_empty());
            assert!(cpus.windows(2).all(|w| w[0] < w[1]));
            assert!(cpus.iter().all(|&c| c < MAX_CPUS));
            assert_eq!(CpuSet::parse(value).map(|s| s.len()), Ok(cpus.len()));
        }
        if let Ok(spec) = FanoutSpec::parse(value) {
            assert_eq!(FanoutSpec::parse(&spec.to_string()), Ok(spec));
        }
    }
}

/// A setting's values lie within their ranges.
fn check_setting(setting: &Setting) {
    match setting {
        Setting::DefGroup(_) => {}
        Setting::Fanout { spec, .. } => {
            assert_eq!(FanoutSpec::parse(&spec.to_string()), Ok(*spec));
        }
        Setting::Caplen { caplen, .. } => assert!((1..=MAX_CAPLEN).contains(caplen)),
        Setting::Group { device, .. } => assert_eq!(check_device(device), Ok(())),
        Setting::Channels { device, count, .. } => {
            assert_eq!(check_device(device), Ok(()));
            assert!(*count <= MAX_CHANNELS);
        }
        Setting::Irq {
            device,
            channel,
            cpus,
        } => {
            assert_eq!(check_device(device), Ok(()));
            assert!(*channel < MAX_CHANNELS);
            check_cpus(cpus);
        }
        Setting::Locality { batch, .. } => assert!(*batch <= MAX_LOCALITY_BATCH),
        Setting::LocalityTimeout { ms, .. } => {
            assert!((1..=MAX_LOCALITY_TIMEOUT_MS).contains(ms))
        }
    }
}

fn check_cpus(cpus: &CpuSet) {
    let v = cpus.to_vec();
    assert!(!v.is_empty() && !cpus.is_empty());
    assert_eq!(v.len(), cpus.len());
    assert!(v.windows(2).all(|w| w[0] < w[1]));
    assert!(v.iter().all(|&c| c < MAX_CPUS && cpus.contains(c)));
}

fn check_device_settings(device: &str, d: &DeviceSettings) {
    assert_eq!(d.interface, interface_of(device));
    if let Some(c) = d.caplen {
        assert!((1..=MAX_CAPLEN).contains(&c.value()));
    }
    if let Some(l) = d.locality {
        assert!((1..=MAX_LOCALITY_BATCH).contains(&l.batch));
        assert!((1..=MAX_LOCALITY_TIMEOUT_MS).contains(&l.timeout_ms));
    }
    let c = d.channels;
    for n in [c.rx, c.tx, c.other, c.combined].into_iter().flatten() {
        assert!(n <= MAX_CHANNELS);
    }
    assert!(d.irq.windows(2).all(|w| w[0].0 < w[1].0));
    for (channel, cpus) in &d.irq {
        assert!(*channel < MAX_CHANNELS);
        check_cpus(cpus);
    }
}

/// The group the file alone gives `device`: its last `group_<device>`,
/// else its last `def_group`.
fn expected_group(entries: &[Entry], device: &str) -> Option<u16> {
    let last =
        |f: &dyn Fn(&Setting) -> Option<u16>| entries.iter().rev().find_map(|e| f(&e.setting));
    last(&|s| match s {
        Setting::Group { device: d, group } if d == device => Some(*group),
        _ => None,
    })
    .or_else(|| {
        last(&|s| match s {
            Setting::DefGroup(g) => Some(*g),
            _ => None,
        })
    })
}

/// The fan-out mode the file alone gives `group`: its last `fanout@group`,
/// else its last `fanout`, else `hash`.
fn expected_fanout(entries: &[Entry], group: Option<u16>) -> FanoutSpec {
    let last = |want: Option<u16>| {
        entries.iter().rev().find_map(|e| match e.setting {
            Setting::Fanout { group: g, spec } if g == want => Some(spec),
            _ => None,
        })
    };
    group
        .and_then(|g| last(Some(g)))
        .or_else(|| last(None))
        .unwrap_or_default()
}

/// The snap length the file alone gives `group`, as [`expected_fanout`].
fn expected_caplen(entries: &[Entry], group: Option<u16>) -> Option<u32> {
    let last = |want: Option<u16>| {
        entries.iter().rev().find_map(|e| match e.setting {
            Setting::Caplen { group: g, caplen } if g == want => Some(caplen),
            _ => None,
        })
    };
    group.and_then(|g| last(Some(g))).or_else(|| last(None))
}
