//! The config as a form: every key of the contract's TOML as one text field, and back.
//!
//! Why text fields and TOML: the page's form, the command's `--config FILE` and a shared link all
//! carry the same thing, so they share one format and one validation ([`TheoryConfig::from_toml`]).
//! A form is a map from `section.key` to the text the user typed; [`to_toml`] writes it as the
//! contract's TOML (values typed by the field's kind, empty fields left out so defaults apply).

use crate::config::{Dispatcher, TheoryConfig};
use std::collections::BTreeMap;

/// How a field's text is written into TOML.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Integer,
    Number,
    Flag,
    /// One of a few words (written as a TOML string).
    Choice(&'static [&'static str]),
}

/// One field of the form.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Field {
    pub section: &'static str,
    pub key: &'static str,
    pub label: &'static str,
    pub kind: Kind,
}

impl Field {
    /// `section.key`, the field's name in a [`Form`].
    pub fn name(&self) -> String {
        format!("{}.{}", self.section, self.key)
    }
}

const fn f(section: &'static str, key: &'static str, label: &'static str, kind: Kind) -> Field {
    Field {
        section,
        key,
        label,
        kind,
    }
}

/// Every field, in the contract's order.
pub const FIELDS: &[Field] = &[
    f("model", "layers", "layers l", Kind::Integer),
    f("model", "hidden", "hidden size h", Kind::Integer),
    f("model", "heads", "attention heads", Kind::Integer),
    f("model", "seq_len", "sequence length s", Kind::Integer),
    f("model", "vocab", "vocabulary V", Kind::Integer),
    f("model", "micro_batch", "microbatch size b", Kind::Integer),
    f("model", "global_batch", "global batch B", Kind::Integer),
    f(
        "model",
        "microbatches",
        "microbatches per iteration (empty: B / (b·DP))",
        Kind::Integer,
    ),
    f("model", "iterations", "iterations", Kind::Integer),
    f(
        "model",
        "bytes_per_element",
        "bytes per element β",
        Kind::Integer,
    ),
    f("parallel", "tp", "TP", Kind::Integer),
    f("parallel", "pp", "PP", Kind::Integer),
    f("parallel", "dp", "DP", Kind::Integer),
    f("parallel", "ep", "EP", Kind::Integer),
    f("parallel", "cp", "CP", Kind::Integer),
    f(
        "parallel",
        "sequence_parallel",
        "sequence parallelism",
        Kind::Flag,
    ),
    f(
        "parallel",
        "virtual_stages",
        "virtual pipeline stages",
        Kind::Integer,
    ),
    f(
        "parallel",
        "distributed_optimizer",
        "distributed optimizer (ZeRO-1)",
        Kind::Flag,
    ),
    f(
        "moe",
        "experts",
        "experts (empty: dense model)",
        Kind::Integer,
    ),
    f("moe", "top_k", "top-k", Kind::Integer),
    f("moe", "moe_layers", "MoE layers", Kind::Integer),
    f("moe", "capacity_factor", "capacity factor", Kind::Number),
    f(
        "moe",
        "dispatcher",
        "token dispatcher",
        Kind::Choice(&["alltoall", "allgather"]),
    ),
];

/// The text of every field, by [`Field::name`].
pub type Form = BTreeMap<String, String>;

/// A config's values as a form (the MoE fields empty for a dense model).
pub fn form_of(cfg: &TheoryConfig) -> Form {
    let m = &cfg.model;
    let p = &cfg.parallel;
    let mut v: Vec<(&str, String)> = vec![
        ("model.layers", m.layers.to_string()),
        ("model.hidden", m.hidden.to_string()),
        ("model.heads", m.heads.to_string()),
        ("model.seq_len", m.seq_len.to_string()),
        ("model.vocab", m.vocab.to_string()),
        ("model.micro_batch", m.micro_batch.to_string()),
        ("model.global_batch", m.global_batch.to_string()),
        (
            "model.microbatches",
            m.microbatches.map_or(String::new(), |n| n.to_string()),
        ),
        ("model.iterations", m.iterations.to_string()),
        ("model.bytes_per_element", m.bytes_per_element.to_string()),
        ("parallel.tp", p.tp.to_string()),
        ("parallel.pp", p.pp.to_string()),
        ("parallel.dp", p.dp.to_string()),
        ("parallel.ep", p.ep.to_string()),
        ("parallel.cp", p.cp.to_string()),
        (
            "parallel.sequence_parallel",
            p.sequence_parallel.to_string(),
        ),
        ("parallel.virtual_stages", p.virtual_stages.to_string()),
        (
            "parallel.distributed_optimizer",
            p.distributed_optimizer.to_string(),
        ),
    ];
    match &cfg.moe {
        Some(moe) => v.extend([
            ("moe.experts", moe.experts.to_string()),
            ("moe.top_k", moe.top_k.to_string()),
            ("moe.moe_layers", moe.moe_layers.to_string()),
            ("moe.capacity_factor", moe.capacity_factor.to_string()),
            (
                "moe.dispatcher",
                match moe.dispatcher {
                    Dispatcher::AllToAll => "alltoall",
                    Dispatcher::AllGather => "allgather",
                }
                .to_string(),
            ),
        ]),
        None => v.extend(
            [
                "moe.experts",
                "moe.top_k",
                "moe.moe_layers",
                "moe.capacity_factor",
                "moe.dispatcher",
            ]
            .map(|k| (k, String::new())),
        ),
    }
    v.into_iter().map(|(k, s)| (k.to_string(), s)).collect()
}

/// The form as the contract's TOML. Empty fields are left out (their defaults apply), and the
/// `[moe]` table only appears when `moe.experts` is filled. Text is written as the field's kind
/// asks; what is not a number stays a string, so [`TheoryConfig::from_toml`] names the key.
pub fn to_toml(form: &Form) -> String {
    let moe = form
        .get("moe.experts")
        .is_some_and(|v| !v.trim().is_empty());
    let mut out = String::new();
    let mut section = "";
    for field in FIELDS {
        if field.section == "moe" && !moe {
            continue;
        }
        let Some(text) = form.get(&field.name()).map(|t| t.trim()) else {
            continue;
        };
        if text.is_empty() {
            continue;
        }
        if field.section != section {
            section = field.section;
            out.push_str(&format!("[{section}]\n"));
        }
        let value = match field.kind {
            Kind::Integer if text.parse::<i64>().is_ok() => text.to_string(),
            Kind::Number if text.parse::<f64>().is_ok_and(f64::is_finite) => {
                if text.contains(['.', 'e', 'E']) {
                    text.to_string()
                } else {
                    format!("{text}.0")
                }
            }
            Kind::Flag if text == "true" || text == "false" => text.to_string(),
            // Anything else goes in as a string: the parser then says which key is wrong.
            _ => toml_string(text),
        };
        out.push_str(&format!("{} = {value}\n", field.key));
    }
    out
}

/// A TOML basic string: quotes and backslashes escaped, control characters dropped.
fn toml_string(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if c.is_control() => {}
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// The config a form describes, or the first problem, naming the key.
pub fn config_of(form: &Form) -> Result<TheoryConfig, String> {
    TheoryConfig::from_toml(&to_toml(form))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forms_round_trip_the_thesis_models() {
        for cfg in [TheoryConfig::thesis_dense(), TheoryConfig::thesis_moe()] {
            assert_eq!(config_of(&form_of(&cfg)), Ok(cfg.clone()));
        }
    }

    #[test]
    fn every_field_is_in_the_form_and_typos_name_their_key() {
        let form = form_of(&TheoryConfig::thesis_moe());
        for f in FIELDS {
            assert!(form.contains_key(&f.name()), "{}", f.name());
        }
        let mut bad = form.clone();
        bad.insert("parallel.tp".into(), "four".into());
        let err = config_of(&bad).unwrap_err();
        assert!(err.contains("tp"), "{err}");
        let mut hostile = form;
        hostile.insert("moe.dispatcher".into(), "\"]\n[model]\nlayers = 0 #".into());
        let err = config_of(&hostile).unwrap_err();
        assert!(err.contains("dispatcher"), "{err}");
    }

    #[test]
    fn a_dense_form_has_no_moe_table() {
        let toml = to_toml(&form_of(&TheoryConfig::thesis_dense()));
        assert!(!toml.contains("[moe]"), "{toml}");
        assert!(toml.contains("[parallel]\ntp = 1\n"), "{toml}");
    }
}
