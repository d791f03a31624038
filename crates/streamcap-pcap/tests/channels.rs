//! The channel calls of `libstreamcap_pcap` on a veth pair inside a network
//! namespace each test creates and deletes, through the exported C
//! functions (called from Rust and from `examples/channels.c`) and the
//! Rust layer.
//!
//! The ethtool ioctl acts in the network namespace of the calling thread,
//! and sysfs shows the devices of the namespace it was mounted in. So the
//! checks run in a process started with `ip netns exec`, which enters the
//! namespace and mounts a fresh `/sys` for it: the test binary itself,
//! running its ignored test `checks_in_the_namespace` (which does nothing
//! outside such a run), and the compiled C example.
//!
//! Needs root and `ip` (the C example also `cc` and libpcap's headers);
//! without them the namespace tests print `skipping: <reason>` and pass.
//! When `ethtool` is installed its `-l` output is compared with what the
//! calls report.
#![cfg(target_os = "linux")]

mod common;

use common::{library, skip, Netns};

use std::ffi::{c_char, c_int, CStr, CString};
use std::path::Path;
use std::process::{Command, Output};
use std::ptr;

use streamcap_pcap::channels::{
    apply, channel_affinity, get_channels, irq_of_channel, pcap_channel_getaffinity,
    pcap_channel_setaffinity, pcap_get_channels, pcap_set_channels, set_channel_affinity,
    set_channels, ChannelError, ChannelRequest, Channels, PcapChannels, PCAP_COMBINED_CHANNELS,
    PCAP_ERRBUF_SIZE, PCAP_RX_CHANNELS, PCAP_TX_CHANNELS,
};

/// The device the checks run on (one end of the veth pair of
/// [`Netns`], 4 receive and 4 send queues).
const DEV: &str = "sca";
/// The environment variable that carries the device to the process
/// running inside the namespace.
const INSIDE: &str = "STREAMCAP_CHANNELS_TEST_DEV";
/// The line the checks inside the namespace print when they all passed.
const PASSED: &str = "channel checks passed inside the namespace";

fn show(out: &Output) -> String {
    format!(
        "status {}\n--- stdout\n{}--- stderr\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

// ---------------------------------------------------------------------------
// Helpers for the C functions
// ---------------------------------------------------------------------------

fn c(s: &str) -> CString {
    CString::new(s).expect("no NUL in test strings")
}

fn errno() -> c_int {
    std::io::Error::last_os_error().raw_os_error().unwrap_or(0)
}

/// `pcap_get_channels`, with its result or the text of its errbuf.
fn c_get(dev: &str) -> Result<PcapChannels, String> {
    let name = c(dev);
    let mut info = PcapChannels::default();
    let mut errbuf = [0 as c_char; PCAP_ERRBUF_SIZE];
    // SAFETY: a NUL-terminated name, a writable struct and a buffer of
    // PCAP_ERRBUF_SIZE bytes, all alive during the call.
    let rc = unsafe { pcap_get_channels(name.as_ptr(), &mut info, errbuf.as_mut_ptr()) };
    match rc {
        1 => Ok(info),
        -1 => Err(text(&errbuf)),
        other => panic!("pcap_get_channels returned {other}"),
    }
}

/// `pcap_set_channels`, with the text of its errbuf on failure.
fn c_set(dev: &str, ch: &PcapChannels, mask: c_int) -> Result<(), String> {
    let name = c(dev);
    let mut errbuf = [0 as c_char; PCAP_ERRBUF_SIZE];
    // SAFETY: as in c_get; `ch` is a readable struct.
    let rc = unsafe { pcap_set_channels(name.as_ptr(), ch, mask, errbuf.as_mut_ptr()) };
    match rc {
        1 => Ok(()),
        -1 => Err(text(&errbuf)),
        other => panic!("pcap_set_channels returned {other}"),
    }
}

fn text(errbuf: &[c_char]) -> String {
    let bytes: Vec<u8> = errbuf.iter().map(|&b| b as u8).collect();
    CStr::from_bytes_until_nul(&bytes)
        .expect("errbuf is NUL-terminated")
        .to_string_lossy()
        .into_owned()
}

/// `pcap_channel_setaffinity` on CPU 0 and `pcap_channel_getaffinity`,
/// each with its result and errno.
fn c_affinity(dev: &str, channel: c_int) -> [(c_int, c_int); 2] {
    let name = c(dev);
    // SAFETY: an all-zero cpu_set_t is a valid empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: CPU 0 is below CPU_SETSIZE; `set` is ours.
    unsafe { libc::CPU_SET(0, &mut set) };
    // SAFETY: a NUL-terminated name and a live cpu_set_t.
    let set_rc = unsafe { pcap_channel_setaffinity(name.as_ptr(), channel, &set) };
    let set_errno = errno();
    // SAFETY: as above, the set writable.
    let get_rc = unsafe { pcap_channel_getaffinity(name.as_ptr(), channel, &mut set) };
    let get_errno = errno();
    [(set_rc, set_errno), (get_rc, get_errno)]
}

/// The channels `ethtool -l dev` shows (`n/a` as 0), if ethtool is
/// installed.
fn ethtool_channels(dev: &str) -> Option<Channels> {
    let out = Command::new("ethtool").args(["-l", dev]).output().ok()?;
    assert!(out.status.success(), "ethtool -l {dev}: {}", show(&out));
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let mut ch = Channels::default();
    let mut current = false;
    for line in text.lines() {
        if line.starts_with("Current hardware settings") {
            current = true;
            continue;
        }
        let Some((key, value)) = line.split_once(':') else {
            continue;
        };
        let value = value.trim();
        let n = if value == "n/a" {
            0
        } else {
            match value.parse::<u32>() {
                Ok(n) => n,
                Err(_) => continue,
            }
        };
        let slot = match (key.trim(), current) {
            ("RX", false) => &mut ch.max_rx,
            ("TX", false) => &mut ch.max_tx,
            ("Other", false) => &mut ch.max_other,
            ("Combined", false) => &mut ch.max_combined,
            ("RX", true) => &mut ch.rx,
            ("TX", true) => &mut ch.tx,
            ("Other", true) => &mut ch.other,
            ("Combined", true) => &mut ch.combined,
            _ => continue,
        };
        *slot = n;
    }
    Some(ch)
}

/// Compares `got` with `ethtool -l`, when ethtool is installed.
fn same_as_ethtool(dev: &str, got: &Channels) {
    match ethtool_channels(dev) {
        Some(ethtool) => {
            assert_eq!(*got, ethtool, "get_channels and ethtool -l {dev} differ");
            println!("ethtool -l {dev} agrees: {got:?}");
        }
        None => println!("ethtool is not installed: not compared with ethtool -l"),
    }
}

// ---------------------------------------------------------------------------
// Inside the namespace
// ---------------------------------------------------------------------------

#[test]
fn the_calls_work_on_a_veth_inside_a_namespace() {
    let Some(ns) = Netns::new("calls", Some(4)) else {
        return;
    };
    let exe = std::env::current_exe().expect("the test binary's path");
    let out = ns
        .command(
            exe.to_str().unwrap_or_default(),
            &[
                "--exact",
                "checks_in_the_namespace",
                "--ignored",
                "--nocapture",
                "--test-threads=1",
            ],
        )
        .env(INSIDE, DEV)
        .output()
        .expect("run ip netns exec");
    println!("{}", show(&out));
    assert!(
        out.status.success(),
        "the checks failed inside the namespace"
    );
    assert!(
        String::from_utf8_lossy(&out.stdout).contains(PASSED),
        "the checks did not run inside the namespace"
    );
}

/// The checks on the veth, run by `the_calls_work_on_a_veth_inside_a_namespace`
/// inside its namespace (the device's name in `STREAMCAP_CHANNELS_TEST_DEV`).
#[test]
#[ignore = "run inside a network namespace by the_calls_work_on_a_veth_inside_a_namespace"]
fn checks_in_the_namespace() {
    let Ok(dev) = std::env::var(INSIDE) else {
        return skip(&format!(
            "{INSIDE} is not set: this test runs inside a namespace"
        ));
    };
    let dev = dev.as_str();

    // Reading: the veth has 4 receive and 4 transmit queues, no others.
    let ch = get_channels(dev).expect("get_channels on the veth");
    println!("{dev}: {ch:?}");
    assert_eq!((ch.max_rx, ch.max_tx), (4, 4), "{ch:?}");
    assert_eq!((ch.max_other, ch.max_combined), (0, 0), "{ch:?}");
    assert!(
        (1..=4).contains(&ch.rx) && (1..=4).contains(&ch.tx),
        "{ch:?}"
    );
    assert_eq!((ch.other, ch.combined), (0, 0), "{ch:?}");
    same_as_ethtool(dev, &ch);
    let from_c = c_get(dev).expect("pcap_get_channels on the veth");
    assert_eq!(from_c, PcapChannels::from(ch));

    // Setting through Rust: rx only, tx kept.
    let rx_only = ChannelRequest {
        rx: Some(2),
        ..ChannelRequest::default()
    };
    set_channels(dev, rx_only).expect("rx 2");
    let after = get_channels(dev).expect("read back");
    assert_eq!(after, Channels { rx: 2, ..ch });
    same_as_ethtool(dev, &after);

    // Setting through C: rx and tx by the mask, the combined count in the
    // struct is not looked at.
    let wanted = PcapChannels {
        rx_count: 3,
        tx_count: 2,
        combined_count: 99,
        ..PcapChannels::default()
    };
    c_set(dev, &wanted, PCAP_RX_CHANNELS | PCAP_TX_CHANNELS).expect("rx 3 tx 2");
    let after = c_get(dev).expect("read back");
    assert_eq!((after.rx_count, after.tx_count), (3, 2), "{after:?}");
    same_as_ethtool(dev, &get_channels(dev).expect("read back"));
    // Nothing to change: no error, nothing changes.
    c_set(dev, &wanted, PCAP_RX_CHANNELS).expect("the same rx count");
    c_set(dev, &wanted, 0).expect("an empty mask");
    assert_eq!(c_get(dev), Ok(after));

    // Counts above the maximum are refused, and nothing changes.
    let e = set_channels(
        dev,
        ChannelRequest {
            rx: Some(5),
            ..ChannelRequest::default()
        },
    )
    .expect_err("5 receive channels");
    assert_eq!(
        e.to_string(),
        format!("{dev}: 5 rx channels requested, the maximum is 4")
    );
    let combined = PcapChannels {
        combined_count: 2,
        ..PcapChannels::default()
    };
    let e = c_set(dev, &combined, PCAP_COMBINED_CHANNELS).expect_err("no combined channels");
    assert_eq!(
        e,
        format!(
            "{dev}: 2 combined channels requested, the maximum is 0 \
             (the driver has no combined channels)"
        )
    );
    assert_eq!(c_get(dev), Ok(after));

    // What the driver refuses comes back in the kernel's words.
    let zero = PcapChannels::default();
    let e = c_set(dev, &zero, PCAP_RX_CHANNELS).expect_err("veth needs a receive queue");
    assert!(
        e.starts_with(&format!(
            "{dev}: the driver refused the channel counts rx 0, tx 2"
        )),
        "{e}"
    );
    assert!(e.contains("(the kernel says: invalid argument)"), "{e}");

    // Missing devices.
    let e = get_channels("scnosuch0").expect_err("missing");
    assert!(matches!(e, ChannelError::NoSuchDevice { .. }), "{e}");
    assert_eq!(e.to_string(), "scnosuch0: no such device");
    assert_eq!(c_get("scnosuch0"), Err("scnosuch0: no such device".into()));
    assert_eq!(
        c_set("scnosuch0", &wanted, PCAP_RX_CHANNELS),
        Err("scnosuch0: no such device".into())
    );

    // The veth has no interrupts.
    let virtual_device = format!("{dev} has no interrupts (a virtual device)");
    let e = irq_of_channel(dev, 0).expect_err("a veth has no IRQ");
    assert_eq!(e.to_string(), virtual_device);
    assert_eq!(e.errno(), libc::EOPNOTSUPP);
    let e = set_channel_affinity(dev, 1, &[0]).expect_err("a veth has no IRQ");
    assert_eq!(e.to_string(), virtual_device);
    let e = channel_affinity(dev, 1).expect_err("a veth has no IRQ");
    assert_eq!(e.to_string(), virtual_device);
    assert_eq!(
        c_affinity(dev, 0),
        [(-1, libc::EOPNOTSUPP), (-1, libc::EOPNOTSUPP)]
    );
    assert_eq!(
        c_affinity("scnosuch0", 0),
        [(-1, libc::ENODEV), (-1, libc::ENODEV)]
    );

    // apply: the counts change, the affinities are reported once.
    let failures = apply(
        dev,
        &ChannelRequest {
            rx: Some(1),
            tx: Some(4),
            ..ChannelRequest::default()
        },
        &[
            (0, streamcap_pcap::config::CpuSet::parse("0").expect("cpus")),
            (1, streamcap_pcap::config::CpuSet::parse("1").expect("cpus")),
        ],
    );
    let ch = get_channels(dev).expect("read back");
    assert_eq!((ch.rx, ch.tx), (1, 4), "{ch:?}");
    assert_eq!(failures.len(), 1, "{failures:?}");
    assert!(matches!(failures[0], ChannelError::VirtualDevice { .. }));
    let failures = apply(
        dev,
        &ChannelRequest {
            combined: Some(8),
            ..ChannelRequest::default()
        },
        &[],
    );
    assert!(
        matches!(failures[..], [ChannelError::AboveMaximum { max: 0, .. }]),
        "{failures:?}"
    );
    assert!(apply(dev, &ChannelRequest::default(), &[]).is_empty());

    println!("{PASSED}");
}

// ---------------------------------------------------------------------------
// Anywhere (no namespace, no privileges)
// ---------------------------------------------------------------------------

#[test]
fn null_arguments_and_bad_values_give_minus_one() {
    let lo = c("lo");
    let mut info = PcapChannels::default();
    let mut errbuf = [0 as c_char; PCAP_ERRBUF_SIZE];
    // SAFETY: each pointer is NULL or valid for the call, as the header
    // asks; the NULL ones are what is being tested.
    unsafe {
        assert_eq!(
            pcap_get_channels(ptr::null(), &mut info, errbuf.as_mut_ptr()),
            -1
        );
        assert_eq!(text(&errbuf), "dev is NULL");
        assert_eq!(
            pcap_get_channels(lo.as_ptr(), ptr::null_mut(), errbuf.as_mut_ptr()),
            -1
        );
        assert_eq!(text(&errbuf), "info is NULL");
        assert_eq!(
            pcap_get_channels(ptr::null(), ptr::null_mut(), ptr::null_mut()),
            -1
        );
        assert_eq!(
            pcap_set_channels(
                lo.as_ptr(),
                ptr::null(),
                PCAP_RX_CHANNELS,
                errbuf.as_mut_ptr()
            ),
            -1
        );
        assert_eq!(text(&errbuf), "ch is NULL");
        assert_eq!(
            pcap_set_channels(ptr::null(), &info, PCAP_RX_CHANNELS, ptr::null_mut()),
            -1
        );
        assert_eq!(
            pcap_set_channels(lo.as_ptr(), &info, 0x30, errbuf.as_mut_ptr()),
            -1
        );
        assert!(text(&errbuf).starts_with("channel_mask 0x30 has bits other than"));

        let mut set: libc::cpu_set_t = std::mem::zeroed();
        assert_eq!(pcap_channel_setaffinity(ptr::null(), 0, &set), -1);
        assert_eq!(errno(), libc::EINVAL);
        assert_eq!(pcap_channel_setaffinity(lo.as_ptr(), 0, ptr::null()), -1);
        assert_eq!(errno(), libc::EINVAL);
        assert_eq!(
            pcap_channel_getaffinity(lo.as_ptr(), 0, ptr::null_mut()),
            -1
        );
        assert_eq!(errno(), libc::EINVAL);
        assert_eq!(pcap_channel_getaffinity(ptr::null(), 0, &mut set), -1);
        assert_eq!(errno(), libc::EINVAL);
        assert_eq!(pcap_channel_setaffinity(lo.as_ptr(), -1, &set), -1);
        assert_eq!(errno(), libc::EINVAL);
        // An empty set is refused before the device is looked at.
        assert_eq!(pcap_channel_setaffinity(lo.as_ptr(), 0, &set), -1);
        assert_eq!(errno(), libc::EINVAL);
    }
}

#[test]
fn long_messages_are_cut_to_the_errbuf() {
    let long = c(&"x".repeat(400));
    let mut info = PcapChannels::default();
    let mut errbuf = [1 as c_char; PCAP_ERRBUF_SIZE + 8];
    // SAFETY: a NUL-terminated name, a writable struct and a buffer larger
    // than PCAP_ERRBUF_SIZE.
    let rc = unsafe { pcap_get_channels(long.as_ptr(), &mut info, errbuf.as_mut_ptr()) };
    assert_eq!(rc, -1);
    let message = text(&errbuf);
    assert_eq!(message.len(), PCAP_ERRBUF_SIZE - 1);
    assert!(message.starts_with("\"xxx"), "{message}");
    assert_eq!(
        errbuf[PCAP_ERRBUF_SIZE], 1,
        "nothing written past the errbuf"
    );
}

#[test]
fn missing_and_virtual_devices_are_named_in_the_errors() {
    // `lo` exists in every namespace and is virtual.
    let e = irq_of_channel("lo", 0).expect_err("lo has no IRQ");
    assert_eq!(e.to_string(), "lo has no interrupts (a virtual device)");
    assert_eq!(
        c_affinity("lo", 0),
        [(-1, libc::EOPNOTSUPP), (-1, libc::EOPNOTSUPP)]
    );
    let e = get_channels("lo").expect_err("lo has no channels");
    assert_eq!(
        e.to_string(),
        "lo: the driver has no channel settings (the kernel says: operation not supported)"
    );
    assert_eq!(
        c_get("lo"),
        Err(
            "lo: the driver has no channel settings (the kernel says: operation not supported)"
                .into()
        )
    );
    let e = get_channels("scnosuch0").expect_err("missing");
    assert_eq!(e.to_string(), "scnosuch0: no such device");
    assert_eq!(e.errno(), libc::ENODEV);
    let e = set_channel_affinity("scnosuch0", 0, &[0]).expect_err("missing");
    assert_eq!(e.to_string(), "scnosuch0: no such device");
    let e = get_channels("bad/name").expect_err("not a name");
    assert!(matches!(e, ChannelError::InvalidName { .. }), "{e}");
}

/// On the machine's own devices, read-only apart from writing an IRQ's
/// affinity back unchanged (as root): the interrupt of channel 0 of each
/// device that has one, and its affinity through Rust and through C.
#[test]
fn the_machines_devices_have_an_interrupt_for_channel_0() {
    let Ok(entries) = std::fs::read_dir("/sys/class/net") else {
        return skip("no /sys/class/net");
    };
    let mut physical: Vec<String> = entries
        .filter_map(|e| e.ok())
        .filter(|e| e.path().join("device").exists())
        .filter_map(|e| e.file_name().to_str().map(String::from))
        .collect();
    physical.sort();
    if physical.is_empty() {
        return skip("no device with interrupts on this machine");
    }
    for dev in &physical {
        let irq = match irq_of_channel(dev, 0) {
            Ok(irq) => irq,
            Err(e @ ChannelError::NoQueueInterrupts { .. }) => {
                println!("{e}");
                continue;
            }
            Err(e) => panic!("{e}"),
        };
        let msi = msi_irqs(dev);
        assert!(
            msi.is_empty() || msi.contains(&irq),
            "{dev}: IRQ {irq} is not one of its MSI interrupts {msi:?}"
        );
        let cpus = channel_affinity(dev, 0).expect("the affinity of channel 0");
        println!("{dev}: channel 0 is IRQ {irq}, CPUs {cpus:?}");
        assert!(!cpus.is_empty());
        let name = c(dev);
        // SAFETY: an all-zero cpu_set_t is a valid empty set.
        let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
        // SAFETY: a NUL-terminated name and a writable cpu_set_t.
        let rc = unsafe { pcap_channel_getaffinity(name.as_ptr(), 0, &mut set) };
        assert_eq!(rc, 1, "pcap_channel_getaffinity({dev}, 0)");
        let from_c: Vec<usize> = (0..libc::CPU_SETSIZE as usize)
            // SAFETY: every CPU number is below CPU_SETSIZE.
            .filter(|&cpu| unsafe { libc::CPU_ISSET(cpu, &set) })
            .collect();
        assert_eq!(from_c, cpus, "the C call and the Rust call differ");
        if common::is_root() {
            // SAFETY: a NUL-terminated name and the set just read.
            let rc = unsafe { pcap_channel_setaffinity(name.as_ptr(), 0, &set) };
            if rc == 1 {
                assert_eq!(channel_affinity(dev, 0).ok(), Some(cpus));
            } else {
                println!("writing it back unchanged failed: errno {}", errno());
            }
        }
    }
}

/// The MSI interrupts sysfs lists for `dev` (its device's or the parent's).
fn msi_irqs(dev: &str) -> Vec<u32> {
    let device = Path::new("/sys/class/net").join(dev).join("device");
    let Ok(device) = std::fs::canonicalize(device) else {
        return Vec::new();
    };
    [Some(device.as_path()), device.parent()]
        .into_iter()
        .flatten()
        .filter_map(|d| std::fs::read_dir(d.join("msi_irqs")).ok())
        .flat_map(|entries| entries.filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok()))
        .collect()
}

// ---------------------------------------------------------------------------
// The C example
// ---------------------------------------------------------------------------

#[test]
fn the_c_example_sets_channels_and_reports_the_affinity_error() {
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    if Command::new(&cc).arg("--version").output().is_err() {
        return skip(&format!("{cc} is not installed"));
    }
    if !Path::new("/usr/include/pcap/pcap.h").exists() {
        return skip("libpcap's headers are not installed (Debian: libpcap-dev)");
    }
    let Some(ns) = Netns::new("example", Some(4)) else {
        return;
    };
    let profile = library().parent().expect("target/<profile>").to_path_buf();
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    let dir = tempfile::tempdir().expect("temporary directory");
    let exe = dir.path().join("channels");
    let out = Command::new(&cc)
        .args(["-std=c11", "-Wall", "-Wextra", "-Werror", "-I"])
        .arg(manifest.join("include"))
        .arg(manifest.join("examples/channels.c"))
        .arg("-o")
        .arg(&exe)
        .arg(format!("-L{}", profile.display()))
        .arg(format!("-Wl,-rpath,{}", profile.display()))
        .args(["-lstreamcap_pcap", "-lpcap"])
        .output()
        .expect("run the C compiler");
    assert!(
        out.status.success(),
        "compiling examples/channels.c failed:\n{}",
        show(&out)
    );

    let out = ns
        .command(exe.to_str().unwrap_or_default(), &[DEV])
        .output()
        .expect("run ip netns exec");
    println!("{}", show(&out));
    assert!(out.status.success(), "the example failed");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    // The paper's request for 2 combined channels, refused with the reason.
    assert!(
        stdout.contains(&format!(
            "{DEV}: 2 combined channels requested, the maximum is 0"
        )),
        "{stdout}"
    );
    // Then 2 receive and 2 transmit channels, read back.
    assert!(
        stdout.contains(&format!("{DEV} now: rx 2 tx 2 other 0 combined 0")),
        "{stdout}"
    );
    // The affinity calls fail with EOPNOTSUPP and the library's message.
    let virtual_device = format!(
        "libstreamcap_pcap: pcap_channel_setaffinity: {DEV} has no interrupts (a virtual device)"
    );
    assert_eq!(stderr.matches(&virtual_device).count(), 2, "{stderr}");
    assert!(stdout.contains("channel 0 on CPU 0: not set"), "{stdout}");
    assert!(stdout.contains("channel 1 on CPU 1: not set"), "{stdout}");
    assert!(stdout.contains("has no IRQ affinity to set"), "{stdout}");

    // What ethtool sees in the namespace afterwards, when it is installed.
    let ethtool = Command::new("ip")
        .args(["netns", "exec", &ns.name, "ethtool", "-l", DEV])
        .output();
    match ethtool {
        Ok(out) if out.status.success() => {
            let text = String::from_utf8_lossy(&out.stdout);
            let current = text
                .split("Current hardware settings:")
                .nth(1)
                .unwrap_or_default();
            let counts: Vec<&str> = current.split_whitespace().collect();
            assert_eq!(
                counts[..],
                ["RX:", "2", "TX:", "2", "Other:", "n/a", "Combined:", "n/a"],
                "{text}"
            );
        }
        _ => println!("ethtool is not installed: the counts are not checked with it"),
    }
}
