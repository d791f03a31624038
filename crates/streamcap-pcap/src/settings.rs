//! (temporary stand-in, replaced by the configuration module)
#![allow(missing_docs, dead_code)]
use crate::channels::ChannelRequest;
use crate::fanout::FanoutSpec;

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Caplen {
    Override(u32),
    Default(u32),
}
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Locality {
    pub batch: usize,
    pub timeout_ms: u64,
}
pub struct DeviceSettings {
    pub interface: String,
    pub group: Option<u16>,
    pub fanout: FanoutSpec,
    pub caplen: Option<Caplen>,
    pub locality: Option<Locality>,
    pub channels: ChannelRequest,
    pub irq: Vec<(u32, Vec<usize>)>,
}
pub struct Settings {
    group: Option<u16>,
    fanout: FanoutSpec,
    caplen: Option<u32>,
    locality: Option<Locality>,
}
impl Settings {
    pub fn from_env() -> Settings {
        let v = |k: &str| std::env::var(k).ok();
        let locality = v("PCAP_LOCALITY")
            .and_then(|s| s.parse().ok())
            .filter(|&b| b > 0)
            .map(|batch| Locality {
                batch,
                timeout_ms: v("PCAP_LOCALITY_TIMEOUT")
                    .and_then(|s| s.parse().ok())
                    .unwrap_or(100),
            });
        Settings {
            group: v("PCAP_GROUP").and_then(|s| s.parse().ok()),
            fanout: v("PCAP_FANOUT")
                .and_then(|s| FanoutSpec::parse(&s).ok())
                .unwrap_or_default(),
            caplen: v("PCAP_CAPLEN").and_then(|s| s.parse().ok()),
            locality,
        }
    }
    pub fn device(&self, name: &str) -> DeviceSettings {
        DeviceSettings {
            interface: name.split(':').next().unwrap_or(name).to_string(),
            group: self.group,
            fanout: self.fanout,
            caplen: self.caplen.map(Caplen::Override),
            locality: self.locality,
            channels: ChannelRequest::default(),
            irq: vec![],
        }
    }
    pub fn locality_for_offline(&self) -> Option<Locality> {
        self.locality
    }
    pub fn locality_anywhere(&self) -> bool {
        self.locality.is_some()
    }
}
