/*
 * streamcap_pcap.h: what libstreamcap_pcap.so adds to libpcap.
 *
 * Programs that only need the environment variables and the configuration
 * file (PCAP_GROUP, PCAP_FANOUT, PCAP_CONFIG, PCAP_LOCALITY, ...) need no
 * header at all: they run unmodified under
 *
 *     LD_PRELOAD=libstreamcap_pcap.so program ...
 *
 * A program that calls these functions links the library before libpcap:
 *
 *     cc prog.c $(pkg-config --cflags --libs streamcap-pcap)
 *
 * SPDX-License-Identifier: MIT OR Apache-2.0
 */
#ifndef STREAMCAP_PCAP_H
#define STREAMCAP_PCAP_H

#include <pcap/pcap.h>
#include <sched.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Joins the live handle `p` (activated) to kernel fan-out group `group`
 * (0 to 65535) of its interface with mode `fanout`: "hash" (symmetric,
 * flow-affine, IP fragments reassembled first), "lb" or "round_robin",
 * "cpu", "rollover", "rnd", "qm"; "+rollover" after a mode adds the
 * rollover flag ("hash+rollover"). Every socket of a group must use the
 * same mode. Returns 0, or -1 with the reason in pcap_geterr(p).
 */
int pcap_fanout(pcap_t *p, int group, const char *fanout);

/* The channels (queues) of a device, as ethtool -l shows them. */
struct pcap_channels {
    unsigned int max_rx;
    unsigned int max_tx;
    unsigned int max_other;
    unsigned int max_combined;
    unsigned int rx_count;
    unsigned int tx_count;
    unsigned int other_count;
    unsigned int combined_count;
};

/* Which counts pcap_set_channels changes. */
#define PCAP_RX_CHANNELS       0x1
#define PCAP_TX_CHANNELS       0x2
#define PCAP_OTHER_CHANNELS    0x4
#define PCAP_COMBINED_CHANNELS 0x8

/*
 * Sets the counts of `ch` selected by `channel_mask` on device `dev`
 * (ethtool -L; needs CAP_NET_ADMIN); the other counts keep their values.
 * A count above the device's maximum is refused before the kernel is
 * asked. Returns 1, or -1 with the reason in `errbuf` (PCAP_ERRBUF_SIZE
 * bytes, or NULL for no message). NULL `dev` or `ch` gives -1.
 */
int pcap_set_channels(const char *dev, const struct pcap_channels *ch,
                      int channel_mask, char *errbuf);

/* Reads the channels of `dev` into `info`. Returns 1, or -1 as above. */
int pcap_get_channels(const char *dev, struct pcap_channels *info, char *errbuf);

/*
 * Sets (or reads) the CPUs that serve the interrupt of channel `channel`
 * of `dev` (/proc/irq/N/smp_affinity_list; setting needs root). The
 * interrupt is the one whose name in /proc/interrupts carries the
 * device's name and the channel's number (eth0-TxRx-3, eth0-rx-3,
 * virtio2-input.3, ...). Returns 1, or -1 with errno set and a message on
 * stderr: EINVAL (NULL argument, negative or unknown channel, empty set,
 * CPUs the kernel refused), ENODEV (no such device), EOPNOTSUPP (a virtual
 * device such as a veth, which has no interrupts), EPERM (not root).
 */
int pcap_channel_setaffinity(const char *dev, int channel, const cpu_set_t *cpuset);
int pcap_channel_getaffinity(const char *dev, int channel, cpu_set_t *cpuset);

#ifdef __cplusplus
}
#endif

#endif /* STREAMCAP_PCAP_H */
