//! Which worker owns a packet: the in-process fan-out used for file input.
//!
//! Every worker of a file run reads the whole (page-cached) file and keeps
//! only the packets of its own shard; no packet is copied or queued between
//! threads. A [`Shard`] decides ownership from the decoded
//! headers, so that the decision is the same in every worker and every packet
//! has exactly one owner:
//!
//! - [`Fanout::Hash`]: a keyed hash of the engine's canonical
//!   [`FlowKey`] (addresses, ports, protocol, VLAN), symmetric by
//!   construction — both directions of a connection have the same key, so
//!   they land on the same worker (flow affinity). The hasher is seeded
//!   randomly per run, so an attacker cannot aim every flow at one worker.
//! - [`Fanout::Locality`]: `min(src port, dst port)` modulo the worker count,
//!   after the locality-buffering paper: the flows of one service (port 80,
//!   port 443…) share a worker and its caches. Port-less protocols fall back
//!   to the flow hash. Also flow-affine.
//!
//! IP fragments need care: only the first fragment carries the ports. Every
//! worker therefore feeds every fragment to its own (identical, deterministic)
//! defragmenter, and the reassembled datagram is owned by the worker its flow
//! key points to — the in-process equivalent of the kernel's "hash with
//! defrag". The per-packet counters of a fragment are counted by exactly one
//! worker, chosen from the fragment's identity ([`Shard::owns_fragment`]), so
//! summed statistics count each frame once.

use crate::decode::defrag::FragKey;
use crate::decode::tunnel::Decapsulator;
use crate::decode::NetPacket;
use crate::flow::FlowKey;
use hashbrown::DefaultHashBuilder;
use std::fmt;
use std::hash::BuildHasher;
use std::str::FromStr;

/// How packets are split between the workers of a file run.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Default)]
pub enum Fanout {
    /// Symmetric keyed hash of the flow key: flow-affine, balanced.
    #[default]
    Hash,
    /// By `min(src port, dst port)`: flow-affine, groups flows by service.
    Locality,
}

impl Fanout {
    /// The mode's name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Fanout::Hash => "hash",
            Fanout::Locality => "locality",
        }
    }
}

impl fmt::Display for Fanout {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Fanout {
    type Err = String;
    fn from_str(s: &str) -> Result<Fanout, String> {
        match s {
            "hash" => Ok(Fanout::Hash),
            "locality" => Ok(Fanout::Locality),
            other => Err(format!(
                "unknown in-process fan-out mode {other:?} (expected hash or locality)"
            )),
        }
    }
}

/// One worker's share of the traffic: its index among `count` workers, the
/// mode, and the run's hash seed (the same in every worker of a run).
#[derive(Clone, Debug)]
pub struct Shard {
    index: usize,
    count: usize,
    mode: Fanout,
    hasher: DefaultHashBuilder,
    /// The UDP tunnel ports: tunnel packets are owned by their outer
    /// addresses alone (see [`Shard::owns_packet`]).
    tunnels: Option<Decapsulator>,
}

impl Shard {
    /// Shards of one run: `count` of them, sharing one freshly seeded hasher.
    /// `count` is at least 1.
    pub fn split(count: usize, mode: Fanout) -> Vec<Shard> {
        let count = count.max(1);
        let hasher = DefaultHashBuilder::default();
        (0..count)
            .map(|index| Shard {
                index,
                count,
                mode,
                hasher,
                tunnels: None,
            })
            .collect()
    }

    /// This shard, taking UDP datagrams to or from the tunnel ports of
    /// `d` as tunnel packets (every shard of a run needs the same).
    pub fn with_tunnels(mut self, d: Decapsulator) -> Shard {
        self.tunnels = Some(d);
        self
    }

    /// This worker's index.
    pub fn index(&self) -> usize {
        self.index
    }

    /// How many workers share the traffic.
    pub fn count(&self) -> usize {
        self.count
    }

    /// The mode.
    pub fn mode(&self) -> Fanout {
        self.mode
    }

    fn pick(&self, n: u64) -> bool {
        (n % self.count as u64) as usize == self.index
    }

    /// Whether this worker owns the connection with canonical key `key`.
    pub fn owns_key(&self, key: &FlowKey) -> bool {
        match self.mode {
            Fanout::Locality if key.has_ports() => self.pick(u64::from(key.min_port())),
            _ => self.pick(self.hasher.hash_one(key)),
        }
    }

    /// Whether this worker owns an unfragmented (or reassembled) IP packet
    /// whose transport header starts `transport`: the ports are read from
    /// its first four bytes for TCP and UDP, as the engine keys the flow (an
    /// ICMP packet is keyed by its addresses alone here, where the engine
    /// adds type and code: every message between two hosts has one owner,
    /// which keeps both directions of each ICMP flow together). A header too short to hold ports is keyed without them, so it
    /// still has exactly one owner (which counts the decode error). UDP
    /// tunnel packets ([`Shard::with_tunnels`]) are keyed without their
    /// ports too: a VXLAN sender picks the source port per inner flow, so
    /// the two directions of one inner connection come in outer datagrams
    /// with different ports, and must meet in one worker.
    pub fn owns_packet(&self, net: &NetPacket<'_>, transport: &[u8]) -> bool {
        self.owns_key(&routing_key(net, transport, self.tunnels.as_ref()))
    }

    /// Whether this worker counts the frame of an IP fragment (every worker
    /// reassembles every fragment; one counts it).
    pub fn owns_fragment(&self, key: &FragKey) -> bool {
        self.pick(self.hasher.hash_one(key))
    }

    /// Whether this worker counts a frame that is not IP or does not decode,
    /// by its record number in the input.
    pub fn owns_record(&self, record: u64) -> bool {
        self.pick(record)
    }
}

/// The key a packet is routed by (to a [`Shard`], or to a bucket in
/// [`crate::dispatch::offload`]): the canonical [`FlowKey`] of an
/// unfragmented (or reassembled) IP packet whose transport header starts
/// `transport`, with the ports for TCP and UDP only, and none for UDP
/// tunnel packets when `tunnels` knows their ports (see
/// [`Shard::owns_packet`] for why).
#[inline]
pub(crate) fn routing_key(
    net: &NetPacket<'_>,
    transport: &[u8],
    tunnels: Option<&Decapsulator>,
) -> FlowKey {
    let (sport, dport) = match (net.proto, transport.get(..4)) {
        (6 | 17, Some(p)) => (
            u16::from_be_bytes([p[0], p[1]]),
            u16::from_be_bytes([p[2], p[3]]),
        ),
        _ => (0, 0),
    };
    let tunnel = net.proto == 17 && tunnels.is_some_and(|d| d.udp_carrier(sport, dport));
    let (sport, dport) = if tunnel { (0, 0) } else { (sport, dport) };
    FlowKey::new(net.src, sport, net.dst, dport, net.proto, net.vlan_key()).0
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::{IpAddr, Ipv4Addr};

    fn key(a: u8, ap: u16, b: u8, bp: u16) -> FlowKey {
        FlowKey::new(
            IpAddr::V4(Ipv4Addr::new(10, 0, 0, a)),
            ap,
            IpAddr::V4(Ipv4Addr::new(10, 0, 1, b)),
            bp,
            6,
            0,
        )
        .0
    }

    #[test]
    fn every_key_has_exactly_one_owner_in_both_directions() {
        for mode in [Fanout::Hash, Fanout::Locality] {
            let shards = Shard::split(3, mode);
            let mut per = [0usize; 3];
            for i in 0..600u16 {
                let k = key((i % 200) as u8, 1024 + i, 7, 80 + i % 5);
                let rev = FlowKey::new(
                    IpAddr::V4(Ipv4Addr::new(10, 0, 1, 7)),
                    80 + i % 5,
                    IpAddr::V4(Ipv4Addr::new(10, 0, 0, (i % 200) as u8)),
                    1024 + i,
                    6,
                    0,
                )
                .0;
                let owners: Vec<usize> = shards
                    .iter()
                    .filter(|s| s.owns_key(&k))
                    .map(Shard::index)
                    .collect();
                assert_eq!(owners.len(), 1, "{mode}: one owner");
                assert!(
                    shards[owners[0]].owns_key(&rev),
                    "{mode}: same owner both ways"
                );
                per[owners[0]] += 1;
            }
            if mode == Fanout::Hash {
                assert!(per.iter().all(|&n| n > 120), "hash spreads flows: {per:?}");
            }
        }
    }

    #[test]
    fn locality_groups_by_the_lower_port() {
        let shards = Shard::split(4, Fanout::Locality);
        let a = key(1, 40000, 2, 443);
        let b = key(3, 51234, 9, 443);
        for s in &shards {
            assert_eq!(s.owns_key(&a), s.owns_key(&b));
        }
        assert!(shards[443 % 4].owns_key(&a));
    }

    #[test]
    fn records_and_fragments_have_one_owner() {
        let shards = Shard::split(2, Fanout::Hash);
        for r in 1..100u64 {
            assert_eq!(shards.iter().filter(|s| s.owns_record(r)).count(), 1);
        }
        let fk = FragKey {
            src: IpAddr::V4(Ipv4Addr::new(1, 2, 3, 4)),
            dst: IpAddr::V4(Ipv4Addr::new(5, 6, 7, 8)),
            id: 77,
            proto: 17,
            vlan: 0,
        };
        assert_eq!(shards.iter().filter(|s| s.owns_fragment(&fk)).count(), 1);
    }

    #[test]
    fn mode_names_round_trip() {
        for m in [Fanout::Hash, Fanout::Locality] {
            assert_eq!(m.name().parse::<Fanout>(), Ok(m));
        }
        assert!("lb".parse::<Fanout>().is_err());
    }
}
