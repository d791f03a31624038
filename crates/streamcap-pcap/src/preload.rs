//! The libpcap functions the library defines itself. Each finds the system
//! libpcap's own function (`dlsym(RTLD_NEXT)`, or libpcap opened by name
//! when the program was not linked with it) and calls it, doing its part
//! before or after:
//!
//! - `pcap_create` opens the real interface of a virtual device
//!   (`eth0:1` → `eth0`) and remembers the name the program used;
//! - `pcap_set_snaplen` notes that the program chose a snap length, so the
//!   file's `caplen` (a default) does not replace it; `PCAP_CAPLEN` does;
//! - `pcap_activate` applies the snap length, the device's channels and
//!   IRQ affinity, activates, and joins the configured fan-out group;
//! - `pcap_fanout` joins a group on the program's request;
//! - `pcap_loop`, `pcap_dispatch`, `pcap_next` and `pcap_next_ex` hand out
//!   packets in locality batches when locality buffering applies to the
//!   handle, and are the real functions otherwise;
//! - `pcap_breakloop` and `pcap_close` keep the library's state in step.
//!
//! Nothing else of libpcap is touched: every other call reaches the system
//! libpcap directly.

#![allow(unsafe_code)]
#![deny(unsafe_op_in_unsafe_fn)]

use crate::config::{interface_of, CpuSet};
use crate::fanout::{self, FanoutSpec};
use crate::locality::{self, Batch, PktHdr, MAX_BATCH_BYTES};
use crate::settings::{ChannelRequest, Locality, Settings};
use std::collections::HashMap;
use std::ffi::{c_char, c_int, c_uchar, c_void, CStr, CString};
use std::os::fd::BorrowedFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

/// libpcap's opaque handle.
#[repr(C)]
pub struct PcapT {
    _opaque: [u8; 0],
}

/// libpcap's `pcap_handler`.
type PcapHandler = Option<unsafe extern "C" fn(*mut c_uchar, *const PktHdr, *const c_uchar)>;

/// `PCAP_ERROR`.
const PCAP_ERROR: c_int = -1;
/// `PCAP_ERROR_BREAK`: the loop was broken, or (from `pcap_next_ex`) the
/// file ended.
const PCAP_ERROR_BREAK: c_int = -2;
/// `PCAP_ERRBUF_SIZE`.
const ERRBUF_SIZE: usize = 256;

type CreateFn = unsafe extern "C" fn(*const c_char, *mut c_char) -> *mut PcapT;
type HandleIntFn = unsafe extern "C" fn(*mut PcapT) -> c_int;
type SetIntFn = unsafe extern "C" fn(*mut PcapT, c_int) -> c_int;
type HandleFn = unsafe extern "C" fn(*mut PcapT);
type LoopFn = unsafe extern "C" fn(*mut PcapT, c_int, PcapHandler, *mut c_uchar) -> c_int;
type NextFn = unsafe extern "C" fn(*mut PcapT, *mut PktHdr) -> *const c_uchar;
type NextExFn = unsafe extern "C" fn(*mut PcapT, *mut *mut PktHdr, *mut *const c_uchar) -> c_int;
type FileFn = unsafe extern "C" fn(*mut PcapT) -> *mut c_void;
type GeterrFn = unsafe extern "C" fn(*mut PcapT) -> *mut c_char;

/// The system libpcap's functions.
struct Real {
    create: CreateFn,
    activate: HandleIntFn,
    set_snaplen: SetIntFn,
    close: HandleFn,
    loop_: LoopFn,
    dispatch: LoopFn,
    next: NextFn,
    next_ex: NextExFn,
    breakloop: HandleFn,
    fileno: HandleIntFn,
    selectable_fd: HandleIntFn,
    file: FileFn,
    datalink: HandleIntFn,
    geterr: GeterrFn,
}

/// The system libpcap, found once; `None` (with a message on stderr) if
/// the process has none and none can be opened.
fn real() -> Option<&'static Real> {
    static REAL: OnceLock<Option<Real>> = OnceLock::new();
    REAL.get_or_init(|| {
        let found = find_real();
        if found.is_none() {
            eprintln!("libstreamcap_pcap: the system libpcap (libpcap.so.0.8) cannot be found: no pcap call can work");
        }
        found
    })
    .as_ref()
}

fn find_real() -> Option<Real> {
    // The next definition after this library's: the program's libpcap.
    let mut handle = libc::RTLD_NEXT;
    // SAFETY: dlsym with RTLD_NEXT and a NUL-terminated name only looks a
    // symbol up.
    if unsafe { libc::dlsym(handle, c"pcap_activate".as_ptr()) }.is_null() {
        // Linked without -lpcap: open it by its soname.
        // SAFETY: dlopen with a NUL-terminated name; the handle is kept
        // for the life of the process (never closed).
        handle = unsafe {
            libc::dlopen(
                c"libpcap.so.0.8".as_ptr(),
                libc::RTLD_NOW | libc::RTLD_GLOBAL,
            )
        };
        if handle.is_null() {
            return None;
        }
    }
    let sym = |name: &CStr| -> Option<*mut c_void> {
        // SAFETY: as above; the name is NUL-terminated.
        let p = unsafe { libc::dlsym(handle, name.as_ptr()) };
        (!p.is_null()).then_some(p)
    };
    // SAFETY (each transmute): the symbol is libpcap's function of that
    // name, whose C prototype (pcap/pcap.h) the field's type spells out.
    unsafe {
        Some(Real {
            create: std::mem::transmute::<*mut c_void, CreateFn>(sym(c"pcap_create")?),
            activate: std::mem::transmute::<*mut c_void, HandleIntFn>(sym(c"pcap_activate")?),
            set_snaplen: std::mem::transmute::<*mut c_void, SetIntFn>(sym(c"pcap_set_snaplen")?),
            close: std::mem::transmute::<*mut c_void, HandleFn>(sym(c"pcap_close")?),
            loop_: std::mem::transmute::<*mut c_void, LoopFn>(sym(c"pcap_loop")?),
            dispatch: std::mem::transmute::<*mut c_void, LoopFn>(sym(c"pcap_dispatch")?),
            next: std::mem::transmute::<*mut c_void, NextFn>(sym(c"pcap_next")?),
            next_ex: std::mem::transmute::<*mut c_void, NextExFn>(sym(c"pcap_next_ex")?),
            breakloop: std::mem::transmute::<*mut c_void, HandleFn>(sym(c"pcap_breakloop")?),
            fileno: std::mem::transmute::<*mut c_void, HandleIntFn>(sym(c"pcap_fileno")?),
            selectable_fd: std::mem::transmute::<*mut c_void, HandleIntFn>(sym(
                c"pcap_get_selectable_fd",
            )?),
            file: std::mem::transmute::<*mut c_void, FileFn>(sym(c"pcap_file")?),
            datalink: std::mem::transmute::<*mut c_void, HandleIntFn>(sym(c"pcap_datalink")?),
            geterr: std::mem::transmute::<*mut c_void, GeterrFn>(sym(c"pcap_geterr")?),
        })
    }
}

/// Runs the body of an exported function: a panic (a bug of the library)
/// is reported on stderr and comes back as `fallback` (libpcap's error
/// value for the call) instead of unwinding into C.
fn guard<T>(fallback: T, body: impl FnOnce() -> T) -> T {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(body)) {
        Ok(v) => v,
        Err(_) => {
            eprintln!("libstreamcap_pcap: internal error (a panic); the call fails");
            fallback
        }
    }
}

/// The settings of the process: the environment and the configuration
/// file, read (and their problems reported) once, at the first call.
fn settings() -> &'static Settings {
    static SETTINGS: OnceLock<Settings> = OnceLock::new();
    SETTINGS.get_or_init(Settings::from_env)
}

/// What the library keeps for one handle.
struct Handle {
    /// The device name the program opened (`None`: a file, or a handle
    /// not made by `pcap_create`).
    opened_as: Option<String>,
    /// The program set a snap length itself.
    app_snaplen: AtomicBool,
    /// Locality buffering, when it applies (set at activation or, for a
    /// file, at the first read).
    locality: OnceLock<Option<Locality>>,
    /// `pcap_breakloop` was called on a batched handle: the library's own
    /// loops end at the next packet or gathering.
    breaking: AtomicBool,
    /// The library is inside libpcap's own read for this handle, which only
    /// libpcap's flag (and its wake-up) can end.
    in_libpcap: AtomicBool,
    batch: Mutex<BatchState>,
}

/// A handle's batch, and what ended its gathering.
#[derive(Default)]
struct BatchState {
    batch: Batch,
    /// An error the gathering met after it had packets: returned once
    /// they are handed out.
    error: Option<c_int>,
    /// The file ended.
    eof: bool,
}

impl Handle {
    fn new(opened_as: Option<String>) -> Handle {
        Handle {
            opened_as,
            app_snaplen: AtomicBool::new(false),
            locality: OnceLock::new(),
            breaking: AtomicBool::new(false),
            in_libpcap: AtomicBool::new(false),
            batch: Mutex::new(BatchState::default()),
        }
    }
}

/// Every handle the library knows, by address.
fn handle_table() -> &'static Mutex<HashMap<usize, Arc<Handle>>> {
    static HANDLES: OnceLock<Mutex<HashMap<usize, Arc<Handle>>>> = OnceLock::new();
    HANDLES.get_or_init(Default::default)
}

/// The table of handles, locked.
fn handles() -> MutexGuard<'static, HashMap<usize, Arc<Handle>>> {
    handle_table().lock().unwrap_or_else(|e| e.into_inner())
}

fn handle_of(p: *mut PcapT) -> Option<Arc<Handle>> {
    handles().get(&(p as usize)).cloned()
}

/// Writes `msg` into the handle's error buffer (what `pcap_geterr` shows).
fn set_error(r: &Real, p: *mut PcapT, msg: &str) {
    // SAFETY: `p` is a live handle; pcap_geterr returns its error buffer
    // of PCAP_ERRBUF_SIZE bytes, which libpcap itself writes the same way.
    let buf = unsafe { (r.geterr)(p) };
    if buf.is_null() {
        return;
    }
    let bytes = msg.as_bytes();
    let n = bytes.len().min(ERRBUF_SIZE - 1);
    // SAFETY: `buf` has ERRBUF_SIZE writable bytes; n + 1 of them are written.
    unsafe {
        std::ptr::copy_nonoverlapping(bytes.as_ptr(), buf.cast::<u8>(), n);
        *buf.add(n) = 0;
    }
}

/// `pcap_create`: opens the real interface of a virtual device.
///
/// # Safety
/// libpcap's contract: `source` NULL or a NUL-terminated string, `errbuf`
/// PCAP_ERRBUF_SIZE writable bytes.
#[no_mangle]
pub unsafe extern "C" fn pcap_create(source: *const c_char, errbuf: *mut c_char) -> *mut PcapT {
    guard(std::ptr::null_mut(), || {
        let Some(r) = real() else {
            return std::ptr::null_mut();
        };
        let name = (!source.is_null())
            // SAFETY: a NUL-terminated string by the contract.
            .then(|| {
                unsafe { CStr::from_ptr(source) }
                    .to_string_lossy()
                    .into_owned()
            });
        let real_name = name
            .as_deref()
            .map(interface_of)
            .and_then(|n| CString::new(n).ok());
        let src = real_name.as_ref().map_or(source, |c| c.as_ptr());
        // SAFETY: the contract, passed on; `src` is `source` or a string that
        // lives through the call.
        let p = unsafe { (r.create)(src, errbuf) };
        if !p.is_null() {
            handles().insert(p as usize, Arc::new(Handle::new(name)));
        }
        p
    })
}

/// `pcap_set_snaplen`: notes that the program chose one.
///
/// # Safety
/// libpcap's contract: `p` a handle from `pcap_create`, not activated.
#[no_mangle]
pub unsafe extern "C" fn pcap_set_snaplen(p: *mut PcapT, snaplen: c_int) -> c_int {
    guard(PCAP_ERROR, || {
        let Some(r) = real() else {
            return PCAP_ERROR;
        };
        if let Some(h) = handle_of(p) {
            h.app_snaplen.store(true, Ordering::Relaxed);
        }
        // SAFETY: the contract, passed on.
        unsafe { (r.set_snaplen)(p, snaplen) }
    })
}

/// `pcap_activate`, with the snap length, channels, IRQ affinity and
/// fan-out group the settings give the device.
///
/// # Safety
/// libpcap's contract: `p` a handle from `pcap_create`.
#[no_mangle]
pub unsafe extern "C" fn pcap_activate(p: *mut PcapT) -> c_int {
    guard(PCAP_ERROR, || {
        let Some(r) = real() else {
            return PCAP_ERROR;
        };
        let Some(h) = handle_of(p) else {
            // SAFETY: the contract, passed on.
            return unsafe { (r.activate)(p) };
        };
        let Some(name) = h.opened_as.clone() else {
            // SAFETY: the contract, passed on.
            return unsafe { (r.activate)(p) };
        };
        let dev = settings().device(&name);
        let snaplen = dev
            .caplen
            .and_then(|c| c.applies(h.app_snaplen.load(Ordering::Relaxed)));
        if let Some(n) = snaplen {
            // SAFETY: `p` is not activated yet (the contract).
            unsafe { (r.set_snaplen)(p, n as c_int) };
        }
        apply_channels_once(&dev.interface, &dev.channels, &dev.irq);
        // SAFETY: the contract, passed on.
        let rc = unsafe { (r.activate)(p) };
        if rc < 0 {
            return rc;
        }
        if let Some(group) = dev.group {
            if let Err(e) = join(r, p, group, dev.fanout) {
                set_error(r, p, &format!("{name}: {e}"));
                return PCAP_ERROR;
            }
        }
        let _ = h.locality.set(dev.locality);
        rc
    })
}

/// Applies a device's channel count and IRQ affinity once per process.
fn apply_channels_once(interface: &str, request: &ChannelRequest, irq: &[(u32, CpuSet)]) {
    static DONE: OnceLock<Mutex<Vec<String>>> = OnceLock::new();
    if request.is_empty() && irq.is_empty() {
        return;
    }
    let mut done = DONE
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    if done.iter().any(|d| d == interface) {
        return;
    }
    done.push(interface.to_string());
    // Each failure is reported on stderr; activation goes on.
    let _ = crate::channels::apply(interface, request, irq);
}

/// Joins the handle's socket to a fan-out group.
fn join(r: &Real, p: *mut PcapT, group: u16, spec: FanoutSpec) -> Result<(), String> {
    // SAFETY: `p` is an activated handle.
    let fd = unsafe { (r.fileno)(p) };
    if fd < 0 {
        return Err("the handle has no socket (not a live capture)".into());
    }
    // SAFETY: the handle's socket stays open for this call: the handle
    // owns it and is not closed meanwhile.
    let fd = unsafe { BorrowedFd::borrow_raw(fd) };
    fanout::join(fd, group, spec)
}

/// `pcap_fanout(p, group, fanout)`: joins the activated live handle `p` to
/// kernel fan-out `group` with mode `fanout` (NULL: `hash`). Returns 0, or
/// -1 with the reason in `pcap_geterr(p)`.
///
/// # Safety
/// `p` an activated handle; `fanout` NULL or a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn pcap_fanout(p: *mut PcapT, group: c_int, fanout: *const c_char) -> c_int {
    guard(PCAP_ERROR, || {
        let Some(r) = real() else {
            return PCAP_ERROR;
        };
        if p.is_null() {
            return PCAP_ERROR;
        }
        let spec = if fanout.is_null() {
            Ok(FanoutSpec::default())
        } else {
            // SAFETY: a NUL-terminated string by the contract.
            FanoutSpec::parse(&unsafe { CStr::from_ptr(fanout) }.to_string_lossy())
        };
        let result = match (u16::try_from(group), spec) {
            (Err(_), _) => Err(format!("pcap_fanout: group {group}: expected 0 to 65535")),
            (_, Err(e)) => Err(format!("pcap_fanout: {e}")),
            (Ok(g), Ok(spec)) => join(r, p, g, spec).map_err(|e| format!("pcap_fanout: {e}")),
        };
        match result {
            Ok(()) => 0,
            Err(e) => {
                set_error(r, p, &e);
                PCAP_ERROR
            }
        }
    })
}

/// `pcap_close`: forgets the handle.
///
/// # Safety
/// libpcap's contract.
#[no_mangle]
pub unsafe extern "C" fn pcap_close(p: *mut PcapT) {
    guard((), || {
        handles().remove(&(p as usize));
        if let Some(r) = real() {
            // SAFETY: the contract, passed on.
            unsafe { (r.close)(p) };
        }
    })
}

/// `pcap_breakloop`: also ends a batch being handed out.
///
/// # Safety
/// libpcap's contract.
#[no_mangle]
pub unsafe extern "C" fn pcap_breakloop(p: *mut PcapT) {
    guard((), || {
        let Some(r) = real() else {
            return;
        };
        // Often called from a signal handler (tcpdump's on SIGINT): the
        // table is only tried, never waited for. When it is busy, libpcap's
        // own flag ends the next read, which the library's loops obey too.
        let h = handle_table()
            .try_lock()
            .ok()
            .and_then(|all| all.get(&(p as usize)).cloned());
        if let Some(h) = h.filter(|h| matches!(h.locality.get(), Some(Some(_)))) {
            h.breaking.store(true, Ordering::SeqCst);
            if !h.in_libpcap.load(Ordering::SeqCst) {
                // The library's own loops see the flag; libpcap's would
                // break a later read a second time.
                return;
            }
        }
        // SAFETY: the contract, passed on.
        unsafe { (r.breakloop)(p) }
    })
}

/// The handle's locality buffering, if it applies: set at activation for
/// a live handle; for a file, from the settings at the first read.
fn locality_of(r: &Real, p: *mut PcapT) -> Option<(Arc<Handle>, Locality)> {
    if !settings().locality_anywhere() {
        return None;
    }
    let h = {
        let mut all = handles();
        all.entry(p as usize)
            .or_insert_with(|| Arc::new(Handle::new(None)))
            .clone()
    };
    let loc = *h.locality.get_or_init(|| {
        // SAFETY: `p` is a live handle (the caller's contract).
        let offline = !unsafe { (r.file)(p) }.is_null();
        if offline {
            settings().locality_for_offline()
        } else {
            None
        }
    });
    loc.map(|l| (h, l))
}

/// How a gathering ended.
enum Gathered {
    /// A sealed batch with packets.
    Batch,
    /// Nothing: the live handle's timeout passed without packets.
    Nothing,
    /// Nothing: the file ended.
    Eof,
    /// `pcap_breakloop` (the packets gathered so far wait in the batch).
    Break,
    /// Nothing: libpcap's error.
    Error(c_int),
}

/// What the gathering callback needs.
struct Collect<'a> {
    batch: &'a mut Batch,
    dlt: c_int,
}

unsafe extern "C" fn collect(user: *mut c_uchar, hdr: *const PktHdr, bytes: *const c_uchar) {
    if user.is_null() || hdr.is_null() || bytes.is_null() {
        return;
    }
    // SAFETY: `user` is the `Collect` `gather` passed to pcap_dispatch,
    // alive and not otherwise borrowed during the call.
    let c = unsafe { &mut *user.cast::<Collect<'_>>() };
    // SAFETY: libpcap passes a valid header and `caplen` readable bytes.
    let (h, data) = unsafe {
        let h = *hdr;
        (h, std::slice::from_raw_parts(bytes, h.caplen as usize))
    };
    let key = locality::key_of(c.dlt, data);
    c.batch.push(h, data, key);
}

/// Gathers a batch from libpcap: until it holds `loc.batch` packets (or
/// [`MAX_BATCH_BYTES`]), the file ends, or, live, `loc.timeout_ms` after
/// the first packet.
fn gather(r: &Real, p: *mut PcapT, h: &Handle, st: &mut BatchState, loc: Locality) -> Gathered {
    st.batch.clear();
    // SAFETY: `p` is a live handle (the caller's contract).
    let (dlt, live) = unsafe { ((r.datalink)(p), (r.file)(p).is_null()) };
    // SAFETY: as above.
    let fd = if live {
        unsafe { (r.selectable_fd)(p) }
    } else {
        -1
    };
    let timeout = Duration::from_millis(loc.timeout_ms);
    let mut first: Option<Instant> = None;
    loop {
        if st.batch.len() >= loc.batch || st.batch.bytes() >= MAX_BATCH_BYTES {
            break;
        }
        if let (true, Some(t0)) = (live, first) {
            let left = timeout.saturating_sub(t0.elapsed());
            if left.is_zero() || (fd >= 0 && !readable(fd, left)) {
                break;
            }
        }
        let want = c_int::try_from(loc.batch - st.batch.len()).unwrap_or(c_int::MAX);
        // From here `pcap_breakloop` goes to libpcap; a call just before
        // is seen here.
        h.in_libpcap.store(true, Ordering::SeqCst);
        if h.breaking.swap(false, Ordering::SeqCst) {
            h.in_libpcap.store(false, Ordering::SeqCst);
            st.batch.seal();
            return Gathered::Break;
        }
        let mut c = Collect {
            batch: &mut st.batch,
            dlt,
        };
        // SAFETY: `collect` matches pcap_handler and gets `c`, which lives
        // through the call.
        let n =
            unsafe { (r.dispatch)(p, want, Some(collect), (&mut c as *mut Collect<'_>).cast()) };
        h.in_libpcap.store(false, Ordering::SeqCst);
        if first.is_none() && !st.batch.is_empty() {
            first = Some(Instant::now());
        }
        match n {
            PCAP_ERROR_BREAK => {
                h.breaking.store(false, Ordering::SeqCst);
                st.batch.seal();
                return Gathered::Break;
            }
            n if n < 0 => {
                if st.batch.is_empty() {
                    return Gathered::Error(n);
                }
                st.error = Some(n);
                break;
            }
            0 if !live => {
                st.eof = true;
                if st.batch.is_empty() {
                    return Gathered::Eof;
                }
                break;
            }
            0 if st.batch.is_empty() => return Gathered::Nothing,
            _ => {}
        }
    }
    st.batch.seal();
    Gathered::Batch
}

/// Whether `fd` becomes readable within `wait`.
fn readable(fd: c_int, wait: Duration) -> bool {
    let mut pfd = libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    };
    let ms = c_int::try_from(wait.as_millis().max(1)).unwrap_or(c_int::MAX);
    // SAFETY: one valid pollfd, read and written by poll only.
    unsafe { libc::poll(&mut pfd, 1, ms) > 0 }
}

/// Hands out up to `cnt` packets (all of the batch for `cnt` <= 0) of the
/// sealed batch to `callback`. `Err(PCAP_ERROR_BREAK)` when the callback
/// called `pcap_breakloop`.
fn deliver(
    h: &Handle,
    st: &mut BatchState,
    cnt: c_int,
    callback: PcapHandler,
    user: *mut c_uchar,
) -> Result<c_int, c_int> {
    let Some(cb) = callback else {
        return Ok(0);
    };
    let mut n: c_int = 0;
    while cnt <= 0 || n < cnt {
        let Some((hdr, data)) = st.batch.next_packet() else {
            break;
        };
        // SAFETY: the program's handler with its own `user`, a header and
        // `caplen` bytes that stay put through the call.
        unsafe { cb(user, hdr, data.as_ptr()) };
        n += 1;
        if h.breaking.swap(false, Ordering::SeqCst) {
            return Err(PCAP_ERROR_BREAK);
        }
    }
    Ok(n)
}

/// The read calls' common part: `direct` (libpcap's own call) when
/// locality buffering does not apply to `p`, or when the program calls
/// from its own callback while the handle's batch is being handed out;
/// else `batched` on the handle's batch. `fallback` is the call's error
/// value, should the library have none of libpcap or panic.
fn read_call<T: Copy>(
    p: *mut PcapT,
    fallback: T,
    direct: impl FnOnce(&Real) -> T,
    batched: impl FnOnce(&Real, &Handle, &mut BatchState, Locality) -> T,
) -> T {
    guard(fallback, || {
        let Some(r) = real() else {
            return fallback;
        };
        let Some((h, loc)) = locality_of(r, p) else {
            return direct(r);
        };
        let Ok(mut st) = h.batch.try_lock() else {
            return direct(r);
        };
        batched(r, &h, &mut st, loc)
    })
}

/// `pcap_loop`, in locality batches when they apply.
///
/// # Safety
/// libpcap's contract.
#[no_mangle]
pub unsafe extern "C" fn pcap_loop(
    p: *mut PcapT,
    cnt: c_int,
    callback: PcapHandler,
    user: *mut c_uchar,
) -> c_int {
    read_call(
        p,
        PCAP_ERROR,
        // SAFETY: the contract, passed on.
        |r| unsafe { (r.loop_)(p, cnt, callback, user) },
        |r, h, st, loc| {
            let mut done: c_int = 0;
            loop {
                let left = if cnt > 0 { cnt - done } else { 0 };
                match deliver(h, st, left, callback, user) {
                    Err(e) => return e,
                    Ok(n) => done += n,
                }
                if cnt > 0 && done >= cnt {
                    return 0;
                }
                if let Some(e) = st.error.take() {
                    return e;
                }
                if st.eof {
                    st.eof = false;
                    return 0;
                }
                if h.breaking.swap(false, Ordering::SeqCst) {
                    return PCAP_ERROR_BREAK;
                }
                match gather(r, p, h, st, loc) {
                    Gathered::Batch | Gathered::Nothing => {}
                    Gathered::Eof => return 0,
                    Gathered::Break => return PCAP_ERROR_BREAK,
                    Gathered::Error(e) => return e,
                }
            }
        },
    )
}

/// `pcap_dispatch`, in locality batches when they apply: the rest of the
/// current batch, or a new one.
///
/// # Safety
/// libpcap's contract.
#[no_mangle]
pub unsafe extern "C" fn pcap_dispatch(
    p: *mut PcapT,
    cnt: c_int,
    callback: PcapHandler,
    user: *mut c_uchar,
) -> c_int {
    read_call(
        p,
        PCAP_ERROR,
        // SAFETY: the contract, passed on.
        |r| unsafe { (r.dispatch)(p, cnt, callback, user) },
        |r, h, st, loc| {
            if !st.batch.pending() {
                if let Some(e) = st.error.take() {
                    return e;
                }
                if st.eof {
                    st.eof = false;
                    return 0;
                }
                match gather(r, p, h, st, loc) {
                    Gathered::Batch => {}
                    Gathered::Nothing | Gathered::Eof => return 0,
                    Gathered::Break => return PCAP_ERROR_BREAK,
                    Gathered::Error(e) => return e,
                }
            }
            deliver(h, st, cnt, callback, user).unwrap_or_else(|e| e)
        },
    )
}

/// The next packet of the handle's batch, gathering one if needed:
/// `Ok(header, data)` or the `pcap_next_ex` code.
fn next_packet(
    r: &Real,
    p: *mut PcapT,
    h: &Handle,
    st: &mut BatchState,
    loc: Locality,
) -> Result<(*const PktHdr, *const c_uchar), c_int> {
    if !st.batch.pending() {
        if let Some(e) = st.error.take() {
            return Err(e);
        }
        if st.eof {
            return Err(PCAP_ERROR_BREAK);
        }
        match gather(r, p, h, st, loc) {
            Gathered::Batch => {}
            Gathered::Nothing => return Err(0),
            Gathered::Eof | Gathered::Break => return Err(PCAP_ERROR_BREAK),
            Gathered::Error(e) => return Err(e),
        }
    }
    // The batch keeps the packet in place until the next gathering, which
    // only a later call on this handle starts: libpcap's own promise.
    match st.batch.next_packet() {
        Some((hdr, data)) => Ok((hdr as *const PktHdr, data.as_ptr())),
        None => Err(0),
    }
}

/// `pcap_next_ex`, from locality batches when they apply.
///
/// # Safety
/// libpcap's contract.
#[no_mangle]
pub unsafe extern "C" fn pcap_next_ex(
    p: *mut PcapT,
    header: *mut *mut PktHdr,
    data: *mut *const c_uchar,
) -> c_int {
    read_call(
        p,
        PCAP_ERROR,
        // SAFETY: the contract, passed on.
        |r| unsafe { (r.next_ex)(p, header, data) },
        |r, h, st, loc| {
            match next_packet(r, p, h, st, loc) {
                Ok((hd, d)) => {
                    if !header.is_null() {
                        // SAFETY: a writable pointer by the contract.
                        unsafe { *header = hd.cast_mut() };
                    }
                    if !data.is_null() {
                        // SAFETY: as above.
                        unsafe { *data = d };
                    }
                    1
                }
                Err(code) => code,
            }
        },
    )
}

/// `pcap_next`, from locality batches when they apply.
///
/// # Safety
/// libpcap's contract.
#[no_mangle]
pub unsafe extern "C" fn pcap_next(p: *mut PcapT, header: *mut PktHdr) -> *const c_uchar {
    read_call(
        p,
        std::ptr::null(),
        // SAFETY: the contract, passed on.
        |r| unsafe { (r.next)(p, header) },
        |r, h, st, loc| {
            match next_packet(r, p, h, st, loc) {
                Ok((hd, d)) => {
                    if !header.is_null() {
                        // SAFETY: `header` is writable by the contract; `hd` valid.
                        unsafe { *header = *hd };
                    }
                    d
                }
                Err(_) => std::ptr::null(),
            }
        },
    )
}
