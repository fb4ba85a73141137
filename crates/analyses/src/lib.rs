//! The analyses: what a loaded session and its [`pipeline::Analysis`] say, one module each.
//! Each reads the session's records and the analysis and returns plain data for the command's
//! summary, the page's panels and the exports; none changes the analysis.
//!
//! - [`volumes`]: every rank's observed link traffic per parallelism, from the logs;
//! - [`theory_vs_observed`]: a model and layout's theoretical volume beside the observed one;
//! - [`predicted_times`]: every matched kernel's duration beside the LBNL alpha-beta model;
//! - [`skew`]: arrival skew per communicator (who arrives last at each collective);
//! - [`kernel_bw`] and [`comm_stats`]: bus bandwidth and efficiency per kernel and per
//!   communicator, against the topology's bottleneck link;
//! - [`comm_setup`]: how NCCL set each communicator up (channels, trees, transports);
//! - [`details`]: one picked kernel with its log lines and the same collective on every rank;
//! - [`window`]: a time window's kernels aggregated per operation and per rank;
//! - [`diagnosis`]: what went wrong, from the logs alone: where every member stopped,
//!   mismatched collectives, classified errors and the first of them, watchdog timeouts,
//!   configuration that differs across ranks;
//! - [`patterns`]: where traffic flows (the rank-to-rank matrix, observed and as the layout
//!   predicts it), whether it repeats (On-Off periodicity), and the run's own α-β model per link
//!   class (docs/design/patterns.md).
//! - [`steps`]: step anatomy (issue 32): StageFrontier over the steps' stages (from stage files,
//!   NVTX ranges or the collectives' period), the iteration-time breakdown from the kernels with
//!   ConfigTuner's closed forms, per-operation baselines and outliers, the 1F1B check
//!   (docs/design/steps.md). Portable; plain serde types.
//! - [`diff`]: two runs compared, like with like, with one ranked list of what changed.
//! - [`time_facts`]: each aligned process's log stamps (resolution, zone, use) and its export's
//!   time base.
//!
//! A new analysis is a new module here.

pub mod comm_setup;
pub mod comm_stats;
pub mod details;
pub mod diagnosis;
pub mod diff;
pub mod kernel_bw;
pub mod patterns;
pub mod predicted_times;
pub mod skew;
pub mod steps;
pub mod theory_vs_observed;
pub mod time_facts;
pub mod volumes;
pub mod window;

pub use comm_setup::{comm_setups, CommSetup};
pub use comm_stats::{comm_bottlenecks, comm_stats, CommStats};
pub use details::{
    find_kernel, kernel_details, InstanceDetails, KernelDetails, LineDetails, MemberTiming,
};
pub use enrich::Bottleneck;
pub use kernel_bw::{for_each_kernel_bandwidth, kernel_bandwidths, KernelBw};
pub use predicted_times::{hardware_from_topology, predicted_times, size_bucket, TimeRow};
pub use skew::{arrival_skew, CommSkew};
pub use theory_vs_observed::{compare_volumes, VolumeComparison};
pub use time_facts::{stamp_format, time_facts, TimeFacts};
pub use volumes::{dominant_element_bytes, observed_volumes, traffic_bytes, RankVolume};
pub use window::{window_summary, WindowRow, WindowSummary};
