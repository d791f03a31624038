//! Tunnel identities: which tunnel an inner flow came through, as a small
//! number in its flow key.
//!
//! A tunnel is identified by its encapsulation, its outer endpoints (both
//! directions give the same tunnel), the outer VLAN tags, the virtual
//! network identifier of VXLAN and GENEVE, and the tunnel it is itself
//! inside. Outer UDP ports are not part of it (a VXLAN sender picks its
//! source port per inner flow, so each direction of one inner connection
//! has its own outer UDP flow), nor are GTP-U TEIDs and GRE keys (each side
//! of a GTP-U tunnel picks its own TEID). Two inner connections with the
//! same addresses and ports in different tunnels are different flows.
//!
//! Tunnels are interned process-wide: [`tunnel_id`] gives every distinct
//! tunnel a number from 1 (0 is "no tunnel"), which the flow key holds in
//! bits it does not otherwise use, and [`tunnel`] gives the description
//! back for records. At most [`MAX_TUNNELS`] tunnels are interned; a packet
//! of a further tunnel is counted as [`DecodeError::EncapLimit`] and its
//! inner packet is not decoded (the outer packet's own flow still counts
//! it).

use crate::decode::tunnel::TunnelKind;
use crate::decode::DecodeError;
use std::collections::HashMap;
use std::fmt;
use std::net::IpAddr;
use std::sync::{LazyLock, RwLock};

/// The most tunnels interned in a process (each takes about 100 bytes).
pub const MAX_TUNNELS: usize = 1 << 16;

/// One level of encapsulation: the encapsulation and its outer endpoints.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct TunnelHop {
    /// The encapsulation.
    pub kind: TunnelKind,
    /// The outer endpoint that sorts first.
    pub a: IpAddr,
    /// The other outer endpoint.
    pub b: IpAddr,
    /// The VXLAN or GENEVE virtual network identifier.
    pub vni: Option<u32>,
    /// The outer packet's VLAN tags, folded as in
    /// [`crate::decode::NetPacket::vlan_key`] (0 untagged).
    pub vlan: u32,
}

impl TunnelHop {
    /// The hop of an outer packet from `src` to `dst`: the same for both
    /// directions.
    pub fn new(kind: TunnelKind, src: IpAddr, dst: IpAddr, vni: Option<u32>, vlan: u32) -> Self {
        let (a, b) = if dst < src { (dst, src) } else { (src, dst) };
        TunnelHop {
            kind,
            a,
            b,
            vni,
            vlan,
        }
    }
}

impl fmt::Display for TunnelHop {
    /// `kind a<->b`, then ` vni N` and ` vlan V` (the outer VLAN id, and
    /// `.W` the inner one of QinQ) when present; no commas, so it fits a
    /// CSV field as it is.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}<->{}", self.kind, self.a, self.b)?;
        if let Some(v) = self.vni {
            write!(f, " vni {v}")?;
        }
        if self.vlan != 0 {
            let (o, i) = (self.vlan >> 16, self.vlan & 0xffff);
            if o != 0 {
                write!(f, " vlan {}", o - 1)?;
            }
            if i != 0 {
                write!(f, ".{}", i - 1)?;
            }
        }
        Ok(())
    }
}

/// The tunnels a flow came through, outermost first.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Tunnel {
    /// The encapsulations, outermost first.
    pub hops: Vec<TunnelHop>,
}

impl fmt::Display for Tunnel {
    /// The hops, outermost first, separated by ` / `.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, h) in self.hops.iter().enumerate() {
            if i > 0 {
                f.write_str(" / ")?;
            }
            write!(f, "{h}")?;
        }
        Ok(())
    }
}

struct Entry {
    parent: u32,
    hop: TunnelHop,
    depth: usize,
}

#[derive(Default)]
struct Table {
    ids: HashMap<(u32, TunnelHop), u32>,
    /// Entry `i` is tunnel `i + 1`.
    entries: Vec<Entry>,
}

static TABLE: LazyLock<RwLock<Table>> = LazyLock::new(|| RwLock::new(Table::default()));

fn read() -> std::sync::RwLockReadGuard<'static, Table> {
    // The table is consistent after any panic elsewhere (an entry is
    // pushed and indexed under one lock, with nothing that can fail between).
    TABLE.read().unwrap_or_else(|e| e.into_inner())
}

/// The number of the tunnel `hop` inside tunnel `parent` (0: none), from 1;
/// [`DecodeError::EncapLimit`] when it is new and [`MAX_TUNNELS`] tunnels
/// are interned.
pub fn tunnel_id(parent: u32, hop: TunnelHop) -> Result<u32, DecodeError> {
    if let Some(&id) = read().ids.get(&(parent, hop)) {
        return Ok(id);
    }
    let mut t = TABLE.write().unwrap_or_else(|e| e.into_inner());
    if let Some(&id) = t.ids.get(&(parent, hop)) {
        return Ok(id);
    }
    if t.entries.len() >= MAX_TUNNELS {
        return Err(DecodeError::EncapLimit);
    }
    let depth = parent
        .checked_sub(1)
        .and_then(|i| t.entries.get(i as usize))
        .map_or(0, |e| e.depth)
        + 1;
    t.entries.push(Entry { parent, hop, depth });
    let id = t.entries.len() as u32;
    t.ids.insert((parent, hop), id);
    Ok(id)
}

/// How many tunnels deep tunnel `id` is (0 for no tunnel, 1 for a tunnel
/// that is not inside another).
pub fn tunnel_depth(id: u32) -> usize {
    id.checked_sub(1)
        .and_then(|i| read().entries.get(i as usize).map(|e| e.depth))
        .unwrap_or(0)
}

/// The description of tunnel `id` (`None` for 0 or an unknown number).
pub fn tunnel(id: u32) -> Option<Tunnel> {
    if id == 0 {
        return None;
    }
    let t = read();
    let mut hops = Vec::new();
    let mut cur = id;
    // Parents are interned before their children: the walk ends.
    while let Some(e) = cur.checked_sub(1).and_then(|i| t.entries.get(i as usize)) {
        hops.push(e.hop);
        cur = e.parent;
    }
    hops.reverse();
    (!hops.is_empty()).then_some(Tunnel { hops })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hop(kind: TunnelKind, a: &str, b: &str, vni: Option<u32>) -> TunnelHop {
        TunnelHop::new(kind, a.parse().unwrap(), b.parse().unwrap(), vni, 0)
    }

    #[test]
    fn interning_is_stable_and_direction_free() {
        let h = hop(TunnelKind::Vxlan, "10.9.0.2", "10.9.0.1", Some(5));
        let id = tunnel_id(0, h).unwrap();
        assert!(id > 0);
        let back = hop(TunnelKind::Vxlan, "10.9.0.1", "10.9.0.2", Some(5));
        assert_eq!(tunnel_id(0, back).unwrap(), id);
        let other_vni = hop(TunnelKind::Vxlan, "10.9.0.1", "10.9.0.2", Some(6));
        assert_ne!(tunnel_id(0, other_vni).unwrap(), id);
        let inner = hop(TunnelKind::Gre, "192.0.2.1", "192.0.2.2", None);
        let nested = tunnel_id(id, inner).unwrap();
        assert_ne!(nested, tunnel_id(0, inner).unwrap());
        assert_eq!(
            (tunnel_depth(id), tunnel_depth(nested), tunnel_depth(0)),
            (1, 2, 0)
        );
        assert_eq!(
            tunnel(nested).unwrap().to_string(),
            "vxlan 10.9.0.1<->10.9.0.2 vni 5 / gre 192.0.2.1<->192.0.2.2"
        );
        assert_eq!(tunnel(0), None);
        assert_eq!(tunnel(u32::MAX), None);
    }

    #[test]
    fn vlan_tags_in_the_description() {
        let mut h = hop(TunnelKind::IpInIp, "2001:db8::1", "2001:db8::2", None);
        h.vlan = (100 + 1) << 16 | (7 + 1);
        assert_eq!(h.to_string(), "ipip 2001:db8::1<->2001:db8::2 vlan 100.7");
    }
}
