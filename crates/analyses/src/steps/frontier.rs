//! StageFrontier (seed `stagefrontier.txt`, §3–4 and appendix C): per step, the frontier
//! `F[s] = max_r P[r][s]` of the ranks' cumulative stage times, its advances (an exact, additive
//! account of the step's exposed time: `Σ_s a[s] = F[S] = max_r T[r]`), the leader ranks at each
//! boundary with their lead over the runner-up, each rank's slack `σ[r][s] = F[s] − P[r][s]`;
//! over a window, the stage shares, the routing candidates by θ, the bounds M (Σ per-stage
//! maxima) and A (Σ per-stage means) beside `F_S`, and labels where the data cannot decide.
//!
//! One pass over steps, ranks and stages: O(steps · ranks · stages) time, O(ranks · stages)
//! memory besides the matrix and the per-step rows.

use super::matrix::{StageMatrix, StepFlaw};
use super::types::{
    Ambiguity, OrderedShares, RankCredit, Settings, StepRow, Window, AMBIGUOUS_MISSING_STAGE,
    AMBIGUOUS_ONE_RANK, AMBIGUOUS_ROLES, AMBIGUOUS_WORLD_CHANGED, RANK_TIE, RANK_UNIQUE_LEADER,
};

/// Per-step rows and the windows of a matrix.
pub struct Frontier {
    pub per_step: Vec<StepRow>,
    /// Over every complete step.
    pub window: Window,
    /// The paper's windows: runs of consecutive complete steps with one world (rank set); a
    /// flawed step or a changed world closes the current one.
    pub windows: Vec<Window>,
}

/// What one step contributes to a window's sums.
struct StepSums {
    /// Per stage: the advance, the per-stage max and mean over ranks.
    advance: Vec<f64>,
    max: Vec<f64>,
    mean: Vec<f64>,
    /// Per rank (index into the matrix's ranks) and stage: the slack.
    slack: Vec<f64>,
    /// Per stage: (rank index, lead share in ms, advance share in ms) of each leader.
    credit: Vec<Vec<(u32, f64, f64)>>,
    switches: u32,
}

/// Runs StageFrontier over every step of `m`.
pub fn frontier(m: &StageMatrix, settings: &Settings) -> Frontier {
    let settings = settings.clamped();
    let (ns, nr) = (m.stages(), m.ranks.len());
    let mut per_step = Vec::with_capacity(m.steps.len());
    let mut all = WindowSums::new(ns, nr);
    let mut windows: Vec<Window> = Vec::new();
    let mut current = WindowSums::new(ns, nr);
    let mut world: Option<Vec<bool>> = None;
    let mut worlds_seen = 0usize;
    let mut flawed: Vec<(u64, StepFlaw)> = Vec::new();
    for t in 0..m.steps.len() {
        let members: Vec<bool> = (0..nr).map(|r| m.present(t, r)).collect();
        if world.as_ref() != Some(&members) {
            worlds_seen += 1;
            close(&mut current, &mut windows, m, &settings);
            world = Some(members.clone());
        }
        let (row, sums) = step(m, t, &members, &settings);
        let flaw = m.flaw(t);
        per_step.push(row);
        match flaw {
            Some(f) => {
                flawed.push((m.steps[t], f));
                close(&mut current, &mut windows, m, &settings);
            }
            None => {
                let (groups, ng) = (&m.stage_group, m.groups.len());
                all.add(&sums, m.steps[t], &members, groups, ng);
                current.add(&sums, m.steps[t], &members, groups, ng);
            }
        }
    }
    close(&mut current, &mut windows, m, &settings);
    let mut window = all.window(m, &settings);
    window.ambiguity = whole_run_ambiguity(m, &window, worlds_seen, &flawed);
    window.ambiguous = window.ambiguity.first().map(|a| a.label.clone());
    Frontier {
        per_step,
        window,
        windows,
    }
}

/// Closes the current window (if it has steps) into `windows`.
fn close(current: &mut WindowSums, windows: &mut Vec<Window>, m: &StageMatrix, s: &Settings) {
    if current.steps > 0 {
        let mut w = current.window(m, s);
        if current.max_ranks <= 1 {
            w.ambiguity.push(one_rank());
        }
        w.ambiguous = w.ambiguity.first().map(|a| a.label.clone());
        windows.push(w);
    }
    *current = WindowSums::new(m.stages(), m.ranks.len());
}

fn one_rank() -> Ambiguity {
    Ambiguity {
        label: AMBIGUOUS_ONE_RANK.into(),
        message: "one rank: the frontier is that rank's own stage vector, with no cross-rank \
                  evidence of where delay becomes group-visible"
            .into(),
        steps: Vec::new(),
    }
}

/// The labels of the whole run's window: one rank, flawed steps (left out of the window), a
/// world that changed.
fn whole_run_ambiguity(
    m: &StageMatrix,
    w: &Window,
    worlds: usize,
    flawed: &[(u64, StepFlaw)],
) -> Vec<Ambiguity> {
    let mut out = Vec::new();
    let order: Vec<u64> = flawed
        .iter()
        .filter(|f| f.1 == StepFlaw::OrderDiffers)
        .map(|f| f.0)
        .collect();
    let missing: Vec<u64> = flawed
        .iter()
        .filter(|f| f.1 == StepFlaw::MissingStage)
        .map(|f| f.0)
        .collect();
    if !order.is_empty() {
        out.push(Ambiguity {
            label: AMBIGUOUS_ROLES.into(),
            message: format!(
                "{} step(s) where ranks ran different stage sequences (different roles, e.g. \
                 pipeline stages): a global frontier across them is unsafe, and they are left \
                 out of the window",
                order.len()
            ),
            steps: order,
        });
    }
    if !missing.is_empty() {
        out.push(Ambiguity {
            label: AMBIGUOUS_MISSING_STAGE.into(),
            message: format!(
                "{} step(s) where a rank lacks a stage (or a row of it was bad): incomplete, left \
                 out of the window",
                missing.len()
            ),
            steps: missing,
        });
    }
    if worlds > 1 {
        out.push(Ambiguity {
            label: AMBIGUOUS_WORLD_CHANGED.into(),
            message: format!(
                "the set of ranks changed {} time(s) between steps: each world is a window of \
                 its own (`windows`)",
                worlds - 1
            ),
            steps: Vec::new(),
        });
    }
    if w.ranks <= 1 && w.steps > 0 {
        out.insert(0, one_rank());
    }
    let _ = m;
    out
}

/// One step: its row for `per_step` and its contribution to the window sums.
fn step(m: &StageMatrix, t: usize, members: &[bool], s: &Settings) -> (StepRow, StepSums) {
    let (ns, nr) = (m.stages(), m.ranks.len());
    let present: Vec<usize> = (0..nr).filter(|&r| members[r]).collect();
    let mut prefix = vec![0.0f64; present.len()];
    let mut frontier = Vec::with_capacity(ns);
    let mut advance = Vec::with_capacity(ns);
    let mut leaders: Vec<Vec<u32>> = Vec::with_capacity(ns);
    let mut lead_ms = Vec::with_capacity(ns);
    let mut max = vec![0.0f64; ns];
    let mut mean = vec![0.0f64; ns];
    let mut slack = vec![0.0f64; nr * ns];
    let mut credit: Vec<Vec<(u32, f64, f64)>> = Vec::with_capacity(ns);
    let mut prev_f = 0.0f64;
    // The step's own scale, for the tie tolerance: its slowest rank's total.
    let total: f64 = present
        .iter()
        .map(|&r| m.row(t, r).iter().filter(|d| !d.is_nan()).sum::<f64>())
        .fold(0.0, f64::max);
    let tol = s.tie_abs_ms + s.tie_rel * total;
    let mut last_unique: Option<u32> = None;
    let mut switches = 0u32;
    for stage in 0..ns {
        let mut f = f64::NEG_INFINITY;
        let mut sum = 0.0;
        for (i, &r) in present.iter().enumerate() {
            let d = m.row(t, r)[stage];
            let d = if d.is_nan() { 0.0 } else { d };
            prefix[i] += d;
            f = f.max(prefix[i]);
            max[stage] = max[stage].max(d);
            sum += d;
        }
        if present.is_empty() {
            f = 0.0;
        }
        mean[stage] = if present.is_empty() {
            0.0
        } else {
            sum / present.len() as f64
        };
        let mut lead: Vec<u32> = Vec::new();
        let mut runner_up = f64::NEG_INFINITY;
        for (i, &r) in present.iter().enumerate() {
            slack[r * ns + stage] = f - prefix[i];
            if f - prefix[i] <= tol {
                lead.push(i as u32);
            } else {
                runner_up = runner_up.max(prefix[i]);
            }
        }
        let a = f - prev_f;
        let gap = if runner_up.is_finite() {
            f - runner_up
        } else {
            0.0
        };
        let n = lead.len().max(1) as f64;
        credit.push(
            lead.iter()
                .map(|&i| (present[i as usize] as u32, gap / n, a / n))
                .collect(),
        );
        // A switch is counted only between confident unique leaders.
        if lead.len() == 1 && gap > tol {
            let who = present[lead[0] as usize] as u32;
            if last_unique.is_some_and(|l| l != who) {
                switches += 1;
            }
            last_unique = Some(who);
        }
        leaders.push(lead.iter().map(|&i| m.ranks[present[i as usize]]).collect());
        lead_ms.push(gap);
        frontier.push(f);
        advance.push(a);
        prev_f = f;
    }
    let row = StepRow {
        step: m.steps[t],
        ranks: present.len() as u32,
        frontier_ms: frontier,
        advance_ms: advance.clone(),
        leaders,
        lead_ms,
        switches,
        incomplete: m.flaw(t).map(|f| {
            match f {
                StepFlaw::MissingStage => AMBIGUOUS_MISSING_STAGE,
                StepFlaw::OrderDiffers => AMBIGUOUS_ROLES,
            }
            .to_string()
        }),
    };
    let sums = StepSums {
        advance,
        max,
        mean,
        slack,
        credit,
        switches,
    };
    (row, sums)
}

/// The routing of a window from its groups' advances: top-1, top-2, the candidates (the
/// smallest set by share reaching θ) and the co-critical stages (within the share tie of the
/// top one; empty when none is).
fn routing(
    m: &StageMatrix,
    group_adv: &[f64],
    s: &Settings,
) -> (Option<String>, Vec<String>, Vec<String>, Vec<String>) {
    let total: f64 = group_adv.iter().sum();
    if total <= 0.0 {
        return (None, Vec::new(), Vec::new(), Vec::new());
    }
    let share = |g: usize| group_adv[g] / total;
    let mut ranked: Vec<usize> = (0..group_adv.len()).collect();
    ranked.sort_by(|&a, &b| group_adv[b].total_cmp(&group_adv[a]).then(a.cmp(&b)));
    let name = |g: &usize| m.groups[*g].clone();
    let mut candidates = Vec::new();
    let mut cumulative = 0.0;
    for g in &ranked {
        if cumulative >= s.theta {
            break;
        }
        candidates.push(name(g));
        cumulative += share(*g);
    }
    let best = share(ranked[0]);
    let near: Vec<String> = ranked
        .iter()
        .filter(|&&g| best - share(g) <= s.share_tie)
        .map(name)
        .collect();
    let co_critical = if near.len() > 1 { near } else { Vec::new() };
    let top2 = ranked.iter().take(2).map(name).collect();
    (Some(name(&ranked[0])), top2, candidates, co_critical)
}

/// How a stage's suspects were told: one alone, or a tie.
fn evidence(ranks: &[u32]) -> Option<String> {
    match ranks.len() {
        0 => None,
        1 => Some(RANK_UNIQUE_LEADER.into()),
        _ => Some(RANK_TIE.into()),
    }
}

/// A window's running sums.
struct WindowSums {
    steps: u64,
    first: Option<u64>,
    last: Option<u64>,
    max_ranks: usize,
    min_ranks: usize,
    advance: Vec<f64>,
    max: Vec<f64>,
    mean: Vec<f64>,
    /// Per rank index and stage: Σ slack, and the steps the rank was present in.
    slack: Vec<f64>,
    rank_steps: Vec<u64>,
    /// Per stage and rank index: Σ lead, Σ advance credited.
    lead: Vec<f64>,
    credited: Vec<f64>,
    switches: u64,
    /// Per step of the window, per group: the advance (for the medians of the excess).
    group_advances: Vec<Vec<f64>>,
}

impl WindowSums {
    fn new(ns: usize, nr: usize) -> WindowSums {
        WindowSums {
            steps: 0,
            first: None,
            last: None,
            max_ranks: 0,
            min_ranks: usize::MAX,
            advance: vec![0.0; ns],
            max: vec![0.0; ns],
            mean: vec![0.0; ns],
            slack: vec![0.0; nr * ns],
            rank_steps: vec![0; nr],
            lead: vec![0.0; ns * nr],
            credited: vec![0.0; ns * nr],
            switches: 0,
            group_advances: Vec::new(),
        }
    }

    fn add(&mut self, s: &StepSums, step: u64, members: &[bool], groups: &[u32], ng: usize) {
        let mut g = vec![0.0; ng];
        for (k, a) in s.advance.iter().enumerate() {
            g[groups[k] as usize] += a;
        }
        self.group_advances.push(g);
        let ns = self.advance.len();
        let nr = self.rank_steps.len();
        self.steps += 1;
        self.first.get_or_insert(step);
        self.last = Some(step);
        let n = members.iter().filter(|&&m| m).count();
        self.max_ranks = self.max_ranks.max(n);
        self.min_ranks = self.min_ranks.min(n);
        for k in 0..ns {
            self.advance[k] += s.advance[k];
            self.max[k] += s.max[k];
            self.mean[k] += s.mean[k];
            for &(r, lead, adv) in &s.credit[k] {
                self.lead[k * nr + r as usize] += lead;
                self.credited[k * nr + r as usize] += adv;
            }
        }
        for r in (0..nr).filter(|&r| members[r]) {
            self.rank_steps[r] += 1;
            for k in 0..ns {
                self.slack[r * ns + k] += s.slack[r * ns + k];
            }
        }
        self.switches += u64::from(s.switches);
    }

    fn window(&self, m: &StageMatrix, s: &Settings) -> Window {
        let ns = m.stages();
        let ng = m.groups.len();
        let total: f64 = self.advance.iter().sum();
        let by_group = |v: &[f64]| -> Vec<f64> {
            let mut g = vec![0.0; ng];
            for k in 0..ns {
                g[m.stage_group[k] as usize] += v[k];
            }
            g
        };
        let share_of = |x: f64| if total > 0.0 { x / total } else { 0.0 };
        let group_adv = by_group(&self.advance);
        let shares: Vec<(String, f64)> = m
            .groups
            .iter()
            .zip(&group_adv)
            .map(|(g, &a)| (g.clone(), share_of(a)))
            .collect();
        let (top1, top2, candidates, co_critical) = routing(m, &group_adv, s);
        let credits = self.credits(m);
        let suspects_of = |stage: &Option<String>| {
            stage
                .as_ref()
                .and_then(|t| credits.iter().find(|c| &c.stage == t))
                .map(|c| c.suspects())
                .unwrap_or_default()
        };
        let top1_ranks = suspects_of(&top1);
        let excess = self.excess(ng);
        let excess_top1 = (0..ng)
            .filter(|&g| excess[g] > 0.0)
            .max_by(|&a, &b| excess[a].total_cmp(&excess[b]).then(b.cmp(&a)))
            .map(|g| m.groups[g].clone());
        let excess_top1_ranks = suspects_of(&excess_top1);
        let slack_ms = self.slack_means(ns);
        let sum_of_max: f64 = self.max.iter().sum();
        let sum_of_mean: f64 = self.mean.iter().sum();
        let argmax = |v: &[f64]| {
            (0..v.len())
                .max_by(|&a, &b| v[a].total_cmp(&v[b]).then(b.cmp(&a)))
                .map(|g| m.groups[g].clone())
        };
        Window {
            steps: self.steps,
            first_step: self.first,
            last_step: self.last,
            ranks: self.max_ranks as u32,
            frontier_ms: total,
            sum_of_max_ms: sum_of_max,
            sum_of_mean_ms: sum_of_mean,
            share: OrderedShares(shares),
            theta: s.theta,
            top1,
            top2,
            ambiguous: None,
            candidates,
            co_critical,
            top1_rank: top1_ranks.first().copied(),
            rank_evidence: evidence(&top1_ranks),
            top1_ranks,
            stage_share: m.expanded().then(|| {
                OrderedShares(
                    m.stage_names
                        .iter()
                        .zip(&self.advance)
                        .map(|(n, &a)| (n.clone(), share_of(a)))
                        .collect(),
                )
            }),
            advance_ms: OrderedShares(
                m.groups
                    .iter()
                    .zip(&group_adv)
                    .map(|(g, &a)| (g.clone(), a))
                    .collect(),
            ),
            excess_ms: OrderedShares(
                m.groups
                    .iter()
                    .zip(&excess)
                    .map(|(g, &e)| (g.clone(), e))
                    .collect(),
            ),
            excess_top1,
            excess_top1_rank: excess_top1_ranks.first().copied(),
            excess_rank_evidence: evidence(&excess_top1_ranks),
            excess_top1_ranks,
            max_top1: (total > 0.0)
                .then(|| argmax(&by_group(&self.max)))
                .flatten(),
            mean_top1: (total > 0.0)
                .then(|| argmax(&by_group(&self.mean)))
                .flatten(),
            switches: self.switches,
            credits,
            slack_ms,
            ambiguity: Vec::new(),
        }
    }

    /// Per group: who held its boundaries, the lead over the runner-up and the advance credited
    /// (split among tied leaders).
    fn credits(&self, m: &StageMatrix) -> Vec<RankCredit> {
        let (ns, nr) = (m.stages(), m.ranks.len());
        (0..m.groups.len())
            .map(|g| {
                let mut lead = vec![0.0; nr];
                let mut adv = vec![0.0; nr];
                for k in (0..ns).filter(|&k| m.stage_group[k] as usize == g) {
                    for r in 0..nr {
                        lead[r] += self.lead[k * nr + r];
                        adv[r] += self.credited[k * nr + r];
                    }
                }
                RankCredit::of(&m.groups[g], &m.ranks, &lead, &adv)
            })
            .collect()
    }

    /// Per rank and stage: the mean slack over the steps the rank was in.
    fn slack_means(&self, ns: usize) -> Vec<Vec<f64>> {
        (0..self.rank_steps.len())
            .map(|r| {
                let n = self.rank_steps[r].max(1) as f64;
                (0..ns).map(|k| self.slack[r * ns + k] / n).collect()
            })
            .collect()
    }

    /// Per group: Σ over the window's steps of the advance above the group's median advance.
    fn excess(&self, ng: usize) -> Vec<f64> {
        (0..ng)
            .map(|g| {
                let mut v: Vec<f64> = self.group_advances.iter().map(|a| a[g]).collect();
                if v.is_empty() {
                    return 0.0;
                }
                v.sort_by(f64::total_cmp);
                let n = v.len();
                let median = if n % 2 == 1 {
                    v[n / 2]
                } else {
                    (v[n / 2 - 1] + v[n / 2]) / 2.0
                };
                v.iter().map(|a| (a - median).max(0.0)).sum()
            })
            .collect()
    }
}
