//! Named runs: the thesis' chapter-5 layouts, the table 4.5 alignment scenarios, a small
//! multi-node demo and scale tests.

use crate::layout::{Layout, MoeDispatcher};
use crate::model::Model;
use crate::nsysdb::Schema;
use crate::{Imperfections, RunConfig};

#[derive(Debug, Clone)]
pub struct Preset {
    pub name: &'static str,
    pub description: &'static str,
    pub config: RunConfig,
}

fn thesis(layout: Layout, model: Model) -> RunConfig {
    let mut c = RunConfig::new(layout, model);
    c.nccl_version = "2.27.5".into();
    c.timestamps = true;
    c.schema = Schema::V3_25;
    c
}

fn moe() -> Model {
    Model {
        moe_experts: 4,
        moe_top_k: 1,
        moe_layers: 4,
        ..Model::thesis()
    }
}

fn align(kdrop: f64, ldrop: f64) -> RunConfig {
    // 4 ranks × ~200 operations: TP=4, 8 layers, one iteration of 5 microbatches.
    let model = Model {
        layers: 8,
        global_batch: 20,
        iterations: 1,
        ..Model::thesis()
    };
    let mut c = RunConfig::new(
        Layout {
            tp: 4,
            ..Layout::default()
        },
        model,
    );
    c.nccl_version = "2.18.3".into();
    c.schema = Schema::V3_17;
    c.imperfections.drop_kernel_pct = kdrop;
    c.imperfections.drop_log_pct = ldrop;
    c.seed = 45;
    c
}

/// Every preset, in `--help` order.
pub fn presets() -> Vec<Preset> {
    let tm = Model::thesis;
    let tp_model = || Model {
        layers: 8,
        ..Model::thesis()
    };
    let l = Layout::default;
    let mut v = vec![
        Preset { name: "dp4", description: "thesis dense model, DP=4 on one 4-GPU node", config: thesis(Layout { dp: 4, ..l() }, tm()) },
        Preset {
            name: "dp4-nvtx",
            description: "dp4 with NCCL's own NVTX ranges and typed payload blobs (schema 3.25)",
            config: {
                let mut c = thesis(Layout { dp: 4, ..l() }, tm());
                c.nccl_nvtx = true;
                c
            },
        },
        Preset {
            name: "dp4-distopt",
            description: "DP=4 with the distributed optimizer (ReduceScatter + AllGather)",
            config: thesis(Layout { dp: 4, distributed_optimizer: true, ..l() }, tm()),
        },
        Preset { name: "pp4", description: "PP=4, 1F1B, 16 microbatches", config: thesis(Layout { pp: 4, ..l() }, tm()) },
        Preset {
            name: "pp4-vpp2",
            description: "PP=4 interleaved with 2 virtual stages",
            config: thesis(Layout { pp: 4, vpp: 2, ..l() }, tm()),
        },
        Preset { name: "tp4", description: "TP=4 (8 layers, as the thesis' TP run)", config: thesis(Layout { tp: 4, ..l() }, tp_model()) },
        Preset {
            name: "tp4-sp",
            description: "TP=4 with sequence parallelism (AllGather + ReduceScatter)",
            config: thesis(Layout { tp: 4, sequence_parallel: true, ..l() }, tp_model()),
        },
        Preset {
            name: "tp4-sym",
            description: "tp4 with symmetric memory registration (NCCL 2.27 symmetric kernels and [Symmetric] tuning lines)",
            config: {
                let mut c = thesis(Layout { tp: 4, ..l() }, tp_model());
                c.symmetric = true;
                c
            },
        },
        Preset {
            name: "ep4-alltoall",
            description: "EP=4, 4 experts top-1 in 4 MoE layers, all-to-all dispatcher",
            config: thesis(Layout { ep: 4, ..l() }, moe()),
        },
        Preset {
            name: "ep4-allgather",
            description: "EP=4, allgather dispatcher",
            config: thesis(Layout { ep: 4, moe_dispatcher: MoeDispatcher::AllGather, ..l() }, moe()),
        },
        Preset {
            name: "tp2pp2",
            description: "TP=2 × PP=2 with a duplicate-logging rank per TP group and 20 orphan AllReduce lines per rank (thesis tables 4.1/4.2)",
            config: {
                let mut c = thesis(Layout { tp: 2, pp: 2, ..l() }, tm());
                c.imperfections.duplicate_logging_rank_per_tp_group = true;
                c.imperfections.orphan_allreduce_lines = 20;
                c
            },
        },
        Preset { name: "align-nodrop", description: "table 4.5: 4 ranks × ~200 ops, nothing dropped", config: align(0.0, 0.0) },
        Preset { name: "align-kdrop20", description: "table 4.5: 20% of kernels dropped", config: align(20.0, 0.0) },
        Preset { name: "align-ldrop20", description: "table 4.5: 20% of log lines dropped", config: align(0.0, 20.0) },
        Preset { name: "align-bothdrop20", description: "table 4.5: 20% of kernels and of log lines dropped", config: align(20.0, 20.0) },
        Preset {
            name: "demo",
            description: "2 nodes × 4 GPUs, TP2 PP2 DP2, 2 iterations, combined timestamped log, every imperfection a little",
            config: {
                let model = Model { layers: 4, global_batch: 16, iterations: 2, ..Model::thesis() };
                let mut c = RunConfig::new(Layout { tp: 2, pp: 2, dp: 2, ..l() }, model);
                c.nodes = 2;
                c.gpus_per_node = 4;
                c.nccl_version = "2.23.4".into();
                c.combined_log = true;
                c.timestamps = true;
                c.schema = Schema::V3_17;
                c.imperfections = Imperfections {
                    sendrecv_fusion: true,
                    duplicate_logging_rank_per_tp_group: false,
                    orphan_allreduce_lines: 3,
                    orphan_sendrecv_kernels: 2,
                    drop_log_pct: 1.0,
                    drop_kernel_pct: 1.0,
                    garbled_lines: 2,
                    truncated_last_line: true,
                    zero_duration_kernels: 0,
                };
                c
            },
        },
        Preset {
            name: "large-64",
            description: "64 ranks (8 nodes × 8), TP8 PP2 DP4, 590 iterations: ≥ 10⁵ ops on every rank (the benchmark; written by streaming)",
            config: {
                let model = Model { layers: 16, global_batch: 64, iterations: 590, ..Model::thesis() };
                let mut c = RunConfig::new(Layout { tp: 8, pp: 2, dp: 4, ..l() }, model);
                c.nodes = 8;
                c.gpus_per_node = 8;
                c.nccl_version = "2.21.5".into();
                c.schema = Schema::V3_25;
                c
            },
        },
        Preset {
            name: "huge-1024",
            description: "1024 ranks (128 nodes × 8), TP8 PP4 DP32, one iteration of 2 microbatches (scale test)",
            config: {
                let model = Model { layers: 8, global_batch: 256, iterations: 1, ..Model::thesis() };
                let mut c = RunConfig::new(Layout { tp: 8, pp: 4, dp: 32, ..l() }, model);
                c.nodes = 128;
                c.gpus_per_node = 8;
                c.nccl_version = "2.21.5".into();
                c
            },
        },
        Preset {
            name: "huge-8192",
            description: "8192 ranks (1024 nodes × 8), TP8 PP4 DP256, one iteration of 2 microbatches (the largest layout the issue asks for; written by streaming)",
            config: {
                let model = Model { layers: 8, global_batch: 2048, iterations: 1, ..Model::thesis() };
                let mut c = RunConfig::new(Layout { tp: 8, pp: 4, dp: 256, ..l() }, model);
                c.nodes = 1024;
                c.gpus_per_node = 8;
                c.nccl_version = "2.21.5".into();
                c
            },
        },
    ];
    for p in v.iter_mut() {
        if p.config.nodes * p.config.gpus_per_node < p.config.layout.world() {
            p.config.nodes = p.config.layout.world().div_ceil(p.config.gpus_per_node);
        }
    }
    v
}

/// The preset called `name`.
pub fn preset(name: &str) -> Option<Preset> {
    presets().into_iter().find(|p| p.name == name)
}
