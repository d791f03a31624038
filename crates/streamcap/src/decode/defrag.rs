//! IP fragment reassembly (stub replaced by the real defragmenter).
#![allow(missing_docs)]
use crate::reassembly::policy::OverlapPolicy;
use crate::time::Timestamp;
use std::net::IpAddr;

#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct FragKey {
    pub src: IpAddr,
    pub dst: IpAddr,
    pub id: u32,
    pub proto: u8,
    pub vlan: u32,
}
#[derive(Clone, Copy, Debug)]
pub struct Fragment {
    pub offset: u32,
    pub more: bool,
}
#[derive(Clone, Debug)]
pub struct DefragConfig {
    pub max_fragments_per_datagram: usize,
    pub max_datagrams: usize,
    pub max_datagram_size: usize,
    pub timeout_ns: u64,
    pub policy: OverlapPolicy,
    pub max_bytes: usize,
}
impl Default for DefragConfig {
    fn default() -> Self {
        DefragConfig {
            max_fragments_per_datagram: 64,
            max_datagrams: 4096,
            max_datagram_size: 65535,
            timeout_ns: 30_000_000_000,
            policy: OverlapPolicy::Bsd,
            max_bytes: 16 << 20,
        }
    }
}
#[derive(Default, Clone, Debug)]
pub struct DefragStats {
    pub fragments: u64,
    pub reassembled: u64,
    pub timed_out: u64,
    pub overlaps: u64,
    pub overlap_conflicts: u64,
    pub too_many_fragments: u64,
    pub too_many_datagrams: u64,
    pub too_large: u64,
    pub truncated: u64,
    pub bad: u64,
    pub memory_full: u64,
    pub fragments_dropped: u64,
}
pub enum DefragOutcome<'a> {
    Pending,
    Complete(&'a [u8]),
}
pub struct Defragmenter {
    stats: DefragStats,
}
impl Defragmenter {
    pub fn new(_cfg: DefragConfig) -> Self {
        Defragmenter {
            stats: DefragStats::default(),
        }
    }
    pub fn process(
        &mut self,
        _now: Timestamp,
        _key: FragKey,
        _frag: Fragment,
        _data: &[u8],
        _wire_len: u32,
    ) -> DefragOutcome<'_> {
        self.stats.fragments += 1;
        DefragOutcome::Pending
    }
    pub fn expire(&mut self, _now: Timestamp) {}
    pub fn stats(&self) -> &DefragStats {
        &self.stats
    }
}
