//! Which NVTX ranges are steps and which are stages: an editable mapping of range names to
//! stages, with a default that knows PyTorch's profiler, Lightning's actions, the stage names of
//! the StageFrontier paper and the generator's Megatron-like ranges.
//!
//! Patterns are globs over the whole range name, ASCII case-insensitive: `*` any run, `?` any
//! one character. First match wins.

use serde::{Deserialize, Serialize};

/// One name pattern and the stage it maps to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StagePattern {
    pub pattern: String,
    pub stage: String,
}

/// Range names → steps and stages.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StageMapping {
    /// Ranges that delimit one training step; the step's number is the last number in the
    /// name (`ProfilerStep#12`, `iteration 12`), else the range's position among its process's.
    pub steps: Vec<String>,
    /// Ranges inside a step mapped to stages (first match wins). A stage range inside another
    /// stage range of the same process is part of it, not a stage of its own.
    pub stages: Vec<StagePattern>,
    /// Add the step's time outside every stage range as a last stage, `other` (the paper's
    /// residual), when some rank has more than 1 % of a step there.
    pub residual: bool,
}

impl Default for StageMapping {
    fn default() -> Self {
        let steps = [
            // PyTorch profiler (and Kineto, through NVTX when emitted).
            "ProfilerStep#*",
            // The generator's and many training loops' own markers.
            "iteration*",
            "train_step*",
            "train step*",
            "training_step #*",
            // Lightning's per-batch action.
            "run_training_batch*",
            "step ?*",
        ];
        let stages: &[(&str, &str)] = &[
            // Exact framework names first: a module's forward (`DistributedDataParallel.forward`
            // would otherwise be `data*`), the optimizer's, Lightning's callbacks.
            ("*.forward", "forward"),
            ("*.backward", "backward"),
            ("Optimizer.step#*", "optimizer"),
            ("Optimizer.zero_grad#*", "optimizer"),
            ("[Callback]*", "callbacks"),
            // Data: PyTorch's DataLoader iterator, Lightning's fetch, Megatron's get_batch.
            ("enumerate(DataLoader)*", "data"),
            ("*dataloader*", "data"),
            ("*data_loader*", "data"),
            ("*get_batch*", "data"),
            ("*next_batch*", "data"),
            ("data", "data"),
            ("data.*", "data"),
            ("data_*", "data"),
            ("batch_load*", "data"),
            // Forward (and loss): Lightning's training_step is the forward and the loss.
            ("forward*", "forward"),
            ("*forward_step*", "forward"),
            ("*training_step*", "forward"),
            ("model.fwd*", "forward"),
            ("fwd*", "forward"),
            // Backward.
            ("backward*", "backward"),
            ("*backward_step*", "backward"),
            ("*model_backward*", "backward"),
            ("model.backward*", "backward"),
            ("bwd*", "backward"),
            // Callbacks and logging.
            ("callbacks*", "callbacks"),
            // Optimizer.
            ("*optimizer_step*", "optimizer"),
            ("optimizer*", "optimizer"),
            ("optim.*", "optimizer"),
            ("*zero_grad*", "optimizer"),
        ];
        StageMapping {
            steps: steps.map(String::from).to_vec(),
            stages: stages
                .iter()
                .map(|&(p, s)| StagePattern {
                    pattern: p.into(),
                    stage: s.into(),
                })
                .collect(),
            residual: true,
        }
    }
}

impl StageMapping {
    /// The index of the first step pattern `text` matches.
    pub fn step_pattern(&self, text: &str) -> Option<usize> {
        self.steps.iter().position(|p| matches(p, text))
    }

    /// The stage `text` maps to.
    pub fn stage_of(&self, text: &str) -> Option<&str> {
        self.stages
            .iter()
            .find(|p| matches(&p.pattern, text))
            .map(|p| p.stage.as_str())
    }
}

/// Whether `pattern` matches `text` as written or without the `## … ##` that TorchRec's and
/// many training loops' `record_function` names wrap around the stage (`## forward ##`).
fn matches(pattern: &str, text: &str) -> bool {
    glob(pattern, text) || {
        let bare = text.trim_matches(|c: char| c == '#' || c.is_whitespace());
        bare.len() != text.len() && glob(pattern, bare)
    }
}

/// The last run of digits in `text` as a number (`ProfilerStep#12` → 12).
pub fn trailing_number(text: &str) -> Option<u64> {
    let b = text.as_bytes();
    let end = b.iter().rposition(u8::is_ascii_digit)? + 1;
    let start = b[..end]
        .iter()
        .rposition(|c| !c.is_ascii_digit())
        .map_or(0, |i| i + 1);
    text[start..end].parse().ok()
}

/// Whether `pattern` matches all of `text`: `*` any run, `?` any one byte, ASCII
/// case-insensitive. Iterative with one backtrack point: linear for one `*`, never exponential.
pub fn glob(pattern: &str, text: &str) -> bool {
    let (p, t) = (pattern.as_bytes(), text.as_bytes());
    let eq = |a: u8, b: u8| a.eq_ignore_ascii_case(&b);
    let (mut pi, mut ti) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while ti < t.len() {
        if pi < p.len() && p[pi] != b'*' && (p[pi] == b'?' || eq(p[pi], t[ti])) {
            pi += 1;
            ti += 1;
        } else if pi < p.len() && p[pi] == b'*' {
            star = Some((pi, ti));
            pi += 1;
        } else if let Some((sp, st)) = star {
            pi = sp + 1;
            ti = st + 1;
            star = Some((sp, st + 1));
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|&c| c == b'*')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_mapping_knows_the_usual_names() {
        let m = StageMapping::default();
        for step in [
            "ProfilerStep#7",
            "iteration 3",
            "Iteration_12",
            "train_step",
            "run_training_batch",
            "step 4",
        ] {
            assert!(m.step_pattern(step).is_some(), "{step}");
        }
        for not_step in [
            "Optimizer.step#SGD.step",
            "optimizer.step",
            "stepper",
            "aten::mul",
        ] {
            assert!(m.step_pattern(not_step).is_none(), "{not_step}");
        }
        let cases = [
            (
                "enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__",
                "data",
            ),
            ("[_TrainingEpochLoop].train_dataloader_next", "data"),
            ("data.next_wait", "data"),
            ("data", "data"),
            ("forward", "forward"),
            ("DistributedDataParallel.forward", "forward"),
            ("[Strategy]DDPStrategy.training_step", "forward"),
            ("model.fwd_loss_cpu_wall", "forward"),
            ("backward", "backward"),
            ("[Strategy]DDPStrategy.backward", "backward"),
            ("model.backward_cpu_wall", "backward"),
            ("[Callback]ModelCheckpoint.on_train_batch_end", "callbacks"),
            ("callbacks.cpu_wall", "callbacks"),
            ("Optimizer.step#AdamW.step", "optimizer"),
            ("DataParallel.forward", "forward"),
            ("data_wait", "data"),
            ("[LightningModule]Model.optimizer_step", "optimizer"),
            ("optim.step_cpu_wall", "optimizer"),
            ("optimizer", "optimizer"),
            // TorchRec's and HTA's examples' record_function names.
            ("## forward ##", "forward"),
            ("## backward ##", "backward"),
            ("## optimizer ##", "optimizer"),
            ("## data_load ##", "data"),
            ("## zero_grad ##", "optimizer"),
        ];
        for (name, stage) in cases {
            assert_eq!(m.stage_of(name), Some(stage), "{name}");
        }
        for other in [
            "aten::linear, op_id = 4",
            "ncclAllReduce",
            "FSDP::pre_forward (x)",
            "database",
            "## alltoall_fwd_single ##",
            "##",
        ] {
            assert_eq!(m.stage_of(other), None, "{other}");
        }
    }

    #[test]
    fn numbers_and_globs() {
        assert_eq!(trailing_number("ProfilerStep#12"), Some(12));
        assert_eq!(trailing_number("iteration 3 of 10"), Some(10));
        assert_eq!(trailing_number("step"), None);
        assert!(glob("a*b?c", "AxxxbZc"));
        assert!(!glob("a*b?c", "axxxbc"));
        assert!(glob("*", ""));
        assert!(!glob("?", ""));
        // A long text with no match stays fast (one backtrack point).
        let long = "a".repeat(100_000);
        assert!(!glob("*b*", &long));
    }
}
