//! tcpdump-syntax expressions through libpcap's compiler and the BPF
//! validator: whatever libpcap compiles, the validator accepts, and the
//! program runs on a frame without panicking. Without libpcap, nothing runs.
use std::sync::OnceLock;
use streamcap::filter::bpf::Program;
use streamcap::filter::libpcap::Libpcap;

/// DLT values tried: Ethernet, raw IP, Linux SLL.
const DLTS: [i32; 3] = [1, 12, 113];

/// A TCP/IPv4 frame to run the programs on.
const FRAME: [u8; 54] = [
    0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 0x08, 0x00, // Ethernet
    0x45, 0, 0, 40, 0, 1, 0x40, 0, 64, 6, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2, // IPv4
    0x04, 0xd2, 0, 80, 0, 0, 0, 1, 0, 0, 0, 0, 0x50, 0x02, 0xff, 0xff, 0, 0, 0, 0, // TCP
];

fn lib() -> Option<&'static Libpcap> {
    static LIB: OnceLock<Option<Libpcap>> = OnceLock::new();
    LIB.get_or_init(|| Libpcap::load().ok()).as_ref()
}

/// Runs the checks on one input (panics on a violation).
pub fn run(data: &[u8]) {
    let Some(lib) = lib() else {
        return;
    };
    let Some((&sel, expr)) = data.split_first() else {
        return;
    };
    let expr = String::from_utf8_lossy(expr);
    if expr.len() > 256 || expr.contains('\0') {
        return;
    }
    let dlt = DLTS[usize::from(sel) % DLTS.len()];
    if let Ok(insns) = lib.compile(&expr, dlt, 262_144) {
        let p = match Program::new(insns) {
            Ok(p) => p,
            Err(e) => panic!("libpcap compiled {expr:?} to a program the validator refuses: {e}"),
        };
        let _ = p.run(&FRAME, FRAME.len() as u32);
    }
}
