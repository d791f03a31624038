/*
 * flow_stats.c: the flow-statistics example of Scap (section III, the
 * first application of section VII) in C on streamcap.
 *
 * The cutoff is 0, so no stream data is delivered at all: the statistics
 * of each stream are read from its descriptor in the termination callback
 * and "exported" as one line per stream, then the totals.
 *
 *   cc flow_stats.c $(pkg-config --cflags --libs streamcap) -o flow_stats
 *   ./flow_stats samples/sample.pcap      # or an interface: ./flow_stats eth0
 *
 * The last lines, the totals, are what the test suite compares with
 * `streamcap flows -r FILE`:
 *   total flows F streams S packets P bytes B     (sums over the streams)
 *   stats packets P wire_bytes W flows F streams S (sc_get_stats)
 */
#include <inttypes.h>
#include <stdio.h>

#include <streamcap.h>

/* What the termination callback adds up. One worker thread (the default)
 * calls it, so plain counters do; with several, see pattern_match.c. */
struct totals {
    uint64_t flows, streams, pkts, bytes;
};

/* Scap's stream_close(): export the stream's statistics. */
static void stream_close(sc_t *sc, sc_stream_t *sd, void *user)
{
    struct totals *t = user;
    (void)sc;
    printf("%s:%u -> %s:%u proto %u %s pkts %" PRIu64 " bytes %" PRIu64
           " stream_bytes %" PRIu64 " start %" PRIu64 ".%09" PRIu64 " end %" PRIu64
           ".%09" PRIu64 "\n",
           sd->src_ip, (unsigned)sd->src_port, sd->dst_ip, (unsigned)sd->dst_port,
           (unsigned)sd->protocol, sd->direction == SC_DIR_ORIG ? "orig" : "resp", sd->pkts,
           sd->bytes, sd->stream_bytes, sd->start_ns / 1000000000u,
           sd->start_ns % 1000000000u, sd->end_ns / 1000000000u, sd->end_ns % 1000000000u);
    /* Every connection has an initiator's stream: count those. */
    if (sd->direction == SC_DIR_ORIG)
        t->flows++;
    t->streams++;
    t->pkts += sd->pkts;
    t->bytes += sd->bytes;
}

int main(int argc, char **argv)
{
    struct totals t = {0, 0, 0, 0};
    sc_stats_t stats;
    sc_t *sc = NULL;

    if (argc < 2) {
        fprintf(stderr, "usage: %s CAPTURE_FILE_OR_INTERFACE\n", argv[0]);
        return 2;
    }
    if (sc_create(argv[1], SC_DEFAULT, SC_TCP_FAST, 0, &sc) != SC_OK)
        goto fail;
    if (sc_set_cutoff(sc, 0) != SC_OK)
        goto fail;
    if (sc_dispatch_termination(sc, stream_close, &t) != SC_OK)
        goto fail;
    if (sc_start_capture(sc) != SC_OK)
        goto fail;
    if (sc_get_stats(sc, &stats) != SC_OK)
        goto fail;
    printf("total flows %" PRIu64 " streams %" PRIu64 " packets %" PRIu64 " bytes %" PRIu64 "\n",
           t.flows, t.streams, t.pkts, t.bytes);
    printf("stats packets %" PRIu64 " wire_bytes %" PRIu64 " flows %" PRIu64 " streams %" PRIu64
           "\n",
           stats.packets, stats.wire_bytes, stats.flows, stats.streams);
    sc_close(sc);
    return 0;

fail:
    fprintf(stderr, "flow_stats: %s\n", sc_last_error());
    sc_close(sc);
    return 1;
}
