//! A structural check of a Trace Event Format document, as Perfetto and `chrome://tracing`
//! need it and as the contract promises it.
//!
//! Why: a trace that loads but mislabels tracks, or drops a field on some kernels, fails
//! silently in the viewer; tests and the command check the document before writing it.

use crate::chrome_trace::CAT_KERNEL;
use crate::fields::CONTRACT_FIELDS;
use serde_json::Value;
use std::collections::BTreeSet;

/// `Ok` when every event is well formed, every process and thread used is named, and every
/// kernel event carries every contract field; else the first problem found.
pub fn validate_trace(trace: &Value) -> Result<(), String> {
    let events = trace
        .get("traceEvents")
        .and_then(Value::as_array)
        .ok_or("no traceEvents array")?;
    let mut used: BTreeSet<(u64, u64)> = BTreeSet::new();
    let mut named_processes: BTreeSet<u64> = BTreeSet::new();
    let mut named_threads: BTreeSet<(u64, u64)> = BTreeSet::new();
    for (i, e) in events.iter().enumerate() {
        let at = |what: &str| format!("event {i}: {what}");
        let ph = e
            .get("ph")
            .and_then(Value::as_str)
            .ok_or_else(|| at("no ph"))?;
        let pid = e
            .get("pid")
            .and_then(Value::as_u64)
            .ok_or_else(|| at("pid not an integer"))?;
        let tid = e
            .get("tid")
            .and_then(Value::as_u64)
            .ok_or_else(|| at("tid not an integer"))?;
        let name = e
            .get("name")
            .and_then(Value::as_str)
            .ok_or_else(|| at("name not a string"))?;
        match ph {
            "X" => {
                e.get("ts")
                    .and_then(Value::as_f64)
                    .ok_or_else(|| at("ts not a number"))?;
                let dur = e
                    .get("dur")
                    .and_then(Value::as_f64)
                    .ok_or_else(|| at("dur not a number"))?;
                if dur < 0.0 {
                    return Err(at("negative dur"));
                }
                used.insert((pid, tid));
                if e.get("cat").and_then(Value::as_str) == Some(CAT_KERNEL) {
                    let args = e
                        .get("args")
                        .and_then(Value::as_object)
                        .ok_or_else(|| at("kernel event without args"))?;
                    if let Some(missing) = CONTRACT_FIELDS.iter().find(|f| !args.contains_key(**f))
                    {
                        return Err(at(&format!("kernel event without `{missing}`")));
                    }
                }
            }
            "i" | "I" => {
                e.get("ts")
                    .and_then(Value::as_f64)
                    .ok_or_else(|| at("ts not a number"))?;
                used.insert((pid, tid));
            }
            "M" => {
                let label = e
                    .get("args")
                    .and_then(|a| a.get("name"))
                    .and_then(Value::as_str);
                match name {
                    "process_name" => {
                        label.ok_or_else(|| at("process_name without args.name"))?;
                        named_processes.insert(pid);
                    }
                    "thread_name" => {
                        label.ok_or_else(|| at("thread_name without args.name"))?;
                        named_threads.insert((pid, tid));
                    }
                    _ => {}
                }
            }
            _ => {}
        }
    }
    if let Some((pid, _)) = used.iter().find(|(p, _)| !named_processes.contains(p)) {
        return Err(format!("pid {pid} has events but no process_name"));
    }
    if let Some((pid, tid)) = used.iter().find(|k| !named_threads.contains(k)) {
        return Err(format!("pid {pid} tid {tid} has events but no thread_name"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fields::CONTRACT_FIELDS;
    use serde_json::{json, Map};

    fn kernel_args() -> Value {
        let m: Map<String, Value> = CONTRACT_FIELDS
            .iter()
            .map(|f| (f.to_string(), Value::Null))
            .collect();
        Value::Object(m)
    }

    fn named(events: Vec<Value>) -> Value {
        let mut all = vec![
            json!({"ph": "M", "pid": 0, "tid": 0, "name": "process_name", "args": {"name": "rank 0 (h)"}}),
            json!({"ph": "M", "pid": 0, "tid": 1, "name": "thread_name", "args": {"name": "NCCL operations"}}),
        ];
        all.extend(events);
        json!({ "traceEvents": all, "displayTimeUnit": "ns" })
    }

    fn kernel(dur: f64) -> Value {
        json!({"ph": "X", "pid": 0, "tid": 1, "name": "AllReduce", "cat": CAT_KERNEL,
               "ts": 1.5, "dur": dur, "args": kernel_args()})
    }

    #[test]
    fn accepts_a_well_formed_trace() {
        assert_eq!(validate_trace(&named(vec![kernel(2.0)])), Ok(()));
    }

    #[test]
    fn rejects_what_viewers_would_mishandle() {
        assert!(validate_trace(&json!({})).is_err());
        assert!(validate_trace(&named(vec![kernel(-1.0)])).is_err());
        let mut no_field = kernel(1.0);
        no_field["args"]
            .as_object_mut()
            .unwrap()
            .remove(CONTRACT_FIELDS[3]);
        let err = validate_trace(&named(vec![no_field])).unwrap_err();
        assert!(err.contains(CONTRACT_FIELDS[3]), "{err}");
        let mut string_pid = kernel(1.0);
        string_pid["pid"] = json!("0");
        assert!(validate_trace(&named(vec![string_pid])).is_err());
        let mut other_thread = kernel(1.0);
        other_thread["tid"] = json!(7);
        let err = validate_trace(&named(vec![other_thread])).unwrap_err();
        assert!(err.contains("thread_name"), "{err}");
        let unnamed_process = json!({"traceEvents": [kernel(1.0)]});
        assert!(validate_trace(&unnamed_process)
            .unwrap_err()
            .contains("process_name"));
    }
}
