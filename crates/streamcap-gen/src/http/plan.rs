//! The transactions of one HTTP connection: methods, targets, header
//! fields, bodies and their framing, 1xx responses, pipelined runs and
//! unanswered requests.

use crate::prng::SplitMix64;

use super::message::text_entity;
use super::Framing;

const UAS: &[&str] = &[
    "Mozilla/5.0 (X11; Linux x86_64; rv:125.0) Gecko/20100101 Firefox/125.0",
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36",
    "Mozilla/5.0 (Macintosh; Intel Mac OS X 14_4) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.4 Safari/605.1.15",
    "curl/8.5.0",
    "Wget/1.21.3",
    "python-requests/2.31.0",
    "Debian APT-HTTP/1.3 (2.7.14)",
];

const HOSTS: &[&str] = &[
    "www.example.com",
    "api.example.net",
    "cdn.example.org",
    "intranet.campus.example.edu",
    "files.example.org",
    "198.51.100.80",
];

const PATHS: &[&str] = &[
    "/",
    "/index.html",
    "/news/2024/05/campus-network.html",
    "/api/v2/items?page=3&limit=20",
    "/api/v1/session",
    "/static/js/app.4f3a2b.js",
    "/static/css/site.css",
    "/images/photo-123.jpg",
    "/search?q=network+capture&lang=en",
    "/download/file-12.bin",
    "/favicon.ico",
    "/robots.txt",
];

/// A 1xx response: code, reason, header fields.
pub(super) type Info = (u16, &'static str, Vec<(String, String)>);

/// One planned transaction.
pub(super) struct Tx {
    pub method: &'static str,
    pub uri: String,
    pub fields: Vec<(String, String)>,
    pub entity: Vec<u8>,
    pub framing: Framing,
    pub expect: bool,
    pub infos: Vec<Info>,
    pub status: u16,
    pub reason: &'static str,
    pub resp_version: &'static str,
    pub resp_fields: Vec<(String, String)>,
    pub resp_entity: Vec<u8>,
    pub resp_framing: Framing,
    pub trailers: Vec<(String, String)>,
    pub respond: bool,
    pub pipelined: bool,
}

fn field(name: &str, value: impl Into<String>, lower: bool) -> (String, String) {
    let n = if lower {
        name.to_ascii_lowercase()
    } else {
        name.to_string()
    };
    (n, value.into())
}

fn entity(rng: &mut SplitMix64, ctype: &str, n: usize) -> Vec<u8> {
    if ctype.starts_with("text") || ctype.contains("json") {
        text_entity(rng, n, ctype.contains("json"))
    } else {
        rng.bytes(n)
    }
}

fn body_size(rng: &mut SplitMix64) -> usize {
    match rng.below(100) {
        0..=2 => 0,
        3..=52 => rng.range(20, 2000) as usize,
        53..=87 => rng.range(2000, 30_000) as usize,
        _ => rng.range(30_000, 200_000) as usize,
    }
}

/// Plans the transactions of a connection to `server_port`; returns them
/// with the request version (`1.0` or `1.1`).
pub(super) fn transactions(server_port: u16, rng: &mut SplitMix64) -> (Vec<Tx>, &'static str) {
    let v10 = rng.chance(1, 10);
    let n = if v10 {
        1
    } else {
        1 + (rng.below(6) * rng.below(6) / 3) as usize
    };
    let port = server_port;
    let host_name = *rng.pick(HOSTS);
    let host = if port == 80 {
        host_name.to_string()
    } else {
        format!("{host_name}:{port}")
    };
    let send_host = !v10 || rng.chance(1, 2);
    let ua = (!rng.chance(1, 20)).then(|| *rng.pick(UAS));
    let lower = rng.chance(1, 10);
    let req_version = if v10 { "1.0" } else { "1.1" };
    // Pipelined batches: runs of GET/HEAD requests sent back to back.
    let pipeline = !v10 && n >= 2 && rng.chance(1, 3);
    let unanswered = if rng.chance(1, 8) {
        rng.range(1, 2) as usize
    } else {
        0
    }
    .min(n);
    let close_last = (v10 && rng.chance(1, 2)) || rng.chance(1, 8);
    let mut txs: Vec<Tx> = Vec::with_capacity(n);
    let mut batch_left = 0usize;
    for i in 0..n {
        let last = i + 1 == n;
        let respond = i + unanswered < n;
        let in_batch = batch_left > 0;
        let start_batch = pipeline && !in_batch && i + 1 < n && rng.chance(2, 3);
        let pipelined = in_batch;
        if start_batch {
            batch_left = rng.range(2, 4).min((n - i) as u64) as usize;
        }
        let batched = in_batch || start_batch;
        batch_left = batch_left.saturating_sub(1);
        let method = if batched {
            *rng.pick(&["GET", "GET", "GET", "HEAD"])
        } else {
            match rng.below(100) {
                0..=59 => "GET",
                60..=67 => "HEAD",
                68..=83 => "POST",
                84..=89 => "PUT",
                90..=93 => "OPTIONS",
                94..=96 => "DELETE",
                _ => "PATCH",
            }
        };
        let mut uri = match method {
            "POST" | "PUT" | "PATCH" => format!("/api/v1/items/{}", rng.below(10_000)),
            "OPTIONS" if rng.chance(1, 3) => "*".to_string(),
            _ => rng.pick(PATHS).to_string(),
        };
        if rng.chance(1, 25) && uri.starts_with('/') {
            uri = format!("http://{host}{uri}");
        }
        let mut fields = Vec::new();
        if send_host {
            fields.push(field("Host", host.clone(), lower));
        }
        if let Some(u) = ua {
            fields.push(field("User-Agent", u, lower));
        }
        fields.push(field("Accept", "*/*", lower));
        if rng.chance(2, 5) {
            fields.push(field(
                "Referer",
                format!("http://{host}{}", rng.pick(PATHS)),
                lower,
            ));
        }
        let conditional = method == "GET" && rng.chance(1, 5);
        if conditional {
            fields.push(field(
                "If-None-Match",
                format!("\"{:012x}\"", rng.next_u64() >> 16),
                lower,
            ));
        }
        let has_body = matches!(method, "POST" | "PUT" | "PATCH");
        let (req_entity, framing, expect) = if has_body {
            let n = if rng.chance(1, 20) {
                0
            } else {
                rng.range(10, 40_000) as usize
            };
            let ctype = *rng.pick(&[
                "application/json",
                "application/x-www-form-urlencoded",
                "application/octet-stream",
            ]);
            let e = entity(rng, ctype, n);
            let framing = if !v10 && rng.chance(1, 4) {
                Framing::Chunked
            } else {
                Framing::Length
            };
            fields.push(field("Content-Type", ctype, lower));
            match framing {
                Framing::Chunked => fields.push(field("Transfer-Encoding", "chunked", lower)),
                _ => fields.push(field("Content-Length", e.len().to_string(), lower)),
            }
            let expect = !v10 && !e.is_empty() && rng.chance(1, 3);
            if expect {
                fields.push(field("Expect", "100-continue", lower));
            }
            (e, framing, expect)
        } else {
            (Vec::new(), Framing::None, false)
        };
        if last && close_last && !v10 {
            fields.push(field("Connection", "close", lower));
        } else if !v10 && rng.chance(1, 3) {
            fields.push(field("Connection", "keep-alive", lower));
        }

        // The response.
        let (status, reason) = match method {
            "GET" if conditional && rng.chance(3, 4) => (304, "Not Modified"),
            "GET" | "HEAD" => match rng.below(100) {
                0..=79 => (200, "OK"),
                80..=86 => (404, "Not Found"),
                87..=89 => (301, "Moved Permanently"),
                90..=93 => (302, "Found"),
                94..=96 => (204, "No Content"),
                _ => (500, "Internal Server Error"),
            },
            "POST" => *rng.pick(&[
                (201, "Created"),
                (200, "OK"),
                (204, "No Content"),
                (303, "See Other"),
                (400, "Bad Request"),
            ]),
            "OPTIONS" => *rng.pick(&[(204, "No Content"), (200, "OK")]),
            _ => *rng.pick(&[(200, "OK"), (204, "No Content"), (201, "Created")]),
        };
        let resp_version = if v10 && rng.chance(1, 2) {
            "1.0"
        } else {
            "1.1"
        };
        let bodyless = method == "HEAD" || status == 204 || status == 304;
        let mut infos = Vec::new();
        if !v10 {
            if expect {
                infos.push((100, "Continue", Vec::new()));
            }
            if has_body && rng.chance(1, 12) {
                infos.push((102, "Processing", Vec::new()));
            }
            if method == "GET" && rng.chance(1, 15) {
                infos.push((
                    103,
                    "Early Hints",
                    vec![field(
                        "Link",
                        "</static/css/site.css>; rel=preload; as=style",
                        false,
                    )],
                ));
            }
        }
        let ctype = *rng.pick(&[
            "text/html; charset=utf-8",
            "application/json",
            "text/css",
            "application/octet-stream",
        ]);
        let size = if status == 301 || status == 302 || status == 303 {
            rng.range(0, 200) as usize
        } else {
            body_size(rng)
        };
        let rep = entity(rng, ctype, size);
        let mut rf = vec![
            (
                "Server".to_string(),
                rng.pick(&[
                    "nginx/1.24.0",
                    "Apache/2.4.58 (Ubuntu)",
                    "Microsoft-IIS/10.0",
                    "lighttpd/1.4.73",
                ])
                .to_string(),
            ),
            (
                "Date".to_string(),
                crate::campus::http_date(1_714_564_800 + rng.below(86_400)),
            ),
        ];
        if status != 204 && status != 304 {
            rf.push(("Content-Type".into(), ctype.into()));
        }
        if (301..=303).contains(&status) {
            rf.push(("Location".into(), format!("http://{host}/")));
        }
        let mut trailers = Vec::new();
        let resp_framing = if bodyless {
            match (method, status) {
                ("HEAD", _) if !v10 && rng.chance(1, 5) => {
                    rf.push(("Transfer-Encoding".into(), "chunked".into()));
                }
                ("HEAD", _) => rf.push(("Content-Length".into(), rep.len().to_string())),
                (_, 304) if rng.chance(1, 3) => {
                    rf.push(("Content-Length".into(), rep.len().to_string()))
                }
                _ => {}
            }
            if status == 304 {
                rf.push(("ETag".into(), format!("\"{:012x}\"", rng.next_u64() >> 16)));
            }
            Framing::None
        } else if last && close_last && respond {
            rf.push(("Connection".into(), "close".into()));
            Framing::Close
        } else if !v10 && rng.chance(3, 10) {
            rf.push(("Transfer-Encoding".into(), "chunked".into()));
            if rng.chance(1, 4) {
                rf.push(("Trailer".into(), "X-Checksum".into()));
                trailers.push(("X-Checksum".to_string(), format!("{:016x}", rng.next_u64())));
            }
            Framing::Chunked
        } else {
            rf.push(("Content-Length".into(), rep.len().to_string()));
            if v10 {
                rf.push(("Connection".into(), "close".into()));
            }
            Framing::Length
        };
        if lower {
            for f in &mut rf {
                f.0 = f.0.to_ascii_lowercase();
            }
        }
        txs.push(Tx {
            method,
            uri,
            fields,
            entity: req_entity,
            framing,
            expect,
            infos,
            status,
            reason,
            resp_version,
            resp_fields: rf,
            resp_entity: if bodyless { Vec::new() } else { rep },
            resp_framing,
            trailers,
            respond,
            pipelined,
        });
    }
    // A request sent while the one before it is still unanswered is
    // pipelined, batch or not.
    for i in 1..txs.len() {
        if !txs[i - 1].respond {
            txs[i].pipelined = true;
        }
    }
    (txs, req_version)
}
