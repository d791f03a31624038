//! The names `dns.log` gives to numbers: query types, classes and
//! response codes, as Zeek's `base/protocols/dns/consts.zeek` has them
//! (with its defaults `query-N`, `qclass-N` and `rcode-N`).

/// Zeek's `qtype_name` of a QTYPE.
pub fn qtype_name(t: u16) -> String {
    let s = match t {
        1 => "A",
        2 => "NS",
        3 => "MD",
        4 => "MF",
        5 => "CNAME",
        6 => "SOA",
        7 => "MB",
        8 => "MG",
        9 => "MR",
        10 => "NULL",
        11 => "WKS",
        12 => "PTR",
        13 => "HINFO",
        14 => "MINFO",
        15 => "MX",
        16 => "TXT",
        17 => "RP",
        18 => "AFSDB",
        19 => "X25",
        20 => "ISDN",
        21 => "RT",
        22 => "NSAP",
        23 => "NSAP-PTR",
        24 => "SIG",
        25 => "KEY",
        26 => "PX",
        27 => "GPOS",
        28 => "AAAA",
        29 => "LOC",
        30 => "NXT",
        31 => "EID",
        32 => "NIMLOC",
        33 => "SRV",
        34 => "ATMA",
        35 => "NAPTR",
        36 => "KX",
        37 => "CERT",
        38 => "A6",
        39 => "DNAME",
        40 => "SINK",
        41 => "OPT",
        42 => "APL",
        43 => "DS",
        44 => "SSHFP",
        45 => "IPSECKEY",
        46 => "RRSIG",
        47 => "NSEC",
        48 => "DNSKEY",
        49 => "DHCID",
        50 => "NSEC3",
        51 => "NSEC3PARAM",
        52 => "TLSA",
        53 => "SMIMEA",
        55 => "HIP",
        56 => "NINFO",
        57 => "RKEY",
        58 => "TALINK",
        59 => "CDS",
        60 => "CDNSKEY",
        61 => "OPENPGPKEY",
        62 => "CSYNC",
        63 => "ZONEMD",
        64 => "SVCB",
        65 => "HTTPS",
        99 => "SPF",
        100 => "UINFO",
        101 => "UID",
        102 => "GID",
        103 => "UNSPEC",
        104 => "NID",
        105 => "L32",
        106 => "L64",
        107 => "LP",
        108 => "EUI48",
        109 => "EUI64",
        249 => "TKEY",
        250 => "TSIG",
        251 => "IXFR",
        252 => "AXFR",
        253 => "MAILB",
        254 => "MAILA",
        255 => "*",
        256 => "URI",
        257 => "CAA",
        32768 => "TA",
        32769 => "DLV",
        65281 => "WINS",
        65282 => "WINS-R",
        65422 => "XPF",
        65521 => "INTEGRITY",
        _ => return format!("query-{t}"),
    };
    s.to_string()
}

/// Zeek's `qclass_name` of a QCLASS.
pub fn qclass_name(c: u16) -> String {
    let s = match c {
        1 => "C_INTERNET",
        2 => "C_CSNET",
        3 => "C_CHAOS",
        4 => "C_HESIOD",
        254 => "C_NONE",
        255 => "C_ANY",
        _ => return format!("qclass-{c}"),
    };
    s.to_string()
}

/// Zeek's `rcode_name` of a response code (`base_errors`).
pub fn rcode_name(r: u16) -> String {
    let s = match r {
        0 => "NOERROR",
        1 => "FORMERR",
        2 => "SERVFAIL",
        3 => "NXDOMAIN",
        4 => "NOTIMP",
        5 => "REFUSED",
        6 => "YXDOMAIN",
        7 => "YXRRSET",
        8 => "NXRRSet",
        9 => "NOTAUTH",
        10 => "NOTZONE",
        11..=15 => return format!("unassigned-{r}"),
        16 => "BADVERS",
        17 => "BADKEY",
        18 => "BADTIME",
        19 => "BADMODE",
        20 => "BADNAME",
        21 => "BADALG",
        22 => "BADTRUNC",
        23 => "BADCOOKIE",
        3842 => "BADSIG",
        _ => return format!("rcode-{r}"),
    };
    s.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_defaults() {
        assert_eq!(qtype_name(1), "A");
        assert_eq!(qtype_name(28), "AAAA");
        assert_eq!(qtype_name(255), "*");
        assert_eq!(qtype_name(54), "query-54");
        assert_eq!(qclass_name(1), "C_INTERNET");
        assert_eq!(qclass_name(0x8001), "qclass-32769");
        assert_eq!(rcode_name(3), "NXDOMAIN");
        assert_eq!(rcode_name(8), "NXRRSet");
        assert_eq!(rcode_name(12), "unassigned-12");
        assert_eq!(rcode_name(99), "rcode-99");
    }
}
