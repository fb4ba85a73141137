//! F1 of the thesis' method and ours (with and without the cross-rank consensus) on generator
//! presets named on the command line, per pair and per call ([`accuracy::presets`]), against
//! the generator's truth (developer aid):
//! `cargo run --release -p accuracy --example presets_f1 -- dp4 tp2pp2 demo [--timestamps | --no-timestamps]`;
//! no preset named: every small one, each with its own timestamp setting.

use accuracy::score_preset;
use align::AlignConfig;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let timestamps = if args.iter().any(|a| a == "--timestamps") {
        Some(true)
    } else if args.iter().any(|a| a == "--no-timestamps") {
        Some(false)
    } else {
        None
    };
    let mut names: Vec<&str> = args
        .iter()
        .filter(|a| !a.starts_with("--"))
        .map(String::as_str)
        .collect();
    if names.is_empty() {
        names = accuracy::presets::small_presets();
    }
    for name in names {
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
            match score_preset(name, timestamps, &cfg) {
                Ok(s) => println!(
                    "{:<16} {label:<20} ranks {:>2} ts {:<5}  pairs P {:.3} R {:.3} F1 {:.3}  calls F1 {:.3}{}",
                    s.preset,
                    s.ranks,
                    s.timestamps,
                    s.pairs.precision,
                    s.pairs.recall,
                    s.pairs.f1,
                    s.calls.f1,
                    if s.split_groups { "  (groups split over kernels)" } else { "" }
                ),
                Err(e) => println!("{name}: {e}"),
            }
        }
    }
}
