//! Tunnels on the command line: the `tunnel` field of JSON and CSV records,
//! conn.log's `tunnel_parents`, the UDP tunnel port options, and the
//! encapsulation errors in the summary.

mod common;

use common::*;
use streamcap_gen::tunnel::{conversation, tunnel_capture, Encap};
use streamcap_gen::PcapWriter;

fn write(dir: &std::path::Path, name: &str, bytes: &[u8]) -> String {
    let p = dir.join(name);
    std::fs::write(&p, bytes).expect("write capture");
    p.to_string_lossy().into_owned()
}

#[test]
fn records_name_their_tunnel() {
    let dir = tempdir("tunnel-records");
    let f = write(&dir, "t.pcap", &tunnel_capture().expect("capture"));
    let o = run(&["flows", "-q", "-r", &f]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let recs = json_lines(&o.stdout);
    let vxlan: Vec<_> = recs
        .iter()
        .filter(|r| r["tunnel"] == "vxlan 192.0.2.7<->192.0.2.8 vni 5001")
        .collect();
    assert_eq!(vxlan.len(), 2, "the inner TCP and UDP flows");
    // Outside tunnels the field is absent (records as they always were).
    let plain = recs
        .iter()
        .find(|r| r["src_ip"] == "192.0.2.7" && r["proto"] == "udp")
        .expect("the outer VXLAN flow");
    assert!(plain.get("tunnel").is_none(), "{plain}");
    // CSV: a column before community_id; conn.log: the tunnel's uid as
    // parent (before ip_proto and community_id).
    let o = run(&["flows", "-q", "-r", &f, "--format", "csv"]);
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(text
        .lines()
        .next()
        .is_some_and(|h| h.ends_with(",tunnel,community_id")));
    assert!(text.contains(",gtpu 192.0.2.11<->192.0.2.12"), "{text}");
    let o = run(&["flows", "-q", "-r", &f, "--format", "zeek"]);
    let text = String::from_utf8_lossy(&o.stdout);
    let rows: Vec<&str> = text
        .lines()
        .filter(|l| l.contains("\t10.5.0.1\t"))
        .collect();
    assert_eq!(rows.len(), 2, "{text}");
    let parents: Vec<&str> = rows.iter().filter_map(|l| l.rsplit('\t').nth(2)).collect();
    assert!(
        parents[0].starts_with('C') && parents[0] == parents[1],
        "{parents:?}"
    );
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn udp_tunnel_port_options() {
    let dir = tempdir("tunnel-ports");
    let inner = conversation(
        ("10.0.0.1".parse().unwrap(), 40_000),
        ("10.0.0.2".parse().unwrap(), 80),
    );
    let mut w = PcapWriter::new(Vec::new()).expect("pcap");
    let (a, b) = ("192.0.2.1".parse().unwrap(), "192.0.2.2".parse().unwrap());
    let encaps = [
        Encap::Vxlan { vni: 1, port: 8472 },
        Encap::Geneve { vni: 2 },
        Encap::GtpU { teid: 3 },
    ];
    let mut ts = 1_600_000_000_000_000_000u64;
    for e in &encaps {
        for (i, (from_client, p)) in inner.iter().enumerate() {
            let (s, d) = if *from_client { (a, b) } else { (b, a) };
            w.write_packet(ts, &e.wrap(s, d, p, i as u32))
                .expect("write");
            ts += 1_000_000;
        }
    }
    let f = write(&dir, "ports.pcap", &w.into_inner());
    let tunnels = |args: &[&str]| {
        let mut a = vec!["flows", "-q", "-r", &f];
        a.extend_from_slice(args);
        let o = run(&a);
        assert_eq!(o.status.code(), Some(0), "{args:?}");
        let mut t: Vec<String> = json_lines(&o.stdout)
            .iter()
            .filter(|r| r["proto"] == "tcp")
            .filter_map(|r| {
                r["tunnel"]
                    .as_str()
                    .map(|s| s.split(' ').next().unwrap_or("").to_string())
            })
            .collect();
        t.sort();
        t
    };
    assert_eq!(tunnels(&[]), ["geneve", "gtpu"]);
    assert_eq!(
        tunnels(&["--vxlan-port", "4789,8472"]),
        ["geneve", "gtpu", "vxlan"]
    );
    assert_eq!(
        tunnels(&[
            "--vxlan-port",
            "8472",
            "--geneve-port",
            "1",
            "--gtp-port",
            "2",
            "--gtp-port",
            "3"
        ]),
        ["vxlan"]
    );
    // A bad port is a usage error.
    assert_eq!(
        run(&["flows", "-q", "-r", &f, "--vxlan-port", "70000"])
            .status
            .code(),
        Some(2)
    );
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn encapsulation_errors_in_the_summary() {
    let dir = tempdir("tunnel-errors");
    let inner = conversation(
        ("10.0.0.1".parse().unwrap(), 40_000),
        ("10.0.0.2".parse().unwrap(), 80),
    );
    let (a, b) = ("192.0.2.1".parse().unwrap(), "192.0.2.2".parse().unwrap());
    let mut frame = Encap::Vxlan { vni: 1, port: 4789 }.wrap(a, b, &inner[0].1, 0);
    frame[14 + 20 + 8] = 0; // no I flag
    let mut w = PcapWriter::new(Vec::new()).expect("pcap");
    w.write_packet(1_000_000_000, &frame).expect("write");
    let f = write(&dir, "bad.pcap", &w.into_inner());
    let o = run(&["flows", "-r", &f]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("bad_encapsulation 1"), "{err}");
    let _ = std::fs::remove_dir_all(dir);
}
