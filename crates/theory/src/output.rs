//! The contract's JSON for `ncclscope theory` (`/work/shared/CONTRACT.md`): `{"theory": [...]}`,
//! each entry shaped like the summary's theory entries (`parallelism`, `scope`,
//! `theoretical_bytes`, `observed_bytes`, `ratio`) plus `rank_role` and `iterations`.
//!
//! The only place in this crate that spells field names. Extra fields (allowed by the contract):
//! `theoretical_bytes_per_iteration`, `group_size`, `theoretical_bytes_by_type` (ring traffic per
//! NCCL operation name, not the summary's `count × sizeof` bytes) and `formula`. Byte counts are
//! rounded to whole bytes once, here.

use crate::config::TheoryConfig;
use crate::estimate::{estimate, TheoryEntry};
use crate::volume;
use serde_json::{json, Map, Value};

/// The whole `{"theory": [...]}` document for a config with no observation (`observed_bytes` and
/// `ratio` are `null`), plus `parameters` (the thesis' `P`) and `microbatches`.
pub fn theory_json(cfg: &TheoryConfig) -> Value {
    let entries: Vec<Value> = estimate(cfg).iter().map(|e| entry_json(e, None)).collect();
    let m = &cfg.model;
    json!({
        "theory": entries,
        "parameters": volume::parameters(m.layers, m.hidden, m.vocab, m.seq_len),
        "microbatches": cfg.microbatches(),
    })
}

/// One entry. With an observation, `ratio` is observed / theoretical, as the thesis' table 5.1
/// (1.59 / 1.51 = 1.05); it stays `null` when the theory is zero.
pub fn entry_json(entry: &TheoryEntry, observed_bytes: Option<u64>) -> Value {
    let theoretical = whole_bytes(entry.theoretical_bytes);
    let ratio = match observed_bytes {
        Some(obs) if theoretical > 0 => json!(obs as f64 / entry.theoretical_bytes),
        _ => Value::Null,
    };
    let by_type: Map<String, Value> = entry
        .by_op
        .iter()
        .map(|(op, b)| (op.name().to_string(), json!(whole_bytes(*b))))
        .collect();
    json!({
        "parallelism": entry.parallelism.name(),
        "scope": "per-rank",
        "rank_role": entry.rank_role.name(),
        "iterations": entry.iterations,
        "theoretical_bytes": theoretical,
        "observed_bytes": observed_bytes,
        "ratio": ratio,
        "theoretical_bytes_per_iteration": whole_bytes(entry.bytes_per_iteration),
        "group_size": entry.group_size,
        "theoretical_bytes_by_type": by_type,
        "formula": entry.formula,
    })
}

/// Volumes are non-negative and far below 2⁶³, so rounding to `u64` loses nothing that matters.
fn whole_bytes(x: f64) -> u64 {
    if x.is_finite() && x > 0.0 {
        x.round() as u64
    } else {
        0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thesis_dense_document() {
        let v = theory_json(&TheoryConfig::thesis_dense());
        assert_eq!(v["parameters"], 50_391_121);
        assert_eq!(v["microbatches"], 4);
        let list = v["theory"].as_array().unwrap();
        assert_eq!(list.len(), 1);
        let dp = &list[0];
        assert_eq!(dp["parallelism"], "DP");
        assert_eq!(dp["scope"], "per-rank");
        assert_eq!(dp["rank_role"], "all");
        assert_eq!(dp["iterations"], 10);
        // 10 × 151 173 363.3 bytes.
        assert_eq!(dp["theoretical_bytes"], 1_511_733_630u64);
        assert_eq!(dp["theoretical_bytes_per_iteration"], 151_173_363u64);
        assert!(dp["observed_bytes"].is_null());
        assert!(dp["ratio"].is_null());
        assert_eq!(
            dp["theoretical_bytes_by_type"]["AllReduce"],
            1_511_733_630u64
        );
    }

    #[test]
    fn pipeline_roles_and_moe_sum() {
        let cfg = TheoryConfig::from_toml("[parallel]\npp = 4\ndp = 1\n").unwrap();
        let v = theory_json(&cfg);
        let roles: Vec<_> = v["theory"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| {
                (
                    e["parallelism"].as_str().unwrap(),
                    e["rank_role"].as_str().unwrap(),
                )
            })
            .collect();
        assert_eq!(roles, [("PP", "edge"), ("PP", "middle")]);
        assert_eq!(v["theory"][0]["theoretical_bytes"], 1_342_177_280u64);
        assert_eq!(v["theory"][1]["theoretical_bytes"], 2_684_354_560u64);

        let moe = theory_json(&TheoryConfig::thesis_moe());
        let all = moe["theory"]
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["parallelism"] == "all")
            .unwrap();
        let gb = all["theoretical_bytes"].as_u64().unwrap() as f64 / 1e9;
        assert_eq!((gb * 100.0).round() / 100.0, 3.15);
    }

    #[test]
    fn ratio_with_observation() {
        let e = &estimate(&TheoryConfig::thesis_dense())[0];
        // The thesis' observed 1.59 GB per rank gives its 1.05×.
        let v = entry_json(e, Some(1_590_000_000));
        assert_eq!(v["observed_bytes"], 1_590_000_000u64);
        let r = v["ratio"].as_f64().unwrap();
        assert_eq!((r * 100.0).round() / 100.0, 1.05);
    }
}
