// SPDX-License-Identifier: MIT OR Apache-2.0
//
// streamcap-bench xdp-cutoff --nic-path: passes every frame. Attached to
// `scd` while a receiver without XDP captures there, because a veth takes
// redirected XDP frames only while it has an XDP program; it then builds
// an sk_buff for each, as a NIC driver without XDP does.
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

SEC("xdp.frags")
int pass(struct xdp_md *ctx)
{
    return XDP_PASS;
}

char LICENSE[] SEC("license") = "GPL";
