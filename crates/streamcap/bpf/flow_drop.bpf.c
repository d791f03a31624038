// SPDX-License-Identifier: (MIT OR Apache-2.0) AND GPL-2.0-only
//
// streamcap's subzero-copy stage (Scap, section V-E, in XDP form).
//
// User space lists one direction of a connection in `flows` once its
// stream is past its cutoff (or discarded). This program then drops that
// direction's packets that carry neither SYN, FIN nor RST before the kernel
// allocates anything for them, and counts what it dropped in the entry:
// packets, IP bytes, payload bytes, payload-carrying packets, how far the
// TCP sequence space advanced (64 bits, from the sequence number user
// space gave when it listed the key) and the time of the last one. User space
// takes the entry back when the connection ends or the entry times out,
// and adds the counts to the stream's, so flow records stay exact.
//
// Taking an entry back is `flow_take`, which user space runs with
// BPF_PROG_TEST_RUN: under the entry's spin lock it copies the counts out
// and closes the entry, then deletes it. `flow_drop` counts a packet and
// drops it only under the same lock and only while the entry is open and
// still holds its own key (a deleted entry's memory may already hold
// another), so a packet is either in the counts user space took or passed
// to it: none is lost between the two, on any CPU.
//
// Everything else passes: packets of flows not listed, SYN, FIN and RST,
// IP fragments, IPv6 with extension headers, other protocols, and frames
// too short to parse. A packet that passes goes to the AF_XDP socket that
// user space put in `xsks` for its receive queue (the AF_XDP source,
// src/source/af_xdp), or, with none there, on to the kernel's stack, where
// AF_PACKET sockets see it: one program per interface, drop first, then
// redirect.
//
// The key and value layouts must match `DropKey` in src/subzero/mod.rs and
// the offsets in src/subzero/xdp.rs.

#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/tcp.h>
#include <linux/udp.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

/// One direction of a flow, as the packet carries it.
struct drop_key {
    __u8 src[16];     // IPv4 in the first 4 bytes, the rest zero
    __u8 dst[16];
    __u32 vlan;       // (outer VLAN id + 1) << 16 | (inner VLAN id + 1), 0 without tags
    __u16 sport;      // host byte order
    __u16 dport;
    __u8 proto;       // IPPROTO_TCP or IPPROTO_UDP
    __u8 v6;          // 1 for IPv6
    __u8 pad[2];
};

/// What was dropped for one key since it was listed.
struct drop_counts {
    __u64 pkts;       // packets dropped
    __u64 bytes;      // their IP length (header and payload)
    __u64 payload;    // their transport payload bytes
    __u64 data_pkts;  // of them, packets with payload
    __u64 last_ns;    // bpf_ktime_get_ns() of the last one (CLOCK_MONOTONIC)
    __u64 advance;    // TCP: how far max_end moved, without wrapping
};

/// One listed key. User space lists a TCP key with `max_end` set to the
/// sequence number of the stream's delivery point and `seq_valid` 1, and
/// `key` set to the map key; everything else starts at zero.
struct drop_entry {
    struct bpf_spin_lock lock; // guards everything below
    __u32 closed;              // set by flow_take: count nothing more
    struct drop_key key;       // the map key, to tell a reused entry
    __u32 seq_valid;           // whether max_end is set
    struct drop_counts counts;
    __u32 max_end;             // TCP: the highest sequence number + payload length
    __u32 pad;
};

/// `flow_take`'s request and answer, in the test run's packet data.
struct take_request {
    struct drop_key key;       // in: the key to take
    __u32 found;               // out: 1 if it was listed and open
    struct drop_counts counts; // out: its counts
};

/// A segment whose end lies further than this past the highest end is
/// not trusted to move the stream (the engine's own `max_seq_jump`).
#define MAX_SEQ_JUMP (1u << 30)

/// Everything dropped, on this CPU.
struct drop_totals {
    __u64 pkts;
    __u64 bytes;
};

struct {
    __uint(type, BPF_MAP_TYPE_HASH);
    __uint(max_entries, 65536); // set by user space before loading
    __type(key, struct drop_key);
    __type(value, struct drop_entry);
} flows SEC(".maps");

/// Slot 0: what this CPU dropped. Slot 1 (written by user space, never
/// by the program): in `pkts`, the fan-out group + 1 (0 for none) of the
/// capture that attached the program, so that a process of the same group
/// joins it (src/subzero/xdp.rs) and others do not. (A map the program
/// does not use is not bound to it, so the tag lives here.)
struct {
    __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
    __uint(max_entries, 2);
    __type(key, __u32);
    __type(value, struct drop_totals);
} totals SEC(".maps");

/// The AF_XDP sockets, by receive queue.
struct {
    __uint(type, BPF_MAP_TYPE_XSKMAP);
    __uint(max_entries, 1024);
    __type(key, __u32);
    __type(value, __u32);
} xsks SEC(".maps");

#define ETH_P_8021Q_ 0x8100
#define ETH_P_8021AD_ 0x88A8
#define IP_MF_ 0x2000
#define IP_OFFSET_ 0x1FFF

static __always_inline int parse_vlan(void **cursor, void *end, __u16 *proto, __u32 *vid)
{
    struct vlan_hdr {
        __be16 tci;
        __be16 proto;
    } *v = *cursor;
    if ((void *)(v + 1) > end)
        return -1;
    *vid = (bpf_ntohs(v->tci) & 0x0FFF) + 1;
    *proto = bpf_ntohs(v->proto);
    *cursor = v + 1;
    return 0;
}

/// Whether two keys are equal (what a reused entry would not be).
static __always_inline int same_key(const struct drop_key *a, const struct drop_key *b)
{
    const __u32 *x = (const __u32 *)a, *y = (const __u32 *)b;
    __u32 diff = 0;
#pragma unroll
    for (int i = 0; i < (int)(sizeof(*a) / 4); i++)
        diff |= x[i] ^ y[i];
    return diff == 0;
}

/// Whether the packet belongs to a listed flow direction, counted and to
/// be dropped.
static __always_inline int listed(struct xdp_md *ctx)
{
    void *data = (void *)(long)ctx->data;
    void *end = (void *)(long)ctx->data_end;
    struct ethhdr *eth = data;
    if ((void *)(eth + 1) > end)
        return 0;

    struct drop_key key = {};
    void *cursor = eth + 1;
    __u16 proto = bpf_ntohs(eth->h_proto);
    __u32 outer = 0, inner = 0;
    if (proto == ETH_P_8021Q_ || proto == ETH_P_8021AD_) {
        if (parse_vlan(&cursor, end, &proto, &outer))
            return 0;
        if (proto == ETH_P_8021Q_ || proto == ETH_P_8021AD_) {
            if (parse_vlan(&cursor, end, &proto, &inner))
                return 0;
        }
    }
    key.vlan = (outer << 16) | inner;

    __u32 ip_len, l4_off;
    __u8 l4;
    if (proto == ETH_P_IP) {
        struct iphdr *ip = cursor;
        if ((void *)(ip + 1) > end)
            return 0;
        if (ip->ihl < 5 || (bpf_ntohs(ip->frag_off) & (IP_MF_ | IP_OFFSET_)))
            return 0;
        ip_len = bpf_ntohs(ip->tot_len);
        l4_off = ip->ihl * 4;
        l4 = ip->protocol;
        __builtin_memcpy(key.src, &ip->saddr, 4);
        __builtin_memcpy(key.dst, &ip->daddr, 4);
    } else if (proto == ETH_P_IPV6) {
        struct ipv6hdr *ip6 = cursor;
        if ((void *)(ip6 + 1) > end)
            return 0;
        ip_len = bpf_ntohs(ip6->payload_len) + sizeof(*ip6);
        l4_off = sizeof(*ip6);
        l4 = ip6->nexthdr;
        __builtin_memcpy(key.src, &ip6->saddr, 16);
        __builtin_memcpy(key.dst, &ip6->daddr, 16);
        key.v6 = 1;
    } else {
        return 0;
    }
    if (l4 != IPPROTO_TCP && l4 != IPPROTO_UDP)
        return 0;
    if (l4_off > 60 || ip_len < l4_off)
        return 0;
    void *l4h = cursor + l4_off;
    key.proto = l4;

    __u32 payload, seq = 0;
    int has_seq = 0;
    if (l4 == IPPROTO_TCP) {
        struct tcphdr *tcp = l4h;
        if ((void *)(tcp + 1) > end)
            return 0;
        // SYN, FIN and RST always reach user space: they open and end streams.
        if (tcp->syn || tcp->fin || tcp->rst)
            return 0;
        __u32 doff = tcp->doff * 4;
        if (doff < sizeof(*tcp) || ip_len < l4_off + doff)
            return 0;
        payload = ip_len - l4_off - doff;
        key.sport = bpf_ntohs(tcp->source);
        key.dport = bpf_ntohs(tcp->dest);
        seq = bpf_ntohl(tcp->seq);
        has_seq = 1;
    } else {
        struct udphdr *udp = l4h;
        if ((void *)(udp + 1) > end)
            return 0;
        __u32 ulen = bpf_ntohs(udp->len);
        if (ulen < sizeof(*udp) || ip_len < l4_off + ulen)
            return 0;
        payload = ulen - sizeof(*udp);
        key.sport = bpf_ntohs(udp->source);
        key.dport = bpf_ntohs(udp->dest);
    }

    struct drop_entry *c = bpf_map_lookup_elem(&flows, &key);
    if (!c)
        return 0;
    __u64 now = bpf_ktime_get_ns();
    int drop = 0;
    bpf_spin_lock(&c->lock);
    if (!c->closed && same_key(&c->key, &key)) {
        drop = 1;
        c->counts.pkts += 1;
        c->counts.bytes += ip_len;
        if (payload > 0) {
            c->counts.payload += payload;
            c->counts.data_pkts += 1;
        }
        c->counts.last_ns = now;
        // Only payload moves the stream: a pure ACK's sequence number is
        // the next byte to send, which after a FIN on its way is the FIN's
        // + 1. Each step is taken modulo 2^32 and added up in 64 bits, so
        // the advance survives wrap-arounds.
        if (has_seq && payload > 0) {
            __u32 e = seq + payload;
            if (!c->seq_valid) {
                c->max_end = e;
                c->seq_valid = 1;
            } else {
                __u32 step = e - c->max_end;
                if ((__s32)step > 0 && step <= MAX_SEQ_JUMP) {
                    c->max_end = e;
                    c->counts.advance += step;
                }
            }
        }
    }
    bpf_spin_unlock(&c->lock);
    if (!drop)
        return 0;
    __u32 zero = 0;
    struct drop_totals *t = bpf_map_lookup_elem(&totals, &zero);
    if (t) {
        t->pkts += 1;
        t->bytes += ip_len;
    }
    return 1;
}

SEC("xdp.frags")
int flow_drop(struct xdp_md *ctx)
{
    if (listed(ctx))
        return XDP_DROP;
    // The lower bits of the flags are the action when the queue has no
    // socket in the map.
    return bpf_redirect_map(&xsks, ctx->rx_queue_index, XDP_PASS);
}

/// Takes an entry back: run by user space with BPF_PROG_TEST_RUN on a
/// `struct take_request`. Copies the counts out and closes the entry under
/// its lock, then deletes it; answers `found` 0 for a key not listed (or
/// closed already, by a take that had not deleted it yet).
SEC("xdp")
int flow_take(struct xdp_md *ctx)
{
    void *data = (void *)(long)ctx->data;
    void *end = (void *)(long)ctx->data_end;
    struct take_request *r = data;
    if ((void *)(r + 1) > end)
        return XDP_ABORTED;
    struct drop_key key;
    __builtin_memcpy(&key, &r->key, sizeof(key));
    struct drop_counts out = {};
    int found = 0;
    struct drop_entry *c = bpf_map_lookup_elem(&flows, &key);
    if (c) {
        bpf_spin_lock(&c->lock);
        if (!c->closed && same_key(&c->key, &key)) {
            out = c->counts;
            c->closed = 1;
            found = 1;
        }
        bpf_spin_unlock(&c->lock);
        bpf_map_delete_elem(&flows, &key);
    }
    r->found = found;
    r->counts = out;
    return XDP_PASS;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
