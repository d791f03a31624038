//! Sending whole link-layer frames onto a Linux interface, and replaying a
//! capture at a chosen rate.
//!
//! [`Injector`] is an `AF_PACKET`, `SOCK_RAW` socket bound to one interface
//! with protocol 0, so it sends but never receives. [`replay`] reads frames
//! from any [`PacketSource`] and sends the Ethernet ones, paced against a
//! monotonic clock.
#![allow(unsafe_code)]

use super::afpacket::{
    bind_packet_socket, interface_index, packet_socket, socket_link_type, LiveError, LiveErrorKind,
};
use super::{LinkType, PacketSource, SourceError};
use std::ffi::{c_char, c_int, c_void};
use std::fmt;
use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// Length of an Ethernet header without VLAN tags.
const ETH_HEADER_LEN: usize = 14;
/// Length of one 802.1Q / 802.1ad tag.
const VLAN_TAG_LEN: usize = 4;
/// How long [`Injector::send`] keeps retrying while the interface's queue is
/// full (`ENOBUFS` / `EAGAIN`).
const SEND_RETRY_LIMIT: Duration = Duration::from_millis(200);

/// The waits while an interface's queue is full: 20 µs, doubling up to
/// 10 ms, for at most [`SEND_RETRY_LIMIT`] in all.
struct FullQueue {
    waited: Duration,
    backoff: Duration,
}

impl FullQueue {
    fn new() -> FullQueue {
        FullQueue {
            waited: Duration::ZERO,
            backoff: Duration::from_micros(20),
        }
    }

    /// Whether `e` says the queue is full (`ENOBUFS`, `EAGAIN`) and the
    /// limit leaves time to wait.
    fn may_wait(&self, e: &io::Error) -> bool {
        matches!(e.raw_os_error(), Some(libc::ENOBUFS) | Some(libc::EAGAIN))
            && self.waited < SEND_RETRY_LIMIT
    }

    /// Waits once, longer than the last time.
    fn wait(&mut self) {
        std::thread::sleep(self.backoff);
        self.waited += self.backoff;
        self.backoff = (self.backoff * 2).min(Duration::from_millis(10));
    }
}

/// A socket that sends whole link-layer frames (Ethernet header included) out
/// of one interface.
///
/// Frames go out exactly as given: no checksum is computed, no header is
/// added. The kernel accepts frames of at most MTU + 14 bytes (MTU + 18 when
/// the frame carries a VLAN tag).
#[derive(Debug)]
pub struct Injector {
    fd: OwnedFd,
    interface: String,
    link: LinkType,
    mtu: u32,
}

impl Injector {
    /// Opens a sending socket on `interface`.
    ///
    /// Fails with [`LiveErrorKind::NoSuchInterface`] if the interface does
    /// not exist, [`LiveErrorKind::PermissionDenied`] without root or
    /// `CAP_NET_RAW`, [`LiveErrorKind::UnsupportedLinkType`] if it is not an
    /// Ethernet (or loopback) interface.
    pub fn open(interface: &str) -> Result<Injector, LiveError> {
        let ifindex = interface_index(interface)?;
        let fd = packet_socket(interface, 0)?;
        bind_packet_socket(&fd, ifindex, 0).map_err(|e| LiveError::os(interface, "bind", e))?;
        let link = socket_link_type(&fd, interface)?;
        let mtu = interface_mtu(&fd, interface)
            .map_err(|e| LiveError::os(interface, "ioctl(SIOCGIFMTU)", e))?;
        Ok(Injector {
            fd,
            interface: interface.to_string(),
            link,
            mtu,
        })
    }

    /// The interface frames are sent on.
    pub fn interface(&self) -> &str {
        &self.interface
    }

    /// The link type of the frames this interface takes ([`LinkType::ETHERNET`]).
    pub fn link_type(&self) -> LinkType {
        self.link
    }

    /// The interface's MTU when the injector was opened.
    pub fn mtu(&self) -> u32 {
        self.mtu
    }

    /// The longest frame the kernel accepts: MTU + 14, plus 4 if the frame
    /// carries a VLAN tag (`tagged`).
    pub fn max_frame_len(&self, tagged: bool) -> usize {
        self.mtu as usize + ETH_HEADER_LEN + if tagged { VLAN_TAG_LEN } else { 0 }
    }

    /// Sends one frame. Retries for up to 200 ms while the
    /// interface queue is full (`ENOBUFS` / `EAGAIN`) and on `EINTR`.
    ///
    /// A frame longer than the interface accepts gives
    /// [`LiveErrorKind::FrameTooLong`] with the frame length and the MTU.
    pub fn send(&mut self, frame: &[u8]) -> Result<(), LiveError> {
        let mut full = FullQueue::new();
        loop {
            match send_frame(&self.fd, frame) {
                Ok(n) if n == frame.len() => return Ok(()),
                Ok(n) => {
                    return Err(LiveError::other(
                        &self.interface,
                        "sending a frame",
                        LiveErrorKind::Os,
                        format!("only {n} of {} bytes were sent", frame.len()),
                    ))
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) if full.may_wait(&e) => full.wait(),
                Err(e) if e.raw_os_error() == Some(libc::EMSGSIZE) => {
                    return Err(LiveError::other(
                        &self.interface,
                        "sending a frame",
                        LiveErrorKind::FrameTooLong,
                        format!(
                            "the frame has {} bytes, more than the MTU ({}) allows ({} bytes with the Ethernet header, {} with a VLAN tag) ({e})",
                            frame.len(),
                            self.mtu,
                            self.max_frame_len(false),
                            self.max_frame_len(true)
                        ),
                    ))
                }
                Err(e) => return Err(LiveError::os(&self.interface, "sending a frame", e)),
            }
        }
    }
}

/// Most frames [`Injector::send_batch`] hands to one `sendmmsg(2)` call
/// (the kernel's `UIO_MAXIOV`).
pub const MAX_BATCH: usize = 1024;

/// What [`Injector::send_batch`] did with each frame of a batch.
#[derive(Debug, Default)]
pub struct BatchOutcome {
    /// Frames sent.
    pub sent: usize,
    /// Bytes sent (sum of the sent frames' lengths).
    pub bytes: u64,
    /// Frames not sent (too long for the interface, or the queue stayed
    /// full for 200 ms).
    pub failed: usize,
    /// The error of the last frame not sent, if any.
    pub last_error: Option<LiveError>,
}

impl Injector {
    /// Sends the frames `arena[r]` for each range `r` of `frames`, in
    /// order, with as few `sendmmsg(2)` calls as the kernel allows (at most
    /// [`MAX_BATCH`] frames each).
    ///
    /// A frame the kernel refuses is counted in [`BatchOutcome::failed`]
    /// and the rest of the batch still goes out: a full queue is retried
    /// for up to 200 ms (as [`Injector::send`]), a frame longer than the
    /// MTU allows is skipped ([`LiveErrorKind::FrameTooLong`]), any other
    /// error skips the frame it happened on.
    pub fn send_batch(&mut self, arena: &[u8], frames: &[std::ops::Range<usize>]) -> BatchOutcome {
        let mut out = BatchOutcome::default();
        let mut at = 0;
        let mut full = FullQueue::new();
        while at < frames.len() {
            let end = frames.len().min(at + MAX_BATCH);
            let Some(chunk) = frames[at..end]
                .iter()
                .map(|r| arena.get(r.clone()))
                .collect::<Option<Vec<&[u8]>>>()
            else {
                // A range outside the arena: a caller's bug, reported as a
                // failed frame rather than a panic.
                out.failed += 1;
                out.last_error = Some(LiveError::other(
                    &self.interface,
                    "sending a batch",
                    LiveErrorKind::Os,
                    "a frame's range lies outside the buffer",
                ));
                at += 1;
                continue;
            };
            match send_frames(&self.fd, &chunk) {
                Ok(n) if n > 0 => {
                    out.sent += n;
                    out.bytes += chunk[..n].iter().map(|f| f.len() as u64).sum::<u64>();
                    at += n;
                    full = FullQueue::new();
                }
                Ok(_) => at += 1,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) if full.may_wait(&e) => full.wait(),
                Err(e) => {
                    // The first frame of the chunk failed: skip it.
                    let kind = if e.raw_os_error() == Some(libc::EMSGSIZE) {
                        LiveErrorKind::FrameTooLong
                    } else {
                        LiveErrorKind::Os
                    };
                    out.failed += 1;
                    out.last_error = Some(LiveError::other(
                        &self.interface,
                        "sending a frame",
                        kind,
                        format!("a frame of {} bytes: {e}", chunk[0].len()),
                    ));
                    at += 1;
                    // The next frame has the whole limit again.
                    full.waited = Duration::ZERO;
                }
            }
        }
        out
    }
}

/// Whether an Ethernet frame carries an 802.1Q or 802.1ad tag.
fn is_vlan_tagged(frame: &[u8]) -> bool {
    matches!(frame.get(12..14), Some([0x81, 0x00]) | Some([0x88, 0xa8]))
}

// ---------------------------------------------------------------------------
// Replay
// ---------------------------------------------------------------------------

/// How [`replay_with`] paces and limits a replay.
#[derive(Copy, Clone, Debug, Default, PartialEq)]
pub struct ReplayOptions {
    /// Frames per second; `None` (or a value that is not finite and
    /// positive) sends as fast as possible.
    pub pps: Option<f64>,
    /// Stop after this many frames have been sent.
    pub max_frames: Option<u64>,
}

/// Why a replay stopped early.
#[derive(Debug)]
pub enum ReplayError {
    /// The capture could not be read further.
    Input(SourceError),
    /// A frame could not be sent.
    Send(LiveError),
}

impl fmt::Display for ReplayError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ReplayError::Input(e) => write!(f, "{e}"),
            ReplayError::Send(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for ReplayError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ReplayError::Input(e) => Some(e),
            ReplayError::Send(e) => Some(e),
        }
    }
}

/// What a replay did.
#[derive(Debug, Default)]
pub struct ReplayReport {
    /// Frames sent.
    pub sent: u64,
    /// Bytes sent (sum of the frame lengths).
    pub bytes: u64,
    /// Frames skipped because their link type is not Ethernet (the injector
    /// sends Ethernet frames only).
    pub skipped_not_ethernet: u64,
    /// Frames skipped because they are longer than the interface's MTU allows.
    pub skipped_too_long: u64,
    /// Frames sent although the capture had cut them (captured length below
    /// the wire length): what was captured went out.
    pub truncated: u64,
    /// Time from the start of the replay to the last frame sent.
    pub elapsed: Duration,
    /// Whether the `stop` flag ended the replay.
    pub stopped: bool,
    /// The error that ended the replay early, if any (the counts before it stand).
    pub error: Option<ReplayError>,
}

impl ReplayReport {
    /// All skipped frames.
    pub fn skipped(&self) -> u64 {
        self.skipped_not_ethernet + self.skipped_too_long
    }

    /// Achieved frames per second (0 when nothing was timed).
    pub fn pps(&self) -> f64 {
        let secs = self.elapsed.as_secs_f64();
        if secs > 0.0 {
            self.sent as f64 / secs
        } else {
            0.0
        }
    }

    /// Achieved megabits per second of frame bytes (0 when nothing was timed).
    pub fn mbit_per_s(&self) -> f64 {
        let secs = self.elapsed.as_secs_f64();
        if secs > 0.0 {
            self.bytes as f64 * 8.0 / secs / 1e6
        } else {
            0.0
        }
    }

    /// Why frames were skipped, e.g. `"3 not Ethernet, 1 longer than the MTU"`
    /// (empty when none were).
    pub fn skip_reasons(&self) -> String {
        let mut parts = Vec::new();
        if self.skipped_not_ethernet > 0 {
            parts.push(format!("{} not Ethernet", self.skipped_not_ethernet));
        }
        if self.skipped_too_long > 0 {
            parts.push(format!("{} longer than the MTU", self.skipped_too_long));
        }
        parts.join(", ")
    }
}

/// Replays the frames of `source` onto `injector`'s interface at `pps` frames
/// per second (`None`: as fast as possible), until the source ends, an error
/// occurs or `stop` becomes true. See [`replay_with`].
pub fn replay(
    source: &mut dyn PacketSource,
    injector: &mut Injector,
    pps: Option<f64>,
    stop: &AtomicBool,
) -> ReplayReport {
    replay_with(
        source,
        injector,
        &ReplayOptions {
            pps,
            max_frames: None,
        },
        stop,
    )
}

/// Replays the frames of `source` onto `injector`'s interface.
///
/// Frames that are not Ethernet, or too long for the interface, are skipped
/// and counted. With a rate, frame *n* (0-based, counting sent frames) is
/// sent at `start + n / pps` on the monotonic clock: the replay sleeps while
/// more than a millisecond ahead and yields in a loop for the last stretch,
/// so the average rate is accurate even where sleeps are coarse; a replay
/// that falls behind catches up (the schedule is absolute). An input error
/// or a send error ends the replay and is put in the report.
pub fn replay_with(
    source: &mut dyn PacketSource,
    injector: &mut Injector,
    opts: &ReplayOptions,
    stop: &AtomicBool,
) -> ReplayReport {
    let rate = opts.pps.filter(|r| r.is_finite() && *r > 0.0);
    let mut report = ReplayReport::default();
    let start = Instant::now();
    let mut last_send = start;
    loop {
        if stop.load(Ordering::Relaxed) {
            report.stopped = true;
            break;
        }
        if opts.max_frames.is_some_and(|n| report.sent >= n) {
            break;
        }
        let packet = match source.next_packet() {
            None => break,
            Some(Err(e)) => {
                report.error = Some(ReplayError::Input(e));
                break;
            }
            Some(Ok(p)) => p,
        };
        if packet.link != LinkType::ETHERNET {
            report.skipped_not_ethernet += 1;
            continue;
        }
        if packet.data.len() > injector.max_frame_len(is_vlan_tagged(packet.data)) {
            report.skipped_too_long += 1;
            continue;
        }
        if let Some(rate) = rate {
            let due = start + Duration::from_secs_f64(report.sent as f64 / rate);
            if !wait_until(due, stop) {
                report.stopped = true;
                break;
            }
        }
        match injector.send(packet.data) {
            Ok(()) => {
                last_send = Instant::now();
                report.sent += 1;
                report.bytes += packet.data.len() as u64;
                if packet.is_truncated() {
                    report.truncated += 1;
                }
            }
            Err(e) if e.kind() == LiveErrorKind::FrameTooLong => report.skipped_too_long += 1,
            Err(e) => {
                report.error = Some(ReplayError::Send(e));
                break;
            }
        }
    }
    report.elapsed = last_send.duration_since(start);
    report
}

/// Waits until `due`: sleeps while more than 1 ms ahead (waking 200 µs early,
/// and at least every 50 ms to look at `stop`), then yields until the time.
/// Returns false if `stop` became true.
fn wait_until(due: Instant, stop: &AtomicBool) -> bool {
    loop {
        let now = Instant::now();
        if now >= due {
            return true;
        }
        let ahead = due - now;
        if ahead > Duration::from_millis(1) {
            if stop.load(Ordering::Relaxed) {
                return false;
            }
            let nap = (ahead - Duration::from_micros(200)).min(Duration::from_millis(50));
            std::thread::sleep(nap);
        } else {
            std::thread::yield_now();
        }
    }
}

// ---------------------------------------------------------------------------
// Kernel boundary
// ---------------------------------------------------------------------------

/// `struct ifreq` with the `ifr_mtu` member of its union (40 bytes on Linux).
#[repr(C)]
struct IfreqMtu {
    name: [c_char; libc::IFNAMSIZ],
    mtu: c_int,
    _pad: [u8; 20],
}

/// The MTU of the interface called `name` (SIOCGIFMTU, in the socket's
/// network namespace).
fn interface_mtu(fd: &OwnedFd, name: &str) -> io::Result<u32> {
    let mut req = IfreqMtu {
        name: [0; libc::IFNAMSIZ],
        mtu: 0,
        _pad: [0; 20],
    };
    // interface_index() has checked that the name is shorter than IFNAMSIZ,
    // so the last byte stays NUL.
    for (dst, src) in req
        .name
        .iter_mut()
        .zip(name.bytes().take(libc::IFNAMSIZ - 1))
    {
        *dst = src as c_char;
    }
    // SAFETY: `req` is a writable, NUL-terminated ifreq of the full kernel
    // size (40 bytes); SIOCGIFMTU reads the name and writes only `ifr_mtu`.
    let rc = unsafe { libc::ioctl(fd.as_raw_fd(), libc::SIOCGIFMTU, &mut req as *mut IfreqMtu) };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    u32::try_from(req.mtu).map_err(|_| io::Error::other(format!("negative MTU {}", req.mtu)))
}

/// send(2) of one frame on the bound socket; the number of bytes sent.
fn send_frame(fd: &OwnedFd, frame: &[u8]) -> io::Result<usize> {
    // SAFETY: `frame` is a live, readable buffer of `frame.len()` bytes that
    // send only reads; MSG_DONTWAIT keeps the call from blocking.
    let rc = unsafe {
        libc::send(
            fd.as_raw_fd(),
            frame.as_ptr().cast::<c_void>(),
            frame.len(),
            libc::MSG_DONTWAIT,
        )
    };
    usize::try_from(rc).map_err(|_| io::Error::last_os_error())
}

/// sendmmsg(2) of `frames` on the bound socket (at most [`MAX_BATCH`]);
/// the number of frames sent. An error means the first frame failed.
fn send_frames(fd: &OwnedFd, frames: &[&[u8]]) -> io::Result<usize> {
    let mut iov: Vec<libc::iovec> = frames
        .iter()
        .map(|f| libc::iovec {
            iov_base: f.as_ptr().cast_mut().cast::<c_void>(),
            iov_len: f.len(),
        })
        .collect();
    let mut msgs: Vec<libc::mmsghdr> = iov
        .iter_mut()
        .map(|v| {
            // SAFETY: `msghdr` is plain data (integers and pointers); all
            // zero is a valid value (no name, no control data).
            let mut hdr: libc::msghdr = unsafe { std::mem::zeroed() };
            hdr.msg_iov = v;
            hdr.msg_iovlen = 1;
            libc::mmsghdr {
                msg_hdr: hdr,
                msg_len: 0,
            }
        })
        .collect();
    let count = u32::try_from(msgs.len().min(MAX_BATCH)).unwrap_or(0);
    // SAFETY: `msgs` holds `count` initialised headers, each pointing at
    // one iovec of `iov` that describes a live `&[u8]` of `frames`; all of
    // them outlive the call, and sendmmsg only reads the frames (it writes
    // `msg_len` in the headers, which are ours and mutable).
    let rc =
        unsafe { libc::sendmmsg(fd.as_raw_fd(), msgs.as_mut_ptr(), count, libc::MSG_DONTWAIT) };
    usize::try_from(rc).map_err(|_| io::Error::last_os_error())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn report_rates_and_reasons() {
        let r = ReplayReport {
            sent: 1000,
            bytes: 125_000,
            skipped_not_ethernet: 2,
            skipped_too_long: 1,
            elapsed: Duration::from_millis(500),
            ..ReplayReport::default()
        };
        assert_eq!(r.skipped(), 3);
        assert!((r.pps() - 2000.0).abs() < 1e-9);
        assert!((r.mbit_per_s() - 2.0).abs() < 1e-9);
        assert_eq!(r.skip_reasons(), "2 not Ethernet, 1 longer than the MTU");
        assert_eq!(ReplayReport::default().pps(), 0.0);
        assert_eq!(ReplayReport::default().skip_reasons(), "");
    }

    #[test]
    fn vlan_tags_are_recognised() {
        let mut f = vec![0u8; 20];
        assert!(!is_vlan_tagged(&f));
        f[12..14].copy_from_slice(&[0x81, 0x00]);
        assert!(is_vlan_tagged(&f));
        f[12..14].copy_from_slice(&[0x88, 0xa8]);
        assert!(is_vlan_tagged(&f));
        assert!(!is_vlan_tagged(&f[..13]));
    }

    #[test]
    fn wait_until_honours_stop_and_time() {
        let stop = AtomicBool::new(false);
        let due = Instant::now() + Duration::from_millis(3);
        assert!(wait_until(due, &stop));
        assert!(Instant::now() >= due);
        stop.store(true, Ordering::Relaxed);
        assert!(!wait_until(Instant::now() + Duration::from_secs(60), &stop));
    }
}
