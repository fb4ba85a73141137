//! The JSON Lines shape: one object per line with the keys `step`, `rank`, `stage`,
//! `duration_ms` (others ignored).

use crate::reader::RawRow;
use serde::Deserialize;
use serde_json::Value;
use std::borrow::Cow;

#[derive(Deserialize)]
struct Object {
    #[serde(default)]
    step: Option<Value>,
    #[serde(default)]
    rank: Option<Value>,
    #[serde(default)]
    stage: Option<Value>,
    #[serde(default)]
    duration_ms: Option<Value>,
}

/// Whether `line` is a JSON object carrying all four keys (the sniff's test).
pub(crate) fn is_stage_object(line: &[u8]) -> bool {
    let line = line.trim_ascii();
    if !line.starts_with(b"{") {
        return false;
    }
    match serde_json::from_slice::<serde_json::Map<String, Value>>(line) {
        Ok(map) => crate::COLUMNS.iter().all(|k| map.contains_key(*k)),
        Err(_) => false,
    }
}

/// The four values of one line as text (`None` where a key is absent or null), or why the line
/// is not an object at all.
pub(crate) fn row(line: &str) -> Result<RawRow<'static>, String> {
    // serde would also read a struct from an array (`[0, 1, "data", 2]`): objects only.
    if !line.trim_start().starts_with('{') {
        return Err("not a JSON object with step, rank, stage and duration_ms".into());
    }
    let o: Object = serde_json::from_str(line)
        .map_err(|e| format!("not a JSON object with step, rank, stage and duration_ms ({e})"))?;
    Ok(RawRow {
        step: text(o.step),
        rank: text(o.rank),
        stage: text(o.stage),
        duration: text(o.duration_ms),
    })
}

/// A value as the text the row checks parse: numbers as written, strings as they are; null is
/// missing; anything else (an array, an object, a boolean) its JSON, which the checks refuse.
fn text(v: Option<Value>) -> Option<Cow<'static, str>> {
    match v? {
        Value::Null => None,
        Value::String(s) => Some(Cow::Owned(s)),
        other => Some(Cow::Owned(other.to_string())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_four_keys() {
        let r =
            row(r#"{"rank": 2, "step": 10, "stage": "backward", "duration_ms": 3.25, "x": [1]}"#)
                .unwrap();
        assert_eq!(r.step.as_deref(), Some("10"));
        assert_eq!(r.rank.as_deref(), Some("2"));
        assert_eq!(r.stage.as_deref(), Some("backward"));
        assert_eq!(r.duration.as_deref(), Some("3.25"));
        let r = row(r#"{"step": 1, "rank": 0, "stage": "data", "duration_ms": null}"#).unwrap();
        assert_eq!(r.duration, None);
        assert!(row("[1, 2]").is_err());
        assert!(row("{\"step\": 1,").is_err());
    }
}
