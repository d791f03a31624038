//! Encrypted or negotiated sessions: TLS 1.2 and 1.3 handshakes, QUIC v1
//! Initial packets, SSH banners and key exchange, RDP's X.224 connection
//! request (followed by TLS or MCS).

use crate::prng::SplitMix64;
use crate::sample::{ssh_kexinit, ssh_packet, ssh_string, tls_app_data, tls_ext, tls_server_hello};

use super::dialog::{alnum, be16, der, host, Ctx, Dialog, C, S, USERS};

/// What a ClientHello offers.
#[derive(Clone, Debug)]
pub(super) struct Hello<'a> {
    /// Server name indication (none when absent).
    pub sni: Option<&'a str>,
    /// ALPN protocols offered (no extension when empty).
    pub alpn: &'a [&'a str],
    /// Chrome-style GREASE values in the cipher and extension lists.
    pub grease: bool,
    /// Offer TLS 1.3 (supported_versions, key_share).
    pub tls13: bool,
}

impl<'a> Hello<'a> {
    /// A TLS 1.3 hello without GREASE.
    pub(super) fn plain(sni: Option<&'a str>, alpn: &'a [&'a str]) -> Self {
        Hello {
            sni,
            alpn,
            grease: false,
            tls13: true,
        }
    }
}

fn handshake(ty: u8, body: &[u8]) -> Vec<u8> {
    let mut h = vec![ty];
    h.extend_from_slice(&(body.len() as u32).to_be_bytes()[1..]);
    h.extend_from_slice(body);
    h
}

fn record(ty: u8, version: [u8; 2], body: &[u8]) -> Vec<u8> {
    let mut r = vec![ty, version[0], version[1]];
    r.extend_from_slice(&be16(body.len()));
    r.extend_from_slice(body);
    r
}

fn alpn_ext(protos: &[&str]) -> Vec<u8> {
    let mut list = Vec::new();
    for p in protos {
        list.push(p.len() as u8);
        list.extend_from_slice(p.as_bytes());
    }
    let mut e = be16(list.len()).to_vec();
    e.extend(list);
    e
}

/// A ClientHello record as browsers and libraries send it.
pub(super) fn client_hello(rng: &mut SplitMix64, h: &Hello<'_>) -> Vec<u8> {
    let grease = |rng: &mut SplitMix64| 0x0a0a_u16 + 0x1010 * rng.below(16) as u16;
    let mut b = vec![0x03, 0x03];
    b.extend(rng.bytes(32));
    let sid_len = if h.tls13 || rng.chance(1, 2) { 32 } else { 0 };
    b.push(sid_len as u8);
    b.extend(rng.bytes(sid_len));
    let mut suites: Vec<u16> = Vec::new();
    if h.grease {
        suites.push(grease(rng));
    }
    if h.tls13 {
        suites.extend([0x1301, 0x1302, 0x1303]);
    }
    suites.extend([
        0xc02b, 0xc02f, 0xcca9, 0xcca8, 0xc02c, 0xc030, 0xc013, 0xc014, 0x009c, 0x002f, 0x0035,
    ]);
    b.extend_from_slice(&be16(suites.len() * 2));
    for s in suites {
        b.extend_from_slice(&s.to_be_bytes());
    }
    b.extend_from_slice(&[1, 0]);
    let mut ext = Vec::new();
    if h.grease {
        tls_ext(&mut ext, grease(rng), &[]);
    }
    if let Some(name) = h.sni {
        let mut sn = be16(name.len() + 3).to_vec();
        sn.push(0);
        sn.extend_from_slice(&be16(name.len()));
        sn.extend_from_slice(name.as_bytes());
        tls_ext(&mut ext, 0x0000, &sn);
    }
    tls_ext(&mut ext, 0x0017, &[]);
    tls_ext(&mut ext, 0xff01, &[0]);
    tls_ext(
        &mut ext,
        0x000a,
        &[0, 8, 0x00, 0x1d, 0x00, 0x17, 0x00, 0x18, 0x00, 0x19],
    );
    tls_ext(&mut ext, 0x000b, &[1, 0]);
    tls_ext(&mut ext, 0x0023, &[]);
    if !h.alpn.is_empty() {
        tls_ext(&mut ext, 0x0010, &alpn_ext(h.alpn));
    }
    tls_ext(&mut ext, 0x0005, &[1, 0, 0, 0, 0]);
    tls_ext(
        &mut ext,
        0x000d,
        &[0, 16, 4, 3, 5, 3, 6, 3, 8, 4, 8, 5, 8, 6, 4, 1, 5, 1],
    );
    if h.tls13 {
        let mut ks = vec![0, 36, 0x00, 0x1d, 0, 32];
        ks.extend(rng.bytes(32));
        tls_ext(&mut ext, 0x0033, &ks);
        tls_ext(&mut ext, 0x002b, &[4, 0x03, 0x04, 0x03, 0x03]);
        tls_ext(&mut ext, 0x002d, &[1, 1]);
    }
    if h.grease {
        tls_ext(&mut ext, grease(rng), &[0]);
    }
    b.extend_from_slice(&be16(ext.len()));
    b.extend(ext);
    let legacy = if rng.chance(1, 5) { [3, 3] } else { [3, 1] };
    record(0x16, legacy, &handshake(1, &b))
}

fn cat(parts: &[Vec<u8>]) -> Vec<u8> {
    parts.concat()
}

/// An X.509 v3 certificate for `name` (RSA 2048, SHA-256), with random key
/// and signature, signed by a made-up CA (self-signed when `ca` is None).
fn certificate(rng: &mut SplitMix64, name: &str, ca: Option<&str>) -> Vec<u8> {
    const SHA256_RSA: &[u8] = &[0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x0b];
    const RSA: &[u8] = &[0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x01];
    let alg = |oid: &[u8]| der(0x30, &cat(&[der(0x06, oid), vec![5, 0]]));
    let rdn = |oid: u8, tag: u8, v: &str| {
        der(
            0x31,
            &der(
                0x30,
                &cat(&[der(0x06, &[0x55, 4, oid]), der(tag, v.as_bytes())]),
            ),
        )
    };
    let issuer = match ca {
        Some(ca) => der(
            0x30,
            &cat(&[
                rdn(6, 0x13, "US"),
                rdn(10, 0x0c, "Example Trust"),
                rdn(3, 0x0c, ca),
            ]),
        ),
        None => der(0x30, &rdn(3, 0x0c, name)),
    };
    let mut serial = rng.bytes(16);
    serial[0] &= 0x7f;
    let mut modulus = vec![0];
    modulus.extend(rng.bytes(256));
    modulus[1] |= 0x80;
    let rsa_key = der(0x30, &cat(&[der(0x02, &modulus), der(0x02, &[1, 0, 1])]));
    let spki = der(
        0x30,
        &cat(&[alg(RSA), der(0x03, &cat(&[vec![0], rsa_key]))]),
    );
    let san = der(0x30, &der(0x82, name.as_bytes()));
    let ext = der(
        0x30,
        &cat(&[der(0x06, &[0x55, 0x1d, 0x11]), der(0x04, &san)]),
    );
    let tbs = der(
        0x30,
        &cat(&[
            der(0xa0, &der(0x02, &[2])),
            der(0x02, &serial),
            alg(SHA256_RSA),
            issuer,
            der(
                0x30,
                &cat(&[der(0x17, b"240101000000Z"), der(0x17, b"250401000000Z")]),
            ),
            der(0x30, &rdn(3, 0x0c, name)),
            spki,
            der(0xa3, &der(0x30, &ext)),
        ]),
    );
    let sig = cat(&[vec![0], rng.bytes(256)]);
    der(0x30, &cat(&[tbs, alg(SHA256_RSA), der(0x03, &sig)]))
}

/// A TLS 1.2 ServerHello flight: ServerHello (with the selected ALPN),
/// Certificate for `name`, ServerKeyExchange, ServerHelloDone in one
/// record.
fn server_flight_12(
    rng: &mut SplitMix64,
    alpn: Option<&str>,
    name: &str,
    ca: Option<&str>,
) -> Vec<u8> {
    let mut sh = vec![0x03, 0x03];
    sh.extend(rng.bytes(32));
    sh.push(32);
    sh.extend(rng.bytes(32));
    sh.extend_from_slice(&[0xc0, 0x2f, 0]);
    let mut ext = Vec::new();
    tls_ext(&mut ext, 0xff01, &[0]);
    tls_ext(&mut ext, 0x000b, &[1, 0]);
    tls_ext(&mut ext, 0x0017, &[]);
    if let Some(a) = alpn {
        tls_ext(&mut ext, 0x0010, &alpn_ext(&[a]));
    }
    sh.extend_from_slice(&be16(ext.len()));
    sh.extend(ext);
    let cert = certificate(rng, name, ca);
    let mut certs = (cert.len() as u32).to_be_bytes()[1..].to_vec();
    certs.extend(cert);
    let mut cmsg = (certs.len() as u32).to_be_bytes()[1..].to_vec();
    cmsg.extend(certs);
    let mut ske = vec![3, 0x00, 0x1d, 32];
    ske.extend(rng.bytes(32));
    ske.extend_from_slice(&[0x08, 0x04, 0x01, 0x00]);
    ske.extend(rng.bytes(256));
    let mut body = handshake(2, &sh);
    body.extend(handshake(11, &cmsg));
    body.extend(handshake(12, &ske));
    body.extend(handshake(14, &[]));
    record(0x16, [3, 3], &body)
}

const CCS: [u8; 6] = [0x14, 0x03, 0x03, 0x00, 0x01, 0x01];

/// A TLS handshake (1.3 or 1.2) and some application data.
pub(super) fn tls(_ctx: &Ctx, rng: &mut SplitMix64) -> Dialog {
    let name = host(rng);
    let sni = (!rng.chance(1, 10)).then_some(name.as_str());
    let alpn: &[&str] = match rng.below(10) {
        0..=4 => &["h2", "http/1.1"],
        5 | 6 => &["http/1.1"],
        7 => &["h2"],
        _ => &[],
    };
    let tls13 = rng.chance(2, 3);
    let grease = rng.chance(1, 2);
    let hello = Hello {
        sni,
        alpn,
        grease,
        tls13,
    };
    let mut d = Dialog::new(format!(
        "{}{}",
        if tls13 { "tls13" } else { "tls12" },
        if grease { "-grease" } else { "" }
    ));
    d.push(C, client_hello(rng, &hello));
    d.details.sni = sni.map(str::to_string);
    d.details.alpn = Some(alpn.iter().map(|s| s.to_string()).collect());
    if tls13 {
        let sid = rng.bytes(32);
        let mut f = tls_server_hello(rng, &sid);
        f.extend_from_slice(&CCS);
        let n = rng.range(2000, 4500) as usize;
        f.extend(tls_app_data(rng, n));
        d.push(S, f);
        let mut fin = CCS.to_vec();
        fin.extend(tls_app_data(rng, 53));
        d.push(C, fin);
    } else {
        let sel = alpn.first().copied();
        d.details.alpn_server = sel.map(str::to_string);
        d.push(
            S,
            server_flight_12(rng, sel, &name, Some("Example TLS RSA CA 2023")),
        );
        let mut cke = vec![32];
        cke.extend(rng.bytes(32));
        let mut f = record(0x16, [3, 3], &handshake(16, &cke));
        f.extend_from_slice(&CCS);
        f.extend(record(0x16, [3, 3], &rng.bytes(40)));
        d.push(C, f);
        let mut f = CCS.to_vec();
        f.extend(record(0x16, [3, 3], &rng.bytes(40)));
        d.push(S, f);
    }
    let n = rng.range(100, 700) as usize;
    d.push(C, tls_app_data(rng, n));
    let n = rng.range(200, 6000) as usize;
    d.push(S, tls_app_data(rng, n));
    d
}

/// A QUIC variable-length integer (2-byte form, for lengths < 16384).
fn varint2(v: usize) -> [u8; 2] {
    [0x40 | ((v >> 8) as u8 & 0x3f), v as u8]
}

/// A QUIC v1 long-header packet of `ty` (0 Initial, 2 Handshake) whose
/// protected part (packet number and payload) is `protected` random bytes.
fn long_header(
    rng: &mut SplitMix64,
    ty: u8,
    dcid: &[u8],
    scid: &[u8],
    protected: usize,
) -> Vec<u8> {
    // Header protection masks the low four bits of the first byte.
    let mut p = vec![0xc0 | (ty << 4) | rng.below(16) as u8, 0, 0, 0, 1];
    p.push(dcid.len() as u8);
    p.extend_from_slice(dcid);
    p.push(scid.len() as u8);
    p.extend_from_slice(scid);
    if ty == 0 {
        p.push(0); // token length
    }
    p.extend_from_slice(&varint2(protected));
    p.extend(rng.bytes(protected));
    p
}

/// A QUIC v1 connection start: the client's padded Initial, the server's
/// Initial coalesced with Handshake packets, the client's acknowledgment
/// and a few short-header packets. Payloads are random (they are
/// encrypted), so the ClientHello inside cannot be recovered.
pub(super) fn quic(_ctx: &Ctx, rng: &mut SplitMix64) -> Dialog {
    let mut d = Dialog::new("v1-initial");
    let dcid = rng.bytes(8);
    let n = *rng.pick(&[0usize, 8, 8, 20]);
    let scid = rng.bytes(n);
    let server_cid = rng.bytes(8);
    let size = *rng.pick(&[1200usize, 1250, 1252, 1357, 1472]);
    // Header bytes before the protected part: 1 + 4 + 1 + dcid + 1 + scid
    // + token length + 2-byte length.
    let header = 7 + dcid.len() + scid.len() + 2;
    d.push(C, long_header(rng, 0, &dcid, &scid, size - header));
    let n = rng.range(90, 140) as usize;
    let mut first = long_header(rng, 0, &scid, &server_cid, n);
    let hs = rng.range(900, 1050) as usize;
    first.extend(long_header(rng, 2, &scid, &server_cid, hs));
    d.push(S, first);
    let n = rng.range(300, 1100) as usize;
    d.push(S, long_header(rng, 2, &scid, &server_cid, n));
    let (n, m) = (rng.range(40, 60) as usize, rng.range(60, 90) as usize);
    let mut ack = long_header(rng, 0, &server_cid, &scid, n);
    ack.extend(long_header(rng, 2, &server_cid, &scid, m));
    let pad = size.saturating_sub(ack.len());
    ack.extend(vec![0u8; pad]);
    d.push(C, ack);
    for i in 0..rng.range(2, 6) {
        let (dir, cid) = if i % 2 == 0 {
            (C, &server_cid)
        } else {
            (S, &scid)
        };
        let mut p = vec![0x40 | rng.below(64) as u8];
        p.extend_from_slice(cid);
        let n = rng.range(30, 1200) as usize;
        p.extend(rng.bytes(n));
        d.push(dir, p);
    }
    d
}

/// An SSH connection start: banners (either side first), KEXINIT both
/// ways, ECDH, then encrypted packets.
pub(super) fn ssh(_ctx: &Ctx, rng: &mut SplitMix64) -> Dialog {
    let client = *rng.pick(&[
        "SSH-2.0-OpenSSH_9.6p1 Ubuntu-3ubuntu13",
        "SSH-2.0-OpenSSH_9.2p1 Debian-2+deb12u2",
        "SSH-2.0-PuTTY_Release_0.80",
        "SSH-2.0-libssh2_1.11.0",
        "SSH-2.0-paramiko_3.4.0",
        "SSH-2.0-Go",
        "SSH-2.0-OpenSSH_for_Windows_8.1",
    ]);
    let server = *rng.pick(&[
        "SSH-2.0-OpenSSH_8.9p1 Ubuntu-3ubuntu0.6",
        "SSH-2.0-OpenSSH_9.2p1 Debian-2+deb12u2",
        "SSH-2.0-OpenSSH_7.4",
        "SSH-2.0-dropbear_2022.83",
        "SSH-1.99-Cisco-1.25",
        "SSH-2.0-AWSCodeCommit",
    ]);
    let server_first = rng.chance(1, 2);
    let mut d = Dialog::new(if server_first {
        "server-first"
    } else {
        "client-first"
    });
    let (cb, sb) = (format!("{client}\r\n"), format!("{server}\r\n"));
    if server_first {
        d.text(S, &sb);
        d.text(C, &cb);
    } else {
        d.text(C, &cb);
        d.text(S, &sb);
    }
    d.details.ssh_client_banner = Some(client.to_string());
    d.details.ssh_server_banner = Some(server.to_string());
    d.push(C, ssh_kexinit(rng, true));
    d.push(S, ssh_kexinit(rng, false));
    let mut ecdh = vec![30u8];
    ssh_string(&mut ecdh, &rng.bytes(32));
    d.push(C, ssh_packet(rng, &ecdh));
    let mut host_key = Vec::new();
    ssh_string(&mut host_key, b"ssh-ed25519");
    ssh_string(&mut host_key, &rng.bytes(32));
    let mut sig = Vec::new();
    ssh_string(&mut sig, b"ssh-ed25519");
    ssh_string(&mut sig, &rng.bytes(64));
    let mut reply = vec![31u8];
    ssh_string(&mut reply, &host_key);
    ssh_string(&mut reply, &rng.bytes(32));
    ssh_string(&mut reply, &sig);
    let mut r = ssh_packet(rng, &reply);
    r.extend(ssh_packet(rng, &[21]));
    d.push(S, r);
    d.push(C, ssh_packet(rng, &[21]));
    for _ in 0..rng.range(1, 4) {
        let n = rng.range(36, 300) as usize;
        d.push(C, rng.bytes(n));
        let n = rng.range(36, 1200) as usize;
        d.push(S, rng.bytes(n));
    }
    d
}

fn tpkt(body: &[u8]) -> Vec<u8> {
    let mut t = vec![3, 0];
    t.extend_from_slice(&be16(body.len() + 4));
    t.extend_from_slice(body);
    t
}

/// An RDP connection start: X.224 Connection Request with a
/// `Cookie: mstshash=` and an RDP negotiation request, the Connection
/// Confirm, then either a TLS ClientHello (TLS or CredSSP selected) or an
/// MCS Connect Initial (standard RDP security).
pub(super) fn rdp(_ctx: &Ctx, rng: &mut SplitMix64) -> Dialog {
    let user = if rng.chance(1, 3) {
        "administrator".to_string()
    } else {
        rng.pick(USERS).to_string()
    };
    let requested: u32 = *rng.pick(&[0x3, 0x3, 0xb, 0x1, 0x0]);
    let selected: u32 = match requested {
        0 => 0,
        1 => 1,
        _ => *rng.pick(&[1, 2, 2]),
    };
    let mut d = Dialog::new(match selected {
        0 => "rdp-security",
        1 => "tls",
        _ => "credssp",
    });
    let cookie = format!("Cookie: mstshash={user}\r\n");
    let mut cr = vec![(6 + cookie.len() + 8) as u8, 0xe0, 0, 0, 0, 0, 0];
    cr.extend_from_slice(cookie.as_bytes());
    cr.extend_from_slice(&[1, 0, 8, 0]);
    cr.extend_from_slice(&requested.to_le_bytes());
    d.push(C, tpkt(&cr));
    let src_ref = be16(rng.range(1, 0xffff) as usize);
    let mut cc = vec![14, 0xd0, 0, 0, src_ref[0], src_ref[1], 0];
    cc.extend_from_slice(&[2, *rng.pick(&[0x00u8, 0x0f, 0x1f]), 8, 0]);
    cc.extend_from_slice(&selected.to_le_bytes());
    d.push(S, tpkt(&cc));
    if selected == 0 {
        d.push(C, tpkt(&mcs_connect_initial(rng)));
        d.push(S, tpkt(&mcs_connect_response(rng)));
    } else {
        let host = format!("WS-{}", alnum(rng, 7).to_uppercase());
        d.push(
            C,
            client_hello(
                rng,
                &Hello {
                    sni: None,
                    alpn: &[],
                    grease: false,
                    tls13: false,
                },
            ),
        );
        d.push(S, server_flight_12(rng, None, &host, None));
    }
    d
}

/// MCS domain parameters (T.125), BER.
fn domain_params(v: [u32; 8]) -> Vec<u8> {
    let mut body = Vec::new();
    for x in v {
        let b = x.to_be_bytes();
        let skip = b.iter().take(3).take_while(|&&c| c == 0).count();
        let mut int = b[skip..].to_vec();
        if int[0] & 0x80 != 0 {
            int.insert(0, 0);
        }
        body.extend(der(0x02, &int));
    }
    der(0x30, &body)
}

/// A BER element with a two-byte application tag (`7f 65`, `7f 66`).
fn ber_app(tag: u8, content: &[u8]) -> Vec<u8> {
    let mut v = der(tag, content);
    v.insert(0, 0x7f);
    v
}

/// X.224 data header followed by an MCS Connect-Initial (client core data
/// left random inside the user-data octet string).
fn mcs_connect_initial(rng: &mut SplitMix64) -> Vec<u8> {
    let n = rng.range(250, 400) as usize;
    let body = cat(&[
        der(0x04, &[1]),
        der(0x04, &[1]),
        der(0x01, &[0xff]),
        domain_params([34, 2, 0, 1, 0, 1, 0xffff, 2]),
        domain_params([1, 1, 1, 1, 0, 1, 0x420, 2]),
        domain_params([0xffff, 0xfc17, 0xffff, 1, 0, 1, 0xffff, 2]),
        der(0x04, &rng.bytes(n)),
    ]);
    cat(&[vec![0x02, 0xf0, 0x80], ber_app(0x65, &body)])
}

/// X.224 data header followed by an MCS Connect-Response.
fn mcs_connect_response(rng: &mut SplitMix64) -> Vec<u8> {
    let n = rng.range(80, 120) as usize;
    let body = cat(&[
        der(0x0a, &[0]),
        der(0x02, &[0]),
        domain_params([34, 3, 0, 1, 0, 1, 0xfff8, 2]),
        der(0x04, &rng.bytes(n)),
    ]);
    cat(&[vec![0x02, 0xf0, 0x80], ber_app(0x66, &body)])
}
