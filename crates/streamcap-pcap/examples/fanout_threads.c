/*
 * The paper's multi-threaded use of pcap_fanout (pcap-fanout.txt VI): N
 * threads open the same device, each handle joins fan-out group GROUP,
 * and each thread gets its share of the traffic instead of a copy.
 *
 *   cc fanout_threads.c $(pkg-config --cflags --libs streamcap-pcap) -lpthread
 *   ./fanout_threads DEV THREADS GROUP MODE SECONDS
 *
 * Prints one line per thread, "thread I: N packets", then "total: N".
 *
 * SPDX-License-Identifier: MIT OR Apache-2.0
 */
#include <streamcap_pcap.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

struct worker {
    pcap_t *p;
    unsigned long packets;
};

static void count(u_char *user, const struct pcap_pkthdr *h, const u_char *bytes)
{
    (void)h;
    (void)bytes;
    ((struct worker *)user)->packets++;
}

static void *run(void *arg)
{
    struct worker *w = arg;
    /* Until the main thread calls pcap_breakloop. */
    pcap_loop(w->p, -1, count, (u_char *)w);
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc != 6) {
        fprintf(stderr, "usage: %s DEV THREADS GROUP MODE SECONDS\n", argv[0]);
        return 2;
    }
    const char *dev = argv[1];
    int n = atoi(argv[2]), group = atoi(argv[3]), seconds = atoi(argv[5]);
    const char *mode = argv[4];
    if (n < 1 || n > 64) {
        fprintf(stderr, "THREADS: 1 to 64\n");
        return 2;
    }
    struct worker w[64];
    pthread_t t[64];
    char errbuf[PCAP_ERRBUF_SIZE];
    for (int i = 0; i < n; i++) {
        w[i].p = pcap_open_live(dev, 65535, 1, 100, errbuf);
        if (w[i].p == NULL) {
            fprintf(stderr, "%s: %s\n", dev, errbuf);
            return 1;
        }
        if (pcap_fanout(w[i].p, group, mode) != 0) {
            fprintf(stderr, "pcap_fanout: %s\n", pcap_geterr(w[i].p));
            return 1;
        }
        w[i].packets = 0;
    }
    fprintf(stderr, "ready: %d threads in group %d (%s)\n", n, group, mode);
    for (int i = 0; i < n; i++)
        pthread_create(&t[i], NULL, run, &w[i]);
    sleep(seconds);
    for (int i = 0; i < n; i++)
        pcap_breakloop(w[i].p);
    unsigned long total = 0;
    for (int i = 0; i < n; i++) {
        pthread_join(t[i], NULL);
        printf("thread %d: %lu packets\n", i, w[i].packets);
        total += w[i].packets;
        pcap_close(w[i].p);
    }
    printf("total: %lu\n", total);
    return 0;
}
