//! The thesis' sliding-window baseline (§4.3.2).
//!
//! The thesis only says that it "matches the first available log entry within its search
//! window". We read that as: walk the kernels in start order with a cursor in the log; match
//! each kernel to the first not-yet-used log op of the same kernel class among the next
//! `window` lines after the cursor, and move the cursor past it; a kernel with no such line stays
//! unmatched and leaves the cursor where it is. It is perfect when nothing is missing and
//! drifts as soon as log lines are missing: the comparison point for the aligner.

use crate::symbols::{kernel_class, kernel_symbol};
use model::log::LogOp;
use model::nsys::{Kernel, KernelName};

/// The window the comparison tests use.
pub const DEFAULT_WINDOW: usize = 5;

/// Per kernel (input order), the index of the log op it was matched to.
pub fn sliding_window(
    log_ops: &[LogOp],
    kernels: &[Kernel],
    names: &[Option<KernelName>],
    window: usize,
) -> Vec<Option<usize>> {
    let mut order: Vec<usize> = (0..kernels.len()).collect();
    order.sort_by_key(|&k| (kernels[k].start_ns, k));
    let mut out = vec![None; kernels.len()];
    let mut cursor = 0usize;
    for k in order {
        let Some(sym) = kernel_symbol(&kernels[k], names.get(k).and_then(|n| n.as_ref())) else {
            continue;
        };
        let Some(op) = sym.op.map(kernel_class) else {
            continue;
        };
        let end = (cursor + window).min(log_ops.len());
        if let Some(q) = (cursor..end).find(|&q| kernel_class(log_ops[q].op) == op) {
            out[k] = Some(q);
            cursor = q + 1;
        }
    }
    out
}
