//! Developer aid: where one seed of one scenario goes wrong (`SCENARIO TS SEED`, e.g. `1 0 4`).
use align::{align_all, AlignConfig};
use std::collections::HashSet;

fn main() {
    let a: Vec<String> = std::env::args().collect();
    let (si, ts, seed): (usize, bool, u64) =
        (a[1].parse().unwrap(), a[2] == "1", a[3].parse().unwrap());
    let ranks = accuracy::sweep::generate(&accuracy::SCENARIOS[si], ts, seed).unwrap();
    let inputs: Vec<_> = ranks.iter().map(|r| r.input()).collect();
    let hints = align::consensus::call_hints(
        &inputs,
        &align_all(
            &inputs,
            &AlignConfig {
                consensus: false,
                ..AlignConfig::rich()
            },
        ),
    );
    let out = align_all(&inputs, &AlignConfig::rich());
    if let Ok(c) = std::env::var("OPC") {
        let c: u64 = c.parse().unwrap();
        for r in &ranks {
            let ls: Vec<_> = r
                .log_ops
                .iter()
                .enumerate()
                .filter(|(_, o)| {
                    o.op_count == c
                        && o.stream == r.log_ops.iter().find(|x| x.op_count == c).unwrap().stream
                })
                .map(|(l, o)| (l, o.op, format!("{:x}", o.comm)))
                .collect();
            let ks: Vec<_> = r
                .truth
                .iter()
                .filter(|(l, _)| ls.iter().any(|x| x.0 == *l))
                .map(|&(_, k)| {
                    (
                        k,
                        r.kernels[k].name.chars().take(30).collect::<String>(),
                        r.kernels[k].start_ns,
                    )
                })
                .collect();
            println!("opc {c}: log {:?} kernels {:?}", ls, ks);
        }
    }
    for ((r, al), h) in ranks.iter().zip(&out).zip(&hints) {
        let truth: HashSet<_> = r.truth.iter().copied().collect();
        let pairs = al.pairs();
        let tp = pairs.iter().filter(|p| truth.contains(p)).count();
        println!(
            "{:?}: log {} kernels {} truth {} pred {} tp {}",
            r.process,
            r.log_ops.len(),
            r.kernels.len(),
            truth.len(),
            pairs.len(),
            tp
        );
        // Hints against the truth.
        let mut bad = 0;
        for &(l, k) in &r.truth {
            let o = &r.log_ops[l];
            if let Some(hk) = h[k] {
                if hk != (o.comm, o.op_count) {
                    if bad < 4 {
                        println!(
                            "  hint k{k} {:?} truth {:?} {:?}",
                            hk,
                            (o.comm, o.op_count),
                            o.op
                        );
                    }
                    bad += 1;
                }
            }
        }
        let mut last = None;
        for &(l, k) in &r.truth {
            let o = &r.log_ops[l];
            if let Some(hk) = h[k] {
                let d = hk.1 as i64 - o.op_count as i64;
                if last != Some(d) {
                    println!(
                        "  shift {d} from k{k} s{} comm {:x} opc {} {:?} start {} end {}",
                        r.kernels[k].stream,
                        o.comm,
                        o.op_count,
                        o.op,
                        r.kernels[k].start_ns,
                        r.kernels[k].end_ns
                    );
                    last = Some(d);
                }
            }
        }
        println!(
            "  wrong hints {bad}, hinted {}",
            h.iter().filter(|x| x.is_some()).count()
        );
    }
}
