// SPDX-License-Identifier: MIT OR Apache-2.0
//
// streamcap-bench xdp-cutoff --nic-path: every frame that reaches the
// veth `scb` is redirected to `scc` (TARGET_IFINDEX, set with -D when the
// benchmark compiles this), so that it arrives at `scc`'s peer `scd` as an
// XDP frame, before any sk_buff exists there, as a NIC hands its driver a
// DMA buffer. Frags-aware, so that it attaches natively at MTU 9000.
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

SEC("xdp.frags")
int redirect(struct xdp_md *ctx)
{
    return bpf_redirect(TARGET_IFINDEX, 0);
}

char LICENSE[] SEC("license") = "GPL";
