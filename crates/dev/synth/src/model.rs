//! The transformer being "trained": sizes that set message sizes and compute time.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Model {
    pub layers: u32,
    pub hidden: u64,
    pub heads: u32,
    pub seq_len: u64,
    pub vocab: u64,
    pub micro_batch: u64,
    pub global_batch: u64,
    pub iterations: u32,
    /// β: bytes per element of activations and gradients (2 for bf16).
    pub bytes_per_element: u64,
    /// Number of experts (0 = dense).
    pub moe_experts: u32,
    pub moe_top_k: u32,
    /// How many of the layers are MoE layers.
    pub moe_layers: u32,
}

impl Model {
    /// The thesis' dense model (§5.3.5): l=16, h=512, 8 heads, s=1024, V=50257, b=4, B=64, bf16.
    pub fn thesis() -> Model {
        Model {
            layers: 16,
            hidden: 512,
            heads: 8,
            seq_len: 1024,
            vocab: 50257,
            micro_batch: 4,
            global_batch: 64,
            iterations: 10,
            bytes_per_element: 2,
            moe_experts: 0,
            moe_top_k: 0,
            moe_layers: 0,
        }
    }

    /// P = 12·l·h²·(1 + 1/(12h) + (V+s)/(12·l·h²)) (thesis §2.4).
    pub fn parameters(&self) -> u64 {
        let l = self.layers as f64;
        let h = self.hidden as f64;
        let v = self.vocab as f64;
        let s = self.seq_len as f64;
        (12.0 * l * h * h * (1.0 + 1.0 / (12.0 * h) + (v + s) / (12.0 * l * h * h))) as u64
    }

    /// Microbatches per iteration per pipeline.
    pub fn microbatches(&self, data_parallel: u32) -> u32 {
        let d = self.micro_batch * data_parallel.max(1) as u64;
        (self.global_batch / d).max(1) as u32
    }

    /// Whether layer `i` (0-based, global) is an MoE layer: MoE layers are spread evenly.
    pub fn is_moe_layer(&self, i: u32) -> bool {
        if self.moe_layers == 0 || self.moe_experts == 0 {
            return false;
        }
        let every = (self.layers / self.moe_layers).max(1);
        i % every == every - 1 && i / every < self.moe_layers
    }
}
