/*
 * nids_match: libnids + Hyperscan, the C baseline of `streamcap nids`.
 * Reads the content strings of a Suricata rules file, compiles them with
 * hs_compile_lit_multi (the automaton streamcap uses by default), and
 * matches them on a capture's streams:
 *
 *   - TCP (rules `alert tcp ...`): both directions of every connection
 *     libnids establishes, each direction its own Hyperscan stream
 *     (HS_MODE_STREAM) fed every chunk of new data as libnids delivers it,
 *     so a pattern split across segments is found;
 *   - UDP (rules `alert udp ...`): every datagram libnids hands over
 *     (nids_register_udp), matched alone (HS_MODE_BLOCK), as Suricata and
 *     streamcap match UDP per datagram.
 *
 * A rule alerts at most once per stream direction: per TCP half-stream, and
 * per UDP (source, destination) address and port pair. Only `content:"..."`
 * (literal bytes and |hex| blocks, the escapes \" \; \\ and \|) and
 * `nocase` are read; the first content of a rule is its pattern; rules of
 * other protocols, or without a content, are counted as skipped. libnids
 * sees IPv4 only.
 *
 *   nids_match RULES FILE [N_TCP_STREAMS]
 *
 * With NIDS_MATCH_SCAN_ONLY=1 in the environment, libnids runs first and
 * every Hyperscan call it would make (open, scan, close of each
 * half-stream; each UDP datagram) is recorded in memory with its bytes;
 * then the recording is replayed through the same databases, callbacks and
 * alert sets, and the replay alone is timed. Its alerts equal a normal
 * run's; its time is what the automaton costs on these bytes with nothing
 * else running: the floor of any tool that matches them with it. The
 * output line then ends with scan_cpu_s=C scan_wall_s=W.
 *
 * Output (one line, parsed by streamcap-bench):
 *   streams=N alerts=A tcp_alerts=T udp_alerts=U rules=R skipped=S
 *   udp_datagrams=D bytes=B load_ms=L
 * (streams: TCP connections established; bytes: TCP bytes scanned;
 * load_ms: reading and compiling the rules.)
 */
#include <hs/hs.h>
#include <nids.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct pattern {
    unsigned char *bytes;
    size_t len;
    int nocase;
};

struct patterns {
    struct pattern *v;
    unsigned n, cap;
};

static struct patterns tcp_pats, udp_pats;
static unsigned long long n_rules, n_skipped;
static hs_database_t *tcp_db, *udp_db;
static hs_scratch_t *scratch;
static unsigned long long n_streams, n_datagrams, n_bytes;
static unsigned long long tcp_alerts, udp_alerts;

/* NIDS_MATCH_SCAN_ONLY: the recording of Hyperscan calls. */
enum rec_op { REC_OPEN, REC_SCAN, REC_CLOSE, REC_UDP };
struct rec {
    uint32_t op, id, len; /* id: half-stream number; len: bytes after it */
};
static int scan_only;
static unsigned char *rec_buf;
static size_t rec_len, rec_cap;
static uint32_t n_halves;

static void *xrealloc(void *p, size_t n)
{
    p = realloc(p, n);
    if (!p) {
        fprintf(stderr, "nids_match: out of memory\n");
        exit(1);
    }
    return p;
}

static int hexval(int c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* Decodes the content string starting at s (just after the opening quote)
 * into out; returns the length, or -1 on a malformed string. */
static long parse_content(const char *s, unsigned char *out, size_t cap)
{
    size_t n = 0;
    int hex = 0, nib = -1;
    for (; *s; s++) {
        int c = (unsigned char)*s;
        if (hex) {
            if (c == '|') {
                if (nib >= 0)
                    return -1;
                hex = 0;
            } else if (c == ' ') {
                continue;
            } else {
                int v = hexval(c);
                if (v < 0)
                    return -1;
                if (nib < 0) {
                    nib = v;
                } else {
                    if (n >= cap)
                        return -1;
                    out[n++] = (unsigned char)(nib << 4 | v);
                    nib = -1;
                }
            }
            continue;
        }
        if (c == '"')
            return hex ? -1 : (long)n;
        if (c == '|') {
            hex = 1;
            continue;
        }
        if (c == '\\') {
            s++;
            if (!*s)
                return -1;
            c = (unsigned char)*s;
        }
        if (n >= cap)
            return -1;
        out[n++] = (unsigned char)c;
    }
    return -1;
}

static void add_pattern(struct patterns *p, const unsigned char *b, size_t len, int nocase)
{
    if (p->n == p->cap) {
        p->cap = p->cap ? 2 * p->cap : 256;
        p->v = xrealloc(p->v, p->cap * sizeof *p->v);
    }
    p->v[p->n].bytes = xrealloc(NULL, len);
    memcpy(p->v[p->n].bytes, b, len);
    p->v[p->n].len = len;
    p->v[p->n].nocase = nocase;
    p->n++;
}

/* One rule per line: "alert PROTO ... (... content:"..."; [nocase;] ...)". */
static int load_rules(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        perror(path);
        return -1;
    }
    char *line = NULL;
    size_t cap = 0;
    unsigned char buf[4096];
    while (getline(&line, &cap, f) > 0) {
        char *s = line;
        while (*s == ' ' || *s == '\t')
            s++;
        if (*s == '#' || *s == '\n' || *s == '\0')
            continue;
        n_rules++;
        char action[16], proto[16];
        if (sscanf(s, "%15s %15s", action, proto) != 2) {
            n_skipped++;
            continue;
        }
        struct patterns *into = !strcmp(proto, "tcp") ? &tcp_pats
                                : !strcmp(proto, "udp") ? &udp_pats
                                                        : NULL;
        char *c = strstr(s, "content:\"");
        long len = c ? parse_content(c + 9, buf, sizeof buf) : -1;
        if (!into || len <= 0) {
            n_skipped++;
            continue;
        }
        /* nocase applies to the content before it: the first one here. */
        char *next = strstr(c + 9, "content:");
        char *nc = strstr(c + 9, "nocase;");
        int nocase = nc && (!next || nc < next);
        add_pattern(into, buf, (size_t)len, nocase);
    }
    free(line);
    fclose(f);
    return 0;
}

static hs_database_t *compile(const struct patterns *p, unsigned mode)
{
    if (p->n == 0)
        return NULL;
    const char **expr = xrealloc(NULL, p->n * sizeof *expr);
    unsigned *flags = xrealloc(NULL, p->n * sizeof *flags);
    unsigned *ids = xrealloc(NULL, p->n * sizeof *ids);
    size_t *lens = xrealloc(NULL, p->n * sizeof *lens);
    for (unsigned i = 0; i < p->n; i++) {
        expr[i] = (const char *)p->v[i].bytes;
        flags[i] = p->v[i].nocase ? HS_FLAG_CASELESS : 0;
        ids[i] = i;
        lens[i] = p->v[i].len;
    }
    hs_database_t *db = NULL;
    hs_compile_error_t *err = NULL;
    if (hs_compile_lit_multi(expr, flags, ids, lens, p->n, mode, NULL, &db, &err) != HS_SUCCESS) {
        fprintf(stderr, "nids_match: hs_compile_lit_multi: %s (pattern %d)\n",
                err && err->message ? err->message : "error", err ? err->expression : -1);
        exit(1);
    }
    free(expr);
    free(flags);
    free(ids);
    free(lens);
    return db;
}

/* The rules one stream direction has alerted on. */
struct seen {
    unsigned *ids;
    unsigned n, cap;
};

/* Adds id; returns 1 when it is new. */
static int seen_add(struct seen *s, unsigned id)
{
    for (unsigned i = 0; i < s->n; i++)
        if (s->ids[i] == id)
            return 0;
    if (s->n == s->cap) {
        s->cap = s->cap ? 2 * s->cap : 8;
        s->ids = xrealloc(s->ids, s->cap * sizeof *s->ids);
    }
    s->ids[s->n++] = id;
    return 1;
}

struct half {
    hs_stream_t *hs;
    struct seen seen;
    uint32_t id; /* recording: this half-stream's number */
};

static void record(uint32_t op, uint32_t id, const void *data, uint32_t len)
{
    struct rec r = {op, id, len};
    size_t need = rec_len + sizeof r + len;
    if (need > rec_cap) {
        rec_cap = rec_cap ? 2 * rec_cap : (size_t)1 << 24;
        while (rec_cap < need)
            rec_cap *= 2;
        rec_buf = xrealloc(rec_buf, rec_cap);
    }
    memcpy(rec_buf + rec_len, &r, sizeof r);
    if (len)
        memcpy(rec_buf + rec_len + sizeof r, data, len);
    rec_len = need;
}

struct conn {
    struct half to_server, to_client;
};

static int on_tcp_match(unsigned id, unsigned long long from, unsigned long long to,
                        unsigned flags, void *ctx)
{
    (void)from; (void)to; (void)flags;
    if (seen_add(&((struct half *)ctx)->seen, id))
        tcp_alerts++;
    return 0;
}

static void scan(struct half *h, const char *data, int len)
{
    if (!h->hs || len <= 0)
        return;
    n_bytes += (unsigned long long)len;
    if (scan_only) {
        record(REC_SCAN, h->id, data, (uint32_t)len);
        return;
    }
    if (hs_scan_stream(h->hs, data, (unsigned)len, 0, scratch, on_tcp_match, h) != HS_SUCCESS) {
        fprintf(stderr, "nids_match: hs_scan_stream failed\n");
        exit(1);
    }
}

static void close_half(struct half *h)
{
    if (scan_only && h->hs) {
        record(REC_CLOSE, h->id, NULL, 0);
        h->hs = NULL;
        return;
    }
    if (h->hs)
        hs_close_stream(h->hs, scratch, on_tcp_match, h);
    h->hs = NULL;
    free(h->seen.ids);
    h->seen.ids = NULL;
}

static void tcp_cb(struct tcp_stream *a, void **param)
{
    struct conn *c = *param;
    switch (a->nids_state) {
    case NIDS_JUST_EST:
        n_streams++;
        if (!tcp_db)
            return;
        a->client.collect++;
        a->server.collect++;
        c = xrealloc(NULL, sizeof *c);
        memset(c, 0, sizeof *c);
        if (scan_only) {
            /* A placeholder: the streams are opened in the replay. */
            c->to_server.hs = c->to_client.hs = (hs_stream_t *)c;
            c->to_server.id = n_halves++;
            c->to_client.id = n_halves++;
            record(REC_OPEN, c->to_server.id, NULL, 0);
            record(REC_OPEN, c->to_client.id, NULL, 0);
            *param = c;
            break;
        }
        if (hs_open_stream(tcp_db, 0, &c->to_server.hs) != HS_SUCCESS ||
            hs_open_stream(tcp_db, 0, &c->to_client.hs) != HS_SUCCESS) {
            fprintf(stderr, "nids_match: hs_open_stream failed\n");
            exit(1);
        }
        *param = c;
        break;
    case NIDS_DATA:
        /* Without nids_discard, data holds only the count_new new bytes;
         * server.data is what the server received (client to server). */
        if (c && a->server.count_new)
            scan(&c->to_server, a->server.data, a->server.count_new);
        if (c && a->client.count_new)
            scan(&c->to_client, a->client.data, a->client.count_new);
        break;
    case NIDS_CLOSE:
    case NIDS_RESET:
    case NIDS_TIMED_OUT:
    case NIDS_EXITING:
        if (c) {
            close_half(&c->to_server);
            close_half(&c->to_client);
            free(c);
            *param = NULL;
        }
        break;
    default:
        break;
    }
}

/* UDP: (source, destination, rule) triples alerted, in an open-addressing
 * hash set. */
struct udp_key {
    uint32_t saddr, daddr;
    uint16_t source, dest;
    uint32_t rule;
};

static struct udp_key *udp_set;
static unsigned char *udp_used;
static size_t udp_cap, udp_len;

static uint64_t udp_hash(const struct udp_key *k)
{
    uint64_t h = ((uint64_t)k->saddr << 32 | k->daddr) * 0x9E3779B97F4A7C15ull;
    h ^= ((uint64_t)k->source << 48 | (uint64_t)k->dest << 32 | k->rule) + (h >> 29);
    h *= 0xBF58476D1CE4E5B9ull;
    return h ^ (h >> 31);
}

static int udp_insert(const struct udp_key *k);

static void udp_grow(void)
{
    struct udp_key *old = udp_set;
    unsigned char *old_used = udp_used;
    size_t old_cap = udp_cap;
    udp_cap = udp_cap ? 2 * udp_cap : 1024;
    udp_set = xrealloc(NULL, udp_cap * sizeof *udp_set);
    udp_used = xrealloc(NULL, udp_cap);
    memset(udp_used, 0, udp_cap);
    udp_len = 0;
    for (size_t i = 0; i < old_cap; i++)
        if (old_used[i])
            udp_insert(&old[i]);
    free(old);
    free(old_used);
}

/* Returns 1 when k is new. */
static int udp_insert(const struct udp_key *k)
{
    if (2 * (udp_len + 1) > udp_cap)
        udp_grow();
    size_t i = udp_hash(k) & (udp_cap - 1);
    while (udp_used[i]) {
        if (!memcmp(&udp_set[i], k, sizeof *k))
            return 0;
        i = (i + 1) & (udp_cap - 1);
    }
    udp_used[i] = 1;
    udp_set[i] = *k;
    udp_len++;
    return 1;
}

static int on_udp_match(unsigned id, unsigned long long from, unsigned long long to,
                        unsigned flags, void *ctx)
{
    (void)from; (void)to; (void)flags;
    struct udp_key k = *(const struct udp_key *)ctx;
    k.rule = id;
    if (udp_insert(&k))
        udp_alerts++;
    return 0;
}

static void udp_cb(struct tuple4 *addr, char *buf, int len, struct ip *iph)
{
    (void)iph;
    n_datagrams++;
    if (!udp_db || len <= 0)
        return;
    struct udp_key k;
    memset(&k, 0, sizeof k);
    k.saddr = addr->saddr;
    k.daddr = addr->daddr;
    k.source = addr->source;
    k.dest = addr->dest;
    if (scan_only) {
        record(REC_UDP, 0, &k, sizeof k);
        record(REC_SCAN, 0, buf, (uint32_t)len);
        return;
    }
    if (hs_scan(udp_db, buf, (unsigned)len, 0, scratch, on_udp_match, &k) != HS_SUCCESS) {
        fprintf(stderr, "nids_match: hs_scan failed\n");
        exit(1);
    }
}

static double seconds(clockid_t clock)
{
    struct timespec t;
    clock_gettime(clock, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* Replays the recording; returns its CPU and wall seconds. */
static void replay(double *cpu, double *wall)
{
    struct half *halves = xrealloc(NULL, (n_halves ? n_halves : 1) * sizeof *halves);
    memset(halves, 0, (n_halves ? n_halves : 1) * sizeof *halves);
    double c0 = seconds(CLOCK_PROCESS_CPUTIME_ID), w0 = seconds(CLOCK_MONOTONIC);
    size_t at = 0;
    while (at < rec_len) {
        struct rec r;
        memcpy(&r, rec_buf + at, sizeof r);
        const unsigned char *data = rec_buf + at + sizeof r;
        at += sizeof r + r.len;
        struct half *h = &halves[r.id];
        switch (r.op) {
        case REC_OPEN:
            if (hs_open_stream(tcp_db, 0, &h->hs) != HS_SUCCESS) {
                fprintf(stderr, "nids_match: hs_open_stream failed\n");
                exit(1);
            }
            break;
        case REC_SCAN:
            if (hs_scan_stream(h->hs, (const char *)data, r.len, 0, scratch, on_tcp_match, h) !=
                HS_SUCCESS) {
                fprintf(stderr, "nids_match: hs_scan_stream failed\n");
                exit(1);
            }
            break;
        case REC_CLOSE:
            hs_close_stream(h->hs, scratch, on_tcp_match, h);
            h->hs = NULL;
            free(h->seen.ids);
            h->seen.ids = NULL;
            break;
        case REC_UDP: {
            struct udp_key k;
            memcpy(&k, data, sizeof k);
            struct rec d;
            memcpy(&d, rec_buf + at, sizeof d);
            const char *dg = (const char *)rec_buf + at + sizeof d;
            at += sizeof d + d.len;
            if (hs_scan(udp_db, dg, d.len, 0, scratch, on_udp_match, &k) != HS_SUCCESS) {
                fprintf(stderr, "nids_match: hs_scan failed\n");
                exit(1);
            }
            break;
        }
        }
    }
    *cpu = seconds(CLOCK_PROCESS_CPUTIME_ID) - c0;
    *wall = seconds(CLOCK_MONOTONIC) - w0;
    free(halves);
}

static void quiet_syslog(int type, int err, struct ip *iph, void *data)
{
    (void)type; (void)err; (void)iph; (void)data;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: %s RULES FILE [N_TCP_STREAMS]\n", argv[0]);
        return 2;
    }
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    const char *so = getenv("NIDS_MATCH_SCAN_ONLY");
    scan_only = so && *so && strcmp(so, "0") != 0;
    if (load_rules(argv[1]) < 0)
        return 1;
    tcp_db = compile(&tcp_pats, HS_MODE_STREAM);
    udp_db = compile(&udp_pats, HS_MODE_BLOCK);
    if (!tcp_db && !udp_db) {
        fprintf(stderr, "nids_match: no tcp or udp content rule in %s\n", argv[1]);
        return 1;
    }
    /* One scratch serves both databases. */
    if ((tcp_db && hs_alloc_scratch(tcp_db, &scratch) != HS_SUCCESS) ||
        (udp_db && hs_alloc_scratch(udp_db, &scratch) != HS_SUCCESS)) {
        fprintf(stderr, "nids_match: hs_alloc_scratch failed\n");
        return 1;
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);

    nids_params.filename = argv[2];
    nids_params.device = NULL;
    nids_params.n_tcp_streams = argc > 3 ? atoi(argv[3]) : 1 << 18;
    nids_params.n_hosts = 1 << 12;
    nids_params.scan_num_hosts = 0; /* no port-scan detection */
    nids_params.syslog = quiet_syslog;
    nids_params.promisc = 0;
    nids_params.one_loop_less = 0;

    struct nids_chksum_ctl ctl;
    memset(&ctl, 0, sizeof ctl);
    ctl.action = NIDS_DONT_CHKSUM;
    nids_register_chksum_ctl(&ctl, 1);

    if (!nids_init()) {
        fprintf(stderr, "nids_init: %s\n", nids_errbuf);
        return 1;
    }
    nids_register_tcp(tcp_cb);
    nids_register_udp(udp_cb);
    nids_run();
    nids_exit(); /* streams still open get NIDS_EXITING */
    double scan_cpu = 0, scan_wall = 0;
    if (scan_only)
        replay(&scan_cpu, &scan_wall);
    printf("streams=%llu alerts=%llu tcp_alerts=%llu udp_alerts=%llu rules=%llu skipped=%llu "
           "udp_datagrams=%llu bytes=%llu load_ms=%.0f",
           n_streams, tcp_alerts + udp_alerts, tcp_alerts, udp_alerts, n_rules, n_skipped,
           n_datagrams, n_bytes,
           (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6);
    if (scan_only)
        printf(" scan_cpu_s=%.3f scan_wall_s=%.3f", scan_cpu, scan_wall);
    printf("\n");
    hs_free_scratch(scratch);
    hs_free_database(tcp_db);
    hs_free_database(udp_db);
    return 0;
}
