//! IPv4 options as a receiving host checks them.
//!
//! A host drops a packet whose options do not parse (Linux
//! `ip_options_compile`, which sends an ICMP parameter problem instead of
//! delivering the packet); a monitor that accepted it would take bytes no
//! endpoint ever saw (an insertion). [`ipv4_options_valid`] applies the same
//! rules to the option bytes of a header.

/// End of option list.
const EOL: u8 = 0;
/// No operation (one byte, no length).
const NOP: u8 = 1;
/// Record route.
const RR: u8 = 7;
/// Timestamp.
const TS: u8 = 68;
/// Loose source route.
const LSRR: u8 = 131;
/// Strict source route.
const SSRR: u8 = 137;
/// Router alert.
const RA: u8 = 148;

/// Whether the IPv4 option bytes `opts` (the header past its first 20
/// bytes) are what Linux accepts from the wire:
///
/// - every option but EOL and NOP has a length byte of at least 2 that
///   stays inside the header (the list ends at the first EOL);
/// - record route and the source routes hold a pointer of at least 4 (a
///   record route with room left needs room for an address at it); at most
///   one of each, and one source route;
/// - a timestamp has a length of at least 4 and a pointer of at least 5;
///   with room left, room for the entry its flags ask for (4 bytes, or 8
///   with addresses); when full, an overflow count below 15;
/// - a router alert has a length of at least 4.
///
/// Options Linux does not interpret (security, stream id, unknown kinds)
/// are accepted when their length is sound.
pub fn ipv4_options_valid(opts: &[u8]) -> bool {
    let (mut rest, mut seen_rr, mut seen_ts, mut seen_srr) = (opts, false, false, false);
    while let Some((&kind, after)) = rest.split_first() {
        match kind {
            EOL => return true,
            NOP => {
                rest = after;
                continue;
            }
            _ => {}
        }
        let Some(&len) = after.first() else {
            return false;
        };
        let len = usize::from(len);
        let Some(opt) = rest.get(..len).filter(|_| len >= 2) else {
            return false;
        };
        // The pointer, for the options that have one.
        let ptr = opt.get(2).map_or(0, |&p| usize::from(p));
        let ok = match kind {
            LSRR | SSRR => {
                let ok = len >= 3 && ptr >= 4 && !seen_srr;
                seen_srr = true;
                ok
            }
            RR => {
                let ok = len >= 3 && ptr >= 4 && !seen_rr && (ptr > len || ptr + 3 <= len);
                seen_rr = true;
                ok
            }
            TS => {
                let ok = !seen_ts && len >= 4 && ptr >= 5 && timestamp_sound(opt, ptr, len);
                seen_ts = true;
                ok
            }
            RA => len >= 4,
            _ => true,
        };
        if !ok {
            return false;
        }
        rest = &rest[len..];
    }
    true
}

/// The timestamp option's room and flags (`opt` is at least 4 bytes).
fn timestamp_sound(opt: &[u8], ptr: usize, len: usize) -> bool {
    let flags = opt.get(3).copied().unwrap_or(0);
    if ptr <= len {
        // Room left: the next entry must fit, 8 bytes for the flags that
        // record addresses.
        let entry = if matches!(flags & 0x0f, 1 | 3) { 8 } else { 4 };
        ptr + entry - 1 <= len
    } else {
        flags >> 4 != 15
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sound_option_lists() {
        assert!(ipv4_options_valid(&[]));
        assert!(ipv4_options_valid(&[NOP, NOP, NOP, EOL]));
        // Anything after EOL is padding.
        assert!(ipv4_options_valid(&[EOL, 0xff, 0xff, 0xff]));
        // Record route with room for two addresses, pointer at the first.
        assert!(ipv4_options_valid(&[
            RR, 11, 4, 0, 0, 0, 0, 0, 0, 0, 0, EOL
        ]));
        // Full record route (pointer past the end).
        assert!(ipv4_options_valid(&[RR, 7, 8, 1, 2, 3, 4, EOL]));
        // Router alert.
        assert!(ipv4_options_valid(&[RA, 4, 0, 0]));
        // Timestamps only, room for one.
        assert!(ipv4_options_valid(&[TS, 8, 5, 0, 0, 0, 0, 0]));
        // Unknown option with a sound length.
        assert!(ipv4_options_valid(&[0x9e, 4, 1, 2]));
    }

    #[test]
    fn malformed_option_lists() {
        // Length running past the header.
        assert!(!ipv4_options_valid(&[0x9e, 8, 1, 2]));
        assert!(!ipv4_options_valid(&[NOP, NOP, RR, 7, 4]));
        // Length below 2, or missing.
        assert!(!ipv4_options_valid(&[0x9e, 1, 0, 0]));
        assert!(!ipv4_options_valid(&[0x9e, 0, 0, 0]));
        assert!(!ipv4_options_valid(&[NOP, NOP, NOP, 0x9e]));
        // Record route pointer below 4, or pointing at a partial slot.
        assert!(!ipv4_options_valid(&[RR, 7, 3, 0, 0, 0, 0, EOL]));
        assert!(!ipv4_options_valid(&[RR, 7, 5, 0, 0, 0, 0, EOL]));
        // Two record routes.
        assert!(!ipv4_options_valid(&[RR, 3, 4, RR, 3, 4, NOP, NOP]));
        // Two source routes.
        assert!(!ipv4_options_valid(&[LSRR, 3, 4, SSRR, 3, 4, NOP, NOP]));
        // Timestamp: short, pointer below 5, no room for an address entry,
        // overflow counter saturated.
        assert!(!ipv4_options_valid(&[TS, 3, 5, EOL]));
        assert!(!ipv4_options_valid(&[TS, 8, 4, 0, 0, 0, 0, 0]));
        assert!(!ipv4_options_valid(&[TS, 8, 5, 1, 0, 0, 0, 0]));
        assert!(!ipv4_options_valid(&[TS, 8, 9, 0xf0, 0, 0, 0, 0]));
        // Router alert too short.
        assert!(!ipv4_options_valid(&[RA, 2, NOP, NOP]));
    }
}
