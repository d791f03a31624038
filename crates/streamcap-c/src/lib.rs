//! # streamcap from C
//!
//! `libstreamcap.so` / `libstreamcap.a` and `include/streamcap.h`: the Scap
//! API (Papadogiannakis et al., IMC 2013, Table II) one to one under an
//! `sc_` prefix, with the stream descriptor of its Table I as
//! [`sc_stream_t`]. The header is generated from this crate by cbindgen
//! (`tests/header.rs` checks the committed copy); docs/c-api.md is the
//! guide, `examples/*.c` are the paper's example programs.
//!
//! Every exported function runs its body under
//! [`std::panic::catch_unwind`]: a panic becomes `SC_ERR_PANIC` and a
//! message for [`sc_last_error`], never an unwinding into C. A panic on a
//! worker thread during a capture comes back the same way, from
//! [`sc_start_capture`].
//!
//! Every item of the C API (functions, types, constants) is in this file:
//! the header is generated from it alone.
//!
//! `unsafe` is confined to this boundary: dereferencing the pointers C
//! passes in, and calling the C callbacks (docs/unsafe.md lists each
//! block).

#![warn(missing_docs)]
// The C names are the API.
#![allow(non_camel_case_types)]

mod error;
mod handler;
mod run;

use error::{guard, guard_value, last_error_ptr, Error};
use handler::{with_current, Callback, Event};
use std::ffi::{c_char, c_int, c_void, CStr};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use streamcap_core::config::{Config, ReassemblyMode};
use streamcap_core::deliver::Delivery;
use streamcap_core::filter::{CutoffClass, Filter};
use streamcap_core::flow::Direction;
use streamcap_core::Capture;

// ---------------------------------------------------------------------------
// Return codes
// ---------------------------------------------------------------------------

/// Success.
pub const SC_OK: c_int = 0;
/// An argument is invalid: a NULL pointer, a value out of range, an
/// unknown parameter, text that is not UTF-8.
pub const SC_ERR_INVALID: c_int = -1;
/// The capture file or the interface could not be opened or read (for a
/// file that broke part way, everything read before was still delivered).
pub const SC_ERR_IO: c_int = -2;
/// A filter was refused: its syntax, or libpcap (which compiles filters,
/// loaded at run time) is missing.
pub const SC_ERR_FILTER: c_int = -3;
/// The call is not allowed now: a stream control call outside a callback
/// (or for another stream than the callback's), a configuration change,
/// `sc_get_stats` or `sc_close` while a capture runs, a second
/// `sc_start_capture` on a handle that is capturing.
pub const SC_ERR_STATE: c_int = -4;
/// A panic inside the library was caught (a bug in streamcap, or the
/// `SC_PARAM_TEST_PANIC` hook); `sc_last_error()` has its message.
pub const SC_ERR_PANIC: c_int = -5;

// ---------------------------------------------------------------------------
// Arguments
// ---------------------------------------------------------------------------

/// `memory_size` of `sc_create`: the default, 512 MiB.
pub const SC_DEFAULT: u64 = 0;
/// Reassembly mode: best effort, connections picked up mid-stream.
pub const SC_TCP_FAST: c_int = 0;
/// Reassembly mode: evasion-safe; only connections whose handshake was
/// seen are reassembled, holes are held until the limits.
pub const SC_TCP_STRICT: c_int = 1;
/// A cutoff without a limit (any negative cutoff means this).
pub const SC_UNLIMITED: i64 = -1;
/// Stream direction: from the connection's initiator.
pub const SC_DIR_ORIG: u8 = 0;
/// Stream direction: from the responder.
pub const SC_DIR_RESP: u8 = 1;
/// Delivery (`SC_PARAM_DELIVERY`): bytes copied into chunks of the chunk
/// size (Scap's model, the default).
pub const SC_DELIVERY_CHUNKS: c_int = 0;
/// Delivery (`SC_PARAM_DELIVERY`): each in-order segment handed over in
/// place, without a copy (libnids' model).
pub const SC_DELIVERY_SEGMENTS: c_int = 1;

/// Parameter: inactivity timeout of every protocol, milliseconds (default
/// TCP 300 s, UDP and others 60 s). Not per stream.
pub const SC_PARAM_INACTIVITY_TIMEOUT: c_int = 1;
/// Parameter: chunk size, bytes, at least 1 (default 16384). Also per
/// stream.
pub const SC_PARAM_CHUNK_SIZE: c_int = 2;
/// Parameter: bytes of each chunk repeated at the start of the next, at
/// most half the chunk size (default 0). Also per stream.
pub const SC_PARAM_OVERLAP: c_int = 3;
/// Parameter: deliver a partial chunk this many milliseconds of packet
/// time after its first byte; negative: only full chunks (the default).
/// Also per stream.
pub const SC_PARAM_FLUSH_TIMEOUT: c_int = 4;
/// Parameter: percentage (0 to 100) of the memory size below which
/// prioritized packet loss drops nothing (Scap's base threshold, default
/// 50).
pub const SC_PARAM_BASE_THRESHOLD: c_int = 5;
/// Parameter: stream offset, bytes, beyond which packets are dropped first
/// under memory pressure (Scap's overload cutoff); negative: none (the
/// default).
pub const SC_PARAM_OVERLOAD_CUTOFF: c_int = 6;
/// Parameter: stream priority for overload control, 0 to 255, larger is
/// more important (default 0). Also per stream.
pub const SC_PARAM_PRIORITY: c_int = 7;
/// Parameter: `SC_TCP_FAST` or `SC_TCP_STRICT` (the default is
/// `sc_create`'s). Also per stream.
pub const SC_PARAM_REASSEMBLY_MODE: c_int = 8;
/// Parameter: `SC_DELIVERY_CHUNKS` or `SC_DELIVERY_SEGMENTS`. Also per
/// stream.
pub const SC_PARAM_DELIVERY: c_int = 9;
/// Parameter: most connections tracked at once, at least 1 (default
/// 1048576); beyond it the least recently active is evicted.
pub const SC_PARAM_MAX_FLOWS: c_int = 10;
/// Parameter: stop after this many packets (counted after the filter);
/// negative: no limit (the default).
pub const SC_PARAM_MAX_PACKETS: c_int = 11;
/// Parameter: the cutoff, bytes per stream; negative: unlimited. The same
/// as `sc_set_cutoff`, and per stream `sc_set_stream_cutoff`.
pub const SC_PARAM_CUTOFF: c_int = 12;
/// Parameter, for tests only: 1 makes the library panic inside the next
/// capture, on a worker thread, at the first stream's creation (so
/// `sc_start_capture` returns `SC_ERR_PANIC`); 2 makes this very call
/// panic (it returns `SC_ERR_PANIC`); 0 turns it off. A demonstration that
/// no panic crosses into C.
pub const SC_PARAM_TEST_PANIC: c_int = 1000;

// ---------------------------------------------------------------------------
// Descriptor values
// ---------------------------------------------------------------------------

/// Address family of `sc_stream_t`: IPv4 (the address is in the first 4
/// bytes of `src_addr` / `dst_addr`).
pub const SC_AF_INET: u8 = 4;
/// Address family of `sc_stream_t`: IPv6.
pub const SC_AF_INET6: u8 = 6;
/// Room for an address as text, with its NUL (INET6_ADDRSTRLEN).
pub const SC_ADDR_TEXT_LEN: usize = 46;

/// Status: open.
pub const SC_STATUS_ACTIVE: u8 = 0;
/// Status: the connection closed (FIN/RST) and lingers for late packets.
pub const SC_STATUS_CLOSING: u8 = 1;
/// Status: terminated; the termination callback sees this.
pub const SC_STATUS_CLOSED: u8 = 2;

/// End reason: none yet (an active stream).
pub const SC_END_NONE: u8 = 0;
/// End reason: both sides sent FIN.
pub const SC_END_FIN: u8 = 1;
/// End reason: a valid RST.
pub const SC_END_RST: u8 = 2;
/// End reason: no packet within the inactivity timeout.
pub const SC_END_TIMEOUT: u8 = 3;
/// End reason: the input ended (or the capture was stopped) with the
/// stream open.
pub const SC_END_EOF: u8 = 4;
/// End reason: evicted to make room (`SC_PARAM_MAX_FLOWS`) or replaced by
/// a new connection on the same addresses and ports.
pub const SC_END_EVICTED: u8 = 5;

/// Error flag: bytes are missing from the delivered stream.
pub const SC_ERROR_GAP: u16 = 1;
/// Error flag: the TCP handshake was not seen.
pub const SC_ERROR_NO_HANDSHAKE: u16 = 2;
/// Error flag: a segment far outside the window was ignored.
pub const SC_ERROR_BAD_SEQ: u16 = 4;
/// Error flag: overlapping segments disagreed.
pub const SC_ERROR_OVERLAP_CONFLICT: u16 = 8;
/// Error flag: packets were cut by the snapshot length.
pub const SC_ERROR_TRUNCATED: u16 = 16;
/// Error flag: an RST outside the window was ignored.
pub const SC_ERROR_INVALID_RST: u16 = 32;
/// Error flag: bytes were dropped for lack of memory.
pub const SC_ERROR_DROPPED: u16 = 64;
/// Error flag: data arrived after this side's FIN.
pub const SC_ERROR_DATA_AFTER_FIN: u16 = 128;

/// Data reason: the chunk reached the chunk size.
pub const SC_DATA_FULL: u8 = 0;
/// Data reason: the flush timeout passed.
pub const SC_DATA_FLUSH_TIMEOUT: u8 = 1;
/// Data reason: the stream reached its cutoff; no more data follows.
pub const SC_DATA_CUTOFF: u8 = 2;
/// Data reason: the stream ends; this is its last data.
pub const SC_DATA_TERMINATION: u8 = 3;
/// Data reason: a gap follows (the next chunk reports it).
pub const SC_DATA_GAP: u8 = 4;
/// Data reason: one packet's payload (protocols other than TCP and UDP).
pub const SC_DATA_PACKET: u8 = 5;
/// Data reason: an in-order segment (`SC_DELIVERY_SEGMENTS`).
pub const SC_DATA_SEGMENT: u8 = 6;

// ---------------------------------------------------------------------------
// Types
// ---------------------------------------------------------------------------

/// A capture handle (Scap's `scap_t`), opaque. Made by `sc_create`, freed
/// by `sc_close`; the library owns it.
pub struct sc_t {
    source: Source,
    settings: Mutex<Settings>,
    /// A capture is running (`sc_start_capture` has not returned).
    running: AtomicBool,
    /// Set by `sc_stop`; the workers poll it.
    stop: Arc<AtomicBool>,
    /// The statistics of the last capture.
    stats: Mutex<sc_stats_t>,
}

// The capture thread, the workers and other threads (`sc_stop`) share a
// handle by address: it must be safe to share.
const _: fn() = || {
    fn shared<T: Send + Sync>() {}
    shared::<sc_t>();
};

/// What a handle captures from.
pub(crate) enum Source {
    File(PathBuf),
    Interface(String),
}

/// Everything the configuration calls set.
#[derive(Clone)]
pub(crate) struct Settings {
    cfg: Config,
    max_packets: Option<u64>,
    filter: Option<String>,
    workers: usize,
    create: Option<Callback>,
    data: Option<Callback>,
    close: Option<Callback>,
    test_panic: i64,
}

impl Settings {
    /// The capture these settings describe.
    pub(crate) fn capture(&self) -> Capture {
        let b = Capture::builder().config(self.cfg.clone());
        match self.max_packets {
            Some(n) => b.max_packets(n).build(),
            None => b.build(),
        }
    }
}

impl sc_t {
    /// The settings, locked (a panic elsewhere cannot make them unusable).
    fn settings(&self) -> MutexGuard<'_, Settings> {
        self.settings.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The settings, for a change: refused while a capture runs.
    fn settings_to_change(&self) -> Result<MutexGuard<'_, Settings>, Error> {
        if self.running.load(Ordering::SeqCst) {
            return Err(Error::state(
                "the configuration cannot change while a capture runs",
            ));
        }
        Ok(self.settings())
    }
}

/// A stream callback: `sc` is the handle it was registered on, `sd` the
/// stream, `user` the pointer given to `sc_dispatch_*`.
///
/// `sd` and everything it points to (`opposite`, `data`) are valid only
/// during the call; the library owns them. Copy what must outlive the
/// call. The callback runs on a worker thread; it must not unwind (no C++
/// exception, no longjmp out of it).
pub type sc_callback_t =
    Option<unsafe extern "C" fn(sc: *mut sc_t, sd: *mut sc_stream_t, user: *mut c_void)>;

/// The stream descriptor (Scap's `stream_t`, Table I): one direction of a
/// connection, as a callback sees it. The library owns it; it is valid
/// only during the callback it is passed to, and filled anew for every
/// callback (a stream's descriptor may be at a different address each
/// time). Only `user_state` is the program's to write.
#[repr(C)]
pub struct sc_stream_t {
    /// `SC_AF_INET` or `SC_AF_INET6`.
    pub family: u8,
    /// IP protocol number (6 TCP, 17 UDP, ...).
    pub protocol: u8,
    /// `SC_DIR_ORIG` (from the initiator) or `SC_DIR_RESP`.
    pub direction: u8,
    /// 1 once the stream has seen a packet (always 1 for the stream a
    /// callback is about; `opposite` may be 0).
    pub created: u8,
    /// Source port (0 for protocols without ports).
    pub src_port: u16,
    /// Destination port.
    pub dst_port: u16,
    /// Source address, network byte order (IPv4: the first 4 bytes).
    pub src_addr: [u8; 16],
    /// Destination address, network byte order.
    pub dst_addr: [u8; 16],
    /// Source address as text, NUL-terminated.
    pub src_ip: [c_char; SC_ADDR_TEXT_LEN],
    /// Destination address as text, NUL-terminated.
    pub dst_ip: [c_char; SC_ADDR_TEXT_LEN],
    /// Serial number of the connection (unique within a worker thread).
    pub conn_id: u64,
    /// Time of the first packet, nanoseconds since the Unix epoch.
    pub start_ns: u64,
    /// Time of the last packet, nanoseconds since the Unix epoch.
    pub end_ns: u64,
    /// Packets seen.
    pub pkts: u64,
    /// IP-layer bytes of those packets.
    pub bytes: u64,
    /// Length of the reassembled byte stream accounted so far:
    /// `bytes_captured + bytes_discarded + bytes_dropped + bytes_missing`.
    pub stream_bytes: u64,
    /// Stream bytes delivered (or held for delivery).
    pub bytes_captured: u64,
    /// Stream bytes not delivered by decision (cutoff, discard, strict mode).
    pub bytes_discarded: u64,
    /// Stream bytes not delivered for lack of memory.
    pub bytes_dropped: u64,
    /// Stream bytes never seen (holes, snapshot length).
    pub bytes_missing: u64,
    /// Payload-carrying packets whose bytes were captured.
    pub pkts_captured: u64,
    /// Payload-carrying packets whose bytes were (partly) discarded.
    pub pkts_discarded: u64,
    /// Payload-carrying packets whose bytes were (partly) dropped.
    pub pkts_dropped: u64,
    /// Payload bytes that repeated bytes already seen (retransmissions).
    pub bytes_retransmitted: u64,
    /// Overlapping segments that contradicted bytes already seen.
    pub overlap_conflicts: u64,
    /// `SC_STATUS_ACTIVE`, `SC_STATUS_CLOSING` or `SC_STATUS_CLOSED`.
    pub status: u8,
    /// `SC_END_*`: why the stream ended (`SC_END_NONE` while active).
    pub end_reason: u8,
    /// 1 once the stream's cutoff was reached (later bytes are discarded).
    pub cutoff_exceeded: u8,
    /// 1 once the stream was discarded (`sc_discard_stream`).
    pub discarded: u8,
    /// `SC_ERROR_*` flags.
    pub error: u16,
    /// Priority for overload control (larger survives longer).
    pub priority: u8,
    /// `SC_TCP_FAST` or `SC_TCP_STRICT`.
    pub reassembly_mode: u8,
    /// `SC_DELIVERY_CHUNKS` or `SC_DELIVERY_SEGMENTS`.
    pub delivery: u8,
    /// The stream's cutoff, bytes (`SC_UNLIMITED`: none).
    pub cutoff: i64,
    /// The stream's chunk size, bytes.
    pub chunk_size: u64,
    /// Bytes of each chunk repeated at the start of the next.
    pub overlap: u64,
    /// Chunks delivered so far.
    pub chunks: u64,
    /// Wall time spent in this stream's callbacks so far, nanoseconds.
    pub processing_time_ns: u64,
    /// The opposite direction's descriptor (its `user_state` and `data`
    /// are NULL, its `opposite` too); library-owned, valid during the
    /// callback only.
    pub opposite: *const sc_stream_t,
    /// The program's per-stream state: NULL at the stream's creation, and
    /// whatever the program stores here is given back in every later
    /// callback of the stream. The program owns what it points to (free it
    /// in the termination callback, the stream's last).
    pub user_state: *mut c_void,
    /// Data callback only (NULL otherwise): the chunk, kept or overlapping
    /// bytes of earlier chunks first, then the new ones. Library-owned,
    /// valid during the callback only.
    pub data: *const u8,
    /// Bytes at `data`.
    pub data_len: usize,
    /// Stream offset of `data[0]`.
    pub data_offset: u64,
    /// Index in `data` where the bytes not delivered before begin.
    pub data_new: usize,
    /// `SC_DATA_*`: why the data callback fired.
    pub data_reason: u8,
    /// Stream offset of bytes missing right before `data[data_new]`.
    pub gap_offset: u64,
    /// Number of those missing bytes (0: no gap).
    pub gap_len: u64,
}

impl sc_stream_t {
    /// A descriptor with every field zero and every pointer NULL.
    pub(crate) fn empty() -> sc_stream_t {
        sc_stream_t {
            family: 0,
            protocol: 0,
            direction: 0,
            created: 0,
            src_port: 0,
            dst_port: 0,
            src_addr: [0; 16],
            dst_addr: [0; 16],
            src_ip: [0; SC_ADDR_TEXT_LEN],
            dst_ip: [0; SC_ADDR_TEXT_LEN],
            conn_id: 0,
            start_ns: 0,
            end_ns: 0,
            pkts: 0,
            bytes: 0,
            stream_bytes: 0,
            bytes_captured: 0,
            bytes_discarded: 0,
            bytes_dropped: 0,
            bytes_missing: 0,
            pkts_captured: 0,
            pkts_discarded: 0,
            pkts_dropped: 0,
            bytes_retransmitted: 0,
            overlap_conflicts: 0,
            status: 0,
            end_reason: 0,
            cutoff_exceeded: 0,
            discarded: 0,
            error: 0,
            priority: 0,
            reassembly_mode: 0,
            delivery: 0,
            cutoff: 0,
            chunk_size: 0,
            overlap: 0,
            chunks: 0,
            processing_time_ns: 0,
            opposite: std::ptr::null(),
            user_state: std::ptr::null_mut(),
            data: std::ptr::null(),
            data_len: 0,
            data_offset: 0,
            data_new: 0,
            data_reason: 0,
            gap_offset: 0,
            gap_len: 0,
        }
    }
}

/// One packet of a stream (Scap's `struct scap_pkthdr`), filled by
/// `sc_next_stream_packet`. The program owns it.
#[repr(C)]
#[derive(Copy, Clone, Debug, Default)]
pub struct sc_pkthdr_t {
    /// Capture time, nanoseconds since the Unix epoch.
    pub ts_ns: u64,
    /// Stream offset of the packet's first payload byte.
    pub offset: u64,
    /// Payload bytes on the wire.
    pub len: u32,
    /// Payload bytes at the returned pointer (those inside the current
    /// chunk; less than `len` for a retransmission of bytes delivered
    /// before, or bytes past the chunk).
    pub caplen: u32,
    /// IP-layer length.
    pub ip_len: u32,
    /// TCP sequence number (0 for other protocols).
    pub seq: u32,
    /// TCP acknowledgment number.
    pub ack: u32,
    /// TCP window.
    pub window: u16,
    /// TCP flags.
    pub flags: u8,
}

/// Overall statistics (Scap's `scap_stats_t`), filled by `sc_get_stats`.
/// The program owns it.
#[repr(C)]
#[derive(Copy, Clone, Debug, Default)]
pub struct sc_stats_t {
    /// Packets read from the source (before the filter).
    pub packets_read: u64,
    /// Packets processed (after the filter).
    pub packets: u64,
    /// On-the-wire bytes of the processed packets.
    pub wire_bytes: u64,
    /// Processed packets that carried IP.
    pub ip_packets: u64,
    /// Packets cut by the snapshot length.
    pub truncated_packets: u64,
    /// Packets that did not decode (other than non-IP frames).
    pub malformed_packets: u64,
    /// TCP packets of connections already closed and ended.
    pub late_packets: u64,
    /// IP fragments seen.
    pub fragments: u64,
    /// Connections (flows), all protocols.
    pub flows: u64,
    /// TCP connections.
    pub flows_tcp: u64,
    /// UDP flows.
    pub flows_udp: u64,
    /// ICMP and ICMPv6 flows.
    pub flows_icmp: u64,
    /// Flows of other protocols.
    pub flows_other: u64,
    /// Connections ended by FIN.
    pub flows_fin: u64,
    /// Connections ended by RST.
    pub flows_rst: u64,
    /// Flows ended by the inactivity timeout.
    pub flows_timeout: u64,
    /// Flows open at the end of the input (or at `sc_stop`).
    pub flows_eof: u64,
    /// Flows evicted or replaced.
    pub flows_evicted: u64,
    /// Streams (directions that saw a packet).
    pub streams: u64,
    /// Sum of the streams' `stream_bytes`.
    pub stream_bytes: u64,
    /// Sum of the streams' `bytes_captured`.
    pub bytes_captured: u64,
    /// Sum of the streams' `bytes_discarded`.
    pub bytes_discarded: u64,
    /// Sum of the streams' `bytes_dropped`.
    pub bytes_dropped: u64,
    /// Sum of the streams' `bytes_missing`.
    pub bytes_missing: u64,
    /// Sum of the streams' `pkts_captured`.
    pub pkts_captured: u64,
    /// Sum of the streams' `pkts_discarded`.
    pub pkts_discarded: u64,
    /// Sum of the streams' `pkts_dropped`.
    pub pkts_dropped: u64,
    /// Chunks delivered.
    pub chunks: u64,
    /// Highest memory in use for stream data, bytes.
    pub memory_peak: u64,
    /// The memory size, bytes.
    pub memory_limit: u64,
    /// Times the memory budget refused bytes.
    pub memory_refusals: u64,
    /// Live capture: packets the kernel passed to the capture sockets.
    pub kernel_packets: u64,
    /// Live capture: packets the kernel dropped (ring full).
    pub kernel_drops: u64,
}

// ---------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------

/// The handle behind `sc`.
///
/// # Safety
///
/// `sc` is NULL or a handle from `sc_create` not yet closed.
unsafe fn handle<'a>(sc: *const sc_t) -> Result<&'a sc_t, Error> {
    // SAFETY: the caller's contract: NULL (refused here) or a live handle,
    // which is only ever used through shared references.
    unsafe { sc.as_ref() }.ok_or_else(|| Error::invalid("sc is NULL"))
}

/// The UTF-8 text at `s`, named `what` in errors.
///
/// # Safety
///
/// `s` is NULL or a NUL-terminated string.
unsafe fn text<'a>(s: *const c_char, what: &str) -> Result<&'a str, Error> {
    if s.is_null() {
        return Err(Error::invalid(format!("{what} is NULL")));
    }
    // SAFETY: non-NULL and, by the caller's contract, NUL-terminated and
    // unchanged during the call.
    let c = unsafe { CStr::from_ptr(s) };
    c.to_str()
        .map_err(|_| Error::invalid(format!("{what} is not UTF-8")))
}

/// A cutoff from C: negative means unlimited.
fn cutoff(value: i64) -> Option<u64> {
    u64::try_from(value).ok()
}

/// A count or size from C: `what` must be at least `min`.
fn at_least(value: i64, min: i64, what: &str) -> Result<usize, Error> {
    if value < min {
        return Err(Error::invalid(format!(
            "{what} {value}: expected {min} or more"
        )));
    }
    usize::try_from(value).map_err(|_| Error::invalid(format!("{what} {value} is too large")))
}

/// Milliseconds to nanoseconds.
fn ms_to_ns(ms: i64, what: &str) -> Result<u64, Error> {
    u64::try_from(ms)
        .ok()
        .and_then(|m| m.checked_mul(1_000_000))
        .ok_or_else(|| Error::invalid(format!("{what} {ms} ms: expected 0 to 2^64 ns")))
}

fn mode_of(value: i64) -> Result<ReassemblyMode, Error> {
    match value {
        v if v == i64::from(SC_TCP_FAST) => Ok(ReassemblyMode::Fast),
        v if v == i64::from(SC_TCP_STRICT) => Ok(ReassemblyMode::Strict),
        v => Err(Error::invalid(format!(
            "reassembly mode {v}: expected SC_TCP_FAST or SC_TCP_STRICT"
        ))),
    }
}

fn delivery_of(value: i64) -> Result<Delivery, Error> {
    match value {
        v if v == i64::from(SC_DELIVERY_CHUNKS) => Ok(Delivery::Chunks),
        v if v == i64::from(SC_DELIVERY_SEGMENTS) => Ok(Delivery::Segments),
        v => Err(Error::invalid(format!(
            "delivery {v}: expected SC_DELIVERY_CHUNKS or SC_DELIVERY_SEGMENTS"
        ))),
    }
}

fn priority_of(value: i64) -> Result<u8, Error> {
    u8::try_from(value).map_err(|_| Error::invalid(format!("priority {value}: expected 0 to 255")))
}

// ---------------------------------------------------------------------------
// Errors
// ---------------------------------------------------------------------------

/// The message of the last failed `sc_` call on the calling thread: what
/// failed and why, NUL-terminated, never NULL ("" before any failure).
/// Successful calls leave it as it is (as `errno`).
///
/// Ownership: the library's, per thread. The pointer stays valid until
/// the next failed `sc_` call on the same thread; copy the text to keep
/// it.
#[no_mangle]
pub extern "C" fn sc_last_error() -> *const c_char {
    guard_value("sc_last_error", |_| c"".as_ptr(), || Ok(last_error_ptr()))
}

/// A short, constant description of a return code (`SC_OK`, `SC_ERR_*`),
/// NUL-terminated, never NULL. Ownership: the library's, static.
#[no_mangle]
pub extern "C" fn sc_strerror(code: c_int) -> *const c_char {
    guard_value(
        "sc_strerror",
        |_| c"".as_ptr(),
        || Ok(strerror(code).as_ptr()),
    )
}

/// The text of `sc_strerror`.
fn strerror(code: c_int) -> &'static CStr {
    match code {
        SC_OK => c"success",
        SC_ERR_INVALID => c"invalid argument",
        SC_ERR_IO => c"cannot open or read the capture source",
        SC_ERR_FILTER => c"filter refused",
        SC_ERR_STATE => c"not allowed in the current state",
        SC_ERR_PANIC => c"internal error (a panic was caught)",
        _ => c"unknown return code",
    }
}

// ---------------------------------------------------------------------------
// Configuration (Table II)
// ---------------------------------------------------------------------------

/// Creates a capture handle (Scap `scap_create`). `device_or_file` is a
/// pcap or pcapng file if a file of that name exists, else the name of a
/// network interface to capture live from (the interface is opened by
/// `sc_start_capture`; live capture needs root or CAP_NET_RAW).
/// `memory_size`: bytes for stream data (`SC_DEFAULT`: 512 MiB, divided
/// between the worker threads). `reassembly_mode`: `SC_TCP_FAST` or
/// `SC_TCP_STRICT`. `need_packets`: nonzero to record each stream's
/// packets for `sc_next_stream_packet`.
///
/// On success `*out` is the new handle, which the program must free with
/// `sc_close`; on failure `*out` is NULL.
///
/// # Safety
///
/// `device_or_file` is NULL or a NUL-terminated string; `out` is NULL or
/// points to writable storage for a pointer.
#[no_mangle]
pub unsafe extern "C" fn sc_create(
    device_or_file: *const c_char,
    memory_size: u64,
    reassembly_mode: c_int,
    need_packets: c_int,
    out: *mut *mut sc_t,
) -> c_int {
    guard("sc_create", || {
        if out.is_null() {
            return Err(Error::invalid("out is NULL"));
        }
        // SAFETY: `out` is not NULL and, by the contract, writable.
        unsafe { out.write(std::ptr::null_mut()) };
        // SAFETY: the contract on `device_or_file`.
        let name = unsafe { text(device_or_file, "device_or_file") }?;
        if name.is_empty() {
            return Err(Error::invalid("device_or_file is empty"));
        }
        let mut cfg = Config::default();
        if memory_size != SC_DEFAULT {
            cfg.memory_size = usize::try_from(memory_size)
                .map_err(|_| Error::invalid(format!("memory_size {memory_size} is too large")))?;
        }
        cfg.mode = mode_of(i64::from(reassembly_mode))?;
        cfg.need_packets = need_packets != 0;
        let path = PathBuf::from(name);
        let source = if path.exists() {
            Source::File(path)
        } else {
            Source::Interface(name.to_string())
        };
        let sc = Box::new(sc_t {
            source,
            settings: Mutex::new(Settings {
                cfg,
                max_packets: None,
                filter: None,
                workers: 1,
                create: None,
                data: None,
                close: None,
                test_panic: 0,
            }),
            running: AtomicBool::new(false),
            stop: Arc::new(AtomicBool::new(false)),
            stats: Mutex::new(sc_stats_t::default()),
        });
        // SAFETY: as above.
        unsafe { out.write(Box::into_raw(sc)) };
        Ok(())
    })
}

/// Keeps only the packets that match a filter in tcpdump's syntax (Scap
/// `scap_set_filter`), e.g. "tcp port 80". NULL or "" removes the filter.
/// The expression is checked at once (`SC_ERR_FILTER` if refused); it is
/// compiled by libpcap, loaded at run time. On an interface the kernel
/// runs it. The string is copied.
///
/// # Safety
///
/// `sc` is NULL or a live handle; `bpf_filter` is NULL or a NUL-terminated
/// string.
#[no_mangle]
pub unsafe extern "C" fn sc_set_filter(sc: *mut sc_t, bpf_filter: *const c_char) -> c_int {
    guard("sc_set_filter", || {
        // SAFETY: the contract on `sc`.
        let sc = unsafe { handle(sc) }?;
        let expr = if bpf_filter.is_null() {
            None
        } else {
            // SAFETY: the contract on `bpf_filter` (not NULL here).
            Some(
                unsafe { text(bpf_filter, "bpf_filter") }?
                    .trim()
                    .to_string(),
            )
        };
        let expr = expr.filter(|e| !e.is_empty());
        if let Some(e) = &expr {
            Filter::new(e).map_err(|e| Error::filter(e.to_string()))?;
        }
        sc.settings_to_change()?.filter = expr;
        Ok(())
    })
}

/// Sets the default cutoff, bytes per stream (Scap `scap_set_cutoff`): a
/// stream's bytes past it are counted (discarded) but not delivered. 0
/// delivers no data at all (statistics only); negative (`SC_UNLIMITED`,
/// the default): no cutoff.
///
/// # Safety
///
/// `sc` is NULL or a live handle.
#[no_mangle]
pub unsafe extern "C" fn sc_set_cutoff(sc: *mut sc_t, cutoff_bytes: i64) -> c_int {
    guard("sc_set_cutoff", || {
        // SAFETY: the contract on `sc`.
        let sc = unsafe { handle(sc) }?;
        sc.settings_to_change()?.cfg.cutoff = cutoff(cutoff_bytes);
        Ok(())
    })
}

/// Sets the cutoff of the streams of one direction, `SC_DIR_ORIG` or
/// `SC_DIR_RESP`, overriding the default cutoff (Scap
/// `scap_add_cutoff_direction`); negative: unlimited in that direction.
///
/// # Safety
///
/// `sc` is NULL or a live handle.
#[no_mangle]
pub unsafe extern "C" fn sc_set_cutoff_direction(
    sc: *mut sc_t,
    cutoff_bytes: i64,
    direction: c_int,
) -> c_int {
    guard("sc_set_cutoff_direction", || {
        // SAFETY: the contract on `sc`.
        let sc = unsafe { handle(sc) }?;
        let value = Some(cutoff(cutoff_bytes).unwrap_or(u64::MAX));
        let dir = match direction {
            d if d == c_int::from(SC_DIR_ORIG) => Direction::Orig,
            d if d == c_int::from(SC_DIR_RESP) => Direction::Resp,
            d => {
                return Err(Error::invalid(format!(
                    "direction {d}: expected SC_DIR_ORIG or SC_DIR_RESP"
                )))
            }
        };
        let mut s = sc.settings_to_change()?;
        match dir {
            Direction::Orig => s.cfg.cutoff_orig = value,
            Direction::Resp => s.cfg.cutoff_resp = value,
        }
        Ok(())
    })
}

/// Sets the cutoff of the connections whose first packet matches a filter
/// in tcpdump's syntax (Scap `scap_add_cutoff_class`); negative:
/// unlimited. Classes are tried in the order they were added, the first
/// that matches wins and replaces the other cutoffs for both directions.
/// Needs libpcap (`SC_ERR_FILTER` otherwise). The string is copied.
///
/// # Safety
///
/// `sc` is NULL or a live handle; `bpf_filter` is NULL or a NUL-terminated
/// string.
#[no_mangle]
pub unsafe extern "C" fn sc_add_cutoff_class(
    sc: *mut sc_t,
    cutoff_bytes: i64,
    bpf_filter: *const c_char,
) -> c_int {
    guard("sc_add_cutoff_class", || {
        // SAFETY: the contract on `sc`.
        let sc = unsafe { handle(sc) }?;
        // SAFETY: the contract on `bpf_filter`.
        let expr = unsafe { text(bpf_filter, "bpf_filter") }?;
        let class = CutoffClass::new(expr, cutoff(cutoff_bytes).unwrap_or(u64::MAX))
            .map_err(|e| Error::filter(e.to_string()))?;
        sc.settings_to_change()?.cfg.cutoff_classes.push(class);
        Ok(())
    })
}

/// Sets the number of worker threads that process streams (Scap
/// `scap_set_worker_threads`), at least 1 (the default). Each connection
/// belongs to one worker, so all the callbacks of one stream (and of both
/// directions of a connection) run on one thread; callbacks of different
/// connections run concurrently. The memory size is divided between them.
///
/// # Safety
///
/// `sc` is NULL or a live handle.
#[no_mangle]
pub unsafe extern "C" fn sc_set_worker_threads(sc: *mut sc_t, thread_num: c_int) -> c_int {
    guard("sc_set_worker_threads", || {
        // SAFETY: the contract on `sc`.
        let sc = unsafe { handle(sc) }?;
        let n = at_least(i64::from(thread_num), 1, "thread_num")?;
        sc.settings_to_change()?.workers = n;
        Ok(())
    })
}

/// Changes a default (Scap `scap_set_parameter`): `parameter` is one of
/// `SC_PARAM_*`, whose description gives the unit and range of `value`.
/// `SC_ERR_INVALID` for an unknown parameter or a value out of range.
///
/// # Safety
///
/// `sc` is NULL or a live handle.
#[no_mangle]
pub unsafe extern "C" fn sc_set_parameter(sc: *mut sc_t, parameter: c_int, value: i64) -> c_int {
    guard("sc_set_parameter", || {
        // SAFETY: the contract on `sc`.
        let sc = unsafe { handle(sc) }?;
        let mut s = sc.settings_to_change()?;
        let cfg = &mut s.cfg;
        match parameter {
            SC_PARAM_INACTIVITY_TIMEOUT => {
                let ns = ms_to_ns(value, "inactivity timeout")?;
                cfg.tcp_timeout = ns;
                cfg.udp_timeout = ns;
                cfg.other_timeout = ns;
            }
            SC_PARAM_CHUNK_SIZE => cfg.chunk_size = at_least(value, 1, "chunk size")?,
            SC_PARAM_OVERLAP => cfg.overlap = at_least(value, 0, "overlap")?,
            SC_PARAM_FLUSH_TIMEOUT => {
                cfg.flush_timeout = match value {
                    v if v < 0 => None,
                    v => Some(ms_to_ns(v, "flush timeout")?),
                }
            }
            SC_PARAM_BASE_THRESHOLD => {
                if !(0..=100).contains(&value) {
                    return Err(Error::invalid(format!(
                        "base threshold {value}: expected a percentage, 0 to 100"
                    )));
                }
                cfg.base_threshold = value as f64 / 100.0;
            }
            SC_PARAM_OVERLOAD_CUTOFF => cfg.overload_cutoff = cutoff(value),
            SC_PARAM_PRIORITY => cfg.priority = priority_of(value)?,
            SC_PARAM_REASSEMBLY_MODE => cfg.mode = mode_of(value)?,
            SC_PARAM_DELIVERY => cfg.delivery = delivery_of(value)?,
            SC_PARAM_MAX_FLOWS => cfg.max_flows = at_least(value, 1, "max flows")?,
            SC_PARAM_CUTOFF => cfg.cutoff = cutoff(value),
            SC_PARAM_MAX_PACKETS => s.max_packets = u64::try_from(value).ok(),
            SC_PARAM_TEST_PANIC => match value {
                0 | 1 => s.test_panic = value,
                2 => {
                    drop(s);
                    panic!("SC_PARAM_TEST_PANIC: a panic forced inside sc_set_parameter");
                }
                v => {
                    return Err(Error::invalid(format!(
                        "SC_PARAM_TEST_PANIC {v}: expected 0, 1 or 2"
                    )))
                }
            },
            p => return Err(Error::invalid(format!("unknown parameter {p}"))),
        }
        Ok(())
    })
}

/// Registers `handler` for stream creation events (Scap
/// `scap_dispatch_creation`), called at each stream's first packet with
/// `user` passed back unchanged (the program owns what it points to; it
/// must stay valid until `sc_start_capture` returns). NULL unregisters.
///
/// # Safety
///
/// `sc` is NULL or a live handle; `handler` is NULL or a function of the
/// `sc_callback_t` type that does not unwind.
#[no_mangle]
pub unsafe extern "C" fn sc_dispatch_creation(
    sc: *mut sc_t,
    handler: sc_callback_t,
    user: *mut c_void,
) -> c_int {
    // SAFETY: the caller's contract, passed on.
    unsafe { dispatch("sc_dispatch_creation", sc, Event::Create, handler, user) }
}

/// Registers `handler` for new stream data (Scap `scap_dispatch_data`):
/// called when a stream's chunk is full, its flush timeout passes, it
/// reaches its cutoff, a gap follows or the stream ends, with the bytes in
/// `sd->data` / `sd->data_len`. `user` as for `sc_dispatch_creation`. NULL
/// unregisters.
///
/// # Safety
///
/// As `sc_dispatch_creation`.
#[no_mangle]
pub unsafe extern "C" fn sc_dispatch_data(
    sc: *mut sc_t,
    handler: sc_callback_t,
    user: *mut c_void,
) -> c_int {
    // SAFETY: the caller's contract, passed on.
    unsafe { dispatch("sc_dispatch_data", sc, Event::Data, handler, user) }
}

/// Registers `handler` for stream termination (Scap
/// `scap_dispatch_termination`): called once per stream, its last
/// callback, with the final counters (`status` `SC_STATUS_CLOSED`).
/// `user` as for `sc_dispatch_creation`. NULL unregisters.
///
/// # Safety
///
/// As `sc_dispatch_creation`.
#[no_mangle]
pub unsafe extern "C" fn sc_dispatch_termination(
    sc: *mut sc_t,
    handler: sc_callback_t,
    user: *mut c_void,
) -> c_int {
    // SAFETY: the caller's contract, passed on.
    unsafe { dispatch("sc_dispatch_termination", sc, Event::Close, handler, user) }
}

/// The body of the three `sc_dispatch_*` functions.
///
/// # Safety
///
/// As `sc_dispatch_creation`.
unsafe fn dispatch(
    name: &str,
    sc: *mut sc_t,
    event: Event,
    handler: sc_callback_t,
    user: *mut c_void,
) -> c_int {
    guard(name, || {
        // SAFETY: the contract on `sc`.
        let sc = unsafe { handle(sc) }?;
        let cb = handler.map(|_| Callback {
            f: handler,
            user: user as usize,
        });
        let mut s = sc.settings_to_change()?;
        match event {
            Event::Create => s.create = cb,
            Event::Data => s.data = cb,
            Event::Close => s.close = cb,
        }
        Ok(())
    })
}

// ---------------------------------------------------------------------------
// Running
// ---------------------------------------------------------------------------

/// Captures (Scap `scap_start_capture`): reads the file to its end, or the
/// interface until `sc_stop`, calling the registered callbacks on worker
/// threads; returns when every stream has terminated and every callback
/// has returned. Blocks the calling thread.
///
/// Returns `SC_OK`; `SC_ERR_IO` if the source cannot be opened, or broke
/// part way (what was read before is still delivered); `SC_ERR_FILTER`;
/// `SC_ERR_STATE` if a capture already runs on this handle; `SC_ERR_PANIC`
/// if the library panicked on any thread. The statistics of the run are
/// then available from `sc_get_stats`. A handle may capture again.
///
/// # Safety
///
/// `sc` is NULL or a live handle.
#[no_mangle]
pub unsafe extern "C" fn sc_start_capture(sc: *mut sc_t) -> c_int {
    guard("sc_start_capture", || {
        // SAFETY: the contract on `sc`.
        let sc = unsafe { handle(sc) }?;
        // The capture runs on a thread of the library's own, joined here:
        // the calling thread (perhaps not started by Rust) then never
        // needs a Rust thread handle, which the standard library would
        // allocate for it and never free (memcheck: "possibly lost"). A
        // panic on it comes back from `join`.
        let addr = sc as *const sc_t as usize;
        let runner = std::thread::Builder::new()
            .name("streamcap-capture".into())
            .spawn(move || {
                // SAFETY: `addr` is the live handle above: the calling
                // thread waits in `join` below until this thread has
                // ended, and by the contract the handle lives at least as
                // long as this call.
                let sc = unsafe { &*(addr as *const sc_t) };
                run::start(sc)
            })
            .map_err(|e| Error::io(format!("cannot start the capture thread: {e}")))?;
        runner.join().unwrap_or_else(|p| Err(error::panic_error(p)))
    })
}

/// Asks a running capture to stop (an addition to Table II): the workers
/// stop reading, every open stream is terminated (`SC_END_EOF`) and
/// delivered, and `sc_start_capture` returns. Callable from any thread,
/// from a callback, and from a signal handler (it only sets a flag);
/// without a running capture it does nothing (a later `sc_start_capture`
/// starts afresh).
///
/// # Safety
///
/// `sc` is NULL or a live handle.
#[no_mangle]
pub unsafe extern "C" fn sc_stop(sc: *mut sc_t) -> c_int {
    guard("sc_stop", || {
        // SAFETY: the contract on `sc`.
        let sc = unsafe { handle(sc) }?;
        sc.stop.store(true, Ordering::SeqCst);
        Ok(())
    })
}

/// Copies the overall statistics of the last capture into `*stats` (Scap
/// `scap_get_stats`; all zero before the first). `SC_ERR_STATE` while a
/// capture runs: the statistics are those of a finished capture.
///
/// # Safety
///
/// `sc` is NULL or a live handle; `stats` is NULL or points to a writable
/// `sc_stats_t`.
#[no_mangle]
pub unsafe extern "C" fn sc_get_stats(sc: *mut sc_t, stats: *mut sc_stats_t) -> c_int {
    guard("sc_get_stats", || {
        // SAFETY: the contract on `sc`.
        let sc = unsafe { handle(sc) }?;
        if stats.is_null() {
            return Err(Error::invalid("stats is NULL"));
        }
        if sc.running.load(Ordering::SeqCst) {
            return Err(Error::state(
                "statistics are available when sc_start_capture has returned",
            ));
        }
        let s = *sc.stats.lock().unwrap_or_else(|e| e.into_inner());
        // SAFETY: `stats` is not NULL and, by the contract, writable.
        unsafe { stats.write(s) };
        Ok(())
    })
}

/// Frees a handle (Scap `scap_close`). NULL is accepted (nothing to do).
/// `SC_ERR_STATE` (and nothing freed) while a capture runs on it: close it
/// after `sc_start_capture` has returned. After `SC_OK` the handle must
/// not be used again.
///
/// # Safety
///
/// `sc` is NULL or a live handle, not used by another thread during or
/// after this call.
#[no_mangle]
pub unsafe extern "C" fn sc_close(sc: *mut sc_t) -> c_int {
    guard("sc_close", || {
        if sc.is_null() {
            return Ok(());
        }
        // SAFETY: the contract on `sc`.
        if unsafe { handle(sc) }?.running.load(Ordering::SeqCst) {
            return Err(Error::state("a capture is running on this handle"));
        }
        // SAFETY: `sc` came from `Box::into_raw` in `sc_create`, is not
        // freed yet, and no capture (whose workers hold it) runs.
        drop(unsafe { Box::from_raw(sc) });
        Ok(())
    })
}

// ---------------------------------------------------------------------------
// Stream control, inside callbacks
// ---------------------------------------------------------------------------
//
// These never dereference `sc` or `sd`: they compare them with the
// callback running on the calling thread and record a request that the
// library applies when the callback returns.

/// Stops collecting a stream's data (Scap `scap_discard_stream`): its
/// later bytes are counted as discarded, never delivered; its termination
/// callback still runs. Only inside a callback, for the stream it was
/// given (`SC_ERR_STATE` otherwise), as every stream control call. Takes
/// effect when the callback returns (so do the other control calls; the
/// descriptor's fields show the change from the next callback on).
#[no_mangle]
pub extern "C" fn sc_discard_stream(sc: *mut sc_t, sd: *mut sc_stream_t) -> c_int {
    guard("sc_discard_stream", || {
        with_current(Some(sc), sd, |ctx| {
            ctx.pending.discard = true;
            Ok(())
        })
    })
}

/// Sets a stream's cutoff, bytes from its start (Scap
/// `scap_set_stream_cutoff`); negative: unlimited. A cutoff below what was
/// already delivered acts as `sc_discard_stream`.
#[no_mangle]
pub extern "C" fn sc_set_stream_cutoff(
    sc: *mut sc_t,
    sd: *mut sc_stream_t,
    cutoff_bytes: i64,
) -> c_int {
    guard("sc_set_stream_cutoff", || {
        with_current(Some(sc), sd, |ctx| {
            ctx.pending.cutoff = Some(cutoff(cutoff_bytes));
            Ok(())
        })
    })
}

/// Sets a stream's priority for overload control, 0 to 255 (Scap
/// `scap_set_stream_priority`).
#[no_mangle]
pub extern "C" fn sc_set_stream_priority(
    sc: *mut sc_t,
    sd: *mut sc_stream_t,
    priority: c_int,
) -> c_int {
    guard("sc_set_stream_priority", || {
        let p = priority_of(i64::from(priority))?;
        with_current(Some(sc), sd, |ctx| {
            ctx.pending.priority = Some(p);
            Ok(())
        })
    })
}

/// Sets one of a stream's parameters (Scap `scap_set_stream_parameter`):
/// `SC_PARAM_CHUNK_SIZE`, `SC_PARAM_OVERLAP`, `SC_PARAM_FLUSH_TIMEOUT`,
/// `SC_PARAM_REASSEMBLY_MODE`, `SC_PARAM_DELIVERY`, `SC_PARAM_PRIORITY` or
/// `SC_PARAM_CUTOFF`, with the units of `sc_set_parameter`. The other
/// parameters (the inactivity timeout among them) are not per stream:
/// `SC_ERR_INVALID`.
#[no_mangle]
pub extern "C" fn sc_set_stream_parameter(
    sc: *mut sc_t,
    sd: *mut sc_stream_t,
    parameter: c_int,
    value: i64,
) -> c_int {
    guard("sc_set_stream_parameter", || {
        with_current(Some(sc), sd, |ctx| {
            let p = &mut ctx.pending;
            match parameter {
                SC_PARAM_CHUNK_SIZE => p.chunk_size = Some(at_least(value, 1, "chunk size")?),
                SC_PARAM_OVERLAP => p.overlap = Some(at_least(value, 0, "overlap")?),
                SC_PARAM_FLUSH_TIMEOUT => {
                    p.flush_timeout = Some(match value {
                        v if v < 0 => None,
                        v => Some(ms_to_ns(v, "flush timeout")?),
                    })
                }
                SC_PARAM_REASSEMBLY_MODE => p.mode = Some(mode_of(value)?),
                SC_PARAM_DELIVERY => p.delivery = Some(delivery_of(value)?),
                SC_PARAM_PRIORITY => p.priority = Some(priority_of(value)?),
                SC_PARAM_CUTOFF => p.cutoff = Some(cutoff(value)),
                other => {
                    return Err(Error::invalid(format!(
                        "parameter {other} cannot be set per stream"
                    )))
                }
            }
            Ok(())
        })
    })
}

/// Keeps the current chunk (Scap `scap_keep_stream_chunk`): the next data
/// callback of the stream receives these bytes followed by the new ones,
/// in one contiguous `data`. Kept bytes stay charged to the memory size. A
/// gap releases them. Only inside the data callback.
#[no_mangle]
pub extern "C" fn sc_keep_stream_chunk(sc: *mut sc_t, sd: *mut sc_stream_t) -> c_int {
    guard("sc_keep_stream_chunk", || {
        with_current(Some(sc), sd, |ctx| {
            if ctx.event != Event::Data {
                return Err(Error::state("only valid inside the data callback"));
            }
            ctx.pending.keep = true;
            Ok(())
        })
    })
}

/// The next packet of the current chunk (Scap `scap_next_stream_packet`;
/// only with `need_packets`, inside the data callback): fills `*h` and
/// returns a pointer to the packet's payload bytes inside `sd->data`
/// (`h->caplen` of them; when none of the packet's payload is in this
/// chunk, `caplen` is 0 and the pointer is `sd->data`). NULL when there is
/// no further packet, or on an error (NULL `h`, outside the data callback:
/// see `sc_last_error`). The payload is library-owned, valid during the
/// callback only; `*h` is the program's.
///
/// The packets are those that arrived since the last data callback and
/// whose payload begins before this chunk's end, in arrival order
/// (retransmissions included).
///
/// # Safety
///
/// `h` is NULL or points to a writable `sc_pkthdr_t`. (`sd` is only
/// compared with the running callback's.)
#[no_mangle]
pub unsafe extern "C" fn sc_next_stream_packet(
    sd: *mut sc_stream_t,
    h: *mut sc_pkthdr_t,
) -> *const u8 {
    guard_value(
        "sc_next_stream_packet",
        |_| std::ptr::null(),
        || {
            if h.is_null() {
                return Err(Error::invalid("h is NULL"));
            }
            with_current(None, sd, |ctx| {
                if ctx.event != Event::Data {
                    return Err(Error::state("only valid inside the data callback"));
                }
                Ok(match handler::next_packet(ctx) {
                    Some((hdr, payload)) => {
                        // SAFETY: `h` is not NULL and, by the contract,
                        // writable.
                        unsafe { h.write(hdr) };
                        payload
                    }
                    None => std::ptr::null(),
                })
            })
        },
    )
}
