//! cargo-fuzz entry point of `pcap_config`; the checks are in `fuzz/checks/pcap_config.rs`.
#![no_main]

#[path = "../checks/pcap_config.rs"]
mod pcap_config;

libfuzzer_sys::fuzz_target!(|data: &[u8]| pcap_config::run(data));
