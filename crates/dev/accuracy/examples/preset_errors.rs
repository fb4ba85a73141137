//! Lists the wrong and missing pairs of our alignment on one preset (developer aid):
//! `cargo run --release -p accuracy --example preset_errors -- demo [--no-timestamps]`.

use accuracy::{rank_inputs, RankInput};
use align::{align_all, AlignConfig, ProcessInput};
use std::collections::HashSet;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let name = &args[0];
    let preset = synth::preset(name).expect("a preset");
    let mut cfg = preset.config;
    if args.iter().any(|a| a == "--no-timestamps") {
        cfg.timestamps = false;
    }
    let run = synth::generate_named(&cfg, Some(name));
    let ranks = rank_inputs(&run).expect("parses");
    let inputs: Vec<ProcessInput<'_>> = ranks.iter().map(RankInput::input).collect();
    let al = align_all(&inputs, &AlignConfig::rich());
    for (r, a) in ranks.iter().zip(&al) {
        let p: HashSet<_> = a.pairs().into_iter().collect();
        let t: HashSet<_> = r.truth.iter().copied().collect();
        let show = |(l, k): (usize, usize)| {
            let o = &r.log_ops[l];
            let kn = &r.kernels[k];
            format!(
                "line {l} {:?} comm {:x} opc {} count {} t {:?} | kernel {k} {} start {} launch {:?} (launch - line {:?})",
                o.op,
                o.comm & 0xffff,
                o.op_count,
                o.count,
                o.timestamp_ns,
                kn.name.chars().take(40).collect::<String>(),
                kn.start_ns,
                kn.launch_ns,
                kn.launch_ns.zip(o.timestamp_ns).map(|(a, b)| a - b)
            )
        };
        let mut fp: Vec<_> = p.difference(&t).copied().collect();
        let mut fn_: Vec<_> = t.difference(&p).copied().collect();
        fp.sort();
        fn_.sort();
        println!(
            "== {} pid {}: {} log ops, {} kernels, {} wrong, {} missed",
            r.process.host,
            r.process.pid,
            r.log_ops.len(),
            r.kernels.len(),
            fp.len(),
            fn_.len()
        );
        for x in fp.iter().take(12) {
            println!("  wrong  {}", show(*x));
        }
        for x in fn_.iter().take(12) {
            println!("  missed {}", show(*x));
        }
    }
}
