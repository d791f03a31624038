//! libpcap's filter compiler, loaded at run time.
//!
//! `libpcap.so.0.8`, `libpcap.so.1` or `libpcap.so` is opened with
//! [`libloading`]; an expression is compiled with `pcap_open_dead` +
//! `pcap_compile` and the instructions are copied out of the `bpf_program`
//! before `pcap_freecode` / `pcap_close`. Nothing from libpcap is kept after a
//! compilation except the copied instructions, which [`super::bpf`] runs.
#![allow(unsafe_code)]

use super::bpf::Insn;
use libloading::Library;
use std::ffi::{c_char, c_int, c_uint, c_void, CStr, CString};
use std::sync::Mutex;

/// Library names tried in order.
pub const LIBRARY_NAMES: [&str; 3] = ["libpcap.so.0.8", "libpcap.so.1", "libpcap.so"];

/// `PCAP_NETMASK_UNKNOWN`.
const NETMASK_UNKNOWN: c_uint = 0xffff_ffff;

/// `struct bpf_program`.
#[repr(C)]
struct BpfProgram {
    bf_len: c_uint,
    bf_insns: *mut RawInsn,
}

/// `struct bpf_insn`.
#[repr(C)]
#[derive(Copy, Clone)]
struct RawInsn {
    code: u16,
    jt: u8,
    jf: u8,
    k: u32,
}

type OpenDeadFn = unsafe extern "C" fn(c_int, c_int) -> *mut c_void;
type CompileFn =
    unsafe extern "C" fn(*mut c_void, *mut BpfProgram, *const c_char, c_int, c_uint) -> c_int;
type FreecodeFn = unsafe extern "C" fn(*mut BpfProgram);
type CloseFn = unsafe extern "C" fn(*mut c_void);
type GeterrFn = unsafe extern "C" fn(*mut c_void) -> *const c_char;
type OfflineFilterFn = unsafe extern "C" fn(*const BpfProgram, *const PktHdr, *const u8) -> c_int;

/// `struct pcap_pkthdr`.
#[repr(C)]
struct PktHdr {
    ts: libc::timeval,
    caplen: u32,
    len: u32,
}

/// `pcap_compile` is not reentrant in older libpcap versions.
static COMPILE_LOCK: Mutex<()> = Mutex::new(());

/// A loaded libpcap.
pub struct Libpcap {
    lib: Library,
    name: &'static str,
}

impl std::fmt::Debug for Libpcap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Libpcap").field("name", &self.name).finish()
    }
}

impl Libpcap {
    /// Opens the first of [`LIBRARY_NAMES`] that loads and has the needed symbols.
    pub fn load() -> Result<Libpcap, String> {
        let mut errors = Vec::new();
        for name in LIBRARY_NAMES {
            // SAFETY: loading libpcap runs its ELF initialisers, which only set
            // up internal tables; libpcap is a well-known system library whose
            // initialisation has no preconditions on the calling program.
            match unsafe { Library::new(name) } {
                Ok(lib) => {
                    let p = Libpcap { lib, name };
                    match p.check_symbols() {
                        Ok(()) => return Ok(p),
                        Err(e) => errors.push(format!("{name}: {e}")),
                    }
                }
                Err(e) => errors.push(e.to_string()),
            }
        }
        Err(errors.join("; "))
    }

    /// The file name that was loaded.
    pub fn name(&self) -> &'static str {
        self.name
    }

    fn check_symbols(&self) -> Result<(), libloading::Error> {
        // SAFETY: the symbol types match the prototypes in <pcap/pcap.h>; the
        // symbols are only looked up here, not called.
        unsafe {
            self.lib.get::<OpenDeadFn>(b"pcap_open_dead\0")?;
            self.lib.get::<CompileFn>(b"pcap_compile\0")?;
            self.lib.get::<FreecodeFn>(b"pcap_freecode\0")?;
            self.lib.get::<CloseFn>(b"pcap_close\0")?;
            self.lib.get::<GeterrFn>(b"pcap_geterr\0")?;
        }
        Ok(())
    }

    /// Compiles `expr` for the libpcap link type `dlt` (a DLT_ value) and
    /// returns the instructions, or libpcap's error text.
    pub fn compile(&self, expr: &str, dlt: i32, snaplen: i32) -> Result<Vec<Insn>, String> {
        let cexpr = CString::new(expr)
            .map_err(|_| "the filter expression contains a NUL byte".to_string())?;
        let _guard = COMPILE_LOCK.lock().unwrap_or_else(|e| e.into_inner());
        // SAFETY: the function types match the prototypes in <pcap/pcap.h>
        // (pcap_open_dead(int, int) -> pcap_t*, pcap_compile(pcap_t*, struct
        // bpf_program*, const char*, int, bpf_u_int32) -> int, pcap_freecode(struct
        // bpf_program*), pcap_close(pcap_t*), pcap_geterr(pcap_t*) -> char*), and
        // the library stays loaded (`self.lib`) while the symbols are used.
        let (open_dead, compile, freecode, close, geterr) = unsafe {
            (
                *self
                    .lib
                    .get::<OpenDeadFn>(b"pcap_open_dead\0")
                    .map_err(|e| e.to_string())?,
                *self
                    .lib
                    .get::<CompileFn>(b"pcap_compile\0")
                    .map_err(|e| e.to_string())?,
                *self
                    .lib
                    .get::<FreecodeFn>(b"pcap_freecode\0")
                    .map_err(|e| e.to_string())?,
                *self
                    .lib
                    .get::<CloseFn>(b"pcap_close\0")
                    .map_err(|e| e.to_string())?,
                *self
                    .lib
                    .get::<GeterrFn>(b"pcap_geterr\0")
                    .map_err(|e| e.to_string())?,
            )
        };
        // SAFETY: pcap_open_dead takes two plain integers and returns an owned
        // handle or NULL; NULL is checked before any other use.
        let handle = unsafe { open_dead(dlt as c_int, snaplen as c_int) };
        if handle.is_null() {
            return Err(format!("pcap_open_dead failed for link type {dlt}"));
        }
        let mut prog = BpfProgram {
            bf_len: 0,
            bf_insns: std::ptr::null_mut(),
        };
        // SAFETY: `handle` is a live pcap_t from pcap_open_dead; `prog` is a valid
        // bpf_program to fill; `cexpr` is NUL-terminated and outlives the call.
        let rc = unsafe { compile(handle, &mut prog, cexpr.as_ptr(), 1, NETMASK_UNKNOWN) };
        let result = if rc != 0 {
            // SAFETY: `handle` is live; pcap_geterr returns a pointer to the
            // handle's NUL-terminated error buffer (or NULL), copied out at once,
            // before the handle is closed.
            let msg = unsafe {
                let p = geterr(handle);
                if p.is_null() {
                    String::from("unknown pcap_compile error")
                } else {
                    CStr::from_ptr(p).to_string_lossy().into_owned()
                }
            };
            Err(msg)
        } else {
            let n = prog.bf_len as usize;
            let insns = if n == 0 || prog.bf_insns.is_null() {
                Vec::new()
            } else {
                // SAFETY: on success pcap_compile set `bf_insns` to an array of
                // `bf_len` initialised bpf_insn structs (layout = RawInsn, repr(C)),
                // valid until pcap_freecode; it is copied before that.
                unsafe { std::slice::from_raw_parts(prog.bf_insns, n) }
                    .iter()
                    .map(|r| Insn::new(r.code, r.jt, r.jf, r.k))
                    .collect()
            };
            // SAFETY: `prog` was filled by a successful pcap_compile and is freed once.
            unsafe { freecode(&mut prog) };
            Ok(insns)
        };
        // SAFETY: `handle` came from pcap_open_dead, is closed exactly once, and
        // nothing borrowed from it (the error text) is used afterwards.
        unsafe { close(handle) };
        result
    }
}

impl Libpcap {
    /// Runs `program` on `frame` with libpcap's own interpreter
    /// (`pcap_offline_filter`), the frame's wire length being `wire_len`:
    /// the program's return value (0 rejects). The reference the other
    /// interpreters of cBPF are tested against.
    pub fn offline_filter(
        &self,
        program: &[Insn],
        frame: &[u8],
        wire_len: u32,
    ) -> Result<u32, String> {
        // SAFETY: the type matches the prototype in <pcap/pcap.h>
        // (pcap_offline_filter(const struct bpf_program *, const struct
        // pcap_pkthdr *, const u_char *) -> int); the library stays loaded
        // (`self.lib`) during the call.
        let filter = unsafe {
            *self
                .lib
                .get::<OfflineFilterFn>(b"pcap_offline_filter\0")
                .map_err(|e| e.to_string())?
        };
        let mut raw: Vec<RawInsn> = program
            .iter()
            .map(|i| RawInsn {
                code: i.code,
                jt: i.jt,
                jf: i.jf,
                k: i.k,
            })
            .collect();
        let prog = BpfProgram {
            bf_len: c_uint::try_from(raw.len())
                .map_err(|_| "the program is too long".to_string())?,
            bf_insns: raw.as_mut_ptr(),
        };
        let hdr = PktHdr {
            ts: libc::timeval {
                tv_sec: 0,
                tv_usec: 0,
            },
            caplen: u32::try_from(frame.len()).map_err(|_| "the frame is too long".to_string())?,
            len: wire_len,
        };
        // SAFETY: `prog` points at `bf_len` initialised repr(C) bpf_insn
        // structs in `raw`, `hdr` is a valid pcap_pkthdr whose caplen is the
        // length of `frame`; all outlive the call, which only reads them.
        let r = unsafe { filter(&prog, &hdr, frame.as_ptr()) };
        Ok(r as u32)
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::filter::bpf::Program;

    fn lib() -> Option<Libpcap> {
        match Libpcap::load() {
            Ok(l) => Some(l),
            Err(e) => {
                crate::skip(format!("libpcap not available ({e})"));
                None
            }
        }
    }

    /// An Ethernet + IPv4 + TCP frame with no payload.
    pub(crate) fn eth_tcp(sport: u16, dport: u16) -> Vec<u8> {
        let mut f = vec![0u8; 54];
        f[12] = 0x08;
        f[14] = 0x45;
        f[16..18].copy_from_slice(&40u16.to_be_bytes());
        f[22] = 64;
        f[23] = 6;
        f[26..30].copy_from_slice(&[10, 0, 0, 1]);
        f[30..34].copy_from_slice(&[10, 0, 0, 2]);
        f[34..36].copy_from_slice(&sport.to_be_bytes());
        f[36..38].copy_from_slice(&dport.to_be_bytes());
        f[46] = 0x50;
        f
    }

    #[test]
    fn compiles_tcp_port_80() {
        let Some(l) = lib() else { return };
        let insns = l.compile("tcp port 80", 1, 262_144).expect("compiles");
        assert!(!insns.is_empty());
        let p = Program::new(insns).expect("libpcap emits valid programs");
        assert!(p.len() > 1, "instruction count {}", p.len());
        assert!(p.matches(&eth_tcp(1234, 80), 54));
        assert!(p.matches(&eth_tcp(80, 1234), 54));
        assert!(!p.matches(&eth_tcp(1234, 81), 54));
        let mut udp = eth_tcp(1234, 80);
        udp[23] = 17;
        assert!(!p.matches(&udp, 54));
        // Host filter with indirect loads, on the same frame.
        let h = Program::new(l.compile("host 10.0.0.2 and tcp", 1, 65535).unwrap()).unwrap();
        assert!(h.matches(&eth_tcp(1, 2), 54));
    }

    #[test]
    fn reports_compile_errors() {
        let Some(l) = lib() else { return };
        let e = l.compile("tcp port 80 and and", 1, 262_144).unwrap_err();
        assert!(e.contains("syntax error"), "{e}");
        let e = l.compile("port 99999999", 1, 262_144).unwrap_err();
        assert!(e.contains("port"), "{e}");
        let e = l.compile("a\0b", 1, 100).unwrap_err();
        assert!(e.contains("NUL"), "{e}");
    }
}
