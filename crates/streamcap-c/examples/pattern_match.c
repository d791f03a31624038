/*
 * pattern_match.c: the pattern-matching (NIDS) example of Scap (section
 * III, the second application of section VII) in C on streamcap.
 *
 * Every stream is searched for a set of patterns, on numCPU worker
 * threads, as the paper's listing does. The chunks overlap by the longest
 * pattern's length less one byte, so a pattern that spans two chunks is
 * found too; a stream is counted once, at its first match, and then
 * discarded (its later bytes are not even copied).
 *
 *   cc pattern_match.c $(pkg-config --cflags --libs streamcap) -o pattern_match
 *   ./pattern_match samples/sample.pcap [-t THREADS] [-c CHUNK_SIZE] [PATTERN...]
 *
 * Without patterns it looks for "HTTP/1.1", "User-Agent:" and "SSH-2.0".
 * The last line is what the test suite compares with a count in Rust:
 *   streams matched M of S
 */
#define _POSIX_C_SOURCE 200809L
#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <streamcap.h>

#define MAX_PATTERNS 64

static const char *patterns[MAX_PATTERNS];
static size_t pattern_len[MAX_PATTERNS];
static size_t npatterns;

/* Callbacks of different connections run concurrently on the worker
 * threads: shared counters are atomic. */
static atomic_uint_fast64_t matched_streams;
static atomic_uint_fast64_t all_streams;

/* The marker stored in a stream's user_state once it matched. */
static char matched_marker;

/* The paper's search(dfa, data, len, MatchFound): here a plain search for
 * each pattern. Returns the index of the first pattern found, or -1. */
static int search(const uint8_t *data, size_t len, size_t *at)
{
    for (size_t p = 0; p < npatterns; p++) {
        size_t n = pattern_len[p];
        for (size_t i = 0; n <= len && i <= len - n; i++) {
            if (data[i] == (uint8_t)patterns[p][0] && memcmp(data + i, patterns[p], n) == 0) {
                *at = i;
                return (int)p;
            }
        }
    }
    return -1;
}

/* Scap's stream_process(): the data callback. */
static void stream_process(sc_t *sc, sc_stream_t *sd, void *user)
{
    size_t at;
    int p;
    (void)user;
    if (sd->user_state == &matched_marker)
        return; /* counted already */
    p = search(sd->data, sd->data_len, &at);
    if (p < 0)
        return;
    sd->user_state = &matched_marker;
    atomic_fetch_add(&matched_streams, 1);
    printf("match \"%s\" in %s:%u -> %s:%u at stream offset %" PRIu64 "\n", patterns[p],
           sd->src_ip, (unsigned)sd->src_port, sd->dst_ip, (unsigned)sd->dst_port,
           sd->data_offset + (uint64_t)at);
    /* Nothing more is needed from this stream. */
    if (sc_discard_stream(sc, sd) != SC_OK)
        fprintf(stderr, "pattern_match: %s\n", sc_last_error());
}

static void stream_close(sc_t *sc, sc_stream_t *sd, void *user)
{
    (void)sc;
    (void)sd;
    (void)user;
    atomic_fetch_add(&all_streams, 1);
}

int main(int argc, char **argv)
{
    long threads = sysconf(_SC_NPROCESSORS_ONLN);
    long chunk_size = 0;
    size_t longest = 0;
    sc_t *sc = NULL;

    if (argc < 2) {
        fprintf(stderr, "usage: %s CAPTURE [-t THREADS] [-c CHUNK_SIZE] [PATTERN...]\n", argv[0]);
        return 2;
    }
    for (int i = 2; i < argc; i++) {
        if (strcmp(argv[i], "-t") == 0 && i + 1 < argc) {
            threads = strtol(argv[++i], NULL, 10);
        } else if (strcmp(argv[i], "-c") == 0 && i + 1 < argc) {
            chunk_size = strtol(argv[++i], NULL, 10);
        } else if (npatterns < MAX_PATTERNS && argv[i][0] != '\0') {
            patterns[npatterns++] = argv[i];
        }
    }
    if (npatterns == 0) {
        patterns[npatterns++] = "HTTP/1.1";
        patterns[npatterns++] = "User-Agent:";
        patterns[npatterns++] = "SSH-2.0";
    }
    for (size_t p = 0; p < npatterns; p++) {
        pattern_len[p] = strlen(patterns[p]);
        if (pattern_len[p] > longest)
            longest = pattern_len[p];
    }
    if (threads < 1)
        threads = 1;

    if (sc_create(argv[1], 512u << 20, SC_TCP_FAST, 0, &sc) != SC_OK)
        goto fail;
    if (sc_set_worker_threads(sc, (int)threads) != SC_OK)
        goto fail;
    if (chunk_size > 0 && sc_set_parameter(sc, SC_PARAM_CHUNK_SIZE, chunk_size) != SC_OK)
        goto fail;
    if (sc_set_parameter(sc, SC_PARAM_OVERLAP, (int64_t)longest - 1) != SC_OK)
        goto fail;
    if (sc_dispatch_data(sc, stream_process, NULL) != SC_OK)
        goto fail;
    if (sc_dispatch_termination(sc, stream_close, NULL) != SC_OK)
        goto fail;
    if (sc_start_capture(sc) != SC_OK)
        goto fail;
    printf("streams matched %" PRIu64 " of %" PRIu64 "\n", (uint64_t)atomic_load(&matched_streams),
           (uint64_t)atomic_load(&all_streams));
    sc_close(sc);
    return 0;

fail:
    fprintf(stderr, "pattern_match: %s\n", sc_last_error());
    sc_close(sc);
    return 1;
}
