//! Message heads: the request line or status line and the header fields,
//! parsed with `httparse` once the blank line that ends them is in view,
//! and the few fields the log keeps, taken as Zeek's `http.log` takes
//! them (`base/protocols/http/main.zeek`).
//!
//! Also: whether bytes look like the start of a request or a response (to
//! find HTTP by content, and to resynchronise after a gap or garbage), and
//! Zeek's unescaping of the request URI.

use base64::Engine as _;

/// The request methods recognised at the start of a message: Zeek's
/// `HTTP::http_methods` and a few more that real traffic carries.
pub const METHODS: [&str; 27] = [
    "GET",
    "POST",
    "HEAD",
    "OPTIONS",
    "PUT",
    "DELETE",
    "TRACE",
    "CONNECT",
    "PATCH",
    "PROPFIND",
    "PROPPATCH",
    "MKCOL",
    "COPY",
    "MOVE",
    "LOCK",
    "UNLOCK",
    "POLL",
    "REPORT",
    "SUBSCRIBE",
    "UNSUBSCRIBE",
    "NOTIFY",
    "BMOVE",
    "SEARCH",
    "MKACTIVITY",
    "CHECKOUT",
    "MERGE",
    "ACL",
];

/// Zeek's `HTTP::proxy_headers`: request headers that tell a request went
/// through a proxy (logged in `proxied` as `NAME -> value`).
pub const PROXY_HEADERS: [&str; 7] = [
    "FORWARDED",
    "X-FORWARDED-FOR",
    "X-FORWARDED-FROM",
    "CLIENT-IP",
    "VIA",
    "XROXY-CONNECTION",
    "PROXY-CONNECTION",
];

/// The longest first line looked at when deciding whether bytes start a
/// message (longer lines are not taken for a request or status line).
pub const MAX_START_LINE: usize = 16 << 10;

/// Whether bytes look like the start of a message.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Looks {
    /// Yes.
    Yes,
    /// No.
    No,
    /// Too few bytes to tell (the first line is not complete).
    NeedMore,
}

/// Whether `b` starts with a request line: a known method, a space, and a
/// line that ends with `HTTP/1.x` (CR LF or a bare LF).
pub fn looks_like_request(b: &[u8]) -> Looks {
    let mut prefix_of_one = false;
    let mut method = None;
    for m in METHODS {
        let m = m.as_bytes();
        if b.len() > m.len() {
            if b.starts_with(m) && b[m.len()] == b' ' {
                method = Some(m.len());
                break;
            }
        } else if m.starts_with(b) || (b.len() == m.len() && b == m) {
            prefix_of_one = true;
        }
    }
    let Some(mlen) = method else {
        return if prefix_of_one {
            Looks::NeedMore
        } else {
            Looks::No
        };
    };
    let Some(nl) = memchr::memchr(b'\n', b) else {
        return if b.len() > MAX_START_LINE {
            Looks::No
        } else {
            Looks::NeedMore
        };
    };
    if nl > MAX_START_LINE {
        return Looks::No;
    }
    let line = trim_cr(&b[mlen..nl]);
    let ok = line.len() >= 10
        && line[line.len() - 8..].starts_with(b"HTTP/1.")
        && line[line.len() - 1].is_ascii_digit()
        && line[line.len() - 9] == b' ';
    if ok {
        Looks::Yes
    } else {
        Looks::No
    }
}

/// Whether `b` starts with a status line: `HTTP/1.x` and a three-digit
/// code.
pub fn looks_like_response(b: &[u8]) -> Looks {
    const P: &[u8] = b"HTTP/1.";
    let n = b.len().min(P.len());
    if b[..n] != P[..n] {
        return Looks::No;
    }
    if b.len() < 12 {
        // "HTTP/1.x NNN"
        let ok = b.iter().enumerate().skip(P.len()).all(|(i, &c)| match i {
            7 => c.is_ascii_digit(),
            8 => c == b' ',
            _ => c.is_ascii_digit(),
        });
        return if ok { Looks::NeedMore } else { Looks::No };
    }
    if b[7].is_ascii_digit() && b[8] == b' ' && b[9..12].iter().all(u8::is_ascii_digit) {
        Looks::Yes
    } else {
        Looks::No
    }
}

fn trim_cr(l: &[u8]) -> &[u8] {
    l.strip_suffix(b"\r").unwrap_or(l)
}

/// Where the head that starts `b` ends: the index just past the first
/// empty line (CR LF CR LF, LF LF, or mixed), searched from `*from` (the
/// position of a line feed, or 0); `*from` is moved on so that the next
/// call with more bytes does not search the same bytes again.
pub fn head_end(b: &[u8], from: &mut usize) -> Option<usize> {
    let mut i = (*from).min(b.len());
    while let Some(p) = memchr::memchr(b'\n', &b[i..]) {
        let nl = i + p;
        match (b.get(nl + 1), b.get(nl + 2)) {
            (Some(b'\n'), _) => return Some(nl + 2),
            (Some(b'\r'), Some(b'\n')) => return Some(nl + 3),
            (None, _) | (Some(b'\r'), None) => {
                *from = nl;
                return None;
            }
            _ => i = nl + 1,
        }
    }
    *from = b.len();
    None
}

/// How a message's body is delimited.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Framing {
    /// No body.
    None,
    /// `Content-Length` bytes.
    Length(u64),
    /// `Transfer-Encoding: chunked`.
    Chunked,
    /// Until the connection closes (responses only).
    UntilClose,
}

/// The fields of a request head that the log and the framing need.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RequestHead {
    /// The method, as sent.
    pub method: String,
    /// The request target as sent (text: see [`zeek_text`]).
    pub raw_uri: String,
    /// The request target unescaped as Zeek logs it ([`unescape_uri`]).
    pub uri: String,
    /// `1.0` or `1.1`.
    pub version: String,
    /// `Host`.
    pub host: Option<String>,
    /// `Referer`.
    pub referrer: Option<String>,
    /// `User-Agent`.
    pub user_agent: Option<String>,
    /// `Origin`.
    pub origin: Option<String>,
    /// Basic authentication's user name (or Zeek's `<problem-decoding>`
    /// text).
    pub username: Option<String>,
    /// Basic authentication's password (kept only when asked for:
    /// [`super::HttpConfig::capture_password`]).
    pub password: Option<String>,
    /// Proxy headers, `NAME -> value`, in order, without repeats.
    pub proxied: Vec<String>,
    /// `Content-Length`, if valid.
    pub content_length: Option<u64>,
    /// `Transfer-Encoding` ends in `chunked`.
    pub chunked: bool,
    /// An `Upgrade` header.
    pub upgrade: bool,
}

impl RequestHead {
    /// Whether the method is `CONNECT`.
    pub fn is_connect(&self) -> bool {
        self.method.eq_ignore_ascii_case("CONNECT")
    }
    /// Whether the method is `HEAD`.
    pub fn is_head(&self) -> bool {
        self.method.eq_ignore_ascii_case("HEAD")
    }
    /// The body's framing (RFC 9112 §6.3: chunked wins over a length; no
    /// length, no body).
    pub fn framing(&self) -> Framing {
        if self.chunked {
            Framing::Chunked
        } else {
            match self.content_length {
                Some(0) | None => Framing::None,
                Some(n) => Framing::Length(n),
            }
        }
    }
}

/// The fields of a response head that the log and the framing need.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ResponseHead {
    /// `1.0` or `1.1`.
    pub version: String,
    /// Status code.
    pub code: u16,
    /// The reason phrase (`None` when the status line has none: Zeek then
    /// logs `<empty>`).
    pub reason: Option<String>,
    /// `Content-Length`, if valid.
    pub content_length: Option<u64>,
    /// `Transfer-Encoding` ends in `chunked`.
    pub chunked: bool,
}

/// The outcome of parsing a head.
#[derive(Debug)]
pub enum Parsed<T> {
    /// A whole head of this many bytes.
    Complete(T, usize),
    /// Not complete yet.
    Partial,
    /// Not a head.
    Invalid,
}

/// Options of the head parsers.
#[derive(Copy, Clone, Debug, Default)]
pub struct HeadOptions {
    /// Keep Basic authentication's password.
    pub capture_password: bool,
}

const MAX_HEADERS: usize = 256;

fn config() -> httparse::ParserConfig {
    let mut c = httparse::ParserConfig::default();
    c.allow_spaces_after_header_name_in_responses(true)
        .allow_multiple_spaces_in_request_line_delimiters(true)
        .allow_multiple_spaces_in_response_status_delimiters(true)
        .allow_obsolete_multiline_headers_in_responses(true)
        .ignore_invalid_headers_in_responses(true)
        .ignore_invalid_headers_in_requests(true);
    c
}

/// Parses the request head at the start of `b` (which must hold the whole
/// head: see [`head_end`]).
pub fn parse_request(b: &[u8], opts: HeadOptions) -> Parsed<RequestHead> {
    let mut headers = vec![httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut req = httparse::Request::new(&mut headers);
    let (len, method, path, version, fields) = match config().parse_request(&mut req, b) {
        Ok(httparse::Status::Complete(n)) => {
            let (Some(m), Some(p), Some(v)) = (req.method, req.path, req.version) else {
                return Parsed::Invalid;
            };
            (n, m.as_bytes(), p.as_bytes(), v, &*req.headers)
        }
        Ok(httparse::Status::Partial) => return Parsed::Partial,
        Err(_) => {
            // A request line httparse refuses (a target with spaces, say):
            // taken as Zeek takes it, the fields parsed by httparse.
            let mut fallback = vec![httparse::EMPTY_HEADER; MAX_HEADERS];
            return match lenient_request(b, &mut fallback) {
                Some((n, m, p, v, f)) => Parsed::Complete(request_head(m, p, v, f, opts), n),
                None => Parsed::Invalid,
            };
        }
    };
    Parsed::Complete(request_head(method, path, version, fields, opts), len)
}

type RequestParts<'h, 'b> = (usize, &'b [u8], &'b [u8], u8, &'h [httparse::Header<'b>]);

/// A request line as Zeek reads it: the method (a token), blanks, the
/// target up to the next blank, and `HTTP/1.x` ending the line; then the
/// header fields.
fn lenient_request<'h, 'b>(
    b: &'b [u8],
    headers: &'h mut [httparse::Header<'b>],
) -> Option<RequestParts<'h, 'b>> {
    let nl = memchr::memchr(b'\n', b)?;
    let line = trim_cr(&b[..nl]);
    let sp = line.iter().position(|&c| c == b' ')?;
    let method = &line[..sp];
    if method.is_empty() || !method.iter().all(|c| c.is_ascii_graphic()) {
        return None;
    }
    let rest = &line[sp..];
    let start = rest.iter().position(|&c| c != b' ')?;
    let rest = &rest[start..];
    let end = rest.iter().position(|&c| c == b' ' || c == b'\t')?;
    let target = &rest[..end];
    let v = line.len().checked_sub(8)?;
    if !line[v..].starts_with(b"HTTP/1.") || v < sp + start + end {
        return None;
    }
    let version = line[line.len() - 1].checked_sub(b'0').filter(|d| *d <= 9)?;
    match httparse::parse_headers(&b[nl + 1..], headers) {
        Ok(httparse::Status::Complete((n, h))) => Some((nl + 1 + n, method, target, version, h)),
        _ => None,
    }
}

fn request_head(
    method: &[u8],
    path: &[u8],
    version: u8,
    fields: &[httparse::Header<'_>],
    opts: HeadOptions,
) -> RequestHead {
    let mut h = RequestHead {
        method: zeek_text(method),
        raw_uri: zeek_text(path),
        uri: zeek_text(&unescape_uri(path)),
        version: format!("1.{version}"),
        ..RequestHead::default()
    };
    for f in fields {
        let name = f.name.to_ascii_uppercase();
        let value = f.value;
        match name.as_str() {
            "REFERER" => h.referrer = Some(zeek_text(value)),
            "HOST" => h.host = Some(zeek_text(value)),
            "ORIGIN" => h.origin = Some(zeek_text(value)),
            "USER-AGENT" => h.user_agent = Some(zeek_text(value)),
            "AUTHORIZATION" | "PROXY-AUTHORIZATION" => basic_auth(&mut h, value, opts),
            "CONTENT-LENGTH" => h.content_length = content_length(value),
            "TRANSFER-ENCODING" => h.chunked = is_chunked(value),
            "UPGRADE" => h.upgrade = true,
            n if PROXY_HEADERS.contains(&n) => {
                let p = format!("{n} -> {}", zeek_text(value));
                if !h.proxied.contains(&p) {
                    h.proxied.push(p);
                }
            }
            _ => {}
        }
    }
    h
}

/// Zeek's Basic authentication: the user name before the first colon of
/// the decoded credentials (the password only if captured); credentials
/// without a colon give `<problem-decoding> (VALUE)`.
fn basic_auth(h: &mut RequestHead, value: &[u8], opts: HeadOptions) {
    if value.len() < 6 || !value[..6].eq_ignore_ascii_case(b"basic ") {
        return;
    }
    let rest = &value[6..];
    let start = rest
        .iter()
        .position(|&c| c != b' ' && c != b'\t')
        .unwrap_or(rest.len());
    let decoded = decode_base64_lenient(&rest[start..]);
    match memchr::memchr(b':', &decoded) {
        Some(c) => {
            h.username = Some(zeek_text(&decoded[..c]));
            if opts.capture_password {
                h.password = Some(zeek_text(&decoded[c + 1..]));
            }
        }
        None => {
            h.username = Some(format!("<problem-decoding> ({})", zeek_text(value)));
            if opts.capture_password {
                h.password = Some(zeek_text(&decoded));
            }
        }
    }
}

/// Base64 as Zeek decodes it: characters outside the alphabet are
/// skipped, decoding stops at padding, a lone trailing character is
/// dropped.
fn decode_base64_lenient(s: &[u8]) -> Vec<u8> {
    use base64::engine::{general_purpose::GeneralPurpose, GeneralPurposeConfig};
    const LENIENT: GeneralPurpose = GeneralPurpose::new(
        &base64::alphabet::STANDARD,
        GeneralPurposeConfig::new()
            .with_decode_allow_trailing_bits(true)
            .with_decode_padding_mode(base64::engine::DecodePaddingMode::RequireNone),
    );
    let mut clean: Vec<u8> = s
        .iter()
        .copied()
        .take_while(|&c| c != b'=')
        .filter(|c| c.is_ascii_alphanumeric() || *c == b'+' || *c == b'/')
        .collect();
    if clean.len() % 4 == 1 {
        clean.pop();
    }
    LENIENT.decode(&clean).unwrap_or_default()
}

/// Parses the response head at the start of `b` (which must hold the
/// whole head).
pub fn parse_response(b: &[u8]) -> Parsed<ResponseHead> {
    let mut headers = vec![httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut resp = httparse::Response::new(&mut headers);
    let len = match config().parse_response(&mut resp, b) {
        Ok(httparse::Status::Complete(n)) => n,
        Ok(httparse::Status::Partial) => return Parsed::Partial,
        Err(_) => return Parsed::Invalid,
    };
    let (Some(version), Some(code)) = (resp.version, resp.code) else {
        return Parsed::Invalid;
    };
    let line_end = memchr::memchr(b'\n', b).unwrap_or(b.len());
    let mut h = ResponseHead {
        version: format!("1.{version}"),
        code,
        reason: reason_phrase(trim_cr(&b[..line_end])),
        ..ResponseHead::default()
    };
    for f in resp.headers.iter() {
        if f.name.eq_ignore_ascii_case("content-length") {
            h.content_length = content_length(f.value);
        } else if f.name.eq_ignore_ascii_case("transfer-encoding") {
            h.chunked = is_chunked(f.value);
        }
    }
    Parsed::Complete(h, len)
}

/// The reason phrase of a status line as Zeek takes it: after the code
/// and the blanks that follow it; `None` if the line ends at the code.
fn reason_phrase(line: &[u8]) -> Option<String> {
    let blank = |c: &u8| *c == b' ' || *c == b'\t';
    let v = line.iter().position(blank)?;
    let code = v + line[v..].iter().position(|c| !blank(c))?;
    let after = code + 3;
    if after > line.len() {
        return None;
    }
    let sep = after + line[after..].iter().position(blank)?;
    let start = sep
        + line[sep..]
            .iter()
            .position(|c| !blank(c))
            .unwrap_or(line.len() - sep);
    Some(zeek_text(&line[start..]))
}

fn content_length(v: &[u8]) -> Option<u64> {
    let t = v.trim_ascii();
    if t.is_empty() || t.len() > 19 || !t.iter().all(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(t).ok()?.parse().ok()
}

fn is_chunked(v: &[u8]) -> bool {
    v.split(|&c| c == b',')
        .next_back()
        .is_some_and(|t| t.trim_ascii().eq_ignore_ascii_case(b"chunked"))
}

/// Bytes as log text the way Zeek's JSON writer renders a string: valid
/// UTF-8 as is, any other byte as the four characters `\xNN`.
pub fn zeek_text(b: &[u8]) -> String {
    match std::str::from_utf8(b) {
        Ok(s) => s.to_owned(),
        Err(_) => {
            let mut out = String::with_capacity(b.len() + 8);
            for chunk in b.utf8_chunks() {
                out.push_str(chunk.valid());
                for &x in chunk.invalid() {
                    out.push_str(&format!("\\x{x:02x}"));
                }
            }
            out
        }
    }
}

fn hex(c: u8) -> Option<u8> {
    (c as char).to_digit(16).map(|d| d as u8)
}

/// Zeek's `unescape_URI`: `%XX` decoded, `%uXXXX` decoded to its two
/// bytes, a doubled `%` counted once, any other `%` kept as is.
pub fn unescape_uri(b: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] != b'%' {
            out.push(b[i]);
            i += 1;
            continue;
        }
        i += 1;
        if i == b.len() {
            out.push(b'%');
            break;
        }
        if i + 1 == b.len() {
            out.push(b'%');
            out.push(b[i]);
            break;
        }
        if b[i] == b'%' {
            // "%%": the first is ignored, the second starts an escape.
            continue;
        }
        if let (Some(h), Some(l)) = (hex(b[i]), hex(b[i + 1])) {
            out.push(h << 4 | l);
            i += 2;
            continue;
        }
        if b.len() - i >= 5 && b[i] == b'u' {
            let d: Option<Vec<u8>> = b[i + 1..i + 5].iter().map(|&c| hex(c)).collect();
            if let Some(d) = d {
                out.push(d[0] << 4 | d[1]);
                out.push(d[2] << 4 | d[3]);
                i += 5;
                continue;
            }
        }
        out.push(b'%');
        out.push(b[i]);
        i += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_lines_are_recognised() {
        assert_eq!(looks_like_request(b"GET / HTTP/1.1\r\n"), Looks::Yes);
        assert_eq!(looks_like_request(b"GET / HTTP/1.0\n"), Looks::Yes);
        assert_eq!(looks_like_request(b"GE"), Looks::NeedMore);
        assert_eq!(looks_like_request(b"GET /index"), Looks::NeedMore);
        assert_eq!(looks_like_request(b"GET / HTTP/2.0\r\n"), Looks::No);
        assert_eq!(looks_like_request(b"GETX / HTTP/1.1\r\n"), Looks::No);
        assert_eq!(looks_like_request(b"\x16\x03\x01"), Looks::No);
        assert_eq!(looks_like_request(b"SSH-2.0-x\r\n"), Looks::No);
        assert_eq!(looks_like_request(b""), Looks::NeedMore);
        assert_eq!(looks_like_response(b"HTTP/1.1 200 OK\r\n"), Looks::Yes);
        assert_eq!(looks_like_response(b"HTTP/1.1 20"), Looks::NeedMore);
        assert_eq!(looks_like_response(b"HTTP/1.1 2x"), Looks::No);
        assert_eq!(looks_like_response(b"HTTP/2 200"), Looks::No);
        assert_eq!(looks_like_response(b"220 smtp"), Looks::No);
    }

    #[test]
    fn head_ends_are_found_incrementally() {
        let h = b"GET / HTTP/1.1\r\nHost: a\r\n\r\nbody";
        let mut from = 0;
        for n in 0..h.len() {
            let got = head_end(&h[..n], &mut from);
            assert_eq!(got, (n >= 27).then_some(27), "at {n}");
            if got.is_some() {
                break;
            }
        }
        let mut from = 0;
        assert_eq!(head_end(b"GET / HTTP/1.0\n\n", &mut from), Some(16));
    }

    #[test]
    fn request_fields() {
        let b = b"GET /a%20b%zz%u0041%%41 HTTP/1.1\r\nHost: h:8080\r\nReferer: r\r\nUser-Agent: ua x\r\nOrigin: o\r\nVia: 1.1 p\r\nX-Forwarded-For: 1.2.3.4\r\nAuthorization: Basic dXNlcjpwYXNz\r\nContent-Length: 5\r\n\r\n";
        let Parsed::Complete(h, n) = parse_request(b, HeadOptions::default()) else {
            panic!()
        };
        assert_eq!(n, b.len());
        assert_eq!(h.method, "GET");
        assert_eq!(h.uri, "/a b%zz\u{0}AA");
        assert_eq!(h.raw_uri, "/a%20b%zz%u0041%%41");
        assert_eq!(h.host.as_deref(), Some("h:8080"));
        assert_eq!(h.referrer.as_deref(), Some("r"));
        assert_eq!(h.user_agent.as_deref(), Some("ua x"));
        assert_eq!(h.origin.as_deref(), Some("o"));
        assert_eq!(h.username.as_deref(), Some("user"));
        assert_eq!(h.password, None);
        assert_eq!(h.proxied, ["VIA -> 1.1 p", "X-FORWARDED-FOR -> 1.2.3.4"]);
        assert_eq!(h.framing(), Framing::Length(5));
        let Parsed::Complete(h, _) = parse_request(
            b"GET / HTTP/1.1\r\nAuthorization: Basic dXNlcjpwYXNz\r\n\r\n",
            HeadOptions {
                capture_password: true,
            },
        ) else {
            panic!()
        };
        assert_eq!(h.password.as_deref(), Some("pass"));
        let Parsed::Complete(h, _) = parse_request(
            b"GET / HTTP/1.1\r\nAuthorization: Basic bm9jb2xvbg==\r\n\r\n",
            HeadOptions::default(),
        ) else {
            panic!()
        };
        assert_eq!(
            h.username.as_deref(),
            Some("<problem-decoding> (Basic bm9jb2xvbg==)")
        );
        assert!(matches!(
            parse_request(b"GET / HTTP/1.1\r\nHost", HeadOptions::default()),
            Parsed::Partial
        ));
        assert!(matches!(
            parse_request(b"G\x01T / HTTP/1.1\r\n\r\n", HeadOptions::default()),
            Parsed::Invalid
        ));
        // A target with spaces: cut at the first, as Zeek and tshark do.
        let Parsed::Complete(h, n) = parse_request(
            b"GET /cgi;cat /etc/passwd| HTTP/1.1\r\nHost: x\r\n\r\n",
            HeadOptions::default(),
        ) else {
            panic!()
        };
        assert_eq!(
            (h.uri.as_str(), h.host.as_deref(), n),
            ("/cgi;cat", Some("x"), 47)
        );
    }

    #[test]
    fn response_fields() {
        let Parsed::Complete(h, _) =
            parse_response(b"HTTP/1.1 404 Not  Found\r\nContent-Length: 3\r\n\r\n")
        else {
            panic!()
        };
        assert_eq!((h.code, h.reason.as_deref()), (404, Some("Not  Found")));
        assert_eq!(h.content_length, Some(3));
        let Parsed::Complete(h, _) =
            parse_response(b"HTTP/1.1 200\r\nTransfer-Encoding: gzip, chunked\r\n\r\n")
        else {
            panic!()
        };
        assert_eq!(h.reason, None);
        assert!(h.chunked);
        let Parsed::Complete(h, _) = parse_response(b"HTTP/1.0 200 \r\n\r\n") else {
            panic!()
        };
        assert_eq!(h.reason.as_deref(), Some(""));
        assert_eq!(h.version, "1.0");
    }

    #[test]
    fn text_escapes_invalid_utf8() {
        assert_eq!(zeek_text(b"a\xffb\xc3\xa9"), "a\\xffb\u{e9}");
    }
}
