//! A DNS message as `dns.log` sees it: the header, the question, and the
//! answer section written the way Zeek's `base/protocols/dns/main.zeek`
//! writes answers (an address, a name, `TXT <len> <string>`…).
//!
//! Parsing stops at the first question or answer that does not fit, as
//! Zeek's analyzer does; what was read before it is kept. The authority
//! and additional sections are not read (Zeek logs neither). More than
//! [`MAX_QUESTIONS`] questions make the message not DNS (Zeek's
//! `dns_max_queries`): only its header counts.

use super::wire::{
    read_name, read_question, read_record, Header, NameLimits, Question, HEADER_LEN,
};
use std::fmt::Write as _;
use std::net::{Ipv4Addr, Ipv6Addr};

/// Most questions in a message Zeek reads (`dns_max_queries`).
pub const MAX_QUESTIONS: u16 = 25;

/// One record of the answer section.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Answer {
    /// The owner name, lowercased.
    pub owner: Vec<u8>,
    /// TYPE.
    pub rtype: u16,
    /// TTL in seconds.
    pub ttl: u32,
    /// What Zeek logs for it: `None` for types whose reply Zeek does not
    /// log (HINFO, CAA, OPT, TSIG, SVCB, HTTPS, NetBIOS NB and NBSTAT),
    /// `Some` empty for WKS (it counts for `rtt` and `AA` but adds no
    /// answer), else the text.
    pub text: Option<Vec<u8>>,
}

/// A message's header, last question and answers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Message {
    /// The header.
    pub header: Header,
    /// The last question read (Zeek's `query` is the last one's).
    pub question: Option<Question>,
    /// The answers read, in order.
    pub answers: Vec<Answer>,
    /// Every question and answer was read.
    pub complete: bool,
}

impl Message {
    /// Reads `msg` (one UDP payload or one TCP DNS message without its
    /// length); `None` below the 12-byte header. `netbios`: the responder
    /// port is 137 (NetBIOS names may have long labels; its SRV type is
    /// NBSTAT, not logged).
    pub fn parse(msg: &[u8], netbios: bool) -> Option<Message> {
        let header = Header::parse(msg)?;
        let limits = if netbios {
            NameLimits::NetBios
        } else {
            NameLimits::Dns
        };
        let mut m = Message {
            header,
            question: None,
            answers: Vec::new(),
            complete: false,
        };
        if header.qdcount > MAX_QUESTIONS {
            return Some(m);
        }
        let mut p = HEADER_LEN;
        for _ in 0..header.qdcount {
            match read_question(msg, p, limits) {
                Ok((q, end)) => {
                    m.question = Some(q);
                    p = end;
                }
                Err(_) => return Some(m),
            }
        }
        for _ in 0..header.ancount {
            let Ok(r) = read_record(msg, p, limits) else {
                return Some(m);
            };
            let mut owner = Vec::new();
            if read_name(msg, r.name_at, limits, Some(&mut owner)).is_err() {
                return Some(m);
            }
            let Some(text) = answer_text(msg, &r, &owner, netbios) else {
                return Some(m);
            };
            m.answers.push(Answer {
                owner,
                rtype: r.rtype,
                ttl: r.ttl,
                text,
            });
            p = r.end();
        }
        m.complete = true;
        Some(m)
    }
}

/// What Zeek logs for one answer; the outer `None` when the RDATA is
/// malformed (reading stops there).
fn answer_text(
    msg: &[u8],
    r: &super::wire::Record,
    owner: &[u8],
    netbios: bool,
) -> Option<Option<Vec<u8>>> {
    let rd = r.rdata(msg);
    let limits = if netbios {
        NameLimits::NetBios
    } else {
        NameLimits::Dns
    };
    // A name inside the RDATA (compression allowed, pointing anywhere before).
    let name_at = |off: usize| -> Option<Vec<u8>> {
        if off >= rd.len() {
            return None;
        }
        let mut v = Vec::new();
        read_name(msg, r.rdata_at + off, limits, Some(&mut v)).ok()?;
        Some(v)
    };
    let text: Option<Vec<u8>> = match r.rtype {
        1 => {
            let b: [u8; 4] = rd.try_into().ok()?;
            Some(Ipv4Addr::from(b).to_string().into_bytes())
        }
        28 | 38 => {
            let b: [u8; 16] = rd.try_into().ok()?;
            Some(Ipv6Addr::from(b).to_string().into_bytes())
        }
        2 | 5 | 12 => Some(name_at(0)?),
        15 => Some(name_at(2)?),
        6 => {
            let mname = name_at(0)?;
            Some(mname)
        }
        33 if netbios => None,
        33 => Some(name_at(6)?),
        16 | 99 => {
            let tag = if r.rtype == 16 { "TXT" } else { "SPF" };
            let mut out = Vec::new();
            let mut i = 0;
            while i < rd.len() {
                let n = usize::from(rd[i]);
                let Some(s) = rd.get(i + 1..i + 1 + n) else {
                    break;
                };
                if !out.is_empty() {
                    out.push(b' ');
                }
                out.extend_from_slice(format!("{tag} {n} ").as_bytes());
                out.extend_from_slice(s);
                i += 1 + n;
            }
            Some(out)
        }
        11 => Some(Vec::new()),
        13 | 32 | 41 | 64 | 65 | 250 | 257 => None,
        46 => {
            let covered = u16::from_be_bytes([*rd.first()?, *rd.get(1)?]);
            let signer = name_at(18)?;
            let signer = if signer.is_empty() {
                b"<Root>".to_vec()
            } else {
                signer
            };
            let mut out = format!("RRSIG {covered} ").into_bytes();
            out.extend(signer);
            Some(out)
        }
        48 => Some(format!("DNSKEY {}", rd.get(3)?).into_bytes()),
        47 => {
            let next = name_at(0)?;
            let mut out = b"NSEC ".to_vec();
            out.extend_from_slice(owner);
            out.push(b' ');
            out.extend(next);
            Some(out)
        }
        50 => Some(b"NSEC3".to_vec()),
        51 => Some(b"NSEC3PARAM".to_vec()),
        43 => Some(format!("DS {} {}", rd.get(2)?, rd.get(3)?).into_bytes()),
        65534 => Some(b"BIND9 signing signal".to_vec()),
        44 => {
            let fp = rd.get(2..)?;
            let mut s = String::from("SSHFP: ");
            for b in fp {
                let _ = write!(s, "{b:02x}");
            }
            Some(s.into_bytes())
        }
        29 => Some(format!("LOC:  {} {} {}", rd.get(1)?, rd.get(2)?, rd.get(3)?).into_bytes()),
        t => Some(format!("<unknown type={t}>").into_bytes()),
    };
    Some(text)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A query for `name` (RD set).
    pub(crate) fn query(id: u16, name: &str, qtype: u16) -> Vec<u8> {
        let mut m = id.to_be_bytes().to_vec();
        m.extend_from_slice(&[0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0]);
        put_name(&mut m, name);
        m.extend_from_slice(&qtype.to_be_bytes());
        m.extend_from_slice(&[0, 1]);
        m
    }

    pub(crate) fn put_name(m: &mut Vec<u8>, name: &str) {
        for l in name.split('.').filter(|l| !l.is_empty()) {
            m.push(l.len() as u8);
            m.extend_from_slice(l.as_bytes());
        }
        m.push(0);
    }

    /// A response to [`query`] with answers (type, ttl, rdata) whose owner
    /// is a pointer to the question.
    pub(crate) fn response(
        id: u16,
        name: &str,
        qtype: u16,
        rcode: u8,
        answers: &[(u16, u32, Vec<u8>)],
    ) -> Vec<u8> {
        let mut m = id.to_be_bytes().to_vec();
        m.extend_from_slice(&[0x81, 0x80 | rcode, 0, 1]);
        m.extend_from_slice(&(answers.len() as u16).to_be_bytes());
        m.extend_from_slice(&[0, 0, 0, 0]);
        put_name(&mut m, name);
        m.extend_from_slice(&qtype.to_be_bytes());
        m.extend_from_slice(&[0, 1]);
        for (t, ttl, rd) in answers {
            m.extend_from_slice(&[0xc0, 12]);
            m.extend_from_slice(&t.to_be_bytes());
            m.extend_from_slice(&[0, 1]);
            m.extend_from_slice(&ttl.to_be_bytes());
            m.extend_from_slice(&(rd.len() as u16).to_be_bytes());
            m.extend_from_slice(rd);
        }
        m
    }

    fn texts(m: &Message) -> Vec<String> {
        m.answers
            .iter()
            .filter_map(|a| a.text.as_ref())
            .map(|t| String::from_utf8_lossy(t).into_owned())
            .collect()
    }

    #[test]
    fn answers_as_zeek_writes_them() {
        // CNAME (pointer into the question), A, AAAA, TXT, MX, unknown.
        let mut cname = b"\x03cdn".to_vec();
        cname.extend_from_slice(&[0xc0, 12]);
        let mut mx = vec![0, 10];
        mx.extend_from_slice(b"\x04mail\xc0\x10");
        let ans = vec![
            (5, 300, cname),
            (1, 60, vec![192, 0, 2, 1]),
            (28, 60, Ipv6Addr::LOCALHOST.octets().to_vec()),
            (16, 10, b"\x05hello\x03a=b".to_vec()),
            (15, 10, mx),
            (65, 10, vec![0, 1, 0]),
            (99, 10, b"\x02v1".to_vec()),
            (1234, 10, vec![1, 2, 3]),
        ];
        let r = response(7, "WWW.Example.com", 1, 0, &ans);
        let m = Message::parse(&r, false).unwrap();
        assert!(m.complete);
        assert_eq!(m.question.as_ref().unwrap().name, b"www.example.com");
        assert_eq!(
            texts(&m),
            [
                "cdn.www.example.com",
                "192.0.2.1",
                "::1",
                "TXT 5 hello TXT 3 a=b",
                "mail.example.com",
                "SPF 2 v1",
                "<unknown type=1234>",
            ]
        );
        assert_eq!(m.answers.len(), 8);
        assert_eq!(m.answers[0].ttl, 300);
    }

    #[test]
    fn stops_at_the_first_bad_answer_and_keeps_the_rest() {
        let ans = vec![(1, 60, vec![10, 0, 0, 1]), (1, 60, vec![10, 0, 0])];
        let r = response(1, "a.b", 1, 0, &ans);
        let m = Message::parse(&r, false).unwrap();
        assert!(!m.complete);
        assert_eq!(texts(&m), ["10.0.0.1"]);
        // Every cut of a valid message parses without a panic.
        let full = response(2, "x.example", 1, 0, &[(1, 1, vec![1, 1, 1, 1])]);
        for cut in 0..full.len() {
            let m = Message::parse(&full[..cut], false);
            assert_eq!(m.is_some(), cut >= 12);
        }
        // Too many questions: only the header.
        let mut q = query(3, "a.b", 1);
        q[4..6].copy_from_slice(&26u16.to_be_bytes());
        let m = Message::parse(&q, false).unwrap();
        assert!(m.question.is_none() && !m.complete);
    }
}
