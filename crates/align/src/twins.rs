//! Twin lines: two adjacent log lines of one communicator that say the same thing (operation,
//! count, datatype, root or peer) and differ only in opCount, of which one kernel ran. The
//! generator's orphan AllReduce lines look like this, as do real runs where a collective was
//! logged but not captured. Symbols cannot tell the twins apart, and the alignment's run bonus
//! and end gaps then pick one of them for structural reasons; the CPU timestamps can: the kernel
//! is launched just after its own line. So after the alignment, a kernel on one twin moves to
//! the other when the other is unmatched and closer to the kernel under the fitted clock model.

use crate::scoring::TimeModel;
use crate::symbols::Symbol;
use model::log::LogOp;

/// Moves single-line matches to an unmatched adjacent twin that fits the clock model better.
/// `first_line[u]` is unit `u`'s first log line (`None` for an opCount placeholder); `matches`
/// holds (kernel symbol, units) in any order. Adjacent units keep the alignment monotone.
pub(crate) fn prefer_closer_twins(
    log_ops: &[LogOp],
    first_line: &[Option<usize>],
    usym: &[Symbol],
    ksym: &[Symbol],
    time: &TimeModel,
    matches: &mut [(usize, Vec<usize>)],
) {
    let mut matched = vec![false; usym.len()];
    for (_, us) in matches.iter() {
        for &u in us {
            matched[u] = true;
        }
    }
    let residual = |k: usize, u: usize| -> Option<i64> {
        let (kt, lt) = (ksym[k].time_ns?, usym[u].time_ns?);
        Some((kt - lt - time.offset_at(lt)).abs())
    };
    for (k, us) in matches.iter_mut() {
        let [u] = us[..] else { continue };
        let Some(here) = residual(*k, u) else {
            continue;
        };
        let best = [u.wrapping_sub(1), u + 1]
            .into_iter()
            .filter(|&v| v < usym.len() && !matched[v] && twins(log_ops, first_line, u, v))
            .filter_map(|v| Some((residual(*k, v)?, v)))
            .min();
        if let Some((there, v)) = best {
            if there < here {
                matched[u] = false;
                matched[v] = true;
                us[0] = v;
            }
        }
    }
}

/// Same communicator and stream, same call apart from opCount.
fn twins(log_ops: &[LogOp], first_line: &[Option<usize>], u: usize, v: usize) -> bool {
    let (Some(a), Some(b)) = (first_line[u], first_line[v]) else {
        return false;
    };
    let (a, b) = (&log_ops[a], &log_ops[b]);
    a.op_count != b.op_count
        && (
            a.comm,
            a.stream,
            a.op,
            a.count,
            a.datatype_code,
            a.root,
            a.red_op,
        ) == (
            b.comm,
            b.stream,
            b.op,
            b.count,
            b.datatype_code,
            b.root,
            b.red_op,
        )
}
