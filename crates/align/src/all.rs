//! Aligning every process of a run: in parallel natively, one after another in wasm32 (the page
//! runs its own workers), with the cross-rank consensus ([`crate::consensus`]) in between.

use crate::consensus::{call_hints, ProcessInput};
use crate::nvtx_join::{check, join_nvtx};
use crate::per_process::{align_process_hinted, AlignConfig, ProcessAlignment};

/// Aligns each process; the result keeps the input order. With `cfg.consensus`, processes
/// of one clock domain are aligned a second time with the calls their kernels' collectives
/// run on the other ranks.
pub fn align_all(inputs: &[ProcessInput<'_>], cfg: &AlignConfig) -> Vec<ProcessAlignment> {
    let first = map_ordered(inputs, |p| {
        align_process_hinted(p.log_ops, p.kernels, p.names, cfg, &[])
    });
    if !cfg.consensus || inputs.len() < 2 {
        return with_nvtx_checks(inputs, first);
    }
    let hints = call_hints(inputs, &first);
    let jobs: Vec<(usize, &ProcessInput<'_>)> = inputs.iter().enumerate().collect();
    let second = map_ordered(&jobs, |&(i, p)| {
        hints[i]
            .iter()
            .any(Option::is_some)
            .then(|| align_process_hinted(p.log_ops, p.kernels, p.names, cfg, &hints[i]))
    });
    let out = first
        .into_iter()
        .zip(second)
        .map(|(a, b)| b.unwrap_or(a))
        .collect();
    with_nvtx_checks(inputs, out)
}

/// Where a process's export has NCCL's own NVTX ranges, joins its kernels exactly to the
/// calls that launched them and reports how the alignment agrees ([`AnomalyReport::nvtx`]).
///
/// [`AnomalyReport::nvtx`]: crate::AnomalyReport::nvtx
fn with_nvtx_checks(
    inputs: &[ProcessInput<'_>],
    mut out: Vec<ProcessAlignment>,
) -> Vec<ProcessAlignment> {
    for (p, a) in inputs.iter().zip(out.iter_mut()) {
        if p.nvtx.is_empty() {
            continue;
        }
        let join = join_nvtx(p.kernels, p.nvtx);
        if join.joined() == 0 {
            continue;
        }
        let matched: Vec<Option<&[usize]>> = a
            .per_kernel
            .iter()
            .map(|m| m.as_ref().map(|m| m.log_ops.as_slice()))
            .collect();
        a.report.nvtx = Some(check(&join, p.nvtx, p.log_ops, &matched));
    }
    out
}

/// `f` over `items`, results in input order: contiguous chunks, one scoped thread per core.
#[cfg(not(target_arch = "wasm32"))]
pub fn map_ordered<T: Sync, R: Send>(items: &[T], f: impl Fn(&T) -> R + Sync) -> Vec<R> {
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    if threads <= 1 || items.len() <= 1 {
        return items.iter().map(f).collect();
    }
    let chunk = items.len().div_ceil(threads);
    std::thread::scope(|s| {
        let handles: Vec<_> = items
            .chunks(chunk)
            .map(|c| s.spawn(|| c.iter().map(&f).collect::<Vec<R>>()))
            .collect();
        handles
            .into_iter()
            .flat_map(|h| match h.join() {
                Ok(v) => v,
                Err(e) => std::panic::resume_unwind(e),
            })
            .collect()
    })
}

/// `f` over `items`, in order (wasm32: no threads here).
#[cfg(target_arch = "wasm32")]
pub fn map_ordered<T: Sync, R: Send>(items: &[T], f: impl Fn(&T) -> R + Sync) -> Vec<R> {
    items.iter().map(f).collect()
}
