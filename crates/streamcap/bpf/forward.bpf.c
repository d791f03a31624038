// SPDX-License-Identifier: (MIT OR Apache-2.0) AND GPL-2.0-only
//
// streamcap's filter-only forwarding path (`streamcap forward --via
// devmap`): every frame that reaches the interface this program is
// attached to runs through a classic BPF (cBPF) filter, the program
// libpcap's `pcap_compile` made for DLT_EN10MB, and is either redirected
// through the `out` devmap to the outgoing interface (the filter accepted
// it) or dropped (it rejected it). Both are counted per CPU in `counts`.
//
// The cBPF program lives in the `insns` array map, one instruction per
// slot, and its length in `config`; user space validates it first
// (src/filter/bpf.rs `Program::new`: known opcodes, forward jumps inside
// the program, scratch indexes below 16, a final return). The interpreter
// runs one instruction per bpf_loop() iteration: cBPF jumps go forward
// only, so the program ends within as many steps as it has instructions.
//
// Semantics are libpcap's `bpf_filter` (and the kernel's): 32-bit A and X,
// 16 scratch words, big-endian loads; a load outside the frame or a
// division by a zero X ends the program with 0 (reject). Packet bytes are
// read with bpf_xdp_load_bytes(), which does its own bounds check (and
// reads multi-buffer frames too), so no packet pointer needs the
// verifier's range tracking. The frame's length (BPF_LEN) is its whole
// length, bpf_xdp_get_buff_len().
//
// The layouts must match src/forward/xdp_filter.rs.

#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

/// BPF_MAXINSNS: the longest cBPF program the kernel takes.
#define MAX_INSNS 4096
#define MEMWORDS 16

/// `struct bpf_insn` of cBPF (`struct sock_filter`).
struct cbpf_insn {
    __u16 code;
    __u8 jt;
    __u8 jf;
    __u32 k;
};

/// The filter's length in instructions (slot 0).
struct fwd_config {
    __u32 len;
    __u32 pad;
};

/// What this CPU did (slot 0).
struct fwd_counts {
    __u64 fwd_pkts;      // accepted and handed to the devmap
    __u64 fwd_bytes;
    __u64 filtered_pkts; // rejected by the filter and dropped
    __u64 filtered_bytes;
    __u64 redirect_failed; // accepted, but the devmap refused (no entry)
};

struct {
    __uint(type, BPF_MAP_TYPE_ARRAY);
    __uint(max_entries, MAX_INSNS);
    __type(key, __u32);
    __type(value, struct cbpf_insn);
} insns SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_ARRAY);
    __uint(max_entries, 1);
    __type(key, __u32);
    __type(value, struct fwd_config);
} config SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
    __uint(max_entries, 1);
    __type(key, __u32);
    __type(value, struct fwd_counts);
} counts SEC(".maps");

/// Slot 0: the ifindex of the outgoing interface.
struct {
    __uint(type, BPF_MAP_TYPE_DEVMAP);
    __uint(max_entries, 1);
    __type(key, __u32);
    __type(value, __u32);
} out SEC(".maps");

/// The interpreter's state, on the program's stack; bpf_loop() hands the
/// step function a pointer to it.
struct vm {
    struct xdp_md *ctx;
    __u32 a;
    __u32 x;
    __u32 pc;
    __u32 len;    // instructions
    __u32 wire;   // frame bytes
    __u32 ret;    // the program's result once done
    __u32 mem[MEMWORDS];
};

// Opcode fields (<linux/filter.h> BPF_CLASS etc.).
#define CLASS(c) ((c) & 0x07)
#define SIZE(c) ((c) & 0x18)
#define MODE(c) ((c) & 0xe0)
#define OP(c) ((c) & 0xf0)
#define SRC(c) ((c) & 0x08)
#define RVAL(c) ((c) & 0x18)
#define MISCOP(c) ((c) & 0xf8)

#define C_LD 0x00
#define C_LDX 0x01
#define C_ST 0x02
#define C_STX 0x03
#define C_ALU 0x04
#define C_JMP 0x05
#define C_RET 0x06
#define C_MISC 0x07

#define S_W 0x00
#define S_H 0x08
#define S_B 0x10

#define M_IMM 0x00
#define M_ABS 0x20
#define M_IND 0x40
#define M_MEM 0x60
#define M_LEN 0x80
#define M_MSH 0xa0

#define A_ADD 0x00
#define A_SUB 0x10
#define A_MUL 0x20
#define A_DIV 0x30
#define A_OR 0x40
#define A_AND 0x50
#define A_LSH 0x60
#define A_RSH 0x70
#define A_NEG 0x80
#define A_MOD 0x90
#define A_XOR 0xa0

#define J_JA 0x00
#define J_JEQ 0x10
#define J_JGT 0x20
#define J_JGE 0x30
#define J_JSET 0x40

#define R_K 0x00
#define R_X 0x08
#define R_A 0x10

#define MISC_TAX 0x00
#define MISC_TXA 0x80

/// Loads `size` (1, 2 or 4) big-endian bytes at `off` of the frame into
/// `*val`; -1 when they are not all inside it.
static __always_inline int load(struct vm *vm, __u64 off, __u32 size, __u32 *val)
{
    __u8 b[4] = {0, 0, 0, 0};
    if (off + size > vm->wire)
        return -1;
    __u32 o = (__u32)off;
    switch (size) {
    case 1:
        if (bpf_xdp_load_bytes(vm->ctx, o, b, 1))
            return -1;
        *val = b[0];
        return 0;
    case 2:
        if (bpf_xdp_load_bytes(vm->ctx, o, b, 2))
            return -1;
        *val = ((__u32)b[0] << 8) | b[1];
        return 0;
    default:
        if (bpf_xdp_load_bytes(vm->ctx, o, b, 4))
            return -1;
        *val = ((__u32)b[0] << 24) | ((__u32)b[1] << 16) | ((__u32)b[2] << 8) | b[3];
        return 0;
    }
}

/// Ends the program with `r`: bpf_loop() stops on a return of 1.
static __always_inline long finish(struct vm *vm, __u32 r)
{
    vm->ret = r;
    return 1;
}

/// Runs the instruction at `vm->pc`.
static long step(__u32 index, void *data)
{
    struct vm *vm = data;
    __u32 pc = vm->pc;
    if (pc >= vm->len)
        return finish(vm, 0);
    struct cbpf_insn *in = bpf_map_lookup_elem(&insns, &pc);
    if (!in)
        return finish(vm, 0);
    __u16 code = in->code;
    __u32 k = in->k;
    __u8 jt = in->jt, jf = in->jf;
    __u32 v = 0;
    vm->pc = pc + 1;
    switch (CLASS(code)) {
    case C_LD:
        switch (MODE(code)) {
        case M_IMM:
            vm->a = k;
            return 0;
        case M_LEN:
            vm->a = vm->wire;
            return 0;
        case M_MEM:
            vm->a = vm->mem[k & (MEMWORDS - 1)];
            return 0;
        case M_ABS:
        case M_IND: {
            __u64 off = k;
            if (MODE(code) == M_IND)
                off += vm->x;
            __u32 size = SIZE(code) == S_W ? 4 : SIZE(code) == S_H ? 2 : 1;
            if (SIZE(code) == 0x18 || load(vm, off, size, &v))
                return finish(vm, 0);
            vm->a = v;
            return 0;
        }
        default:
            return finish(vm, 0);
        }
    case C_LDX:
        switch (MODE(code)) {
        case M_IMM:
            vm->x = k;
            return 0;
        case M_LEN:
            vm->x = vm->wire;
            return 0;
        case M_MEM:
            vm->x = vm->mem[k & (MEMWORDS - 1)];
            return 0;
        case M_MSH:
            if (load(vm, k, 1, &v))
                return finish(vm, 0);
            vm->x = (v & 0xf) << 2;
            return 0;
        default:
            return finish(vm, 0);
        }
    case C_ST:
        vm->mem[k & (MEMWORDS - 1)] = vm->a;
        return 0;
    case C_STX:
        vm->mem[k & (MEMWORDS - 1)] = vm->x;
        return 0;
    case C_ALU: {
        __u32 s = SRC(code) == R_X ? vm->x : k;
        __u32 a = vm->a;
        switch (OP(code)) {
        case A_ADD: a += s; break;
        case A_SUB: a -= s; break;
        case A_MUL: a *= s; break;
        case A_DIV:
            if (s == 0)
                return finish(vm, 0);
            a /= s;
            break;
        case A_MOD:
            if (s == 0)
                return finish(vm, 0);
            a %= s;
            break;
        case A_OR: a |= s; break;
        case A_AND: a &= s; break;
        case A_XOR: a ^= s; break;
        // A shift by 32 or more gives 0, as in libpcap's `bpf_filter`.
        case A_LSH: a = s < 32 ? a << s : 0; break;
        case A_RSH: a = s < 32 ? a >> s : 0; break;
        case A_NEG: a = -a; break;
        default:
            return finish(vm, 0);
        }
        vm->a = a;
        return 0;
    }
    case C_JMP: {
        __u32 s = SRC(code) == R_X ? vm->x : k;
        int taken;
        switch (OP(code)) {
        case J_JA:
            vm->pc = pc + 1 + k;
            return 0;
        case J_JEQ: taken = vm->a == s; break;
        case J_JGT: taken = vm->a > s; break;
        case J_JGE: taken = vm->a >= s; break;
        case J_JSET: taken = (vm->a & s) != 0; break;
        default:
            return finish(vm, 0);
        }
        vm->pc = pc + 1 + (taken ? jt : jf);
        return 0;
    }
    case C_RET:
        switch (RVAL(code)) {
        case R_K: return finish(vm, k);
        case R_A: return finish(vm, vm->a);
        default: return finish(vm, 0);
        }
    case C_MISC:
        if (MISCOP(code) == MISC_TAX)
            vm->x = vm->a;
        else if (MISCOP(code) == MISC_TXA)
            vm->a = vm->x;
        else
            return finish(vm, 0);
        return 0;
    }
    return finish(vm, 0);
}

SEC("xdp.frags")
int forward(struct xdp_md *ctx)
{
    __u32 zero = 0;
    struct fwd_config *cfg = bpf_map_lookup_elem(&config, &zero);
    struct fwd_counts *c = bpf_map_lookup_elem(&counts, &zero);
    if (!cfg || !c)
        return XDP_DROP;
    __u32 wire = bpf_xdp_get_buff_len(ctx);
    struct vm vm = {};
    vm.ctx = ctx;
    vm.len = cfg->len;
    vm.wire = wire;
    // A program that runs off its end (user space never loads one)
    // rejects, as the zero `ret` says.
    __u32 steps = vm.len;
    if (steps > MAX_INSNS)
        steps = MAX_INSNS;
    bpf_loop(steps, step, &vm, 0);
    if (vm.ret == 0) {
        c->filtered_pkts++;
        c->filtered_bytes += wire;
        return XDP_DROP;
    }
    long r = bpf_redirect_map(&out, 0, 0);
    if (r != XDP_REDIRECT) {
        // No outgoing interface in the devmap: dropped, and told apart
        // from a rejected frame (XDP_ABORTED also shows in the
        // xdp:xdp_exception tracepoint).
        c->redirect_failed++;
        return XDP_ABORTED;
    }
    c->fwd_pkts++;
    c->fwd_bytes += wire;
    return XDP_REDIRECT;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
