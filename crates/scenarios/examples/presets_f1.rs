//! F1 of the thesis' method and ours (with and without the cross-rank consensus) on generator
//! presets named on the command line, against the generator's truth (developer aid):
//! `cargo run --release -p scenarios --example presets_f1 -- dp4 tp2pp2 demo`.
//!
//! Note: where NCCL splits one Send/Recv group over several kernels, the truth pairs every line
//! of the group with every kernel, which a one-line-one-kernel alignment cannot reach.

use align::metrics::{score_pairs, Prf};
use align::{align_all, AlignConfig};

fn main() {
    let names: Vec<String> = std::env::args().skip(1).collect();
    for p in synth::presets() {
        if !names.iter().any(|n| n == p.name) {
            continue;
        }
        let run = synth::generate_named(&p.config, Some(p.name));
        let ranks = scenarios::rank_inputs(&run).expect("the preset parses");
        let inputs: Vec<_> = ranks.iter().map(|r| r.input()).collect();
        let methods = [
            ("thesis", AlignConfig::thesis()),
            ("ours", AlignConfig::rich()),
            (
                "ours, no consensus",
                AlignConfig {
                    consensus: false,
                    ..AlignConfig::rich()
                },
            ),
        ];
        for (label, cfg) in methods {
            let al = align_all(&inputs, &cfg);
            let parts: Vec<Prf> = ranks
                .iter()
                .zip(&al)
                .map(|(r, a)| score_pairs(&a.pairs(), &r.truth))
                .collect();
            let prf = Prf::pool(&parts);
            println!(
                "{:<16} {label:<20} ranks {:>2}  P {:.3} R {:.3} F1 {:.3}",
                p.name,
                ranks.len(),
                prf.precision,
                prf.recall,
                prf.f1
            );
        }
    }
}
