//! Flow export to collectors: [`ipfix`] (RFC 7011) encodes flow records as
//! IPFIX messages; where they are sent (UDP, TCP, a file) is the caller's.
//! Other exports (Kafka, Parquet) are expected to live beside it.

pub mod ipfix;
