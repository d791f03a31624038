/*
 * pcap_count: the least a libpcap program can do with a capture file. It
 * reads FILE with pcap_loop and counts packets and captured bytes (the
 * callback reads the header only, never the packet data). Run under
 * libstreamcap_pcap.so with and without PCAP_LOCALITY, it shows what the
 * library's copy of each packet into its locality batch costs
 * (bench/pcap-locality.sh).
 *
 *   pcap_count FILE
 *
 * Output: packets=N bytes=B
 */
#include <pcap/pcap.h>
#include <stdint.h>
#include <stdio.h>

struct totals {
    uint64_t packets, bytes;
};

static void count(u_char *user, const struct pcap_pkthdr *h, const u_char *data)
{
    struct totals *t = (struct totals *)user;
    (void)data;
    t->packets++;
    t->bytes += h->caplen;
}

int main(int argc, char **argv)
{
    char err[PCAP_ERRBUF_SIZE];
    struct totals t = {0, 0};
    pcap_t *p;

    if (argc != 2) {
        fprintf(stderr, "usage: pcap_count FILE\n");
        return 2;
    }
    p = pcap_open_offline(argv[1], err);
    if (p == NULL) {
        fprintf(stderr, "pcap_count: %s\n", err);
        return 1;
    }
    if (pcap_loop(p, -1, count, (u_char *)&t) == -1) {
        fprintf(stderr, "pcap_count: %s\n", pcap_geterr(p));
        pcap_close(p);
        return 1;
    }
    pcap_close(p);
    printf("packets=%llu bytes=%llu\n", (unsigned long long)t.packets,
           (unsigned long long)t.bytes);
    return 0;
}
