//! The switch that tests use to turn the fast paths off, and the tests that
//! prove each fast path gives exactly what the general path gives:
//! `Cx::discard_in_order` (a statistics-only segment in a few instructions)
//! and `Worker::prepare_plain_ipv4` (a plain Ethernet/IPv4 frame read straight
//! from its bytes in the batch path).

#[cfg(test)]
thread_local! {
    /// Tests turn the fast paths (statistics-only segments, plain IPv4
    /// frames) off to compare them with the general path.
    pub(crate) static GENERAL_PATH_ONLY: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Whether the fast paths may be taken: `Cx::discard_in_order` for a
/// segment, `Worker::prepare_plain_ipv4` for a frame (always, outside tests).
#[inline(always)]
pub(crate) fn fast_path_enabled() -> bool {
    #[cfg(test)]
    return !GENERAL_PATH_ONLY.with(|c| c.get());
    #[cfg(not(test))]
    true
}

#[cfg(test)]
mod tests {
    use super::GENERAL_PATH_ONLY;
    use crate::config::{Config, ReassemblyMode};
    use crate::dispatch::Worker;
    use crate::flow::Direction;

    /// Every flow's end as text: key, reason, history and both directions'
    /// descriptors (for comparing two runs).
    #[derive(Default)]
    struct Ends(Vec<String>);

    impl crate::deliver::Handler for Ends {
        type State = ();
        fn on_flow_end(&mut self, f: &mut crate::deliver::FlowEnd<'_, ()>) {
            self.0.push(format!(
                "{:?} {} {} {:?} {:?}",
                f.key(),
                f.end_reason().name(),
                f.history(),
                f.stream(Direction::Orig),
                f.stream(Direction::Resp)
            ));
        }
    }

    /// The statistics-only fast path (`Cx::discard_in_order`) gives exactly
    /// what the general path gives: on an impaired campus trace (reordering,
    /// loss, duplicates, conflicting retransmissions), every flow's
    /// descriptors and the global statistics are the same with it and
    /// without it, for cutoffs that make it apply.
    #[test]
    fn fast_path_equals_general_path() {
        use crate::source::{FileSource, PacketSource};

        let pcap = streamcap_gen::Campus::new(streamcap_gen::CampusConfig {
            seed: 13,
            packets: 15_000,
            concurrency: 200,
            reorder: 0.05,
            duplicate: 0.05,
            loss: 0.02,
            conflict: 0.02,
            ..streamcap_gen::CampusConfig::default()
        })
        .to_bytes()
        .0;
        let run = |cfg: &Config, general_only: bool| {
            GENERAL_PATH_ONLY.with(|c| c.set(general_only));
            let mut src = FileSource::from_bytes("fast-path", pcap.clone()).expect("pcap");
            let mut w = Worker::new(cfg.clone(), Ends::default());
            while let Some(p) = src.next_packet() {
                w.process(&p.expect("generated pcap is valid"));
            }
            let stats = w.finish();
            GENERAL_PATH_ONLY.with(|c| c.set(false));
            (w.into_handler().0, format!("{stats:?}"))
        };
        for cfg in [
            Config {
                cutoff: Some(0),
                ..Config::default()
            },
            Config {
                cutoff: Some(300),
                mode: ReassemblyMode::Strict,
                ..Config::default()
            },
        ] {
            let cfg = Config {
                measure_processing_time: false,
                ..cfg
            };
            let (fast, general) = (run(&cfg, false), run(&cfg, true));
            assert!(!fast.0.is_empty());
            assert_eq!(fast.1, general.1, "statistics, cutoff {:?}", cfg.cutoff);
            assert!(fast.0 == general.0, "flow ends, cutoff {:?}", cfg.cutoff);
        }
    }

    /// The batch path (plain IPv4 frames read straight from their bytes)
    /// gives the same flows and statistics as the general path, on
    /// generated traffic with VLAN tags, IPv6, fragments, reordering and
    /// loss, and on every capture of the corpus when it is present.
    #[test]
    fn fast_path_equals_general_path_in_batches() {
        use crate::source::{FileSource, PacketSource};

        let generated = streamcap_gen::Campus::new(streamcap_gen::CampusConfig {
            seed: 17,
            packets: 20_000,
            concurrency: 300,
            reorder: 0.05,
            loss: 0.02,
            fragment: 0.05,
            ipv6: 0.2,
            vlan: 0.2,
            ..streamcap_gen::CampusConfig::default()
        })
        .to_bytes()
        .0;
        let mut traces = vec![("generated".to_string(), generated)];
        let (corpus, files) = crate::corpus_captures();
        if files.is_empty() {
            crate::skip(format!(
                "the corpus part: no captures under {}",
                corpus.display()
            ));
        }
        for f in files {
            if let Ok(bytes) = std::fs::read(&f) {
                traces.push((f.display().to_string(), bytes));
            }
        }
        let cfg = Config {
            cutoff: Some(0),
            measure_processing_time: false,
            ..Config::default()
        };
        let run = |bytes: &[u8], general_only: bool| {
            GENERAL_PATH_ONLY.with(|c| c.set(general_only));
            let mut w = Worker::new(cfg.clone(), Ends::default());
            if let Ok(mut src) = FileSource::from_bytes("batch", bytes.to_vec()) {
                loop {
                    let mut batch = Vec::new();
                    let failed = src.next_batch(&mut batch, 32).is_some();
                    w.process_batch(&batch);
                    if failed || batch.is_empty() {
                        break;
                    }
                }
            }
            let stats = w.finish();
            GENERAL_PATH_ONLY.with(|c| c.set(false));
            (w.into_handler().0, format!("{stats:?}"))
        };
        for (name, bytes) in &traces {
            let (fast, general) = (run(bytes, false), run(bytes, true));
            assert_eq!(fast.1, general.1, "statistics of {name}");
            assert!(fast.0 == general.0, "flows of {name}");
            if name == "generated" {
                // The generated trace alone must exercise the comparison,
                // with or without the corpus beside the repository.
                assert!(fast.0.len() > 500, "{} generated flows", fast.0.len());
            }
        }
    }
}
