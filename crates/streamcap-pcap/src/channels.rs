//! (temporary stand-in, replaced by the channels module)
#![allow(missing_docs, dead_code)]
#[derive(Clone, Debug, Default)]
pub struct ChannelRequest {
    pub rx: Option<u32>,
    pub tx: Option<u32>,
    pub other: Option<u32>,
    pub combined: Option<u32>,
}
impl ChannelRequest {
    pub fn is_empty(&self) -> bool {
        self.rx.is_none() && self.tx.is_none() && self.other.is_none() && self.combined.is_none()
    }
}
pub fn apply(_dev: &str, _r: &ChannelRequest, _irq: &[(u32, Vec<usize>)]) {}
