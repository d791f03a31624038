/*
 * Reads a capture file through one of libpcap's read calls and prints one
 * line per packet: "SEC.USEC CAPLEN LEN HASH". Under libstreamcap_pcap.so
 * with PCAP_LOCALITY set, every read call hands out the same locality
 * order; the tests compare them.
 *
 *   read_all FILE loop|loop7|dispatch|next|next_ex|break
 *
 * loop7 calls pcap_loop for 7 packets at a time; break calls
 * pcap_breakloop from the callback every 10th packet and loops again.
 *
 * SPDX-License-Identifier: MIT OR Apache-2.0
 */
#include <pcap/pcap.h>

#include <stdint.h>
#include <stdio.h>
#include <string.h>

static unsigned long seen;
static pcap_t *handle;
static int breaking;

static uint64_t fnv(const u_char *p, bpf_u_int32 n)
{
    uint64_t h = 1469598103934665603ULL;
    for (bpf_u_int32 i = 0; i < n; i++) {
        h ^= p[i];
        h *= 1099511628211ULL;
    }
    return h;
}

static void print(const struct pcap_pkthdr *h, const u_char *bytes)
{
    printf("%ld.%06ld %u %u %016llx\n", (long)h->ts.tv_sec, (long)h->ts.tv_usec, h->caplen,
           h->len, (unsigned long long)fnv(bytes, h->caplen));
    seen++;
}

static void callback(u_char *user, const struct pcap_pkthdr *h, const u_char *bytes)
{
    (void)user;
    print(h, bytes);
    if (breaking && seen % 10 == 0)
        pcap_breakloop(handle);
}

int main(int argc, char **argv)
{
    char errbuf[PCAP_ERRBUF_SIZE];
    if (argc != 3) {
        fprintf(stderr, "usage: %s FILE loop|loop7|dispatch|next|next_ex|break\n", argv[0]);
        return 2;
    }
    handle = pcap_open_offline(argv[1], errbuf);
    if (handle == NULL) {
        fprintf(stderr, "%s\n", errbuf);
        return 1;
    }
    const char *mode = argv[2];
    int rc = 0;
    if (strcmp(mode, "loop") == 0) {
        rc = pcap_loop(handle, -1, callback, NULL);
    } else if (strcmp(mode, "loop7") == 0) {
        for (;;) {
            unsigned long before = seen;
            rc = pcap_loop(handle, 7, callback, NULL);
            if (rc < 0 || seen - before < 7)
                break;
        }
    } else if (strcmp(mode, "dispatch") == 0) {
        while ((rc = pcap_dispatch(handle, 5, callback, NULL)) > 0)
            ;
    } else if (strcmp(mode, "next") == 0) {
        struct pcap_pkthdr h;
        const u_char *p;
        while ((p = pcap_next(handle, &h)) != NULL)
            print(&h, p);
    } else if (strcmp(mode, "next_ex") == 0) {
        struct pcap_pkthdr *h;
        const u_char *p;
        while ((rc = pcap_next_ex(handle, &h, &p)) == 1)
            print(h, p);
        if (rc == PCAP_ERROR_BREAK)
            rc = 0;
    } else if (strcmp(mode, "break") == 0) {
        breaking = 1;
        while ((rc = pcap_loop(handle, -1, callback, NULL)) == PCAP_ERROR_BREAK)
            ;
    } else {
        fprintf(stderr, "unknown mode %s\n", mode);
        return 2;
    }
    if (rc < 0) {
        fprintf(stderr, "%s: %s\n", mode, pcap_geterr(handle));
        return 1;
    }
    pcap_close(handle);
    fprintf(stderr, "%lu packets\n", seen);
    return 0;
}
