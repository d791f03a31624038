/*
 * nids_flows: libnids flow statistics. Tracks every TCP connection (and
 * sees every UDP datagram) but collects no stream data.
 *
 *   nids_flows FILE [N_TCP_STREAMS]
 *
 * Output: streams=N closed=X reset=R timedout=T udp_datagrams=U
 */
#include <nids.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static unsigned long long n_streams, n_closed, n_reset, n_timedout, n_udp;

static void tcp_cb(struct tcp_stream *a, void **param)
{
    (void)param;
    switch (a->nids_state) {
    case NIDS_JUST_EST:
        n_streams++; /* collect nothing: statistics only */
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

static void udp_cb(struct tuple4 *addr, char *buf, int len, struct ip *iph)
{
    (void)addr; (void)buf; (void)len; (void)iph;
    n_udp++;
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
    nids_params.scan_num_hosts = 0;
    nids_params.syslog = quiet_syslog;
    nids_params.promisc = 0;

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
    nids_exit();
    printf("streams=%llu closed=%llu reset=%llu timedout=%llu udp_datagrams=%llu\n",
           n_streams, n_closed, n_reset, n_timedout, n_udp);
    return 0;
}
