//! Subzero copy (`--xdp`, docs/xdp.md) end to end: generated captures
//! replayed into a veth pair inside a network namespace of the test's own
//! and captured with and without the XDP flow-drop stage. The live part
//! needs a build with `--features xdp` and root; it skips with a message
//! otherwise (`scripts/test-xdp.sh` builds and runs it).

mod common;

#[path = "common/netns.rs"]
mod netns;

use common::*;

/// AF_XDP reads one queue with one worker; the options of other sources
/// are refused with the reason.
#[test]
fn af_xdp_refuses_what_does_not_apply() {
    for (args, want) in [
        (&["--ring-size", "64MiB"][..], "its pool"),
        (&["--group", "7"][..], "fan-out groups"),
        (&["--pool-chunks", "0"][..], "at least one chunk"),
        (&["--frame-size", "3000"][..], "2048 or 4096"),
        (&["--offload", "packets"][..], "splits connections"),
        (
            &["--workers", "2", "--analysis-threads", "1"][..],
            "--analysis-threads 0",
        ),
    ] {
        let mut a = vec!["flows", "-i", "lo", "--source", "af_xdp"];
        a.extend_from_slice(args);
        let o = run(&a);
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains(want), "{args:?}: {err}");
    }
}

/// `--xdp` applies to live capture only.
#[test]
fn xdp_on_a_file_is_a_usage_error() {
    let o = run(&["flows", "-r", "../../samples/sample.pcap", "--xdp"]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("--xdp") && err.contains("live interface"),
        "{err}"
    );
}

/// A build without the feature refuses `--xdp` before opening anything,
/// saying how to rebuild, and `--xdp=auto` goes on without it.
#[cfg(not(feature = "xdp"))]
#[test]
fn a_build_without_xdp_says_so() {
    let o = run(&["flows", "-i", "lo", "--xdp", "-c", "1"]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("built without XDP") && err.contains("--features xdp"),
        "{err}"
    );
    let o = run(&["flows", "-i", "lo", "--source", "af_xdp", "-c", "1"]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("--source af_xdp") && err.contains("--features xdp"),
        "{err}"
    );
    let o = run(&["flows", "-i", "no-such-if0", "--xdp=auto"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("--xdp=auto: this streamcap was built without XDP"),
        "{err}"
    );
}

#[cfg(feature = "xdp")]
mod live {
    use super::common::{self, json_lines, run, BIN};
    use super::netns::*;
    use serde_json::Value;
    use std::collections::BTreeMap;
    use std::path::Path;
    use std::process::Command;
    use std::time::{Duration, Instant};
    use streamcap_gen::campus::CampusConfig;
    use streamcap_gen::{Capture as Gen, Direction, TcpConversation};

    /// The stats-json of a run.
    fn stats(path: &Path) -> Value {
        let text = std::fs::read_to_string(path).expect("read --stats-json");
        serde_json::from_str(&text).expect("stats json")
    }

    /// Captures a replay of `pcap` with `flows ARGS -i scb --stats-json`;
    /// returns the records by connection, the statistics and the summary.
    fn capture(
        ns: &Netns,
        pcap: &Path,
        args: &[&str],
        tag: &str,
    ) -> (BTreeMap<String, Value>, Value, String) {
        let dir = common::tempdir(&format!("xdp-{tag}"));
        let sj = dir.join("stats.json");
        let mut a = vec!["flows", "--stats-json", sj.to_str().unwrap_or_default()];
        a.extend_from_slice(args);
        let c = ns.capture(&a);
        ns.replay(pcap);
        let (out, summary) = c.interrupt();
        assert_eq!(out.status.code(), Some(0), "{tag}: {summary}");
        (by_connection(&out.stdout), stats(&sj), summary)
    }

    /// The per-direction counters of every record, with and without XDP,
    /// are the same: the packets dropped in XDP are counted as if the
    /// engine had seen them. The kernel socket saw fewer packets, by
    /// exactly what XDP reports; connections still end by FIN or RST.
    #[test]
    fn records_are_the_same_with_and_without_xdp() {
        let Some(ns) = Netns::new("xdp-same") else {
            return;
        };
        let pcap = mixed_capture("xdp-same", 21, 12_000, 200);
        let one = capture(&ns, &pcap, &["--cutoff", "1KiB"], "plain");
        // Two workers: the kernel's fan-out defragments, so the sockets
        // count a fragmented datagram once.
        let two = capture(
            &ns,
            &pcap,
            &["--cutoff", "1KiB", "--workers", "2"],
            "plain2",
        );
        for (tag, extra) in [
            ("native", &["--xdp"][..]),
            ("generic", &["--xdp", "--xdp-mode", "generic"][..]),
            ("two-workers", &["--xdp", "--workers", "2"][..]),
            // A map too small for the streams past their cutoff: the rest
            // are discarded in user space, with the same records.
            ("small-map", &["--xdp", "--xdp-entries", "16"][..]),
        ] {
            let (plain, plain_stats, _) = if tag == "two-workers" { &two } else { &one };
            let mut args = vec!["--cutoff", "1KiB"];
            args.extend_from_slice(extra);
            let (early, s, summary) = capture(&ns, &pcap, &args, tag);
            let want_mode = if tag == "generic" {
                "generic"
            } else {
                "native"
            };
            assert_eq!(s["xdp"]["mode"], want_mode, "{summary}");
            assert_same_records(plain, &early, tag);
            let dropped = s["xdp"]["dropped_packets"].as_u64().unwrap_or(0);
            // Every packet the program dropped is in a record.
            assert_eq!(
                s["xdp"]["program_packets"].as_u64(),
                Some(dropped),
                "{tag}: dropped by the program, merged into records"
            );
            let seen = s["kernel"]["received"].as_u64().unwrap_or(0);
            let all = plain_stats["kernel"]["received"].as_u64().unwrap_or(0);
            if tag == "small-map" {
                let full = s["xdp"]["map_full"].as_u64().unwrap_or(0);
                assert!(full > 0 && dropped > 0, "{tag}: {summary}");
            } else {
                assert!(
                    dropped > all / 4,
                    "{tag}: {dropped} of {all} dropped in XDP"
                );
            }
            assert_eq!(seen + dropped, all, "{tag}: socket + XDP = every frame");
            for end in ["fin", "rst"] {
                assert_eq!(
                    s["flows"]["ended"][end], plain_stats["flows"]["ended"][end],
                    "{tag}: connections ended by {end}"
                );
            }
            assert!(summary.contains(&format!("dropped in XDP ({want_mode} mode)")));
        }
    }

    /// `--source af_xdp` captures the same frames as AF_PACKET: the same
    /// records with the same SHA-256 of every stream, also with a filter
    /// (in user space there) and with `--xdp` dropping in the same program
    /// that redirects; the summary names the mode and the pool, and no
    /// packet is dropped on the way.
    #[test]
    fn af_xdp_captures_what_af_packet_captures() {
        let Some(ns) = Netns::new("xsk-same") else {
            return;
        };
        let pcap = mixed_capture("xsk-same", 33, 8_000, 150);
        let xsk = [
            "--source",
            "af_xdp",
            "--pool-chunks",
            "64",
            "--chunk-frames",
            "64",
        ];
        for (tag, base) in [
            ("digest", &["--digest"][..]),
            // An AF_XDP socket sees VLAN tags in the frame, where AF_PACKET's
            // kernel filter finds them in metadata (docs/capture.md): this
            // filter means the same either way.
            ("filter", &["--digest", "tcp or (vlan and tcp)"][..]),
            ("cutoff-xdp", &["--cutoff", "1KiB"][..]),
        ] {
            let (plain, _, _) = capture(&ns, &pcap, base, &format!("{tag}-packet"));
            let mut args = base.to_vec();
            args.extend_from_slice(&xsk);
            if tag == "cutoff-xdp" {
                args.push("--xdp");
            }
            let (got, s, summary) = capture(&ns, &pcap, &args, &format!("{tag}-xsk"));
            assert!(
                summary.contains("af_xdp       queue 0 (copy mode)"),
                "{tag}: {summary}"
            );
            let x = &s["af_xdp"];
            assert_eq!(x["mode"], "copy", "{tag}: {x}");
            for k in [
                "dropped_pool_exhausted",
                "dropped_fill_ring_empty",
                "dropped_rx_ring_full",
                "dropped_other",
            ] {
                assert_eq!(x[k], 0, "{tag}: {k}: {x}");
            }
            assert!(x["chunks_recycled"].as_u64().unwrap_or(0) > 0, "{tag}: {x}");
            assert_same_records(&plain, &got, tag);
            if tag == "cutoff-xdp" {
                assert!(
                    s["xdp"]["dropped_packets"].as_u64().unwrap_or(0) > 0,
                    "{tag}: nothing dropped in XDP: {}",
                    s["xdp"]
                );
            }
        }
    }

    /// Two AF_XDP queues as a buddy group with `--offload flows`: every
    /// frame arrives on queue 0 (the sending veth has one transmit queue,
    /// and a veth delivers on the queue its peer sent on), half the
    /// connections' buckets belong to the second worker from the start,
    /// so packets are handed between the workers; without moves, and with
    /// a threshold of one packet, which makes the busy worker move
    /// buckets with their connections while the replay runs. Every frame
    /// is read once, and the records and stream digests (IP fragments
    /// included) equal one AF_PACKET worker's.
    #[test]
    fn af_xdp_queues_share_the_work_and_keep_the_records() {
        let Some(ns) = Netns::new("xsk-group") else {
            return;
        };
        let n = ns.name.clone();
        for args in [
            &[
                "-n",
                &n,
                "link",
                "add",
                "sqa",
                "numtxqueues",
                "1",
                "numrxqueues",
                "2",
                "type",
                "veth",
                "peer",
                "name",
                "sqb",
                "numtxqueues",
                "2",
                "numrxqueues",
                "2",
            ][..],
            &["-n", &n, "link", "set", "sqa", "up"],
            &["-n", &n, "link", "set", "sqb", "up"],
        ] {
            let o = Command::new("ip").args(args).output().expect("ip");
            assert!(
                o.status.success(),
                "ip {args:?}: {}",
                String::from_utf8_lossy(&o.stderr)
            );
        }
        if !common::have("taskset", "--version") {
            common::skip("taskset (util-linux) is not installed");
            return;
        }
        let pcap = mixed_capture("xsk-group", 35, 8_000, 150);
        let run = |pcap: &Path, args: &[&str], tag: &str| {
            let dir = common::tempdir(&format!("xsk-group-{tag}"));
            let sj = dir.join("stats.json");
            let mut a = vec![
                "flows",
                "--digest",
                "--stats-json",
                sj.to_str().unwrap_or_default(),
            ];
            a.extend_from_slice(args);
            let c = ns.capture_on(&a, "sqb");
            let o = ns
                .exec(&[
                    "taskset",
                    "-c",
                    "0",
                    BIN,
                    "replay",
                    "-r",
                    pcap.to_str().unwrap_or_default(),
                    "-i",
                    "sqa",
                    "--pps",
                    "20000",
                ])
                .output()
                .expect("replay");
            assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
            let (out, summary) = c.interrupt();
            assert_eq!(out.status.code(), Some(0), "{tag}: {summary}");
            (by_connection(&out.stdout), stats(&sj), summary)
        };
        let group = [
            "--source",
            "af_xdp",
            "--workers",
            "2",
            "--pool-chunks",
            "64",
            "--chunk-frames",
            "64",
        ];
        let mut moved = 0;
        for (tag, pcap, extra) in [
            ("flows", &pcap, &["--offload-threshold", "1000000000"][..]),
            ("moves", &pcap, &["--offload-threshold", "1"][..]),
        ] {
            let (plain, _, _) = run(pcap, &[], &format!("{tag}-packet"));
            let mut args = group.to_vec();
            args.extend_from_slice(extra);
            let (got, s, summary) = run(pcap, &args, tag);
            let x = &s["af_xdp"];
            assert_eq!(x["queues"], 2, "{tag}: {x}");
            assert_eq!(x["received"], 8000, "{tag}: {summary}");
            assert_eq!(s["packets"]["read"], 8000, "{tag}: {summary}");
            assert!(
                x["offload_packets_handed"].as_u64().unwrap_or(0) > 0,
                "{tag}: {x}"
            );
            let moves = x["offload_moves"].as_u64().unwrap_or(0);
            if tag == "flows" {
                assert_eq!(moves, 0, "{tag}: {x}");
            }
            moved += moves;
            assert!(summary.contains("  offload      "), "{tag}: {summary}");
            assert_same_records(&plain, &got, tag);
        }
        assert!(moved > 0, "no bucket moved with a threshold of one packet");
    }

    /// A pcap of one TCP connection whose client sends `sends` small
    /// messages, each acknowledged.
    fn quiet_stream(sends: usize) -> common::TestFile {
        let ep = |s: &str| s.parse().expect("address");
        let mut conv = TcpConversation::new(ep("10.1.0.1:40000"), ep("10.1.0.2:80"));
        for i in 0..sends {
            conv = conv.send(Direction::ToServer, vec![b'a' + (i % 26) as u8; 100]);
        }
        let mut g = Gen::new();
        g.add(&conv);
        let p = common::tempdir("xdp-quiet").into_file("quiet.pcap");
        std::fs::write(&p, g.to_pcap_bytes()).expect("write capture");
        p
    }

    /// A long, quiet stream past its cutoff: its entry times out, the next
    /// segment reaches the engine, and the entry is listed again with twice
    /// the timeout (Scap V-E); the record is the same as without XDP.
    #[test]
    fn a_timed_out_entry_is_listed_again() {
        let Some(ns) = Netns::new("xdp-quiet") else {
            return;
        };
        let pcap = quiet_stream(60);
        let mut results = Vec::new();
        for xdp in [false, true] {
            let dir = common::tempdir("xdp-quiet-run");
            let sj = dir.join("stats.json");
            let mut args = vec![
                "flows",
                "--cutoff",
                "0",
                "--stats-json",
                sj.to_str().unwrap_or_default(),
            ];
            if xdp {
                args.extend(["--xdp", "--xdp-timeout", "0.5"]);
            }
            let c = ns.capture(&args);
            ns.replay_at(&pcap, "sca", "20");
            let (out, summary) = c.interrupt();
            assert_eq!(out.status.code(), Some(0), "{summary}");
            results.push((by_connection(&out.stdout), stats(&sj)));
        }
        let (plain, early) = (&results[0], &results[1]);
        assert_eq!(plain.0, early.0, "records");
        let x = &early.1["xdp"];
        let n = |k: &str| x[k].as_u64().unwrap_or(0);
        assert_eq!(n("listed"), 1, "{x}");
        assert!(n("timed_out") >= 2 && n("listed_again") >= 2, "{x}");
        assert!(n("dropped_packets") > 20, "{x}");
        assert_eq!(n("program_packets"), n("dropped_packets"), "{x}");
    }

    /// Whether interface `scb` of `ns` has an XDP program attached.
    fn attached(ns: &Netns) -> bool {
        let o = Command::new("ip")
            .args(["-n", &ns.name, "-d", "link", "show", "dev", "scb"])
            .output()
            .expect("ip link show");
        String::from_utf8_lossy(&o.stdout).contains("prog/xdp")
    }

    fn wait_detached(ns: &Netns) -> bool {
        let t = Instant::now();
        while t.elapsed() < Duration::from_secs(5) {
            if !attached(ns) {
                return true;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        false
    }

    /// The program is on the interface while capturing and off after
    /// Ctrl-C, and also after the process is killed (the kernel removes
    /// the link with it). Two captures cannot both attach: the second
    /// says why and exits 2.
    #[test]
    fn the_program_comes_off_on_exit_and_when_killed() {
        let Some(ns) = Netns::new("xdp-detach") else {
            return;
        };
        let c = ns.capture(&["flows", "--xdp", "-o", "/dev/null"]);
        assert!(attached(&ns), "attached while capturing");
        let o = ns
            .exec(&[BIN, "flows", "-i", "scb", "--xdp", "-o", "/dev/null"])
            .output()
            .expect("second capture");
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{err}");
        assert!(err.contains("already has an XDP program"), "{err}");
        let _ = c.interrupt();
        assert!(wait_detached(&ns), "detached after Ctrl-C");

        let c = ns.capture(&["flows", "--xdp", "-o", "/dev/null"]);
        assert!(attached(&ns));
        c.kill();
        assert!(wait_detached(&ns), "detached after SIGKILL");
    }

    /// Two processes of one fan-out group share one program and map: each
    /// reports exactly its own connections (their union is every record of
    /// a capture without XDP), the second says it joined, a process of
    /// another group is refused, and the program stays attached until the
    /// last of the group ends.
    #[test]
    fn processes_of_one_fanout_group_share_the_program() {
        let Some(ns) = Netns::new("xdp-group") else {
            return;
        };
        let pcap = temp_capture(
            "xdp-group",
            Some(CampusConfig {
                seed: 23,
                packets: 12_000,
                concurrency: 200,
                ..CampusConfig::default()
            }),
        );
        let (want, _, _) = capture(
            &ns,
            &pcap,
            &["--cutoff", "1KiB", "--group", "4242"],
            "alone",
        );
        let dir = common::tempdir("xdp-group-stats");
        let (ja, jb) = (dir.join("a.json"), dir.join("b.json"));
        let args = |j: &Path| {
            vec![
                "flows".to_string(),
                "--cutoff".into(),
                "1KiB".into(),
                "--xdp".into(),
                "--group".into(),
                "4242".into(),
                "--stats-json".into(),
                j.display().to_string(),
            ]
        };
        let aa = args(&ja);
        let a = ns.capture(&aa.iter().map(String::as_str).collect::<Vec<_>>());
        let bb = args(&jb);
        let b = ns.capture(&bb.iter().map(String::as_str).collect::<Vec<_>>());
        // Another group: refused.
        let o = ns
            .exec(&[
                BIN,
                "flows",
                "-i",
                "scb",
                "--xdp",
                "--group",
                "7",
                "-o",
                "/dev/null",
            ])
            .output()
            .expect("capture of another group");
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{err}");
        assert!(err.contains("fan-out group 4242, not in group 7"), "{err}");
        ns.replay(&pcap);
        let (oa, sa) = a.interrupt();
        assert_eq!(oa.status.code(), Some(0), "{sa}");
        assert!(
            attached(&ns),
            "still attached while the second process runs"
        );
        let (ob, sb) = b.interrupt();
        assert_eq!(ob.status.code(), Some(0), "{sb}");
        assert!(wait_detached(&ns), "detached after the last process");
        assert!(sb.contains("program shared in the fan-out group"), "{sb}");
        let (ra, rb) = (by_connection(&oa.stdout), by_connection(&ob.stdout));
        assert!(
            !ra.is_empty() && !rb.is_empty(),
            "both processes got connections"
        );
        assert_eq!(ra.len() + rb.len(), want.len());
        for (k, w) in &want {
            let g = ra.get(k).or_else(|| rb.get(k));
            assert_eq!(g, Some(w), "{k}");
        }
        let dropped = |j: &Path| stats(j)["xdp"]["dropped_packets"].as_u64().unwrap_or(0);
        assert!(dropped(&ja) > 0 && dropped(&jb) > 0, "{sa}\n{sb}");
    }

    /// The ```` ```console root xdp ```` examples of docs/ run and print
    /// what the pages show (on `lo` in a namespace of their own, as
    /// tests/docs.rs runs live examples).
    #[test]
    fn doc_examples_run() {
        use super::common::examples::{can_capture_live, run_examples, Pick};
        if !can_capture_live() {
            common::skip("the xdp examples of docs/ need root");
            return;
        }
        let ran = run_examples("streamcap-xdp-docs", &["samples"], &[], |ex| {
            if ex.xdp {
                Pick::Run
            } else {
                Pick::Other
            }
        });
        assert!(ran >= 1, "no xdp examples ran (they need root)");
    }

    /// Clear errors: no such interface, `any`, bad sizes, and no privileges.
    #[test]
    fn xdp_errors_are_clear() {
        let cases: [(&[&str], &str); 4] = [
            (&["-i", "no-such-if0", "--xdp"], "no-such-if0"),
            (&["-i", "any", "--xdp"], "not to `any`"),
            (
                &["-i", "lo", "--xdp", "--xdp-entries", "0"],
                "--xdp-entries 0",
            ),
            (
                &["-i", "lo", "--xdp", "--xdp-timeout", "0"],
                "--xdp-timeout 0",
            ),
        ];
        for (args, want) in cases {
            let mut a = vec!["flows"];
            a.extend_from_slice(args);
            let o = run(&a);
            let err = String::from_utf8_lossy(&o.stderr);
            assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
            assert!(err.contains(want), "{args:?}: {err}");
        }
        // Without privileges (as nobody): the message says what is needed.
        if !common::have("setpriv", "--version") {
            common::skip("setpriv (util-linux) is not installed: the privilege case");
            return;
        }
        let o = Command::new("setpriv")
            .args(["--reuid=65534", "--regid=65534", "--clear-groups", BIN])
            .args(["flows", "-i", "lo", "--xdp"])
            .output()
            .expect("setpriv");
        let err = String::from_utf8_lossy(&o.stderr);
        if o.status.code() == Some(0) {
            common::skip("running as nobody still loads BPF programs here");
            return;
        }
        assert_eq!(o.status.code(), Some(2), "{err}");
        assert!(err.contains("needs root"), "{err}");
    }

    #[allow(dead_code)]
    fn _uses(_: &[Value]) {
        let _ = json_lines;
    }
}
