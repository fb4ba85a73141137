//! The plain result types of the steps analysis, serialised as CONTRACT.md's `steps` (field
//! names fixed there; the rest are additions beside them).

use serde::ser::SerializeMap;
use serde::{Deserialize, Serialize, Serializer};

/// Ambiguity labels (seed `stagefrontier.txt`, §3 edge cases and appendix C).
pub const AMBIGUOUS_ONE_RANK: &str = "one_rank";
pub const AMBIGUOUS_MISSING_STAGE: &str = "missing_stage";
pub const AMBIGUOUS_WORLD_CHANGED: &str = "world_size_changed";
/// The paper's `role_aware_needed`: ranks play different roles (they run different stage
/// sequences, or the layout has pipeline stages), so a global frontier over them is unsafe.
pub const AMBIGUOUS_ROLES: &str = "role_aware_needed";

/// How the rank of a top stage was told: it alone held the stage's boundaries.
pub const RANK_UNIQUE_LEADER: &str = "unique_leader";
/// Several ranks held them together (a synchronised group) and nothing tells them apart.
pub const RANK_TIE: &str = "tie";
/// Several held them; ordered by their own time in the stage (the stage's time not spent in
/// NCCL kernels: the rank that worked or stalled rather than waited).
pub const RANK_BY_OWN_TIME: &str = "own_time";

/// The knobs of the analysis.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Settings {
    /// Routing threshold: the candidates are the smallest set of stages by share whose shares
    /// reach θ. Clamped to the paper's 0.70–0.90.
    pub theta: f64,
    /// Ranks within `tie_abs_ms + tie_rel · (the step's slowest total)` of the frontier tie.
    pub tie_rel: f64,
    pub tie_abs_ms: f64,
    /// Stages whose share is within this of the top stage's are co-critical.
    pub share_tie: f64,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            theta: 0.8,
            tie_rel: 0.002,
            tie_abs_ms: 1e-6,
            share_tie: 0.05,
        }
    }
}

impl Settings {
    /// θ within 0.70–0.90, tolerances non-negative.
    pub fn clamped(&self) -> Settings {
        Settings {
            theta: if self.theta.is_nan() {
                0.8
            } else {
                self.theta.clamp(0.7, 0.9)
            },
            tie_rel: self.tie_rel.max(0.0),
            tie_abs_ms: self.tie_abs_ms.max(0.0),
            share_tie: self.share_tie.max(0.0),
        }
    }
}

/// One step: the contract's `per_step` entry.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StepRow {
    pub step: u64,
    /// Ranks that reported this step.
    pub ranks: u32,
    /// Per stage: max over ranks of the cumulative stage time.
    pub frontier_ms: Vec<f64>,
    /// Per stage: the frontier's increment.
    pub advance_ms: Vec<f64>,
    /// Per stage: the ranks at the frontier at that boundary (ties listed, ascending).
    pub leaders: Vec<Vec<u32>>,
    /// Per stage: how far the leaders are ahead of the runner-up (0 when all tie).
    pub lead_ms: Vec<f64>,
    /// Changes of the confident unique leader from one boundary to the next.
    pub switches: u32,
    /// Why the step is left out of the window, if it is (`missing_stage`,
    /// `role_aware_needed`).
    pub incomplete: Option<String>,
}

/// A label where the data cannot decide, with the steps it concerns.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Ambiguity {
    pub label: String,
    pub message: String,
    pub steps: Vec<u64>,
}

/// One rank's part in holding a stage's boundaries.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RankShare {
    pub rank: u32,
    /// Σ over steps of its lead over the runner-up at the stage's boundaries (split among tied
    /// leaders): time the group waited for this rank alone.
    pub lead_ms: f64,
    /// Σ of the stage's advances at boundaries it led (split among tied leaders).
    pub advance_ms: f64,
}

/// Who held a stage's boundaries over a window, most lead first (at most [`RankCredit::KEEP`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RankCredit {
    pub stage: String,
    pub ranks: Vec<RankShare>,
}

impl RankCredit {
    pub const KEEP: usize = 8;

    /// From per rank-index sums.
    pub fn of(stage: &str, ranks: &[u32], lead: &[f64], advance: &[f64]) -> RankCredit {
        let mut v: Vec<RankShare> = (0..ranks.len())
            .filter(|&r| lead[r] > 0.0 || advance[r] > 0.0)
            .map(|r| RankShare {
                rank: ranks[r],
                lead_ms: lead[r],
                advance_ms: advance[r],
            })
            .collect();
        v.sort_by(|a, b| {
            b.lead_ms
                .total_cmp(&a.lead_ms)
                .then(b.advance_ms.total_cmp(&a.advance_ms))
                .then(a.rank.cmp(&b.rank))
        });
        v.truncate(Self::KEEP);
        RankCredit {
            stage: stage.to_string(),
            ranks: v,
        }
    }

    /// The ranks that held the stage: those within 80 % of the largest lead (by advance credited
    /// when no rank ever led alone).
    pub fn suspects(&self) -> Vec<u32> {
        let best_lead = self.ranks.first().map_or(0.0, |r| r.lead_ms);
        if best_lead > 0.0 {
            return self
                .ranks
                .iter()
                .filter(|r| r.lead_ms >= 0.8 * best_lead)
                .map(|r| r.rank)
                .collect();
        }
        let best = self.ranks.iter().map(|r| r.advance_ms).fold(0.0, f64::max);
        self.ranks
            .iter()
            .filter(|r| best > 0.0 && r.advance_ms >= 0.8 * best)
            .map(|r| r.rank)
            .collect()
    }
}

/// Stage name → value, in stage order (serialised as a JSON object, read back in its order).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct OrderedShares(pub Vec<(String, f64)>);

impl OrderedShares {
    pub fn get(&self, name: &str) -> Option<f64> {
        self.0.iter().find(|(n, _)| n == name).map(|(_, v)| *v)
    }
}

impl Serialize for OrderedShares {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(self.0.len()))?;
        for (k, v) in &self.0 {
            m.serialize_entry(k, v)?;
        }
        m.end()
    }
}

/// Reads the object [`OrderedShares`] writes (a derived reader expected a sequence: the page's
/// client could not read the insights, and dropped its worker, after every run with steps).
impl<'de> Deserialize<'de> for OrderedShares {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct InOrder;
        impl<'de> serde::de::Visitor<'de> for InOrder {
            type Value = OrderedShares;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("an object of stage names and numbers")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut m: A,
            ) -> Result<Self::Value, A::Error> {
                let mut out = Vec::new();
                while let Some(entry) = m.next_entry::<String, f64>()? {
                    out.push(entry);
                }
                Ok(OrderedShares(out))
            }
        }
        d.deserialize_map(InOrder)
    }
}

/// A window of steps: the contract's `window`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Window {
    pub steps: u64,
    pub first_step: Option<u64>,
    pub last_step: Option<u64>,
    /// The most ranks a step of the window had.
    pub ranks: u32,
    /// Σ over steps of the last frontier (the exposed makespan).
    pub frontier_ms: f64,
    /// Σ over steps and stages of the per-stage maximum over ranks (M).
    pub sum_of_max_ms: f64,
    /// Σ over steps and stages of the per-stage mean over ranks (A).
    pub sum_of_mean_ms: f64,
    /// Per stage (group, before expansion): Σ advances / `frontier_ms`.
    pub share: OrderedShares,
    pub theta: f64,
    pub top1: Option<String>,
    pub top2: Vec<String>,
    /// The first label of `ambiguity`, or null.
    pub ambiguous: Option<String>,
    /// The smallest set of stages by share whose shares reach θ.
    pub candidates: Vec<String>,
    /// Stages whose share is within the tie tolerance of the top one (empty when none is).
    pub co_critical: Vec<String>,
    /// The ranks that held the top stage's boundaries (see [`RankCredit::suspects`]), the most
    /// likely first.
    pub top1_ranks: Vec<u32>,
    /// The first of them, and how it was told ([`RANK_UNIQUE_LEADER`], [`RANK_TIE`],
    /// [`RANK_BY_OWN_TIME`]).
    pub top1_rank: Option<u32>,
    pub rank_evidence: Option<String>,
    /// Per expanded stage (`forward#1`, ...), when stages were expanded per microbatch.
    pub stage_share: Option<OrderedShares>,
    /// Per stage (group): Σ advances, ms.
    pub advance_ms: OrderedShares,
    /// Per stage (group): Σ over steps of the advance above the stage's median advance, ms:
    /// where a rare delay went, when each stage's usual time dominates the shares.
    pub excess_ms: OrderedShares,
    /// The stage with the most excess, and the ranks that held its boundaries.
    pub excess_top1: Option<String>,
    pub excess_top1_ranks: Vec<u32>,
    pub excess_top1_rank: Option<u32>,
    pub excess_rank_evidence: Option<String>,
    /// The stage a per-stage-maximum dashboard would blame, and a per-stage-mean one.
    pub max_top1: Option<String>,
    pub mean_top1: Option<String>,
    /// Leader switches over the window.
    pub switches: u64,
    /// Per stage (group): who held its boundaries.
    pub credits: Vec<RankCredit>,
    /// Per rank (in `ranks` order of the report) and expanded stage: the mean slack, ms (how far
    /// behind the frontier the rank was at each boundary).
    pub slack_ms: Vec<Vec<f64>>,
    pub ambiguity: Vec<Ambiguity>,
}

#[cfg(test)]
mod tests {
    use super::OrderedShares;

    #[test]
    fn shares_read_back_as_written_in_stage_order() {
        let shares = OrderedShares(vec![("forward".into(), 0.4), ("backward".into(), 0.6)]);
        let json = serde_json::to_string(&shares).unwrap();
        assert_eq!(json, r#"{"forward":0.4,"backward":0.6}"#);
        assert_eq!(
            serde_json::from_str::<OrderedShares>(&json).unwrap(),
            shares
        );
        assert!(serde_json::from_str::<OrderedShares>("[1]").is_err());
    }
}
