//! Debian's libxdp (`libxdp.so.1`), opened at run time: it registers the
//! UMEM, creates the socket and maps its rings. Opening it at run time
//! keeps it out of the build (the default build needs no XDP library),
//! and a machine without it gets a message that names the package.
//!
//! Only the socket is libxdp's: streamcap's own XDP program (drop first,
//! then redirect) is attached separately, so every socket is created with
//! `XSK_LIBXDP_FLAGS__INHIBIT_PROG_LOAD`.
#![allow(unsafe_code)]

use super::ring::XskRing;
use libloading::Library;
use std::ffi::{c_char, c_int, c_void, CString};
use std::io;
use std::sync::OnceLock;

/// `XSK_LIBXDP_FLAGS__INHIBIT_PROG_LOAD`.
const INHIBIT_PROG_LOAD: u32 = 1;

/// `struct xsk_umem_config`.
#[repr(C)]
struct UmemConfig {
    fill_size: u32,
    comp_size: u32,
    frame_size: u32,
    frame_headroom: u32,
    flags: u32,
}

/// `struct xsk_socket_config`.
#[repr(C)]
struct SocketConfig {
    rx_size: u32,
    tx_size: u32,
    libxdp_flags: u32,
    xdp_flags: u32,
    bind_flags: u16,
}

type UmemCreateFn = unsafe extern "C" fn(
    *mut *mut c_void,
    *mut c_void,
    u64,
    *mut XskRing,
    *mut XskRing,
    *const UmemConfig,
) -> c_int;
type SocketCreateFn = unsafe extern "C" fn(
    *mut *mut c_void,
    *const c_char,
    u32,
    *mut c_void,
    *mut XskRing,
    *mut XskRing,
    *const SocketConfig,
) -> c_int;
type SocketCreateSharedFn = unsafe extern "C" fn(
    *mut *mut c_void,
    *const c_char,
    u32,
    *mut c_void,
    *mut XskRing,
    *mut XskRing,
    *mut XskRing,
    *mut XskRing,
    *const SocketConfig,
) -> c_int;
type SocketFdFn = unsafe extern "C" fn(*const c_void) -> c_int;
type SocketDeleteFn = unsafe extern "C" fn(*mut c_void);
type UmemDeleteFn = unsafe extern "C" fn(*mut c_void) -> c_int;

/// The functions used, resolved once.
pub(crate) struct Libxdp {
    umem_create: UmemCreateFn,
    socket_create: SocketCreateFn,
    socket_create_shared: SocketCreateSharedFn,
    socket_fd: SocketFdFn,
    socket_delete: SocketDeleteFn,
    umem_delete: UmemDeleteFn,
    /// Keeps the functions above loaded.
    _lib: Library,
}

impl Libxdp {
    /// The library, opened on first use; the error says what to install.
    pub fn get() -> Result<&'static Libxdp, String> {
        static LIB: OnceLock<Result<Libxdp, String>> = OnceLock::new();
        LIB.get_or_init(Libxdp::open).as_ref().map_err(Clone::clone)
    }

    fn open() -> Result<Libxdp, String> {
        let mut errors = Vec::new();
        for name in ["libxdp.so.1", "libxdp.so"] {
            // SAFETY: loading libxdp runs its initialisers, which only set
            // up its own state; it is a C library with no Rust invariants.
            match unsafe { Library::new(name) } {
                Ok(lib) => return Libxdp::resolve(lib).map_err(|e| format!("{name}: {e}")),
                Err(e) => errors.push(e.to_string()),
            }
        }
        Err(format!(
            "AF_XDP needs libxdp (apt-get install libxdp1): {}",
            errors.join("; ")
        ))
    }

    fn resolve(lib: Library) -> Result<Libxdp, libloading::Error> {
        // SAFETY: each symbol is looked up with the type of its declaration
        // in libxdp 1.x's <xdp/xsk.h> (the struct layouts are `UmemConfig`,
        // `SocketConfig` and `XskRing` above); the function pointers are
        // used only while `_lib` keeps the library loaded.
        unsafe {
            Ok(Libxdp {
                umem_create: *lib.get::<UmemCreateFn>(b"xsk_umem__create\0")?,
                socket_create: *lib.get::<SocketCreateFn>(b"xsk_socket__create\0")?,
                socket_create_shared: *lib
                    .get::<SocketCreateSharedFn>(b"xsk_socket__create_shared\0")?,
                socket_fd: *lib.get::<SocketFdFn>(b"xsk_socket__fd\0")?,
                socket_delete: *lib.get::<SocketDeleteFn>(b"xsk_socket__delete\0")?,
                umem_delete: *lib.get::<UmemDeleteFn>(b"xsk_umem__delete\0")?,
                _lib: lib,
            })
        }
    }
}

/// A registered UMEM and a socket bound to one queue, as libxdp made them.
/// The rings are boxed: libxdp keeps their addresses between the UMEM's
/// creation and the socket's.
pub(crate) struct XskHandles {
    lib: &'static Libxdp,
    umem: *mut c_void,
    socket: *mut c_void,
    /// The socket's descriptor (owned by libxdp's socket).
    pub fd: c_int,
    pub fill: Box<XskRing>,
    pub comp: Box<XskRing>,
    pub rx: Box<XskRing>,
    pub tx: Option<Box<XskRing>>,
}

// SAFETY: the handles are plain pointers to libxdp's allocations and the
// rings' mappings; nothing in them is tied to the creating thread, and
// `&mut self` methods are the only users, so moving them to another thread
// is sound.
unsafe impl Send for XskHandles {}

/// What [`create`] needs.
pub(crate) struct CreateParams<'a> {
    pub interface: &'a str,
    pub queue: u32,
    /// The UMEM: `len` bytes at `area`, page-aligned, alive until the
    /// handles are dropped.
    pub area: *mut c_void,
    pub len: u64,
    pub frame_size: u32,
    /// Entries of the fill and RX rings (powers of two).
    pub ring_size: u32,
    /// Entries of the TX and completion rings; 0 for none.
    pub tx_size: u32,
    /// `XDP_COPY`, `XDP_ZEROCOPY`, `XDP_USE_NEED_WAKEUP` as wanted.
    pub bind_flags: u16,
}

/// Registers the UMEM and creates a socket bound to `queue`.
pub(crate) fn create(lib: &'static Libxdp, p: &CreateParams<'_>) -> io::Result<XskHandles> {
    let ifname = CString::new(p.interface)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "NUL in interface name"))?;
    let mut h = XskHandles {
        lib,
        umem: std::ptr::null_mut(),
        socket: std::ptr::null_mut(),
        fd: -1,
        fill: Box::default(),
        comp: Box::default(),
        rx: Box::default(),
        tx: (p.tx_size > 0).then(Box::default),
    };
    let umem_cfg = UmemConfig {
        fill_size: p.ring_size,
        // A send-only socket sharing the UMEM gets a completion ring of
        // this size too: room for every frame of the pool in flight.
        comp_size: p.ring_size,
        frame_size: p.frame_size,
        frame_headroom: 0,
        flags: 0,
    };
    // SAFETY: `area` is `len` bytes of page-aligned memory that outlives
    // the UMEM (the caller's contract); the ring structs are boxed and
    // writable and stay where they are until the handles drop; the config
    // is a valid `struct xsk_umem_config`. libxdp returns 0 or -errno.
    let rc = unsafe {
        (lib.umem_create)(
            &mut h.umem,
            p.area,
            p.len,
            &mut *h.fill,
            &mut *h.comp,
            &umem_cfg,
        )
    };
    if rc != 0 {
        return Err(io::Error::from_raw_os_error(-rc));
    }
    let sock_cfg = SocketConfig {
        rx_size: p.ring_size,
        tx_size: p.tx_size,
        libxdp_flags: INHIBIT_PROG_LOAD,
        xdp_flags: 0,
        bind_flags: p.bind_flags,
    };
    let tx =
        h.tx.as_deref_mut()
            .map_or(std::ptr::null_mut(), |t| t as *mut XskRing);
    // SAFETY: `umem` was just created; `ifname` is NUL-terminated and
    // outlives the call; `rx` and `tx` are boxed, writable ring structs (tx
    // may be null: no TX ring); the config is valid. 0 or -errno.
    let rc = unsafe {
        (lib.socket_create)(
            &mut h.socket,
            ifname.as_ptr(),
            p.queue,
            h.umem,
            &mut *h.rx,
            tx,
            &sock_cfg,
        )
    };
    if rc != 0 {
        return Err(io::Error::from_raw_os_error(-rc));
    }
    // SAFETY: `socket` was just created.
    h.fd = unsafe { (lib.socket_fd)(h.socket) };
    let mapped = h.fill.is_mapped()
        && h.comp.is_mapped()
        && h.rx.is_mapped()
        && h.tx.as_ref().is_none_or(|t| t.is_mapped());
    if h.fd < 0 || !mapped {
        return Err(io::Error::other(
            "libxdp returned a socket without its rings",
        ));
    }
    Ok(h)
}

impl Drop for XskHandles {
    fn drop(&mut self) {
        if !self.socket.is_null() {
            // SAFETY: created by `xsk_socket__create` and deleted once; this
            // closes the descriptor and unmaps the RX and TX rings, which
            // nothing uses after this.
            unsafe { (self.lib.socket_delete)(self.socket) };
        }
        if !self.umem.is_null() {
            // SAFETY: created by `xsk_umem__create`, its socket deleted just
            // above; unmaps the fill and completion rings.
            unsafe { (self.lib.umem_delete)(self.umem) };
        }
    }
}

/// A send-only socket on another interface or queue that shares a UMEM
/// (`XDP_SHARED_UMEM`): it transmits frames of that UMEM. Its own fill
/// ring stays empty (it receives nothing); its completion ring gives sent
/// frames back. Must be dropped before the [`XskHandles`] that own the
/// UMEM.
pub(crate) struct XskTxHandles {
    lib: &'static Libxdp,
    socket: *mut c_void,
    /// The socket's descriptor (owned by libxdp's socket).
    pub fd: c_int,
    pub fill: Box<XskRing>,
    pub comp: Box<XskRing>,
    pub tx: Box<XskRing>,
}

// SAFETY: as for `XskHandles`: pointers to libxdp's allocations and ring
// mappings, used through `&mut self` only.
unsafe impl Send for XskTxHandles {}

/// Creates a send-only socket on `queue` of `interface` sharing `umem`'s
/// UMEM, with a TX ring of `tx_size` entries.
pub(crate) fn create_tx(
    umem: &XskHandles,
    interface: &str,
    queue: u32,
    tx_size: u32,
    bind_flags: u16,
) -> io::Result<XskTxHandles> {
    let lib = umem.lib;
    let ifname = CString::new(interface)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "NUL in interface name"))?;
    let mut h = XskTxHandles {
        lib,
        socket: std::ptr::null_mut(),
        fd: -1,
        fill: Box::default(),
        comp: Box::default(),
        tx: Box::default(),
    };
    let cfg = SocketConfig {
        rx_size: 0,
        tx_size,
        libxdp_flags: INHIBIT_PROG_LOAD,
        xdp_flags: 0,
        bind_flags,
    };
    // SAFETY: `umem.umem` is a live UMEM (the caller keeps `umem` alive
    // longer than the new socket); `ifname` is NUL-terminated; the ring
    // structs are boxed and writable (no RX ring: null); the config is
    // valid. libxdp creates fill and completion rings of the default size
    // on the new socket and returns 0 or -errno.
    let rc = unsafe {
        (lib.socket_create_shared)(
            &mut h.socket,
            ifname.as_ptr(),
            queue,
            umem.umem,
            std::ptr::null_mut(),
            &mut *h.tx,
            &mut *h.fill,
            &mut *h.comp,
            &cfg,
        )
    };
    if rc != 0 {
        return Err(io::Error::from_raw_os_error(-rc));
    }
    // SAFETY: `socket` was just created.
    h.fd = unsafe { (lib.socket_fd)(h.socket) };
    if h.fd < 0 || !h.tx.is_mapped() || !h.comp.is_mapped() {
        return Err(io::Error::other(
            "libxdp returned a socket without its rings",
        ));
    }
    Ok(h)
}

impl Drop for XskTxHandles {
    fn drop(&mut self) {
        if !self.socket.is_null() {
            // SAFETY: created by `xsk_socket__create_shared`, deleted once;
            // closes its descriptor and unmaps its rings.
            unsafe { (self.lib.socket_delete)(self.socket) };
        }
    }
}
