//! Process groups as evidence (issue 33): what a PyTorch trace names a communicator's group
//! (`mesh_tp`, Megatron's `TENSOR_MODEL_PARALLEL_GROUP`, `default_pg`, `undefined`), put beside
//! the parallelism the inference gave it, with whether the two agree. The core decides
//! (`pipeline::process_groups`, `pipeline::agrees`); this turns its verdict into the page's words.

use pipeline::{Analysis, ProcessGroup};
use serde::{Deserialize, Serialize};

/// How a process group's description weighs against the inferred label.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum GroupVerdict {
    /// It names the parallelism the operations gave.
    Agrees,
    /// It names another parallelism than the operations gave.
    Disagrees,
    /// The operations gave no label: the group's description is the label.
    Labels,
    /// It names no single parallelism (`default_pg`, `undefined`, a group over several
    /// dimensions), or the communicator has no label to weigh it against.
    Silent,
    /// The trace names no group (older PyTorch): the world was assumed.
    AssumedWorld,
}

impl GroupVerdict {
    /// The word the page shows and its tests find (`data-verdict`).
    pub fn word(self) -> &'static str {
        match self {
            GroupVerdict::Agrees => "agrees",
            GroupVerdict::Disagrees => "disagrees",
            GroupVerdict::Labels => "labels",
            GroupVerdict::Silent => "no single parallelism",
            GroupVerdict::AssumedWorld => "world assumed",
        }
    }
}

/// One communicator's process group, as the page shows it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GroupEvidence {
    /// PyTorch's name of the group (`"0"`, `"3"`), if the trace gives one.
    pub name: Option<String>,
    /// What its creator said it is for.
    pub description: Option<String>,
    /// The parallelism the description names (`TP`, `DP`, ...), if it names exactly one.
    pub says: Option<String>,
    pub verdict: GroupVerdict,
    /// One line: the description, what it says, and the verdict.
    pub text: String,
}

/// Communicator `comm`'s process group beside its label, if a trace names one.
pub fn group_evidence(a: &Analysis, comm: usize) -> Option<GroupEvidence> {
    let g = a.process_groups.get(comm)?.as_ref()?;
    let label = a.layout.comms.iter().find(|l| l.comm == comm);
    let verdict = verdict(g, pipeline::agrees(label, g));
    let desc = g.description.clone();
    let says = g.implies.map(|p| p.name().to_string());
    let shown = desc.as_deref().or(g.name.as_deref()).unwrap_or("unnamed");
    let inferred = label.map_or("unknown", |l| l.parallelism.name());
    let text = match (verdict, &says) {
        (GroupVerdict::Agrees, Some(p)) => format!("{shown}: {p}, agrees"),
        (GroupVerdict::Disagrees, Some(p)) => {
            format!("{shown}: {p}, disagrees (the operations say {inferred})")
        }
        (GroupVerdict::Labels, Some(p)) => {
            format!("{shown}: {p}, labels it (the operations gave no label)")
        }
        (GroupVerdict::AssumedWorld, _) => {
            "none named: the world assumed (the trace records no process group)".to_string()
        }
        (_, Some(p)) => format!("{shown}: {p} (no inferred label to weigh it against)"),
        (_, None) => match desc.as_deref() {
            Some("default_pg") => format!("{shown}: the world group, names no single parallelism"),
            Some("undefined") | None => {
                format!("{shown}: undescribed, names no parallelism")
            }
            Some(_) => format!("{shown}: names no single parallelism"),
        },
    };
    Some(GroupEvidence {
        name: g.name.clone(),
        description: desc,
        says,
        verdict,
        text,
    })
}

/// The verdict from the core's agreement (`None`: nothing to weigh).
fn verdict(g: &ProcessGroup, agrees: Option<bool>) -> GroupVerdict {
    match agrees {
        Some(true) => GroupVerdict::Agrees,
        Some(false) => GroupVerdict::Disagrees,
        None if g.labels => GroupVerdict::Labels,
        None if g.assumed_world && g.description.is_none() => GroupVerdict::AssumedWorld,
        None => GroupVerdict::Silent,
    }
}

/// Per parallelism, the distinct process groups of its communicators (description and verdict),
/// for the overview: `comms` are the communicators it labels.
pub fn groups_of(a: &Analysis, comms: &[usize]) -> Vec<GroupEvidence> {
    let mut out: Vec<GroupEvidence> = Vec::new();
    for &c in comms {
        let Some(g) = group_evidence(a, c) else {
            continue;
        };
        if !out
            .iter()
            .any(|o| o.description == g.description && o.verdict == g.verdict)
        {
            out.push(g);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use load::{Session, TraceLoader};
    use pipeline::{analyse, UserSizes};
    use synth::kineto::{GroupNaming, KinetoRun, KinetoStyle};

    fn traces(preset: &str, style: &KinetoStyle) -> Analysis {
        let cfg = synth::preset(preset).unwrap().config;
        let run = KinetoRun::new(&cfg);
        let mut session = Session::default();
        for r in 0..run.world() {
            let mut bytes = Vec::new();
            run.write_rank(r, style, &mut bytes).unwrap();
            let mut l = TraceLoader::new(&synth::kineto::trace_name(r, false));
            l.feed(&bytes);
            session.add_trace(l.finish(bytes.len() as u64));
        }
        analyse(&session, &UserSizes::default())
    }

    /// DeviceMesh and Megatron names on a TP×PP run: every communicator with kernels shows its
    /// group, and the verdict is the core's agreement (labels where the operations gave none).
    #[test]
    fn generated_groups_are_weighed_against_the_labels() {
        for naming in [GroupNaming::DeviceMesh, GroupNaming::Megatron] {
            let style = KinetoStyle {
                naming,
                ..KinetoStyle::modern()
            };
            let a = traces("tp2pp2", &style);
            let mut seen = 0;
            for c in 0..a.communicators.comms.len() {
                let Some(e) = group_evidence(&a, c) else {
                    continue;
                };
                seen += 1;
                let g = a.process_groups[c].as_ref().unwrap();
                let label = a.layout.comms.iter().find(|l| l.comm == c);
                let want = match pipeline::agrees(label, g) {
                    Some(true) => GroupVerdict::Agrees,
                    Some(false) => GroupVerdict::Disagrees,
                    None if g.labels => GroupVerdict::Labels,
                    None => GroupVerdict::Silent,
                };
                assert_eq!(e.verdict, want, "{naming:?} comm {c}: {}", e.text);
                let desc = e.description.as_deref().unwrap();
                assert!(e.text.starts_with(desc), "{}", e.text);
                if let (Some(p), Some(l)) = (&e.says, label) {
                    // The label is the group's own, or the verdict says whether they match.
                    let same = l.parallelism.name() == p;
                    assert_eq!(same, e.verdict != GroupVerdict::Disagrees, "{}", e.text);
                }
            }
            assert!(seen >= 2, "{naming:?}: {seen} groups shown");
            // A TP and a PP group, each named for what it is, on the tp2pp2 layout.
            let says: Vec<String> = (0..a.communicators.comms.len())
                .filter_map(|c| group_evidence(&a, c)?.says)
                .collect();
            assert!(says.iter().any(|s| s == "TP"), "{naming:?}: {says:?}");
            assert!(says.iter().any(|s| s == "PP"), "{naming:?}: {says:?}");
        }
    }

    /// The real traces name `default_pg` and `undefined`: shown, but weighed as naming no single
    /// parallelism.
    #[test]
    fn real_default_pg_names_no_single_parallelism() {
        let Some(path) = testkit::fixtures::files("kineto", "gz")
            .into_iter()
            .find(|p| p.to_string_lossy().contains("HTA-nccl_parser_config"))
        else {
            return; // (the fixtures' absence is noticed by `files`)
        };
        let bytes = std::fs::read(&path).unwrap();
        let mut session = Session::default();
        let mut l = TraceLoader::new("rank0.json.gz");
        l.feed(&bytes);
        session.add_trace(l.finish(bytes.len() as u64));
        let a = analyse(&session, &UserSizes::default());
        let e = group_evidence(&a, 0).expect("its group");
        assert_eq!(e.description.as_deref(), Some("default_pg"));
        assert_eq!(e.verdict, GroupVerdict::Silent);
        assert_eq!(
            e.text,
            "default_pg: the world group, names no single parallelism"
        );
        let all = groups_of(&a, &[0, 0]);
        assert_eq!(all.len(), 1, "one entry per distinct group");
    }
}
