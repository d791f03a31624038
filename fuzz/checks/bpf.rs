//! The classic-BPF interpreter on arbitrary programs and packets: a program
//! that passes validation runs to completion on any packet without panicking.
use streamcap::filter::bpf::{Insn, Program};

/// Runs the checks on one input (panics on a violation).
pub fn run(data: &[u8]) {
    let Some((&n, rest)) = data.split_first() else {
        return;
    };
    let n = usize::from(n % 64) + 1;
    if rest.len() < n * 8 {
        return;
    }
    let (code, pkt) = rest.split_at(n * 8);
    let insns = code
        .chunks_exact(8)
        .map(|c| {
            Insn::new(
                u16::from_le_bytes([c[0], c[1]]),
                c[2],
                c[3],
                u32::from_le_bytes([c[4], c[5], c[6], c[7]]),
            )
        })
        .collect();
    if let Ok(p) = Program::new(insns) {
        let _ = p.run(pkt, pkt.len() as u32 + u32::from(n as u8));
    }
}
