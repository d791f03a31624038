/*
 * api_test.c: the C API's contract, checked from C (run by
 * tests/c_api.rs, also under valgrind): error codes and messages, stream
 * control inside and outside callbacks, sc_next_stream_packet, sc_stop,
 * and panics that come back as SC_ERR_PANIC.
 *
 *   api_test CAPTURE_FILE [--no-libpcap]
 *
 * Prints one line per failed check and "api_test: N checks, F failed";
 * exits 1 if any failed.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <streamcap.h>

static int checks, failures;

#define CHECK(cond, ...)                                                                           \
    do {                                                                                           \
        checks++;                                                                                  \
        if (!(cond)) {                                                                             \
            failures++;                                                                            \
            printf("FAILED line %d: %s: ", __LINE__, #cond);                                       \
            printf(__VA_ARGS__);                                                                   \
            printf(" (last error: %s)\n", sc_last_error());                                        \
        }                                                                                          \
    } while (0)

static int contains(const char *s, const char *part)
{
    return s != NULL && strstr(s, part) != NULL;
}

/* ---- callbacks ---------------------------------------------------------- */

struct seen {
    sc_t *sc;
    uint64_t created, closed, data_events, data_bytes;
    uint64_t packets, packet_bytes, packet_mismatches;
    uint64_t wrong_state_ok; /* calls that should have failed but did not */
    uint64_t control_failed; /* calls that should have worked but did not */
    uint64_t state_leaks;    /* user_state not handed back */
    uint64_t stop_after;     /* sc_stop at this stream's creation (0: never) */
};

struct per_stream {
    uint64_t data_events;
};

static void on_create(sc_t *sc, sc_stream_t *sd, void *user)
{
    struct seen *s = user;
    sc_pkthdr_t h;
    s->created++;
    if (sc != s->sc || sd->user_state != NULL || sd->created != 1 || sd->status != SC_STATUS_ACTIVE)
        s->control_failed++;
    /* Valid only in the data callback. */
    if (sc_keep_stream_chunk(sc, sd) != SC_ERR_STATE)
        s->wrong_state_ok++;
    if (sc_next_stream_packet(sd, &h) != NULL)
        s->wrong_state_ok++;
    /* Not while a capture runs. */
    if (sc_set_cutoff(sc, 5) != SC_ERR_STATE || sc_close(sc) != SC_ERR_STATE ||
        sc_start_capture(sc) != SC_ERR_STATE)
        s->wrong_state_ok++;
    {
        sc_stats_t st;
        if (sc_get_stats(sc, &st) != SC_ERR_STATE)
            s->wrong_state_ok++;
    }
    /* Per-stream settings work here. */
    if (sc_set_stream_priority(sc, sd, 7) != SC_OK ||
        sc_set_stream_parameter(sc, sd, SC_PARAM_CHUNK_SIZE, 100) != SC_OK ||
        sc_set_stream_parameter(sc, sd, SC_PARAM_OVERLAP, 10) != SC_OK)
        s->control_failed++;
    if (sc_set_stream_parameter(sc, sd, SC_PARAM_INACTIVITY_TIMEOUT, 1) != SC_ERR_INVALID ||
        sc_set_stream_priority(sc, sd, 256) != SC_ERR_INVALID)
        s->wrong_state_ok++;
    /* Another descriptor is not this callback's. */
    {
        sc_stream_t other = *sd;
        if (sc_discard_stream(sc, &other) != SC_ERR_STATE)
            s->wrong_state_ok++;
    }
    sd->user_state = calloc(1, sizeof(struct per_stream));
    if (s->stop_after != 0 && s->created == s->stop_after && sc_stop(sc) != SC_OK)
        s->control_failed++;
}

static void on_data(sc_t *sc, sc_stream_t *sd, void *user)
{
    struct seen *s = user;
    struct per_stream *ps = sd->user_state;
    const uint8_t *payload;
    sc_pkthdr_t h;
    if (ps == NULL) {
        s->state_leaks++;
        return;
    }
    ps->data_events++;
    s->data_events++;
    s->data_bytes += sd->data_len - sd->data_new;
    if (sd->data == NULL || sd->chunk_size != 100 || sd->priority != 7)
        s->control_failed++;
    /* Each packet's payload, where it is in this chunk, is the chunk's. */
    while ((payload = sc_next_stream_packet(sd, &h)) != NULL) {
        s->packets++;
        s->packet_bytes += h.caplen;
        if (h.caplen > h.len || payload < sd->data || payload + h.caplen > sd->data + sd->data_len ||
            (h.caplen > 0 && (uint64_t)(payload - sd->data) + sd->data_offset != h.offset))
            s->packet_mismatches++;
    }
    /* Keep every other chunk: the next one starts with these bytes. */
    if (ps->data_events % 2 == 1 && sc_keep_stream_chunk(sc, sd) != SC_OK)
        s->control_failed++;
}

static void on_close(sc_t *sc, sc_stream_t *sd, void *user)
{
    struct seen *s = user;
    (void)sc;
    s->closed++;
    if (sd->user_state == NULL)
        s->state_leaks++;
    if (sd->status != SC_STATUS_CLOSED || sd->end_reason == SC_END_NONE ||
        sd->stream_bytes !=
            sd->bytes_captured + sd->bytes_discarded + sd->bytes_dropped + sd->bytes_missing ||
        sd->opposite == NULL || sd->opposite->src_port != sd->dst_port ||
        strcmp(sd->opposite->src_ip, sd->dst_ip) != 0)
        s->control_failed++;
    free(sd->user_state);
    sd->user_state = NULL;
}

/* ---- the checks ----------------------------------------------------------- */

static void arguments(const char *file)
{
    sc_t *sc = (sc_t *)&checks; /* anything but NULL: must be set to NULL */
    sc_stats_t st;
    CHECK(sc_create(NULL, 0, SC_TCP_FAST, 0, &sc) == SC_ERR_INVALID, "NULL name");
    CHECK(sc == NULL, "*out is NULL after a failure");
    CHECK(contains(sc_last_error(), "sc_create: device_or_file is NULL"), "message: %s",
          sc_last_error());
    CHECK(sc_create(file, 0, SC_TCP_FAST, 0, NULL) == SC_ERR_INVALID, "NULL out");
    CHECK(sc_create(file, 0, 7, 0, &sc) == SC_ERR_INVALID, "bad mode");
    CHECK(sc_set_cutoff(NULL, 0) == SC_ERR_INVALID, "NULL handle");
    CHECK(sc_start_capture(NULL) == SC_ERR_INVALID, "NULL handle");
    CHECK(sc_close(NULL) == SC_OK, "sc_close(NULL) is a no-op");
    CHECK(strcmp(sc_strerror(SC_ERR_PANIC), "internal error (a panic was caught)") == 0, "strerror");
    CHECK(strcmp(sc_strerror(12345), "unknown return code") == 0, "strerror");

    CHECK(sc_create(file, SC_DEFAULT, SC_TCP_FAST, 0, &sc) == SC_OK, "create");
    CHECK(sc_get_stats(sc, &st) == SC_OK && st.packets == 0, "zero statistics before a capture");
    CHECK(sc_get_stats(sc, NULL) == SC_ERR_INVALID, "NULL stats");
    CHECK(sc_set_parameter(sc, 4242, 1) == SC_ERR_INVALID, "unknown parameter");
    CHECK(contains(sc_last_error(), "unknown parameter 4242"), "message: %s", sc_last_error());
    CHECK(sc_set_parameter(sc, SC_PARAM_CHUNK_SIZE, 0) == SC_ERR_INVALID, "chunk size 0");
    CHECK(sc_set_parameter(sc, SC_PARAM_BASE_THRESHOLD, 101) == SC_ERR_INVALID, "101 %%");
    CHECK(sc_set_parameter(sc, SC_PARAM_INACTIVITY_TIMEOUT, 30000) == SC_OK, "timeout");
    CHECK(sc_set_worker_threads(sc, 0) == SC_ERR_INVALID, "0 threads");
    CHECK(sc_set_cutoff_direction(sc, 10, 5) == SC_ERR_INVALID, "bad direction");
    CHECK(sc_set_cutoff_direction(sc, 10, SC_DIR_RESP) == SC_OK, "direction cutoff");
    /* Stream control outside any callback. */
    {
        sc_stream_t fake;
        sc_pkthdr_t h;
        memset(&fake, 0, sizeof fake);
        CHECK(sc_discard_stream(sc, &fake) == SC_ERR_STATE, "discard outside a callback");
        CHECK(contains(sc_last_error(), "only valid inside"), "message: %s", sc_last_error());
        CHECK(sc_set_stream_cutoff(sc, &fake, 10) == SC_ERR_STATE, "outside a callback");
        CHECK(sc_keep_stream_chunk(sc, &fake) == SC_ERR_STATE, "outside a callback");
        CHECK(sc_next_stream_packet(&fake, &h) == NULL, "outside a callback");
        CHECK(sc_discard_stream(sc, NULL) == SC_ERR_INVALID, "NULL stream");
    }
    CHECK(sc_close(sc) == SC_OK, "close");
}

static void panics(const char *file)
{
    sc_t *sc = NULL;
    sc_stats_t st;
    CHECK(sc_create(file, SC_DEFAULT, SC_TCP_FAST, 0, &sc) == SC_OK, "create");
    /* A panic in the call itself. */
    CHECK(sc_set_parameter(sc, SC_PARAM_TEST_PANIC, 2) == SC_ERR_PANIC, "panic in the call");
    CHECK(contains(sc_last_error(), "a panic in streamcap was caught") &&
              contains(sc_last_error(), "inside sc_set_parameter"),
          "message: %s", sc_last_error());
    /* A panic on a worker thread, during the capture. */
    CHECK(sc_set_parameter(sc, SC_PARAM_TEST_PANIC, 1) == SC_OK, "arm");
    CHECK(sc_start_capture(sc) == SC_ERR_PANIC, "a worker's panic comes back");
    CHECK(contains(sc_last_error(), "sc_start_capture: internal error") &&
              contains(sc_last_error(), "in a worker thread"),
          "message: %s", sc_last_error());
    /* The handle is still usable. */
    CHECK(sc_set_parameter(sc, SC_PARAM_TEST_PANIC, 0) == SC_OK, "disarm");
    CHECK(sc_set_worker_threads(sc, 2) == SC_OK, "2 workers");
    CHECK(sc_set_parameter(sc, SC_PARAM_TEST_PANIC, 1) == SC_OK, "arm");
    CHECK(sc_start_capture(sc) == SC_ERR_PANIC, "with 2 workers too");
    CHECK(sc_set_parameter(sc, SC_PARAM_TEST_PANIC, 0) == SC_OK, "disarm");
    CHECK(sc_start_capture(sc) == SC_OK, "a capture after the panics");
    CHECK(sc_get_stats(sc, &st) == SC_OK && st.packets > 0, "statistics");
    CHECK(sc_close(sc) == SC_OK, "close");
}

static void callbacks(const char *file, uint64_t *packets, uint64_t *streams)
{
    sc_t *sc = NULL;
    sc_stats_t st;
    struct seen s;
    memset(&s, 0, sizeof s);
    CHECK(sc_create(file, SC_DEFAULT, SC_TCP_FAST, 1, &sc) == SC_OK, "create, need_packets");
    s.sc = sc;
    CHECK(sc_dispatch_creation(sc, on_create, &s) == SC_OK, "dispatch");
    CHECK(sc_dispatch_data(sc, on_data, &s) == SC_OK, "dispatch");
    CHECK(sc_dispatch_termination(sc, on_close, &s) == SC_OK, "dispatch");
    CHECK(sc_start_capture(sc) == SC_OK, "capture");
    CHECK(sc_get_stats(sc, &st) == SC_OK, "statistics");
    CHECK(s.created > 0 && s.created == s.closed && s.created == st.streams,
          "created %" PRIu64 ", closed %" PRIu64 ", streams %" PRIu64, s.created, s.closed,
          st.streams);
    CHECK(s.data_events > 0 && s.data_bytes == st.bytes_captured,
          "data %" PRIu64 " bytes, captured %" PRIu64, s.data_bytes, st.bytes_captured);
    CHECK(s.packets > 0 && s.packet_mismatches == 0 && s.packet_bytes > 0,
          "%" PRIu64 " packets, %" PRIu64 " mismatches", s.packets, s.packet_mismatches);
    CHECK(s.wrong_state_ok == 0, "%" PRIu64 " calls that should have failed", s.wrong_state_ok);
    CHECK(s.control_failed == 0, "%" PRIu64 " calls or fields wrong", s.control_failed);
    CHECK(s.state_leaks == 0, "%" PRIu64 " user states lost", s.state_leaks);
    *packets = st.packets;
    *streams = st.streams;

    /* sc_stop from a callback: the capture ends early, every stream open
     * then is still terminated. */
    memset(&s, 0, sizeof s);
    s.sc = sc;
    s.stop_after = 3;
    CHECK(sc_start_capture(sc) == SC_OK, "capture again");
    CHECK(sc_get_stats(sc, &st) == SC_OK, "statistics");
    CHECK(st.packets < *packets && s.created >= 3 && s.created == s.closed,
          "stopped after %" PRIu64 " of %" PRIu64 " packets, %" PRIu64 " created, %" PRIu64
          " closed",
          st.packets, *packets, s.created, s.closed);
    CHECK(sc_close(sc) == SC_OK, "close");
}

static void filters(const char *file, int have_libpcap, uint64_t all_packets)
{
    sc_t *sc = NULL;
    sc_stats_t st;
    CHECK(sc_create(file, SC_DEFAULT, SC_TCP_FAST, 0, &sc) == SC_OK, "create");
    if (!have_libpcap) {
        CHECK(sc_set_filter(sc, "tcp") == SC_ERR_FILTER, "no libpcap, no filter");
        CHECK(sc_close(sc) == SC_OK, "close");
        return;
    }
    CHECK(sc_set_filter(sc, "nonsense here") == SC_ERR_FILTER, "syntax error");
    CHECK(contains(sc_last_error(), "nonsense here"), "message: %s", sc_last_error());
    CHECK(sc_add_cutoff_class(sc, 0, "nonsense") == SC_ERR_FILTER, "syntax error");
    CHECK(sc_set_filter(sc, "udp") == SC_OK, "filter");
    CHECK(sc_add_cutoff_class(sc, 0, "port 53") == SC_OK, "cutoff class");
    CHECK(sc_start_capture(sc) == SC_OK, "filtered capture");
    CHECK(sc_get_stats(sc, &st) == SC_OK, "statistics");
    CHECK(st.packets_read == all_packets && st.packets > 0 && st.packets < all_packets &&
              st.flows == st.flows_udp,
          "read %" PRIu64 ", matched %" PRIu64 " of %" PRIu64 ", %" PRIu64 " flows, %" PRIu64
          " UDP",
          st.packets_read, st.packets, all_packets, st.flows, st.flows_udp);
    CHECK(sc_set_filter(sc, NULL) == SC_OK, "no filter");
    CHECK(sc_start_capture(sc) == SC_OK, "unfiltered capture");
    CHECK(sc_get_stats(sc, &st) == SC_OK && st.packets == all_packets, "all packets again");
    CHECK(sc_close(sc) == SC_OK, "close");
}

static void sources(void)
{
    sc_t *sc = NULL;
    CHECK(sc_create("no-such-file-or-interface0", SC_DEFAULT, SC_TCP_FAST, 0, &sc) == SC_OK,
          "an interface name is accepted at creation");
    CHECK(sc_start_capture(sc) == SC_ERR_IO, "and refused at the start");
    CHECK(contains(sc_last_error(), "is not a file, and capturing on it as an interface failed"),
          "message: %s", sc_last_error());
    CHECK(sc_close(sc) == SC_OK, "close");
}

int main(int argc, char **argv)
{
    uint64_t packets = 0, streams = 0;
    int have_libpcap = !(argc > 2 && strcmp(argv[2], "--no-libpcap") == 0);
    if (argc < 2) {
        fprintf(stderr, "usage: %s CAPTURE_FILE [--no-libpcap]\n", argv[0]);
        return 2;
    }
    arguments(argv[1]);
    panics(argv[1]);
    callbacks(argv[1], &packets, &streams);
    filters(argv[1], have_libpcap, packets);
    sources();
    printf("api_test: %d checks, %d failed (%" PRIu64 " packets, %" PRIu64 " streams)\n", checks,
           failures, packets, streams);
    return failures == 0 ? 0 : 1;
}
