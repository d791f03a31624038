//! Traffic classes: a setting for the connections whose first packet
//! matches a tcpdump-syntax filter. A cutoff class (Scap
//! `scap_add_cutoff_class`) sets the streams' cutoff, a priority class (Scap
//! `scap_set_stream_priority` by class) their priority for overload control.
//!
//! The expression is compiled by libpcap, like [`super::Filter`], once for
//! every link type the decoder reads (the link types it does not compile for
//! never match), and run on the first packet of each new connection, before
//! any of its payload is copied.

use super::bpf::Program;
use super::libpcap::Libpcap;
use super::{dlt_of, FilterError, SNAPLEN};
use crate::source::{LinkType, RawPacket};
use std::fmt;
use std::sync::Arc;

/// The link types a class is compiled for.
const LINK_TYPES: [LinkType; 10] = [
    LinkType::ETHERNET,
    LinkType::RAW,
    LinkType::RAW_BSD12,
    LinkType::RAW_BSD14,
    LinkType::NULL,
    LinkType::LOOP,
    LinkType::LINUX_SLL,
    LinkType::LINUX_SLL2,
    LinkType::IPV4,
    LinkType::IPV6,
];

/// A filter compiled for every link type the decoder reads, matched against
/// the first packet of each new connection.
#[derive(Clone)]
pub struct ClassFilter {
    expr: String,
    programs: Arc<[(LinkType, Program)]>,
}

impl fmt::Debug for ClassFilter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.expr)
    }
}

impl ClassFilter {
    /// Compiles `expr` for every supported link type. Fails if libpcap
    /// cannot be loaded or refuses the expression for Ethernet.
    pub fn new(expr: &str) -> Result<ClassFilter, FilterError> {
        let lib = Libpcap::load().map_err(FilterError::Unavailable)?;
        let mut programs = Vec::new();
        for link in LINK_TYPES {
            match lib.compile(expr, dlt_of(link), SNAPLEN) {
                Ok(insns) => {
                    programs.push((link, Program::new(insns).map_err(FilterError::Invalid)?));
                }
                Err(message) if link == LinkType::ETHERNET => {
                    return Err(FilterError::Compile {
                        expr: expr.to_string(),
                        link,
                        message,
                    })
                }
                // Meaningless for this link type (e.g. `ether host` on raw IP).
                Err(_) => {}
            }
        }
        Ok(ClassFilter {
            expr: expr.to_string(),
            programs: programs.into(),
        })
    }

    /// The filter expression.
    pub fn expr(&self) -> &str {
        &self.expr
    }

    /// Whether the frame matches.
    pub fn matches(&self, pkt: &RawPacket<'_>) -> bool {
        self.programs
            .iter()
            .find(|(l, _)| *l == pkt.link)
            .is_some_and(|(_, p)| p.matches(pkt.data, pkt.orig_len))
    }
}

/// A cutoff for the connections whose first packet matches a filter.
///
/// Both directions of a matching connection get the class's cutoff instead of
/// the configured one; with several classes, the first that matches wins.
#[derive(Clone, Debug)]
pub struct CutoffClass {
    filter: ClassFilter,
    cutoff: u64,
}

impl CutoffClass {
    /// Compiles `expr` ([`ClassFilter::new`]); `cutoff` is in bytes per
    /// stream (`u64::MAX` = unlimited).
    pub fn new(expr: &str, cutoff: u64) -> Result<CutoffClass, FilterError> {
        Ok(CutoffClass {
            filter: ClassFilter::new(expr)?,
            cutoff,
        })
    }

    /// The filter expression.
    pub fn expr(&self) -> &str {
        self.filter.expr()
    }

    /// The cutoff of the class's streams, bytes (`u64::MAX` = unlimited).
    pub fn cutoff(&self) -> u64 {
        self.cutoff
    }

    /// Whether the frame matches the class.
    pub fn matches(&self, pkt: &RawPacket<'_>) -> bool {
        self.filter.matches(pkt)
    }
}

/// A priority for the connections whose first packet matches a filter
/// (overload control, [`crate::deliver::overload`]).
///
/// Both directions of a matching connection get the class's priority instead
/// of the configured one; with several classes, the first that matches wins.
#[derive(Clone, Debug)]
pub struct PriorityClass {
    filter: ClassFilter,
    priority: u8,
}

impl PriorityClass {
    /// Compiles `expr` ([`ClassFilter::new`]) for streams of `priority`
    /// (larger = more important).
    pub fn new(expr: &str, priority: u8) -> Result<PriorityClass, FilterError> {
        Ok(PriorityClass {
            filter: ClassFilter::new(expr)?,
            priority,
        })
    }

    /// The filter expression.
    pub fn expr(&self) -> &str {
        self.filter.expr()
    }

    /// The priority of the class's streams.
    pub fn priority(&self) -> u8 {
        self.priority
    }

    /// Whether the frame matches the class.
    pub fn matches(&self, pkt: &RawPacket<'_>) -> bool {
        self.filter.matches(pkt)
    }
}
