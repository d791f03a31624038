//! cargo-fuzz entry point of `http_stream`; the checks are in `fuzz/checks/http_stream.rs`.
#![no_main]

#[path = "../checks/http_stream.rs"]
mod http_stream;

libfuzzer_sys::fuzz_target!(|data: &[u8]| http_stream::run(data));
