//! Bad input: every cut of a small real trace (plain and gzip) and random byte changes never
//! panic, keep every complete event, and say where the file ends; events missing or
//! mistyping a field are counted and named with their line.

use ingest_kineto::{parse_bytes, KinetoTrace};
use model::Severity;
use serde_json::{json, Value};
use std::io::{Read, Write};
use std::sync::OnceLock;

/// A small real trace: DLRM rank 0's top level with its NCCL kernels, their launches, the
/// communication ranges, steps, metadata and the first 30 other events, in file order.
fn small() -> Option<&'static Vec<u8>> {
    static SMALL: OnceLock<Option<Vec<u8>>> = OnceLock::new();
    SMALL
        .get_or_init(|| {
            let path = testkit::fixtures::files("kineto", "gz")
                .into_iter()
                .find(|p| p.to_string_lossy().contains("worker0"))?;
            let mut text = Vec::new();
            flate2::read::GzDecoder::new(std::fs::File::open(path).unwrap())
                .read_to_end(&mut text)
                .unwrap();
            let mut doc: Value = serde_json::from_slice(&text).unwrap();
            let events = doc["traceEvents"].as_array().unwrap().clone();
            let nccl = |e: &Value| {
                e["cat"] == "kernel" && e["name"].as_str().is_some_and(|n| n.contains("nccl"))
            };
            let corrs: Vec<Value> = events
                .iter()
                .filter(|e| nccl(e))
                .map(|e| e["args"]["correlation"].clone())
                .collect();
            let mut others = 0;
            let kept: Vec<Value> = events
                .into_iter()
                .filter(|e| {
                    let name = e["name"].as_str().unwrap_or("");
                    let keep = nccl(e)
                        || corrs.contains(&e["args"]["correlation"])
                        || name == "record_param_comms"
                        || name.starts_with("nccl:")
                        || name.starts_with("ProfilerStep#")
                        || e["ph"] == "M";
                    if !keep && others < 30 {
                        others += 1;
                        return true;
                    }
                    keep
                })
                .collect();
            doc["traceEvents"] = Value::Array(kept);
            Some(serde_json::to_vec_pretty(&doc).unwrap())
        })
        .as_ref()
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(bytes).unwrap();
    e.finish().unwrap()
}

/// The kernels of `cut` are kernels of `whole`, the same ones.
fn kernels_are_a_subset(cut: &KinetoTrace, whole: &KinetoTrace, what: &str) {
    for k in &cut.kernels {
        let w = whole
            .kernels
            .iter()
            .find(|w| w.correlation == k.correlation);
        let w = w.unwrap_or_else(|| panic!("{what}: a kernel the whole trace lacks: {k:?}"));
        assert_eq!(
            (&k.name, k.start_ns, k.end_ns, k.device, k.stream),
            (&w.name, w.start_ns, w.end_ns, w.device, w.stream),
            "{what}"
        );
    }
}

#[test]
fn every_cut_of_a_real_trace_keeps_what_is_whole_and_says_where_it_ends() {
    let Some(text) = small() else { return };
    let whole = parse_bytes("small.json", text);
    assert_eq!(whole.kernels.len(), 8);
    assert!(whole.diagnostics.is_empty(), "{:?}", whole.diagnostics);
    let end_of_events = text.len() - text.iter().rev().position(|&c| c == b']').unwrap();
    for cut in 0..text.len() {
        let t = parse_bytes("small.json", &text[..cut]);
        kernels_are_a_subset(&t, &whole, &format!("cut at {cut}"));
        assert!(!t.diagnostics.is_empty(), "cut at {cut}: nothing said");
        assert!(t.diagnostics.iter().all(|d| d.path == "small.json"));
        if cut < end_of_events && cut > 0 {
            let d = t
                .diagnostics
                .iter()
                .find(|d| d.severity == Severity::Error && d.message.contains("cut short"))
                .unwrap_or_else(|| panic!("cut at {cut}: {:?}", t.diagnostics));
            let line = 1 + text[..cut].iter().filter(|&&c| c == b'\n').count() as u64;
            assert_eq!(d.line, line, "cut at {cut}: {}", d.message);
            assert!(
                d.message.contains(&format!("byte {cut} ")),
                "cut at {cut}: {}",
                d.message
            );
            assert!(!t.complete);
        }
    }
    // Every kernel whose event is whole in the cut is read.
    let last_kernel = |n: usize| {
        let s = String::from_utf8_lossy(&text[..n]);
        s.matches("\"cat\": \"kernel\"").count()
    };
    let mid = text.len() / 2;
    let t = parse_bytes("small.json", &text[..mid]);
    assert!(last_kernel(mid) > 0 || t.kernels.is_empty());
}

#[test]
fn every_cut_of_the_gzip_file_keeps_what_inflated() {
    let Some(text) = small() else { return };
    let gz = gzip(text);
    let whole = parse_bytes("small.json.gz", &gz);
    assert_eq!(whole.kernels.len(), 8);
    for cut in 0..gz.len() {
        let t = parse_bytes("small.json.gz", &gz[..cut]);
        kernels_are_a_subset(&t, &whole, &format!("gzip cut at {cut}"));
        assert!(!t.diagnostics.is_empty(), "gzip cut at {cut}: nothing said");
    }
}

/// A small generator of changes, the same every run.
struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        self.0 >> 33
    }
}

#[test]
fn random_byte_changes_never_panic() {
    let Some(text) = small() else { return };
    let gz = gzip(text);
    let mut rng = Lcg(0x6b69_6e65_746f);
    let interesting = b"{}[]\",:0123456789.-e \n\\";
    for round in 0..3000 {
        let mut bytes = if round % 4 == 3 {
            gz.clone()
        } else {
            text.clone()
        };
        for _ in 0..=rng.next() % 4 {
            let at = (rng.next() as usize) % bytes.len();
            bytes[at] = if rng.next().is_multiple_of(2) {
                interesting[(rng.next() as usize) % interesting.len()]
            } else {
                rng.next() as u8
            };
        }
        let t = parse_bytes("flipped.json", &bytes);
        for k in &t.kernels {
            assert!(k.name.to_lowercase().contains("nccl"), "round {round}");
            assert!(k.end_ns >= k.start_ns, "round {round}");
        }
        assert!(t.kernels.len() <= 9, "round {round}");
    }
}

/// A trace written for the test: events whose fields are missing or of the wrong type are
/// counted per problem and named with the first one's line; the good ones load.
#[test]
fn missing_and_mistyped_fields_are_counted_and_named() {
    let kernel = |corr: u64, extra: Value| {
        let mut e = json!({"ph": "X", "cat": "kernel",
            "name": "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
            "pid": 0, "tid": 7, "ts": 100.5 + corr as f64, "dur": 2.25,
            "args": {"device": 0, "stream": 7, "correlation": corr, "External id": corr}});
        for (k, v) in extra.as_object().unwrap() {
            if v.is_null() {
                e.as_object_mut().unwrap().remove(k);
            } else if k == "args" {
                for (a, x) in v.as_object().unwrap() {
                    e["args"][a] = x.clone();
                }
            } else {
                e[k] = v.clone();
            }
        }
        e
    };
    let events = [
        kernel(1, json!({})),
        kernel(2, json!({"ts": null})),
        kernel(3, json!({"dur": "soon"})),
        kernel(
            4,
            json!({"args": {"In msg nelems": "many", "Collective name": "allreduce"}}),
        ),
        kernel(5, json!({"ts": null})),
        json!({"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#x", "pid": 1, "tid": 1,
               "ts": 1, "dur": 1}),
        json!(17),
        kernel(6, json!({"args": null})),
    ];
    let lines: Vec<String> = events.iter().map(|e| e.to_string()).collect();
    let text = format!(
        "{{\"schemaVersion\": 1,\n\"traceEvents\": [\n{}\n]}}\n",
        lines.join(",\n")
    );
    let t = parse_bytes("fields.json", text.as_bytes());
    let corrs: Vec<u64> = t.kernels.iter().map(|k| k.correlation).collect();
    assert_eq!(corrs, [1, 4], "the kernels with what they need load");
    assert_eq!(t.kernels[1].coll.in_nelems, None);
    let said = |what: &str| {
        t.diagnostics
            .iter()
            .find(|d| d.message.contains(what))
            .unwrap_or_else(|| panic!("{what}: {:?}", t.diagnostics))
    };
    let ts = said("an NCCL kernel with a missing \"ts\"");
    assert!(ts.message.starts_with("2 event(s)"), "{}", ts.message);
    assert_eq!(ts.line, 4, "the first such event's line");
    assert_eq!(said("a mistyped \"dur\"").line, 5);
    assert_eq!(said("a mistyped \"In msg nelems\"").line, 6);
    assert_eq!(said("profiler step whose name has no number").line, 8);
    assert_eq!(said("not an object").line, 9);
    assert_eq!(said("without readable \"args\"").line, 10);
    assert!(t.complete);
}

#[test]
fn a_trace_without_nccl_kernels_says_so() {
    let text = br#"{"traceEvents": [{"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0,
        "tid": 7, "ts": 1, "dur": 2, "args": {}}]}"#;
    let t = parse_bytes("plain.json", text);
    assert!(t.kernels.is_empty());
    assert_eq!(t.counts.kernels, 1);
    let d = t
        .diagnostics
        .iter()
        .find(|d| d.message.contains("no NCCL kernels"))
        .unwrap();
    assert_eq!(d.path, "plain.json");
    assert!(d.message.contains("1 GPU kernels"), "{}", d.message);
}
