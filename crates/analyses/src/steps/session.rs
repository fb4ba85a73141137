//! The step analysis of a loaded, analysed session: which source gives the steps (a stage file,
//! NVTX step ranges, else the collectives' period), and the kernels' breakdown, baselines and
//! the 1F1B check beside the frontier. The only module that reads the session and the analysis
//! (`load::Session`, `pipeline::Analysis`); everything else takes plain data.

use super::baselines::{baselines, parallelism_index, KernelStats, OpKey, OpStats};
use super::breakdown::{
    breakdown, measured_closed_terms, ratios, ClosedForm, ClosedFormInputs, NcclSpan, RankKernels,
};
use super::collectives::{period_rows, KernelSequence, PeriodFindings};
use super::mapping::StageMapping;
use super::matrix::{MatrixBuilder, StageMatrix};
use super::nvtx::{stage_rows, NvtxFindings, ProcessRanges, StageSpan, StepWindow};
use super::pipeline::{check, Inputs as PipelineInputs};
use super::report::{Source, StepsReport};
use super::types::{Ambiguity, Settings, Window, AMBIGUOUS_ROLES, RANK_BY_OWN_TIME};
use enrich::Parallelism;
use load::Session;
use model::compute::BusyMerger;
use model::nsys::NvtxRange;
use model::OpType;
use pipeline::Analysis;
use rustc_hash::FxHashMap;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

/// What the step analysis is asked for.
#[derive(Debug, Clone, PartialEq)]
pub struct StepOptions {
    pub settings: Settings,
    pub mapping: StageMapping,
    /// The model and layout of the closed forms (the command's `--config`); without it there are
    /// no closed forms.
    pub model: Option<theory::TheoryConfig>,
    /// Peak FLOP/s per GPU, TFLOP/s; `None`: the hardware preset's dense FP16 figure.
    pub peak_tflops: Option<f64>,
    /// Utilisation μ of the closed forms' compute term.
    pub utilisation: f64,
    /// Full activation recomputation (ConfigTuner's assumption).
    pub recompute: bool,
}

impl Default for StepOptions {
    fn default() -> Self {
        StepOptions {
            settings: Settings::default(),
            mapping: StageMapping::default(),
            model: None,
            peak_tflops: None,
            utilisation: 0.5,
            recompute: false,
        }
    }
}

/// Every process of the session by (host, pid) → its global rank: the logs' ranks, and for the
/// processes no log names, numbers after the largest in (host, pid) order.
struct Ranks {
    of: BTreeMap<(String, u32), u32>,
    unranked: Vec<String>,
}

impl Ranks {
    fn new(session: &Session, analysis: &Analysis) -> Ranks {
        let mut seen: BTreeSet<(String, u32)> = BTreeSet::new();
        for e in session.exports() {
            let host = host_of(&e.export);
            let pids = e.export.nvtx.iter().map(|r| r.pid);
            for pid in pids.chain(e.export.kernels.iter().map(|k| k.pid)) {
                seen.insert((host.clone(), pid));
            }
        }
        let mut of = BTreeMap::new();
        let mut unranked = Vec::new();
        let mut next = analysis
            .processes
            .iter()
            .map(|p| p.global_rank + 1)
            .max()
            .unwrap_or(0);
        for (host, pid) in seen {
            let named = analysis
                .processes
                .iter()
                .filter(|p| p.process.pid == pid && (host.is_empty() || p.process.host == host))
                .collect::<Vec<_>>();
            let rank = match named[..] {
                [p] => p.global_rank,
                _ => {
                    unranked.push(format!("{host}:{pid}"));
                    next += 1;
                    next - 1
                }
            };
            of.insert((host, pid), rank);
        }
        Ranks { of, unranked }
    }

    fn get(&self, host: &str, pid: u32) -> Option<u32> {
        self.of.get(&(host.to_string(), pid)).copied()
    }
}

fn host_of(e: &model::nsys::NsysExport) -> String {
    e.hosts.first().cloned().unwrap_or_default()
}

/// The step analysis; `None` when the inputs show no steps (no stage file, no NVTX step range,
/// no NCCL kernels with a period). `hardware` gives the closed forms' peak FLOP/s by default.
pub fn analyse(
    session: &Session,
    analysis: &Analysis,
    opts: &StepOptions,
    hardware: Option<&theory::Hardware>,
) -> Option<StepsReport> {
    let ranks = Ranks::new(session, analysis);
    let found = find_steps(session, &ranks, &opts.mapping)?;
    let mut report = StepsReport::of_matrix(&found.matrix, found.source, &opts.settings);
    report.confidence = found.confidence;
    report.notes = found.notes(session, opts, &ranks);
    if found.source == Source::Nvtx {
        report.mapping = Some(opts.mapping.clone());
    }
    if let Some(pp) = analysis.layout.sizes.map(|s| s.pp).filter(|&pp| pp > 1) {
        label_pipeline_roles(&mut report, pp);
    }
    let kernels = Kernels::of(session, analysis, &ranks);
    kernel_parts(
        &mut report,
        &found,
        &kernels,
        session,
        analysis,
        opts,
        hardware,
    );
    report.pipeline = pipeline_check(&report, &found, &kernels, analysis, opts);
    report.nvtx = Some(found.nvtx).filter(|f| f.processes > 0 || !f.without_steps.is_empty());
    report.collectives = found.period.filter(|_| found.source == Source::Collectives);
    Some(report)
}

/// Each rank's step windows, in its own clock, and where they came from (`nvtx` ranges, the
/// profiler's steps, or the `collectives`' period): what the Compare view's stacked timelines
/// align two runs on. `None` when the inputs show no steps.
pub fn step_windows(
    session: &Session,
    analysis: &Analysis,
    mapping: &StageMapping,
) -> Option<(&'static str, Vec<StepWindow>)> {
    let ranks = Ranks::new(session, analysis);
    let found = find_steps(session, &ranks, mapping)?;
    (!found.windows.is_empty()).then_some((found.windows_from, found.windows))
}

/// The steps, wherever they came from, and what else the sources found.
struct Found {
    matrix: StageMatrix,
    source: Source,
    confidence: f64,
    nvtx: NvtxFindings,
    period: Option<PeriodFindings>,
    /// Each rank's step windows (its export's clock) and where they came from.
    windows: Vec<StepWindow>,
    windows_from: &'static str,
    /// Where each rank ran each stage (NVTX only).
    spans: Vec<StageSpan>,
}

/// The steps from stage files, else NVTX, else the collectives' period; the step windows from
/// NVTX, else the period.
fn find_steps(session: &Session, ranks: &Ranks, mapping: &StageMapping) -> Option<Found> {
    let nvtx = stage_rows(&nvtx_processes(session, ranks), mapping);
    // The collectives' period, when no NVTX range gives the steps' times.
    let (period_rows, period, period_windows) = if nvtx.windows.is_empty() {
        let (b, f, w) = period_rows(&kernel_sequences(session, ranks));
        (Some(b), Some(f), w)
    } else {
        (None, None, Vec::new())
    };
    let (matrix, source, confidence) = if let Some(b) = stage_file_rows(session) {
        (b.finish(), Source::StageFile, 1.0)
    } else if !nvtx.rows.is_empty() {
        (nvtx.rows.finish(), Source::Nvtx, 1.0)
    } else if let Some(b) = period_rows.filter(|b| !b.is_empty()) {
        let c = period.as_ref().map_or(0.0, |f| f.confidence);
        (b.finish(), Source::Collectives, c)
    } else {
        return None;
    };
    let (windows, windows_from) = if nvtx.windows.is_empty() {
        (period_windows, "collectives")
    } else {
        (nvtx.windows, "nvtx")
    };
    Some(Found {
        matrix,
        source,
        confidence,
        nvtx: nvtx.found,
        period,
        windows,
        windows_from,
        spans: nvtx.spans,
    })
}

impl Found {
    /// Plain sentences on how the steps were found and what was left out.
    fn notes(&self, session: &Session, opts: &StepOptions, ranks: &Ranks) -> Vec<String> {
        let mut notes = Vec::new();
        match self.source {
            Source::StageFile => notes.push(format!(
                "steps and stages from {} stage file(s)",
                session.stage_files().len()
            )),
            Source::Nvtx if self.nvtx.whole_steps => notes.push(format!(
                "steps from the NVTX (or record_function) ranges named like `{}` on {} \
                 process(es); no stage range inside them (the mapping names none): one stage per \
                 step (each rank's own clock)",
                self.nvtx.step_pattern.as_deref().unwrap_or("?"),
                self.nvtx.processes
            )),
            Source::Nvtx => notes.push(format!(
                "steps from the NVTX (or record_function) ranges named like `{}` on {} \
                 process(es); stages from the ranges inside them (each rank's own clock)",
                self.nvtx.step_pattern.as_deref().unwrap_or("?"),
                self.nvtx.processes
            )),
            Source::Collectives => {
                let periods: BTreeSet<usize> = self
                    .period
                    .iter()
                    .flat_map(|f| f.processes.iter().map(|p| p.period))
                    .collect();
                let periods: Vec<String> = periods.iter().map(usize::to_string).collect();
                notes.push(format!(
                    "no NVTX step ranges (patterns: {}): steps from the period of the \
                     collectives ({} NCCL kernels per step), confidence {:.2}; one stage per step",
                    opts.mapping.steps.join(", "),
                    periods.join(" or "),
                    self.confidence
                ));
            }
        }
        let nvtx = &self.nvtx;
        if self.source != Source::Nvtx && nvtx.processes == 0 && !nvtx.without_steps.is_empty() {
            notes.push(format!(
                "NVTX ranges on {} process(es) but no step range among them",
                nvtx.without_steps.len()
            ));
        }
        if !ranks.unranked.is_empty() {
            notes.push(format!(
                "{} process(es) no log names are numbered after the logs' ranks: {}",
                ranks.unranked.len(),
                ranks.unranked.join(", ")
            ));
        }
        notes
    }
}

/// Every rank's NCCL kernels (with their operation keys' statistics) and the compute kernels'
/// names.
struct Kernels {
    ranks: Vec<RankKernels>,
    ops: OpStats,
    compute: Vec<KernelStats>,
}

impl Kernels {
    fn of(session: &Session, analysis: &Analysis, ranks: &Ranks) -> Kernels {
        let (rank_kernels, keys) = rank_kernels(session, analysis, ranks);
        Kernels {
            ops: OpStats::of(keys, &rank_kernels),
            ranks: rank_kernels,
            compute: compute_stats(session, ranks),
        }
    }
}

/// The breakdown (with the closed forms), the ranks' own-time evidence, the baselines.
fn kernel_parts(
    report: &mut StepsReport,
    found: &Found,
    k: &Kernels,
    session: &Session,
    analysis: &Analysis,
    opts: &StepOptions,
    hardware: Option<&theory::Hardware>,
) {
    let win: Vec<(u32, u64, i64, i64)> = found
        .windows
        .iter()
        .map(|w| (w.rank, w.step, w.start_ns, w.end_ns))
        .collect();
    if !k.ranks.is_empty() && !win.is_empty() {
        let mut b = breakdown(&k.ranks, &win, &k.ops.baselines(), found.windows_from);
        if let Some(cfg) = &opts.model {
            match closed_form(session, analysis, cfg, opts, hardware) {
                Ok(inputs) => {
                    let predicted = inputs.terms();
                    let first_stage = ranks_of_stage(analysis, &report.ranks, 0);
                    let measured = measured_closed_terms(&b, &first_stage);
                    b.closed_form = Some(ClosedForm {
                        ratio: ratios(&measured, &predicted),
                        inputs,
                        predicted,
                        measured,
                    });
                }
                Err(why) => b.notes.push(why),
            }
        }
        report.breakdown = Some(b);
    }
    // Ranks tied at the top stages' boundaries told apart by their own time in the stage (not
    // waiting in NCCL kernels), where NVTX gives the stages' times and the kernels are there.
    if !found.spans.is_empty() && !k.ranks.is_empty() {
        let own = own_time(&found.spans, &k.ranks);
        refine_ranks(&mut report.window, &own);
        for w in &mut report.windows {
            refine_ranks(w, &own);
        }
    }
    if !k.ranks.is_empty() || !k.compute.is_empty() {
        let lookup = StepLookup::new(&found.windows);
        let mut b = baselines(&k.ops, &k.ranks, &k.compute, &|r, t| lookup.step(r, t));
        locate_outliers(&mut b.worst, analysis);
        report.baselines = Some(b);
    }
}

/// Where the timeline finds each outlier: its start in the synchronised clock, and for an NCCL
/// kernel of an aligned process the collective its log line names (communicator id, opCount).
fn locate_outliers(worst: &mut [super::baselines::Outlier], analysis: &Analysis) {
    let comms = &analysis.communicators;
    for o in worst {
        let Some(rank) = o.rank else { continue };
        o.sync_start_ns = analysis.clocks.to_sync(rank, o.start_ns);
        if o.kind != "nccl" {
            continue;
        }
        let Some(p) = analysis.processes.iter().find(|p| p.global_rank == rank) else {
            continue;
        };
        let Some(pm) = analysis.alignments.get(&p.process) else {
            continue;
        };
        let op = pm
            .matched_spans()
            .find(|(k, _)| k.start_ns == o.start_ns)
            .and_then(|(_, m)| m.lines().find_map(|j| pm.log_ops.get(j)));
        if let Some(op) = op {
            o.comm_id = comms
                .comm_of(&pm.process, op.comm)
                .and_then(|c| comms.comms.get(c))
                .map(|c| c.id.clone());
            o.op_count = o.comm_id.as_ref().map(|_| op.op_count);
        }
    }
}

/// Pipeline-stage imbalance and the 1F1B runtime against the mean exposed step time.
fn pipeline_check(
    report: &StepsReport,
    found: &Found,
    k: &Kernels,
    analysis: &Analysis,
    opts: &StepOptions,
) -> Option<super::pipeline::PipelineCheck> {
    let grad_sync = |stage: u32| -> Option<f64> {
        let b = report.breakdown.as_ref()?;
        let of_stage = ranks_of_stage(analysis, &report.ranks, stage);
        let rows: Vec<f64> = b
            .per_rank
            .iter()
            .filter(|r| of_stage.contains(&r.rank))
            .map(|r| r.mean.exposed_ms.get("DP").copied().unwrap_or(0.0))
            .collect();
        (!rows.is_empty()).then(|| rows.iter().sum::<f64>() / rows.len() as f64)
    };
    let stage_of = |rank: u32| pp_stage(analysis, rank);
    let waits = pp_waits(&found.spans, &k.ranks);
    let pp_wait = |rank: u32, step: u64, kind: &str| {
        waits
            .get(&(rank, step, kind.to_string()))
            .copied()
            .unwrap_or(0.0)
    };
    check(
        &found.matrix,
        &PipelineInputs {
            pp: analysis.layout.sizes.map_or(1, |s| s.pp),
            microbatches: opts.model.as_ref().map(|c| c.microbatches() as u32),
            stage_of: &stage_of,
            grad_sync: &grad_sync,
            pp_wait: &pp_wait,
            measured_ms: mean_frontier(report),
        },
    )
}

/// Pipeline stages play different roles (the paper's `role_aware_needed`): every window says
/// so, whatever the stage sequences look like.
fn label_pipeline_roles(report: &mut StepsReport, pp: u32) {
    let label = |w: &mut Window| {
        if w.ambiguity.iter().any(|a| a.label == AMBIGUOUS_ROLES) {
            return;
        }
        w.ambiguity.push(Ambiguity {
            label: AMBIGUOUS_ROLES.into(),
            message: format!(
                "the layout has {pp} pipeline stages: their ranks play different roles (warm-up, \
                 steady 1F1B, cool-down), so a frontier across all ranks mixes them; see \
                 `pipeline` for the per-stage times"
            ),
            steps: Vec::new(),
        });
        w.ambiguous.get_or_insert_with(|| AMBIGUOUS_ROLES.into());
    };
    label(&mut report.window);
    report.windows.iter_mut().for_each(label);
}

/// Per (rank, stage): Σ over its stage spans of the time no NCCL kernel of the rank runs.
fn own_time(spans: &[StageSpan], ranks: &[RankKernels]) -> BTreeMap<(u32, String), f64> {
    let by_rank: BTreeMap<u32, &RankKernels> = ranks.iter().map(|r| (r.rank, r)).collect();
    let mut out: BTreeMap<(u32, String), f64> = BTreeMap::new();
    for s in spans {
        let Some(k) = by_rank.get(&s.rank) else {
            continue;
        };
        let (a, b) = (s.start_ns, s.end_ns);
        let first = k
            .nccl
            .partition_point(|n| n.start_ns < a)
            .saturating_sub(64);
        let mut nccl = 0i64;
        let mut reach = a;
        for n in k.nccl[first..].iter().take_while(|n| n.start_ns < b) {
            let (x, y) = (n.start_ns.max(reach), n.end_ns.min(b));
            if y > x {
                nccl += y - x;
                reach = y;
            }
        }
        *out.entry((s.rank, s.stage.clone())).or_default() += ((b - a) - nccl) as f64 / 1e6;
    }
    out
}

/// Per (rank, step, stage): the time its PP kernels ran inside its stage spans, ms.
fn pp_waits(spans: &[StageSpan], ranks: &[RankKernels]) -> BTreeMap<(u32, u64, String), f64> {
    let pp = parallelism_index("PP");
    let by_rank: BTreeMap<u32, &RankKernels> = ranks.iter().map(|r| (r.rank, r)).collect();
    let mut out = BTreeMap::new();
    for s in spans {
        let Some(k) = by_rank.get(&s.rank) else {
            continue;
        };
        let first = k
            .nccl
            .partition_point(|n| n.start_ns < s.start_ns)
            .saturating_sub(64);
        let ns: i64 = k.nccl[first..]
            .iter()
            .take_while(|n| n.start_ns < s.end_ns)
            .filter(|n| n.parallelism == pp)
            .map(|n| (n.end_ns.min(s.end_ns) - n.start_ns.max(s.start_ns)).max(0))
            .sum();
        if ns > 0 {
            *out.entry((s.rank, s.step, s.stage.clone())).or_default() += ns as f64 / 1e6;
        }
    }
    out
}

/// Orders the ranks tied at the top stages' boundaries by their own time in the stage.
fn refine_ranks(w: &mut Window, own: &BTreeMap<(u32, String), f64>) {
    let refine = |stage: &Option<String>, ranks: &mut Vec<u32>| -> Option<&'static str> {
        let stage = stage.as_ref()?;
        if ranks.len() < 2 {
            return None;
        }
        let of = |r: u32| own.get(&(r, stage.clone())).copied();
        if ranks.iter().any(|&r| of(r).is_none()) {
            return None;
        }
        ranks.sort_by(|&a, &b| {
            of(b)
                .unwrap_or(0.0)
                .total_cmp(&of(a).unwrap_or(0.0))
                .then(a.cmp(&b))
        });
        Some(RANK_BY_OWN_TIME)
    };
    if let Some(e) = refine(&w.top1, &mut w.top1_ranks) {
        w.rank_evidence = Some(e.into());
    }
    w.top1_rank = w.top1_ranks.first().copied();
    if let Some(e) = refine(&w.excess_top1, &mut w.excess_top1_ranks) {
        w.excess_rank_evidence = Some(e.into());
    }
    w.excess_top1_rank = w.excess_top1_ranks.first().copied();
}

/// The mean over steps of the step's exposed time (the frontier's last value).
fn mean_frontier(r: &StepsReport) -> f64 {
    let v: Vec<f64> = r
        .per_step
        .iter()
        .filter_map(|s| s.frontier_ms.last().copied())
        .collect();
    if v.is_empty() {
        0.0
    } else {
        v.iter().sum::<f64>() / v.len() as f64
    }
}

/// The pipeline stage of a global rank under the inferred or given layout (Megatron order).
fn pp_stage(analysis: &Analysis, rank: u32) -> Option<u32> {
    let s = analysis.layout.sizes?;
    (s.pp > 1).then(|| (rank / s.stride(Parallelism::PP)) % s.pp)
}

fn ranks_of_stage(analysis: &Analysis, ranks: &[u32], stage: u32) -> Vec<u32> {
    ranks
        .iter()
        .copied()
        .filter(|&r| pp_stage(analysis, r).unwrap_or(0) == stage)
        .collect()
}

/// Every stage file's rows, in load order (`None` without a stage file).
fn stage_file_rows(session: &Session) -> Option<MatrixBuilder> {
    let files = session.stage_files();
    if files.is_empty() {
        return None;
    }
    let mut b = MatrixBuilder::new();
    for f in files {
        let ids: Vec<u32> = f.file.stage_names.iter().map(|n| b.stage(n)).collect();
        for r in &f.file.records {
            b.push(r.step, r.rank, ids[r.stage as usize], r.duration_ms);
        }
        for &s in &f.file.incomplete_steps {
            b.flag(s);
        }
    }
    Some(b)
}

/// Every export's NVTX ranges, per process.
fn nvtx_processes<'a>(session: &'a Session, ranks: &Ranks) -> Vec<ProcessRanges<'a>> {
    let mut out = Vec::new();
    for e in session.exports() {
        let host = e.export.hosts.first().map_or("", String::as_str);
        let mut by_pid: BTreeMap<u32, Vec<&NvtxRange>> = BTreeMap::new();
        for r in &e.export.nvtx {
            by_pid.entry(r.pid).or_default().push(r);
        }
        for (pid, ranges) in by_pid {
            out.push(ProcessRanges {
                host,
                pid,
                rank: ranks.get(host, pid),
                ranges,
            });
        }
    }
    out
}

/// Every process's NCCL kernels as signatures (name and stream) in start order.
fn kernel_sequences(session: &Session, ranks: &Ranks) -> Vec<KernelSequence> {
    let mut sig: FxHashMap<(usize, u32), u32> = FxHashMap::default();
    type Kernels = Vec<(u32, i64, i64)>;
    let mut by_process: BTreeMap<(String, u32), Kernels> = BTreeMap::new();
    for e in session.exports() {
        let host = host_of(&e.export);
        let k = &e.export.kernels;
        for i in 0..k.len() {
            let (Some(pid), Some(s), Some(t)) = (k.pid(i), k.start_ns(i), k.end_ns(i)) else {
                continue;
            };
            let name = k
                .name(i)
                .map_or(0, |n| Arc::as_ptr(n) as *const u8 as usize);
            let next = sig.len() as u32;
            let id = *sig.entry((name, k.stream(i).unwrap_or(0))).or_insert(next);
            by_process
                .entry((host.clone(), pid))
                .or_default()
                .push((id, s, t));
        }
    }
    by_process
        .into_iter()
        .filter_map(|((host, pid), mut kernels)| {
            kernels.sort_by_key(|k| (k.1, k.2));
            Some(KernelSequence {
                rank: ranks.get(&host, pid)?,
                name: format!("{host}:{pid}"),
                kernels,
            })
        })
        .collect()
}

/// Operation keys, each numbered once.
#[derive(Default)]
struct KeyTable {
    keys: Vec<OpKey>,
    ids: FxHashMap<OpKey, u32>,
}

impl KeyTable {
    fn id(&mut self, k: OpKey) -> u32 {
        if let Some(&i) = self.ids.get(&k) {
            return i;
        }
        self.keys.push(k.clone());
        self.ids.insert(k, self.keys.len() as u32 - 1);
        self.keys.len() as u32 - 1
    }
}

/// Every process's NCCL kernels with their parallelism and operation key, and its compute busy
/// time; the keys they index.
fn rank_kernels(
    session: &Session,
    analysis: &Analysis,
    ranks: &Ranks,
) -> (Vec<RankKernels>, Vec<OpKey>) {
    let mut keys = KeyTable::default();
    let mut names = ingest_nsys::KernelNameCache::default();
    let mut out: BTreeMap<(String, u32), RankKernels> = BTreeMap::new();
    for pm in &analysis.alignments.processes {
        let host = pm.process.host.to_string();
        let Some(rank) = ranks
            .get(&host, pm.process.pid)
            .or_else(|| ranks.get("", pm.process.pid))
        else {
            continue;
        };
        let nccl = aligned_kernels(pm, analysis, &mut keys, &mut names);
        let process = format!("{host}:{}", pm.process.pid);
        out.insert(
            (host, pm.process.pid),
            RankKernels {
                rank,
                process,
                nccl,
                busy: None,
            },
        );
    }
    unaligned_kernels(session, ranks, &mut out, &mut keys, &mut names);
    add_busy_time(session, &mut out);
    let mut v: Vec<RankKernels> = out.into_values().collect();
    for r in &mut v {
        r.nccl.sort_by_key(|s| (s.start_ns, s.end_ns));
    }
    v.sort_by_key(|r| r.rank);
    (v, keys.keys)
}

/// One aligned process's kernels: a matched kernel's key from its log lines (operation, bytes,
/// communicator and its parallelism), an unmatched one's from its name.
fn aligned_kernels(
    pm: &pipeline::ProcessMatch,
    analysis: &Analysis,
    keys: &mut KeyTable,
    names: &mut ingest_nsys::KernelNameCache,
) -> Vec<NcclSpan> {
    let mut par: Vec<Parallelism> = vec![Parallelism::Unknown; analysis.communicators.comms.len()];
    for c in &analysis.layout.comms {
        if let Some(p) = par.get_mut(c.comm) {
            *p = c.parallelism;
        }
    }
    let mut comm_of = analysis.communicators.comm_lookup(&pm.process);
    let mut spans = Vec::with_capacity(pm.kernels.len());
    for (k, m) in pm
        .alignment
        .per_kernel
        .iter()
        .enumerate()
        .take(pm.kernels.len())
    {
        let (Some(s), Some(e)) = (pm.kernels.start_ns(k), pm.kernels.end_ns(k)) else {
            continue;
        };
        let key = match m {
            Some(m) => {
                let lines: Vec<usize> = m.lines().collect();
                let site = pm.log_ops.site(lines[0]);
                let comm = site.and_then(|s| comm_of(s.comm));
                let bytes: Option<u64> = lines
                    .iter()
                    .map(|&l| {
                        Some(pm.log_ops.call(l)?.count * pm.log_ops.site(l)?.datatype?.size_bytes())
                    })
                    .sum();
                let op = match site.map(|s| s.op) {
                    Some(OpType::Send | OpType::Recv) => "SendRecv".to_string(),
                    Some(op) => op.name().to_string(),
                    None => "unknown".to_string(),
                };
                OpKey {
                    op,
                    bytes,
                    comm: comm
                        .and_then(|c| analysis.communicators.comms.get(c))
                        .map(|c| c.id.clone()),
                    parallelism: comm
                        .and_then(|c| par.get(c))
                        .map_or("unknown", |p| p.name())
                        .to_string(),
                }
            }
            None => unmatched_key(pm.kernels.get(k).map(|k| k.name), names),
        };
        spans.push(NcclSpan {
            start_ns: s,
            end_ns: e,
            parallelism: parallelism_index(&key.parallelism),
            key: keys.id(key),
        });
    }
    spans
}

/// The kernels of processes no log names (every kernel unmatched, parallelism unknown).
fn unaligned_kernels(
    session: &Session,
    ranks: &Ranks,
    out: &mut BTreeMap<(String, u32), RankKernels>,
    keys: &mut KeyTable,
    names: &mut ingest_nsys::KernelNameCache,
) {
    let aligned: BTreeSet<(String, u32)> = out.keys().cloned().collect();
    for e in session.exports() {
        let host = host_of(&e.export);
        let k = &e.export.kernels;
        for i in 0..k.len() {
            let Some(pid) = k.pid(i) else { continue };
            if aligned.contains(&(host.clone(), pid)) {
                continue;
            }
            let (Some(s), Some(t), Some(rank)) =
                (k.start_ns(i), k.end_ns(i), ranks.get(&host, pid))
            else {
                continue;
            };
            let key = keys.id(unmatched_key(k.name(i).cloned(), names));
            out.entry((host.clone(), pid))
                .or_insert_with(|| RankKernels {
                    rank,
                    process: format!("{host}:{pid}"),
                    ..RankKernels::default()
                })
                .nccl
                .push(NcclSpan {
                    start_ns: s,
                    end_ns: t,
                    parallelism: parallelism_index("unknown"),
                    key,
                });
        }
    }
}

/// Each process's compute busy time (all its devices merged), where its export's compute
/// kernels were read.
fn add_busy_time(session: &Session, out: &mut BTreeMap<(String, u32), RankKernels>) {
    for e in session.exports() {
        let Some(c) = &e.compute else { continue };
        let host = host_of(&e.export);
        let mut per_pid: BTreeMap<u32, BusyMerger> = BTreeMap::new();
        for t in &c.tracks {
            let m = per_pid.entry(t.pid).or_default();
            for &(a, b) in &t.busy {
                m.add(a, b);
            }
        }
        for (pid, m) in per_pid {
            if let Some(rk) = out.get_mut(&(host.clone(), pid)) {
                rk.busy = Some(m.finish());
            }
        }
    }
}

fn unmatched_key(name: Option<Arc<str>>, names: &mut ingest_nsys::KernelNameCache) -> OpKey {
    let op = name
        .and_then(|n| names.decode(&n))
        .and_then(|d| d.op)
        .map_or("unknown".to_string(), |op| op.name().to_string());
    OpKey {
        op,
        bytes: None,
        comm: None,
        parallelism: "unknown".into(),
    }
}

/// Every compute kernel name over the exports.
fn compute_stats(session: &Session, ranks: &Ranks) -> Vec<KernelStats> {
    let mut by_name: BTreeMap<Arc<str>, KernelStats> = BTreeMap::new();
    for e in session.exports() {
        let Some(c) = &e.compute else { continue };
        let host = host_of(&e.export);
        for n in &c.names {
            let s = by_name
                .entry(n.name.clone())
                .or_insert_with(|| KernelStats {
                    name: n.name.to_string(),
                    count: 0,
                    min_ns: i64::MAX,
                    sum_ns: 0,
                    worst: Vec::new(),
                });
            s.count += n.count;
            s.min_ns = s.min_ns.min(n.min_ns);
            s.sum_ns += n.sum_ns;
            for w in &n.worst {
                s.worst.push((
                    ranks.get(&host, w.pid),
                    format!("{host}:{}", w.pid),
                    w.start_ns,
                    w.duration_ns,
                ));
            }
        }
    }
    by_name.into_values().collect()
}

/// Finds the step a time of a rank falls in.
struct StepLookup {
    by_rank: BTreeMap<u32, Vec<(i64, i64, u64)>>,
}

impl StepLookup {
    fn new(windows: &[StepWindow]) -> StepLookup {
        let mut by_rank: BTreeMap<u32, Vec<(i64, i64, u64)>> = BTreeMap::new();
        for w in windows {
            by_rank
                .entry(w.rank)
                .or_default()
                .push((w.start_ns, w.end_ns, w.step));
        }
        for v in by_rank.values_mut() {
            v.sort_unstable();
        }
        StepLookup { by_rank }
    }

    fn step(&self, rank: u32, t: i64) -> Option<u64> {
        let v = self.by_rank.get(&rank)?;
        let i = v.partition_point(|w| w.0 <= t);
        let w = v.get(i.checked_sub(1)?)?;
        (t < w.1).then_some(w.2)
    }
}

/// ConfigTuner's inputs from the config, the hardware and the run's own bus bandwidths.
fn closed_form(
    session: &Session,
    analysis: &Analysis,
    cfg: &theory::TheoryConfig,
    opts: &StepOptions,
    hardware: Option<&theory::Hardware>,
) -> Result<ClosedFormInputs, String> {
    let peak = opts
        .peak_tflops
        .or_else(|| {
            hardware
                .and_then(|h| h.compute)
                .map(|c| c.tensor_fp16_tflops)
        })
        .ok_or("no closed forms: no peak FLOP/s (give one, or a hardware preset that has it)")?;
    let m = &cfg.model;
    let p = &cfg.parallel;
    let parameters = theory::volume::parameters(m.layers, m.hidden, m.vocab, m.seq_len) as f64;
    // The run's own bus bandwidth per parallelism: the median over its communicators' medians.
    let stats = crate::comm_stats(session, analysis);
    let mut per: BTreeMap<&'static str, Vec<f64>> = BTreeMap::new();
    for c in &analysis.layout.comms {
        if let Some(bw) = stats.get(c.comm).and_then(|s| s.median_bus_bw_gbps) {
            per.entry(c.parallelism.name()).or_default().push(bw);
        }
    }
    let c = |p: &str| -> Option<f64> {
        let mut v = per.get(p)?.clone();
        v.sort_by(f64::total_cmp);
        v.get(v.len() / 2).copied()
    };
    Ok(ClosedFormInputs {
        parameters,
        layers: m.layers as f64,
        hidden: m.hidden as f64,
        seq_len: m.seq_len as f64,
        micro_batch: m.micro_batch as f64,
        microbatches: cfg.microbatches() as f64,
        tp: p.tp as f64,
        pp: p.pp as f64,
        dp: p.dp as f64,
        virtual_stages: p.virtual_stages as f64,
        bytes_per_element: m.bytes_per_element as f64,
        peak_tflops: peak,
        utilisation: opts.utilisation,
        c_tp_gbps: c("TP"),
        c_pp_gbps: c("PP"),
        c_dp_gbps: c("DP"),
        recompute: opts.recompute,
    })
}

/// The matrix of a session's steps alone (for tests and the page's drill-down).
pub fn matrix_of(session: &Session, analysis: &Analysis, mapping: &StageMapping) -> StageMatrix {
    let ranks = Ranks::new(session, analysis);
    if let Some(b) = stage_file_rows(session) {
        return b.finish();
    }
    let processes = nvtx_processes(session, &ranks);
    stage_rows(&processes, mapping).rows.finish()
}
