//! The compute (non-NCCL) kernels, compactly ([`model::compute`]): per GPU its busy intervals,
//! per kernel name its count, sum, minimum and longest instances. One scan of the kernel table
//! (the NCCL kernels left out by the same name-id filter the NCCL reading uses), nothing kept
//! per kernel: an export of 10⁷ compute kernels costs a few intervals per GPU and a few numbers
//! per distinct name. Not part of [`crate::read_export`] (the page and the command read it on
//! request: [`read_compute_kernels`]).

use crate::kernels::{name_column, KERNEL, NCCL_NAME_IDS};
use crate::probe::{ident, pid_of, Schema};
use model::compute::{BusyMerger, ComputeInstance, ComputeKernels, ComputeName, ComputeTrack};
use sqlsource::{join_halves, wide_halves, SqlError, SqlSource, TableScan};
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

/// Reads the export's compute kernels. An export without a kernel table has none.
pub fn read_compute_kernels(db: &dyn SqlSource) -> Result<ComputeKernels, SqlError> {
    let schema = Schema::load(db)?;
    if !(schema.has_table(KERNEL) && schema.has(KERNEL, "start") && schema.has(KERNEL, "end")) {
        return Ok(ComputeKernels::default());
    }
    let Some(name_col) = name_column(&schema) else {
        return Ok(ComputeKernels::default());
    };
    let name = ident(name_col);
    let c = |col: &str| schema.col_or_null(KERNEL, "k", col);
    let gpid = wide_halves(&c("globalPid"));
    let columns = [
        "k.start".to_string(),
        "k.\"end\"".to_string(),
        c("deviceId"),
        gpid[0].clone(),
        format!("k.{name}"),
        gpid[1].clone(),
    ];
    let filter = format!("k.{name} IS NULL OR k.{name} NOT IN ({NCCL_NAME_IDS})");
    let scan = TableScan {
        table: KERNEL,
        alias: "k",
        columns: &columns,
        filter: &filter,
    };
    struct Acc {
        merger: BusyMerger,
        kernels: u64,
        kernel_ns: i64,
    }
    let mut tracks: BTreeMap<(u32, u32), Acc> = BTreeMap::new();
    let mut names: HashMap<Option<i64>, ComputeName> = HashMap::new();
    db.scan(&scan, &mut |r| {
        let (Some(start), Some(end)) = (r.int(0), r.int(1)) else {
            return Ok(());
        };
        let end = end.max(start);
        let pid = join_halves(r.int(3), r.int(5)).map(pid_of).unwrap_or(0);
        let device = r.int(2).unwrap_or(0).max(0) as u32;
        let t = tracks.entry((pid, device)).or_insert_with(|| Acc {
            merger: BusyMerger::default(),
            kernels: 0,
            kernel_ns: 0,
        });
        t.merger.add(start, end);
        t.kernels += 1;
        t.kernel_ns += end - start;
        names
            .entry(r.int(4))
            .or_insert_with(|| ComputeName {
                name: Arc::from(""),
                count: 0,
                min_ns: i64::MAX,
                sum_ns: 0,
                worst: Vec::new(),
            })
            .add(ComputeInstance {
                pid,
                device,
                start_ns: start,
                duration_ns: end - start,
            });
        Ok(())
    })?;
    name_all(db, &mut names)?;
    let mut names: Vec<ComputeName> = names.into_values().collect();
    names.sort_by(|a, b| b.sum_ns.cmp(&a.sum_ns).then_with(|| a.name.cmp(&b.name)));
    Ok(ComputeKernels {
        tracks: tracks
            .into_iter()
            .map(|((pid, device), a)| ComputeTrack {
                pid,
                device,
                busy: a.merger.finish(),
                kernels: a.kernels,
                kernel_ns: a.kernel_ns,
            })
            .collect(),
        names,
    })
}

/// Fills in each name from `StringIds`, a few hundred ids per query; an id the table lacks
/// (or a kernel with none) is named by its id.
fn name_all(
    db: &dyn SqlSource,
    names: &mut HashMap<Option<i64>, ComputeName>,
) -> Result<(), SqlError> {
    let ids: Vec<i64> = names.keys().flatten().copied().collect();
    let mut text: HashMap<i64, Arc<str>> = HashMap::new();
    for chunk in ids.chunks(500) {
        let list = chunk
            .iter()
            .map(i64::to_string)
            .collect::<Vec<_>>()
            .join(",");
        let sql = format!("SELECT s.id, s.value FROM StringIds AS s WHERE s.id IN ({list})");
        db.for_each(&sql, &mut |r| {
            if let (Some(id), sqlsource::Value::Text(t)) = (r.int(0), r.value(1)) {
                text.insert(id, Arc::from(t));
            }
            Ok(())
        })?;
    }
    for (id, n) in names.iter_mut() {
        n.name = match id {
            Some(id) => text
                .get(id)
                .cloned()
                .unwrap_or_else(|| Arc::from(format!("kernel name #{id}"))),
            None => Arc::from("(unnamed kernel)"),
        };
    }
    Ok(())
}
