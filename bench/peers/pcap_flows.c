/*
 * pcap_flows: a plain-libpcap flow meter, the YAF-like baseline that does no
 * reassembly. Every packet is decoded (Ethernet with 802.1Q/802.1ad tags, raw
 * IP, Linux SLL/SLL2, BSD loopback; IPv4 and IPv6), keyed by its
 * bidirectional 5-tuple + VLAN and counted per direction in an
 * open-addressing hash table (linear probing, power-of-two size, grown at
 * 50% load, 64-bit mixed hash, full key compare). No expiry: every distinct
 * key is one flow.
 *
 *   pcap_flows FILE
 *
 * Output: flows=N packets=P ip_packets=I bytes=B tcp=T udp=U other=O
 */
#include <pcap/pcap.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct key {
    uint8_t a[16], b[16]; /* lower (addr, port) endpoint first */
    uint16_t pa, pb;
    uint32_t vlan;
    uint8_t proto, v6, pad[2];
};

struct flow {
    struct key k;
    uint64_t pkts[2], bytes[2];
    uint64_t first_us, last_us;
    uint8_t used;
};

static struct flow *tab;
static size_t cap, used;
static uint64_t n_pkts, n_ip, n_bytes, n_proto[3];
static int linktype;

static inline uint64_t mix64(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ULL;
    x ^= x >> 33;
    return x;
}

static inline uint64_t hash_key(const struct key *k)
{
    uint64_t w[5];
    memcpy(w, k, sizeof w); /* a, b, ports, vlan: the first 40 bytes */
    uint64_t h = 0x9e3779b97f4a7c15ULL ^ ((uint64_t)k->proto << 8 | k->v6);
    for (int i = 0; i < 4; i++)
        h = mix64(h ^ w[i]) + (uint64_t)i;
    return mix64(h ^ w[4]);
}

static void grow(void)
{
    size_t ncap = cap ? cap * 2 : 1 << 16;
    struct flow *nt = calloc(ncap, sizeof *nt);
    if (!nt) {
        perror("calloc");
        exit(1);
    }
    for (size_t i = 0; i < cap; i++) {
        if (!tab[i].used)
            continue;
        size_t j = hash_key(&tab[i].k) & (ncap - 1);
        while (nt[j].used)
            j = (j + 1) & (ncap - 1);
        nt[j] = tab[i];
    }
    free(tab);
    tab = nt;
    cap = ncap;
}

static void account(struct key *k, int dir, uint32_t len, uint64_t ts_us)
{
    if (used * 2 >= cap)
        grow();
    size_t j = hash_key(k) & (cap - 1);
    for (;;) {
        struct flow *f = &tab[j];
        if (!f->used) {
            f->used = 1;
            f->k = *k;
            f->first_us = ts_us;
            used++;
        } else if (memcmp(&f->k, k, sizeof *k) != 0) {
            j = (j + 1) & (cap - 1);
            continue;
        }
        f->pkts[dir]++;
        f->bytes[dir] += len;
        f->last_us = ts_us;
        return;
    }
}

static void on_packet(u_char *user, const struct pcap_pkthdr *h, const u_char *p)
{
    (void)user;
    n_pkts++;
    n_bytes += h->len;
    const u_char *end = p + h->caplen;
    uint32_t vlan = 0;
    uint16_t et;
    switch (linktype) {
    case DLT_EN10MB:
        if (h->caplen < 14)
            return;
        et = (uint16_t)(p[12] << 8 | p[13]);
        p += 14;
        while ((et == 0x8100 || et == 0x88a8 || et == 0x9100) && p + 4 <= end) {
            vlan = (vlan << 16) | ((uint32_t)((p[0] << 8 | p[1]) & 0x0fff) + 1);
            et = (uint16_t)(p[2] << 8 | p[3]);
            p += 4;
        }
        break;
    case DLT_RAW:
        if (h->caplen < 1)
            return;
        et = (p[0] >> 4) == 6 ? 0x86dd : 0x0800;
        break;
    case DLT_LINUX_SLL:
        if (h->caplen < 16)
            return;
        et = (uint16_t)(p[14] << 8 | p[15]);
        p += 16;
        break;
    case 276: /* LINUX_SLL2 */
        if (h->caplen < 20)
            return;
        et = (uint16_t)(p[0] << 8 | p[1]);
        p += 20;
        break;
    case DLT_NULL:
        if (h->caplen < 4)
            return;
        p += 4;
        if (p >= end)
            return;
        et = (p[0] >> 4) == 6 ? 0x86dd : 0x0800;
        break;
    default:
        return;
    }
    struct key k;
    memset(&k, 0, sizeof k);
    k.vlan = vlan;
    uint8_t src[16] = {0}, dst[16] = {0};
    uint16_t sp = 0, dp = 0;
    const u_char *l4;
    int first_frag = 1;
    if (et == 0x0800) {
        if (p + 20 > end || (p[0] >> 4) != 4)
            return;
        unsigned ihl = (p[0] & 15u) * 4;
        if (ihl < 20 || p + ihl > end)
            return;
        k.proto = p[9];
        memcpy(src, p + 12, 4);
        memcpy(dst, p + 16, 4);
        first_frag = ((p[6] & 0x1f) << 8 | p[7]) == 0;
        l4 = p + ihl;
    } else if (et == 0x86dd) {
        if (p + 40 > end)
            return;
        k.v6 = 1;
        memcpy(src, p + 8, 16);
        memcpy(dst, p + 24, 16);
        uint8_t nh = p[6];
        l4 = p + 40;
        /* hop-by-hop, routing, destination options, fragment */
        while ((nh == 0 || nh == 43 || nh == 60 || nh == 44) && l4 + 8 <= end) {
            if (nh == 44) {
                first_frag = ((l4[2] << 8 | l4[3]) & 0xfff8) == 0;
                nh = l4[0];
                l4 += 8;
            } else {
                uint8_t next = l4[0];
                l4 += (l4[1] + 1u) * 8;
                nh = next;
            }
        }
        k.proto = nh;
    } else {
        return;
    }
    n_ip++;
    if ((k.proto == 6 || k.proto == 17) && first_frag && l4 + 4 <= end) {
        sp = (uint16_t)(l4[0] << 8 | l4[1]);
        dp = (uint16_t)(l4[2] << 8 | l4[3]);
    }
    n_proto[k.proto == 6 ? 0 : k.proto == 17 ? 1 : 2]++;
    int c = memcmp(src, dst, 16);
    int dir = c > 0 || (c == 0 && sp > dp);
    if (!dir) {
        memcpy(k.a, src, 16);
        memcpy(k.b, dst, 16);
        k.pa = sp;
        k.pb = dp;
    } else {
        memcpy(k.a, dst, 16);
        memcpy(k.b, src, 16);
        k.pa = dp;
        k.pb = sp;
    }
    account(&k, dir, h->len, (uint64_t)h->ts.tv_sec * 1000000u + (uint64_t)h->ts.tv_usec);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s FILE\n", argv[0]);
        return 2;
    }
    char err[PCAP_ERRBUF_SIZE];
    pcap_t *pc = pcap_open_offline(argv[1], err);
    if (!pc) {
        fprintf(stderr, "pcap_open_offline: %s\n", err);
        return 1;
    }
    linktype = pcap_datalink(pc);
    grow();
    if (pcap_loop(pc, -1, on_packet, NULL) == -1) {
        fprintf(stderr, "pcap_loop: %s\n", pcap_geterr(pc));
        return 1;
    }
    pcap_close(pc);
    uint64_t fp = 0;
    for (size_t i = 0; i < cap; i++)
        fp += tab[i].used ? tab[i].pkts[0] + tab[i].pkts[1] : 0;
    printf("flows=%zu packets=%llu ip_packets=%llu bytes=%llu tcp=%llu udp=%llu other=%llu counted=%llu\n",
           used, (unsigned long long)n_pkts, (unsigned long long)n_ip, (unsigned long long)n_bytes,
           (unsigned long long)n_proto[0], (unsigned long long)n_proto[1], (unsigned long long)n_proto[2],
           (unsigned long long)fp);
    return 0;
}
