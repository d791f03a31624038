//! The campus generator: a population of hosts and servers, the choice of
//! application and size of each new flow, and the heap of open flows ordered
//! by their next send time.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::io::{self, Write};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use sha2::{Digest, Sha256};

use super::dist::{flow_size, hit, threshold, unit};
use super::flow::{App, Cx, Flow, Phase};
use super::payload::text_block;
use super::scripts::{plant, script};
use super::wire::{Ends, Wire};
use super::{Campus, CampusConfig, CampusStats, ImpairmentCounts};
use crate::packet::mac_for;
use crate::pcap::PcapWriter;
use crate::prng::SplitMix64;
use crate::truth::EndReason;

pub(super) const HOSTS: usize = 8192;
pub(super) const SERVERS: u64 = 4096;

pub(super) struct Generator<W: Write> {
    pub(super) cx: Cx,
    pub(super) wire: Wire<W>,
    pub(super) rng: SplitMix64,
    pub(super) next_id: usize,
    pub(super) ports: Vec<u16>,
    pub(super) concurrency: usize,
    pub(super) elephants: usize,
    pub(super) target: u64,
}

pub(super) const DOMAINS: &[&str] = &[
    "example.com",
    "example.org",
    "example.net",
    "example.edu",
    "campus.example.edu",
    "cdn.example.net",
    "video.example.com",
    "mail.example.org",
];
pub(super) const PREFIXES: &[&str] = &[
    "www", "api", "static", "cdn", "img", "login", "news", "updates", "files", "media",
];
pub(super) const UAS: &[&str] = &[
    "Mozilla/5.0 (X11; Linux x86_64; rv:125.0) Gecko/20100101 Firefox/125.0",
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36",
    "Mozilla/5.0 (Macintosh; Intel Mac OS X 14_4) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.4 Safari/605.1.15",
    "curl/8.5.0",
    "Debian APT-HTTP/1.3 (2.7.14)",
];
pub(super) const PATHS: &[&str] = &[
    "/",
    "/index.html",
    "/news/2024/05/campus-network.html",
    "/api/v1/items",
    "/api/v1/status",
    "/css/site.css",
    "/js/app.js",
    "/img/logo.png",
    "/media/lecture-12.mp4",
    "/pub/dataset.tar.gz",
    "/debian/pool/main/l/linux/linux-image.deb",
];

pub(super) fn host_name(idx: u64) -> String {
    format!(
        "{}{}.{}",
        PREFIXES[(idx % PREFIXES.len() as u64) as usize],
        idx / 97,
        DOMAINS[((idx / 7) % DOMAINS.len() as u64) as usize]
    )
}

/// HTTP date of a Unix timestamp (seconds).
pub(crate) fn http_date(secs: u64) -> String {
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    // Civil-from-days (Howard Hinnant).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    let wd = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"][(days % 7) as usize];
    let mon = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ][(m - 1) as usize];
    format!(
        "{wd}, {d:02} {mon} {y} {:02}:{:02}:{:02} GMT",
        rem / 3600,
        rem / 60 % 60,
        rem % 60
    )
}

impl<W: Write> Generator<W> {
    pub(super) fn new(c: &CampusConfig, pcap: W) -> io::Result<Self> {
        let mut rng = SplitMix64::new(c.seed);
        let text = text_block(c.seed);
        let gbps = if c.link_gbps > 0.0 { c.link_gbps } else { 10.0 };
        let fs_per_byte = (8_000_000.0 / gbps).round().max(1.0) as u128;
        let mut ports = vec![0u16; HOSTS];
        for p in &mut ports {
            *p = 32_768 + rng.below(28_000) as u16;
        }
        Ok(Self {
            cx: Cx {
                text,
                signatures: c.signatures.clone(),
                sig_th: if c.signatures.iter().any(|s| !s.is_empty()) {
                    threshold(c.signature_rate)
                } else {
                    0
                },
                reorder: threshold(c.reorder),
                dup: threshold(c.duplicate),
                loss: threshold(c.loss),
                conflict: threshold(c.conflict),
                fragment: threshold(c.fragment),
                ipv6: threshold(c.ipv6),
                vlan: threshold(c.vlan),
                small: c.small_packets,
                gap: 1_000_000,
            },
            wire: Wire {
                pcap: PcapWriter::with_config(pcap, Campus::pcap_config())?,
                buf: Vec::with_capacity(2048),
                frag: Vec::with_capacity(2048),
                start_ns: c.start_ns,
                clock_fs: 0,
                fs_per_byte,
                stats: CampusStats {
                    pcap_bytes: 24,
                    ..Default::default()
                },
                budget: c.packets,
            },
            rng,
            next_id: 0,
            ports,
            concurrency: c.concurrency.max(1),
            elephants: c.elephants,
            target: c.packets,
        })
    }

    pub(super) fn run(mut self, mut truth: Option<&mut dyn Write>) -> io::Result<(W, CampusStats)> {
        let mut slots: Vec<Option<Flow>> = Vec::new();
        let mut heap: BinaryHeap<Reverse<(u64, u32)>> = BinaryHeap::new();
        let g = self.cx.gap;
        let total = self.concurrency + self.elephants;
        for i in 0..total {
            let t = self.rng.below(g * 4);
            let f = self.new_flow(i < self.elephants);
            slots.push(Some(f));
            heap.push(Reverse((t, i as u32)));
        }
        let mut line = Vec::with_capacity(1024);
        while self.wire.stats.packets < self.target {
            let Some(Reverse((t, slot))) = heap.pop() else {
                break;
            };
            let flow = slots[slot as usize].as_mut().expect("scheduled slot");
            match flow.step(&mut self.wire, &self.cx)? {
                Some(gap) => heap.push(Reverse((t + gap.max(1), slot))),
                None => {
                    let mut f = slots[slot as usize].take().expect("slot");
                    self.wire.stats.flows_finished += 1;
                    self.emit_truth(&mut f, &mut truth, &mut line)?;
                    let nf = self.new_flow(f.elephant);
                    slots[slot as usize] = Some(nf);
                    let start = t + 1 + self.rng.below(g);
                    heap.push(Reverse((start, slot)));
                }
            }
        }
        // Open flows, in id order. Flows that never sent a packet are
        // dropped (they would not be in the capture).
        let mut open: Vec<Flow> = slots
            .into_iter()
            .flatten()
            .filter(|f| f.packets[0] + f.packets[1] > 0)
            .collect();
        open.sort_by_key(|f| f.id);
        // Renumber is not needed: ids stay in start order with gaps for
        // flows that never started; record count for the stats.
        for f in &mut open {
            self.wire.stats.flows_open += 1;
            self.emit_truth(f, &mut truth, &mut line)?;
        }
        self.wire.stats.duration_ns = (self.wire.clock_fs / 1_000_000) as u64;
        self.wire.pcap.flush()?;
        let stats = self.wire.stats;
        Ok((self.wire.pcap.into_inner(), stats))
    }

    pub(super) fn emit_truth(
        &mut self,
        f: &mut Flow,
        out: &mut Option<&mut dyn Write>,
        line: &mut Vec<u8>,
    ) -> io::Result<()> {
        let stats = &mut self.wire.stats;
        stats.flows += 1;
        let bytes = f.sent[0] + f.sent[1];
        let mut d = 0;
        let mut v = bytes;
        while v >= 10 && d < 9 {
            v /= 10;
            d += 1;
        }
        stats.size_decades[d] += 1;
        if let Some(w) = out.as_mut() {
            let t = f.truth(&self.cx);
            line.clear();
            serde_json::to_writer(&mut *line, &t).map_err(io::Error::other)?;
            line.push(b'\n');
            w.write_all(line)?;
        }
        Ok(())
    }

    pub(super) fn pick_app(&mut self) -> App {
        let u = self.rng.below(1000);
        match u {
            0..=219 => App::Http,
            220..=599 => App::Tls,
            600..=619 => App::Ssh,
            620..=639 => App::Smtp,
            640..=649 => App::Ftp,
            650..=659 => App::FtpData,
            660..=719 => App::TcpUnknown,
            720..=959 => App::Dns,
            _ => App::UdpUnknown,
        }
    }

    pub(super) fn new_flow(&mut self, elephant: bool) -> Flow {
        let id = self.next_id;
        self.next_id += 1;
        let mut rng = SplitMix64::new(self.rng.next_u64());
        let app = if elephant {
            *rng.pick(&[App::Tls, App::Ssh, App::FtpData, App::Http])
        } else {
            self.pick_app()
        };
        let tcp = !matches!(app, App::Dns | App::UdpUnknown);
        let v6 = hit(&mut rng, self.cx.ipv6);
        let vlan = if hit(&mut rng, self.cx.vlan) {
            *rng.pick(&[10u16, 20, 100, 200, 301, 302, 1000])
        } else {
            0
        };
        let host = rng.below(HOSTS as u64) as usize;
        let cport = self.ports[host];
        self.ports[host] = if cport >= 60_999 { 32_768 } else { cport + 1 };
        // Skewed server popularity.
        let u = unit(&mut rng);
        let sidx = (u * u * u * SERVERS as f64) as u64;
        let mut ip = [[0u8; 16]; 2];
        let dns_server = app == App::Dns;
        if v6 {
            ip[0] = Ipv6Addr::new(
                0x2001,
                0xdb8,
                0xca,
                0,
                0,
                0,
                (host >> 8) as u16,
                host as u16,
            )
            .octets();
            ip[1] = if dns_server {
                Ipv6Addr::new(0x2001, 0xdb8, 0xca, 0x53, 0, 0, 0, 0x53 + (sidx % 2) as u16)
            } else {
                Ipv6Addr::new(
                    0x2001,
                    0xdb8,
                    0x5e,
                    0,
                    0,
                    0,
                    (sidx >> 8) as u16,
                    sidx as u16 + 1,
                )
            }
            .octets();
        } else {
            ip[0][..4].copy_from_slice(&[10, 20, (host / 250) as u8, 2 + (host % 250) as u8]);
            ip[1][..4].copy_from_slice(&if dns_server {
                [10, 0, (sidx % 2) as u8, 53]
            } else {
                [
                    198,
                    18 + (sidx >> 14) as u8,
                    (sidx >> 6) as u8,
                    1 + (sidx & 63) as u8,
                ]
            });
        }
        let sport = match app {
            App::Http => {
                if sidx % 10 == 9 {
                    8080
                } else {
                    80
                }
            }
            App::Tls => 443,
            App::Ssh => 22,
            App::Smtp => {
                if sidx % 4 == 0 {
                    587
                } else {
                    25
                }
            }
            App::Ftp => 21,
            App::FtpData => 50_000 + rng.below(1000) as u16,
            App::Dns => 53,
            App::TcpUnknown | App::UdpUnknown => {
                let p = 1024 + rng.below(64_000) as u16;
                if matches!(p, 8080 | 587) {
                    p + 1
                } else {
                    p
                }
            }
        };
        let mss: u16 = if self.cx.small {
            64
        } else if v6 {
            1440
        } else if rng.chance(1, 10) {
            1380
        } else {
            1460
        };
        let ends = Ends {
            v6,
            ip,
            port: [cport, sport],
            mac: [
                mac_for(IpAddr::V4(Ipv4Addr::new(
                    10,
                    20,
                    (host / 250) as u8,
                    host as u8,
                ))),
                [0x00, 0x1b, 0x21, 0x3a, 0x4f, 0x01],
            ],
            vlan,
            ttl: [*rng.pick(&[64, 128]), 64 - rng.below(20) as u8],
            tcp,
            mss,
            window: *rng.pick(&[64_240, 65_535, 29_200, 502]),
        };
        let size = if elephant {
            100_000_000 + rng.below(900_000_000)
        } else {
            flow_size(&mut rng)
        };
        let start_secs =
            (self.wire.start_ns + (self.wire.clock_fs / 1_000_000) as u64) / 1_000_000_000;
        let mut msgs = script(app, &mut rng, size, &host_name(sidx), start_secs, &self.cx);
        if hit(&mut rng, self.cx.sig_th) {
            plant(&mut msgs, &mut rng, &self.cx);
        }
        // Bulk transfers run faster than interactive ones (bigger windows):
        // the per-flow packet rate grows with the square root of the size,
        // up to 40 times.
        let gap = if elephant {
            // About 2.5 % of the packets each, whatever the concurrency.
            self.cx.gap * 40 / self.concurrency as u64
        } else {
            let speed = (size as f64 / 30_000.0).sqrt().clamp(1.0, 40.0);
            ((self.cx.gap / 2 + rng.below(self.cx.gap)) as f64 / speed) as u64
        };
        let closer = usize::from(app == App::Http && rng.chance(1, 3));
        let rst = rng.chance(1, 25);
        let ack_every = *rng.pick(&[1, 2, 2, 2, 2, 2, 2, 3]);
        let isn = [rng.next_u32(), rng.next_u32()];
        let ip_id = [rng.next_u32() as u16, rng.next_u32() as u16];
        Flow {
            id,
            app,
            elephant,
            ends,
            rng,
            isn,
            ip_id,
            phase: Phase::Syn,
            msgs,
            mi: 0,
            mpos: 0,
            sent: [0; 2],
            hash: [Sha256::new(), Sha256::new()],
            unacked: 0,
            ack_every,
            ack_due: None,
            held: None,
            extra: VecDeque::new(),
            closer,
            rst,
            end: EndReason::None,
            gap: gap.max(1),
            packets: [0; 2],
            ip_bytes: [0; 2],
            datagrams: [0; 2],
            datagram_bytes: [0; 2],
            lost: [Vec::new(), Vec::new()],
            conflicts: [Vec::new(), Vec::new()],
            imp: ImpairmentCounts::default(),
            sigs: Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates() {
        assert_eq!(http_date(1_714_564_800), "Wed, 01 May 2024 12:00:00 GMT");
        assert_eq!(http_date(0), "Thu, 01 Jan 1970 00:00:00 GMT");
    }
}
