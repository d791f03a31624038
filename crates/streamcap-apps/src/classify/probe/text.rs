//! Probes of line-based protocols: the first line of a direction.

use super::{prefix_of, Command, Hint, Verdict};

/// The first line: `Ok(line)` once complete, `Err(partial)` before; a
/// `\r` before the line end (or at the end of a partial line) left out.
fn first_line(buf: &[u8]) -> Result<&[u8], &[u8]> {
    match memchr::memchr(b'\n', buf) {
        Some(i) => {
            let l = &buf[..i];
            Ok(l.strip_suffix(b"\r").unwrap_or(l))
        }
        None => Err(buf.strip_suffix(b"\r").unwrap_or(buf)),
    }
}

fn is_token_char(b: u8) -> bool {
    b.is_ascii_uppercase() || b == b'-' || b == b'_'
}

/// A request target or URI: visible ASCII or UTF-8 bytes.
fn is_target_char(b: u8) -> bool {
    (0x21..0x7f).contains(&b) || b >= 0x80
}

/// Methods of HTTP and WebDAV, for requests without a version.
const HTTP_METHODS: [&[u8]; 18] = [
    b"GET",
    b"POST",
    b"HEAD",
    b"PUT",
    b"DELETE",
    b"OPTIONS",
    b"CONNECT",
    b"TRACE",
    b"PATCH",
    b"PROPFIND",
    b"PROPPATCH",
    b"MKCOL",
    b"COPY",
    b"MOVE",
    b"LOCK",
    b"UNLOCK",
    b"SEARCH",
    b"REPORT",
];

/// Longest request line read (bytes, without its end): a longer one is
/// judged on its first `REQUEST_LINE + 1` bytes.
const REQUEST_LINE: usize = 1024;

/// `METHOD SP target SP version`: HTTP/1.x, HTTP/2.0 (the `PRI` preface)
/// or SIP/2.0, the line complete. Also HTTP/0.9's `GET /path` line, an
/// HTTP method with a path longer than `REQUEST_LINE` (1 KiB, read up to
/// there: some requests are attacks on long paths), and an HTTP method
/// with a path containing spaces before `HTTP/1.x` (attacks put commands
/// there; nginx reads such a line up to its last space).
pub fn request_line(buf: &[u8]) -> Verdict {
    match strict_request_line(buf) {
        Verdict::No => spaced_request_line(buf),
        v => v,
    }
}

/// `METHOD SP path-with-spaces SP HTTP/1.x`, for a known HTTP method and
/// a path starting with `/`, the line complete and at most
/// `REQUEST_LINE` bytes.
fn spaced_request_line(buf: &[u8]) -> Verdict {
    let (line, complete) = match first_line(buf) {
        Ok(l) => (l, true),
        Err(p) => (p, false),
    };
    if line.len() > REQUEST_LINE {
        return Verdict::No;
    }
    let Some(i) = memchr::memchr(b' ', line) else {
        return Verdict::No;
    };
    let (method, rest) = (&line[..i], &line[i + 1..]);
    if !HTTP_METHODS.contains(&method) || !rest.starts_with(b"/") {
        return Verdict::No;
    }
    if !complete {
        return if rest.iter().all(|&b| b == b' ' || is_target_char(b)) {
            Verdict::More
        } else {
            Verdict::No
        };
    }
    let Some(i) = memchr::memrchr(b' ', rest) else {
        return Verdict::No;
    };
    let (target, version) = (&rest[..i], &rest[i + 1..]);
    if (version == b"HTTP/1.1" || version == b"HTTP/1.0")
        && target.iter().all(|&b| b == b' ' || is_target_char(b))
    {
        Verdict::Yes(Hint::HttpRequest)
    } else {
        Verdict::No
    }
}

/// [`request_line`] without spaces in the target.
fn strict_request_line(buf: &[u8]) -> Verdict {
    const VERSIONS: [(&[u8], bool); 5] = [
        (b"HTTP/1.1", true),
        (b"HTTP/1.0", true),
        (b"HTTP/0.9", true),
        (b"HTTP/2.0", true),
        (b"SIP/2.0", false),
    ];
    let (line, complete) = match first_line(buf) {
        Ok(l) => (l, true),
        Err(p) => (p, false),
    };
    let long = line.len() > REQUEST_LINE;
    let line = &line[..line.len().min(REQUEST_LINE + 1)];
    let complete = complete && !long;
    let mut parts = line.splitn(3, |&b| b == b' ');
    let method = parts.next().unwrap_or_default();
    let target = parts.next();
    let version = parts.next();
    if method.is_empty() && (complete || !line.is_empty()) {
        return Verdict::No;
    }
    if method.len() > 16 || !method.iter().all(|&b| is_token_char(b)) {
        return Verdict::No;
    }
    let Some(target) = target else {
        return if complete || long {
            Verdict::No
        } else {
            Verdict::More
        };
    };
    if !target.iter().all(|&b| is_target_char(b)) {
        return Verdict::No;
    }
    let Some(version) = version else {
        let http_path = HTTP_METHODS.contains(&method) && target.starts_with(b"/");
        return if long && http_path || complete && method == b"GET" && target.starts_with(b"/") {
            Verdict::Yes(Hint::HttpRequest)
        } else if complete || long {
            Verdict::No
        } else {
            Verdict::More
        };
    };
    if target.is_empty() || long {
        return Verdict::No;
    }
    if !complete {
        return if VERSIONS.iter().any(|(v, _)| v.starts_with(version)) {
            Verdict::More
        } else {
            Verdict::No
        };
    }
    match VERSIONS.iter().find(|(v, _)| *v == version) {
        Some((_, true)) => Verdict::Yes(Hint::HttpRequest),
        Some((_, false)) => Verdict::Yes(Hint::SipRequest),
        None => Verdict::No,
    }
}

/// `HTTP/1.x ddd` or `SIP/2.0 ddd`.
pub fn status_line(buf: &[u8]) -> Verdict {
    for (pat, hint) in [
        (&b"HTTP/1.1 "[..], Hint::HttpResponse),
        (b"HTTP/1.0 ", Hint::HttpResponse),
        (b"SIP/2.0 ", Hint::SipResponse),
    ] {
        if prefix_of(buf, pat) {
            return Verdict::More;
        }
        if let Some(rest) = buf.strip_prefix(pat) {
            let n = rest.len().min(3);
            if !rest[..n].iter().all(u8::is_ascii_digit) {
                return Verdict::No;
            }
            if n < 3 {
                return Verdict::More;
            }
            return Verdict::Yes(hint);
        }
    }
    Verdict::No
}

/// `SSH-protoversion-softwareversion [comments]` as the first line.
pub fn ssh(buf: &[u8]) -> Verdict {
    if prefix_of(buf, b"SSH-") {
        return Verdict::More;
    }
    if !buf.starts_with(b"SSH-") {
        return Verdict::No;
    }
    let (line, complete) = match first_line(buf) {
        Ok(l) => (l, true),
        Err(p) => (p, false),
    };
    if line.len() > 255 || !line.iter().all(|&b| (0x20..0x7f).contains(&b)) {
        return Verdict::No;
    }
    if !complete {
        return Verdict::More;
    }
    let rest = &line[4..];
    let Some(dash) = rest.iter().position(|&b| b == b'-') else {
        return Verdict::No;
    };
    let proto = &rest[..dash];
    let software = &rest[dash + 1..];
    if proto.is_empty()
        || !proto.iter().all(|&b| b.is_ascii_digit() || b == b'.')
        || software.is_empty()
        || software[0] == b' '
    {
        return Verdict::No;
    }
    Verdict::Yes(Hint::Ssh(String::from_utf8_lossy(line).into_owned()))
}

fn contains_ci(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len())
        .any(|w| w.eq_ignore_ascii_case(needle))
}

/// A server's greeting: `220` (SMTP or FTP), `+OK` (POP3), `* OK` or
/// `* PREAUTH` (IMAP).
pub fn mail_greeting(buf: &[u8]) -> Verdict {
    for pat in [&b"* OK "[..], b"* PREAUTH "] {
        if prefix_of(buf, pat) {
            return Verdict::More;
        }
        if buf.starts_with(pat) {
            return Verdict::Yes(Hint::ImapOk);
        }
    }
    let is_220 =
        buf.starts_with(b"220") && matches!(buf.get(3), None | Some(b' ' | b'-' | b'\r' | b'\n'));
    let is_ok = buf.starts_with(b"+OK") && matches!(buf.get(3), None | Some(b' ' | b'\r' | b'\n'));
    if !is_220 && !is_ok {
        return if prefix_of(buf, b"220") || prefix_of(buf, b"+OK") {
            Verdict::More
        } else {
            Verdict::No
        };
    }
    let (line, complete) = match first_line(buf) {
        Ok(l) => (l, true),
        Err(p) => (p, false),
    };
    if line.len() > 512
        || !line
            .iter()
            .all(|&b| (0x20..0x7f).contains(&b) || b == b'\t')
    {
        return Verdict::No;
    }
    if !complete {
        return Verdict::More;
    }
    if is_ok {
        return Verdict::Yes(Hint::PopOk);
    }
    let text = line.get(4..).unwrap_or_default();
    let first_word = text.split(|&b| b == b' ').next().unwrap_or_default();
    Verdict::Yes(Hint::Reply220 {
        ftp: contains_ci(text, b"FTP"),
        smtp: contains_ci(text, b"SMTP"),
        host_first: first_word.contains(&b'.'),
    })
}

/// A client's first command of SMTP, FTP, POP3 or IMAP, the line complete.
pub fn mail_command(buf: &[u8]) -> Verdict {
    let (line, complete) = match first_line(buf) {
        Ok(l) => (l, true),
        Err(p) => (p, false),
    };
    if line.len() > 512 || !line.iter().all(|&b| (0x20..0x7f).contains(&b)) {
        return Verdict::No;
    }
    if !complete {
        return Verdict::More;
    }
    let mut words = line.split(|&b| b == b' ');
    let first = words.next().unwrap_or_default();
    let second = words.next();
    let upper = first.to_ascii_uppercase();
    let cmd = match upper.as_slice() {
        b"EHLO" | b"HELO" => Some(Command::Smtp),
        b"MAIL"
            if second.is_some_and(|w| w.len() >= 5 && w[..5].eq_ignore_ascii_case(b"FROM:")) =>
        {
            Some(Command::Smtp)
        }
        b"SYST" | b"FEAT" | b"PWD" | b"PASV" | b"EPSV" => Some(Command::Ftp),
        b"TYPE" if second.is_some() => Some(Command::Ftp),
        b"AUTH"
            if second.is_some_and(|w| {
                w.eq_ignore_ascii_case(b"TLS") || w.eq_ignore_ascii_case(b"SSL")
            }) =>
        {
            Some(Command::Ftp)
        }
        b"CAPA" | b"STLS" | b"UIDL" | b"STAT" => Some(Command::Pop3),
        b"APOP" if second.is_some() => Some(Command::Pop3),
        b"USER" | b"PASS" if second.is_some() => Some(Command::UserPass),
        _ => None,
    };
    if let Some(c) = cmd {
        return Verdict::Yes(Hint::Command(c));
    }
    // IMAP: a tag, then a command.
    let tag_ok = !first.is_empty()
        && first.len() <= 32
        && first
            .iter()
            .all(|&b| b.is_ascii_alphanumeric() || b == b'.' || b == b'-' || b == b'_');
    let imap = second.is_some_and(|w| {
        [
            &b"CAPABILITY"[..],
            b"LOGIN",
            b"STARTTLS",
            b"AUTHENTICATE",
            b"ID",
            b"NOOP",
            b"LOGOUT",
            b"ENABLE",
        ]
        .iter()
        .any(|c| w.eq_ignore_ascii_case(c))
    });
    if tag_ok && imap {
        Verdict::Yes(Hint::Command(Command::Imap))
    } else {
        Verdict::No
    }
}
