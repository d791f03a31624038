//! cargo-fuzz entry point of `nids_match`; the checks are in `fuzz/checks/nids_match.rs`.
#![no_main]

#[path = "../checks/nids_match.rs"]
mod nids_match;

libfuzzer_sys::fuzz_target!(|data: &[u8]| nids_match::run(data));
