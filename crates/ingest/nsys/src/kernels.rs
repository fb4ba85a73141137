//! NCCL kernels and the count of all other kernels.
//!
//! Reads `CUPTI_ACTIVITY_KIND_KERNEL` (timing, launch geometry, `globalPid`, `correlationId`),
//! with the name from `StringIds` (`demangledName`, else `shortName`, else `mangledName`: the
//! first the schema has), and `CUPTI_ACTIVITY_KIND_RUNTIME` for the CPU-side launch of each
//! NCCL kernel (same `correlationId` within the same process; NCCL launches through the driver
//! API `cuLaunchKernelEx`, so no filter on the API name). Non-NCCL kernels are only counted, per
//! process and device, in SQL: exports hold millions of compute kernels the viewer never draws
//! one by one.
//!
//! Built for speed (millions of kernel rows; see docs/PERFORMANCE.md): the names containing
//! `nccl` are read once from `StringIds` (a few hundred strings), and the kernel table is then
//! filtered in SQL by that set of name ids, so rows carry an integer and each distinct name is one
//! shared string. The ordering (by process, then start), the launch join and the removal of
//! duplicate rows are done here in one pass each rather than by SQLite's sorter and an automatic
//! index over the runtime table, which cost several times the scan itself.

use crate::probe::{ident, int, pid_of, query, tid_of, Schema};
use model::nsys::{Kernel, KernelStore, OtherKernels};
use sqlsource::{join_halves, wide_halves, SqlError, SqlSource, TableScan};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::Arc;

/// A multiply-rotate hash (rustc's FxHash) for the integer keys of the per-kernel maps: SipHash
/// was a tenth of the read time, and these keys come from one file, not from an adversary
/// who could profit from collisions.
#[derive(Default, Clone, Copy)]
struct IntHasher(u64);

impl Hasher for IntHasher {
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(u64::from(b));
        }
    }

    fn write_u32(&mut self, i: u32) {
        self.write_u64(u64::from(i));
    }

    fn write_i64(&mut self, i: i64) {
        self.write_u64(i as u64);
    }

    fn write_u64(&mut self, i: u64) {
        self.0 = (self.0.rotate_left(5) ^ i).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

type IntMap<K, V> = HashMap<K, V, BuildHasherDefault<IntHasher>>;
type IntSet<K> = HashSet<K, BuildHasherDefault<IntHasher>>;

pub(crate) const KERNEL: &str = "CUPTI_ACTIVITY_KIND_KERNEL";
pub(crate) const RUNTIME: &str = "CUPTI_ACTIVITY_KIND_RUNTIME";

/// Kernel columns read when present; an absent one reads as 0/None.
pub(crate) const OPTIONAL_COLUMNS: &[&str] = &[
    "deviceId",
    "streamId",
    "correlationId",
    "globalPid",
    "gridX",
    "gridY",
    "gridZ",
    "blockX",
    "blockY",
    "blockZ",
    "staticSharedMemory",
    "dynamicSharedMemory",
    "registersPerThread",
    "localMemoryTotal",
];

/// The kernel column holding the `StringIds` id of the name, preferring the most complete name.
pub(crate) fn name_column(schema: &Schema) -> Option<&'static str> {
    ["demangledName", "shortName", "mangledName"]
        .into_iter()
        .find(|c| schema.has(KERNEL, c))
}

/// The ids of `StringIds` holding an NCCL name: the one definition of "an NCCL kernel" shared
/// by the count, the rows and the others (a kernel whose name id is missing is not NCCL).
const NCCL_NAME_IDS: &str =
    "SELECT s.id FROM StringIds AS s WHERE s.id IS NOT NULL AND lower(s.value) LIKE '%nccl%'";

/// `k.<name> IN (...)`: selects NCCL kernels by their integer name id, no join per row.
fn is_nccl(name_col: &str) -> String {
    format!("k.{} IN ({NCCL_NAME_IDS})", ident(name_col))
}

/// Counts NCCL kernels with one SQL COUNT. `Ok(0)` when the export has no kernel table.
pub fn count_nccl_kernels(db: &dyn SqlSource) -> Result<u64, SqlError> {
    let schema = Schema::load(db)?;
    count_with(db, &schema)
}

pub(crate) fn count_with(db: &dyn SqlSource, schema: &Schema) -> Result<u64, SqlError> {
    if !schema.has_table(KERNEL) {
        return Ok(0);
    }
    if !schema.has_table("StringIds") {
        return Err(SqlError::new(
            "table StringIds is missing: kernel names cannot be read",
        ));
    }
    let Some(name_col) = name_column(schema) else {
        return Err(SqlError::new(format!("{KERNEL} has no kernel-name column")));
    };
    let mut n = 0u64;
    let sql = format!(
        "SELECT count(*) FROM {KERNEL} AS k WHERE {}",
        is_nccl(name_col)
    );
    query(db, &sql, |r| n = int(r.first()).unwrap_or(0).max(0) as u64)?;
    Ok(n)
}

/// What [`read_kernels`] found.
#[derive(Debug, Default)]
pub(crate) struct KernelsRead {
    /// NCCL kernels, ordered by `globalPid` then start.
    pub nccl: KernelStore,
    pub other: Vec<OtherKernels>,
    /// Every distinct `globalPid` of the kernel table (NCCL or not), for the process list.
    pub global_pids: Vec<i64>,
}

/// Reads the NCCL kernels (with their launch where the runtime table has it) and counts the
/// others.
pub(crate) fn read_kernels(
    db: &dyn SqlSource,
    schema: &Schema,
    name_col: &str,
) -> Result<KernelsRead, SqlError> {
    let mut global_pids = HashSet::new();
    let nccl = read_nccl_kernels(db, schema, name_col, &mut global_pids)?;
    let other = read_other_kernels(db, schema, name_col, &mut global_pids)?;
    let mut global_pids: Vec<i64> = global_pids.into_iter().collect();
    global_pids.sort_unstable();
    Ok(KernelsRead {
        nccl,
        other,
        global_pids,
    })
}

/// Each NCCL name once, by `StringIds` id, shared by every kernel carrying it.
fn nccl_names(db: &dyn SqlSource) -> Result<IntMap<i64, Arc<str>>, SqlError> {
    let mut names = IntMap::default();
    let sql = format!("SELECT s.id, s.value FROM StringIds AS s WHERE s.id IN ({NCCL_NAME_IDS})");
    db.for_each(&sql, &mut |r| {
        if let (Some(id), sqlsource::Value::Text(t)) = (r.int(0), r.value(1)) {
            names.insert(id, Arc::from(t));
        }
        Ok(())
    })?;
    Ok(names)
}

/// The raw keys of one NCCL kernel row that the ordering and the launch join need.
#[derive(Clone, Copy)]
struct RawKeys {
    global_pid: Option<i64>,
    correlation_id: Option<i64>,
}

/// Reads every NCCL kernel, ordered by `globalPid` then start, with its launch where the runtime
/// table has it; exact duplicate rows are dropped.
fn read_nccl_kernels(
    db: &dyn SqlSource,
    schema: &Schema,
    name_col: &str,
    global_pids: &mut HashSet<i64>,
) -> Result<KernelStore, SqlError> {
    let names = nccl_names(db)?;
    let c = |col: &str| schema.col_or_null(KERNEL, "k", col);
    let global_pid = wide_halves(&c("globalPid"));
    let columns = [
        "k.start".to_string(),
        "k.\"end\"".to_string(),
        c("deviceId"),
        c("streamId"),
        c("correlationId"),
        // Packed past 2^53: read in halves, rejoined below (`sqlsource::wide_halves`).
        global_pid[0].clone(),
        format!("k.{}", ident(name_col)),
        c("gridX"),
        c("gridY"),
        c("gridZ"),
        c("blockX"),
        c("blockY"),
        c("blockZ"),
        c("staticSharedMemory"),
        c("dynamicSharedMemory"),
        c("registersPerThread"),
        c("localMemoryTotal"),
        global_pid[1].clone(),
    ];
    let filter = is_nccl(name_col);
    let scan = TableScan {
        table: KERNEL,
        alias: "k",
        columns: &columns,
        filter: &filter,
    };
    let empty: Arc<str> = Arc::from("");
    // In table order until sorted in place at the end (no second vector of records: they are
    // most of the page's memory). Counted first so that each vector is allocated once at its
    // size: grown by doubling, the records' vector would briefly need three times their size
    // (old and new buffers), which for 10 M kernels is past wasm32's 4 GiB.
    // A count the memory cannot hold is not reserved (an allocation failure aborts): the rows
    // are then read as they come, and the budget the page checks first says why they don't fit.
    let n = count_with(db, schema)? as usize;
    let mut kernels = KernelStore::new();
    let mut keys: Vec<RawKeys> = Vec::new();
    if kernels.try_reserve_exact(n).is_err() || keys.try_reserve_exact(n).is_err() {
        kernels = KernelStore::new();
        keys = Vec::new();
    }
    db.scan(&scan, &mut |r| {
        let u = |i: usize| r.int(i).unwrap_or(0).max(0) as u32;
        let global_pid = join_halves(r.int(5), r.int(17));
        if let Some(g) = global_pid {
            global_pids.insert(g);
        }
        let (Some(start_ns), Some(end_ns)) = (r.int(0), r.int(1)) else {
            return Ok(());
        };
        let correlation_id = r.int(4);
        let name = r
            .int(6)
            .and_then(|id| names.get(&id))
            .unwrap_or(&empty)
            .clone();
        keys.push(RawKeys {
            global_pid,
            correlation_id,
        });
        kernels.push(&Kernel {
            pid: global_pid.map(pid_of).unwrap_or(0),
            start_ns,
            end_ns,
            device: u(2),
            stream: u(3),
            correlation_id: correlation_id.unwrap_or(0).max(0) as u32,
            name,
            grid: [u(7), u(8), u(9)],
            block: [u(10), u(11), u(12)],
            static_shared_bytes: u(13),
            dynamic_shared_bytes: u(14),
            registers_per_thread: u(15),
            local_memory_total: r.int(16).unwrap_or(0).max(0) as u64,
            launch_ns: None,
            launch_tid: None,
        });
        Ok(())
    })?;
    set_launches(db, schema, &keys, &mut kernels)?;
    // SQL's `ORDER BY globalPid, start` (NULL first), stable: rows tied on both keep the
    // table's order (the row index is the last key). Small keys are sorted, then the rows are
    // moved once, in place.
    let mut order: Vec<(Option<i64>, i64, u32)> = keys
        .iter()
        .enumerate()
        .map(|(i, key)| (key.global_pid, kernels.start_ns(i).unwrap_or(0), i as u32))
        .collect();
    order.sort_unstable();
    let pid_shared = pid_shared_by_global_pids(&keys, &kernels);
    drop(keys);
    let perm: Vec<u32> = order.iter().map(|o| o.2).collect();
    kernels.permute(&perm);
    drop(perm);
    let mut dedup = Dedup::new(pid_shared, kernels.len());
    let keep: Vec<bool> = order
        .iter()
        .enumerate()
        .map(|(i, &(global_pid, start, _))| dedup.keep((global_pid, start), identity(&kernels, i)))
        .collect();
    kernels.retain_flagged(&keep);
    Ok(kernels)
}

/// The identity of a kernel row: exact duplicates (a re-exported or merged file) would
/// double-count operations, and the first of them is kept.
type Identity = (u32, u32, u32, u32, i64, i64);

fn identity(k: &KernelStore, i: usize) -> Identity {
    (
        k.pid(i).unwrap_or(0),
        k.device(i).unwrap_or(0),
        k.stream(i).unwrap_or(0),
        k.correlation_id(i).unwrap_or(0),
        k.start_ns(i).unwrap_or(0),
        k.end_ns(i).unwrap_or(0),
    )
}

/// Whether two distinct `globalPid`s carry the same pid (e.g. a merged multi-host export).
fn pid_shared_by_global_pids(keys: &[RawKeys], kernels: &KernelStore) -> bool {
    let mut pids: IntMap<u32, i64> = IntMap::default();
    keys.iter().enumerate().any(|(i, key)| {
        let g = key.global_pid.unwrap_or(i64::MIN);
        *pids.entry(kernels.pid(i).unwrap_or(0)).or_insert(g) != g
    })
}

/// Keeps the first row of each [`identity`], in output order. Duplicates share a start, so when
/// no two `globalPid`s carry the same pid they are neighbours in the sorted output and each run
/// of one (globalPid, start) is compared within itself, with no set of every row; otherwise a
/// set.
enum Dedup {
    Runs {
        key: Option<(Option<i64>, i64)>,
        /// The identities kept in the current run.
        kept: Vec<Identity>,
    },
    Set(IntSet<Identity>),
}

impl Dedup {
    fn new(pid_shared: bool, n: usize) -> Dedup {
        if pid_shared {
            Dedup::Set(IntSet::with_capacity_and_hasher(n, Default::default()))
        } else {
            Dedup::Runs {
                key: None,
                kept: Vec::new(),
            }
        }
    }

    /// Whether the row of `id`, sorted under `key`, is the first of its identity.
    fn keep(&mut self, key: (Option<i64>, i64), id: Identity) -> bool {
        match self {
            Dedup::Set(seen) => seen.insert(id),
            Dedup::Runs { key: run, kept } => {
                if *run != Some(key) {
                    *run = Some(key);
                    kept.clear();
                }
                if kept.contains(&id) {
                    return false;
                }
                kept.push(id);
                true
            }
        }
    }
}

/// Sets each kernel's launch (`rows[i]` holds `kernels[i]`'s keys): the earliest start, and the
/// lowest `globalTid`, of the runtime rows with its correlation id in its process
/// (`globalTid >> 24 = globalPid >> 24`). One pass over the runtime table's three columns;
/// nothing is set when the tables lack the columns.
fn set_launches(
    db: &dyn SqlSource,
    schema: &Schema,
    rows: &[RawKeys],
    kernels: &mut KernelStore,
) -> Result<(), SqlError> {
    let has_launch = schema.has(RUNTIME, "correlationId")
        && schema.has(RUNTIME, "start")
        && schema.has(RUNTIME, "globalTid")
        && schema.has(KERNEL, "correlationId")
        && schema.has(KERNEL, "globalPid");
    if !has_launch || rows.is_empty() {
        return Ok(());
    }
    let key = |r: &RawKeys| Some((r.global_pid? >> 24, r.correlation_id?));
    // Each distinct (process, correlation id) gets a slot in `launches`, (min start, min
    // globalTid), and each row remembers its slot, so the final assignment needs no lookup.
    let mut cids: IntMap<i64, (i64, i64, usize)> = IntMap::default();
    for (gp, cid) in rows.iter().filter_map(key) {
        let e = cids.entry(gp).or_insert((cid, cid, 0));
        *e = (e.0.min(cid), e.1.max(cid), e.2 + 1);
    }
    let mut tables: IntMap<i64, Slots> = cids
        .iter()
        .map(|(&gp, &(lo, hi, n))| (gp, Slots::new(lo, hi, n)))
        .collect();
    let mut launches: Vec<(Option<i64>, Option<i64>)> = Vec::new();
    let slots: Vec<Option<u32>> = rows
        .iter()
        .map(|r| {
            let (gp, cid) = key(r)?;
            let table = tables.get_mut(&gp)?;
            Some(table.slot_or_insert(cid, || {
                launches.push((None, None));
                launches.len() as u32 - 1
            }))
        })
        .collect();
    let Some(lo) = cids.values().map(|c| c.0).min() else {
        return Ok(());
    };
    let hi = cids.values().map(|c| c.1).max().unwrap_or(lo);
    let [tid_high, tid_low] = wide_halves("r.globalTid");
    let columns = [
        "r.correlationId".to_string(),
        tid_high,
        "r.start".to_string(),
        tid_low,
    ];
    let filter = format!("r.correlationId BETWEEN {lo} AND {hi}");
    let scan = TableScan {
        table: RUNTIME,
        alias: "r",
        columns: &columns,
        filter: &filter,
    };
    db.scan(&scan, &mut |r| {
        let (Some(cid), Some(tid)) = (r.int(0), join_halves(r.int(1), r.int(3))) else {
            return Ok(());
        };
        if let Some(slot) = tables.get(&(tid >> 24)).and_then(|t| t.get(cid)) {
            let (start, min_tid) = &mut launches[slot as usize];
            if let Some(s) = r.int(2) {
                *start = Some(start.map_or(s, |m| m.min(s)));
            }
            *min_tid = Some(min_tid.map_or(tid, |m| m.min(tid)));
        }
        Ok(())
    })?;
    for (i, slot) in slots.into_iter().enumerate() {
        if let Some(&(launch_ns, launch_tid)) = slot.and_then(|s| launches.get(s as usize)) {
            kernels.set_launch(i, launch_ns, launch_tid.map(tid_of));
        }
    }
    Ok(())
}

/// One process's NCCL correlation ids → launch slots. Correlation ids are mostly dense and
/// runtime rows come roughly in their order, so a table indexed by id is read almost
/// sequentially (a hash map over every kernel missed the cache on each runtime row); a sparse
/// range falls back to a map.
enum Slots {
    Dense { lo: i64, slots: Vec<u32> },
    Sparse(IntMap<i64, u32>),
}

const NO_SLOT: u32 = u32::MAX;

impl Slots {
    fn new(lo: i64, hi: i64, n: usize) -> Slots {
        let span = hi.saturating_sub(lo) as u64;
        if span < 8 * n as u64 + 4096 {
            Slots::Dense {
                lo,
                slots: vec![NO_SLOT; span as usize + 1],
            }
        } else {
            Slots::Sparse(IntMap::default())
        }
    }

    fn slot_or_insert(&mut self, cid: i64, new: impl FnOnce() -> u32) -> u32 {
        match self {
            Slots::Dense { lo, slots } => {
                // `cid` is within [lo, hi] by construction.
                let s = &mut slots[(cid - *lo) as usize];
                if *s == NO_SLOT {
                    *s = new();
                }
                *s
            }
            Slots::Sparse(map) => *map.entry(cid).or_insert_with(new),
        }
    }

    fn get(&self, cid: i64) -> Option<u32> {
        match self {
            Slots::Dense { lo, slots } => {
                let i = usize::try_from(cid.checked_sub(*lo)?).ok()?;
                slots.get(i).copied().filter(|&s| s != NO_SLOT)
            }
            Slots::Sparse(map) => map.get(&cid).copied(),
        }
    }
}

/// Counts the non-NCCL kernels per (pid, device) and sums their durations, in SQL.
/// A kernel whose name id is missing from `StringIds` counts as non-NCCL.
fn read_other_kernels(
    db: &dyn SqlSource,
    schema: &Schema,
    name_col: &str,
    global_pids: &mut HashSet<i64>,
) -> Result<Vec<OtherKernels>, SqlError> {
    let gpid = schema.col_or_null(KERNEL, "k", "globalPid");
    let dev = schema.col_or_null(KERNEL, "k", "deviceId");
    let name = ident(name_col);
    // Grouped by the raw globalPid (its distinct values name the processes); groups of the same
    // pid are merged below. Keys keep NULL apart from 0, as SQL's GROUP BY did.
    let sql = format!(
        "SELECT {gpid}, {dev}, count(*), sum(k.\"end\" - k.start) FROM {KERNEL} AS k \
         WHERE k.{name} IS NULL OR k.{name} NOT IN ({NCCL_NAME_IDS}) GROUP BY 1, 2"
    );
    type Key = (Option<i64>, Option<i64>);
    let mut groups: BTreeMap<Key, (i64, Option<i64>)> = BTreeMap::new();
    db.for_each(&sql, &mut |r| {
        let g = r.int(0);
        if let Some(g) = g {
            global_pids.insert(g);
        }
        let pid = g.map(|g| (g >> 24) & 0xFF_FFFF);
        let e = groups.entry((pid, r.int(1))).or_insert((0, None));
        e.0 = e.0.saturating_add(r.int(2).unwrap_or(0));
        if let Some(t) = r.int(3) {
            e.1 = Some(e.1.unwrap_or(0).saturating_add(t));
        }
        Ok(())
    })?;
    Ok(groups
        .into_iter()
        .map(|((pid, dev), (count, total))| OtherKernels {
            pid: pid.unwrap_or(0) as u32,
            device: dev.unwrap_or(0).max(0) as u32,
            count: count.max(0) as u64,
            total_ns: total.unwrap_or(0),
        })
        .collect())
}
