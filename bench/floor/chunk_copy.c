/*
 * chunk_copy: the memory cost of chunked stream delivery, with nothing else.
 *
 * Appends TOTAL bytes of packet payload (sizes 200..1379 bytes, mean 790, as
 * in the generated `campus` trace) to STREAMS chunk buffers of CHUNK bytes
 * each, picking the stream of every packet at random (streams interleave);
 * a buffer that cannot take the next payload is "delivered" (its fill goes
 * back to 0, as after a no-op callback). The payload comes from a 1 MiB
 * window read over and over, like streamcap's read buffer, so the source
 * stays in cache and the cost measured is that of the destinations.
 *
 *   cc -O2 -o chunk_copy bench/floor/chunk_copy.c
 *   ./chunk_copy STREAMS CHUNK [MIB]      e.g. ./chunk_copy 10000 16384
 *
 * MIB defaults to 1500 (the payload of the 1.6 GB `campus` trace). Prints
 * the time and the copy rate. See bench/README.md, "The floor on this
 * machine".
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define WINDOW (1L << 20)

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: %s STREAMS CHUNK [MIB]\n", argv[0]);
        return 2;
    }
    long streams = atol(argv[1]), chunk = atol(argv[2]);
    long total = (argc > 3 ? atol(argv[3]) : 1500) << 20;
    if (streams < 1 || chunk < 1380 || total < 1) {
        fprintf(stderr, "%s: STREAMS >= 1, CHUNK >= 1380 (the largest payload), MIB >= 1\n", argv[0]);
        return 2;
    }
    char *bufs = malloc((size_t)streams * chunk);
    long *fill = calloc(streams, sizeof *fill);
    char *win = malloc(WINDOW);
    if (!bufs || !fill || !win) {
        fprintf(stderr, "%s: out of memory\n", argv[0]);
        return 1;
    }
    /* Touch everything first: page faults are not what is measured. */
    memset(bufs, 1, (size_t)streams * chunk);
    memset(win, 2, WINDOW);
    unsigned long x = 88172645463325252UL; /* xorshift64 */
    long done = 0, at = 0, packets = 0;
    double t0 = now();
    while (done < total) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        long s = (long)(x % (unsigned long)streams);
        long len = 200 + (long)((x >> 32) % 1180);
        if (at + len > WINDOW)
            at = 0;
        if (fill[s] + len > chunk)
            fill[s] = 0; /* delivered */
        memcpy(bufs + s * chunk + fill[s], win + at, len);
        fill[s] += len;
        at += len;
        done += len;
        packets++;
    }
    double t = now() - t0;
    printf("%ld streams, %ld-byte chunks: %ld packets, %.1f MB in %.3f s, %.1f GB/s\n",
           streams, chunk, packets, done / 1e6, t, done / t / 1e9);
    /* Use the buffers, so that the copies are not optimised away. */
    return bufs[fill[0] / 2] == 3;
}
