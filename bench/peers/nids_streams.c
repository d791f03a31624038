/*
 * nids_streams: libnids baseline "deliver every TCP stream, no processing"
 * (the Scap paper's libnids configuration). Collects both directions of
 * every TCP stream libnids establishes, counts the delivered bytes and
 * prints totals.
 *
 *   nids_streams FILE [N_TCP_STREAMS]
 *
 * Output (one line, parsed by streamcap-bench):
 *   streams=N bytes=B client_bytes=C server_bytes=S closed=X reset=R timedout=T
 */
#include <nids.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static unsigned long long n_streams, n_closed, n_reset, n_timedout;
static unsigned long long b_client, b_server;

static void tcp_cb(struct tcp_stream *a, void **param)
{
    (void)param;
    switch (a->nids_state) {
    case NIDS_JUST_EST:
        a->client.collect++;
        a->server.collect++;
        n_streams++;
        break;
    case NIDS_DATA:
        /* Data for the client side is what the server sent, and vice versa. */
        if (a->client.count_new)
            b_client += (unsigned long long)a->client.count_new;
        if (a->server.count_new)
            b_server += (unsigned long long)a->server.count_new;
        break;
    case NIDS_CLOSE:
        n_closed++;
        break;
    case NIDS_RESET:
        n_reset++;
        break;
    case NIDS_TIMED_OUT:
        n_timedout++;
        break;
    default:
        break;
    }
}

static void quiet_syslog(int type, int err, struct ip *iph, void *data)
{
    (void)type; (void)err; (void)iph; (void)data;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s FILE [N_TCP_STREAMS]\n", argv[0]);
        return 2;
    }
    nids_params.filename = argv[1];
    nids_params.device = NULL;
    nids_params.n_tcp_streams = argc > 2 ? atoi(argv[2]) : 1 << 18;
    nids_params.n_hosts = 1 << 12;
    nids_params.scan_num_hosts = 0; /* no port-scan detection */
    nids_params.syslog = quiet_syslog;
    nids_params.promisc = 0;
    nids_params.one_loop_less = 0;

    struct nids_chksum_ctl ctl;
    memset(&ctl, 0, sizeof ctl);
    ctl.netaddr = 0;
    ctl.mask = 0;
    ctl.action = NIDS_DONT_CHKSUM;
    nids_register_chksum_ctl(&ctl, 1);

    if (!nids_init()) {
        fprintf(stderr, "nids_init: %s\n", nids_errbuf);
        return 1;
    }
    nids_register_tcp(tcp_cb);
    nids_run();
    nids_exit(); /* streams still open get NIDS_EXITING */
    printf("streams=%llu bytes=%llu client_bytes=%llu server_bytes=%llu closed=%llu reset=%llu timedout=%llu\n",
           n_streams, b_client + b_server, b_client, b_server, n_closed, n_reset, n_timedout);
    return 0;
}
