//! Channels (hardware queues) of a device and the IRQ affinity of each
//! channel: the paper's `pcap_set_channels`, `pcap_get_channels`,
//! `pcap_channel_setaffinity` and `pcap_channel_getaffinity`, and the safe
//! Rust calls they are made of.
//!
//! # Channel counts
//!
//! [`get_channels`] and [`set_channels`] use the kernel's ethtool channel
//! interface (`ioctl(SIOCETHTOOL)` with `ETHTOOL_GCHANNELS` /
//! `ETHTOOL_SCHANNELS` on an `AF_INET` datagram socket), what `ethtool -l`
//! and `ethtool -L` show and change. The ioctl acts in the network
//! namespace of the calling thread. [`set_channels`] reads the counts
//! first, replaces only the requested ones, refuses a count above the
//! device's maximum before asking the kernel, and asks nothing when no
//! count would change.
//!
//! # The interrupt of a channel
//!
//! [`irq_of_channel`] finds the interrupt that serves channel `n` of a
//! device by the names drivers give their queue vectors in
//! `/proc/interrupts`. The rule ([`queue_vector`], [`queue_interrupts`]):
//!
//! - the candidates are the IRQs listed in the device's `msi_irqs`
//!   directory (`/sys/class/net/<dev>/device/msi_irqs`, or that of its
//!   parent, as for virtio, whose `device` is the virtio device below the
//!   PCI function); a device without such a directory has every IRQ of
//!   `/proc/interrupts` as a candidate;
//! - a vector name belongs to the device when it contains the interface
//!   name or the device's sysfs name (`virtio2`, `0000:03:00.0`) as a whole
//!   word, i.e. not followed or preceded by a letter or digit (so `eth1`
//!   does not match `eth10-TxRx-0`);
//! - the channel is the decimal number that ends the name (before an `@`,
//!   if any), written after the device's name: `eth0-TxRx-3`, `eth0-rx-3`,
//!   `eth0-3`, `eth0-q3`, `i40e-eth0-TxRx-3`, `virtio2-input.3` and
//!   `mlx5_comp3@pci:0000:3b:00.0` all serve channel 3;
//! - names whose words say they serve no queue (`config`, `async`, `misc`,
//!   `ctrl`, `mbx`, `event`, `err`, ...) are left out;
//! - when two vectors serve the same channel (separate receive and
//!   transmit vectors: `eth0-rx-0` and `eth0-tx-0`, `virtio2-input.0` and
//!   `virtio2-output.0`), the one that receives wins (a capture cares about
//!   the receive side); among equals, the lowest IRQ number.
//!
//! A device without `/sys/class/net/<dev>/device` (veth, lo, bridges,
//! tunnels) is virtual and has no interrupts: every affinity call on it
//! fails with [`ChannelError::VirtualDevice`]. sysfs shows the devices of
//! the namespace it was mounted in (`ip netns exec` mounts a fresh one).
//!
//! [`set_channel_affinity`] and [`channel_affinity`] write and read
//! `/proc/irq/<irq>/smp_affinity_list`.
//!
//! # The C functions
//!
//! [`pcap_set_channels`], [`pcap_get_channels`],
//! [`pcap_channel_setaffinity`] and [`pcap_channel_getaffinity`] implement
//! the declarations of `include/streamcap_pcap.h`. None of them unwinds
//! into C: each runs its work under `catch_unwind`.
#![deny(unsafe_op_in_unsafe_fn)]

use crate::config::CpuSet;
use std::collections::BTreeMap;
use std::ffi::{c_char, c_int, c_uint, c_void, CStr};
use std::fmt;
use std::io::{self, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};

/// `PCAP_RX_CHANNELS`: `pcap_set_channels` changes the receive-only count.
pub const PCAP_RX_CHANNELS: c_int = 0x1;
/// `PCAP_TX_CHANNELS`: `pcap_set_channels` changes the transmit-only count.
pub const PCAP_TX_CHANNELS: c_int = 0x2;
/// `PCAP_OTHER_CHANNELS`: `pcap_set_channels` changes the count of other
/// channels (link interrupts, control).
pub const PCAP_OTHER_CHANNELS: c_int = 0x4;
/// `PCAP_COMBINED_CHANNELS`: `pcap_set_channels` changes the count of
/// combined (receive and transmit) channels.
pub const PCAP_COMBINED_CHANNELS: c_int = 0x8;
/// The size of the `errbuf` of `pcap_set_channels` and
/// `pcap_get_channels` (libpcap's `PCAP_ERRBUF_SIZE`).
pub const PCAP_ERRBUF_SIZE: usize = 256;

/// The prefix of every line this module writes on stderr.
const PREFIX: &str = "libstreamcap_pcap: ";

/// `SIOCETHTOOL`'s command for reading the channels.
const ETHTOOL_GCHANNELS: u32 = 0x3c;
/// `SIOCETHTOOL`'s command for setting the channels.
const ETHTOOL_SCHANNELS: u32 = 0x3d;

// ---------------------------------------------------------------------------
// Types
// ---------------------------------------------------------------------------

/// The channels of a device, as `ethtool -l` shows them: the maximum of
/// each kind, then the current count. A kind the device lacks has maximum
/// and count 0 (`ethtool` prints `n/a`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Channels {
    /// The most receive-only channels the device can have.
    pub max_rx: u32,
    /// The most transmit-only channels the device can have.
    pub max_tx: u32,
    /// The most other channels (link, control) the device can have.
    pub max_other: u32,
    /// The most combined (receive and transmit) channels the device can have.
    pub max_combined: u32,
    /// The receive-only channels in use.
    pub rx: u32,
    /// The transmit-only channels in use.
    pub tx: u32,
    /// The other channels in use.
    pub other: u32,
    /// The combined channels in use.
    pub combined: u32,
}

/// The counts [`set_channels`] changes: `None` keeps a count as it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ChannelRequest {
    /// The receive-only channels wanted.
    pub rx: Option<u32>,
    /// The transmit-only channels wanted.
    pub tx: Option<u32>,
    /// The other channels wanted.
    pub other: Option<u32>,
    /// The combined channels wanted.
    pub combined: Option<u32>,
}

impl ChannelRequest {
    /// True when the request changes no count.
    pub fn is_empty(&self) -> bool {
        self.rx.is_none() && self.tx.is_none() && self.other.is_none() && self.combined.is_none()
    }
}

impl fmt::Display for ChannelRequest {
    /// The requested counts, as `rx 2, combined 4`, or `nothing`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let parts: Vec<String> = ChannelKind::ALL
            .iter()
            .filter_map(|&k| self.get(k).map(|n| format!("{k} {n}")))
            .collect();
        if parts.is_empty() {
            f.write_str("nothing")
        } else {
            f.write_str(&parts.join(", "))
        }
    }
}

impl ChannelRequest {
    /// The count of `kind`.
    pub fn get(&self, kind: ChannelKind) -> Option<u32> {
        match kind {
            ChannelKind::Rx => self.rx,
            ChannelKind::Tx => self.tx,
            ChannelKind::Other => self.other,
            ChannelKind::Combined => self.combined,
        }
    }

    /// The request with the count of `kind` replaced by `count`.
    pub fn with(mut self, kind: ChannelKind, count: Option<u32>) -> ChannelRequest {
        let field = match kind {
            ChannelKind::Rx => &mut self.rx,
            ChannelKind::Tx => &mut self.tx,
            ChannelKind::Other => &mut self.other,
            ChannelKind::Combined => &mut self.combined,
        };
        *field = count;
        self
    }

    /// Sets the count of `kind`.
    pub fn set(&mut self, kind: ChannelKind, count: u32) {
        *self = self.with(kind, Some(count));
    }
}

/// A kind of channel.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ChannelKind {
    /// Receive only.
    Rx,
    /// Transmit only.
    Tx,
    /// Other (link, control).
    Other,
    /// Combined receive and transmit.
    Combined,
}

impl ChannelKind {
    const ALL: [ChannelKind; 4] = [
        ChannelKind::Rx,
        ChannelKind::Tx,
        ChannelKind::Other,
        ChannelKind::Combined,
    ];
}

impl fmt::Display for ChannelKind {
    /// `rx`, `tx`, `other` or `combined`, as `ethtool -L` names them.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ChannelKind::Rx => "rx",
            ChannelKind::Tx => "tx",
            ChannelKind::Other => "other",
            ChannelKind::Combined => "combined",
        })
    }
}

/// Why a channel call failed. Each message names the device and says in
/// plain words what went wrong; [`ChannelError::errno`] gives the `errno`
/// the C functions set.
#[derive(Debug)]
#[non_exhaustive]
pub enum ChannelError {
    /// The name cannot be an interface name (empty, 16 bytes or more, or
    /// with `/`, `:`, a space or a NUL byte).
    InvalidName {
        /// The name as given.
        dev: String,
    },
    /// No device has this name (in this network namespace).
    NoSuchDevice {
        /// The device.
        dev: String,
    },
    /// The driver has no channel settings (`EOPNOTSUPP` from
    /// `ETHTOOL_GCHANNELS`).
    NotSupported {
        /// The device.
        dev: String,
    },
    /// The driver shows its channels but cannot change them (`EOPNOTSUPP`
    /// from `ETHTOOL_SCHANNELS`).
    CannotChange {
        /// The device.
        dev: String,
    },
    /// The kernel refused for lack of `CAP_NET_ADMIN` (`EPERM`).
    NeedsCapNetAdmin {
        /// The device.
        dev: String,
    },
    /// A requested count is above the device's maximum; the kernel was not
    /// asked.
    AboveMaximum {
        /// The device.
        dev: String,
        /// The kind of channel.
        kind: ChannelKind,
        /// The count requested.
        requested: u32,
        /// The device's maximum for that kind.
        max: u32,
    },
    /// The driver refused the new counts (another `errno` from
    /// `ETHTOOL_SCHANNELS`, such as `EINVAL` for a zero count it needs).
    Refused {
        /// The device.
        dev: String,
        /// The counts asked for, as `rx 0, tx 4, other 0, combined 0`.
        counts: String,
        /// What the kernel said.
        error: io::Error,
    },
    /// A system call failed in another way.
    Kernel {
        /// The device.
        dev: String,
        /// What was being done.
        what: &'static str,
        /// What the kernel said.
        error: io::Error,
    },
    /// The device has no `/sys/class/net/<dev>/device`: a virtual device
    /// (veth, lo, a bridge), without interrupts.
    VirtualDevice {
        /// The device.
        dev: String,
    },
    /// None of the device's interrupts is named after a channel.
    NoQueueInterrupts {
        /// The device.
        dev: String,
    },
    /// No interrupt of the device serves this channel.
    NoSuchChannel {
        /// The device.
        dev: String,
        /// The channel asked for.
        channel: u32,
        /// The channels that have an interrupt.
        channels: Vec<u32>,
    },
    /// An affinity was set to no CPU at all.
    NoCpus {
        /// The device.
        dev: String,
        /// The channel.
        channel: u32,
    },
    /// The kernel refused the CPUs for the channel's interrupt.
    AffinityRefused {
        /// The device.
        dev: String,
        /// The channel.
        channel: u32,
        /// Its interrupt.
        irq: u32,
        /// The CPUs asked for, as a CPU list (`0-3,6`).
        cpus: String,
        /// What the kernel said.
        error: io::Error,
    },
    /// Writing an IRQ's affinity was refused for lack of privileges.
    NeedsRoot {
        /// The device.
        dev: String,
        /// The file.
        path: PathBuf,
    },
    /// A file of `/proc` or `/sys` could not be read.
    Io {
        /// The device.
        dev: String,
        /// The file.
        path: PathBuf,
        /// What the kernel said.
        error: io::Error,
    },
    /// A file of `/proc` held text this module does not understand.
    BadText {
        /// The device.
        dev: String,
        /// The file.
        path: PathBuf,
        /// What was wrong with it.
        problem: String,
    },
}

impl ChannelError {
    /// The device the error is about, as given.
    pub fn device(&self) -> &str {
        match self {
            ChannelError::InvalidName { dev }
            | ChannelError::NoSuchDevice { dev }
            | ChannelError::NotSupported { dev }
            | ChannelError::CannotChange { dev }
            | ChannelError::NeedsCapNetAdmin { dev }
            | ChannelError::AboveMaximum { dev, .. }
            | ChannelError::Refused { dev, .. }
            | ChannelError::Kernel { dev, .. }
            | ChannelError::VirtualDevice { dev }
            | ChannelError::NoQueueInterrupts { dev }
            | ChannelError::NoSuchChannel { dev, .. }
            | ChannelError::NoCpus { dev, .. }
            | ChannelError::AffinityRefused { dev, .. }
            | ChannelError::NeedsRoot { dev, .. }
            | ChannelError::Io { dev, .. }
            | ChannelError::BadText { dev, .. } => dev,
        }
    }

    /// The `errno` value the C functions report for this error: `EINVAL`
    /// for a bad name, count, channel or CPU set, `ENODEV` for a missing
    /// device, `EOPNOTSUPP` for what the device cannot do (no channel
    /// settings, no interrupts), `EPERM` for missing privileges, and the
    /// kernel's own value otherwise (`EIO` when it gave none).
    pub fn errno(&self) -> c_int {
        let os = |e: &io::Error| e.raw_os_error().unwrap_or(libc::EIO);
        match self {
            ChannelError::InvalidName { .. }
            | ChannelError::AboveMaximum { .. }
            | ChannelError::NoSuchChannel { .. }
            | ChannelError::NoCpus { .. } => libc::EINVAL,
            ChannelError::NoSuchDevice { .. } => libc::ENODEV,
            ChannelError::NotSupported { .. }
            | ChannelError::CannotChange { .. }
            | ChannelError::VirtualDevice { .. }
            | ChannelError::NoQueueInterrupts { .. } => libc::EOPNOTSUPP,
            ChannelError::NeedsCapNetAdmin { .. } | ChannelError::NeedsRoot { .. } => libc::EPERM,
            ChannelError::Refused { error, .. }
            | ChannelError::Kernel { error, .. }
            | ChannelError::AffinityRefused { error, .. }
            | ChannelError::Io { error, .. } => os(error),
            ChannelError::BadText { .. } => libc::EIO,
        }
    }

    /// True when the error concerns the whole device rather than one
    /// channel or one request (so trying other channels is pointless).
    fn is_device_wide(&self) -> bool {
        matches!(
            self,
            ChannelError::InvalidName { .. }
                | ChannelError::NoSuchDevice { .. }
                | ChannelError::VirtualDevice { .. }
                | ChannelError::NoQueueInterrupts { .. }
        )
    }
}

/// What the kernel said, without Rust's `(os error N)` suffix, starting
/// lower case: `invalid argument`.
fn plain(error: &io::Error) -> String {
    let text = error.to_string();
    let text = match text.find(" (os error ") {
        Some(at) => &text[..at],
        None => text.as_str(),
    };
    let mut chars = text.chars();
    match chars.next() {
        Some(first) => first.to_lowercase().chain(chars).collect(),
        None => String::new(),
    }
}

impl fmt::Display for ChannelError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ChannelError::InvalidName { dev } => write!(
                f,
                "{dev:?} is not a valid interface name (1 to 15 bytes, without '/', ':', spaces or NUL)"
            ),
            ChannelError::NoSuchDevice { dev } => write!(f, "{dev}: no such device"),
            ChannelError::NotSupported { dev } => write!(
                f,
                "{dev}: the driver has no channel settings (the kernel says: operation not supported)"
            ),
            ChannelError::CannotChange { dev } => write!(
                f,
                "{dev}: the driver cannot change its channel counts (the kernel says: operation not supported)"
            ),
            ChannelError::NeedsCapNetAdmin { dev } => write!(
                f,
                "{dev}: changing channels needs CAP_NET_ADMIN (the kernel says: operation not permitted)"
            ),
            ChannelError::AboveMaximum {
                dev,
                kind,
                requested,
                max,
            } => {
                write!(
                    f,
                    "{dev}: {requested} {kind} channels requested, the maximum is {max}"
                )?;
                if *max == 0 {
                    write!(f, " (the driver has no {kind} channels)")?;
                }
                Ok(())
            }
            ChannelError::Refused { dev, counts, error } => write!(
                f,
                "{dev}: the driver refused the channel counts {counts} (the kernel says: {})",
                plain(error)
            ),
            ChannelError::Kernel { dev, what, error } => {
                write!(f, "{dev}: {what} failed: {}", plain(error))
            }
            ChannelError::VirtualDevice { dev } => {
                write!(f, "{dev} has no interrupts (a virtual device)")
            }
            ChannelError::NoQueueInterrupts { dev } => write!(
                f,
                "{dev}: none of its interrupts in /proc/interrupts is named after a channel \
                 (names such as {dev}-TxRx-0, {dev}-rx-0 or {dev}-0 are looked for)"
            ),
            ChannelError::NoSuchChannel {
                dev,
                channel,
                channels,
            } => write!(
                f,
                "{dev}: no interrupt serves channel {channel} (the channels with one: {})",
                format_cpu_list(&channels.iter().map(|&c| c as usize).collect::<Vec<_>>())
            ),
            ChannelError::NoCpus { dev, channel } => {
                write!(f, "{dev}: no CPU given for the interrupt of channel {channel}")
            }
            ChannelError::AffinityRefused {
                dev,
                channel,
                irq,
                cpus,
                error,
            } => {
                write!(
                    f,
                    "{dev}: the kernel refused CPUs {cpus} for IRQ {irq} (channel {channel}): {}",
                    plain(error)
                )?;
                match error.raw_os_error() {
                    Some(libc::EINVAL) => f.write_str(" (CPUs offline or absent?)"),
                    Some(libc::EIO) => {
                        f.write_str(" (the kernel manages the affinity of this interrupt itself)")
                    }
                    _ => Ok(()),
                }
            }
            ChannelError::NeedsRoot { dev, path } => write!(
                f,
                "{dev}: writing {} needs root (permission denied)",
                path.display()
            ),
            ChannelError::Io { dev, path, error } => {
                write!(f, "{dev}: cannot read {}: {}", path.display(), plain(error))
            }
            ChannelError::BadText { dev, path, problem } => {
                write!(f, "{dev}: unexpected text in {}: {problem}", path.display())
            }
        }
    }
}

impl std::error::Error for ChannelError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ChannelError::Refused { error, .. }
            | ChannelError::Kernel { error, .. }
            | ChannelError::AffinityRefused { error, .. }
            | ChannelError::Io { error, .. } => Some(error),
            _ => None,
        }
    }
}

// ---------------------------------------------------------------------------
// Channel counts (ethtool)
// ---------------------------------------------------------------------------

/// Reads the channels of `dev` (`ETHTOOL_GCHANNELS`, in the calling
/// thread's network namespace).
pub fn get_channels(dev: &str) -> Result<Channels, ChannelError> {
    let name = interface_name(dev)?;
    let socket = ethtool_socket(dev)?;
    read_channels(&socket, &name, dev)
}

/// Sets the counts of `dev` that `request` names and keeps the others
/// (`ETHTOOL_SCHANNELS`, in the calling thread's network namespace; the
/// kernel wants `CAP_NET_ADMIN`).
///
/// Reads the channels first: a requested count above the device's maximum
/// is refused with [`ChannelError::AboveMaximum`] before the kernel is
/// asked, and when no count would change the kernel is not asked at all
/// (an empty request only checks that the device has channel settings).
pub fn set_channels(dev: &str, request: ChannelRequest) -> Result<(), ChannelError> {
    let name = interface_name(dev)?;
    let socket = ethtool_socket(dev)?;
    let current = read_channels(&socket, &name, dev)?;
    let wanted = requested_channels(dev, &current, &request)?;
    if wanted == current {
        return Ok(());
    }
    let mut raw = EthtoolChannels::from_channels(ETHTOOL_SCHANNELS, &wanted);
    ethtool_ioctl(&socket, &name, &mut raw).map_err(|error| match error.raw_os_error() {
        Some(libc::ENODEV) => ChannelError::NoSuchDevice { dev: dev.into() },
        Some(libc::EOPNOTSUPP) => ChannelError::CannotChange { dev: dev.into() },
        Some(libc::EPERM) | Some(libc::EACCES) => {
            ChannelError::NeedsCapNetAdmin { dev: dev.into() }
        }
        _ => ChannelError::Refused {
            dev: dev.into(),
            counts: format!(
                "rx {}, tx {}, other {}, combined {}",
                wanted.rx, wanted.tx, wanted.other, wanted.combined
            ),
            error,
        },
    })
}

/// The channels `request` asks for, starting from `current`; a count
/// above its maximum is an error.
fn requested_channels(
    dev: &str,
    current: &Channels,
    request: &ChannelRequest,
) -> Result<Channels, ChannelError> {
    let mut wanted = *current;
    for kind in ChannelKind::ALL {
        let Some(requested) = request.get(kind) else {
            continue;
        };
        let (max, slot) = match kind {
            ChannelKind::Rx => (current.max_rx, &mut wanted.rx),
            ChannelKind::Tx => (current.max_tx, &mut wanted.tx),
            ChannelKind::Other => (current.max_other, &mut wanted.other),
            ChannelKind::Combined => (current.max_combined, &mut wanted.combined),
        };
        if requested > max {
            return Err(ChannelError::AboveMaximum {
                dev: dev.into(),
                kind,
                requested,
                max,
            });
        }
        *slot = requested;
    }
    Ok(wanted)
}

/// `dev` as the NUL-padded name of a `struct ifreq`, after checking it
/// is a name the kernel could have given an interface.
fn interface_name(dev: &str) -> Result<[c_char; libc::IFNAMSIZ], ChannelError> {
    let bytes = dev.as_bytes();
    let valid = !bytes.is_empty()
        && bytes.len() < libc::IFNAMSIZ
        && dev != "."
        && dev != ".."
        && !bytes
            .iter()
            .any(|&b| b == b'/' || b == b':' || b == 0 || b.is_ascii_whitespace());
    if !valid {
        return Err(ChannelError::InvalidName { dev: dev.into() });
    }
    let mut name = [0 as c_char; libc::IFNAMSIZ];
    for (to, &from) in name.iter_mut().zip(bytes) {
        *to = from as c_char;
    }
    Ok(name)
}

/// Reads the channels through an open socket.
fn read_channels(
    socket: &OwnedFd,
    name: &[c_char; libc::IFNAMSIZ],
    dev: &str,
) -> Result<Channels, ChannelError> {
    let mut raw = EthtoolChannels {
        cmd: ETHTOOL_GCHANNELS,
        ..EthtoolChannels::default()
    };
    ethtool_ioctl(socket, name, &mut raw).map_err(|error| match error.raw_os_error() {
        Some(libc::ENODEV) => ChannelError::NoSuchDevice { dev: dev.into() },
        Some(libc::EOPNOTSUPP) => ChannelError::NotSupported { dev: dev.into() },
        Some(libc::EPERM) | Some(libc::EACCES) => {
            ChannelError::NeedsCapNetAdmin { dev: dev.into() }
        }
        _ => ChannelError::Kernel {
            dev: dev.into(),
            what: "reading the channels (ETHTOOL_GCHANNELS)",
            error,
        },
    })?;
    Ok(raw.to_channels())
}

/// `struct ethtool_channels` of `<linux/ethtool.h>`.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
struct EthtoolChannels {
    cmd: u32,
    max_rx: u32,
    max_tx: u32,
    max_other: u32,
    max_combined: u32,
    rx_count: u32,
    tx_count: u32,
    other_count: u32,
    combined_count: u32,
}

impl EthtoolChannels {
    fn from_channels(cmd: u32, c: &Channels) -> EthtoolChannels {
        EthtoolChannels {
            cmd,
            max_rx: c.max_rx,
            max_tx: c.max_tx,
            max_other: c.max_other,
            max_combined: c.max_combined,
            rx_count: c.rx,
            tx_count: c.tx,
            other_count: c.other,
            combined_count: c.combined,
        }
    }

    fn to_channels(self) -> Channels {
        Channels {
            max_rx: self.max_rx,
            max_tx: self.max_tx,
            max_other: self.max_other,
            max_combined: self.max_combined,
            rx: self.rx_count,
            tx: self.tx_count,
            other: self.other_count,
            combined: self.combined_count,
        }
    }
}

/// `struct ifreq` with the `ifr_data` member of its union, padded to the
/// full size of `struct ifreq`.
#[repr(C)]
struct IfreqData {
    name: [c_char; libc::IFNAMSIZ],
    data: *mut c_void,
    _pad: [u8; std::mem::size_of::<libc::ifreq>()
        - libc::IFNAMSIZ
        - std::mem::size_of::<*mut c_void>()],
}

const _: () = assert!(std::mem::size_of::<IfreqData>() == std::mem::size_of::<libc::ifreq>());

/// An `AF_INET` datagram socket for `SIOCETHTOOL`, in the calling
/// thread's network namespace.
fn ethtool_socket(dev: &str) -> Result<OwnedFd, ChannelError> {
    // SAFETY: socket() takes integers only; a non-negative result is a new
    // descriptor that nothing else owns, handed to exactly one OwnedFd.
    let fd = unsafe {
        let fd = libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0);
        if fd < 0 {
            None
        } else {
            Some(OwnedFd::from_raw_fd(fd))
        }
    };
    fd.ok_or_else(|| ChannelError::Kernel {
        dev: dev.into(),
        what: "opening a socket for ethtool",
        error: io::Error::last_os_error(),
    })
}

/// `ioctl(SIOCETHTOOL)` with `data` (whose `cmd` says what to do) for the
/// interface `name`.
fn ethtool_ioctl(
    socket: &OwnedFd,
    name: &[c_char; libc::IFNAMSIZ],
    data: &mut EthtoolChannels,
) -> io::Result<()> {
    let mut request = IfreqData {
        name: *name,
        data: (data as *mut EthtoolChannels).cast(),
        _pad: [0; std::mem::size_of::<libc::ifreq>()
            - libc::IFNAMSIZ
            - std::mem::size_of::<*mut c_void>()],
    };
    // SAFETY: the descriptor is an open socket; `request` is a fully
    // initialised struct ifreq (NUL-terminated name, checked shorter than
    // IFNAMSIZ) whose ifr_data points at `data`, a live, exclusively
    // borrowed struct ethtool_channels of the kernel's layout. Both outlive
    // the call; for these two commands the kernel reads and writes only
    // `request` and that one struct.
    let rc = unsafe {
        libc::ioctl(
            socket.as_raw_fd(),
            libc::SIOCETHTOOL as _,
            &mut request as *mut IfreqData,
        )
    };
    if rc < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

// ---------------------------------------------------------------------------
// Interrupts of channels
// ---------------------------------------------------------------------------

/// One numbered line of `/proc/interrupts`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Interrupt {
    /// The IRQ number.
    pub irq: u32,
    /// The words after the per-CPU counts: the interrupt controller, the
    /// hardware IRQ and trigger, and the handlers' names, with the commas
    /// between shared handlers removed.
    pub words: Vec<String>,
}

/// The numbered lines of `/proc/interrupts` text (the CPU header and the
/// named lines such as `NMI:` and `LOC:` are left out).
pub fn parse_interrupts(text: &str) -> Vec<Interrupt> {
    text.lines()
        .filter_map(|line| {
            let (number, rest) = line.split_once(':')?;
            let irq = number.trim().parse::<u32>().ok()?;
            let mut words = rest.split_whitespace().peekable();
            while words
                .next_if(|w| w.bytes().all(|b| b.is_ascii_digit()))
                .is_some()
            {}
            let words = words
                .map(|w| w.trim_end_matches(',').to_string())
                .filter(|w| !w.is_empty())
                .collect();
            Some(Interrupt { irq, words })
        })
        .collect()
}

/// What an interrupt name says about the queue it serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QueueVector {
    /// The channel (queue) number.
    pub channel: u32,
    /// True when the vector serves only the transmit side of its channel
    /// (`eth0-tx-0`, `virtio2-output.0`).
    pub transmit_only: bool,
}

/// Words that mark a vector serving no queue.
const NOT_A_QUEUE: &[&str] = &[
    "adminq", "aq", "async", "cfg", "cmd", "config", "ctl", "ctrl", "err", "error", "event",
    "events", "fdir", "link", "lsc", "mailbox", "mbx", "mgmt", "misc", "other",
];
/// Words that mark a receive (or combined) vector.
const RECEIVES: &[&str] = &["rx", "rxtx", "txrx", "input", "in", "recv", "combined"];
/// Words that mark a transmit vector.
const TRANSMITS: &[&str] = &["tx", "output", "out", "xmit", "send"];

/// The queue an interrupt name serves, if it is a queue vector of a device
/// called one of `owners` (its interface name and its sysfs device name);
/// the rule is in the [module documentation](self).
pub fn queue_vector(name: &str, owners: &[&str]) -> Option<QueueVector> {
    let (head, tail) = match name.split_once('@') {
        Some((head, tail)) => (head, Some(tail)),
        None => (name, None),
    };
    let digits_at = head.trim_end_matches(|c: char| c.is_ascii_digit()).len();
    if digits_at == head.len() {
        return None;
    }
    let channel = head[digits_at..].parse::<u32>().ok()?;
    let role = owners.iter().filter(|o| !o.is_empty()).find_map(|owner| {
        match whole_word_end(head, owner) {
            Some(end) if end < digits_at => Some(&head[end..digits_at]),
            Some(_) => None,
            None if tail.is_some_and(|t| whole_word_end(t, owner).is_some()) => {
                Some(&head[..digits_at])
            }
            None => None,
        }
    })?;
    let words: Vec<String> = role
        .split(|c: char| !c.is_ascii_alphabetic())
        .filter(|w| !w.is_empty())
        .map(|w| w.to_ascii_lowercase())
        .collect();
    let has = |list: &[&str]| words.iter().any(|w| list.contains(&w.as_str()));
    if has(NOT_A_QUEUE) {
        return None;
    }
    Some(QueueVector {
        channel,
        transmit_only: has(TRANSMITS) && !has(RECEIVES),
    })
}

/// Where the first occurrence of `word` in `text` that is neither preceded
/// nor followed by a letter or digit ends.
fn whole_word_end(text: &str, word: &str) -> Option<usize> {
    text.match_indices(word).find_map(|(at, _)| {
        let end = at + word.len();
        let before = text[..at].chars().next_back();
        let after = text[end..].chars().next();
        let boundary = |c: Option<char>| c.is_none_or(|c| !c.is_ascii_alphanumeric());
        (boundary(before) && boundary(after)).then_some(end)
    })
}

/// The interrupt of each channel of a device, by the rule of the [module
/// documentation](self): `interrupts` from [`parse_interrupts`], `msi` the
/// device's MSI interrupts (`None`: every interrupt is a candidate),
/// `owners` its interface and sysfs device names. Maps channel to IRQ.
pub fn queue_interrupts(
    interrupts: &[Interrupt],
    msi: Option<&[u32]>,
    owners: &[&str],
) -> BTreeMap<u32, u32> {
    // channel -> (transmit_only, irq): the smallest wins.
    let mut best: BTreeMap<u32, (bool, u32)> = BTreeMap::new();
    for interrupt in interrupts {
        if msi.is_some_and(|msi| !msi.contains(&interrupt.irq)) {
            continue;
        }
        for word in &interrupt.words {
            if let Some(v) = queue_vector(word, owners) {
                let candidate = (v.transmit_only, interrupt.irq);
                best.entry(v.channel)
                    .and_modify(|b| *b = (*b).min(candidate))
                    .or_insert(candidate);
            }
        }
    }
    best.into_iter().map(|(c, (_, irq))| (c, irq)).collect()
}

/// Where the kernel's files are: `/sys` and `/proc`, or a copy of their
/// relevant parts in the unit tests.
struct System {
    sys: PathBuf,
    proc: PathBuf,
}

impl System {
    fn host() -> System {
        System {
            sys: PathBuf::from("/sys"),
            proc: PathBuf::from("/proc"),
        }
    }

    fn affinity_path(&self, irq: u32) -> PathBuf {
        self.proc.join(format!("irq/{irq}/smp_affinity_list"))
    }

    /// The interrupt serving channel `channel` of `dev`.
    fn irq_of_channel(&self, dev: &str, channel: u32) -> Result<u32, ChannelError> {
        interface_name(dev)?;
        let net = self.sys.join("class/net").join(dev);
        if std::fs::symlink_metadata(&net).is_err() {
            return Err(ChannelError::NoSuchDevice { dev: dev.into() });
        }
        let device = net.join("device");
        let Ok(device) = std::fs::canonicalize(&device) else {
            return Err(ChannelError::VirtualDevice { dev: dev.into() });
        };
        let sysfs_name = device
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default()
            .to_string();
        let msi = msi_irqs(&device).or_else(|| device.parent().and_then(msi_irqs));
        let path = self.proc.join("interrupts");
        let text = std::fs::read_to_string(&path).map_err(|error| ChannelError::Io {
            dev: dev.into(),
            path,
            error,
        })?;
        let map = queue_interrupts(
            &parse_interrupts(&text),
            msi.as_deref(),
            &[dev, &sysfs_name],
        );
        if map.is_empty() {
            return Err(ChannelError::NoQueueInterrupts { dev: dev.into() });
        }
        map.get(&channel)
            .copied()
            .ok_or_else(|| ChannelError::NoSuchChannel {
                dev: dev.into(),
                channel,
                channels: map.keys().copied().collect(),
            })
    }

    fn channel_affinity(&self, dev: &str, channel: u32) -> Result<Vec<usize>, ChannelError> {
        let irq = self.irq_of_channel(dev, channel)?;
        let path = self.affinity_path(irq);
        let text = std::fs::read_to_string(&path).map_err(|error| ChannelError::Io {
            dev: dev.into(),
            path: path.clone(),
            error,
        })?;
        crate::config::cpu_list(text.trim()).map_err(|problem| ChannelError::BadText {
            dev: dev.into(),
            path,
            problem,
        })
    }

    fn set_channel_affinity(
        &self,
        dev: &str,
        channel: u32,
        cpus: &[usize],
    ) -> Result<(), ChannelError> {
        if cpus.is_empty() {
            interface_name(dev)?;
            return Err(ChannelError::NoCpus {
                dev: dev.into(),
                channel,
            });
        }
        let irq = self.irq_of_channel(dev, channel)?;
        let path = self.affinity_path(irq);
        let list = format_cpu_list(cpus);
        let refused = |error: io::Error| match error.kind() {
            io::ErrorKind::PermissionDenied => ChannelError::NeedsRoot {
                dev: dev.into(),
                path: path.clone(),
            },
            _ => ChannelError::AffinityRefused {
                dev: dev.into(),
                channel,
                irq,
                cpus: list.clone(),
                error,
            },
        };
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .truncate(true)
            .open(&path)
            .map_err(|error| match error.kind() {
                io::ErrorKind::PermissionDenied => refused(error),
                _ => ChannelError::Io {
                    dev: dev.into(),
                    path: path.clone(),
                    error,
                },
            })?;
        file.write_all(format!("{list}\n").as_bytes())
            .map_err(refused)
    }
}

/// The IRQ numbers in a device's `msi_irqs` directory, if it has one.
fn msi_irqs(device: &Path) -> Option<Vec<u32>> {
    let entries = std::fs::read_dir(device.join("msi_irqs")).ok()?;
    Some(
        entries
            .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
            .collect(),
    )
}

/// The interrupt that serves channel `channel` of `dev`, found by the
/// rule of the [module documentation](self) in
/// `/sys/class/net/<dev>/device` and `/proc/interrupts`.
pub fn irq_of_channel(dev: &str, channel: u32) -> Result<u32, ChannelError> {
    System::host().irq_of_channel(dev, channel)
}

/// Lets only `cpus` serve the interrupt of channel `channel` of `dev`
/// (writes `/proc/irq/<irq>/smp_affinity_list`; needs root).
pub fn set_channel_affinity(dev: &str, channel: u32, cpus: &[usize]) -> Result<(), ChannelError> {
    System::host().set_channel_affinity(dev, channel, cpus)
}

/// The CPUs allowed to serve the interrupt of channel `channel` of `dev`
/// (reads `/proc/irq/<irq>/smp_affinity_list`), in increasing order.
pub fn channel_affinity(dev: &str, channel: u32) -> Result<Vec<usize>, ChannelError> {
    System::host().channel_affinity(dev, channel)
}

/// `cpus` as a kernel CPU list: sorted, without repeats, runs written as
/// ranges (`[3, 0, 1, 2, 8]` gives `0-3,8`).
pub fn format_cpu_list(cpus: &[usize]) -> String {
    let mut sorted = cpus.to_vec();
    sorted.sort_unstable();
    sorted.dedup();
    let mut parts = Vec::new();
    let mut i = 0;
    while i < sorted.len() {
        let start = sorted[i];
        let mut end = start;
        while i + 1 < sorted.len() && sorted[i + 1] == end + 1 {
            i += 1;
            end = sorted[i];
        }
        parts.push(if start == end {
            start.to_string()
        } else {
            format!("{start}-{end}")
        });
        i += 1;
    }
    parts.join(",")
}

// ---------------------------------------------------------------------------
// Applying the configuration
// ---------------------------------------------------------------------------

/// Applies the channel counts `request` and the IRQ affinities `irq`
/// (pairs of a channel and its CPUs) to `dev`, counts first (they decide
/// which channels exist). Each failure is written on stderr as one line
/// prefixed `libstreamcap_pcap: ` and the rest is still applied; a failure
/// that concerns the whole device (a virtual device, which has no
/// interrupts, or a missing one) is written once for all the affinities.
/// Returns the failures in the order they were written (empty when
/// everything was applied).
pub fn apply(dev: &str, request: &ChannelRequest, irq: &[(u32, CpuSet)]) -> Vec<ChannelError> {
    let mut failures = Vec::new();
    let mut request = *request;
    // A count above its maximum is reported alone; the others still apply.
    if let Ok(current) = get_channels(dev) {
        for kind in ChannelKind::ALL {
            let one = ChannelRequest::default().with(kind, request.get(kind));
            if let Err(e @ ChannelError::AboveMaximum { .. }) =
                requested_channels(dev, &current, &one)
            {
                report(&format!("{e}: the channel counts {one} are not set"));
                failures.push(e);
                request = request.with(kind, None);
            }
        }
    }
    if !request.is_empty() {
        if let Err(e) = set_channels(dev, request) {
            report(&format!("{e}: the channel counts {request} are not set"));
            failures.push(e);
        }
    }
    for (i, (channel, cpus)) in irq.iter().enumerate() {
        if let Err(e) = set_channel_affinity(dev, *channel, &cpus.to_vec()) {
            if e.is_device_wide() {
                let channels: Vec<String> = irq[i..].iter().map(|(c, _)| c.to_string()).collect();
                report(&format!(
                    "{e}: the IRQ affinity of channel{} {} is not set",
                    if channels.len() == 1 { "" } else { "s" },
                    channels.join(", ")
                ));
                failures.push(e);
                break;
            }
            report(&format!(
                "{e}: the IRQ affinity of channel {channel} is not set"
            ));
            failures.push(e);
        }
    }
    failures
}

/// Writes `message` on stderr as one line with the library's prefix, in
/// one write; a failure to write is ignored (there is nowhere else to say
/// it).
fn report(message: &str) {
    let line = format!("{PREFIX}{message}\n");
    let _ = io::stderr().lock().write_all(line.as_bytes());
}

// ---------------------------------------------------------------------------
// The C functions
// ---------------------------------------------------------------------------

/// `struct pcap_channels` of `include/streamcap_pcap.h`.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PcapChannels {
    /// The most receive-only channels.
    pub max_rx: c_uint,
    /// The most transmit-only channels.
    pub max_tx: c_uint,
    /// The most other channels.
    pub max_other: c_uint,
    /// The most combined channels.
    pub max_combined: c_uint,
    /// The receive-only channels in use.
    pub rx_count: c_uint,
    /// The transmit-only channels in use.
    pub tx_count: c_uint,
    /// The other channels in use.
    pub other_count: c_uint,
    /// The combined channels in use.
    pub combined_count: c_uint,
}

impl From<Channels> for PcapChannels {
    fn from(c: Channels) -> PcapChannels {
        PcapChannels {
            max_rx: c.max_rx,
            max_tx: c.max_tx,
            max_other: c.max_other,
            max_combined: c.max_combined,
            rx_count: c.rx,
            tx_count: c.tx,
            other_count: c.other,
            combined_count: c.combined,
        }
    }
}

impl PcapChannels {
    /// The request that changes the counts of `self` selected by
    /// `mask` (`PCAP_*_CHANNELS` bits; other bits are an error).
    pub fn request(&self, mask: c_int) -> Result<ChannelRequest, String> {
        let known =
            PCAP_RX_CHANNELS | PCAP_TX_CHANNELS | PCAP_OTHER_CHANNELS | PCAP_COMBINED_CHANNELS;
        if mask & !known != 0 {
            return Err(format!(
                "channel_mask {mask:#x} has bits other than PCAP_RX_CHANNELS (0x1), \
                 PCAP_TX_CHANNELS (0x2), PCAP_OTHER_CHANNELS (0x4) and PCAP_COMBINED_CHANNELS (0x8)"
            ));
        }
        let pick = |bit: c_int, n: c_uint| (mask & bit != 0).then_some(n);
        Ok(ChannelRequest {
            rx: pick(PCAP_RX_CHANNELS, self.rx_count),
            tx: pick(PCAP_TX_CHANNELS, self.tx_count),
            other: pick(PCAP_OTHER_CHANNELS, self.other_count),
            combined: pick(PCAP_COMBINED_CHANNELS, self.combined_count),
        })
    }
}

/// Why a C call failed: a channel error, an argument refused before any
/// work (`EINVAL`), or an affinity a `cpu_set_t` cannot hold (`EOVERFLOW`).
enum Failure {
    Channel(ChannelError),
    Argument(String),
    Overflow(String),
}

impl Failure {
    fn message(&self) -> String {
        match self {
            Failure::Channel(e) => e.to_string(),
            Failure::Argument(m) | Failure::Overflow(m) => m.clone(),
        }
    }

    fn errno(&self) -> c_int {
        match self {
            Failure::Channel(e) => e.errno(),
            Failure::Argument(_) => libc::EINVAL,
            Failure::Overflow(_) => libc::EOVERFLOW,
        }
    }
}

impl From<ChannelError> for Failure {
    fn from(e: ChannelError) -> Failure {
        Failure::Channel(e)
    }
}

/// Runs `work` so that a panic comes back as a failure instead of
/// unwinding into C.
fn guarded(work: impl FnOnce() -> Result<(), Failure>) -> Result<(), Failure> {
    match catch_unwind(AssertUnwindSafe(work)) {
        Ok(result) => result,
        Err(panic) => {
            let what = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown".into());
            Err(Failure::Argument(format!(
                "internal error (a panic: {what})"
            )))
        }
    }
}

/// The device name `dev` points at, or why it cannot be used.
///
/// # Safety
///
/// `dev` is NULL or points at a NUL-terminated string that stays unchanged
/// during the call.
unsafe fn device_name(dev: *const c_char) -> Result<String, Failure> {
    if dev.is_null() {
        return Err(Failure::Argument("dev is NULL".into()));
    }
    // SAFETY: not NULL, and NUL-terminated and unchanged during the call by
    // this function's contract; the bytes are copied before returning.
    let name = unsafe { CStr::from_ptr(dev) };
    match name.to_str() {
        Ok(s) => Ok(s.to_string()),
        Err(_) => Err(Failure::Channel(ChannelError::InvalidName {
            dev: name.to_string_lossy().into_owned(),
        })),
    }
}

/// Writes `message` into `errbuf` (at most `PCAP_ERRBUF_SIZE - 1` bytes,
/// cut at a character boundary, then a NUL); does nothing if it is NULL.
///
/// # Safety
///
/// `errbuf` is NULL or points at `PCAP_ERRBUF_SIZE` writable bytes.
unsafe fn write_errbuf(errbuf: *mut c_char, message: &str) {
    if errbuf.is_null() {
        return;
    }
    let mut len = message.len().min(PCAP_ERRBUF_SIZE - 1);
    while !message.is_char_boundary(len) {
        len -= 1;
    }
    // SAFETY: not NULL, and PCAP_ERRBUF_SIZE writable bytes by this
    // function's contract (libpcap's for every errbuf); no other reference
    // to them exists during the call. `len + 1 <= PCAP_ERRBUF_SIZE`.
    let buf = unsafe { std::slice::from_raw_parts_mut(errbuf.cast::<u8>(), PCAP_ERRBUF_SIZE) };
    buf[..len].copy_from_slice(&message.as_bytes()[..len]);
    buf[len] = 0;
}

/// Sets the calling thread's `errno`.
fn set_errno(value: c_int) {
    // SAFETY: __errno_location returns the address of the calling thread's
    // errno, valid for the thread's lifetime; writing an int there is what
    // C's `errno = value` does.
    unsafe { *libc::__errno_location() = value };
}

/// The CPUs in `cpuset`, in increasing order.
///
/// # Safety
///
/// `cpuset` is not NULL and points at a readable `cpu_set_t`.
unsafe fn cpus_of_set(cpuset: *const libc::cpu_set_t) -> Vec<usize> {
    // SAFETY: a readable cpu_set_t by this function's contract; it is only
    // read. CPU_ISSET reads one bit of it for each CPU below CPU_SETSIZE,
    // the number of bits it holds.
    unsafe {
        let set = &*cpuset;
        (0..libc::CPU_SETSIZE as usize)
            .filter(|&cpu| libc::CPU_ISSET(cpu, set))
            .collect()
    }
}

/// Makes `cpuset` hold exactly `cpus`, all below `CPU_SETSIZE`.
///
/// # Safety
///
/// `cpuset` is not NULL and points at a writable `cpu_set_t`.
unsafe fn fill_cpu_set(cpuset: *mut libc::cpu_set_t, cpus: &[usize]) {
    // SAFETY: a writable cpu_set_t by this function's contract, with no
    // other Rust reference to it; CPU_ZERO clears it and CPU_SET sets one
    // bit of it, for CPUs checked below CPU_SETSIZE (the bits it holds).
    unsafe {
        let set = &mut *cpuset;
        libc::CPU_ZERO(set);
        for &cpu in cpus {
            if cpu < libc::CPU_SETSIZE as usize {
                libc::CPU_SET(cpu, set);
            }
        }
    }
}

/// A channel number from C: negative numbers are refused.
fn channel_number(channel: c_int) -> Result<u32, Failure> {
    u32::try_from(channel).map_err(|_| Failure::Argument(format!("channel {channel} is negative")))
}

/// Sets the counts of `*ch` selected by `channel_mask` (`PCAP_RX_CHANNELS`,
/// `PCAP_TX_CHANNELS`, `PCAP_OTHER_CHANNELS`, `PCAP_COMBINED_CHANNELS`) on
/// device `dev`, as [`set_channels`] does: the other counts keep their
/// values, a count above the device's maximum is refused before the kernel
/// is asked. Returns 1, or -1 with the reason written NUL-terminated into
/// `errbuf` (nothing is written when `errbuf` is NULL). NULL `dev` or `ch`
/// and unknown mask bits are refused with -1.
///
/// # Safety
///
/// `dev` is NULL or a NUL-terminated string; `ch` is NULL or points at a
/// readable `struct pcap_channels`; `errbuf` is NULL or points at
/// `PCAP_ERRBUF_SIZE` (256) writable bytes.
#[no_mangle]
pub unsafe extern "C" fn pcap_set_channels(
    dev: *const c_char,
    ch: *const PcapChannels,
    channel_mask: c_int,
    errbuf: *mut c_char,
) -> c_int {
    let result = guarded(|| {
        // SAFETY: the caller's contract for `dev`, passed on.
        let dev = unsafe { device_name(dev) }?;
        if ch.is_null() {
            return Err(Failure::Argument("ch is NULL".into()));
        }
        // SAFETY: not NULL, and a readable struct pcap_channels (plain
        // unsigned ints, any bit pattern valid) by the caller's contract;
        // copied out.
        let wanted = unsafe { ch.read() };
        let request = wanted.request(channel_mask).map_err(Failure::Argument)?;
        set_channels(&dev, request)?;
        Ok(())
    });
    match result {
        Ok(()) => 1,
        Err(f) => {
            // SAFETY: the caller's contract for `errbuf`, passed on.
            unsafe { write_errbuf(errbuf, &f.message()) };
            -1
        }
    }
}

/// Reads the channels of device `dev` into `*info`, as [`get_channels`]
/// does. Returns 1, or -1 with the reason written NUL-terminated into
/// `errbuf` (nothing is written when `errbuf` is NULL) and `*info`
/// untouched. NULL `dev` or `info` is refused with -1.
///
/// # Safety
///
/// `dev` is NULL or a NUL-terminated string; `info` is NULL or points at a
/// writable `struct pcap_channels`; `errbuf` is NULL or points at
/// `PCAP_ERRBUF_SIZE` (256) writable bytes.
#[no_mangle]
pub unsafe extern "C" fn pcap_get_channels(
    dev: *const c_char,
    info: *mut PcapChannels,
    errbuf: *mut c_char,
) -> c_int {
    let result = guarded(|| {
        // SAFETY: the caller's contract for `dev`, passed on.
        let dev = unsafe { device_name(dev) }?;
        if info.is_null() {
            return Err(Failure::Argument("info is NULL".into()));
        }
        let channels = get_channels(&dev)?;
        // SAFETY: not NULL, and a writable struct pcap_channels by the
        // caller's contract; `write` does not read or drop what was there.
        unsafe { info.write(PcapChannels::from(channels)) };
        Ok(())
    });
    match result {
        Ok(()) => 1,
        Err(f) => {
            // SAFETY: the caller's contract for `errbuf`, passed on.
            unsafe { write_errbuf(errbuf, &f.message()) };
            -1
        }
    }
}

/// Reports a failure of one of the affinity calls: a line on stderr,
/// `errno`, and -1.
fn affinity_failure(function: &str, failure: Failure) -> c_int {
    report(&format!("{function}: {}", failure.message()));
    set_errno(failure.errno());
    -1
}

/// Lets only the CPUs of `*cpuset` serve the interrupt of channel
/// `channel` of `dev`, as [`set_channel_affinity`] does. Returns 1, or -1
/// with `errno` set (`EINVAL`: NULL argument, negative channel, empty set,
/// no such channel, CPUs the kernel refused; `ENODEV`: no such device;
/// `EOPNOTSUPP`: a virtual device, or no interrupt named after a channel;
/// `EPERM`: not root) and a line on stderr prefixed `libstreamcap_pcap: `.
///
/// # Safety
///
/// `dev` is NULL or a NUL-terminated string; `cpuset` is NULL or points at
/// a readable `cpu_set_t`.
#[no_mangle]
pub unsafe extern "C" fn pcap_channel_setaffinity(
    dev: *const c_char,
    channel: c_int,
    cpuset: *const libc::cpu_set_t,
) -> c_int {
    let result = guarded(|| {
        // SAFETY: the caller's contract for `dev`, passed on.
        let dev = unsafe { device_name(dev) }?;
        let channel = channel_number(channel)?;
        if cpuset.is_null() {
            return Err(Failure::Argument("cpuset is NULL".into()));
        }
        // SAFETY: not NULL, and a readable cpu_set_t by the caller's
        // contract.
        let cpus = unsafe { cpus_of_set(cpuset) };
        set_channel_affinity(&dev, channel, &cpus)?;
        Ok(())
    });
    match result {
        Ok(()) => 1,
        Err(f) => affinity_failure("pcap_channel_setaffinity", f),
    }
}

/// Writes into `*cpuset` the CPUs allowed to serve the interrupt of
/// channel `channel` of `dev`, as [`channel_affinity`] reads them. Returns
/// 1, or -1 with `errno` set as for [`pcap_channel_setaffinity`] (also
/// `EOVERFLOW` for a CPU a `cpu_set_t` cannot hold) and a line on stderr,
/// `*cpuset` untouched.
///
/// # Safety
///
/// `dev` is NULL or a NUL-terminated string; `cpuset` is NULL or points at
/// a writable `cpu_set_t`.
#[no_mangle]
pub unsafe extern "C" fn pcap_channel_getaffinity(
    dev: *const c_char,
    channel: c_int,
    cpuset: *mut libc::cpu_set_t,
) -> c_int {
    let result = guarded(|| {
        // SAFETY: the caller's contract for `dev`, passed on.
        let dev = unsafe { device_name(dev) }?;
        let channel = channel_number(channel)?;
        if cpuset.is_null() {
            return Err(Failure::Argument("cpuset is NULL".into()));
        }
        let cpus = channel_affinity(&dev, channel)?;
        if let Some(&cpu) = cpus.iter().find(|&&c| c >= libc::CPU_SETSIZE as usize) {
            return Err(Failure::Overflow(format!(
                "{dev}: the interrupt of channel {channel} may run on CPU {cpu}, \
                 which a cpu_set_t cannot hold (CPU_SETSIZE is {})",
                libc::CPU_SETSIZE
            )));
        }
        // SAFETY: not NULL, and a writable cpu_set_t by the caller's
        // contract; every CPU was checked below CPU_SETSIZE.
        unsafe { fill_cpu_set(cpuset, &cpus) };
        Ok(())
    });
    match result {
        Ok(()) => 1,
        Err(f) => affinity_failure("pcap_channel_getaffinity", f),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `/proc/interrupts` of a two-CPU virtual machine with a virtio NIC.
    const VIRTIO: &str = "           CPU0       CPU1       
 24:          1          0  IO-APIC   5-edge      ACPI:Ged
 26:          0         12  IO-APIC   4-edge      ttyS0
 28:          0          0 PCI-MSIX-0000:00:01.0   0-edge      virtio0-config
 36:          0    1426464 PCI-MSIX-0000:00:02.0   1-edge      virtio1-req.0
 37:          0          0 PCI-MSIX-0000:00:03.0   0-edge      virtio2-config
 38:          0      27227 PCI-MSIX-0000:00:03.0   1-edge      virtio2-input.0
 39:      21126          0 PCI-MSIX-0000:00:03.0   2-edge      virtio2-output.0
 40:          0          0 PCI-MSIX-0000:00:04.0   0-edge      virtio3-config
 41:      22467          0 PCI-MSIX-0000:00:04.0   1-edge      virtio3-rx
NMI:          0          0   Non-maskable interrupts
LOC:   17029958   16001746   Local timer interrupts
ERR:          0
";

    /// An Intel 10G card (ixgbe) with four combined vectors and a link
    /// vector, beside a second port `eth10`.
    const IXGBE: &str = "            CPU0       CPU1       CPU2       CPU3
  0:         22          0          0          0   IO-APIC   2-edge      timer
 60:       1000          0          0          0  IR-PCI-MSI 524288-edge      eth1-TxRx-0
 61:          0       1000          0          0  IR-PCI-MSI 524289-edge      eth1-TxRx-1
 62:          0          0       1000          0  IR-PCI-MSI 524290-edge      eth1-TxRx-2
 63:          0          0          0       1000  IR-PCI-MSI 524291-edge      eth1-TxRx-3
 64:          1          0          0          0  IR-PCI-MSI 524292-edge      eth1
 70:        500          0          0          0  IR-PCI-MSI 526336-edge      eth10-TxRx-0
 71:        500          0          0          0  IR-PCI-MSI 526337-edge      eth10-TxRx-1
";

    fn words(list: &[&str]) -> Vec<String> {
        list.iter().map(|w| w.to_string()).collect()
    }

    #[test]
    fn interrupts_parse_into_numbers_and_names() {
        let all = parse_interrupts(VIRTIO);
        assert_eq!(all.len(), 9, "{all:?}");
        assert_eq!(
            all[0],
            Interrupt {
                irq: 24,
                words: words(&["IO-APIC", "5-edge", "ACPI:Ged"])
            }
        );
        assert_eq!(
            all[5],
            Interrupt {
                irq: 38,
                words: words(&["PCI-MSIX-0000:00:03.0", "1-edge", "virtio2-input.0"])
            }
        );
        assert!(
            all.iter().all(|i| i.irq != 0),
            "NMI, LOC and ERR are not IRQs"
        );
    }

    #[test]
    fn shared_handlers_lose_their_commas_and_arm_lines_keep_their_hardware_irq() {
        let text = "           CPU0       CPU1
 11:     100     200  GICv3  27 Level     arch_timer
 45:       3       0  ITS-MSI 524288 Edge      eth0-rx-0, eth0-tx-0
 50:
";
        let all = parse_interrupts(text);
        assert_eq!(all[0].words, words(&["GICv3", "27", "Level", "arch_timer"]));
        assert_eq!(
            all[1].words,
            words(&["ITS-MSI", "524288", "Edge", "eth0-rx-0", "eth0-tx-0"])
        );
        assert_eq!(
            all[2],
            Interrupt {
                irq: 50,
                words: vec![]
            }
        );
        assert!(parse_interrupts("").is_empty());
        assert!(parse_interrupts("no colon here\n:\nx: 1 2").is_empty());
    }

    fn vector(channel: u32, transmit_only: bool) -> Option<QueueVector> {
        Some(QueueVector {
            channel,
            transmit_only,
        })
    }

    #[test]
    fn queue_vector_names_of_common_drivers() {
        let owners = ["eth0", "0000:3b:00.0"];
        for (name, expected) in [
            ("eth0-TxRx-3", vector(3, false)),
            ("eth0-rx-3", vector(3, false)),
            ("eth0-tx-3", vector(3, true)),
            ("eth0-3", vector(3, false)),
            ("eth0-q3", vector(3, false)),
            ("eth0-fp-12", vector(12, false)),
            ("eth0-rxtx-3", vector(3, false)),
            ("ena-Tx-Rx-eth0-3", vector(3, false)),
            ("i40e-eth0-TxRx-3", vector(3, false)),
            ("eth0-Tx-Rx-3", vector(3, false)),
            ("mlx5_comp3@pci:0000:3b:00.0", vector(3, false)),
            ("mlx5_async0@pci:0000:3b:00.0", None),
            ("eth0", None),
            ("eth0-config", None),
            ("eth0-misc-0", None),
            ("eth0-mbx-1", None),
            ("eth00-TxRx-1", None),
            ("xeth0-TxRx-1", None),
            ("eth1-TxRx-1", None),
            ("eth0-TxRx-99999999999", None),
            ("", None),
        ] {
            assert_eq!(queue_vector(name, &owners), expected, "{name}");
        }
        assert_eq!(
            queue_vector("virtio2-input.0", &["eth0", "virtio2"]),
            vector(0, false)
        );
        assert_eq!(
            queue_vector("virtio2-output.7", &["eth0", "virtio2"]),
            vector(7, true)
        );
        assert_eq!(queue_vector("virtio2-config", &["eth0", "virtio2"]), None);
        assert_eq!(queue_vector("virtio20-input.0", &["eth0", "virtio2"]), None);
        assert_eq!(
            queue_vector("eth0-TxRx-1", &["", "x"]),
            None,
            "empty owners match nothing"
        );
    }

    #[test]
    fn each_channel_gets_its_receive_vector_among_the_device_msi_irqs() {
        let all = parse_interrupts(VIRTIO);
        let map = queue_interrupts(&all, Some(&[37, 38, 39]), &["eth0", "virtio2"]);
        assert_eq!(map, BTreeMap::from([(0, 38)]));
        // Without the MSI list, the names alone decide.
        let map = queue_interrupts(&all, None, &["eth0", "virtio2"]);
        assert_eq!(map, BTreeMap::from([(0, 38)]));
        // The transmit vector is used when it is the only one.
        let map = queue_interrupts(&all, Some(&[39]), &["eth0", "virtio2"]);
        assert_eq!(map, BTreeMap::from([(0, 39)]));

        let all = parse_interrupts(IXGBE);
        let eth1 = queue_interrupts(&all, None, &["eth1", "0000:03:00.0"]);
        assert_eq!(
            eth1,
            BTreeMap::from([(0, 60), (1, 61), (2, 62), (3, 63)]),
            "eth10's vectors and the link vector are left out"
        );
        let eth10 = queue_interrupts(&all, None, &["eth10"]);
        assert_eq!(eth10, BTreeMap::from([(0, 70), (1, 71)]));
        assert!(queue_interrupts(&all, Some(&[]), &["eth1"]).is_empty());
    }

    #[test]
    fn split_vectors_prefer_receive_then_the_lowest_irq() {
        let text =
            " 50: 0 e eth0-tx-0\n 51: 0 e eth0-rx-0\n 52: 0 e eth0-tx-1\n 53: 0 e eth0-rx-1\n\
                    54: 0 e eth0-2\n 49: 0 e eth0-q2\n 55: 0 e eth0-rx-0, eth0-tx-0\n";
        let map = queue_interrupts(&parse_interrupts(text), None, &["eth0"]);
        assert_eq!(map, BTreeMap::from([(0, 51), (1, 53), (2, 49)]));
    }

    #[test]
    fn cpu_lists_format_as_the_kernel_writes_them() {
        assert_eq!(format_cpu_list(&[3, 0, 1, 2, 8]), "0-3,8");
        assert_eq!(format_cpu_list(&[7]), "7");
        assert_eq!(format_cpu_list(&[1, 1, 3, 5, 6]), "1,3,5-6");
        assert_eq!(format_cpu_list(&[]), "");
        for cpus in [vec![0], vec![0, 2, 4], vec![1, 2, 3, 9, 10, 63, 64, 65]] {
            assert_eq!(crate::config::cpu_list(&format_cpu_list(&cpus)), Ok(cpus));
        }
    }

    fn veth() -> Channels {
        Channels {
            max_rx: 4,
            max_tx: 4,
            rx: 1,
            tx: 1,
            ..Channels::default()
        }
    }

    #[test]
    fn requests_change_only_the_named_counts_and_stay_under_the_maximum() {
        let request = ChannelRequest {
            rx: Some(3),
            ..ChannelRequest::default()
        };
        let wanted = requested_channels("va", &veth(), &request).expect("within the maximum");
        assert_eq!(wanted, Channels { rx: 3, ..veth() });
        assert_eq!(
            requested_channels("va", &veth(), &ChannelRequest::default()).ok(),
            Some(veth())
        );
        let e = requested_channels(
            "va",
            &veth(),
            &ChannelRequest {
                tx: Some(2),
                rx: Some(5),
                ..ChannelRequest::default()
            },
        )
        .expect_err("5 > 4");
        assert_eq!(
            e.to_string(),
            "va: 5 rx channels requested, the maximum is 4"
        );
        assert_eq!(e.errno(), libc::EINVAL);
        let e = requested_channels(
            "va",
            &veth(),
            &ChannelRequest {
                combined: Some(2),
                ..ChannelRequest::default()
            },
        )
        .expect_err("no combined channels");
        assert_eq!(
            e.to_string(),
            "va: 2 combined channels requested, the maximum is 0 (the driver has no combined channels)"
        );
    }

    #[test]
    fn requests_describe_themselves() {
        assert!(ChannelRequest::default().is_empty());
        assert_eq!(ChannelRequest::default().to_string(), "nothing");
        let r = ChannelRequest {
            rx: Some(2),
            combined: Some(4),
            ..ChannelRequest::default()
        };
        assert!(!r.is_empty());
        assert_eq!(r.to_string(), "rx 2, combined 4");
    }

    #[test]
    fn the_mask_selects_the_counts_of_the_c_struct() {
        let ch = PcapChannels {
            rx_count: 1,
            tx_count: 2,
            other_count: 3,
            combined_count: 4,
            max_rx: 99,
            ..PcapChannels::default()
        };
        assert_eq!(ch.request(0), Ok(ChannelRequest::default()));
        assert_eq!(
            ch.request(PCAP_COMBINED_CHANNELS),
            Ok(ChannelRequest {
                combined: Some(4),
                ..ChannelRequest::default()
            })
        );
        assert_eq!(
            ch.request(PCAP_RX_CHANNELS | PCAP_TX_CHANNELS | PCAP_OTHER_CHANNELS),
            Ok(ChannelRequest {
                rx: Some(1),
                tx: Some(2),
                other: Some(3),
                combined: None,
            })
        );
        assert!(ch.request(0x10).is_err());
        assert!(ch.request(-1).is_err());
    }

    #[test]
    fn interface_names_are_checked_like_the_kernel_does() {
        for good in ["eth0", "a", "veth-x.100", "abcdefghijklmno"] {
            assert!(interface_name(good).is_ok(), "{good}");
        }
        for bad in [
            "",
            ".",
            "..",
            "a/b",
            "eth0:1",
            "a b",
            "a\0b",
            "abcdefghijklmnop",
        ] {
            let e = interface_name(bad).expect_err(bad);
            assert!(matches!(e, ChannelError::InvalidName { .. }), "{bad}");
            assert_eq!(e.errno(), libc::EINVAL);
        }
        let name = interface_name("eth0").expect("valid");
        assert_eq!(
            &name[..5],
            &[
                b'e' as c_char,
                b't' as c_char,
                b'h' as c_char,
                b'0' as c_char,
                0
            ]
        );
    }

    #[test]
    fn kernel_errors_read_as_plain_words() {
        let e = ChannelError::Refused {
            dev: "va".into(),
            counts: "rx 0, tx 4, other 0, combined 0".into(),
            error: io::Error::from_raw_os_error(libc::EINVAL),
        };
        assert_eq!(
            e.to_string(),
            "va: the driver refused the channel counts rx 0, tx 4, other 0, combined 0 \
             (the kernel says: invalid argument)"
        );
        assert_eq!(e.errno(), libc::EINVAL);
        assert_eq!(
            ChannelError::VirtualDevice { dev: "lo".into() }.to_string(),
            "lo has no interrupts (a virtual device)"
        );
        assert_eq!(
            ChannelError::NoSuchDevice { dev: "x".into() }.errno(),
            libc::ENODEV
        );
        assert_eq!(
            ChannelError::NotSupported { dev: "x".into() }.errno(),
            libc::EOPNOTSUPP
        );
        assert_eq!(
            ChannelError::NeedsCapNetAdmin { dev: "x".into() }.errno(),
            libc::EPERM
        );
        let e = ChannelError::NoSuchChannel {
            dev: "eth1".into(),
            channel: 9,
            channels: vec![0, 1, 2, 3],
        };
        assert_eq!(
            e.to_string(),
            "eth1: no interrupt serves channel 9 (the channels with one: 0-3)"
        );
        assert_eq!(e.device(), "eth1");
    }

    /// A copy of the parts of `/sys` and `/proc` the affinity calls read:
    /// `eth1` a PCI NIC (ixgbe names, MSI IRQs 60 to 64), `eth0` a virtio
    /// NIC (MSI IRQs on the PCI parent), `veth0` a virtual device, `eth9`
    /// a device whose interrupts are named after nothing.
    fn fake_system() -> (tempfile::TempDir, System) {
        let dir = tempfile::tempdir().expect("temporary directory");
        let root = dir.path();
        let mkdir = |p: &str| std::fs::create_dir_all(root.join(p)).expect("mkdir");
        let write = |p: &str, text: &str| std::fs::write(root.join(p), text).expect("write");
        let link = |target: &str, p: &str| {
            std::os::unix::fs::symlink(root.join(target), root.join(p)).expect("symlink")
        };
        for d in [
            "sys/class/net/eth1",
            "sys/class/net/eth0",
            "sys/class/net/veth0",
            "sys/class/net/eth9",
            "sys/devices/pci0000:00/0000:03:00.0/msi_irqs",
            "sys/devices/pci0000:00/0000:00:03.0/virtio2",
            "sys/devices/pci0000:00/0000:00:03.0/msi_irqs",
            "sys/devices/pci0000:00/0000:00:09.0",
            "proc/irq/61",
            "proc/irq/38",
        ] {
            mkdir(d);
        }
        for irq in 60..=64 {
            write(
                &format!("sys/devices/pci0000:00/0000:03:00.0/msi_irqs/{irq}"),
                "msix\n",
            );
        }
        for irq in 37..=39 {
            write(
                &format!("sys/devices/pci0000:00/0000:00:03.0/msi_irqs/{irq}"),
                "msix\n",
            );
        }
        link(
            "sys/devices/pci0000:00/0000:03:00.0",
            "sys/class/net/eth1/device",
        );
        link(
            "sys/devices/pci0000:00/0000:00:03.0/virtio2",
            "sys/class/net/eth0/device",
        );
        link(
            "sys/devices/pci0000:00/0000:00:09.0",
            "sys/class/net/eth9/device",
        );
        write(
            "proc/interrupts",
            &format!("{IXGBE}{}", &VIRTIO[VIRTIO.find('\n').unwrap_or(0)..]),
        );
        write("proc/irq/61/smp_affinity_list", "0-3\n");
        write("proc/irq/38/smp_affinity_list", "1\n");
        let system = System {
            sys: root.join("sys"),
            proc: root.join("proc"),
        };
        (dir, system)
    }

    #[test]
    fn interrupts_of_channels_come_from_sysfs_and_proc() {
        let (_dir, sys) = fake_system();
        assert_eq!(sys.irq_of_channel("eth1", 1).ok(), Some(61));
        assert_eq!(sys.irq_of_channel("eth1", 3).ok(), Some(63));
        assert_eq!(sys.irq_of_channel("eth0", 0).ok(), Some(38));
        let e = sys.irq_of_channel("eth1", 4).expect_err("four channels");
        assert_eq!(
            e.to_string(),
            "eth1: no interrupt serves channel 4 (the channels with one: 0-3)"
        );
        let e = sys.irq_of_channel("veth0", 0).expect_err("virtual");
        assert_eq!(e.to_string(), "veth0 has no interrupts (a virtual device)");
        assert_eq!(e.errno(), libc::EOPNOTSUPP);
        let e = sys.irq_of_channel("eth5", 0).expect_err("missing");
        assert_eq!(e.to_string(), "eth5: no such device");
        let e = sys.irq_of_channel("eth9", 0).expect_err("no queue vectors");
        assert!(matches!(e, ChannelError::NoQueueInterrupts { .. }), "{e}");
        let e = sys.irq_of_channel("../../etc", 0).expect_err("not a name");
        assert!(matches!(e, ChannelError::InvalidName { .. }), "{e}");
    }

    #[test]
    fn affinities_are_read_and_written_as_cpu_lists() {
        let (_dir, sys) = fake_system();
        assert_eq!(sys.channel_affinity("eth1", 1).ok(), Some(vec![0, 1, 2, 3]));
        assert_eq!(sys.channel_affinity("eth0", 0).ok(), Some(vec![1]));
        sys.set_channel_affinity("eth1", 1, &[2, 0, 1])
            .expect("writes the list");
        assert_eq!(
            std::fs::read_to_string(sys.affinity_path(61))
                .ok()
                .as_deref(),
            Some("0-2\n")
        );
        assert_eq!(sys.channel_affinity("eth1", 1).ok(), Some(vec![0, 1, 2]));
        let e = sys
            .set_channel_affinity("eth1", 1, &[])
            .expect_err("no CPU");
        assert_eq!(
            e.to_string(),
            "eth1: no CPU given for the interrupt of channel 1"
        );
        let e = sys
            .set_channel_affinity("veth0", 0, &[0])
            .expect_err("virtual");
        assert!(matches!(e, ChannelError::VirtualDevice { .. }), "{e}");
        // IRQ 60 (channel 0) has no directory in the copy of /proc.
        let e = sys.channel_affinity("eth1", 0).expect_err("no file");
        assert!(matches!(e, ChannelError::Io { .. }), "{e}");
        let e = sys
            .set_channel_affinity("eth1", 0, &[0])
            .expect_err("no file");
        assert!(matches!(e, ChannelError::Io { .. }), "{e}");
        std::fs::write(sys.affinity_path(38), "zero\n").expect("write");
        let e = sys.channel_affinity("eth0", 0).expect_err("bad text");
        assert!(e.to_string().contains("bad CPU `zero`"), "{e}");
    }
}
