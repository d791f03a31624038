//! Network infrastructure protocols in binary wire format: DNS (UDP and
//! TCP), NTP, DHCP and SMB2 (over the NetBIOS session service).

use std::net::IpAddr;

use crate::prng::SplitMix64;
use crate::sample::{dns_query, dns_response};
use crate::truth::Protocol;

use super::dialog::{alnum, be16, be32, der, host, Ctx, Dialog, C, S};

/// A DNS lookup: A, AAAA or MX, answered (or NXDOMAIN); over TCP with
/// the two-byte length prefix.
pub(super) fn dns(ctx: &Ctx, rng: &mut SplitMix64) -> Dialog {
    let name = host(rng);
    let (qtype, tname) = *rng.pick(&[(1u16, "a"), (1, "a"), (28, "aaaa"), (15, "mx")]);
    let edns = rng.chance(1, 2);
    let tcp = ctx.proto == Protocol::Tcp;
    let mut d = Dialog::new(format!("{}-{tname}", if tcp { "tcp" } else { "udp" }));
    let id = rng.next_u32() as u16;
    let q = dns_query(id, &name, qtype, edns);
    let mut answers = Vec::new();
    let nx = rng.chance(1, 10);
    if !nx {
        for _ in 0..rng.range(1, 3) {
            let rdata = match qtype {
                28 => {
                    let mut a = vec![0x20, 0x01, 0x0d, 0xb8, 0, 0x5e, 0, 0, 0, 0, 0, 0];
                    a.extend(rng.bytes(4));
                    a
                }
                15 => {
                    let mut m = be16(10 * rng.range(1, 5) as usize).to_vec();
                    crate::sample::dns_name(&mut m, &format!("mx{}.example.org", rng.below(4)));
                    m
                }
                _ => vec![198, 51, 100, rng.range(1, 254) as u8],
            };
            answers.push((qtype, 60 + rng.below(3600) as u32, rdata));
        }
    }
    let mut r = dns_response(id, &name, qtype, &answers, edns);
    if nx {
        r[3] = 0x83; // RCODE 3, NXDOMAIN
    }
    for m in [(C, q), (S, r)] {
        let (dir, mut b) = m;
        if tcp {
            let mut framed = be16(b.len()).to_vec();
            framed.append(&mut b);
            b = framed;
        }
        d.push(dir, b);
    }
    d.details.dns_query = Some(name);
    d
}

/// NTP era seconds of 2024-05-01.
const NTP_SECS: u32 = 3_923_640_000;

/// NTP client/server exchanges: 48-byte mode 3 requests and mode 4
/// replies (version 4, sometimes 3); a client talking to port 123 uses
/// port 123 itself sometimes (as ntpd does).
pub(super) fn ntp(ctx: &mut Ctx, rng: &mut SplitMix64) -> Dialog {
    let v3 = rng.chance(1, 5);
    let vn: u8 = if v3 { 3 } else { 4 };
    if ctx.server.port() == 123 && rng.chance(1, 3) {
        ctx.client.set_port(123);
    }
    let mut d = Dialog::new(format!("v{vn}"));
    let mut t = NTP_SECS + rng.below(86_400) as u32;
    for _ in 0..rng.range(1, 3) {
        let mut req = vec![0u8; 48];
        req[0] = (vn << 3) | 3;
        req[2] = 6;
        req[3] = 0xe9;
        req[40..44].copy_from_slice(&t.to_be_bytes());
        let frac = rng.next_u32();
        req[44..48].copy_from_slice(&frac.to_be_bytes());
        let mut resp = vec![0u8; 48];
        resp[0] = (vn << 3) | 4;
        resp[1] = rng.range(1, 4) as u8;
        resp[2] = 6;
        resp[3] = 0xe8;
        resp[4..8].copy_from_slice(&be32(rng.below(0x800) as usize));
        resp[8..12].copy_from_slice(&be32(rng.below(0x1000) as usize));
        resp[12..16].copy_from_slice(&[203, 0, 113, rng.range(1, 254) as u8]);
        resp[16..20].copy_from_slice(&(t - 600).to_be_bytes());
        resp[24..32].copy_from_slice(&req[40..48]);
        resp[32..36].copy_from_slice(&t.to_be_bytes());
        resp[36..40].copy_from_slice(&frac.wrapping_add(0x0100_0000).to_be_bytes());
        resp[40..44].copy_from_slice(&t.to_be_bytes());
        resp[44..48].copy_from_slice(&frac.wrapping_add(0x0102_0000).to_be_bytes());
        d.push(C, req);
        d.push(S, resp);
        t += 64;
    }
    d
}

fn v4(a: IpAddr) -> [u8; 4] {
    match a {
        IpAddr::V4(v) => v.octets(),
        IpAddr::V6(_) => [0; 4],
    }
}

/// A BOOTP message with the DHCP magic cookie and `opts` (type, value).
#[allow(clippy::too_many_arguments)]
fn bootp(
    op: u8,
    xid: u32,
    flags: u16,
    ci: [u8; 4],
    yi: [u8; 4],
    si: [u8; 4],
    gi: [u8; 4],
    mac: [u8; 6],
    hops: u8,
    opts: &[(u8, Vec<u8>)],
) -> Vec<u8> {
    let mut m = vec![op, 1, 6, hops];
    m.extend_from_slice(&xid.to_be_bytes());
    m.extend_from_slice(&[0, 0]);
    m.extend_from_slice(&flags.to_be_bytes());
    for a in [ci, yi, si, gi] {
        m.extend_from_slice(&a);
    }
    m.extend_from_slice(&mac);
    m.extend_from_slice(&[0; 10]);
    m.extend_from_slice(&[0; 64 + 128]);
    m.extend_from_slice(&[0x63, 0x82, 0x53, 0x63]);
    for (t, v) in opts {
        m.push(*t);
        m.push(v.len() as u8);
        m.extend_from_slice(v);
    }
    m.push(255);
    while m.len() < 300 {
        m.push(0);
    }
    m
}

/// DHCP over UDP 67/68 (IPv4 only): a DISCOVER relayed by a relay agent
/// (giaddr set, ports 67 to 67) answered by an OFFER, or a renewing
/// client's unicast REQUEST (68 to 67) answered by an ACK.
pub(super) fn dhcp(ctx: &mut Ctx, rng: &mut SplitMix64) -> Dialog {
    let relay = rng.chance(1, 2);
    ctx.client.set_port(if relay { 67 } else { 68 });
    let mut mac = [0x02, 0, 0, 0, 0, 0];
    rng.fill(&mut mac[1..]);
    let xid = rng.next_u32();
    let cip = v4(ctx.client.ip());
    let sip = v4(ctx.server.ip());
    let offered = [cip[0], cip[1], cip[2], rng.range(20, 250) as u8];
    let vendor = rng
        .pick(&[&b"MSFT 5.0"[..], b"android-dhcp-14", b"udhcp 1.36.1"])
        .to_vec();
    let host = alnum(rng, 8).to_lowercase().into_bytes();
    let prl = vec![1, 3, 6, 15, 31, 33, 43, 44, 46, 47, 119, 121, 249, 252];
    let mut client_id = vec![1];
    client_id.extend_from_slice(&mac);
    let lease = 86_400u32.to_be_bytes().to_vec();
    let server_opts = |ty: u8| {
        vec![
            (53, vec![ty]),
            (54, sip.to_vec()),
            (51, lease.clone()),
            (1, vec![255, 255, 255, 0]),
            (3, vec![cip[0], cip[1], cip[2], 1]),
            (6, vec![198, 51, 100, 53, 198, 51, 100, 54]),
            (15, b"campus.example.edu".to_vec()),
        ]
    };
    let mut d;
    if relay {
        d = Dialog::new("relayed-discover-offer");
        let mut agent = vec![1, 6, 0, 4];
        agent.extend_from_slice(&be16(rng.range(1, 48) as usize));
        agent.extend_from_slice(&be16(rng.range(1, 4000) as usize));
        let opts = vec![
            (53, vec![1]),
            (61, client_id),
            (57, vec![0x05, 0xdc]),
            (12, host),
            (60, vendor),
            (55, prl),
            (82, agent),
        ];
        d.push(
            C,
            bootp(1, xid, 0x8000, [0; 4], [0; 4], [0; 4], cip, mac, 1, &opts),
        );
        d.push(
            S,
            bootp(
                2,
                xid,
                0x8000,
                [0; 4],
                offered,
                sip,
                cip,
                mac,
                0,
                &server_opts(2),
            ),
        );
    } else {
        d = Dialog::new("renew-request-ack");
        let opts = vec![
            (53, vec![3]),
            (61, client_id),
            (12, host),
            (60, vendor),
            (55, prl),
        ];
        d.push(
            C,
            bootp(1, xid, 0, cip, [0; 4], [0; 4], [0; 4], mac, 0, &opts),
        );
        d.push(
            S,
            bootp(2, xid, 0, cip, cip, sip, [0; 4], mac, 0, &server_opts(5)),
        );
    }
    d
}

/// The SPNEGO NegTokenInit servers put in their NEGOTIATE response.
fn spnego_init() -> Vec<u8> {
    let spnego_oid = [0x06, 0x06, 0x2b, 0x06, 0x01, 0x05, 0x05, 0x02];
    let ntlm = der(
        0x06,
        &[0x2b, 0x06, 0x01, 0x04, 0x01, 0x82, 0x37, 0x02, 0x02, 0x0a],
    );
    let mech_list = der(0xa0, &der(0x30, &ntlm));
    let hint = der(
        0xa3,
        &der(
            0x30,
            &der(0xa0, &der(0x1b, b"not_defined_in_RFC4178@please_ignore")),
        ),
    );
    let mut init = mech_list;
    init.extend(hint);
    let mut body = spnego_oid.to_vec();
    body.extend(der(0xa0, &der(0x30, &init)));
    der(0x60, &body)
}

fn nbss(msg: &[u8]) -> Vec<u8> {
    let mut v = vec![0];
    v.extend_from_slice(&(msg.len() as u32).to_be_bytes()[1..]);
    v.extend_from_slice(msg);
    v
}

/// An SMB2 header.
fn smb2_header(
    command: u16,
    response: bool,
    status: u32,
    message_id: u64,
    session: u64,
) -> Vec<u8> {
    let mut h = b"\xfeSMB".to_vec();
    h.extend_from_slice(&64u16.to_le_bytes());
    h.extend_from_slice(&[0, 0]);
    h.extend_from_slice(&status.to_le_bytes());
    h.extend_from_slice(&command.to_le_bytes());
    h.extend_from_slice(&(if response { 1u16 } else { 31u16 }).to_le_bytes());
    h.extend_from_slice(&u32::from(response).to_le_bytes());
    h.extend_from_slice(&[0; 4]);
    h.extend_from_slice(&message_id.to_le_bytes());
    h.extend_from_slice(&0xfeffu32.to_le_bytes());
    h.extend_from_slice(&[0; 4]);
    h.extend_from_slice(&session.to_le_bytes());
    h.extend_from_slice(&[0; 16]);
    h
}

fn pad8(v: &mut Vec<u8>) {
    while v.len() % 8 != 0 {
        v.push(0);
    }
}

/// Negotiate contexts (preauth integrity and encryption) at an 8-aligned
/// offset of `msg`; returns the offset.
fn negotiate_contexts(msg: &mut Vec<u8>, rng: &mut SplitMix64) -> usize {
    pad8(msg);
    let at = msg.len();
    let mut pre = vec![1, 0, 32, 0, 1, 0];
    pre.extend(rng.bytes(32));
    let enc = vec![2, 0, 2, 0, 1, 0];
    for (i, (ty, data)) in [(1u16, pre), (2u16, enc)].into_iter().enumerate() {
        if i > 0 {
            pad8(msg);
        }
        msg.extend_from_slice(&ty.to_le_bytes());
        msg.extend_from_slice(&(data.len() as u16).to_le_bytes());
        msg.extend_from_slice(&[0; 4]);
        msg.extend_from_slice(&data);
    }
    at
}

/// An SMB2 NEGOTIATE request and the highest dialect it offers.
fn smb2_negotiate_request(rng: &mut SplitMix64, message_id: u64) -> (Vec<u8>, u16) {
    let dialects: &[u16] = if rng.chance(2, 3) {
        &[0x0202, 0x0210, 0x0300, 0x0302, 0x0311]
    } else {
        &[0x0202, 0x0210, 0x0300, 0x0302]
    };
    let mut m = smb2_header(0, false, 0, message_id, 0);
    m.extend_from_slice(&36u16.to_le_bytes());
    m.extend_from_slice(&(dialects.len() as u16).to_le_bytes());
    m.extend_from_slice(&[1, 0, 0, 0]);
    m.extend_from_slice(&0x7fu32.to_le_bytes());
    m.extend(rng.bytes(16));
    let ctx_field = m.len();
    m.extend_from_slice(&[0; 8]);
    for dl in dialects {
        m.extend_from_slice(&dl.to_le_bytes());
    }
    if dialects.contains(&0x0311) {
        let off = negotiate_contexts(&mut m, rng) as u32;
        m[ctx_field..ctx_field + 4].copy_from_slice(&off.to_le_bytes());
        m[ctx_field + 4..ctx_field + 6].copy_from_slice(&2u16.to_le_bytes());
    }
    (m, dialects.iter().copied().max().unwrap_or(0x0202))
}

fn smb2_negotiate_response(rng: &mut SplitMix64, dialect: u16, message_id: u64) -> Vec<u8> {
    let mut m = smb2_header(0, true, 0, message_id, 0);
    let blob = spnego_init();
    m.extend_from_slice(&65u16.to_le_bytes());
    m.extend_from_slice(&1u16.to_le_bytes());
    m.extend_from_slice(&dialect.to_le_bytes());
    m.extend_from_slice(&[0, 0]);
    m.extend(rng.bytes(16));
    m.extend_from_slice(&0x2fu32.to_le_bytes());
    for _ in 0..3 {
        m.extend_from_slice(&8_388_608u32.to_le_bytes());
    }
    let ft = 133_590_000_000_000_000u64 + rng.below(1 << 40);
    m.extend_from_slice(&ft.to_le_bytes());
    m.extend_from_slice(&0u64.to_le_bytes());
    m.extend_from_slice(&0x80u16.to_le_bytes());
    m.extend_from_slice(&(blob.len() as u16).to_le_bytes());
    let ctx_field = m.len();
    m.extend_from_slice(&[0; 4]);
    m.extend(blob);
    if dialect == 0x0311 {
        let off = negotiate_contexts(&mut m, rng) as u32;
        m[ctx_field..ctx_field + 4].copy_from_slice(&off.to_le_bytes());
        m[70..72].copy_from_slice(&2u16.to_le_bytes());
    }
    m
}

/// A NetBIOS name, first-level encoded (RFC 1001).
fn netbios_name(name: &str, suffix: u8) -> Vec<u8> {
    let mut raw: Vec<u8> = name
        .bytes()
        .take(15)
        .map(|b| b.to_ascii_uppercase())
        .collect();
    raw.resize(15, b' ');
    raw.push(suffix);
    let mut v = vec![32];
    for b in raw {
        v.push(b'A' + (b >> 4));
        v.push(b'A' + (b & 15));
    }
    v.push(0);
    v
}

/// An SMB session start over the NetBIOS session service: on port 139 a
/// session request first; sometimes an SMB1 multi-protocol NEGOTIATE
/// answered in SMB2; the SMB2 NEGOTIATE exchange; a SESSION_SETUP with
/// an NTLMSSP negotiate and its challenge.
pub(super) fn smb(ctx: &Ctx, rng: &mut SplitMix64) -> Dialog {
    let mut steps = Vec::new();
    if ctx.server.port() == 139 {
        steps.push("nbss-session");
    }
    let smb1 = rng.chance(1, 3);
    if smb1 {
        steps.push("smb1-negotiate");
    }
    steps.push("smb2-negotiate");
    let mut d = Dialog::new(steps.join("+"));
    if ctx.server.port() == 139 {
        let mut req = netbios_name("FILESERVER", 0x20);
        req.extend(netbios_name(&format!("WS-{}", alnum(rng, 6)), 0));
        let mut m = vec![0x81, 0];
        m.extend_from_slice(&be16(req.len()));
        m.extend(req);
        d.push(C, m);
        d.push(S, vec![0x82, 0, 0, 0]);
    }
    let mut mid = 0;
    if smb1 {
        let mut m = b"\xffSMBr".to_vec();
        m.extend_from_slice(&[0, 0, 0, 0, 0x18, 0x53, 0xc8, 0, 0]);
        m.extend_from_slice(&[0; 8]);
        m.extend_from_slice(&[0, 0, 0xff, 0xff]);
        m.extend_from_slice(&be16(rng.range(1, 0xfffe) as usize));
        m.extend_from_slice(&[0, 0, 0, 0, 0]);
        let mut dialects = Vec::new();
        for dl in ["NT LM 0.12", "SMB 2.002", "SMB 2.???"] {
            dialects.push(2);
            dialects.extend_from_slice(dl.as_bytes());
            dialects.push(0);
        }
        m.extend_from_slice(&(dialects.len() as u16).to_le_bytes());
        m.extend(dialects);
        d.push(C, nbss(&m));
        d.push(S, nbss(&smb2_negotiate_response(rng, 0x02ff, 0)));
        mid = 1;
    }
    let (req, dialect) = smb2_negotiate_request(rng, mid);
    d.push(C, nbss(&req));
    d.push(S, nbss(&smb2_negotiate_response(rng, dialect, mid)));
    let mut ntlm = b"NTLMSSP\0\x01\0\0\0".to_vec();
    ntlm.extend_from_slice(&0xe208_8297u32.to_le_bytes());
    ntlm.extend_from_slice(&[0; 16]);
    ntlm.extend_from_slice(&[10, 0, 0x61, 0x4a, 0, 0, 0, 15]);
    let ntlm_oid = der(
        0x06,
        &[0x2b, 0x06, 0x01, 0x04, 0x01, 0x82, 0x37, 0x02, 0x02, 0x0a],
    );
    let mut init = der(0xa0, &der(0x30, &ntlm_oid));
    init.extend(der(0xa2, &der(0x04, &ntlm)));
    let mut token = vec![0x06, 0x06, 0x2b, 0x06, 0x01, 0x05, 0x05, 0x02];
    token.extend(der(0xa0, &der(0x30, &init)));
    let token = der(0x60, &token);
    let mut ss = smb2_header(1, false, 0, mid + 1, 0);
    ss.extend_from_slice(&[25, 0, 0, 1]);
    ss.extend_from_slice(&1u32.to_le_bytes());
    ss.extend_from_slice(&[0; 4]);
    ss.extend_from_slice(&88u16.to_le_bytes());
    ss.extend_from_slice(&(token.len() as u16).to_le_bytes());
    ss.extend_from_slice(&[0; 8]);
    ss.extend(token);
    d.push(C, nbss(&ss));
    let session = rng.next_u64();
    let mut resp = smb2_header(1, true, 0xc000_0016, mid + 1, session);
    let n = rng.range(180, 260) as usize;
    let challenge = rng.bytes(n);
    resp.extend_from_slice(&[9, 0, 0, 0]);
    resp.extend_from_slice(&72u16.to_le_bytes());
    resp.extend_from_slice(&(challenge.len() as u16).to_le_bytes());
    resp.extend(challenge);
    d.push(S, nbss(&resp));
    d
}
