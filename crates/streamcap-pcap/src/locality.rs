//! Locality buffering inside libpcap's read calls
//! (`locality-buffering.txt` §4), with the engine's
//! [`streamcap::source::locality`] batch: a batch of packets is handed to
//! the program grouped by the lower of their two ports, each flow's
//! packets in their original order, timestamps untouched.
//!
//! The library copies each packet into the batch, because the system
//! libpcap returns each ring block to the kernel as soon as the callback
//! of its last packet returns; holding blocks would mean owning the ring.
//! `bench/README.md` ("Locality buffering and fan-out for libpcap
//! programs", `bench/pcap-locality.sh`) measures what the copy costs.

use streamcap::source::locality::{locality_key, LocalityBatch, NO_PORTS};
use streamcap::LinkType;

/// libpcap's `struct pcap_pkthdr` (Linux, 64-bit `struct timeval`).
#[repr(C)]
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct PktHdr {
    /// Seconds of the capture time.
    pub tv_sec: libc::time_t,
    /// Microseconds (or nanoseconds, for a handle opened with nanosecond
    /// precision) of the capture time.
    pub tv_usec: libc::suseconds_t,
    /// Bytes captured.
    pub caplen: u32,
    /// Bytes on the wire.
    pub len: u32,
}

/// A batch of libpcap packets.
pub type Batch = LocalityBatch<PktHdr>;

/// The most packet bytes one batch holds; a batch is handed over when it
/// would grow past this, whatever its packet count.
pub const MAX_BATCH_BYTES: usize = 256 << 20;

/// The locality key of a frame of libpcap link type `dlt`
/// (`pcap_datalink`).
pub fn key_of(dlt: i32, frame: &[u8]) -> u32 {
    match u16::try_from(dlt) {
        Ok(link) => locality_key(LinkType(link), frame),
        Err(_) => NO_PORTS,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use streamcap_gen::{Capture, Direction, TcpConversation, UdpFlow};

    /// libpcap's link types reach the key: DLT_RAW (12 on Linux) and
    /// Ethernet alike; an impossible one gives no key.
    #[test]
    fn the_key_is_the_lower_port_of_either_direction() {
        let ep = |s: &str| s.parse().expect("address");
        let mut g = Capture::new();
        g.add(
            &TcpConversation::new(ep("10.0.0.1:40000"), ep("10.0.0.2:80"))
                .send(Direction::ToServer, b"GET / HTTP/1.0\r\n\r\n".to_vec())
                .send(Direction::ToClient, b"HTTP/1.0 200 OK\r\n\r\n".to_vec()),
        );
        g.add(
            &UdpFlow::new(ep("10.0.0.1:5353"), ep("10.0.0.2:53"))
                .datagram(Direction::ToServer, vec![0; 20]),
        );
        let packets = g.packets();
        assert!(packets.len() > 6);
        for (_, p) in &packets {
            let k = key_of(12, &p.ip);
            assert!(k == 80 || k == 53, "{k}");
        }
        assert_eq!(key_of(-1, &packets[0].1.ip), NO_PORTS);
    }
}
