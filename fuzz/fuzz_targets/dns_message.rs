//! cargo-fuzz entry point of `dns_message`; the checks are in `fuzz/checks/dns_message.rs`.
#![no_main]

#[path = "../checks/dns_message.rs"]
mod dns_message;

libfuzzer_sys::fuzz_target!(|data: &[u8]| dns_message::run(data));
