//! TLS hello parsing and the record walk (`streamcap-apps`). Input: a
//! selector byte, then bytes. Selector 0 or 1: the bytes as a ClientHello
//! or ServerHello body; other values: the bytes as a direction's stream,
//! walked whole and in pieces of `selector` bytes. Checks: no panic; the
//! names of any parsed version and cipher; a parsed ClientHello's lists
//! hold no more than the body could; the walk gives the same hello,
//! verdicts and byte count whatever the pieces, and stops within its limit.
//!
//! Not in `checks/mod.rs` (see `rules.rs`); the stored inputs run through
//! `crates/streamcap-apps/tests/fuzz_regressions_classify.rs`.
use streamcap_apps::classify::tls::{cipher_name, parse_hello, version_name, Hello, TlsWalk};
use streamcap_apps::classify::TLS_WALK_LIMIT;

fn walk(data: &[u8], step: usize) -> TlsWalk {
    let mut w = TlsWalk::new();
    for c in data.chunks(step.max(1)) {
        w.feed(c);
    }
    w
}

/// Runs the checks on one input (panics on a violation).
pub fn run(data: &[u8]) {
    let Some((&sel, body)) = data.split_first() else {
        return;
    };
    match sel {
        0 | 1 => match parse_hello(sel + 1, body) {
            Some(Hello::Client(c)) => {
                assert_eq!(sel, 0);
                assert!(c.ciphers.len() * 2 <= body.len());
                assert!(c.alpn.len() <= body.len());
                let _ = version_name(c.version);
                for s in &c.ciphers {
                    let _ = cipher_name(*s);
                }
            }
            Some(Hello::Server(s)) => {
                assert_eq!(sel, 1);
                assert!(!version_name(s.version).is_empty());
                assert!(!cipher_name(s.cipher).is_empty());
            }
            None => {}
        },
        step => {
            let whole = walk(body, body.len());
            let cut = walk(body, usize::from(step));
            assert_eq!(whole.hello(), cut.hello());
            assert_eq!(whole.is_hello(), cut.is_hello());
            assert_eq!(whole.is_midstream_tls(), cut.is_midstream_tls());
            assert_eq!(whole.encrypted(), cut.encrypted());
            assert_eq!(whole.is_done(), cut.is_done());
            assert!(whole.walked() <= TLS_WALK_LIMIT);
            if !whole.is_done() {
                assert_eq!(whole.walked(), body.len() as u64);
            }
        }
    }
}
