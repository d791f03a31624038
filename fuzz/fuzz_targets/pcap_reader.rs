//! cargo-fuzz entry point of `pcap_reader`; the checks are in `fuzz/checks/pcap_reader.rs`.
#![no_main]

#[path = "../checks/mod.rs"]
mod checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| checks::pcap_reader::run(data));
