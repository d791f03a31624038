//! Scripted UDP flows.

use std::collections::BTreeMap;
use std::net::SocketAddr;

use crate::capture::{Direction, FlowGenerator, GeneratedFlow, WirePacket};
use crate::packet::{
    build_ip_packet, fragment_ipv4, mac_for, FragmentOrder, IpSpec, LinkSpec, Transport, Vlan,
};
use crate::prng::SplitMix64;
use crate::tcp::{ip_total_len, DEFAULT_START_NS, DEFAULT_STEP_NS};
use crate::truth::{DirectionTruth, EndReason, FlowTruth, Protocol};

/// Builder of a UDP flow: a sequence of datagrams in either direction.
///
/// The truth's per-direction stream is the concatenation of that
/// direction's datagram payloads; `end` is always `none`. Generation is
/// deterministic; the seed only drives IP identification values.
#[derive(Clone, Debug)]
pub struct UdpFlow {
    client: SocketAddr,
    server: SocketAddr,
    client_mac: [u8; 6],
    server_mac: [u8; 6],
    vlan: Vlan,
    datagrams: Vec<(Direction, Vec<u8>)>,
    start_ns: u64,
    step_ns: u64,
    seed: u64,
    ttl: u8,
    label: String,
    fragments: BTreeMap<usize, (usize, FragmentOrder)>,
}

impl UdpFlow {
    /// A flow from `client` (first sender) to `server`, no datagrams yet.
    /// Defaults as for [`TcpConversation::new`](crate::TcpConversation::new).
    ///
    /// # Panics
    /// Panics if the two addresses are of different families.
    pub fn new(client: SocketAddr, server: SocketAddr) -> Self {
        assert_eq!(
            client.is_ipv4(),
            server.is_ipv4(),
            "client and server must be the same IP family"
        );
        Self {
            client,
            server,
            client_mac: mac_for(client.ip()),
            server_mac: mac_for(server.ip()),
            vlan: Vlan::None,
            datagrams: Vec::new(),
            start_ns: DEFAULT_START_NS,
            step_ns: DEFAULT_STEP_NS,
            seed: 0,
            ttl: 64,
            label: "udp".into(),
            fragments: BTreeMap::new(),
        }
    }

    /// Sets the free-form label copied into the truth.
    pub fn label(mut self, label: impl Into<String>) -> Self {
        self.label = label.into();
        self
    }

    /// Sets the seed (IP identification values).
    pub fn seed(mut self, seed: u64) -> Self {
        self.seed = seed;
        self
    }

    /// Sets the VLAN tags of every packet.
    pub fn vlan(mut self, vlan: Vlan) -> Self {
        self.vlan = vlan;
        self
    }

    /// Sets the client and server MAC addresses.
    pub fn macs(mut self, client: [u8; 6], server: [u8; 6]) -> Self {
        self.client_mac = client;
        self.server_mac = server;
        self
    }

    /// Sets the IP TTL / hop limit.
    pub fn ttl(mut self, ttl: u8) -> Self {
        self.ttl = ttl;
        self
    }

    /// Timestamp of the first packet and spacing between packets (ns);
    /// every record, including each fragment, advances by `step_ns`.
    pub fn timing(mut self, start_ns: u64, step_ns: u64) -> Self {
        self.start_ns = start_ns;
        self.step_ns = step_ns;
        self
    }

    /// Appends a datagram (empty payloads are allowed).
    pub fn datagram(mut self, dir: Direction, payload: impl Into<Vec<u8>>) -> Self {
        self.datagrams.push((dir, payload.into()));
        self
    }

    /// Sends datagram `index` as `pieces` IPv4 fragments emitted in `order`.
    ///
    /// # Panics
    /// Panics if the flow is IPv6; at generation, if the index is out of
    /// range or the datagram is too small for `pieces` fragments.
    pub fn fragment_datagram(mut self, index: usize, pieces: usize, order: FragmentOrder) -> Self {
        assert!(
            self.client.is_ipv4(),
            "IPv4 fragmentation needs an IPv4 flow"
        );
        self.fragments.insert(index, (pieces, order));
        self
    }
}

impl FlowGenerator for UdpFlow {
    /// Generates the packets and truth.
    ///
    /// # Panics
    /// See [`UdpFlow::fragment_datagram`].
    fn generate(&self) -> GeneratedFlow {
        let mut rng = SplitMix64::new(self.seed);
        let mut ip_id = [rng.next_u32() as u16, rng.next_u32() as u16];
        for &i in self.fragments.keys() {
            assert!(i < self.datagrams.len(), "datagram index {i} out of range");
        }
        let mut dirs = [DirectionTruth::default(), DirectionTruth::default()];
        let mut streams = [Vec::new(), Vec::new()];
        let mut packets = Vec::new();
        for (i, (dir, payload)) in self.datagrams.iter().enumerate() {
            let d = match dir {
                Direction::ToServer => 0,
                Direction::ToClient => 1,
            };
            let (src, dst, link) = match dir {
                Direction::ToServer => (
                    self.client,
                    self.server,
                    LinkSpec {
                        src_mac: self.client_mac,
                        dst_mac: self.server_mac,
                        vlan: self.vlan,
                        outgoing: true,
                    },
                ),
                Direction::ToClient => (
                    self.server,
                    self.client,
                    LinkSpec {
                        src_mac: self.server_mac,
                        dst_mac: self.client_mac,
                        vlan: self.vlan,
                        outgoing: false,
                    },
                ),
            };
            let spec = IpSpec {
                src: src.ip(),
                dst: dst.ip(),
                ttl: self.ttl,
                ip_id: ip_id[d],
                dont_fragment: false,
            };
            ip_id[d] = ip_id[d].wrapping_add(1);
            let ip = build_ip_packet(
                &spec,
                &Transport::Udp {
                    src_port: src.port(),
                    dst_port: dst.port(),
                },
                payload,
            );
            streams[d].extend_from_slice(payload);
            dirs[d].datagrams += 1;
            dirs[d].datagram_bytes += ip_total_len(&ip);
            let pieces = match self.fragments.get(&i) {
                Some((k, order)) => order
                    .apply(fragment_ipv4(&ip, *k).unwrap_or_else(|e| panic!("datagram {i}: {e}"))),
                None => vec![ip],
            };
            for ip in pieces {
                dirs[d].packets += 1;
                dirs[d].ip_bytes += ip_total_len(&ip);
                packets.push(WirePacket {
                    ts_ns: self.start_ns + packets.len() as u64 * self.step_ns,
                    dir: *dir,
                    link,
                    ip,
                });
            }
        }
        let [s0, s1] = streams;
        dirs[0].set_stream(s0);
        dirs[1].set_stream(s1);
        let [to_server, to_client] = dirs;
        GeneratedFlow {
            packets,
            truth: FlowTruth {
                id: 0,
                label: self.label.clone(),
                proto: Protocol::Udp,
                client: self.client,
                server: self.server,
                vlan: self.vlan.ids(),
                end: EndReason::None,
                to_server,
                to_client,
            },
        }
    }
}
