//! NVTX typed payloads: schemas and generic binary decoding.
//!
//! Reads `NVTX_PAYLOAD_SCHEMAS (domainId, schemaId, name, payloadSize)` and
//! `NVTX_PAYLOAD_SCHEMA_ENTRIES (domainId, schemaId, idx, flags, type, name, arrayOrUnionDetail,
//! offset)` (schema 3.25+). Each process registers the same schemas, so rows are deduplicated by
//! (domain, schema, idx). A payload blob (`NVTX_EVENTS.binaryData`, filled only when exported
//! with `--include-blobs`) is decoded entry by entry from the schema: the registered offset where
//! given, else natural alignment after the previous entry, with sizes from the
//! `NVTX_PAYLOAD_ENTRY_TYPE_*` numbers of `nvToolsExtPayload.h` (type ≥ 1<<24 is another registered
//! schema, or an enum: NCCL's `ncclRedOp_t`, a C `int`).
//!
//! The export does not say which schema an event's blob follows, so [`choose_schema`] narrows the
//! domain's schemas by blob length and by the entry names NCCL's API calls carry
//! (`src/include/nvtx_payload_schemas.h`: `ncclSend` has "Peer rank", `ncclAllReduce` has
//! "Reduction operation", ...).

use crate::probe::{int, query, text, Schema};
use model::nsys::{PayloadEntry, PayloadField, PayloadSchema, PayloadValue};
use sqlsource::{SqlError, SqlSource, Value};

const SCHEMAS: &str = "NVTX_PAYLOAD_SCHEMAS";
const ENTRIES: &str = "NVTX_PAYLOAD_SCHEMA_ENTRIES";

/// First id of registered (static) schemas and enums: entry types from here on are not predefined.
const REGISTERED_START: u64 = 1 << 24;
/// `NVTX_PAYLOAD_ENTRY_FLAG_ARRAY_*` bits.
const ARRAY_FLAGS: u64 = 0x30;

pub(crate) fn read_schemas(
    db: &dyn SqlSource,
    schema: &Schema,
) -> Result<Vec<PayloadSchema>, SqlError> {
    if !(schema.has(ENTRIES, "schemaId") && schema.has(ENTRIES, "idx")) {
        return Ok(Vec::new());
    }
    let mut out: Vec<PayloadSchema> = Vec::new();
    if schema.has(SCHEMAS, "schemaId") {
        let sql = format!(
            "SELECT {}, s.schemaId, {}, {} FROM {SCHEMAS} AS s ORDER BY 1, 2",
            schema.col_or_null(SCHEMAS, "s", "domainId"),
            schema.col_or_null(SCHEMAS, "s", "name"),
            schema.col_or_null(SCHEMAS, "s", "payloadSize"),
        );
        query(db, &sql, |r| {
            let (domain_id, Some(schema_id)) = (int(r.first()).unwrap_or(0) as u64, int(r.get(1)))
            else {
                return;
            };
            if !out
                .iter()
                .any(|s| s.domain_id == domain_id && s.schema_id == schema_id as u64)
            {
                out.push(PayloadSchema {
                    domain_id,
                    schema_id: schema_id as u64,
                    name: text(r.get(2)),
                    payload_size: int(r.get(3)).map(|n| n as u64),
                    entries: Vec::new(),
                });
            }
        })?;
    }
    let c = |col: &str| schema.col_or_null(ENTRIES, "e", col);
    let sql = format!(
        "SELECT {}, e.schemaId, e.idx, {}, {}, {}, {}, {} FROM {ENTRIES} AS e ORDER BY 1, 2, 3",
        c("domainId"),
        c("flags"),
        c("type"),
        c("name"),
        c("arrayOrUnionDetail"),
        c("offset"),
    );
    query(db, &sql, |r| {
        let domain_id = int(r.first()).unwrap_or(0) as u64;
        let (Some(schema_id), Some(idx)) = (int(r.get(1)), int(r.get(2))) else {
            return;
        };
        let schema_id = schema_id as u64;
        let pos = match out
            .iter()
            .position(|s| s.domain_id == domain_id && s.schema_id == schema_id)
        {
            Some(p) => p,
            None => {
                out.push(PayloadSchema {
                    domain_id,
                    schema_id,
                    name: None,
                    payload_size: None,
                    entries: Vec::new(),
                });
                out.len() - 1
            }
        };
        let s = &mut out[pos];
        if s.entries.iter().any(|e| e.idx == idx as u32) {
            return; // the same schema registered by another process
        }
        s.entries.push(PayloadEntry {
            idx: idx as u32,
            flags: int(r.get(3)).unwrap_or(0) as u64,
            type_id: int(r.get(4)).unwrap_or(0) as u64,
            name: text(r.get(5)),
            array_or_union: int(r.get(6)).map(|n| n as u64),
            offset: int(r.get(7)).map(|n| n as u64),
        });
    })?;
    for s in &mut out {
        s.entries.sort_by_key(|e| e.idx);
    }
    Ok(out)
}

/// Size and alignment in bytes of a predefined entry type (LP64), `None` when unknown.
fn type_layout(type_id: u64, schemas: &[PayloadSchema]) -> Option<(u64, u64)> {
    let size = match type_id {
        1 | 2 | 11 | 12 | 25 | 32 => 1,
        3 | 4 | 13 | 14 | 26 | 42 | 50 => 2,
        5 | 6 | 15 | 16 | 19 | 24 | 27 | 43 | 52 | 90..=92 => 4,
        7..=10 | 17 | 18 | 20 | 22 | 23 | 44 | 80 | 128..=255 => 8,
        21 | 33 | 34 | 45 => 16,
        t if t >= REGISTERED_START => {
            // A nested registered schema has its size; otherwise it is an enum (a C int).
            return match schemas
                .iter()
                .find(|s| s.schema_id == t)
                .and_then(|s| s.payload_size)
            {
                Some(n) => Some((n, n.clamp(1, 8))),
                None => Some((4, 4)),
            };
        }
        _ => return None,
    };
    Some((size, size.min(8)))
}

/// Decodes `blob` along `schema`. Entries that fall outside the blob or have an unknown type
/// are skipped; arrays come back as raw bytes.
pub fn decode_payload(
    blob: &[u8],
    schema: &PayloadSchema,
    all: &[PayloadSchema],
) -> Vec<PayloadField> {
    let mut fields = Vec::new();
    let mut cursor = 0u64;
    for e in &schema.entries {
        let Some((size, align)) = type_layout(e.type_id, all) else {
            break;
        };
        let offset = match e.offset {
            Some(o) => o,
            None if e.idx == 0 => 0,
            None => cursor.div_ceil(align) * align,
        };
        let count = if e.flags & ARRAY_FLAGS != 0 {
            e.array_or_union.unwrap_or(1).max(1)
        } else {
            1
        };
        let len = size * count;
        cursor = offset + len;
        let Some(bytes) = usize::try_from(offset)
            .ok()
            .and_then(|o| blob.get(o..o.checked_add(usize::try_from(len).ok()?)?))
        else {
            continue;
        };
        let value = if count > 1 {
            PayloadValue::Bytes(bytes.to_vec())
        } else {
            scalar(e.type_id, bytes)
        };
        let name = e.name.clone().unwrap_or_else(|| format!("entry {}", e.idx));
        fields.push(PayloadField { name, value });
    }
    fields
}

fn scalar(type_id: u64, b: &[u8]) -> PayloadValue {
    let le = |n: usize| -> u64 {
        let mut buf = [0u8; 8];
        buf[..n].copy_from_slice(&b[..n]);
        u64::from_le_bytes(buf)
    };
    let signed = |n: usize| -> i64 {
        let shift = 64 - 8 * n as u32;
        ((le(n) << shift) as i64) >> shift
    };
    match (type_id, b.len()) {
        (19 | 43, 4) => PayloadValue::Float(f32::from_le_bytes([b[0], b[1], b[2], b[3]]) as f64),
        (20 | 44, 8) => PayloadValue::Float(f64::from_bits(le(8))),
        (1 | 3 | 5 | 7 | 9 | 11 | 13 | 15 | 17, n @ (1 | 2 | 4 | 8)) => {
            PayloadValue::Int(signed(n))
        }
        // Enums (registered types with no schema of their own) are C ints.
        (t, 4) if t >= REGISTERED_START => PayloadValue::Int(signed(4)),
        (_, n @ (1 | 2 | 4 | 8)) => PayloadValue::Uint(le(n)),
        _ => PayloadValue::Bytes(b.to_vec()),
    }
}

/// The payload bytes of a `binaryData` value: a BLOB as is; TEXT of hex digits decoded; other
/// TEXT as its bytes. (The column is declared TEXT; the exporter's encoding is not documented.)
pub(crate) fn blob_of(v: Option<&Value<'_>>) -> Option<Vec<u8>> {
    match v? {
        Value::Blob(b) if !b.is_empty() => Some(b.to_vec()),
        Value::Text(t) if !t.is_empty() => {
            let t = t.trim();
            let hex = t.strip_prefix("0x").unwrap_or(t);
            if hex.len() % 2 == 0 && hex.bytes().all(|c| c.is_ascii_hexdigit()) {
                (0..hex.len())
                    .step_by(2)
                    .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).ok())
                    .collect()
            } else {
                Some(t.as_bytes().to_vec())
            }
        }
        _ => None,
    }
}

/// A blob that begins like `nvtxPayloadData_t` (schema id as u64, payload size as u64, then
/// the payload): the exporter's blob layout is undocumented, so when the first eight bytes name a
/// schema of this domain and the next eight give a size that fits, that schema and those bytes
/// are used. `None` when the blob does not look like that.
pub(crate) fn split_header<'a>(
    blob: &'a [u8],
    schemas: &'a [PayloadSchema],
    domain_id: u64,
) -> Option<(&'a PayloadSchema, &'a [u8])> {
    let word = |i: usize| -> Option<u64> {
        Some(u64::from_le_bytes(blob.get(i..i + 8)?.try_into().ok()?))
    };
    let (id, size) = (word(0)?, word(8)?);
    let schema = schemas
        .iter()
        .find(|s| s.domain_id == domain_id && s.schema_id == id)?;
    let end = 16usize.checked_add(usize::try_from(size).ok()?)?;
    // The size must match the schema's static size where it has one.
    if schema.payload_size.is_some_and(|n| n != size) {
        return None;
    }
    Some((schema, blob.get(16..end)?))
}

/// Entry names an NCCL API call's payload must have (and must not have), from NCCL's
/// `nvtx_payload_schemas.h`. Empty `required` for calls without a payload.
fn expected_entries(api: &str) -> (&'static [&'static str], &'static [&'static str]) {
    const SIZE: &str = "Message size [bytes]";
    const RED: &str = "Reduction operation";
    match api {
        "ncclSend" | "ncclRecv" => (&["Peer rank"], &[]),
        "ncclAllReduce" | "ncclReduceScatter" => (&[RED], &["Root"]),
        "ncclReduce" => (&["Root", RED], &[]),
        "ncclBroadcast" | "ncclBcast" => (&["Root"], &[RED]),
        "ncclAllGather" | "ncclAlltoAll" | "ncclAllToAll" => (&[SIZE], &[RED, "Root", "Peer rank"]),
        "ncclCommSplit" => (&["Parent NCCL communicator ID"], &[]),
        "ncclCommShrink" => (&["num_exclude"], &[]),
        "ncclCommInitAll" => (&["No. of devices"], &[]),
        "ncclCommInitRank"
        | "ncclCommInitRankConfig"
        | "ncclCommInitRankScalable"
        | "ncclCommDestroy"
        | "ncclCommAbort" => (
            &["Rank", "No. of ranks"],
            &["Parent NCCL communicator ID", "num_exclude"],
        ),
        "ncclCommFinalize" => (&["NCCL communicator ID"], &[SIZE, "Rank"]),
        _ => (&[], &[]),
    }
}

/// The schema an NCCL call's payload follows: the domain's schemas whose entry names fit the API
/// (and whose size fits the blob when there is one). Returns the unique schema id when only one
/// fits, and the layout when all that fit share one layout (NCCL registers identical layouts
/// under several ids, e.g. for `ncclSend` and `ncclRecv`).
pub(crate) fn choose_schema<'a>(
    schemas: &'a [PayloadSchema],
    domain_id: u64,
    api: &str,
    blob_len: Option<usize>,
) -> (Option<u64>, Option<&'a PayloadSchema>) {
    let (required, forbidden) = expected_entries(api);
    let has = |s: &PayloadSchema, n: &str| s.entries.iter().any(|e| e.name.as_deref() == Some(n));
    let fits: Vec<&PayloadSchema> = schemas
        .iter()
        .filter(|s| s.domain_id == domain_id)
        .filter(|s| match (blob_len, s.payload_size) {
            (Some(len), Some(size)) => size == len as u64,
            _ => true,
        })
        .filter(|s| {
            // With a blob, an unknown API may still be decoded if its size picks one schema.
            (!required.is_empty() || blob_len.is_some())
                && required.iter().all(|n| has(s, n))
                && !forbidden.iter().any(|n| has(s, n))
        })
        .collect();
    let Some(first) = fits.first() else {
        return (None, None);
    };
    let same_layout = fits.iter().all(|s| {
        s.entries.len() == first.entries.len()
            && s.entries.iter().zip(&first.entries).all(|(a, b)| {
                a.name == b.name
                    && a.type_id == b.type_id
                    && a.offset == b.offset
                    && a.flags == b.flags
            })
    });
    let id = (fits.len() == 1).then_some(first.schema_id);
    (id, same_layout.then_some(*first))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(idx: u32, type_id: u64, name: &str, offset: Option<u64>) -> PayloadEntry {
        PayloadEntry {
            idx,
            name: Some(name.into()),
            type_id,
            flags: 0,
            offset,
            array_or_union: None,
        }
    }

    #[test]
    fn natural_alignment_when_offsets_absent() {
        // uint8 then int32 with no offsets: the int32 sits at 4.
        let s = PayloadSchema {
            domain_id: 1,
            schema_id: 1 << 24,
            name: None,
            payload_size: Some(8),
            entries: vec![entry(0, 12, "a", None), entry(1, 15, "b", None)],
        };
        let blob = [7u8, 0, 0, 0, 0xfe, 0xff, 0xff, 0xff];
        let f = decode_payload(&blob, &s, &[]);
        assert_eq!(f[0].value, PayloadValue::Uint(7));
        assert_eq!(f[1].value, PayloadValue::Int(-2));
    }

    #[test]
    fn payload_data_header_is_recognised() {
        let s = PayloadSchema {
            domain_id: 1,
            schema_id: 16777220,
            name: None,
            payload_size: Some(16),
            entries: vec![
                entry(0, 18, "NCCL communicator ID", None),
                entry(1, 22, "Message size [bytes]", Some(8)),
            ],
        };
        let mut blob = Vec::new();
        for w in [16777220u64, 16, 0xabc, 8192] {
            blob.extend_from_slice(&w.to_le_bytes());
        }
        let all = [s];
        let (found, body) = split_header(&blob, &all, 1).expect("header");
        assert_eq!(found.schema_id, 16777220);
        let f = decode_payload(body, found, &all);
        assert_eq!(f[1].value, PayloadValue::Uint(8192));
        assert!(split_header(&blob[16..], &all, 1).is_none());
    }

    #[test]
    fn hex_text_blobs() {
        assert_eq!(blob_of(Some(&Value::Text("0a0B"))), Some(vec![10, 11]));
        assert_eq!(blob_of(Some(&Value::Null)), None);
    }
}
