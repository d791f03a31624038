//! Line-based text protocols: HTTP, SMTP, FTP, IMAP, POP3, SIP and Redis
//! (RESP), as real clients and servers open them.

use crate::campus::http_date;
use crate::prng::SplitMix64;
use crate::sample::WORDS;

use super::dialog::{alnum, hex, host, Ctx, Dialog, C, S, USERS};
use super::secure::{client_hello, Hello};

const UAS: &[&str] = &[
    "Mozilla/5.0 (X11; Linux x86_64; rv:125.0) Gecko/20100101 Firefox/125.0",
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36",
    "curl/8.5.0",
    "Wget/1.21.3",
    "python-requests/2.31.0",
];

const PATHS: &[&str] = &[
    "/",
    "/index.html",
    "/api/v1/status",
    "/static/app.js",
    "/img/logo.png",
    "/downloads/tool-2.4.tar.gz",
    "/search?q=campus+network",
];

fn sentence(rng: &mut SplitMix64, n: usize) -> String {
    (0..n)
        .map(|_| *rng.pick(WORDS))
        .collect::<Vec<_>>()
        .join(" ")
}

/// Seconds of the flows' era (2024-05).
const SECS: u64 = 1_714_564_800;

/// An HTTP/1.x request and its response.
pub(super) fn http(ctx: &Ctx, rng: &mut SplitMix64) -> Dialog {
    let h = host(rng);
    let port = ctx.server.port();
    let host_hdr = if port == 80 { h } else { format!("{h}:{port}") };
    let path = *rng.pick(PATHS);
    let ua = *rng.pick(UAS);
    let v10 = rng.chance(1, 8);
    let (method, body) = match rng.below(10) {
        0 => ("POST", format!("{{\"user\":\"{}\"}}", rng.pick(USERS))),
        1 => ("HEAD", String::new()),
        _ => ("GET", String::new()),
    };
    let mut d = Dialog::new(format!(
        "{}-{}",
        method.to_lowercase(),
        if v10 { "1.0" } else { "1.1" }
    ));
    let mut req = format!(
        "{method} {path} HTTP/1.{}\r\nHost: {host_hdr}\r\nUser-Agent: {ua}\r\nAccept: */*\r\n",
        u8::from(!v10)
    );
    if !body.is_empty() {
        req.push_str(&format!(
            "Content-Type: application/json\r\nContent-Length: {}\r\n",
            body.len()
        ));
    }
    req.push_str("\r\n");
    req.push_str(&body);
    d.text(C, &req);
    let page = format!(
        "<!DOCTYPE html>\n<html><head><title>{}</title></head><body><p>{}</p></body></html>\n",
        sentence(rng, 3),
        sentence(rng, 40)
    );
    let (status, page) = match rng.below(8) {
        0 => (
            "404 Not Found",
            "<html><body>not found</body></html>\n".to_string(),
        ),
        1 => ("301 Moved Permanently", String::new()),
        _ => ("200 OK", page),
    };
    let mut resp =
        format!(
        "HTTP/1.1 {status}\r\nServer: {}\r\nDate: {}\r\nContent-Type: text/html; charset=utf-8\r\n\
         Content-Length: {}\r\n",
        rng.pick(&["nginx/1.24.0", "Apache/2.4.58 (Ubuntu)", "Microsoft-IIS/10.0"]),
        http_date(SECS + rng.below(86_400)),
        page.len()
    );
    if status.starts_with("301") {
        resp.push_str("Location: https://www.example.com/\r\n");
    }
    resp.push_str(if v10 {
        "Connection: close\r\n\r\n"
    } else {
        "\r\n"
    });
    if method != "HEAD" {
        resp.push_str(&page);
    }
    d.text(S, &resp);
    d.details.http_host = Some(host_hdr);
    d
}

/// An SMTP session: greeting, EHLO, then either a mail transaction or
/// STARTTLS followed by a TLS ClientHello.
pub(super) fn smtp(ctx: &Ctx, rng: &mut SplitMix64) -> Dialog {
    let starttls = rng.chance(1, 3);
    let mut d = Dialog::new(if starttls { "starttls" } else { "mail" });
    let mx = *rng.pick(&[
        "mail.example.org",
        "mx1.example.net",
        "smtp.campus.example.edu",
    ]);
    let greeting = match rng.below(3) {
        0 => format!("220 {mx} ESMTP Postfix (Debian/GNU)\r\n"),
        1 => format!(
            "220 {mx} ESMTP Exim 4.96 {}\r\n",
            http_date(SECS + rng.below(86_400))
        ),
        _ => format!("220 {mx} Microsoft ESMTP MAIL Service ready\r\n"),
    };
    d.text(S, &greeting);
    d.text(C, "EHLO client.campus.example.edu\r\n");
    let mut caps = format!("250-{mx}\r\n250-PIPELINING\r\n250-SIZE 52428800\r\n");
    if ctx.server.port() == 587 || rng.chance(1, 2) {
        caps.push_str("250-AUTH PLAIN LOGIN\r\n");
    }
    caps.push_str("250-STARTTLS\r\n250-ENHANCEDSTATUSCODES\r\n250-8BITMIME\r\n250 SMTPUTF8\r\n");
    d.text(S, &caps);
    if starttls {
        d.text(C, "STARTTLS\r\n");
        d.text(S, "220 2.0.0 Ready to start TLS\r\n");
        d.push(C, client_hello(rng, &Hello::plain(Some(mx), &[])));
        return d;
    }
    let user = *rng.pick(USERS);
    d.text(C, &format!("MAIL FROM:<{user}@campus.example.edu>\r\n"));
    d.text(S, "250 2.1.0 Ok\r\n");
    d.text(C, &format!("RCPT TO:<info@{mx}>\r\n"));
    d.text(S, "250 2.1.5 Ok\r\n");
    d.text(C, "DATA\r\n");
    d.text(S, "354 End data with <CR><LF>.<CR><LF>\r\n");
    d.text(
        C,
        &format!(
            "From: <{user}@campus.example.edu>\r\nTo: <info@{mx}>\r\nSubject: {}\r\n\r\n{}\r\n.\r\n",
            sentence(rng, 4),
            sentence(rng, 30)
        ),
    );
    d.text(
        S,
        &format!(
            "250 2.0.0 Ok: queued as {}\r\n",
            hex(rng, 10).to_uppercase()
        ),
    );
    d.text(C, "QUIT\r\n");
    d.text(S, "221 2.0.0 Bye\r\n");
    d
}

/// An FTP control session: banner, login, a few commands; sometimes
/// AUTH TLS followed by a TLS ClientHello.
pub(super) fn ftp(_ctx: &Ctx, rng: &mut SplitMix64) -> Dialog {
    let (banner, server) = match rng.below(4) {
        0 => ("220 (vsFTPd 3.0.5)\r\n", "vsftpd"),
        1 => ("220 ProFTPD Server (Debian) [198.51.100.21]\r\n", "proftpd"),
        2 => (
            "220-FileZilla Server 1.8.1\r\n220 Please visit https://filezilla-project.org/\r\n",
            "filezilla",
        ),
        _ => (
            "220---------- Welcome to Pure-FTPd [privsep] [TLS] ----------\r\n\
             220-You are user number 1 of 50 allowed.\r\n220 This is a private system\r\n",
            "pureftpd",
        ),
    };
    let auth_tls = rng.chance(1, 4);
    let mut d = Dialog::new(format!(
        "{server}{}",
        if auth_tls { "-auth-tls" } else { "" }
    ));
    d.text(S, banner);
    if auth_tls {
        d.text(C, "AUTH TLS\r\n");
        d.text(S, "234 AUTH TLS OK.\r\n");
        d.push(C, client_hello(rng, &Hello::plain(None, &[])));
        return d;
    }
    let user = if rng.chance(1, 3) {
        "anonymous"
    } else {
        *rng.pick(USERS)
    };
    d.text(C, &format!("USER {user}\r\n"));
    d.text(S, "331 Please specify the password.\r\n");
    d.text(C, &format!("PASS {}\r\n", alnum(rng, 10)));
    d.text(S, "230 Login successful.\r\n");
    d.text(C, "SYST\r\n");
    d.text(S, "215 UNIX Type: L8\r\n");
    d.text(C, "PWD\r\n");
    d.text(S, "257 \"/\" is the current directory\r\n");
    d.text(C, "TYPE I\r\n");
    d.text(S, "200 Switching to Binary mode.\r\n");
    let p = 40_000 + rng.below(20_000);
    d.text(C, "PASV\r\n");
    d.text(
        S,
        &format!(
            "227 Entering Passive Mode (198,51,100,21,{},{}).\r\n",
            p >> 8,
            p & 255
        ),
    );
    d.text(C, "QUIT\r\n");
    d.text(S, "221 Goodbye.\r\n");
    d
}

/// An IMAP session: greeting, CAPABILITY, LOGIN, SELECT, LOGOUT.
pub(super) fn imap(_ctx: &Ctx, rng: &mut SplitMix64) -> Dialog {
    const CAPS: &str =
        "IMAP4rev1 SASL-IR LOGIN-REFERRALS ID ENABLE IDLE LITERAL+ STARTTLS AUTH=PLAIN";
    let (greeting, name) = match rng.below(3) {
        0 => (
            format!("* OK [CAPABILITY {CAPS}] Dovecot (Ubuntu) ready.\r\n"),
            "dovecot",
        ),
        1 => (
            "* OK [CAPABILITY IMAP4rev1 LITERAL+ ID ENABLE STARTTLS AUTH=PLAIN SASL-IR] \
             mail.example.org Cyrus IMAP 3.6.1 server ready\r\n"
                .to_string(),
            "cyrus",
        ),
        _ => (
            "* OK The Microsoft Exchange IMAP4 service is ready.\r\n".to_string(),
            "exchange",
        ),
    };
    let mut d = Dialog::new(name);
    let tag = |n: u32, style: u64| match style {
        0 => format!("a{n:03}"),
        1 => format!("{n}"),
        _ => format!("A{n}"),
    };
    let style = rng.below(3);
    d.text(S, &greeting);
    let t = tag(1, style);
    d.text(C, &format!("{t} CAPABILITY\r\n"));
    d.text(
        S,
        &format!(
            "* CAPABILITY {CAPS}\r\n{t} OK Pre-login capabilities listed, post-login capabilities have more.\r\n"
        ),
    );
    let t = tag(2, style);
    d.text(
        C,
        &format!("{t} LOGIN {} \"{}\"\r\n", rng.pick(USERS), alnum(rng, 10)),
    );
    d.text(
        S,
        &format!("{t} OK [CAPABILITY IMAP4rev1 IDLE SORT THREAD=REFERENCES] Logged in\r\n"),
    );
    let t = tag(3, style);
    let exists = rng.below(500);
    d.text(C, &format!("{t} SELECT INBOX\r\n"));
    d.text(
        S,
        &format!(
            "* FLAGS (\\Answered \\Flagged \\Deleted \\Seen \\Draft)\r\n* {exists} EXISTS\r\n\
             * 0 RECENT\r\n* OK [UIDVALIDITY 1700000000] UIDs valid\r\n\
             {t} OK [READ-WRITE] Select completed.\r\n"
        ),
    );
    let t = tag(4, style);
    d.text(C, &format!("{t} LOGOUT\r\n"));
    d.text(
        S,
        &format!("* BYE Logging out\r\n{t} OK Logout completed.\r\n"),
    );
    d
}

/// A POP3 session: greeting, CAPA, USER/PASS, STAT, QUIT.
pub(super) fn pop3(_ctx: &Ctx, rng: &mut SplitMix64) -> Dialog {
    let (greeting, name) = match rng.below(3) {
        0 => ("+OK Dovecot (Ubuntu) ready.\r\n".to_string(), "dovecot"),
        1 => (
            format!(
                "+OK POP3 server ready <{}.{}@mail.example.org>\r\n",
                rng.below(100_000),
                rng.below(1_000_000_000)
            ),
            "apop-banner",
        ),
        _ => (
            "+OK The Microsoft Exchange POP3 service is ready.\r\n".to_string(),
            "exchange",
        ),
    };
    let mut d = Dialog::new(name);
    d.text(S, &greeting);
    if rng.chance(1, 2) {
        d.text(C, "CAPA\r\n");
        d.text(
            S,
            "+OK\r\nCAPA\r\nTOP\r\nUIDL\r\nRESP-CODES\r\nPIPELINING\r\nAUTH-RESP-CODE\r\nUSER\r\n\
             SASL PLAIN\r\n.\r\n",
        );
    }
    d.text(C, &format!("USER {}\r\n", rng.pick(USERS)));
    d.text(S, "+OK\r\n");
    d.text(C, &format!("PASS {}\r\n", alnum(rng, 10)));
    d.text(S, "+OK Logged in.\r\n");
    d.text(C, "STAT\r\n");
    d.text(
        S,
        &format!("+OK {} {}\r\n", rng.below(40), rng.below(4_000_000)),
    );
    d.text(C, "QUIT\r\n");
    d.text(S, "+OK Logging out.\r\n");
    d
}

/// A SIP transaction over UDP or TCP: INVITE (100 Trying, 180 Ringing,
/// 200 OK with SDP, ACK), REGISTER (sometimes challenged with 401 first,
/// then 200 OK) or OPTIONS (200 OK).
pub(super) fn sip(ctx: &Ctx, rng: &mut SplitMix64) -> Dialog {
    let domain = *rng.pick(&["example.org", "voip.example.net", "pbx.campus.example.edu"]);
    let user = *rng.pick(USERS);
    let kind = rng.below(3);
    // REGISTER names the registering user in To.
    let callee = if kind == 1 { user } else { *rng.pick(USERS) };
    let cip = ctx.client.ip();
    let via_host = ctx.client.to_string();
    let tr = ctx.transport();
    let branch = format!("z9hG4bK{}", hex(rng, 16));
    let ftag = hex(rng, 10);
    let ttag = hex(rng, 10);
    let call_id = format!("{}@{}", hex(rng, 24), cip);
    let ua = *rng.pick(&[
        "Linphone/5.2.0 (belle-sip/5.2.0)",
        "Zoiper rv2.10.20.3",
        "MicroSIP/3.21.3",
        "Yealink SIP-T46S 66.86.0.15",
    ]);
    let server_ua = *rng.pick(&[
        "Asterisk PBX 20.5.0",
        "FPBX-16.0.40(18.20.0)",
        "Kamailio (5.7.3)",
    ]);
    let msg = |start: &str, cseq: &str, extra: &str, to_tag: bool, body: &str| {
        // Responses echo the Via with the address the request came from.
        let (via_params, hops) = if start.starts_with("SIP/2.0 ") {
            (
                format!("rport={};received={}", ctx.client.port(), cip),
                String::new(),
            )
        } else {
            ("rport".to_string(), "Max-Forwards: 70\r\n".to_string())
        };
        format!(
            "{start}\r\nVia: SIP/2.0/{tr} {via_host};branch={branch};{via_params}\r\n{hops}\
             From: \"{user}\" <sip:{user}@{domain}>;tag={ftag}\r\nTo: <sip:{callee}@{domain}>{}\r\n\
             Call-ID: {call_id}\r\nCSeq: {cseq}\r\n{extra}Content-Length: {}\r\n\r\n{body}",
            if to_tag {
                format!(";tag={ttag}")
            } else {
                String::new()
            },
            body.len()
        )
    };
    let sdp = |who: &str, ip: std::net::IpAddr, port: u64| {
        format!(
            "v=0\r\no={who} {0} {0} IN {fam} {ip}\r\ns=Talk\r\nc=IN {fam} {ip}\r\nt=0 0\r\n\
             m=audio {port} RTP/AVP 0 8 101\r\na=rtpmap:0 PCMU/8000\r\na=rtpmap:8 PCMA/8000\r\n\
             a=rtpmap:101 telephone-event/8000\r\na=sendrecv\r\n",
            1_000_000 + port,
            fam = ctx.sdp_family()
        )
    };
    let contact = format!(
        "Contact: <sip:{user}@{}>\r\nUser-Agent: {ua}\r\n",
        ctx.client
    );
    let server_hdrs = format!("Server: {server_ua}\r\n");
    let mut d;
    match kind {
        0 => {
            d = Dialog::new("invite");
            let offer = sdp(user, cip, 2 * rng.range(5000, 15000));
            let extra = format!(
                "{contact}Allow: INVITE, ACK, CANCEL, OPTIONS, BYE, REFER, NOTIFY, MESSAGE\r\n\
                 Content-Type: application/sdp\r\n"
            );
            let start = format!("INVITE sip:{callee}@{domain} SIP/2.0");
            d.text(C, &msg(&start, "1 INVITE", &extra, false, &offer));
            d.text(
                S,
                &msg("SIP/2.0 100 Trying", "1 INVITE", &server_hdrs, false, ""),
            );
            d.text(
                S,
                &msg("SIP/2.0 180 Ringing", "1 INVITE", &server_hdrs, true, ""),
            );
            let answer = sdp("root", ctx.server.ip(), 2 * rng.range(5000, 15000));
            let extra = format!(
                "{server_hdrs}Contact: <sip:{callee}@{}>\r\nContent-Type: application/sdp\r\n",
                ctx.server
            );
            d.text(S, &msg("SIP/2.0 200 OK", "1 INVITE", &extra, true, &answer));
            let start = format!("ACK sip:{callee}@{domain} SIP/2.0");
            d.text(C, &msg(&start, "1 ACK", "", true, ""));
        }
        1 => {
            d = Dialog::new("register");
            let start = format!("REGISTER sip:{domain} SIP/2.0");
            let extra = format!("{contact}Expires: 3600\r\n");
            d.text(C, &msg(&start, "1 REGISTER", &extra, false, ""));
            if rng.chance(1, 2) {
                let nonce = hex(rng, 32);
                let chal = format!(
                    "{server_hdrs}WWW-Authenticate: Digest realm=\"{domain}\", nonce=\"{nonce}\", algorithm=MD5\r\n"
                );
                d.text(
                    S,
                    &msg("SIP/2.0 401 Unauthorized", "1 REGISTER", &chal, true, ""),
                );
                let auth = format!(
                    "{contact}Expires: 3600\r\nAuthorization: Digest username=\"{user}\", realm=\"{domain}\", \
                     nonce=\"{nonce}\", uri=\"sip:{domain}\", response=\"{}\", algorithm=MD5\r\n",
                    hex(rng, 32)
                );
                d.text(C, &msg(&start, "2 REGISTER", &auth, false, ""));
                let ok = format!(
                    "{server_hdrs}Contact: <sip:{user}@{}>;expires=3600\r\n",
                    ctx.client
                );
                d.text(S, &msg("SIP/2.0 200 OK", "2 REGISTER", &ok, true, ""));
            } else {
                let ok = format!(
                    "{server_hdrs}Contact: <sip:{user}@{}>;expires=3600\r\n",
                    ctx.client
                );
                d.text(S, &msg("SIP/2.0 200 OK", "1 REGISTER", &ok, true, ""));
            }
        }
        _ => {
            d = Dialog::new("options");
            let start = format!("OPTIONS sip:{domain} SIP/2.0");
            d.text(
                C,
                &msg(
                    &start,
                    "1 OPTIONS",
                    &format!("{contact}Accept: application/sdp\r\n"),
                    false,
                    "",
                ),
            );
            let ok = format!("{server_hdrs}Allow: INVITE, ACK, CANCEL, OPTIONS, BYE\r\n");
            d.text(S, &msg("SIP/2.0 200 OK", "1 OPTIONS", &ok, true, ""));
        }
    }
    d
}

/// A RESP array of bulk strings (how clients send commands).
fn resp_cmd(args: &[&str]) -> String {
    let mut s = format!("*{}\r\n", args.len());
    for a in args {
        s.push_str(&format!("${}\r\n{a}\r\n", a.len()));
    }
    s
}

/// A Redis session: a few RESP commands and their replies.
pub(super) fn redis(_ctx: &Ctx, rng: &mut SplitMix64) -> Dialog {
    let mut d = Dialog::new("resp2");
    if rng.chance(1, 3) {
        d.text(C, &resp_cmd(&["AUTH", &alnum(rng, 16)]));
        d.text(S, "+OK\r\n");
    }
    if rng.chance(1, 2) {
        d.text(C, &resp_cmd(&["PING"]));
        d.text(S, "+PONG\r\n");
    }
    for _ in 0..rng.range(1, 4) {
        let key = format!("session:{}", hex(rng, 12));
        match rng.below(5) {
            0 => {
                let v = sentence(rng, 3);
                d.text(C, &resp_cmd(&["SET", &key, &v, "EX", "3600"]));
                d.text(S, "+OK\r\n");
            }
            1 => {
                let v = alnum(rng, 24);
                d.text(C, &resp_cmd(&["GET", &key]));
                d.text(S, &format!("${}\r\n{v}\r\n", v.len()));
            }
            2 => {
                d.text(C, &resp_cmd(&["INCR", "counter:hits"]));
                d.text(S, &format!(":{}\r\n", rng.below(100_000)));
            }
            3 => {
                d.text(C, &resp_cmd(&["GET", &key]));
                d.text(S, "$-1\r\n");
            }
            _ => {
                let info = format!(
                    "# Server\r\nredis_version:7.2.4\r\nredis_mode:standalone\r\nos:Linux 6.1.0 x86_64\r\n\
                     tcp_port:6379\r\nuptime_in_seconds:{}\r\n",
                    rng.below(10_000_000)
                );
                d.text(C, &resp_cmd(&["INFO", "server"]));
                d.text(S, &format!("${}\r\n{info}\r\n", info.len()));
            }
        }
    }
    if rng.chance(1, 2) {
        d.text(C, &resp_cmd(&["QUIT"]));
        d.text(S, "+OK\r\n");
    }
    d
}
