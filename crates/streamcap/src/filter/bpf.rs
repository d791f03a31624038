//! A small, safe interpreter for classic BPF (cBPF) programs, the kind
//! libpcap's `pcap_compile` produces.
//!
//! Semantics follow the BSD/Linux `bpf_filter`: 32-bit accumulator `A`, index
//! register `X`, 16 words of scratch memory, big-endian packet loads. A load
//! outside the captured bytes, or a division by a zero `X`, ends the program
//! with 0 (no match), like the kernel. Programs are validated once
//! ([`Program::new`]): known opcodes only, forward jumps inside the program,
//! scratch indices below 16, no constant division by zero, a final return.

use std::fmt;

/// One cBPF instruction (`struct bpf_insn`).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct Insn {
    /// Opcode.
    pub code: u16,
    /// Jump offset if true.
    pub jt: u8,
    /// Jump offset if false.
    pub jf: u8,
    /// Generic field (constant, offset, scratch index).
    pub k: u32,
}

impl Insn {
    /// Builds an instruction.
    pub const fn new(code: u16, jt: u8, jf: u8, k: u32) -> Insn {
        Insn { code, jt, jf, k }
    }
}

/// Opcode fields (from `<pcap/bpf.h>`).
#[allow(missing_docs)]
pub mod op {
    // classes
    pub const LD: u16 = 0x00;
    pub const LDX: u16 = 0x01;
    pub const ST: u16 = 0x02;
    pub const STX: u16 = 0x03;
    pub const ALU: u16 = 0x04;
    pub const JMP: u16 = 0x05;
    pub const RET: u16 = 0x06;
    pub const MISC: u16 = 0x07;
    // ld/ldx sizes
    pub const W: u16 = 0x00;
    pub const H: u16 = 0x08;
    pub const B: u16 = 0x10;
    // ld/ldx modes
    pub const IMM: u16 = 0x00;
    pub const ABS: u16 = 0x20;
    pub const IND: u16 = 0x40;
    pub const MEM: u16 = 0x60;
    pub const LEN: u16 = 0x80;
    pub const MSH: u16 = 0xa0;
    // alu ops
    pub const ADD: u16 = 0x00;
    pub const SUB: u16 = 0x10;
    pub const MUL: u16 = 0x20;
    pub const DIV: u16 = 0x30;
    pub const OR: u16 = 0x40;
    pub const AND: u16 = 0x50;
    pub const LSH: u16 = 0x60;
    pub const RSH: u16 = 0x70;
    pub const NEG: u16 = 0x80;
    pub const MOD: u16 = 0x90;
    pub const XOR: u16 = 0xa0;
    // jmp ops
    pub const JA: u16 = 0x00;
    pub const JEQ: u16 = 0x10;
    pub const JGT: u16 = 0x20;
    pub const JGE: u16 = 0x30;
    pub const JSET: u16 = 0x40;
    // sources
    pub const K: u16 = 0x00;
    pub const X: u16 = 0x08;
    // ret sources
    pub const A: u16 = 0x10;
    // misc
    pub const TAX: u16 = 0x00;
    pub const TXA: u16 = 0x80;
}

/// Scratch memory words (`BPF_MEMWORDS`).
pub const MEMWORDS: u32 = 16;
/// Longest program accepted (`BPF_MAXINSNS`).
pub const MAX_INSNS: usize = 4096;

/// Why a program was refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InvalidProgram {
    /// Index of the offending instruction.
    pub pc: usize,
    /// What is wrong with it.
    pub reason: &'static str,
}

impl fmt::Display for InvalidProgram {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "invalid BPF program at instruction {}: {}",
            self.pc, self.reason
        )
    }
}

impl std::error::Error for InvalidProgram {}

/// A validated cBPF program.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Program {
    insns: Vec<Insn>,
}

fn class(code: u16) -> u16 {
    code & 0x07
}

impl Program {
    /// Validates `insns`.
    pub fn new(insns: Vec<Insn>) -> Result<Program, InvalidProgram> {
        let bad = |pc, reason| Err(InvalidProgram { pc, reason });
        if insns.is_empty() {
            return bad(0, "empty program");
        }
        if insns.len() > MAX_INSNS {
            return bad(MAX_INSNS, "program too long");
        }
        let n = insns.len();
        for (pc, i) in insns.iter().enumerate() {
            let code = i.code;
            if code > 0xff {
                return bad(pc, "unknown opcode");
            }
            let ok = match class(code) {
                op::LD => {
                    let size = code & 0x18;
                    match code & 0xe0 {
                        op::ABS | op::IND => matches!(size, op::W | op::H | op::B),
                        op::IMM | op::LEN => size == op::W,
                        op::MEM => {
                            if i.k >= MEMWORDS {
                                return bad(pc, "scratch memory index out of range");
                            }
                            size == op::W
                        }
                        _ => false,
                    }
                }
                op::LDX => match code & 0xe0 {
                    op::IMM | op::LEN => code & 0x18 == op::W,
                    op::MEM => {
                        if i.k >= MEMWORDS {
                            return bad(pc, "scratch memory index out of range");
                        }
                        code & 0x18 == op::W
                    }
                    op::MSH => code & 0x18 == op::B,
                    _ => false,
                },
                op::ST | op::STX => {
                    if i.k >= MEMWORDS {
                        return bad(pc, "scratch memory index out of range");
                    }
                    code & !0x07 == 0
                }
                op::ALU => {
                    let alu = code & 0xf0;
                    let src = code & 0x08;
                    if code & !0xff != 0 {
                        false
                    } else if alu == op::NEG {
                        src == 0
                    } else if alu > op::XOR {
                        false
                    } else {
                        if src == op::K && (alu == op::DIV || alu == op::MOD) && i.k == 0 {
                            return bad(pc, "division by constant zero");
                        }
                        if src == op::K && (alu == op::LSH || alu == op::RSH) && i.k >= 32 {
                            return bad(pc, "shift by 32 or more");
                        }
                        true
                    }
                }
                op::JMP => {
                    let j = code & 0xf0;
                    if code & !0xff != 0 || j > op::JSET {
                        false
                    } else if j == op::JA {
                        if code & 0x08 != 0 {
                            false
                        } else if (i.k as u64) >= (n - pc - 1) as u64 {
                            return bad(pc, "jump out of the program");
                        } else {
                            true
                        }
                    } else {
                        if pc + 1 + i.jt as usize >= n || pc + 1 + i.jf as usize >= n {
                            return bad(pc, "jump out of the program");
                        }
                        true
                    }
                }
                op::RET => matches!(code & !0x07, op::K | op::A) && code & 0x07 == op::RET,
                op::MISC => matches!(code & !0x07, op::TAX | op::TXA),
                _ => false,
            };
            if !ok {
                return bad(pc, "unknown opcode");
            }
        }
        if class(insns[n - 1].code) != op::RET {
            return bad(n - 1, "the program does not end with a return");
        }
        Ok(Program { insns })
    }

    /// The instructions.
    pub fn insns(&self) -> &[Insn] {
        &self.insns
    }

    /// Number of instructions.
    pub fn len(&self) -> usize {
        self.insns.len()
    }

    /// Whether the program is empty (never true for a validated program).
    pub fn is_empty(&self) -> bool {
        self.insns.is_empty()
    }

    /// Whether the program accepts `pkt` (returns non-zero).
    pub fn matches(&self, pkt: &[u8], wire_len: u32) -> bool {
        self.run(pkt, wire_len) != 0
    }

    /// Runs the program on the captured bytes `pkt` of a frame of `wire_len`
    /// bytes on the wire; returns the program's return value (0 = reject).
    pub fn run(&self, pkt: &[u8], wire_len: u32) -> u32 {
        let mut a: u32 = 0;
        let mut x: u32 = 0;
        let mut mem = [0u32; MEMWORDS as usize];
        let mut pc = 0usize;
        while let Some(i) = self.insns.get(pc) {
            pc += 1;
            let code = i.code;
            match class(code) {
                op::LD => {
                    a = match code & 0xe0 {
                        op::IMM => i.k,
                        op::LEN => wire_len,
                        op::MEM => mem[(i.k & 0x0f) as usize],
                        mode => {
                            let base = if mode == op::IND {
                                match x.checked_add(i.k) {
                                    Some(v) => v,
                                    None => return 0,
                                }
                            } else {
                                i.k
                            };
                            match load(pkt, base, code & 0x18) {
                                Some(v) => v,
                                None => return 0,
                            }
                        }
                    }
                }
                op::LDX => {
                    x = match code & 0xe0 {
                        op::IMM => i.k,
                        op::LEN => wire_len,
                        op::MEM => mem[(i.k & 0x0f) as usize],
                        _ => match pkt.get(i.k as usize) {
                            // MSH: 4 * (low nibble of the byte): an IPv4 header length.
                            Some(b) => u32::from(b & 0x0f) << 2,
                            None => return 0,
                        },
                    }
                }
                op::ST => mem[(i.k & 0x0f) as usize] = a,
                op::STX => mem[(i.k & 0x0f) as usize] = x,
                op::ALU => {
                    let v = if code & 0x08 == op::X { x } else { i.k };
                    a = match code & 0xf0 {
                        op::ADD => a.wrapping_add(v),
                        op::SUB => a.wrapping_sub(v),
                        op::MUL => a.wrapping_mul(v),
                        op::DIV => match a.checked_div(v) {
                            Some(r) => r,
                            None => return 0,
                        },
                        op::MOD => match a.checked_rem(v) {
                            Some(r) => r,
                            None => return 0,
                        },
                        op::OR => a | v,
                        op::AND => a & v,
                        op::LSH => a.checked_shl(v).unwrap_or(0),
                        op::RSH => a.checked_shr(v).unwrap_or(0),
                        op::NEG => a.wrapping_neg(),
                        _ => a ^ v,
                    }
                }
                op::JMP => {
                    let j = code & 0xf0;
                    if j == op::JA {
                        pc = pc.saturating_add(i.k as usize);
                        continue;
                    }
                    let v = if code & 0x08 == op::X { x } else { i.k };
                    let cond = match j {
                        op::JEQ => a == v,
                        op::JGT => a > v,
                        op::JGE => a >= v,
                        _ => a & v != 0,
                    };
                    pc += usize::from(if cond { i.jt } else { i.jf });
                }
                op::RET => {
                    return if code & 0x18 == op::A { a } else { i.k };
                }
                _ => {
                    if code & 0xf8 == op::TXA {
                        a = x;
                    } else {
                        x = a;
                    }
                }
            }
        }
        0
    }
}

fn load(pkt: &[u8], off: u32, size: u16) -> Option<u32> {
    let off = off as usize;
    match size {
        op::W => {
            let b = pkt.get(off..off.checked_add(4)?)?;
            Some(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
        }
        op::H => {
            let b = pkt.get(off..off.checked_add(2)?)?;
            Some(u32::from(u16::from_be_bytes([b[0], b[1]])))
        }
        _ => pkt.get(off).map(|&b| u32::from(b)),
    }
}

#[cfg(test)]
mod tests {
    use super::op::*;
    use super::*;

    fn prog(v: &[(u16, u8, u8, u32)]) -> Program {
        Program::new(
            v.iter()
                .map(|&(c, t, f, k)| Insn::new(c, t, f, k))
                .collect(),
        )
        .unwrap()
    }

    fn invalid(v: &[(u16, u8, u8, u32)]) -> InvalidProgram {
        Program::new(
            v.iter()
                .map(|&(c, t, f, k)| Insn::new(c, t, f, k))
                .collect(),
        )
        .unwrap_err()
    }

    const PKT: [u8; 8] = [0x12, 0x34, 0x56, 0x78, 0x9a, 0x45, 0x00, 0xff];

    #[test]
    fn loads_absolute_indirect_len_imm() {
        assert_eq!(
            prog(&[(LD | W | ABS, 0, 0, 0), (RET | A, 0, 0, 0)]).run(&PKT, 100),
            0x1234_5678
        );
        assert_eq!(
            prog(&[(LD | H | ABS, 0, 0, 2), (RET | A, 0, 0, 0)]).run(&PKT, 100),
            0x5678
        );
        assert_eq!(
            prog(&[(LD | B | ABS, 0, 0, 4), (RET | A, 0, 0, 0)]).run(&PKT, 100),
            0x9a
        );
        let ind = prog(&[
            (LDX | IMM, 0, 0, 3),
            (LD | H | IND, 0, 0, 1),
            (RET | A, 0, 0, 0),
        ]);
        assert_eq!(ind.run(&PKT, 100), 0x9a45);
        let ind_w = prog(&[
            (LDX | IMM, 0, 0, 2),
            (LD | W | IND, 0, 0, 0),
            (RET | A, 0, 0, 0),
        ]);
        assert_eq!(ind_w.run(&PKT, 100), 0x5678_9a45);
        let ind_b = prog(&[
            (LDX | IMM, 0, 0, 6),
            (LD | B | IND, 0, 0, 1),
            (RET | A, 0, 0, 0),
        ]);
        assert_eq!(ind_b.run(&PKT, 100), 0xff);
        assert_eq!(
            prog(&[(LD | W | LEN, 0, 0, 0), (RET | A, 0, 0, 0)]).run(&PKT, 1514),
            1514
        );
        assert_eq!(
            prog(&[(LD | IMM, 0, 0, 77), (RET | A, 0, 0, 0)]).run(&PKT, 1),
            77
        );
        let ldx_len = prog(&[
            (LDX | W | LEN, 0, 0, 0),
            (MISC | TXA, 0, 0, 0),
            (RET | A, 0, 0, 0),
        ]);
        assert_eq!(ldx_len.run(&PKT, 60), 60);
        // MSH: 4 * (0x45 & 0xf) = 20.
        let msh = prog(&[
            (LDX | B | MSH, 0, 0, 5),
            (MISC | TXA, 0, 0, 0),
            (RET | A, 0, 0, 0),
        ]);
        assert_eq!(msh.run(&PKT, 60), 20);
    }

    #[test]
    fn out_of_bounds_loads_reject() {
        for p in [
            prog(&[(LD | W | ABS, 0, 0, 5), (RET | K, 0, 0, 1)]),
            prog(&[(LD | H | ABS, 0, 0, 7), (RET | K, 0, 0, 1)]),
            prog(&[(LD | B | ABS, 0, 0, 8), (RET | K, 0, 0, 1)]),
            prog(&[(LD | B | ABS, 0, 0, u32::MAX), (RET | K, 0, 0, 1)]),
            prog(&[
                (LDX | IMM, 0, 0, u32::MAX),
                (LD | B | IND, 0, 0, 1),
                (RET | K, 0, 0, 1),
            ]),
            prog(&[
                (LDX | IMM, 0, 0, 4),
                (LD | W | IND, 0, 0, 1),
                (RET | K, 0, 0, 1),
            ]),
            prog(&[(LDX | B | MSH, 0, 0, 8), (RET | K, 0, 0, 1)]),
            // Linux ancillary-data offsets are simply out of bounds here.
            prog(&[(LD | H | ABS, 0, 0, 0xffff_f000), (RET | K, 0, 0, 1)]),
        ] {
            assert_eq!(p.run(&PKT, 8), 0, "{p:?}");
        }
    }

    #[test]
    fn scratch_memory() {
        let p = prog(&[
            (LD | IMM, 0, 0, 5),
            (ST, 0, 0, 3),
            (LDX | IMM, 0, 0, 9),
            (STX, 0, 0, 15),
            (LD | IMM, 0, 0, 0),
            (LDX | MEM, 0, 0, 3),
            (LD | MEM, 0, 0, 15),
            (ALU | ADD | X, 0, 0, 0),
            (RET | A, 0, 0, 0),
        ]);
        assert_eq!(p.run(&[], 0), 14);
        assert_eq!(
            invalid(&[(LD | MEM, 0, 0, 16), (RET | A, 0, 0, 0)]).reason,
            "scratch memory index out of range"
        );
        assert!(Program::new(vec![Insn::new(ST, 0, 0, 16), Insn::new(RET | A, 0, 0, 0)]).is_err());
    }

    fn alu(opc: u16, a: u32, v: u32, with_x: bool) -> u32 {
        let p = if with_x {
            prog(&[
                (LD | IMM, 0, 0, a),
                (LDX | IMM, 0, 0, v),
                (ALU | opc | X, 0, 0, 0),
                (RET | A, 0, 0, 0),
            ])
        } else {
            prog(&[
                (LD | IMM, 0, 0, a),
                (ALU | opc | K, 0, 0, v),
                (RET | A, 0, 0, 0),
            ])
        };
        p.run(&[], 0)
    }

    #[test]
    fn alu_ops_with_k_and_x() {
        for x in [false, true] {
            assert_eq!(alu(ADD, u32::MAX, 2, x), 1);
            assert_eq!(alu(SUB, 1, 2, x), u32::MAX);
            assert_eq!(alu(MUL, 6, 7, x), 42);
            assert_eq!(alu(DIV, 43, 7, x), 6);
            assert_eq!(alu(MOD, 43, 7, x), 1);
            assert_eq!(alu(OR, 0xf0, 0x0f, x), 0xff);
            assert_eq!(alu(AND, 0xf3, 0x0f, x), 0x03);
            assert_eq!(alu(XOR, 0xff, 0x0f, x), 0xf0);
            assert_eq!(alu(LSH, 1, 4, x), 16);
            assert_eq!(alu(RSH, 256, 4, x), 16);
        }
        let neg = prog(&[
            (LD | IMM, 0, 0, 1),
            (ALU | NEG, 0, 0, 0),
            (RET | A, 0, 0, 0),
        ]);
        assert_eq!(neg.run(&[], 0), u32::MAX);
        // Shifting by X >= 32 gives 0.
        assert_eq!(alu(LSH, 1, 40, true), 0);
    }

    #[test]
    fn division_by_zero() {
        // By X = 0 at run time: the program returns 0.
        assert_eq!(alu(DIV, 10, 0, true), 0);
        assert_eq!(alu(MOD, 10, 0, true), 0);
        // By a constant 0: refused at validation.
        assert_eq!(
            invalid(&[(ALU | DIV | K, 0, 0, 0), (RET | A, 0, 0, 0)]).reason,
            "division by constant zero"
        );
        assert!(Program::new(vec![
            Insn::new(ALU | MOD | K, 0, 0, 0),
            Insn::new(RET | A, 0, 0, 0)
        ])
        .is_err());
    }

    fn jump(opc: u16, a: u32, v: u32, with_x: bool) -> u32 {
        let src = if with_x { X } else { K };
        prog(&[
            (LD | IMM, 0, 0, a),
            (LDX | IMM, 0, 0, v),
            (JMP | opc | src, 0, 1, v),
            (RET | K, 0, 0, 1),
            (RET | K, 0, 0, 2),
        ])
        .run(&[], 0)
    }

    #[test]
    fn jumps() {
        for x in [false, true] {
            assert_eq!(jump(JEQ, 5, 5, x), 1);
            assert_eq!(jump(JEQ, 5, 6, x), 2);
            assert_eq!(jump(JGT, 6, 5, x), 1);
            assert_eq!(jump(JGT, 5, 5, x), 2);
            assert_eq!(jump(JGE, 5, 5, x), 1);
            assert_eq!(jump(JGE, 4, 5, x), 2);
            assert_eq!(jump(JSET, 6, 2, x), 1);
            assert_eq!(jump(JSET, 5, 2, x), 2);
        }
        let ja = prog(&[(JMP | JA, 0, 0, 1), (RET | K, 0, 0, 1), (RET | K, 0, 0, 9)]);
        assert_eq!(ja.run(&[], 0), 9);
        assert_eq!(
            invalid(&[(JMP | JA, 0, 0, 1), (RET | K, 0, 0, 1)]).reason,
            "jump out of the program"
        );
        assert_eq!(
            invalid(&[(JMP | JEQ | K, 0, 1, 0), (RET | K, 0, 0, 1)]).reason,
            "jump out of the program"
        );
    }

    #[test]
    fn misc_and_ret() {
        let p = prog(&[
            (LD | IMM, 0, 0, 3),
            (MISC | TAX, 0, 0, 0),
            (LD | IMM, 0, 0, 0),
            (MISC | TXA, 0, 0, 0),
            (RET | A, 0, 0, 0),
        ]);
        assert_eq!(p.run(&[], 0), 3);
        assert_eq!(prog(&[(RET | K, 0, 0, 262144)]).run(&[], 0), 262144);
        assert!(!prog(&[(RET | K, 0, 0, 0)]).matches(&[], 0));
    }

    #[test]
    fn validation() {
        assert_eq!(invalid(&[]).reason, "empty program");
        assert_eq!(
            invalid(&[(LD | IMM, 0, 0, 0)]).reason,
            "the program does not end with a return"
        );
        assert_eq!(
            invalid(&[(0xffff, 0, 0, 0), (RET | K, 0, 0, 0)]).reason,
            "unknown opcode"
        );
        assert_eq!(
            invalid(&[(LD | H | IMM, 0, 0, 0), (RET | K, 0, 0, 0)]).reason,
            "unknown opcode"
        );
        assert_eq!(
            invalid(&[(ALU | 0xb0, 0, 0, 0), (RET | K, 0, 0, 0)]).reason,
            "unknown opcode"
        );
        assert_eq!(
            invalid(&[(ALU | LSH | K, 0, 0, 32), (RET | K, 0, 0, 0)]).reason,
            "shift by 32 or more"
        );
        assert!(Program::new(vec![Insn::new(RET | K, 0, 0, 0); MAX_INSNS + 1]).is_err());
    }

    #[test]
    fn tcpdump_tcp_port_80_on_ethernet() {
        // `tcpdump -d 'ip and tcp port 80'` (IPv4 part), hand-entered.
        let p = prog(&[
            (0x28, 0, 0, 12),
            (0x15, 0, 10, 0x0800),
            (0x30, 0, 0, 23),
            (0x15, 0, 8, 6),
            (0x28, 0, 0, 20),
            (0x45, 6, 0, 0x1fff),
            (0xb1, 0, 0, 14),
            (0x48, 0, 0, 14),
            (0x15, 2, 0, 80),
            (0x48, 0, 0, 16),
            (0x15, 0, 1, 80),
            (0x6, 0, 0, 262144),
            (0x6, 0, 0, 0),
        ]);
        let mut f = vec![0u8; 54];
        f[12] = 0x08;
        f[14] = 0x45;
        f[23] = 6;
        f[14 + 20 + 2] = 0;
        f[14 + 20 + 3] = 80;
        assert!(p.matches(&f, 54));
        f[14 + 20 + 3] = 81;
        assert!(!p.matches(&f, 54));
        // Cut before the TCP header: out of bounds, no match.
        f[14 + 20 + 1] = 80;
        assert!(!p.matches(&f[..30], 54));
    }
}
