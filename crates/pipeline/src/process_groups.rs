//! Process groups as evidence of parallelism (issue 33).
//!
//! PyTorch profiler traces name the process group of every collective: `default_pg`, a
//! DeviceMesh's `mesh_tp`, Megatron-LM's `TENSOR_MODEL_PARALLEL_GROUP`, or `undefined`. That is
//! a statement of what the group is for, made by the program that created it; the inference
//! (`enrich::infer`) reads what the communicator did. Both are shown: the group beside the
//! inferred label, and whether they agree. Where the inference found nothing (`unknown`), a
//! group whose description names one dimension labels the communicator.

use enrich::{CommParallelism, Communicators, LayoutInference, Parallelism};
use load::Session;

/// The process group of one communicator, as the traces name it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcessGroup {
    /// PyTorch's name of it (`"0"`, `"3"`); `None` for the world group a trace names no group
    /// for.
    pub name: Option<String>,
    /// What it is for, as its creator described it.
    pub description: Option<String>,
    /// The one parallelism its description names, if it names one.
    pub implies: Option<Parallelism>,
    /// The traces name no group: taken as the world (older PyTorch records none).
    pub assumed_world: bool,
    /// The communicator's label is this group's (the inference from its operations had none).
    pub labels: bool,
}

/// The parallelism a process group's description names, when it names exactly one:
/// Megatron-LM's group descriptions (`parallel_state.py`), a DeviceMesh's `mesh_<dims>`.
/// `None` for the world (`default_pg`), `undefined`, and groups over several dimensions
/// (`MODEL_PARALLEL_GROUP`, `mesh_dp_cp`).
pub fn described_parallelism(desc: &str) -> Option<Parallelism> {
    let d = desc.trim();
    if let Some(dims) = d.strip_prefix("mesh_") {
        let mut found: Option<Parallelism> = None;
        for token in dims.split('_') {
            let p = match token.to_ascii_lowercase().as_str() {
                "tp" => Parallelism::TP,
                "pp" => Parallelism::PP,
                "cp" => Parallelism::CP,
                "ep" => Parallelism::EP,
                "dp" | "replicate" | "shard" | "fsdp" | "hsdp" => Parallelism::DP,
                _ => return None,
            };
            match found {
                Some(q) if q != p => return None,
                _ => found = Some(p),
            }
        }
        return found;
    }
    Some(match d.to_ascii_uppercase().as_str() {
        "TENSOR_MODEL_PARALLEL_GROUP" | "EXPERT_TENSOR_PARALLEL_GROUP" => Parallelism::TP,
        "PIPELINE_MODEL_PARALLEL_GROUP" | "EMBEDDING_GROUP" | "POSITION_EMBEDDING_GROUP" => {
            Parallelism::PP
        }
        "DATA_PARALLEL_GROUP"
        | "DATA_PARALLEL_GROUP_WITH_CP"
        | "INTRA_PARTIAL_DATA_PARALLEL_GROUP_WITH_CP"
        | "INTER_PARTIAL_DATA_PARALLEL_GROUP_WITH_CP"
        | "EXPERT_DATA_PARALLEL_GROUP" => Parallelism::DP,
        "CONTEXT_PARALLEL_GROUP" => Parallelism::CP,
        "EXPERT_MODEL_PARALLEL_GROUP" => Parallelism::EP,
        _ => return None,
    })
}

/// Per communicator (same order as `communicators.comms`), the process group the traces name
/// for it: the group of any member whose communicator it is (the first named wins).
pub fn process_groups(
    session: &Session,
    communicators: &Communicators,
) -> Vec<Option<ProcessGroup>> {
    let mut out: Vec<Option<ProcessGroup>> = vec![None; communicators.comms.len()];
    for t in session.traces().iter().filter(|t| t.claimed_by.is_none()) {
        for g in &t.groups {
            let Some(c) = communicators.comm_of(&t.process, g.comm) else {
                continue;
            };
            let slot = &mut out[c];
            if slot
                .as_ref()
                .is_some_and(|s| s.name.is_some() || g.name.is_none())
            {
                continue;
            }
            *slot = Some(ProcessGroup {
                name: g.name.clone(),
                description: g.desc.clone(),
                implies: g.desc.as_deref().and_then(described_parallelism),
                assumed_world: g.assumed_world,
                labels: false,
            });
        }
    }
    out
}

/// Whether a communicator's label (the inference's) and its process group agree: `None` when
/// the group names no single parallelism, the communicator has no label, or the label is the
/// group's own.
pub fn agrees(label: Option<&CommParallelism>, group: &ProcessGroup) -> Option<bool> {
    let implied = group.implies.filter(|_| !group.labels)?;
    let label = label.filter(|l| l.parallelism != Parallelism::Unknown)?;
    Some(label.parallelism == implied)
}

/// Labels each communicator the inference left `unknown` (or did not label) with the
/// parallelism its process group's description names, and adds to every labelled
/// communicator's evidence what its group says.
pub fn label_with_groups(layout: &mut LayoutInference, groups: &mut [Option<ProcessGroup>]) {
    for (c, group) in groups.iter_mut().enumerate() {
        let Some(g) = group else { continue };
        let desc = g.description.as_deref().unwrap_or("");
        let Some(implied) = g.implies else { continue };
        match layout.comms.iter_mut().find(|l| l.comm == c) {
            Some(l) if l.parallelism == Parallelism::Unknown => {
                l.evidence = format!(
                    "process group description `{desc}` (the operations gave no label: {})",
                    l.evidence
                );
                l.parallelism = implied;
                l.confidence = l.confidence.max(0.9);
                g.labels = true;
            }
            Some(l) => {
                let verdict = if l.parallelism == implied {
                    "agrees"
                } else {
                    "disagrees"
                };
                l.evidence = format!(
                    "{}; the process group description `{desc}` says {}: {verdict}",
                    l.evidence,
                    implied.name()
                );
            }
            None => {
                layout.comms.push(CommParallelism {
                    comm: c,
                    parallelism: implied,
                    evidence: format!("process group description `{desc}`"),
                    confidence: 0.9,
                });
                g.labels = true;
            }
        }
    }
    layout.comms.sort_by_key(|l| l.comm);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn descriptions_name_parallelisms() {
        for (d, p) in [
            ("TENSOR_MODEL_PARALLEL_GROUP", Some(Parallelism::TP)),
            ("DATA_PARALLEL_GROUP", Some(Parallelism::DP)),
            ("PIPELINE_MODEL_PARALLEL_GROUP", Some(Parallelism::PP)),
            ("EMBEDDING_GROUP", Some(Parallelism::PP)),
            ("EXPERT_MODEL_PARALLEL_GROUP", Some(Parallelism::EP)),
            ("CONTEXT_PARALLEL_GROUP", Some(Parallelism::CP)),
            ("MODEL_PARALLEL_GROUP", None),
            ("TENSOR_AND_DATA_PARALLEL_GROUP", None),
            ("mesh_tp", Some(Parallelism::TP)),
            ("mesh_dp_shard", Some(Parallelism::DP)),
            ("mesh_dp_replicate", Some(Parallelism::DP)),
            ("mesh_dp_cp", None),
            ("mesh_tp_cp_pp", None),
            ("default_pg", None),
            ("undefined", None),
            ("", None),
        ] {
            assert_eq!(described_parallelism(d), p, "{d}");
        }
    }

    #[test]
    fn groups_label_the_unknown_and_are_weighed_against_the_rest() {
        let label = |comm, parallelism| CommParallelism {
            comm,
            parallelism,
            evidence: "ops".into(),
            confidence: 0.5,
        };
        let mut layout = LayoutInference {
            sizes: None,
            comms: vec![
                label(0, Parallelism::Unknown),
                label(1, Parallelism::DP),
                label(2, Parallelism::DP),
            ],
            evidence: String::new(),
            confidence: 0.0,
            signatures: Vec::new(),
        };
        let group = |desc: &str| {
            Some(ProcessGroup {
                name: Some("1".into()),
                description: Some(desc.into()),
                implies: described_parallelism(desc),
                assumed_world: false,
                labels: false,
            })
        };
        let mut groups = vec![
            group("mesh_tp"),
            group("mesh_dp"),
            group("mesh_tp"),
            group("mesh_ep"),
        ];
        assert_eq!(
            agrees(Some(&layout.comms[1]), groups[1].as_ref().unwrap()),
            Some(true)
        );
        assert_eq!(
            agrees(Some(&layout.comms[2]), groups[2].as_ref().unwrap()),
            Some(false)
        );
        assert_eq!(
            agrees(Some(&layout.comms[0]), groups[0].as_ref().unwrap()),
            None
        );
        label_with_groups(&mut layout, &mut groups);
        let got: Vec<Parallelism> = layout.comms.iter().map(|l| l.parallelism).collect();
        assert_eq!(
            got,
            [
                Parallelism::TP,
                Parallelism::DP,
                Parallelism::DP,
                Parallelism::EP
            ],
            "the unknown and the unlabelled take the group's; the labelled keep theirs"
        );
        assert!(layout.comms[1].evidence.ends_with("agrees"));
        assert!(layout.comms[2].evidence.ends_with("disagrees"));
        let labelled: Vec<bool> = groups.iter().map(|g| g.as_ref().unwrap().labels).collect();
        assert_eq!(labelled, [true, false, false, true]);
        // A label that is the group's own is not evidence the group agrees with.
        assert_eq!(
            agrees(Some(&layout.comms[0]), groups[0].as_ref().unwrap()),
            None
        );
        assert_eq!(
            agrees(Some(&layout.comms[1]), groups[1].as_ref().unwrap()),
            Some(true)
        );
    }
}
