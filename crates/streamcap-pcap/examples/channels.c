/*
 * channels.c: the channel and IRQ affinity example of pcap-fanout.txt
 * (section VII) on one device.
 *
 *     cc -I crates/streamcap-pcap/include crates/streamcap-pcap/examples/channels.c \
 *        -L target/debug -Wl,-rpath,target/debug -lstreamcap_pcap -lpcap -o channels
 *     ./channels eth0
 *
 * Sets the combined channels of the device to 2 and reads them back; a
 * device without combined channels (a veth) gets 2 receive and 2 transmit
 * channels instead, and a device that can have neither keeps its counts.
 * Then lets CPU 0 serve the interrupt of channel 0 and CPU 1 that of
 * channel 1, and reads both affinities back.
 *
 * Exits 0 when everything the device supports worked (a device without
 * interrupts, such as a veth, makes the affinity calls fail with
 * EOPNOTSUPP, which is reported and accepted), 1 otherwise. Changing
 * channels and affinities needs root.
 *
 * SPDX-License-Identifier: MIT OR Apache-2.0
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "streamcap_pcap.h"

static void print_channels(const char *dev, const char *when, const struct pcap_channels *ch)
{
    printf("%s %s: rx %u tx %u other %u combined %u (maximum rx %u tx %u other %u combined %u)\n",
           dev, when, ch->rx_count, ch->tx_count, ch->other_count, ch->combined_count,
           ch->max_rx, ch->max_tx, ch->max_other, ch->max_combined);
}

/* Sets the affinity of `channel` to `cpu` and reads it back. Returns 1 on
 * success, 0 when the device has no interrupts, -1 on another failure. */
static int set_affinity(const char *dev, int channel, int cpu)
{
    cpu_set_t cpuset;
    CPU_ZERO(&cpuset);
    CPU_SET(cpu, &cpuset);
    if (pcap_channel_setaffinity(dev, channel, &cpuset) != 1) {
        int err = errno;
        printf("channel %d on CPU %d: not set: %s\n", channel, cpu, strerror(err));
        return err == EOPNOTSUPP ? 0 : -1;
    }
    CPU_ZERO(&cpuset);
    if (pcap_channel_getaffinity(dev, channel, &cpuset) != 1) {
        printf("channel %d: affinity not read back: %s\n", channel, strerror(errno));
        return -1;
    }
    printf("channel %d now served by CPUs:", channel);
    for (int c = 0; c < CPU_SETSIZE; c++)
        if (CPU_ISSET(c, &cpuset))
            printf(" %d", c);
    printf("\n");
    return CPU_ISSET(cpu, &cpuset) && CPU_COUNT(&cpuset) == 1 ? 1 : -1;
}

int main(int argc, char **argv)
{
    const char *dev = argc > 1 ? argv[1] : "eth0";
    char errbuf[PCAP_ERRBUF_SIZE];
    struct pcap_channels ch = { .combined_count = 2 };

    printf("%s\n", pcap_lib_version());

    /* The paper's request: 2 combined channels. */
    int changed = 1;
    if (pcap_set_channels(dev, &ch, PCAP_COMBINED_CHANNELS, errbuf) != 1) {
        printf("pcap_set_channels(%s, combined 2): %s\n", dev, errbuf);
        if (pcap_get_channels(dev, &ch, errbuf) != 1) {
            printf("pcap_get_channels(%s): %s\n", dev, errbuf);
            return 1;
        }
        print_channels(dev, "has", &ch);
        if (ch.max_combined >= 2)
            return 1; /* the device has them: a real failure */
        if (ch.max_rx >= 2 && ch.max_tx >= 2) {
            /* No combined channels: 2 receive and 2 transmit ones instead. */
            printf("%s has no combined channels: setting rx 2 and tx 2 instead\n", dev);
            struct pcap_channels split = { .rx_count = 2, .tx_count = 2 };
            if (pcap_set_channels(dev, &split, PCAP_RX_CHANNELS | PCAP_TX_CHANNELS, errbuf) != 1) {
                printf("pcap_set_channels(%s, rx 2 tx 2): %s\n", dev, errbuf);
                return 1;
            }
        } else {
            printf("%s cannot have 2 channels: counts left as they are\n", dev);
            changed = 0;
        }
    }

    /* The full configuration, read back. */
    if (pcap_get_channels(dev, &ch, errbuf) != 1) {
        printf("pcap_get_channels(%s): %s\n", dev, errbuf);
        return 1;
    }
    print_channels(dev, "now", &ch);
    if (changed && ch.combined_count != 2 && (ch.rx_count != 2 || ch.tx_count != 2)) {
        printf("%s: the counts did not change\n", dev);
        return 1;
    }

    /* Channel 0 on CPU 0, channel 1 on CPU 1. */
    int r0 = set_affinity(dev, 0, 0);
    int r1 = set_affinity(dev, 1, 1);
    if (r0 < 0 || r1 < 0)
        return 1;
    if (r0 == 0 || r1 == 0)
        printf("%s has no IRQ affinity to set (a device without interrupts)\n", dev);
    return 0;
}
