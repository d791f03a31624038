//! `--stats-json FILE`: the run's summary as one JSON object, for scripts
//! (the records never carry it).

use crate::run::Outcome;
use serde_json::{json, Map, Value};
use std::io::Write;
use std::path::Path;
use streamcap::decode::DecodeError;
use streamcap::deliver::EndReason;
use streamcap::stats::ProtoClass;

/// The summary's figures as JSON (see docs/json-format.md, "Run statistics").
pub fn value(source: &str, o: &Outcome, base_threshold: f64) -> Value {
    let s = &o.stats;
    let t = &s.totals;
    let by_proto: Map<String, Value> = ProtoClass::ALL
        .iter()
        .map(|p| (p.name().to_string(), json!(s.created(*p))))
        .collect();
    let ended: Map<String, Value> = EndReason::ALL
        .iter()
        .map(|r| (r.name().to_string(), json!(s.ended(*r))))
        .collect();
    let decode: Map<String, Value> = DecodeError::ALL
        .iter()
        .map(|k| (k.name().to_string(), json!(s.decode_error(*k))))
        .collect();
    let levels: Vec<Value> = s
        .overload
        .levels
        .iter()
        .map(|l| {
            json!({
                "priority": l.priority,
                "streams": l.streams,
                "stream_bytes": l.totals.stream_bytes,
                "captured": l.totals.captured,
                "discarded": l.totals.discarded,
                "dropped": l.totals.dropped,
                "missing": l.totals.missing,
                "ppl_packets": l.ppl_packets(),
                "ppl_watermark_packets": l.ppl_watermark_packets,
                "ppl_cutoff_packets": l.ppl_cutoff_packets,
                "ppl_bytes": l.ppl_bytes,
            })
        })
        .collect();
    let ring = s.pace.map(|p| {
        json!({
            "size": p.ring_size,
            "peak": p.ring_peak,
            "drops": s.ring_drops,
            "drop_bytes": s.ring_drop_bytes,
            "idle_s": p.idle_ns as f64 / 1e9,
            "max_late_s": p.max_late_ns as f64 / 1e9,
        })
    });
    let analysis = o.analysis.as_ref().map(|a| {
        json!({
            "threads": a.threads,
            "events": a.events,
            "batches": a.batches,
            "decisions": a.decisions,
            "stalls": a.stalls,
            "stall_s": a.stall_ns as f64 / 1e9,
        })
    });
    let xdp = o.xdp.as_ref().map(|x| {
        let z = &s.subzero;
        json!({
            "mode": x.mode,
            "dropped_packets": z.pkts,
            "dropped_bytes": z.bytes,
            "program_packets": x.pkts,
            "program_bytes": x.bytes,
            "shared": x.joined,
            "listed": z.installed,
            "listed_again": z.reinstalled,
            "timed_out": z.timed_out,
            "map_full": z.map_full,
            "failed": z.failed,
            "capacity": x.capacity,
        })
    });
    let kernel = o.kernel.map(|(received, dropped, freezes)| {
        json!({"received": received, "dropped": dropped, "freezes": freezes})
    });
    json!({
        "source": source,
        "packets": {
            "read": o.read,
            "matched": o.filter.as_ref().map(|f| f.0),
            "filter": o.filter.as_ref().map(|f| f.1.clone()),
            "processed": s.packets,
            "ip": s.ip_packets,
            "truncated": s.truncated_packets,
            "late": s.late_packets,
        },
        "ring": ring,
        "kernel": kernel,
        "af_xdp": o.xsk.as_ref().map(|(info, x, g)| crate::xsk::stats_json(info, x, g.as_ref())),
        "xdp": xdp,
        "wire_bytes": s.wire_bytes,
        "flows": {
            "created": by_proto,
            "ended": ended,
            "interim_records": o.interim,
        },
        "streams": {
            "count": s.streams,
            "stream_bytes": t.stream_bytes,
            "captured": t.captured,
            "discarded": t.discarded,
            "dropped": t.dropped,
            "missing": t.missing,
        },
        "memory": {
            "limit": s.memory_limit,
            "peak": s.memory_peak,
            "refusals": s.memory_refusals,
        },
        "overload": {
            "base_threshold": base_threshold,
            "levels": levels,
        },
        "analysis": analysis,
        "decode_errors": decode,
        "files": {"written": o.files, "bytes": o.file_bytes},
        "wall_s": o.wall,
    })
}

/// Writes [`value`] to `path`, one line.
pub fn write(path: &Path, v: &Value) -> std::io::Result<()> {
    let mut f = std::fs::File::create(path)?;
    serde_json::to_writer(&mut f, v)?;
    f.write_all(b"\n")?;
    f.sync_all()
}
