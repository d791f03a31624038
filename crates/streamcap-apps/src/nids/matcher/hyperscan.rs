//! Hyperscan's stream mode, loaded at run time.
//!
//! [Hyperscan] matches many literals at once and keeps, per stream, a small
//! block of state (a few hundred bytes, [`HsDatabase::stream_size`]) so that
//! a pattern split across the chunks of a reassembled stream is found
//! without keeping or rescanning earlier bytes (`hs_scan_stream`).
//!
//! The library is not linked: `libhs.so.5` (then `libhs.so`) is opened with
//! [`libloading`] on the first [`Hyperscan::load`], the way
//! `streamcap::filter::libpcap` opens libpcap. The workspace therefore builds
//! on a machine without Hyperscan, and the same binary uses it where Debian's
//! `libhyperscan5` (Hyperscan ≥ 5.2, for `hs_compile_lit_multi`) is
//! installed; where it is not, [`Hyperscan::load`] returns an error naming the
//! package and the caller falls back to another matcher.
//!
//! # Why not the `hyperscan` crate
//!
//! The `hyperscan` crate (0.3.2) is built on `hyperscan-sys` 0.3.2, whose
//! build script finds libhs with `pkg-config` (or `HYPERSCAN_ROOT`), fails
//! the build when it is absent, and emits `cargo:rustc-link-lib=hs` for
//! plain `extern "C"` declarations: the library is linked at build time and
//! needed by the dynamic loader before `main`. It has no option to open the
//! library at run time, so it cannot meet the constraint that the default
//! build succeed, and the binary start, without Hyperscan. The dozen
//! functions used here are declared by hand from `<hs/hs_common.h>`,
//! `<hs/hs_compile.h>` and `<hs/hs_runtime.h>` (5.4).
//!
//! # Safety design
//!
//! Every handle keeps what it points into alive: an [`HsDatabase`], each
//! [`HsScratch`] and each [`HsStream`] hold an `Arc` of the compiled database,
//! which holds an `Arc` of the loaded library; so no handle can be used or
//! freed after the database or the library, whatever order safe code drops
//! them in. [`HsDatabase::scan`] and [`HsDatabase::reset`] refuse a stream or
//! scratch of another database ([`HsError::WrongDatabase`]), because
//! Hyperscan checks that only partly. A scratch is `Send` but not `Sync` and
//! is used through `&mut`, so two threads never share one. A panic in the
//! match callback is caught before it reaches C, stops the scan, and is
//! resumed once `hs_scan_stream` has returned.
//!
//! Hyperscan needs SSSE3 on x86: the CPU is checked before the library is
//! even opened (its initialisers may use those instructions), and
//! `hs_valid_platform` after. Setting [`DISABLE_ENV`] makes
//! [`Hyperscan::load`] fail as if the library were absent, to exercise the
//! fallback.
//!
//! # Speed
//!
//! `examples/hs_bench.rs` (`cargo run --release -p streamcap-apps --example
//! hs_bench`) scans 50 MB of mixed text and binary in 1,460-byte chunks, one
//! stream per 1 MiB flow. On a shared 2-core EPYC VM (2026-11-27): 3.6, 3.0
//! and 1.3 GB/s for 100, 1,000 and 10,000 literals, against 263, 150 and
//! 60 MB/s for aho-corasick's DFA walked byte by byte (73 MB/s for its
//! contiguous NFA at 10,000, whose DFA takes 169 MB); 49 bytes of state per
//! stream; 10,000 literals compile in 0.2 s.
//!
//! [Hyperscan]: https://www.hyperscan.io/
// The crate may become `#![deny(unsafe_code)]`: this module is the C
// boundary to libhs and is the one exception, each block with a SAFETY
// comment and an entry in docs/unsafe.md.
#![allow(unsafe_code)]

use libloading::Library;
use std::any::Any;
use std::ffi::{c_char, c_int, c_uint, c_ulonglong, c_void, CStr, OsStr};
use std::marker::{PhantomData, PhantomPinned};
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};
use std::ptr::{self, NonNull};
use std::sync::{Arc, OnceLock};

/// Library names tried in order.
pub const LIBRARY_NAMES: [&str; 2] = ["libhs.so.5", "libhs.so"];

/// The Debian package that provides the library.
pub const PACKAGE: &str = "libhyperscan5";

/// When this environment variable is set (to anything but empty or `0`) at
/// the first [`Hyperscan::load`], the load fails with [`HsError::Disabled`].
pub const DISABLE_ENV: &str = "STREAMCAP_NO_HYPERSCAN";

/// `HS_SUCCESS`.
const HS_SUCCESS: c_int = 0;
/// `HS_NOMEM`.
const HS_NOMEM: c_int = -2;
/// `HS_SCAN_TERMINATED`: the match callback asked to stop.
const HS_SCAN_TERMINATED: c_int = -3;
/// `HS_COMPILER_ERROR`: details in the `hs_compile_error_t`.
const HS_COMPILER_ERROR: c_int = -4;
/// `HS_FLAG_CASELESS`.
const HS_FLAG_CASELESS: c_uint = 1;
/// `HS_MODE_STREAM`.
const HS_MODE_STREAM: c_uint = 2;

/// Declares an opaque C type, only ever handled by pointer.
macro_rules! opaque {
    ($name:ident, $c:literal) => {
        #[doc = concat!("`", $c, "`, opaque.")]
        #[repr(C)]
        struct $name {
            _data: [u8; 0],
            _marker: PhantomData<(*mut u8, PhantomPinned)>,
        }
    };
}
opaque!(RawDatabase, "hs_database_t");
opaque!(RawScratch, "hs_scratch_t");
opaque!(RawStream, "hs_stream_t");

/// `hs_compile_error_t`.
#[repr(C)]
struct RawCompileError {
    message: *mut c_char,
    expression: c_int,
}

/// `match_event_handler`.
type MatchHandler =
    unsafe extern "C" fn(c_uint, c_ulonglong, c_ulonglong, c_uint, *mut c_void) -> c_int;

type VersionFn = unsafe extern "C" fn() -> *const c_char;
type ValidPlatformFn = unsafe extern "C" fn() -> c_int;
type CompileLitMultiFn = unsafe extern "C" fn(
    *const *const c_char,
    *const c_uint,
    *const c_uint,
    *const usize,
    c_uint,
    c_uint,
    *const c_void,
    *mut *mut RawDatabase,
    *mut *mut RawCompileError,
) -> c_int;
type FreeCompileErrorFn = unsafe extern "C" fn(*mut RawCompileError) -> c_int;
type FreeDatabaseFn = unsafe extern "C" fn(*mut RawDatabase) -> c_int;
type SizeFn = unsafe extern "C" fn(*const RawDatabase, *mut usize) -> c_int;
type AllocScratchFn = unsafe extern "C" fn(*const RawDatabase, *mut *mut RawScratch) -> c_int;
type FreeScratchFn = unsafe extern "C" fn(*mut RawScratch) -> c_int;
type OpenStreamFn = unsafe extern "C" fn(*const RawDatabase, c_uint, *mut *mut RawStream) -> c_int;
type ScanStreamFn = unsafe extern "C" fn(
    *mut RawStream,
    *const c_char,
    c_uint,
    c_uint,
    *mut RawScratch,
    Option<MatchHandler>,
    *mut c_void,
) -> c_int;
type CloseStreamFn = unsafe extern "C" fn(
    *mut RawStream,
    *mut RawScratch,
    Option<MatchHandler>,
    *mut c_void,
) -> c_int;
type ResetStreamFn = unsafe extern "C" fn(
    *mut RawStream,
    c_uint,
    *mut RawScratch,
    Option<MatchHandler>,
    *mut c_void,
) -> c_int;

/// What went wrong loading Hyperscan, compiling or scanning.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HsError {
    /// No library of [`LIBRARY_NAMES`] could be opened, or the one opened
    /// lacks a function (Hyperscan older than 5.2). The text lists each
    /// attempt.
    #[error("Hyperscan is not available ({0}); install the Debian package libhyperscan5")]
    NotFound(String),
    /// The CPU cannot run Hyperscan (no SSSE3, or `hs_valid_platform`
    /// refused it).
    #[error("Hyperscan cannot run on this machine: {0}")]
    Platform(String),
    /// [`DISABLE_ENV`] is set.
    #[error("Hyperscan is disabled by the environment variable STREAMCAP_NO_HYPERSCAN")]
    Disabled,
    /// [`HsDatabase::compile`] was given no pattern.
    #[error("no patterns to compile")]
    NoPatterns,
    /// More patterns than Hyperscan's `unsigned` count can hold.
    #[error("{0} patterns are more than Hyperscan can compile at once")]
    TooManyPatterns(usize),
    /// Hyperscan's compiler refused the patterns; `pattern` is the index of
    /// the one at fault when it is known.
    #[error("{}", match .pattern {
        Some(i) => format!("cannot compile pattern {i}: {}", .message),
        None => format!("cannot compile the patterns: {}", .message),
    })]
    Compile {
        /// Index of the pattern at fault, when Hyperscan says.
        pattern: Option<usize>,
        /// Hyperscan's message.
        message: String,
    },
    /// The stream was stopped by a panic in a match callback; it reports
    /// this until [`HsDatabase::reset`].
    #[error(
        "the stream was stopped by a panic in a match callback; reset it before scanning again"
    )]
    Terminated,
    /// A stream or scratch given to a database it was not made by.
    #[error("the stream or scratch was made by another database")]
    WrongDatabase,
    /// A Hyperscan call returned an error code.
    #[error("{call} failed: {} ({code})", error_name(*.code))]
    Call {
        /// The function, e.g. `hs_scan_stream`.
        call: &'static str,
        /// Its `hs_error_t`.
        code: i32,
    },
}

/// The name of an `hs_error_t` value (`<hs/hs_common.h>`).
fn error_name(code: i32) -> &'static str {
    match code {
        0 => "HS_SUCCESS",
        -1 => "HS_INVALID",
        -2 => "HS_NOMEM",
        -3 => "HS_SCAN_TERMINATED",
        -4 => "HS_COMPILER_ERROR",
        -5 => "HS_DB_VERSION_ERROR",
        -6 => "HS_DB_PLATFORM_ERROR",
        -7 => "HS_DB_MODE_ERROR",
        -8 => "HS_BAD_ALIGN",
        -9 => "HS_BAD_ALLOC",
        -10 => "HS_SCRATCH_IN_USE",
        -11 => "HS_ARCH_ERROR",
        -12 => "HS_INSUFFICIENT_SPACE",
        -13 => "HS_UNKNOWN_ERROR",
        _ => "unknown error code",
    }
}

/// `Ok` when `code` is `HS_SUCCESS`, else the error of `call`.
fn check(call: &'static str, code: c_int) -> Result<(), HsError> {
    match code {
        HS_SUCCESS => Ok(()),
        HS_SCAN_TERMINATED => Err(HsError::Terminated),
        code => Err(HsError::Call { call, code }),
    }
}

/// Whether the value of [`DISABLE_ENV`] disables Hyperscan.
fn disabled_by(value: Option<&OsStr>) -> bool {
    value.is_some_and(|v| !v.is_empty() && v != "0")
}

/// Refuses a CPU without SSSE3, the least Hyperscan runs on.
fn require_ssse3(has_ssse3: bool) -> Result<(), HsError> {
    if has_ssse3 {
        Ok(())
    } else {
        Err(HsError::Platform(
            "the CPU lacks SSSE3, which Hyperscan requires".into(),
        ))
    }
}

/// Whether this CPU has what Hyperscan needs before libhs may be opened.
fn cpu_supported() -> Result<(), HsError> {
    #[cfg(any(target_arch = "x86", target_arch = "x86_64"))]
    require_ssse3(std::arch::is_x86_feature_detected!("ssse3"))?;
    Ok(())
}

/// The functions used, copied out of the library.
struct Fns {
    version: VersionFn,
    valid_platform: ValidPlatformFn,
    compile_lit_multi: CompileLitMultiFn,
    free_compile_error: FreeCompileErrorFn,
    free_database: FreeDatabaseFn,
    stream_size: SizeFn,
    database_size: SizeFn,
    alloc_scratch: AllocScratchFn,
    free_scratch: FreeScratchFn,
    open_stream: OpenStreamFn,
    scan_stream: ScanStreamFn,
    close_stream: CloseStreamFn,
    reset_stream: ResetStreamFn,
}

impl Fns {
    /// Looks every function up in `lib`.
    ///
    /// # Safety
    ///
    /// The returned pointers are valid only while `lib` stays loaded.
    unsafe fn get(lib: &Library) -> Result<Fns, libloading::Error> {
        // SAFETY: each type matches the prototype in <hs/hs_common.h>,
        // <hs/hs_compile.h> or <hs/hs_runtime.h> (HS_CDECL is empty on Unix),
        // so calling through them is sound; the caller keeps `lib` loaded
        // while they are used.
        unsafe {
            Ok(Fns {
                version: *lib.get(b"hs_version\0")?,
                valid_platform: *lib.get(b"hs_valid_platform\0")?,
                compile_lit_multi: *lib.get(b"hs_compile_lit_multi\0")?,
                free_compile_error: *lib.get(b"hs_free_compile_error\0")?,
                free_database: *lib.get(b"hs_free_database\0")?,
                stream_size: *lib.get(b"hs_stream_size\0")?,
                database_size: *lib.get(b"hs_database_size\0")?,
                alloc_scratch: *lib.get(b"hs_alloc_scratch\0")?,
                free_scratch: *lib.get(b"hs_free_scratch\0")?,
                open_stream: *lib.get(b"hs_open_stream\0")?,
                scan_stream: *lib.get(b"hs_scan_stream\0")?,
                close_stream: *lib.get(b"hs_close_stream\0")?,
                reset_stream: *lib.get(b"hs_reset_stream\0")?,
            })
        }
    }
}

/// A loaded libhs and the functions used from it.
pub struct Hyperscan {
    fns: Fns,
    name: String,
    // Last: the function pointers above point into it.
    _lib: Library,
}

impl std::fmt::Debug for Hyperscan {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Hyperscan")
            .field("name", &self.name)
            .field("version", &self.version())
            .finish()
    }
}

impl Hyperscan {
    /// Loads libhs (the first of [`LIBRARY_NAMES`] that opens and has every
    /// function used), once per process: later calls return the same
    /// library, or the same error. The error names the package
    /// ([`PACKAGE`]) when the library is absent, and is
    /// [`HsError::Platform`] on a CPU Hyperscan cannot run on (checked before
    /// the library is opened), or [`HsError::Disabled`] when [`DISABLE_ENV`]
    /// is set.
    pub fn load() -> Result<Arc<Hyperscan>, HsError> {
        static LOADED: OnceLock<Result<Arc<Hyperscan>, HsError>> = OnceLock::new();
        LOADED
            .get_or_init(|| {
                if disabled_by(std::env::var_os(DISABLE_ENV).as_deref()) {
                    return Err(HsError::Disabled);
                }
                Hyperscan::load_from(&LIBRARY_NAMES)
            })
            .clone()
    }

    /// Loads the first of `names` that opens and has every function used,
    /// without the process-wide cache of [`Hyperscan::load`] (each call opens
    /// the library again; it is closed when the last handle made from it is
    /// dropped). For tests and for a library in a non-standard place.
    pub fn load_from(names: &[&str]) -> Result<Arc<Hyperscan>, HsError> {
        cpu_supported()?;
        let mut errors = Vec::new();
        for name in names {
            // SAFETY: loading libhs runs its ELF initialisers (C++ static
            // constructors and the IFUNC resolvers that pick the code for this
            // CPU), which set up the library's own tables only and have no
            // precondition on the calling program beyond the SSSE3 checked
            // above. A library lacking any function used is refused below
            // before one is called.
            let lib = match unsafe { Library::new(name) } {
                Ok(lib) => lib,
                Err(e) => {
                    errors.push(e.to_string());
                    continue;
                }
            };
            // SAFETY: the pointers are stored next to `lib` in the same
            // `Hyperscan`, which keeps it loaded while they can be called.
            let fns = match unsafe { Fns::get(&lib) } {
                Ok(fns) => fns,
                Err(e) => {
                    errors.push(format!("{name}: {e}"));
                    continue;
                }
            };
            let hs = Hyperscan {
                fns,
                name: (*name).to_string(),
                _lib: lib,
            };
            // SAFETY: hs_valid_platform takes nothing and only inspects the
            // CPU (cpuid); the library is loaded.
            let rc = unsafe { (hs.fns.valid_platform)() };
            if rc != HS_SUCCESS {
                return Err(HsError::Platform(format!(
                    "{name}: hs_valid_platform returned {}",
                    error_name(rc)
                )));
            }
            return Ok(Arc::new(hs));
        }
        Err(HsError::NotFound(errors.join("; ")))
    }

    /// The file name that was loaded.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Hyperscan's version and build date (`hs_version`), e.g.
    /// `5.4.0 2021-01-26`.
    pub fn version(&self) -> String {
        // SAFETY: hs_version takes nothing and returns a pointer to a static
        // NUL-terminated string of the loaded library, copied at once.
        unsafe {
            let p = (self.fns.version)();
            if p.is_null() {
                String::new()
            } else {
                CStr::from_ptr(p).to_string_lossy().into_owned()
            }
        }
    }
}

/// The compiled database: freed when the last [`HsDatabase`], [`HsScratch`]
/// or [`HsStream`] made from it is dropped.
struct Db {
    hs: Arc<Hyperscan>,
    ptr: NonNull<RawDatabase>,
}

// SAFETY: a compiled hs_database_t is immutable; Hyperscan documents that one
// database may be used by any number of threads at once (each with its own
// scratch), and it has no thread affinity. The library (`hs`) is Send + Sync.
unsafe impl Send for Db {}
// SAFETY: as for Send: only read after compilation, concurrent use allowed.
unsafe impl Sync for Db {}

impl Drop for Db {
    fn drop(&mut self) {
        // SAFETY: `ptr` came from a successful hs_compile_lit_multi and is freed
        // once, here; every scratch and stream made from it holds an Arc of
        // this Db, so none is left. The library is kept loaded by `self.hs`.
        unsafe { (self.hs.fns.free_database)(self.ptr.as_ptr()) };
    }
}

/// Literal patterns compiled for Hyperscan's stream mode. Cheap to clone
/// (the clones share the compiled database); `Send` and `Sync`, so worker
/// threads share one, each with its own [`HsScratch`].
#[derive(Clone)]
pub struct HsDatabase {
    db: Arc<Db>,
    patterns: usize,
    stream_size: usize,
    memory: usize,
}

impl std::fmt::Debug for HsDatabase {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HsDatabase")
            .field("patterns", &self.patterns)
            .field("stream_size", &self.stream_size)
            .field("memory", &self.memory)
            .finish()
    }
}

/// What the match callback reaches through its context pointer.
struct MatchContext<'a> {
    on_match: &'a mut dyn FnMut(u32, u64),
    panic: Option<Box<dyn Any + Send + 'static>>,
}

/// The `match_event_handler` passed to `hs_scan_stream`: calls the caller's
/// closure; a panic in it is stored and stops the scan (it must not unwind
/// into C).
extern "C" fn on_event(
    id: c_uint,
    _from: c_ulonglong,
    to: c_ulonglong,
    _flags: c_uint,
    context: *mut c_void,
) -> c_int {
    // SAFETY: `context` is the `&mut MatchContext` that `HsDatabase::scan`
    // passed to hs_scan_stream, which calls this handler only during that
    // call and on the calling thread; `scan` does not touch the context until
    // the call returns, so this is the only reference to it.
    let cx = unsafe { &mut *context.cast::<MatchContext<'_>>() };
    if cx.panic.is_some() {
        return 1;
    }
    match catch_unwind(AssertUnwindSafe(|| (cx.on_match)(id, to))) {
        Ok(()) => 0,
        Err(payload) => {
            cx.panic = Some(payload);
            1
        }
    }
}

impl HsDatabase {
    /// Compiles literal patterns for stream mode (`hs_compile_lit_multi`):
    /// each is a byte string matched as is (any byte, NUL included), and
    /// `true` makes it ASCII-caseless (`HS_FLAG_CASELESS`). A pattern's id
    /// is its index. An empty list is [`HsError::NoPatterns`], an empty
    /// pattern a [`HsError::Compile`] naming it.
    pub fn compile(hs: &Arc<Hyperscan>, patterns: &[(&[u8], bool)]) -> Result<HsDatabase, HsError> {
        let flags: Vec<c_uint> = patterns
            .iter()
            .map(|&(_, nocase)| if nocase { HS_FLAG_CASELESS } else { 0 })
            .collect();
        Self::compile_flags(hs, patterns, &flags)
    }

    /// [`HsDatabase::compile`] with Hyperscan's flags for each pattern
    /// (`flags[i]` for `patterns[i]`; the booleans are ignored).
    fn compile_flags(
        hs: &Arc<Hyperscan>,
        patterns: &[(&[u8], bool)],
        flags: &[c_uint],
    ) -> Result<HsDatabase, HsError> {
        assert_eq!(patterns.len(), flags.len());
        if patterns.is_empty() {
            return Err(HsError::NoPatterns);
        }
        let count = c_uint::try_from(patterns.len())
            .map_err(|_| HsError::TooManyPatterns(patterns.len()))?;
        if let Some(i) = patterns.iter().position(|(p, _)| p.is_empty()) {
            return Err(HsError::Compile {
                pattern: Some(i),
                message: "empty pattern".into(),
            });
        }
        let expressions: Vec<*const c_char> =
            patterns.iter().map(|(p, _)| p.as_ptr().cast()).collect();
        let lengths: Vec<usize> = patterns.iter().map(|(p, _)| p.len()).collect();
        let ids: Vec<c_uint> = (0..count).collect();
        let mut db: *mut RawDatabase = ptr::null_mut();
        let mut error: *mut RawCompileError = ptr::null_mut();
        // SAFETY: the four arrays each hold `count` elements and outlive the
        // call; each expression pointer is valid for its length (non-empty
        // slices, checked above); a NULL platform means "this host"; `db` and
        // `error` are valid places for the results.
        let rc = unsafe {
            (hs.fns.compile_lit_multi)(
                expressions.as_ptr(),
                flags.as_ptr(),
                ids.as_ptr(),
                lengths.as_ptr(),
                count,
                HS_MODE_STREAM,
                ptr::null(),
                &mut db,
                &mut error,
            )
        };
        if !error.is_null() {
            // SAFETY: Hyperscan set `error` to a compile error it allocated:
            // its message is NUL-terminated (or NULL); both are copied out
            // before the error is freed, once.
            let (message, expression) = unsafe {
                let e = &*error;
                let message = if e.message.is_null() {
                    String::from("unknown compile error")
                } else {
                    CStr::from_ptr(e.message).to_string_lossy().into_owned()
                };
                let expression = e.expression;
                (hs.fns.free_compile_error)(error);
                (message, expression)
            };
            return Err(HsError::Compile {
                pattern: usize::try_from(expression).ok(),
                message,
            });
        }
        if rc != HS_SUCCESS {
            return Err(HsError::Call {
                call: "hs_compile_lit_multi",
                code: rc,
            });
        }
        let ptr = NonNull::new(db).ok_or(HsError::Call {
            call: "hs_compile_lit_multi",
            code: HS_COMPILER_ERROR,
        })?;
        let db = Arc::new(Db {
            hs: Arc::clone(hs),
            ptr,
        });
        let mut stream_size = 0usize;
        let mut memory = 0usize;
        // SAFETY: `db.ptr` is a live database (owned by `db`); each call writes
        // one size_t into a local.
        unsafe {
            check(
                "hs_stream_size",
                (hs.fns.stream_size)(db.ptr.as_ptr(), &mut stream_size),
            )?;
            check(
                "hs_database_size",
                (hs.fns.database_size)(db.ptr.as_ptr(), &mut memory),
            )?;
        }
        Ok(HsDatabase {
            db,
            patterns: patterns.len(),
            stream_size,
            memory,
        })
    }

    /// The number of patterns.
    pub fn patterns(&self) -> usize {
        self.patterns
    }

    /// Allocates a scratch space (`hs_alloc_scratch`): Hyperscan's working
    /// memory during a scan. One per thread: it is `Send` but not `Sync`,
    /// and every scan borrows it mutably.
    pub fn scratch(&self) -> Result<HsScratch, HsError> {
        let mut scratch: *mut RawScratch = ptr::null_mut();
        // SAFETY: the database is live (`self.db`); `scratch` is NULL, so
        // Hyperscan allocates a new one and writes its pointer there.
        check("hs_alloc_scratch", unsafe {
            (self.db.hs.fns.alloc_scratch)(self.db.ptr.as_ptr(), &mut scratch)
        })?;
        let ptr = NonNull::new(scratch).ok_or(HsError::Call {
            call: "hs_alloc_scratch",
            code: HS_NOMEM,
        })?;
        Ok(HsScratch {
            db: Arc::clone(&self.db),
            ptr,
        })
    }

    /// Opens a stream (`hs_open_stream`): the matching state of one
    /// direction of one connection, [`HsDatabase::stream_size`] bytes.
    pub fn open_stream(&self) -> Result<HsStream, HsError> {
        let mut stream: *mut RawStream = ptr::null_mut();
        // SAFETY: the database is live and was compiled in stream mode;
        // `stream` receives the new stream's pointer.
        check("hs_open_stream", unsafe {
            (self.db.hs.fns.open_stream)(self.db.ptr.as_ptr(), 0, &mut stream)
        })?;
        let ptr = NonNull::new(stream).ok_or(HsError::Call {
            call: "hs_open_stream",
            code: HS_NOMEM,
        })?;
        Ok(HsStream {
            db: Arc::clone(&self.db),
            ptr,
        })
    }

    /// Refuses a stream or scratch made by another database.
    fn owns(&self, stream: &HsStream, scratch: &HsScratch) -> Result<(), HsError> {
        if Arc::ptr_eq(&stream.db, &self.db) && Arc::ptr_eq(&scratch.db, &self.db) {
            Ok(())
        } else {
            Err(HsError::WrongDatabase)
        }
    }

    /// Scans the next bytes of `stream` (`hs_scan_stream`), calling
    /// `on_match(pattern, end)` for every occurrence that ends in `data`,
    /// including those that began in earlier calls; `end` is the offset just
    /// past the match, counted from the first byte scanned in the stream
    /// since it was opened or reset. Every occurrence is reported, overlapping
    /// ones included; the order within one call is Hyperscan's (by end,
    /// mostly).
    ///
    /// A panic in `on_match` stops the scan and is resumed when Hyperscan
    /// has returned; the stream then answers [`HsError::Terminated`] until
    /// [`HsDatabase::reset`], and the scratch stays usable.
    pub fn scan(
        &self,
        stream: &mut HsStream,
        scratch: &mut HsScratch,
        data: &[u8],
        on_match: &mut dyn FnMut(u32, u64),
    ) -> Result<(), HsError> {
        self.owns(stream, scratch)?;
        let mut cx = MatchContext {
            on_match,
            panic: None,
        };
        // hs_scan_stream takes an `unsigned` length.
        for piece in data.chunks(c_uint::MAX as usize) {
            // SAFETY: the stream and scratch are live, made by this database
            // (checked above) and exclusively borrowed, so no other scan uses
            // them meanwhile; `piece` is valid for its length (which fits);
            // `on_event` has the match_event_handler signature, never unwinds,
            // and gets `cx`, which outlives the call and is not otherwise
            // touched until it returns.
            let rc = unsafe {
                (self.db.hs.fns.scan_stream)(
                    stream.ptr.as_ptr(),
                    piece.as_ptr().cast(),
                    piece.len() as c_uint,
                    0,
                    scratch.ptr.as_ptr(),
                    Some(on_event),
                    ptr::from_mut(&mut cx).cast(),
                )
            };
            if let Some(payload) = cx.panic.take() {
                resume_unwind(payload);
            }
            check("hs_scan_stream", rc)?;
        }
        Ok(())
    }

    /// Resets `stream` to its state when opened (`hs_reset_stream`): a
    /// partial match is forgotten and offsets count from 0 again, e.g.
    /// between UDP datagrams or after a gap. Nothing is reported.
    pub fn reset(&self, stream: &mut HsStream, scratch: &mut HsScratch) -> Result<(), HsError> {
        self.owns(stream, scratch)?;
        // SAFETY: the stream and scratch are live, made by this database and
        // exclusively borrowed; with no callback nothing is reported and the
        // context is NULL.
        check("hs_reset_stream", unsafe {
            (self.db.hs.fns.reset_stream)(
                stream.ptr.as_ptr(),
                0,
                scratch.ptr.as_ptr(),
                None,
                ptr::null_mut(),
            )
        })
    }

    /// The bytes of state of one open stream (`hs_stream_size`).
    pub fn stream_size(&self) -> usize {
        self.stream_size
    }

    /// The size of the compiled database in bytes (`hs_database_size`).
    pub fn memory(&self) -> usize {
        self.memory
    }
}

/// Hyperscan's working memory for one scan at a time
/// ([`HsDatabase::scratch`]); freed on drop (`hs_free_scratch`).
pub struct HsScratch {
    db: Arc<Db>,
    ptr: NonNull<RawScratch>,
}

// SAFETY: a scratch has no thread affinity; it may move to another thread.
// It is not Sync: every use goes through `&mut`, one scan at a time.
unsafe impl Send for HsScratch {}

impl std::fmt::Debug for HsScratch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HsScratch").finish_non_exhaustive()
    }
}

impl Drop for HsScratch {
    fn drop(&mut self) {
        // SAFETY: `ptr` came from hs_alloc_scratch and is freed once; no scan
        // is running (that would borrow `self`); the library is kept loaded
        // through `self.db`.
        unsafe { (self.db.hs.fns.free_scratch)(self.ptr.as_ptr()) };
    }
}

/// The matching state of one stream ([`HsDatabase::open_stream`]); closed on
/// drop without reporting anything (`hs_close_stream` with no scratch and no
/// callback).
pub struct HsStream {
    db: Arc<Db>,
    ptr: NonNull<RawStream>,
}

// SAFETY: a stream's state has no thread affinity: it may be scanned on
// another thread (with that thread's scratch). Every use goes through `&mut`.
unsafe impl Send for HsStream {}

impl std::fmt::Debug for HsStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HsStream").finish_non_exhaustive()
    }
}

impl Drop for HsStream {
    fn drop(&mut self) {
        // SAFETY: `ptr` came from hs_open_stream and is closed once; its
        // database is alive (`self.db`); a NULL scratch is allowed because the
        // callback is NULL too.
        unsafe {
            (self.db.hs.fns.close_stream)(self.ptr.as_ptr(), ptr::null_mut(), None, ptr::null_mut())
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use aho_corasick::{AhoCorasick, MatchKind};

    /// Says why a test does not run, straight to the process's stderr (the
    /// harness would hide `eprintln!` of a passing test).
    fn skip(reason: impl std::fmt::Display) {
        use std::io::Write;
        let _ = writeln!(std::io::stderr(), "skipping: {reason}");
    }

    fn hs() -> Option<Arc<Hyperscan>> {
        match Hyperscan::load() {
            Ok(hs) => Some(hs),
            Err(e) => {
                skip(e);
                None
            }
        }
    }

    type Pattern = (Vec<u8>, bool);

    fn pats(list: &[(&[u8], bool)]) -> Vec<Pattern> {
        list.iter().map(|&(p, c)| (p.to_vec(), c)).collect()
    }

    fn compile(hs: &Arc<Hyperscan>, patterns: &[Pattern]) -> HsDatabase {
        let refs: Vec<(&[u8], bool)> = patterns.iter().map(|(p, c)| (p.as_slice(), *c)).collect();
        HsDatabase::compile(hs, &refs).expect("compiles")
    }

    /// Every (pattern, end) by brute force, sorted.
    fn naive(patterns: &[Pattern], text: &[u8]) -> Vec<(u32, u64)> {
        let mut out = Vec::new();
        for (i, (p, nocase)) in patterns.iter().enumerate() {
            for end in p.len()..=text.len() {
                let w = &text[end - p.len()..end];
                if if *nocase {
                    w.eq_ignore_ascii_case(p)
                } else {
                    w == p.as_slice()
                } {
                    out.push((i as u32, end as u64));
                }
            }
        }
        out.sort_unstable();
        out
    }

    /// Scans `pieces` in order through one new stream; the matches, sorted.
    fn scan_pieces(db: &HsDatabase, scratch: &mut HsScratch, pieces: &[&[u8]]) -> Vec<(u32, u64)> {
        let mut stream = db.open_stream().expect("opens");
        let mut out = Vec::new();
        for piece in pieces {
            db.scan(&mut stream, scratch, piece, &mut |id, end| {
                out.push((id, end))
            })
            .expect("scans");
        }
        out.sort_unstable();
        out
    }

    fn byte_by_byte(text: &[u8]) -> Vec<&[u8]> {
        text.chunks(1).collect()
    }

    /// splitmix64.
    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = self.0;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            z ^ (z >> 31)
        }
        fn below(&mut self, n: usize) -> usize {
            (self.next() % n as u64) as usize
        }
    }

    #[test]
    fn loads_once_and_reports_its_version() {
        let Some(hs) = hs() else { return };
        assert!(hs.version().starts_with('5'), "{}", hs.version());
        assert!(LIBRARY_NAMES.contains(&hs.name()));
        let again = Hyperscan::load().expect("cached");
        assert!(Arc::ptr_eq(&hs, &again));
        assert!(format!("{hs:?}").contains(&hs.version()));
    }

    #[test]
    fn an_absent_library_is_a_clear_error() {
        match Hyperscan::load_from(&["libhs-absent.so.5", "/nonexistent/libhs.so"]) {
            Err(e @ HsError::NotFound(_)) => {
                let text = e.to_string();
                assert!(text.contains(PACKAGE), "{text}");
                assert!(text.contains("libhs-absent.so.5"), "{text}");
                assert!(text.contains("/nonexistent/libhs.so"), "{text}");
            }
            // A CPU without SSSE3 is refused before any library is opened.
            Err(HsError::Platform(_)) => {}
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_library_without_the_functions_is_refused() {
        match Hyperscan::load_from(&["libc.so.6"]) {
            Err(HsError::NotFound(text)) => assert!(text.contains("hs_version"), "{text}"),
            Err(HsError::Platform(_)) => {}
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_cpu_without_ssse3_is_refused() {
        assert_eq!(require_ssse3(true), Ok(()));
        let e = require_ssse3(false).unwrap_err();
        assert!(matches!(e, HsError::Platform(_)));
        assert!(e.to_string().contains("SSSE3"), "{e}");
    }

    #[test]
    fn the_environment_can_disable_it() {
        assert!(!disabled_by(None));
        assert!(!disabled_by(Some(OsStr::new(""))));
        assert!(!disabled_by(Some(OsStr::new("0"))));
        assert!(disabled_by(Some(OsStr::new("1"))));
        assert!(HsError::Disabled.to_string().contains(DISABLE_ENV));
    }

    #[test]
    fn matches_within_one_call() {
        let Some(hs) = hs() else { return };
        let p = pats(&[
            (b"abc", false),
            (b"bcd", false),
            (b"cd", false),
            (b"zz", false),
        ]);
        let db = compile(&hs, &p);
        assert_eq!(db.patterns(), 4);
        let mut scratch = db.scratch().unwrap();
        let got = scan_pieces(&db, &mut scratch, &[b"xabcdx"]);
        assert_eq!(got, vec![(0, 4), (1, 5), (2, 5)]);
        // Empty scans change nothing and offsets count across calls.
        let got = scan_pieces(&db, &mut scratch, &[b"", b"xab", b"", b"cdx"]);
        assert_eq!(got, vec![(0, 4), (1, 5), (2, 5)]);
    }

    #[test]
    fn matches_split_at_every_point_of_two_and_three_calls_and_byte_by_byte() {
        let Some(hs) = hs() else { return };
        let p = pats(&[
            (b"abab", false),
            (b"bab", false),
            (b"BABA", true),
            (b"aab", false),
            (b"ab\0a", false),
            (b"xyzXYZ", true),
            (b"q", false),
            (b"abababab", false),
        ]);
        let text: &[u8] = b"aababababXYZxyzxyzXyZab\0abab\0aqbabaBABAxx";
        let want = naive(&p, text);
        assert!(want.len() > 15, "{want:?}");
        let db = compile(&hs, &p);
        let mut scratch = db.scratch().unwrap();
        assert_eq!(scan_pieces(&db, &mut scratch, &[text]), want);
        assert_eq!(scan_pieces(&db, &mut scratch, &byte_by_byte(text)), want);
        for i in 0..=text.len() {
            let (a, b) = text.split_at(i);
            assert_eq!(
                scan_pieces(&db, &mut scratch, &[a, b]),
                want,
                "split at {i}"
            );
            for j in i..=text.len() {
                let pieces = [&text[..i], &text[i..j], &text[j..]];
                assert_eq!(
                    scan_pieces(&db, &mut scratch, &pieces),
                    want,
                    "split at {i}, {j}"
                );
            }
        }
    }

    #[test]
    fn caseless_and_exact_patterns() {
        let Some(hs) = hs() else { return };
        let p = pats(&[
            (b"GET", false),
            (b"host:", true),
            (b"Content-Length", false),
        ]);
        let text: &[u8] =
            b"get GET Get HOST: host: HoSt: content-length Content-Length CONTENT-LENGTH";
        let db = compile(&hs, &p);
        let mut scratch = db.scratch().unwrap();
        let want = naive(&p, text);
        assert_eq!(want.iter().filter(|m| m.0 == 0).count(), 1);
        assert_eq!(want.iter().filter(|m| m.0 == 1).count(), 3);
        assert_eq!(want.iter().filter(|m| m.0 == 2).count(), 1);
        assert_eq!(scan_pieces(&db, &mut scratch, &[text]), want);
        assert_eq!(scan_pieces(&db, &mut scratch, &byte_by_byte(text)), want);
    }

    #[test]
    fn patterns_with_nul_and_high_bytes() {
        let Some(hs) = hs() else { return };
        let p = pats(&[
            (b"\0\0\x01", false),
            (b"\xff\xfe\0", false),
            // Caseless is ASCII only: \xe9 matches only itself.
            (b"A\0b\xe9", true),
            (b"\x80\x81\x82\x83", false),
            (b"\0", false),
        ]);
        let text: &[u8] =
            b"\0\0\0\x01..\xff\xfe\0\xff\xfe\xfe\0 a\0B\xe9 a\0B\xc9 A\0b\xe9\x80\x81\x82\x83\x80\x81\x82";
        let want = naive(&p, text);
        let ids: Vec<u32> = want.iter().map(|m| m.0).collect();
        for id in 0..4 {
            assert!(ids.contains(&id), "pattern {id} occurs: {want:?}");
        }
        assert_eq!(want.iter().filter(|m| m.0 == 2).count(), 2);
        let db = compile(&hs, &p);
        let mut scratch = db.scratch().unwrap();
        assert_eq!(scan_pieces(&db, &mut scratch, &[text]), want);
        assert_eq!(scan_pieces(&db, &mut scratch, &byte_by_byte(text)), want);
    }

    #[test]
    fn ten_thousand_random_patterns_agree_with_aho_corasick() {
        let Some(hs) = hs() else { return };
        let mut rng = Rng(0x5eed);
        const SMALL: &[u8] = b"abcdeABCDE\0\xff";
        let byte = |rng: &mut Rng, small: bool| {
            if small {
                SMALL[rng.below(SMALL.len())]
            } else {
                rng.next() as u8
            }
        };
        let patterns: Vec<Pattern> = (0..10_000)
            .map(|i| {
                let len = 4 + rng.below(29);
                let small = i % 2 == 0;
                let p = (0..len).map(|_| byte(&mut rng, small)).collect();
                (p, rng.below(4) == 0)
            })
            .collect();
        let mut text: Vec<u8> = Vec::with_capacity(1 << 18);
        while text.len() < 1 << 18 {
            let small = rng.below(2) == 0;
            for _ in 0..64 {
                text.push(byte(&mut rng, small));
            }
        }
        for _ in 0..3000 {
            let (p, nocase) = &patterns[rng.below(patterns.len())];
            let at = rng.below(text.len() - p.len());
            for (k, &b) in p.iter().enumerate() {
                text[at + k] = if *nocase && rng.below(2) == 0 {
                    b.to_ascii_uppercase()
                } else {
                    b
                };
            }
        }
        let ac = AhoCorasick::builder()
            .match_kind(MatchKind::Standard)
            .ascii_case_insensitive(true)
            .build(patterns.iter().map(|(p, _)| p))
            .unwrap();
        let mut want: Vec<(u32, u64)> = ac
            .find_overlapping_iter(&text)
            .filter(|m| {
                let (p, nocase) = &patterns[m.pattern().as_usize()];
                *nocase || &text[m.range()] == p.as_slice()
            })
            .map(|m| (m.pattern().as_u32(), m.end() as u64))
            .collect();
        want.sort_unstable();
        assert!(want.len() > 3000, "{} matches", want.len());

        let db = compile(&hs, &patterns);
        let mut scratch = db.scratch().unwrap();
        assert_eq!(scan_pieces(&db, &mut scratch, &[&text]), want);
        let mss: Vec<&[u8]> = text.chunks(1460).collect();
        assert_eq!(scan_pieces(&db, &mut scratch, &mss), want);
        let mut pieces = Vec::new();
        let mut rest = text.as_slice();
        while !rest.is_empty() {
            let n = (1 + rng.below(3000)).min(rest.len());
            let (a, b) = rest.split_at(n);
            pieces.push(a);
            rest = b;
        }
        assert_eq!(scan_pieces(&db, &mut scratch, &pieces), want);
    }

    #[test]
    fn reset_forgets_a_partial_match_and_restarts_offsets() {
        let Some(hs) = hs() else { return };
        let db = compile(&hs, &pats(&[(b"abcdef", false)]));
        let mut scratch = db.scratch().unwrap();
        let mut stream = db.open_stream().unwrap();
        let mut found = Vec::new();
        db.scan(&mut stream, &mut scratch, b"xxabc", &mut |id, end| {
            found.push((id, end))
        })
        .unwrap();
        db.reset(&mut stream, &mut scratch).unwrap();
        db.scan(&mut stream, &mut scratch, b"def", &mut |id, end| {
            found.push((id, end))
        })
        .unwrap();
        assert!(found.is_empty(), "{found:?}");
        db.reset(&mut stream, &mut scratch).unwrap();
        for datagram in [&b"abc"[..], b"def"] {
            db.scan(&mut stream, &mut scratch, datagram, &mut |id, end| {
                found.push((id, end))
            })
            .unwrap();
        }
        assert_eq!(found, vec![(0, 6)]);
    }

    #[test]
    fn a_panic_in_the_callback_resumes_after_the_scan() {
        let Some(hs) = hs() else { return };
        let db = compile(&hs, &pats(&[(b"abc", false)]));
        let mut scratch = db.scratch().unwrap();
        let mut stream = db.open_stream().unwrap();
        let mut calls = Vec::new();
        let outcome = catch_unwind(AssertUnwindSafe(|| {
            db.scan(&mut stream, &mut scratch, b"abc abc abc", &mut |id, end| {
                calls.push((id, end));
                if calls.len() == 2 {
                    panic!("boom in on_match");
                }
            })
        }));
        let payload = outcome.expect_err("the panic reaches the caller");
        assert_eq!(payload.downcast_ref::<&str>(), Some(&"boom in on_match"));
        // The scan stopped at the panic.
        assert_eq!(calls, vec![(0, 3), (0, 7)]);
        // The stream stays stopped until it is reset; the scratch is usable.
        let mut more = Vec::new();
        assert_eq!(
            db.scan(&mut stream, &mut scratch, b"abc", &mut |id, end| more
                .push((id, end))),
            Err(HsError::Terminated)
        );
        assert!(more.is_empty());
        let mut other = db.open_stream().unwrap();
        db.scan(&mut other, &mut scratch, b"abc", &mut |id, end| {
            more.push((id, end))
        })
        .unwrap();
        assert_eq!(more, vec![(0, 3)]);
        db.reset(&mut stream, &mut scratch).unwrap();
        db.scan(&mut stream, &mut scratch, b"zabc", &mut |id, end| {
            more.push((id, end))
        })
        .unwrap();
        assert_eq!(more, vec![(0, 3), (0, 4)]);
        // A stream dropped while stopped is closed without a callback.
        let mut stopped = db.open_stream().unwrap();
        let _ = catch_unwind(AssertUnwindSafe(|| {
            db.scan(&mut stopped, &mut scratch, b"abc", &mut |_, _| {
                panic!("again")
            })
        }));
        drop(stopped);
        drop(scratch);
    }

    #[test]
    fn two_threads_share_one_database() {
        let Some(hs) = hs() else { return };
        fn assert_send_sync<T: Send + Sync>() {}
        fn assert_send<T: Send>() {}
        assert_send_sync::<HsDatabase>();
        assert_send::<HsScratch>();
        assert_send::<HsStream>();
        let p = pats(&[(b"needle", false), (b"HAY", true), (b"dle ne", false)]);
        let db = compile(&hs, &p);
        let text: Vec<u8> = b"hay needle Hay needle needle hAy ".repeat(200);
        let want = naive(&p, &text);
        std::thread::scope(|s| {
            for t in 0..2usize {
                let (db, text, want) = (&db, &text, &want);
                s.spawn(move || {
                    let mut scratch = db.scratch().unwrap();
                    for round in 0..40 {
                        let size = 1 + (round * 7 + t * 13) % 97;
                        let pieces: Vec<&[u8]> = text.chunks(size).collect();
                        assert_eq!(&scan_pieces(db, &mut scratch, &pieces), want, "size {size}");
                    }
                });
            }
        });
        // One stream moves between threads, each scanning with its own scratch.
        let mut stream = db.open_stream().unwrap();
        let (a, b) = text.split_at(text.len() / 2 + 3);
        let mut found = Vec::new();
        for half in [a, b] {
            let (db, stream_ref) = (&db, &mut stream);
            let part = std::thread::scope(|s| {
                s.spawn(move || {
                    let mut scratch = db.scratch().unwrap();
                    let mut part = Vec::new();
                    db.scan(stream_ref, &mut scratch, half, &mut |id, end| {
                        part.push((id, end))
                    })
                    .unwrap();
                    part
                })
                .join()
                .unwrap()
            });
            found.extend(part);
        }
        found.sort_unstable();
        assert_eq!(found, want);
    }

    #[test]
    fn streams_and_scratch_of_another_database_are_refused() {
        let Some(hs) = hs() else { return };
        let one = compile(&hs, &pats(&[(b"abc", false)]));
        let two = compile(&hs, &pats(&[(b"abc", false), (b"def", true)]));
        let (mut s1, mut x1) = (one.open_stream().unwrap(), one.scratch().unwrap());
        let (mut s2, mut x2) = (two.open_stream().unwrap(), two.scratch().unwrap());
        let mut nothing = |_: u32, _: u64| {};
        assert_eq!(
            one.scan(&mut s2, &mut x1, b"abc", &mut nothing),
            Err(HsError::WrongDatabase)
        );
        assert_eq!(
            one.scan(&mut s1, &mut x2, b"abc", &mut nothing),
            Err(HsError::WrongDatabase)
        );
        assert_eq!(two.reset(&mut s1, &mut x2), Err(HsError::WrongDatabase));
        // A clone is the same database.
        let again = one.clone();
        assert_eq!(again.scan(&mut s1, &mut x1, b"abc", &mut nothing), Ok(()));
    }

    #[test]
    fn empty_lists_and_empty_patterns_are_errors() {
        let Some(hs) = hs() else { return };
        assert_eq!(
            HsDatabase::compile(&hs, &[]).unwrap_err(),
            HsError::NoPatterns
        );
        let e = HsDatabase::compile(&hs, &[(b"abc", false), (b"", true)]).unwrap_err();
        assert_eq!(
            e,
            HsError::Compile {
                pattern: Some(1),
                message: "empty pattern".into()
            }
        );
        assert_eq!(e.to_string(), "cannot compile pattern 1: empty pattern");
        // Hyperscan's own compile error, copied out and freed: a flag that
        // literals do not take (HS_FLAG_DOTALL) on the second pattern.
        let e = HsDatabase::compile_flags(&hs, &[(b"abc", false), (b"def", false)], &[0, 2])
            .unwrap_err();
        match &e {
            HsError::Compile { pattern, message } => {
                assert_eq!(*pattern, Some(1), "{e}");
                assert!(!message.is_empty());
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn sizes_are_reported() {
        let Some(hs) = hs() else { return };
        let db = compile(&hs, &pats(&[(b"abcdef", false), (b"xyz", true)]));
        assert!(
            db.stream_size() > 0 && db.stream_size() < 4096,
            "{}",
            db.stream_size()
        );
        assert!(db.memory() > 0, "{}", db.memory());
        assert!(format!("{db:?}").contains("stream_size"));
    }

    #[test]
    fn handles_keep_the_database_and_library_alive() {
        let Some(_) = hs() else { return };
        // An uncached library: it is closed when its last handle goes.
        let hs = Hyperscan::load_from(&LIBRARY_NAMES).expect("loads when load() does");
        let db = compile(&hs, &pats(&[(b"abcdef", false)]));
        let mut scratch = db.scratch().unwrap();
        let mut stream = db.open_stream().unwrap();
        let mut found = Vec::new();
        db.scan(&mut stream, &mut scratch, b"abc", &mut |id, end| {
            found.push((id, end))
        })
        .unwrap();
        let scanner = db.clone();
        drop(hs);
        drop(db);
        scanner
            .scan(&mut stream, &mut scratch, b"def", &mut |id, end| {
                found.push((id, end))
            })
            .unwrap();
        assert_eq!(found, vec![(0, 6)]);
        drop(scanner);
        // The stream and scratch outlive every database handle and the library
        // handle; they still close and free through the library they hold.
        drop(scratch);
        drop(stream);
    }
}
