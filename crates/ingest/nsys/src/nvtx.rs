//! NVTX ranges, iteration ranges and NCCL's own API ranges.
//!
//! Reads `NVTX_EVENTS` rows of the range event types (59 PushPop, 60 StartEnd, 70/71 their
//! Nvtxt variants) with `start`, `end`, `globalTid`, the text from `text` (unregistered
//! strings, e.g. PyTorch's) or `textId` → `StringIds` (registered strings: NCCL's and MPI's
//! ranges use only these), `domainId`, and `binaryData` (typed payload, 3.16+). Domain names come
//! from the `eventType = 75` (DomainCreate) rows, keyed by process because domain ids are per
//! process. Time-sliced exports can lose those rows; a nonzero domain whose ranges are all named
//! `nccl*` is then taken for NCCL's domain, and a notice says so.

use crate::payload::{blob_of, choose_schema, decode_payload, split_header};
use crate::probe::{int, pid_of, query, text, tid_of, Schema};
use model::nsys::{NcclNvtxCall, NvtxRange, PayloadSchema, PayloadValue};
use model::RedOp;
use sqlsource::{SqlError, SqlSource};
use std::collections::{HashMap, HashSet};

const T: &str = "NVTX_EVENTS";
/// `ENUM_NSYS_EVENT_TYPE`: NvtxPushPopRange, NvtxStartEndRange, NvtxtPushPopRange, NvtxtStartEndRange.
const RANGE_TYPES: &str = "59, 60, 70, 71";
const DOMAIN_CREATE: i64 = 75;
/// NCCL's NVTX domain name (`src/include/nvtx.h`: `struct nccl_domain { name{"NCCL"} }`).
pub const NCCL_DOMAIN: &str = "NCCL";

/// What [`read_nvtx`] found.
#[derive(Debug, Default)]
pub(crate) struct NvtxRead {
    pub ranges: Vec<NvtxRange>,
    pub iterations: Vec<usize>,
    pub nccl_calls: Vec<NcclNvtxCall>,
    /// Notices for the caller to attach to the file.
    pub notices: Vec<String>,
}

pub(crate) fn read_nvtx(
    db: &dyn SqlSource,
    schema: &Schema,
    patterns: &[String],
    payload_schemas: &[PayloadSchema],
) -> Result<NvtxRead, SqlError> {
    let mut out = NvtxRead::default();
    if !(schema.has(T, "start") && schema.has(T, "eventType")) {
        return Ok(out);
    }
    let c = |col: &str| schema.col_or_null(T, "e", col);
    let has_text_id = schema.has(T, "textId") && schema.has("StringIds", "value");

    // Domain names, per (pid, domainId).
    let mut domains: HashMap<(u32, i64), String> = HashMap::new();
    if schema.has(T, "domainId") && schema.has(T, "text") {
        let sql = format!(
            "SELECT e.domainId, {}, e.text FROM {T} AS e WHERE e.eventType = {DOMAIN_CREATE}",
            c("globalTid")
        );
        query(db, &sql, |r| {
            if let (Some(d), Some(name)) = (int(r.first()), text(r.get(2))) {
                domains.insert((int(r.get(1)).map(pid_of).unwrap_or(0), d), name);
            }
        })?;
    }

    let text_expr = match (schema.has(T, "text"), has_text_id) {
        (true, true) => "COALESCE(e.text, s.value)",
        (true, false) => "e.text",
        (false, true) => "s.value",
        (false, false) => "NULL",
    };
    let join = if has_text_id {
        "LEFT JOIN StringIds AS s ON s.id = e.textId"
    } else {
        ""
    };
    let sql = format!(
        "SELECT e.start, {end}, {gtid}, {text_expr}, {dom}, {bin} FROM {T} AS e {join} \
         WHERE e.eventType IN ({RANGE_TYPES}) \
         ORDER BY ({gtid} >> 24) & 16777215, {gtid} & 16777215, e.start",
        end = c("end"),
        gtid = c("globalTid"),
        dom = c("domainId"),
        bin = c("binaryData"),
    );
    // Rows kept whole until domains are settled: (range, domainId, payload bytes).
    let mut rows: Vec<(NvtxRange, i64, Option<Vec<u8>>)> = Vec::new();
    // Read in place (no vector of values per row): PyTorch traces hold millions of ranges.
    db.for_each(&sql, &mut |r| {
        let Some(start_ns) = r.int(0) else {
            return Ok(());
        };
        let gtid = r.int(2).unwrap_or(0);
        let domain_id = r.int(4).unwrap_or(0);
        let pid = pid_of(gtid);
        let range = NvtxRange {
            pid,
            tid: tid_of(gtid),
            start_ns,
            end_ns: r.int(1),
            text: r.value(3).as_str().map(str::to_string).unwrap_or_default(),
            domain: domains.get(&(pid, domain_id)).cloned(),
        };
        rows.push((range, domain_id, blob_of(Some(&r.value(5)))));
        Ok(())
    })?;

    // Nonzero domains with no DomainCreate row whose every range is an `nccl*` call.
    let mut unnamed: HashMap<(u32, i64), bool> = HashMap::new();
    for (r, d, _) in &rows {
        if *d != 0 && r.domain.is_none() {
            let all = unnamed.entry((r.pid, *d)).or_insert(true);
            *all &= r.text.starts_with("nccl");
        }
    }
    let inferred: HashSet<(u32, i64)> = unnamed
        .into_iter()
        .filter(|(_, all)| *all)
        .map(|(k, _)| k)
        .collect();
    if !inferred.is_empty() {
        out.notices.push(format!(
            "NVTX domain names are missing (no DomainCreate rows, e.g. a time-sliced export); \
             {} process domain(s) holding only nccl* ranges were taken as NCCL's domain",
            inferred.len()
        ));
    }

    let mut missing_payloads = 0usize;
    for (i, (mut range, domain_id, blob)) in rows.into_iter().enumerate() {
        if range.domain.is_none() && inferred.contains(&(range.pid, domain_id)) {
            range.domain = Some(NCCL_DOMAIN.to_string());
        }
        if range.domain.as_deref() == Some(NCCL_DOMAIN) {
            let domain = domain_id as u64;
            let header = blob
                .as_deref()
                .and_then(|b| split_header(b, payload_schemas, domain));
            let (schema_id, layout, body) = match header {
                Some((s, body)) => (Some(s.schema_id), Some(s), Some(body)),
                None => {
                    let len = blob.as_ref().map(Vec::len);
                    let (id, layout) = choose_schema(payload_schemas, domain, &range.text, len);
                    (id, layout, blob.as_deref())
                }
            };
            let fields = match (body, layout) {
                (Some(b), Some(s)) => decode_payload(b, s, payload_schemas),
                _ => Vec::new(),
            };
            if blob.is_none() && layout.is_some() {
                missing_payloads += 1;
            }
            out.nccl_calls
                .push(nccl_call(i, &range.text, schema_id, fields));
        } else if is_iteration(&range.text, patterns) {
            out.iterations.push(i);
        }
        out.ranges.push(range);
    }
    if missing_payloads > 0 {
        out.notices.push(format!(
            "{missing_payloads} NCCL NVTX ranges have a payload schema but no payload bytes \
             (NVTX_EVENTS.binaryData empty: export with --include-blobs=true to get message sizes)"
        ));
    }
    Ok(out)
}

fn nccl_call(
    nvtx_index: usize,
    api: &str,
    schema_id: Option<u64>,
    fields: Vec<model::nsys::PayloadField>,
) -> NcclNvtxCall {
    let get = |name: &str| fields.iter().find(|f| f.name == name).map(|f| &f.value);
    let as_i64 = |name: &str| match get(name)? {
        PayloadValue::Int(i) => Some(*i),
        PayloadValue::Uint(u) => i64::try_from(*u).ok(),
        _ => None,
    };
    let as_u64 = |name: &str| match get(name)? {
        PayloadValue::Int(i) => u64::try_from(*i).ok(),
        PayloadValue::Uint(u) => Some(*u),
        _ => None,
    };
    NcclNvtxCall {
        nvtx_index,
        api: api.to_string(),
        schema_id,
        comm_id: as_u64("NCCL communicator ID"),
        msg_bytes: as_u64("Message size [bytes]"),
        red_op: as_u64("Reduction operation")
            .and_then(|c| u32::try_from(c).ok())
            .map(RedOp::from_code),
        rank: as_i64("Rank"),
        nranks: as_i64("No. of ranks"),
        peer: as_i64("Peer rank"),
        root: as_i64("Root"),
        cuda_device: as_i64("CUDA device"),
        fields,
    }
}

/// Whether `text` matches one of the iteration `patterns` (ASCII case-insensitive). A pattern
/// with `*` or `?` is a glob over the whole text; otherwise it must appear as a word: not
/// preceded by a letter or digit (except at a camelCase hump), not followed by a letter: `step`
/// matches `train_step`, `optimizer.step`, `step 12` and PyTorch's `ProfilerStep#3`; `iter` does
/// not match `validateIterDomainUse` (a real nvFuser range).
pub fn is_iteration(text: &str, patterns: &[String]) -> bool {
    let t = text.to_ascii_lowercase();
    patterns.iter().any(|p| {
        let p = p.to_ascii_lowercase();
        if p.is_empty() {
            false
        } else if p.contains(['*', '?']) {
            glob(p.as_bytes(), t.as_bytes())
        } else {
            t.match_indices(&p).any(|(i, m)| {
                let (orig, before) = (text.as_bytes()[i], text.as_bytes()[..i].last().copied());
                let after = t.as_bytes().get(i + m.len());
                // A word starts after a non-alphanumeric, or at a camelCase hump (`ProfilerStep#3`).
                let starts = match before {
                    None => true,
                    Some(b) => {
                        !b.is_ascii_alphanumeric()
                            || (b.is_ascii_lowercase() && orig.is_ascii_uppercase())
                    }
                };
                starts && !after.is_some_and(|c| c.is_ascii_alphabetic())
            })
        }
    })
}

/// `*` any run, `?` any one byte; iterative with one backtrack point.
fn glob(p: &[u8], t: &[u8]) -> bool {
    let (mut pi, mut ti) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while ti < t.len() {
        if pi < p.len() && (p[pi] == b'?' || p[pi] == t[ti]) {
            pi += 1;
            ti += 1;
        } else if pi < p.len() && p[pi] == b'*' {
            star = Some((pi, ti));
            pi += 1;
        } else if let Some((sp, st)) = star {
            pi = sp + 1;
            ti = st + 1;
            star = Some((sp, st + 1));
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|&c| c == b'*')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pats(p: &[&str]) -> Vec<String> {
        p.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn iteration_patterns() {
        let d = pats(&["iteration", "iter", "step", "train_step"]);
        for yes in [
            "iteration 3",
            "Iteration_12",
            "train_step",
            "optimizer.step",
            "iter5",
            "STEP 4",
            "ProfilerStep#3",
        ] {
            assert!(is_iteration(yes, &d), "{yes}");
        }
        for no in [
            "GpuLower::Lower::validateIterDomainUse",
            "stepper",
            "aten::mul",
            "footstep",
        ] {
            assert!(!is_iteration(no, &d), "{no}");
        }
        assert!(is_iteration("fwd_bwd_7", &pats(&["fwd_bwd_*"])));
        assert!(!is_iteration("x_fwd_bwd_7", &pats(&["fwd_bwd_*"])));
        assert!(is_iteration("epoch 1 batch 2", &pats(&["epoch ? batch*"])));
    }
}
