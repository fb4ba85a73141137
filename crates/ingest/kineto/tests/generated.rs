//! The reader against the generator's truth, in every combination of the variations a trace
//! can show (`synth::kineto::KinetoStyle::variations`: fields on the kernel or not, on the CPU
//! side or only first tensors, `Seq`, old `External id`s, process groups or none, naming,
//! layout, time base, `distributedInfo` before or after), plain and gzip, on layouts with
//! collectives, pipeline sends and receives and all-to-all.

use ingest_kineto::{parse_bytes, KinetoTrace};
use synth::kineto::{KinetoRun, KinetoStyle, KinetoTruth, TraceTruth};

fn gzip(bytes: &[u8]) -> Vec<u8> {
    use std::io::Write;
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    e.write_all(bytes).unwrap();
    e.finish().unwrap()
}

/// Compares one rank's reading with its truth, kernel by kernel.
fn check(what: &str, t: &KinetoTrace, truth: &TraceTruth, run: &KinetoTruth) {
    assert!(t.complete, "{what}: {:?}", t.diagnostics);
    assert!(t.diagnostics.is_empty(), "{what}: {:?}", t.diagnostics);
    assert_eq!(t.counts.events, truth.events, "{what}");
    assert_eq!(t.cpu_pid, Some(truth.pid), "{what}");
    assert_eq!(t.kernels.len(), truth.kernels.len(), "{what}");
    let style = &run.style;
    for w in &truth.kernels {
        let k = t
            .kernels
            .iter()
            .find(|k| k.correlation == w.correlation)
            .unwrap_or_else(|| panic!("{what}: kernel {} not read", w.correlation));
        let at = format!("{what}, kernel {} ({})", w.correlation, w.name);
        assert_eq!(&*k.name, w.name, "{at}");
        assert_eq!((k.start_ns, k.end_ns), (w.start_ns, w.end_ns), "{at}");
        assert_eq!(k.stream, w.stream, "{at}");
        assert_eq!(k.device, truth.device, "{at}");
        let c = &k.coll;
        assert_eq!(
            c.op.map(|o| o.name().to_string()),
            Some(w.op.clone()),
            "{at}"
        );
        assert_eq!(c.in_nelems, w.in_nelems, "{at}");
        assert_eq!(c.out_nelems, w.out_nelems, "{at}");
        assert_eq!(c.datatype.map(|d| d.name().to_string()), w.datatype, "{at}");
        assert_eq!(c.pg_name.as_deref(), w.pg_name.as_deref(), "{at}");
        assert_eq!(c.group_size, w.group_size, "{at}");
        assert_eq!(c.seq, w.seq, "{at}");
        assert_eq!(
            c.source.map(|s| s.name().to_string()),
            Some(w.source.clone()),
            "{at}"
        );
        if w.pg_name.is_some() {
            let g = &run.groups[w.group];
            assert_eq!(c.pg_ranks.as_deref(), Some(&g.global_ranks[..]), "{at}");
            assert_eq!(c.pg_desc.as_deref(), Some(g.pg_desc.as_str()), "{at}");
        }
        assert!(k.launch.is_some(), "{at}: its launch is kept");
        if w.source != "kernel name" && style.record_args {
            assert_eq!(c.nccl_count(), w.nccl_count, "{at}");
        }
    }
    let steps: Vec<(u64, i64, i64)> = t
        .steps
        .iter()
        .map(|s| (s.step, s.start_ns, s.end_ns))
        .collect();
    assert_eq!(steps, truth.steps, "{what}");
    let d = t.distributed.as_ref().expect("distributedInfo");
    assert_eq!(
        (d.rank, d.world_size),
        (Some(truth.global_rank), Some(run.world)),
        "{what}"
    );
    if style.process_groups {
        assert_eq!(d.pg_config.len(), run.groups.len(), "{what}");
        for (g, w) in d.pg_config.iter().zip(&run.groups) {
            assert_eq!(
                (&g.name, g.desc.as_deref(), &g.ranks),
                (&w.pg_name, Some(w.pg_desc.as_str()), &w.global_ranks)
            );
        }
        assert_eq!(d.nccl_version.as_deref(), Some(run.nccl_version.as_str()));
    } else {
        assert!(d.pg_config.is_empty(), "{what}");
    }
}

#[test]
fn every_style_reads_back_to_its_truth() {
    for preset in ["tp2pp2", "ep4-alltoall"] {
        let cfg = synth::preset(preset).unwrap().config;
        let run = KinetoRun::new(&cfg);
        for (i, style) in KinetoStyle::variations().into_iter().enumerate() {
            // One rank per style, a different one each time.
            let ranks = [i as u32 % run.world()];
            let mut traces = Vec::new();
            let mut bytes = Vec::new();
            for &r in &ranks {
                let mut b = Vec::new();
                traces.push(run.write_rank(r, &style, &mut b).unwrap());
                bytes.push(b);
            }
            let truth = KinetoTruth {
                style,
                world: run.world(),
                nccl_version: cfg.nccl_version.clone(),
                groups: run.groups(&style),
                ranks: traces,
            };
            for (b, rt) in bytes.iter().zip(&truth.ranks) {
                let what = format!("{preset}, style {i} {style:?}, rank {}", rt.global_rank);
                let input = if i % 2 == 0 { gzip(b) } else { b.clone() };
                check(&what, &parse_bytes("gen", &input), rt, &truth);
            }
        }
    }
}

/// Kinds of kernels the layouts make: every operation the generator writes is among them, so
/// the cross product above covered collectives, single and batched sends and all-to-all.
#[test]
fn the_layouts_cover_every_kind_of_call() {
    let mut ops = std::collections::BTreeSet::new();
    for preset in ["tp2pp2", "ep4-alltoall"] {
        let cfg = synth::preset(preset).unwrap().config;
        let run = KinetoRun::new(&cfg);
        for r in 0..run.world() {
            let t = run
                .write_rank(r, &KinetoStyle::modern(), &mut std::io::sink())
                .unwrap();
            ops.extend(t.kernels.iter().map(|k| (k.op.clone(), k.source.clone())));
        }
    }
    for want in [
        ("AllReduce", "kernel arguments"),
        ("AllToAll", "kernel arguments"),
        ("SendRecv", "kernel name"),
    ] {
        assert!(
            ops.contains(&(want.0.to_string(), want.1.to_string())),
            "{want:?} not generated: {ops:?}"
        );
    }
}
