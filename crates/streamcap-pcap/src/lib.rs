//! `libstreamcap_pcap.so`: libpcap for programs that will never be
//! rewritten, after `pcap-fanout.txt` (kernel fan-out, a configuration
//! file, channels and IRQ affinity) and `locality-buffering.txt`
//! (packets reordered by port inside the library).
//!
//! A program loads it with `LD_PRELOAD` (or links it before `-lpcap`).
//! It defines a few libpcap functions itself and hands each call on to the
//! system's libpcap (found with `dlsym(RTLD_NEXT, …)`), so offline files,
//! filters, `pcap_dump`, `pcap_stats` and everything it does not define
//! behave exactly as before. What it adds:
//!
//! - [`fanout`]: `pcap_fanout(p, group, mode)`, and the group, mode and
//!   snap length a live handle gets from the environment and the
//!   configuration file when it is activated;
//! - [`config`] and [`settings`]: the configuration file's grammar
//!   (`key[@group] = value[,value…]`) and the environment variables of
//!   the paper's Table I, resolved per device (virtual devices included);
//! - [`channels`]: `pcap_set_channels`, `pcap_get_channels`,
//!   `pcap_channel_setaffinity` and `pcap_channel_getaffinity` (ethtool's
//!   channel interface and the IRQ affinity of each channel);
//! - [`locality`]: locality buffering inside `pcap_loop`,
//!   `pcap_dispatch`, `pcap_next` and `pcap_next_ex` (`PCAP_LOCALITY`).
//!
//! `include/streamcap_pcap.h` declares the added calls;
//! `streamcap-pcap.pc` (written beside the library) builds against it.

#![warn(missing_docs)]

pub mod channels;
pub mod config;
pub mod fanout;
pub mod locality;
mod preload;
pub mod settings;
