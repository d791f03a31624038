//! Packet filters in tcpdump syntax (`tcp port 80 and host 10.0.0.1`).
//!
//! The expression is compiled by libpcap's own compiler, loaded at run time
//! ([`libpcap`]), into a classic BPF program that a small safe interpreter
//! ([`bpf`]) runs on each captured frame. A capture can mix link types
//! (pcapng with several interfaces), so the expression is compiled lazily, once
//! per link type met.
//!
//! ```no_run
//! use streamcap::{Capture, deliver::Callbacks, FileSource, filter::Filter};
//! let mut filter = Filter::new("tcp port 80")?;
//! let mut src = FileSource::open("trace.pcap")?;
//! let report = Capture::builder().build().run_with(&mut src, Callbacks::<()>::new(), &mut filter);
//! if let Some(e) = filter.take_error() { eprintln!("{e}"); }
//! # let _ = report;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

pub mod bpf;
pub mod class;
pub mod libpcap;

pub use class::{ClassFilter, CutoffClass, PriorityClass};

use crate::capture::{RunHooks, Verdict};
use crate::source::{LinkType, RawPacket};
use bpf::{InvalidProgram, Program};
use libpcap::Libpcap;
use std::collections::HashMap;
use std::fmt;

/// Snapshot length the expressions are compiled for.
pub const SNAPLEN: i32 = 262_144;

/// Why a filter cannot be used.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FilterError {
    /// libpcap could not be loaded.
    Unavailable(String),
    /// libpcap refused the expression (its `pcap_geterr` text).
    Compile {
        /// The expression.
        expr: String,
        /// The link type it was compiled for.
        link: LinkType,
        /// libpcap's message.
        message: String,
    },
    /// libpcap produced a program the interpreter refuses.
    Invalid(InvalidProgram),
}

impl fmt::Display for FilterError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FilterError::Unavailable(e) => write!(
                f,
                "filters need libpcap, which could not be loaded (install libpcap0.8 to use filters): {e}"
            ),
            FilterError::Compile {
                expr,
                link,
                message,
            } => write!(
                f,
                "invalid filter {expr:?} (link type {}): {message}",
                link.0
            ),
            FilterError::Invalid(e) => write!(f, "libpcap produced an unusable program: {e}"),
        }
    }
}

impl std::error::Error for FilterError {}

/// The libpcap `DLT_` value for a link type (LINKTYPE_ numbering differs for raw IP).
pub fn dlt_of(link: LinkType) -> i32 {
    match link.0 {
        // LINKTYPE_RAW and the BSD raw numbers are DLT_RAW (12 on Linux).
        101 | 12 | 14 => 12,
        n => i32::from(n),
    }
}

/// A compiled tcpdump-syntax filter, compiled per link type on demand.
pub struct Filter {
    expr: String,
    lib: Libpcap,
    programs: HashMap<LinkType, Program>,
    error: Option<FilterError>,
    /// Packets the filter accepted.
    pub accepted: u64,
    /// Packets the filter rejected.
    pub rejected: u64,
}

impl fmt::Debug for Filter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Filter")
            .field("expr", &self.expr)
            .field("link_types", &self.programs.len())
            .finish()
    }
}

impl Filter {
    /// Loads libpcap and checks `expr` by compiling it for Ethernet, so a
    /// syntax error is reported before any packet is read.
    pub fn new(expr: &str) -> Result<Filter, FilterError> {
        let lib = Libpcap::load().map_err(FilterError::Unavailable)?;
        let mut f = Filter {
            expr: expr.to_string(),
            lib,
            programs: HashMap::new(),
            error: None,
            accepted: 0,
            rejected: 0,
        };
        f.program(LinkType::ETHERNET)?;
        Ok(f)
    }

    /// The expression.
    pub fn expr(&self) -> &str {
        &self.expr
    }

    /// The program for `link`, compiling it the first time.
    pub fn program(&mut self, link: LinkType) -> Result<&Program, FilterError> {
        if !self.programs.contains_key(&link) {
            let insns = self
                .lib
                .compile(&self.expr, dlt_of(link), SNAPLEN)
                .map_err(|message| FilterError::Compile {
                    expr: self.expr.clone(),
                    link,
                    message,
                })?;
            let p = Program::new(insns).map_err(FilterError::Invalid)?;
            self.programs.insert(link, p);
        }
        self.programs
            .get(&link)
            .ok_or_else(|| FilterError::Unavailable("internal: program cache".into()))
    }

    /// Whether the filter accepts `pkt`.
    pub fn matches(&mut self, pkt: &RawPacket<'_>) -> Result<bool, FilterError> {
        let p = self.program(pkt.link)?;
        Ok(p.matches(pkt.data, pkt.orig_len))
    }

    /// The error that stopped a run, if any (a link type the expression does
    /// not compile for).
    pub fn take_error(&mut self) -> Option<FilterError> {
        self.error.take()
    }
}

impl RunHooks for Filter {
    fn inspect(&mut self, pkt: &RawPacket<'_>) -> Verdict {
        match self.matches(pkt) {
            Ok(true) => {
                self.accepted += 1;
                Verdict::Process
            }
            Ok(false) => {
                self.rejected += 1;
                Verdict::Skip
            }
            Err(e) => {
                self.error = Some(e);
                Verdict::Stop
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::Timestamp;

    #[test]
    fn filter_on_raw_packets() {
        let mut f = match Filter::new("tcp dst port 80") {
            Ok(f) => f,
            Err(FilterError::Unavailable(e)) => {
                crate::skip(e);
                return;
            }
            Err(e) => panic!("{e}"),
        };
        let frame = libpcap::tests::eth_tcp(1234, 80);
        let pkt = RawPacket {
            ts: Timestamp::ZERO,
            link: LinkType::ETHERNET,
            data: &frame,
            orig_len: 54,
            record: 1,
            interface: 0,
        };
        assert!(f.matches(&pkt).unwrap());
        // Raw IP: the same packet without the Ethernet header.
        let raw = RawPacket {
            link: LinkType::RAW,
            data: &frame[14..],
            orig_len: 40,
            ..pkt
        };
        assert!(f.matches(&raw).unwrap());
        let reply = libpcap::tests::eth_tcp(80, 1234);
        let pkt2 = RawPacket {
            data: &reply,
            ..pkt
        };
        assert!(!f.matches(&pkt2).unwrap());
        assert_eq!(f.programs.len(), 2);
        // An Ethernet-only expression cannot be compiled for raw IP.
        let mut e = Filter::new("ether host 00:11:22:33:44:55").unwrap();
        assert!(matches!(e.matches(&raw), Err(FilterError::Compile { .. })));
        match Filter::new("nonsense here") {
            Err(FilterError::Compile { message, .. }) => assert!(!message.is_empty()),
            other => panic!("{other:?}"),
        }
    }
}
