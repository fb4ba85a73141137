//! `distributedInfo`, read leniently: PyTorch has written it in several shapes.

use crate::meta::ranks;
use crate::trace::{DistributedInfo, PgConfig};
use serde_json::Value;

/// The `distributedInfo` object's text, read; `None` when it is not a JSON object.
pub(crate) fn parse(raw: &[u8], line: u64) -> Option<DistributedInfo> {
    let v: Value = serde_json::from_slice(raw).ok()?;
    let o = v.as_object()?;
    let int = |key: &str| {
        o.get(key).and_then(|v| {
            v.as_u64()
                .or_else(|| v.as_str().and_then(|s| s.trim().parse().ok()))
                .and_then(|n| u32::try_from(n).ok())
        })
    };
    let text = |key: &str| {
        o.get(key).and_then(|v| match v {
            Value::String(s) => Some(s.clone()),
            Value::Number(n) => Some(n.to_string()),
            _ => None,
        })
    };
    // An array of groups (Kineto), or an object of them keyed by name (some writers).
    let groups: Vec<&Value> = match o.get("pg_config") {
        Some(Value::Array(a)) => a.iter().collect(),
        Some(Value::Object(m)) => m.values().collect(),
        _ => Vec::new(),
    };
    let pg_config = groups.into_iter().filter_map(group).collect();
    Some(DistributedInfo {
        backend: text("backend"),
        rank: int("rank"),
        world_size: int("world_size"),
        nccl_version: text("nccl_version"),
        pg_config,
        line,
    })
}

fn group(v: &Value) -> Option<PgConfig> {
    let o = v.as_object()?;
    let text = |key: &str| {
        o.get(key).and_then(|v| match v {
            Value::String(s) => Some(s.clone()),
            Value::Number(n) => Some(n.to_string()),
            _ => None,
        })
    };
    let name = text("pg_name").or_else(|| text("pg_id"))?;
    // Ranks as a list, a string of one, or (execution traces) an object {group rank: global}.
    let members = match o.get("ranks") {
        Some(Value::Object(m)) => {
            let mut pairs: Vec<(u32, u32)> = m
                .iter()
                .filter_map(|(k, v)| Some((k.parse().ok()?, u32::try_from(v.as_u64()?).ok()?)))
                .collect();
            pairs.sort();
            pairs.into_iter().map(|(_, g)| g).collect()
        }
        Some(v) => ranks(v).unwrap_or_default(),
        None => Vec::new(),
    };
    Some(PgConfig {
        name,
        desc: text("pg_desc"),
        backend_config: text("backend_config"),
        size: o
            .get("pg_size")
            .and_then(Value::as_u64)
            .and_then(|n| u32::try_from(n).ok()),
        ranks: members,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes_pytorch_wrote() {
        let d = parse(
            br#"{"backend": "nccl", "rank": 0, "world_size": 2, "pg_count": 1,
                 "pg_config": [{"pg_name": "0", "pg_desc": "default_pg",
                 "backend_config": "cuda:nccl", "pg_size": 2, "ranks": [0, 1]}],
                 "nccl_version": "2.17.1"}"#,
            3,
        )
        .unwrap();
        assert_eq!((d.rank, d.world_size), (Some(0), Some(2)));
        assert_eq!(d.nccl_version.as_deref(), Some("2.17.1"));
        assert_eq!(d.pg_config.len(), 1);
        assert_eq!(d.pg_config[0].ranks, [0, 1]);
        assert!(d.pg_config[0].is_nccl());
        let keyed = parse(
            br#"{"rank": "1", "pg_config": {"x": {"pg_id": 7, "ranks": {"1": 5, "0": 4},
                 "backend_config": "cpu:gloo"}}}"#,
            1,
        )
        .unwrap();
        assert_eq!(keyed.rank, Some(1));
        assert_eq!(keyed.pg_config[0].name, "7");
        assert_eq!(keyed.pg_config[0].ranks, [4, 5]);
        assert!(!keyed.pg_config[0].is_nccl());
        assert!(parse(b"[1]", 1).is_none());
        assert!(parse(b"{", 1).is_none());
    }
}
