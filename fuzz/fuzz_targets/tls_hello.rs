//! cargo-fuzz entry point of `tls_hello`; the checks are in `fuzz/checks/tls_hello.rs`.
#![no_main]

#[path = "../checks/tls_hello.rs"]
mod tls_hello;

libfuzzer_sys::fuzz_target!(|data: &[u8]| tls_hello::run(data));
