//! Frames built by hand into one reused buffer: Ethernet II with an
//! optional 802.1Q tag, IPv4 or IPv6, TCP or UDP, all checksums correct,
//! and the writer that timestamps them at line rate and fragments IPv4.

use std::io::{self, Write};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use super::CampusStats;
use crate::pcap::PcapWriter;

pub(super) fn sum_words(mut sum: u64, data: &[u8]) -> u64 {
    let mut c = data.chunks_exact(8);
    for w in &mut c {
        let v = u64::from_be_bytes(w.try_into().unwrap());
        sum += (v >> 32) + (v & 0xffff_ffff);
    }
    let r = c.remainder();
    let mut t = [0u8; 8];
    t[..r.len()].copy_from_slice(r);
    let v = u64::from_be_bytes(t);
    sum + (v >> 32) + (v & 0xffff_ffff)
}

pub(super) fn fold(mut sum: u64) -> u16 {
    while sum >> 16 != 0 {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

pub(super) const TCP_FIN: u8 = 0x01;
pub(super) const TCP_SYN: u8 = 0x02;
pub(super) const TCP_RST: u8 = 0x04;
pub(super) const TCP_PSH: u8 = 0x08;
pub(super) const TCP_ACK: u8 = 0x10;

/// SYN options: MSS, NOP NOP SACK-permitted, NOP window scale 7.
pub(super) const SYN_OPTS_LEN: usize = 12;

#[derive(Clone, Copy, Debug)]
pub(super) enum L4 {
    Tcp { seq: u32, ack: u32, flags: u8 },
    Udp,
}

/// Addressing of a flow.
#[derive(Clone, Debug)]
pub(super) struct Ends {
    pub(super) v6: bool,
    /// Indexed by sender: 0 = client, 1 = server.
    pub(super) ip: [[u8; 16]; 2],
    pub(super) port: [u16; 2],
    pub(super) mac: [[u8; 6]; 2],
    pub(super) vlan: u16,
    pub(super) ttl: [u8; 2],
    pub(super) tcp: bool,
    pub(super) mss: u16,
    pub(super) window: u16,
}

impl Ends {
    pub(super) fn l2(&self) -> usize {
        if self.vlan != 0 {
            18
        } else {
            14
        }
    }

    pub(super) fn l3(&self) -> usize {
        if self.v6 {
            40
        } else {
            20
        }
    }

    pub(super) fn l4(&self, l4: &L4) -> usize {
        match l4 {
            L4::Tcp { flags, .. } if flags & TCP_SYN != 0 => 20 + SYN_OPTS_LEN,
            L4::Tcp { .. } => 20,
            L4::Udp => 8,
        }
    }

    pub(super) fn hdr_len(&self, l4: &L4) -> usize {
        self.l2() + self.l3() + self.l4(l4)
    }

    pub(super) fn addr(&self, i: usize) -> SocketAddr {
        let ip = if self.v6 {
            IpAddr::V6(Ipv6Addr::from(self.ip[i]))
        } else {
            IpAddr::V4(Ipv4Addr::new(
                self.ip[i][0],
                self.ip[i][1],
                self.ip[i][2],
                self.ip[i][3],
            ))
        };
        SocketAddr::new(ip, self.port[i])
    }

    /// Writes all headers of a packet from sender `s` whose payload already
    /// sits at `buf[hdr_len..]`; returns the IP length.
    pub(super) fn write_headers(&self, buf: &mut [u8], s: usize, l4: &L4, ip_id: u16) -> u64 {
        let r = 1 - s;
        let l2 = self.l2();
        let l3 = self.l3();
        let l4len = buf.len() - l2 - l3;
        buf[0..6].copy_from_slice(&self.mac[r]);
        buf[6..12].copy_from_slice(&self.mac[s]);
        let ethertype: u16 = if self.v6 { 0x86dd } else { 0x0800 };
        if self.vlan != 0 {
            buf[12..14].copy_from_slice(&0x8100u16.to_be_bytes());
            buf[14..16].copy_from_slice(&(self.vlan & 0x0fff).to_be_bytes());
            buf[16..18].copy_from_slice(&ethertype.to_be_bytes());
        } else {
            buf[12..14].copy_from_slice(&ethertype.to_be_bytes());
        }
        let proto: u8 = if matches!(l4, L4::Tcp { .. }) { 6 } else { 17 };
        // Pseudo-header sum.
        let mut sum: u64;
        let ip = &mut buf[l2..l2 + l3];
        if self.v6 {
            ip[0..4].copy_from_slice(&[0x60, 0, 0, 0]);
            ip[4..6].copy_from_slice(&(l4len as u16).to_be_bytes());
            ip[6] = proto;
            ip[7] = self.ttl[s];
            ip[8..24].copy_from_slice(&self.ip[s]);
            ip[24..40].copy_from_slice(&self.ip[r]);
            sum = sum_words(0, &ip[8..40]);
        } else {
            ip[0] = 0x45;
            ip[1] = 0;
            ip[2..4].copy_from_slice(&((20 + l4len) as u16).to_be_bytes());
            ip[4..6].copy_from_slice(&ip_id.to_be_bytes());
            ip[6..8].copy_from_slice(&[0x40, 0]);
            ip[8] = self.ttl[s];
            ip[9] = proto;
            ip[10..12].copy_from_slice(&[0, 0]);
            ip[12..16].copy_from_slice(&self.ip[s][..4]);
            ip[16..20].copy_from_slice(&self.ip[r][..4]);
            let c = fold(sum_words(0, ip));
            ip[10..12].copy_from_slice(&c.to_be_bytes());
            sum = sum_words(0, &ip[12..20]);
        }
        sum += u64::from(proto) + l4len as u64;
        let t = &mut buf[l2 + l3..];
        t[0..2].copy_from_slice(&self.port[s].to_be_bytes());
        t[2..4].copy_from_slice(&self.port[r].to_be_bytes());
        match *l4 {
            L4::Tcp { seq, ack, flags } => {
                let hl = self.l4(l4);
                t[4..8].copy_from_slice(&seq.to_be_bytes());
                t[8..12].copy_from_slice(&ack.to_be_bytes());
                t[12] = ((hl / 4) as u8) << 4;
                t[13] = flags;
                t[14..16].copy_from_slice(&self.window.to_be_bytes());
                t[16..20].copy_from_slice(&[0, 0, 0, 0]);
                if hl > 20 {
                    let m = self.mss.to_be_bytes();
                    t[20..32].copy_from_slice(&[2, 4, m[0], m[1], 1, 1, 4, 2, 1, 3, 3, 7]);
                }
                let c = fold(sum_words(sum, t));
                t[16..18].copy_from_slice(&c.to_be_bytes());
            }
            L4::Udp => {
                t[4..6].copy_from_slice(&(l4len as u16).to_be_bytes());
                t[6..8].copy_from_slice(&[0, 0]);
                let c = fold(sum_words(sum, t));
                let c = if c == 0 { 0xffff } else { c };
                t[6..8].copy_from_slice(&c.to_be_bytes());
            }
        }
        (l3 + l4len) as u64
    }
}

// ---------------------------------------------------------------------------
// Output.

pub(super) struct Wire<W: Write> {
    pub(super) pcap: PcapWriter<W>,
    pub(super) buf: Vec<u8>,
    pub(super) frag: Vec<u8>,
    pub(super) start_ns: u64,
    pub(super) clock_fs: u128,
    pub(super) fs_per_byte: u128,
    pub(super) stats: CampusStats,
    pub(super) budget: u64,
}

impl<W: Write> Wire<W> {
    pub(super) fn prepare(&mut self, len: usize) {
        self.buf.clear();
        self.buf.resize(len, 0);
    }

    pub(super) fn remaining(&self) -> u64 {
        self.budget - self.stats.packets
    }

    pub(super) fn write(&mut self, frag: bool) -> io::Result<()> {
        let f = if frag { &self.frag } else { &self.buf };
        let ts = self.start_ns + (self.clock_fs / 1_000_000) as u64;
        self.clock_fs += (f.len() as u128 + 24) * self.fs_per_byte;
        self.pcap.write_packet(ts, f)?;
        self.stats.packets += 1;
        self.stats.pcap_bytes += 16 + f.len() as u64;
        Ok(())
    }

    /// Emits the built IPv4 packet in `buf` as two fragments.
    pub(super) fn write_fragments(&mut self, l2: usize) -> io::Result<[u64; 2]> {
        let l4 = self.buf.len() - l2 - 20;
        let k = (l4 / 2) & !7;
        let mut lens = [0; 2];
        for (i, (from, to)) in [(0, k), (k, l4)].into_iter().enumerate() {
            self.frag.clear();
            self.frag.extend_from_slice(&self.buf[..l2 + 20]);
            self.frag
                .extend_from_slice(&self.buf[l2 + 20 + from..l2 + 20 + to]);
            let ip = &mut self.frag[l2..l2 + 20];
            ip[2..4].copy_from_slice(&((20 + to - from) as u16).to_be_bytes());
            let mut fo = (from / 8) as u16;
            if i == 0 {
                fo |= 0x2000;
            }
            ip[6..8].copy_from_slice(&fo.to_be_bytes());
            ip[10..12].copy_from_slice(&[0, 0]);
            let c = fold(sum_words(0, ip));
            ip[10..12].copy_from_slice(&c.to_be_bytes());
            lens[i] = (20 + to - from) as u64;
            self.write(true)?;
        }
        Ok(lens)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checksum() {
        // RFC 1071 example.
        let d = [0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7];
        assert_eq!(fold(sum_words(0, &d)), !0xddf2);
    }
}
