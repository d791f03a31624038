//! Application services with binary framing: BitTorrent (peer wire over
//! TCP, DHT over UDP), MQTT, PostgreSQL and MySQL.

use crate::prng::SplitMix64;
use crate::truth::Protocol;

use super::dialog::{alnum, be16, be32, hex, Ctx, Dialog, C, S, USERS};

fn peer_id(rng: &mut SplitMix64) -> Vec<u8> {
    let client = *rng.pick(&["-qB4640-", "-TR4060-", "-UT360S-", "-DE211s-", "-lt0D80-"]);
    let mut id = client.as_bytes().to_vec();
    id.extend(alnum(rng, 12).into_bytes());
    id
}

/// A peer-wire message: length, id, payload.
fn bt_msg(id: u8, payload: &[u8]) -> Vec<u8> {
    let mut m = be32(payload.len() + 1).to_vec();
    m.push(id);
    m.extend_from_slice(payload);
    m
}

/// Bencoded byte string.
fn bstr(out: &mut Vec<u8>, s: &[u8]) {
    out.extend_from_slice(format!("{}:", s.len()).as_bytes());
    out.extend_from_slice(s);
}

/// BitTorrent: over TCP the peer-wire handshake both ways, bitfield,
/// extended handshake, interested/unchoke, a block request and piece;
/// over UDP a DHT query (`ping`, `find_node` or `get_peers`) and its
/// response.
pub(super) fn bittorrent(ctx: &Ctx, rng: &mut SplitMix64) -> Dialog {
    if ctx.proto == Protocol::Udp {
        return dht(rng);
    }
    let mut d = Dialog::new("peer-wire");
    let info_hash = rng.bytes(20);
    let hs = |rng: &mut SplitMix64| {
        let mut h = b"\x13BitTorrent protocol".to_vec();
        h.extend_from_slice(&[0, 0, 0, 0, 0, 0x10, 0, 0x05]);
        h.extend_from_slice(&info_hash);
        h.extend(peer_id(rng));
        h
    };
    d.push(C, hs(rng));
    let pieces = rng.range(200, 4000) as usize;
    let mut bits = vec![0xffu8; pieces.div_ceil(8)];
    for b in bits.iter_mut() {
        if rng.chance(1, 5) {
            *b = rng.next_u32() as u8;
        }
    }
    let mut reply = hs(rng);
    reply.extend(bt_msg(5, &bits));
    d.push(S, reply);
    let ext = format!(
        "d1:md11:ut_metadatai2e6:ut_pexi1ee1:pi{}e4:reqqi500e1:v17:qBittorrent/4.6.4e",
        rng.range(10_000, 60_000)
    );
    let mut m = bt_msg(20, &[&[0u8][..], ext.as_bytes()].concat());
    m.extend(bt_msg(2, &[]));
    d.push(C, m);
    d.push(S, bt_msg(1, &[]));
    let index = rng.below(pieces as u64) as usize;
    let mut req = be32(index).to_vec();
    req.extend_from_slice(&[0, 0, 0, 0, 0, 0, 0x40, 0]);
    d.push(C, bt_msg(6, &req));
    let mut piece = be32(index).to_vec();
    piece.extend_from_slice(&[0; 4]);
    piece.extend(rng.bytes(16_384));
    d.push(S, bt_msg(7, &piece));
    d
}

fn dht(rng: &mut SplitMix64) -> Dialog {
    let tid = rng.bytes(2);
    let (q, extra): (&str, Vec<u8>) = match rng.below(3) {
        0 => ("ping", Vec::new()),
        1 => {
            let mut e = Vec::new();
            bstr(&mut e, b"target");
            bstr(&mut e, &rng.bytes(20));
            ("find_node", e)
        }
        _ => {
            let mut e = Vec::new();
            bstr(&mut e, b"info_hash");
            bstr(&mut e, &rng.bytes(20));
            ("get_peers", e)
        }
    };
    let mut d = Dialog::new(format!("dht-{q}"));
    let mut m = b"d1:ad2:id20:".to_vec();
    m.extend(rng.bytes(20));
    m.extend(extra);
    m.extend_from_slice(b"e1:q");
    bstr(&mut m, q.as_bytes());
    m.extend_from_slice(b"1:t");
    bstr(&mut m, &tid);
    if rng.chance(1, 2) {
        m.extend_from_slice(b"1:v4:LT\x01\x02");
    }
    m.extend_from_slice(b"1:y1:qe");
    d.push(C, m);
    let mut r = b"d1:rd2:id20:".to_vec();
    r.extend(rng.bytes(20));
    if q != "ping" {
        bstr(&mut r, b"nodes");
        bstr(&mut r, &rng.bytes(26 * 8));
    }
    if q == "get_peers" {
        bstr(&mut r, b"token");
        bstr(&mut r, &rng.bytes(8));
    }
    r.extend_from_slice(b"e1:t");
    bstr(&mut r, &tid);
    r.extend_from_slice(b"1:y1:re");
    d.push(S, r);
    d
}

/// MQTT remaining length (variable byte integer).
fn mqtt_len(mut n: usize, out: &mut Vec<u8>) {
    loop {
        let mut b = (n % 128) as u8;
        n /= 128;
        if n > 0 {
            b |= 0x80;
        }
        out.push(b);
        if n == 0 {
            break;
        }
    }
}

fn mqtt_packet(first: u8, body: &[u8]) -> Vec<u8> {
    let mut p = vec![first];
    mqtt_len(body.len(), &mut p);
    p.extend_from_slice(body);
    p
}

fn mqtt_str(out: &mut Vec<u8>, s: &str) {
    out.extend_from_slice(&be16(s.len()));
    out.extend_from_slice(s.as_bytes());
}

/// MQTT 3.1, 3.1.1 or 5.0: CONNECT / CONNACK, SUBSCRIBE / SUBACK, a
/// PUBLISH, PINGREQ / PINGRESP, DISCONNECT.
pub(super) fn mqtt(_ctx: &Ctx, rng: &mut SplitMix64) -> Dialog {
    let (name, level, v5) = *rng.pick(&[
        ("MQTT", 4u8, false),
        ("MQTT", 5, true),
        ("MQIsdp", 3, false),
    ]);
    let mut d = Dialog::new(format!("mqtt-v{level}"));
    let auth = rng.chance(1, 2);
    let mut c = Vec::new();
    mqtt_str(&mut c, name);
    c.push(level);
    c.push(if auth { 0xc2 } else { 0x02 });
    c.extend_from_slice(&be16(*rng.pick(&[30usize, 60, 120])));
    if v5 {
        c.extend_from_slice(&[5, 0x11, 0, 0, 0x0e, 0x10]);
    }
    let client_id = format!(
        "{}-{}",
        rng.pick(&["sensor", "mosq", "paho", "hass"]),
        hex(rng, 8)
    );
    mqtt_str(&mut c, &client_id);
    if auth {
        mqtt_str(&mut c, rng.pick::<&str>(USERS));
        mqtt_str(&mut c, &alnum(rng, 12));
    }
    d.push(C, mqtt_packet(0x10, &c));
    d.push(
        S,
        if v5 {
            vec![0x20, 3, 0, 0, 0]
        } else {
            vec![0x20, 2, 0, 0]
        },
    );
    let topic = format!(
        "campus/{}/{}",
        rng.pick(&["lab", "dorm", "library"]),
        rng.pick(&["temp", "humidity", "door"])
    );
    let mut sub = be16(1).to_vec();
    if v5 {
        sub.push(0);
    }
    mqtt_str(&mut sub, &topic);
    sub.push(1);
    d.push(C, mqtt_packet(0x82, &sub));
    d.push(
        S,
        if v5 {
            vec![0x90, 4, 0, 1, 0, 1]
        } else {
            vec![0x90, 3, 0, 1, 1]
        },
    );
    let mut publ = Vec::new();
    mqtt_str(&mut publ, &topic);
    if v5 {
        publ.push(0);
    }
    publ.extend_from_slice(format!("{{\"value\":{}.{}}}", rng.below(40), rng.below(10)).as_bytes());
    d.push(S, mqtt_packet(0x30, &publ));
    d.push(C, vec![0xc0, 0]);
    d.push(S, vec![0xd0, 0]);
    d.push(C, if v5 { vec![0xe0, 1, 0] } else { vec![0xe0, 0] });
    d
}

/// A PostgreSQL backend message: type, length, body.
fn pg(ty: u8, body: &[u8]) -> Vec<u8> {
    let mut m = vec![ty];
    m.extend_from_slice(&be32(body.len() + 4));
    m.extend_from_slice(body);
    m
}

fn cstrs(parts: &[&str]) -> Vec<u8> {
    let mut v = Vec::new();
    for p in parts {
        v.extend_from_slice(p.as_bytes());
        v.push(0);
    }
    v
}

/// PostgreSQL: sometimes an SSLRequest refused with `N`; the protocol 3.0
/// StartupMessage; AuthenticationOk (sometimes after an MD5 challenge),
/// ParameterStatus, BackendKeyData, ReadyForQuery; a simple query.
pub(super) fn postgresql(_ctx: &Ctx, rng: &mut SplitMix64) -> Dialog {
    let ssl = rng.chance(1, 3);
    let md5 = rng.chance(1, 3);
    let mut d = Dialog::new(format!(
        "{}{}",
        if ssl { "sslrequest+" } else { "" },
        if md5 { "md5" } else { "trust" }
    ));
    if ssl {
        d.push(C, vec![0, 0, 0, 8, 0x04, 0xd2, 0x16, 0x2f]);
        d.push(S, b"N".to_vec());
    }
    let user = *rng.pick(USERS);
    let app = *rng.pick(&["psql", "pgAdmin 4", "PostgreSQL JDBC Driver", "psycopg"]);
    let mut body = 196_608u32.to_be_bytes().to_vec();
    body.extend(cstrs(&[
        "user",
        user,
        "database",
        "campus",
        "application_name",
        app,
        "client_encoding",
        "UTF8",
        "",
    ]));
    let mut startup = be32(body.len() + 4).to_vec();
    startup.extend(body);
    d.push(C, startup);
    let mut ok = Vec::new();
    if md5 {
        let mut r = 5u32.to_be_bytes().to_vec();
        r.extend(rng.bytes(4));
        d.push(S, pg(b'R', &r));
        d.push(C, pg(b'p', &cstrs(&[&format!("md5{}", hex(rng, 32))])));
    }
    ok.extend(pg(b'R', &[0, 0, 0, 0]));
    for (k, v) in [
        ("application_name", app),
        ("client_encoding", "UTF8"),
        ("DateStyle", "ISO, MDY"),
        ("integer_datetimes", "on"),
        ("server_encoding", "UTF8"),
        ("server_version", "16.2 (Debian 16.2-1.pgdg120+2)"),
        ("session_authorization", user),
        ("standard_conforming_strings", "on"),
        ("TimeZone", "Etc/UTC"),
    ] {
        ok.extend(pg(b'S', &cstrs(&[k, v])));
    }
    let mut key = be32(rng.range(1000, 60_000) as usize).to_vec();
    key.extend(rng.bytes(4));
    ok.extend(pg(b'K', &key));
    ok.extend(pg(b'Z', b"I"));
    d.push(S, ok);
    d.push(C, pg(b'Q', &cstrs(&["SELECT 1;"])));
    let mut rd = be16(1).to_vec();
    rd.extend(cstrs(&["?column?"]));
    rd.extend_from_slice(&[
        0, 0, 0, 0, 0, 0, 0, 0, 0, 23, 0, 4, 0xff, 0xff, 0xff, 0xff, 0, 0,
    ]);
    let mut res = pg(b'T', &rd);
    res.extend(pg(b'D', &[0, 1, 0, 0, 0, 1, b'1']));
    res.extend(pg(b'C', &cstrs(&["SELECT 1"])));
    res.extend(pg(b'Z', b"I"));
    d.push(S, res);
    d.push(C, pg(b'X', &[]));
    d
}

/// A MySQL packet: 3-byte little-endian length, sequence id, payload.
fn my(seq: u8, payload: &[u8]) -> Vec<u8> {
    let mut m = (payload.len() as u32).to_le_bytes()[..3].to_vec();
    m.push(seq);
    m.extend_from_slice(payload);
    m
}

/// Printable scramble bytes, as servers generate them (never 0).
fn scramble(rng: &mut SplitMix64, n: usize) -> Vec<u8> {
    (0..n).map(|_| rng.range(0x21, 0x7e) as u8).collect()
}

/// MySQL / MariaDB: the server's protocol-10 greeting, the client's
/// HandshakeResponse41, the authentication result, COM_QUERY, COM_QUIT.
pub(super) fn mysql(_ctx: &Ctx, rng: &mut SplitMix64) -> Dialog {
    let (version, plugin, name) = *rng.pick(&[
        ("8.0.36-0ubuntu0.22.04.1", "caching_sha2_password", "mysql8"),
        ("8.4.0", "caching_sha2_password", "mysql8"),
        ("5.7.44-log", "mysql_native_password", "mysql57"),
        (
            "5.5.5-10.11.6-MariaDB-0+deb12u1",
            "mysql_native_password",
            "mariadb",
        ),
    ]);
    let mut d = Dialog::new(name);
    let mut g = vec![10];
    g.extend(cstrs(&[version]));
    g.extend_from_slice(&(rng.range(8, 100_000) as u32).to_le_bytes());
    g.extend(scramble(rng, 8));
    g.push(0);
    g.extend_from_slice(&[0xff, 0xf7, 0xff, 0x02, 0x00, 0xff, 0xdf, 21]);
    g.extend_from_slice(&[0; 10]);
    g.extend(scramble(rng, 12));
    g.push(0);
    g.extend(cstrs(&[plugin]));
    d.push(S, my(0, &g));
    let caps: u32 = 0x01
        | 0x04
        | 0x08
        | 0x200
        | 0x2000
        | 0x8000
        | 0x10000
        | 0x20000
        | 0x80000
        | 0x100000
        | 0x200000;
    let mut r = caps.to_le_bytes().to_vec();
    r.extend_from_slice(&16_777_216u32.to_le_bytes());
    r.push(0xff);
    r.extend_from_slice(&[0; 23]);
    r.extend(cstrs(&[*rng.pick(USERS)]));
    let auth = if plugin.starts_with("caching") {
        32
    } else {
        20
    };
    r.push(auth as u8);
    r.extend(rng.bytes(auth));
    r.extend(cstrs(&["campus", plugin]));
    let mut attrs = Vec::new();
    for (k, v) in [
        ("_os", "Linux"),
        ("_client_name", "libmysql"),
        ("_pid", "41532"),
        ("_platform", "x86_64"),
        ("program_name", "mysql"),
    ] {
        attrs.push(k.len() as u8);
        attrs.extend_from_slice(k.as_bytes());
        attrs.push(v.len() as u8);
        attrs.extend_from_slice(v.as_bytes());
    }
    r.push(attrs.len() as u8);
    r.extend(attrs);
    d.push(C, my(1, &r));
    let ok = [0u8, 0, 0, 2, 0, 0, 0];
    if plugin.starts_with("caching") {
        let mut m = my(2, &[1, 3]);
        m.extend(my(3, &ok));
        d.push(S, m);
    } else {
        d.push(S, my(2, &ok));
    }
    let mut q = vec![3];
    q.extend_from_slice(b"select @@version_comment limit 1");
    d.push(C, my(0, &q));
    let mut res = my(1, &[1]);
    let mut col = Vec::new();
    for s in ["def", "", "", "", "@@version_comment", ""] {
        col.push(s.len() as u8);
        col.extend_from_slice(s.as_bytes());
    }
    col.extend_from_slice(&[0x0c, 0xff, 0, 0, 0, 0, 0, 0xfd, 0, 0, 0x27, 0, 0]);
    res.extend(my(2, &col));
    let eof = [0xfe, 0, 0, 2, 0];
    res.extend(my(3, &eof));
    let comment = "(Ubuntu)";
    res.extend(my(
        4,
        &[&[comment.len() as u8][..], comment.as_bytes()].concat(),
    ));
    res.extend(my(5, &eof));
    d.push(S, res);
    d.push(C, my(0, &[1]));
    d
}
