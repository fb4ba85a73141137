//! The model and layout the formulas need, and its TOML form (`/work/shared/CONTRACT.md`,
//! `ncclscope theory --config FILE`).
//!
//! Every key is optional. Missing keys take the thesis' dense model (§5.2.1–5.2.2: 16 layers,
//! hidden 512, 8 heads, sequence 1024, GPT-2 vocabulary 50 257, micro-batch 4, global batch 64,
//! 10 iterations, 2-byte elements) on DP=4. `[moe]` is present only for MoE models; a present but
//! empty `[moe]` table takes the thesis' MoE variant (4 experts, top-1, 4 MoE layers, capacity 1.0,
//! AlltoAll dispatcher).
//!
//! The public types carry no serde derive: the TOML shape is private to this module (serialization
//! lives at the edge), so a renamed key never leaks into the formulas.

use serde::Deserialize;

/// Transformer shape and batch. Names follow the contract's `[model]` keys.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelSpec {
    /// Transformer layers `l` (the thesis' `L`).
    pub layers: u64,
    /// Hidden size `h`.
    pub hidden: u64,
    /// Attention heads (not used by the volume formulas; kept for the view and checks).
    pub heads: u64,
    /// Sequence length `s`.
    pub seq_len: u64,
    /// Vocabulary size `V`.
    pub vocab: u64,
    /// Micro-batch size `b`.
    pub micro_batch: u64,
    /// Global batch `B` (samples per iteration, all data-parallel replicas together).
    pub global_batch: u64,
    /// Microbatches per iteration per pipeline, when given explicitly. `None` means
    /// `global_batch / (micro_batch · dp)` (thesis §2.4.3: `m = B / (b · n_DP)`), see
    /// [`TheoryConfig::microbatches`].
    pub microbatches: Option<u64>,
    /// Training iterations the totals cover.
    pub iterations: u64,
    /// Bytes per element `β` (2 for FP16/BF16).
    pub bytes_per_element: u64,
}

/// Parallel layout. Names follow the contract's `[parallel]` keys.
#[derive(Debug, Clone, PartialEq)]
pub struct ParallelSpec {
    pub tp: u64,
    pub pp: u64,
    pub dp: u64,
    pub ep: u64,
    pub cp: u64,
    /// Megatron sequence parallelism: TP's AllReduce become AllGather + ReduceScatter.
    pub sequence_parallel: bool,
    /// Virtual pipeline (interleaved 1F1B) model chunks per pipeline rank, `v`.
    pub virtual_stages: u64,
    /// ZeRO-1 / Megatron distributed optimizer: DP's AllReduce becomes ReduceScatter + AllGather.
    pub distributed_optimizer: bool,
}

/// How MoE tokens reach their experts (thesis §2.4.5).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dispatcher {
    AllToAll,
    AllGather,
}

/// Mixture-of-experts part of the model. Names follow the contract's `[moe]` keys.
#[derive(Debug, Clone, PartialEq)]
pub struct MoeSpec {
    pub experts: u64,
    /// Experts per token `k`.
    pub top_k: u64,
    /// Transformer layers whose MLP is an MoE layer (all pipeline stages together).
    pub moe_layers: u64,
    pub capacity_factor: f64,
    pub dispatcher: Dispatcher,
}

/// Everything the theory needs: model, layout and, for MoE models, the expert part.
#[derive(Debug, Clone, PartialEq)]
pub struct TheoryConfig {
    pub model: ModelSpec,
    pub parallel: ParallelSpec,
    pub moe: Option<MoeSpec>,
}

impl Default for ModelSpec {
    /// The thesis' `dense` model (§5.2.1) with its training settings (§5.2.2).
    fn default() -> Self {
        ModelSpec {
            layers: 16,
            hidden: 512,
            heads: 8,
            seq_len: 1024,
            vocab: 50_257,
            micro_batch: 4,
            global_batch: 64,
            microbatches: None,
            iterations: 10,
            bytes_per_element: 2,
        }
    }
}

impl Default for ParallelSpec {
    /// DP=4 on the thesis' 4 GPUs, nothing else.
    fn default() -> Self {
        ParallelSpec {
            tp: 1,
            pp: 1,
            dp: 4,
            ep: 1,
            cp: 1,
            sequence_parallel: false,
            virtual_stages: 1,
            distributed_optimizer: false,
        }
    }
}

impl Default for MoeSpec {
    /// The thesis' `dense_moe` variant (§5.2.1): 4 experts, top-1, MoE on layers 1, 3, 5, 7.
    fn default() -> Self {
        MoeSpec {
            experts: 4,
            top_k: 1,
            moe_layers: 4,
            capacity_factor: 1.0,
            dispatcher: Dispatcher::AllToAll,
        }
    }
}

impl Default for TheoryConfig {
    fn default() -> Self {
        TheoryConfig::thesis_dense()
    }
}

impl TheoryConfig {
    /// The thesis' dense model on DP=4 (§5.2.1, §5.3.5 "DP=4").
    pub fn thesis_dense() -> Self {
        TheoryConfig {
            model: ModelSpec::default(),
            parallel: ParallelSpec::default(),
            moe: None,
        }
    }

    /// The thesis' MoE model on EP=4 (§5.2.1, §5.3.5 "EP=4"): the dense shape with 4 experts,
    /// top-1, 4 MoE layers, AlltoAll dispatcher; EP=4 inside DP=4 on 4 GPUs, as Megatron lays
    /// out experts across the data-parallel ranks.
    pub fn thesis_moe() -> Self {
        TheoryConfig {
            model: ModelSpec::default(),
            parallel: ParallelSpec {
                ep: 4,
                ..ParallelSpec::default()
            },
            moe: Some(MoeSpec::default()),
        }
    }

    /// Microbatches per iteration per pipeline: the explicit `model.microbatches`, else
    /// `global_batch / (micro_batch · dp)` (thesis §2.4.3, eq. 5.1), at least 1.
    pub fn microbatches(&self) -> u64 {
        self.model.microbatches.unwrap_or_else(|| {
            let per_step = self.model.micro_batch * self.parallel.dp;
            (self.model.global_batch / per_step.max(1)).max(1)
        })
    }

    /// GPUs in the layout: `tp · cp · dp · pp` (EP is carved out of the data-parallel ranks, as
    /// in Megatron, so it does not multiply the world).
    pub fn world_size(&self) -> u64 {
        let p = &self.parallel;
        p.tp * p.cp * p.dp * p.pp
    }

    /// Parses the contract's TOML. Unknown keys, wrong types and impossible values are errors that
    /// name the key (and, for TOML errors, the line and column).
    pub fn from_toml(text: &str) -> Result<TheoryConfig, String> {
        let raw: RawConfig = toml::from_str(text).map_err(|e| e.to_string())?;
        let cfg = raw.resolve()?;
        cfg.validate()?;
        Ok(cfg)
    }

    /// Checks the values the formulas divide by or rely on. Errors name the key.
    pub fn validate(&self) -> Result<(), String> {
        let m = &self.model;
        let p = &self.parallel;
        let at_least_one = [
            ("model.layers", m.layers),
            ("model.hidden", m.hidden),
            ("model.heads", m.heads),
            ("model.seq_len", m.seq_len),
            ("model.micro_batch", m.micro_batch),
            ("model.global_batch", m.global_batch),
            ("model.bytes_per_element", m.bytes_per_element),
            ("parallel.tp", p.tp),
            ("parallel.pp", p.pp),
            ("parallel.dp", p.dp),
            ("parallel.ep", p.ep),
            ("parallel.cp", p.cp),
            ("parallel.virtual_stages", p.virtual_stages),
        ];
        for (key, value) in at_least_one {
            if value == 0 {
                return Err(format!("{key} must be at least 1"));
            }
        }
        if m.microbatches == Some(0) {
            return Err("model.microbatches must be at least 1".into());
        }
        if m.microbatches.is_none() && !m.global_batch.is_multiple_of(m.micro_batch * p.dp) {
            return Err(format!(
                "model.global_batch ({}) is not a multiple of model.micro_batch × parallel.dp ({}); \
                 set model.microbatches",
                m.global_batch,
                m.micro_batch * p.dp
            ));
        }
        if m.layers < p.pp * p.virtual_stages {
            return Err(format!(
                "model.layers ({}) is smaller than parallel.pp × parallel.virtual_stages ({})",
                m.layers,
                p.pp * p.virtual_stages
            ));
        }
        if let Some(moe) = &self.moe {
            if moe.experts == 0 {
                return Err("moe.experts must be at least 1".into());
            }
            if moe.top_k == 0 || moe.top_k > moe.experts {
                return Err(format!(
                    "moe.top_k must be between 1 and moe.experts ({})",
                    moe.experts
                ));
            }
            if moe.moe_layers > m.layers {
                return Err(format!(
                    "moe.moe_layers ({}) exceeds model.layers ({})",
                    moe.moe_layers, m.layers
                ));
            }
            if !(moe.capacity_factor.is_finite() && moe.capacity_factor > 0.0) {
                return Err("moe.capacity_factor must be a positive number".into());
            }
            // Thesis §5.2.1: "EP degree must evenly divide the number of experts".
            if !moe.experts.is_multiple_of(p.ep) {
                return Err(format!(
                    "parallel.ep ({}) must divide moe.experts ({})",
                    p.ep, moe.experts
                ));
            }
        }
        Ok(())
    }
}

// The TOML shape: every field optional so a partial file keeps the thesis defaults, and unknown
// keys are refused so a typo (`tp_size = 4`) is not silently ignored.

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawConfig {
    model: Option<RawModel>,
    parallel: Option<RawParallel>,
    moe: Option<RawMoe>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawModel {
    layers: Option<u64>,
    hidden: Option<u64>,
    heads: Option<u64>,
    seq_len: Option<u64>,
    vocab: Option<u64>,
    micro_batch: Option<u64>,
    global_batch: Option<u64>,
    microbatches: Option<u64>,
    iterations: Option<u64>,
    bytes_per_element: Option<u64>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawParallel {
    tp: Option<u64>,
    pp: Option<u64>,
    dp: Option<u64>,
    ep: Option<u64>,
    cp: Option<u64>,
    sequence_parallel: Option<bool>,
    virtual_stages: Option<u64>,
    distributed_optimizer: Option<bool>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawMoe {
    experts: Option<u64>,
    top_k: Option<u64>,
    moe_layers: Option<u64>,
    capacity_factor: Option<f64>,
    dispatcher: Option<String>,
}

impl RawConfig {
    fn resolve(self) -> Result<TheoryConfig, String> {
        let dm = ModelSpec::default();
        let m = self.model.unwrap_or_default();
        let model = ModelSpec {
            layers: m.layers.unwrap_or(dm.layers),
            hidden: m.hidden.unwrap_or(dm.hidden),
            heads: m.heads.unwrap_or(dm.heads),
            seq_len: m.seq_len.unwrap_or(dm.seq_len),
            vocab: m.vocab.unwrap_or(dm.vocab),
            micro_batch: m.micro_batch.unwrap_or(dm.micro_batch),
            global_batch: m.global_batch.unwrap_or(dm.global_batch),
            microbatches: m.microbatches,
            iterations: m.iterations.unwrap_or(dm.iterations),
            bytes_per_element: m.bytes_per_element.unwrap_or(dm.bytes_per_element),
        };
        let dp = ParallelSpec::default();
        let p = self.parallel.unwrap_or_default();
        let parallel = ParallelSpec {
            tp: p.tp.unwrap_or(dp.tp),
            pp: p.pp.unwrap_or(dp.pp),
            dp: p.dp.unwrap_or(dp.dp),
            ep: p.ep.unwrap_or(dp.ep),
            cp: p.cp.unwrap_or(dp.cp),
            sequence_parallel: p.sequence_parallel.unwrap_or(dp.sequence_parallel),
            virtual_stages: p.virtual_stages.unwrap_or(dp.virtual_stages),
            distributed_optimizer: p.distributed_optimizer.unwrap_or(dp.distributed_optimizer),
        };
        let moe = match self.moe {
            None => None,
            Some(r) => {
                let d = MoeSpec::default();
                let dispatcher = match r.dispatcher.as_deref() {
                    None => d.dispatcher,
                    Some(s) => parse_dispatcher(s)?,
                };
                Some(MoeSpec {
                    experts: r.experts.unwrap_or(d.experts),
                    top_k: r.top_k.unwrap_or(d.top_k),
                    moe_layers: r.moe_layers.unwrap_or(d.moe_layers),
                    capacity_factor: r.capacity_factor.unwrap_or(d.capacity_factor),
                    dispatcher,
                })
            }
        };
        Ok(TheoryConfig {
            model,
            parallel,
            moe,
        })
    }
}

fn parse_dispatcher(s: &str) -> Result<Dispatcher, String> {
    match s.to_ascii_lowercase().as_str() {
        "alltoall" | "all_to_all" | "all-to-all" => Ok(Dispatcher::AllToAll),
        "allgather" | "all_gather" | "all-gather" => Ok(Dispatcher::AllGather),
        _ => Err(format!(
            "moe.dispatcher: unknown value {s:?}, expected \"alltoall\" or \"allgather\""
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The example config of `/work/shared/CONTRACT.md`, verbatim.
    const CONTRACT_EXAMPLE: &str = r#"
[model]
layers = 16              # transformer layers
hidden = 512
heads = 8
seq_len = 1024
vocab = 50257
micro_batch = 4
global_batch = 64
microbatches = 16        # per iteration per pipeline; default global_batch / (micro_batch * dp)
iterations = 10
bytes_per_element = 2

[parallel]
tp = 1
pp = 1
dp = 4
ep = 1
cp = 1
sequence_parallel = false
virtual_stages = 1
distributed_optimizer = false

[moe]                    # only for MoE models
experts = 4
top_k = 1
moe_layers = 4
capacity_factor = 1.0
dispatcher = "alltoall"  # or "allgather"
"#;

    #[test]
    fn contract_example_parses() {
        let cfg = TheoryConfig::from_toml(CONTRACT_EXAMPLE).unwrap();
        assert_eq!(cfg.model.layers, 16);
        assert_eq!(cfg.model.vocab, 50_257);
        assert_eq!(cfg.model.microbatches, Some(16));
        assert_eq!(cfg.microbatches(), 16);
        assert_eq!(cfg.parallel, ParallelSpec::default());
        assert_eq!(cfg.moe, Some(MoeSpec::default()));
    }

    #[test]
    fn empty_file_is_the_thesis_dense_model() {
        let cfg = TheoryConfig::from_toml("").unwrap();
        assert_eq!(cfg, TheoryConfig::thesis_dense());
        // 64 / (4 · 4)
        assert_eq!(cfg.microbatches(), 4);
    }

    #[test]
    fn partial_config_keeps_defaults() {
        let cfg = TheoryConfig::from_toml("[parallel]\npp = 4\ndp = 1\n").unwrap();
        assert_eq!(cfg.parallel.pp, 4);
        assert_eq!(cfg.parallel.dp, 1);
        assert_eq!(cfg.parallel.tp, 1);
        assert_eq!(cfg.model, ModelSpec::default());
        assert_eq!(cfg.moe, None);
        // Thesis §5.3.5, PP=4: "16 microbatches per iteration" = 64 / (4 · 1).
        assert_eq!(cfg.microbatches(), 16);
    }

    #[test]
    fn empty_moe_table_is_the_thesis_moe() {
        let cfg = TheoryConfig::from_toml("[parallel]\nep = 4\n[moe]\n").unwrap();
        assert_eq!(cfg, TheoryConfig::thesis_moe());
        let ag = TheoryConfig::from_toml("[moe]\ndispatcher = \"allgather\"\n").unwrap();
        assert_eq!(ag.moe.unwrap().dispatcher, Dispatcher::AllGather);
    }

    #[test]
    fn invalid_toml_is_an_error_with_line() {
        let err = TheoryConfig::from_toml("[model]\nlayers = = 3\n").unwrap_err();
        assert!(err.contains("line 2"), "{err}");
    }

    #[test]
    fn wrong_type_and_unknown_key_name_the_key() {
        let err = TheoryConfig::from_toml("[parallel]\ntp = \"four\"\n").unwrap_err();
        assert!(err.contains("line 2"), "{err}");
        let err = TheoryConfig::from_toml("[parallel]\ntp_size = 4\n").unwrap_err();
        assert!(err.contains("tp_size"), "{err}");
        let err = TheoryConfig::from_toml("[pipeline]\npp = 4\n").unwrap_err();
        assert!(err.contains("pipeline"), "{err}");
    }

    #[test]
    fn impossible_values_name_the_key() {
        let err = TheoryConfig::from_toml("[parallel]\ntp = 0\n").unwrap_err();
        assert!(err.contains("parallel.tp"), "{err}");
        let err = TheoryConfig::from_toml("[parallel]\ndp = 3\n").unwrap_err();
        assert!(err.contains("model.microbatches"), "{err}");
        // With microbatches given, an uneven global batch is accepted.
        assert!(TheoryConfig::from_toml("[model]\nmicrobatches = 5\n[parallel]\ndp = 3\n").is_ok());
        let err = TheoryConfig::from_toml("[parallel]\nep = 3\n[moe]\n").unwrap_err();
        assert!(err.contains("parallel.ep"), "{err}");
        let err = TheoryConfig::from_toml("[moe]\ndispatcher = \"ring\"\n").unwrap_err();
        assert!(err.contains("moe.dispatcher"), "{err}");
    }
}
