//! The stage file reader on good and bad files, whole and in chunks of every size.

use ingest_stages::{is_stage_file, read_stage_file, Format, StageFile, StageReader};

fn chunked(bytes: &[u8], size: usize) -> StageFile {
    let mut r = StageReader::new("stages.csv");
    for c in bytes.chunks(size) {
        r.feed(c);
    }
    r.finish()
}

/// The paper's two-rank fixture, one step.
const FIXTURE: &str = "step,rank,stage,duration_ms\n\
                       0,0,data,100\n0,0,forward,50\n0,0,backward,20\n\
                       0,1,data,10\n0,1,forward,50\n0,1,backward,110\n";

#[test]
fn reads_the_fixture_in_any_chunking() {
    let whole = read_stage_file("stages.csv", FIXTURE.as_bytes());
    assert_eq!(whole.format, Some(Format::Csv));
    assert_eq!(whole.stage_names, ["data", "forward", "backward"]);
    assert_eq!(whole.records.len(), 6);
    assert_eq!(whole.ranks(), [0, 1]);
    assert_eq!(whole.steps(), [0]);
    assert!(whole.diagnostics.is_empty(), "{:?}", whole.diagnostics);
    assert!(whole.incomplete_steps.is_empty());
    let r = whole.records[5];
    assert_eq!(
        (r.step, r.rank, r.stage, r.duration_ms, r.line),
        (0, 1, 2, 110.0, 7)
    );
    for size in 1..FIXTURE.len() {
        assert_eq!(chunked(FIXTURE.as_bytes(), size), whole, "chunks of {size}");
    }
}

#[test]
fn json_lines_read_the_same_rows() {
    let jsonl = "{\"step\":0,\"rank\":0,\"stage\":\"data\",\"duration_ms\":100}\n\
                 {\"step\":0,\"rank\":0,\"stage\":\"forward\",\"duration_ms\":50.0}\n\
                 {\"stage\":\"backward\",\"duration_ms\":20,\"rank\":0,\"step\":0,\"host\":\"n1\"}\r\n\
                 \n\
                 {\"step\":0,\"rank\":1,\"stage\":\"data\",\"duration_ms\":10}\n\
                 {\"step\":0,\"rank\":1,\"stage\":\"forward\",\"duration_ms\":50}\n\
                 {\"step\":0,\"rank\":1,\"stage\":\"backward\",\"duration_ms\":110}";
    assert!(is_stage_file(jsonl.as_bytes()));
    let f = read_stage_file("s.jsonl", jsonl.as_bytes());
    assert_eq!(f.format, Some(Format::JsonLines));
    assert_eq!(f.stage_names, ["data", "forward", "backward"]);
    let durations: Vec<f64> = f.records.iter().map(|r| r.duration_ms).collect();
    assert_eq!(durations, [100.0, 50.0, 20.0, 10.0, 50.0, 110.0]);
    assert_eq!(f.records[3].line, 5, "the blank line counts");
    assert!(f.diagnostics.is_empty(), "{:?}", f.diagnostics);
}

#[test]
fn bad_values_are_named_and_the_rest_loads() {
    let text = "step,rank,stage,duration_ms\n\
                0,0,data,1\n0,0,fwd,2\n\
                0,1,data,1\n0,1,fwd,-2\n\
                1,0,data,abc\n1,0,fwd,2\n\
                1,1,data,1\n1,1,fwd,2\n\
                2,0,data,1\n2,0,fwd,2\n\
                2,1,data\n2,1,fwd,3\n\
                x,1,data,1\n\
                3,0,data,1\n3,0,fwd,2\n3,1,data,1\n3,1,fwd,inf\n";
    let f = read_stage_file("bad.csv", text.as_bytes());
    assert_eq!(f.error, None);
    assert_eq!(f.bad_lines, 5);
    let lines: Vec<u64> = f.diagnostics.iter().map(|d| d.line).collect();
    let text_of = |line: u64| {
        f.diagnostics
            .iter()
            .find(|d| d.line == line)
            .map(|d| d.message.clone())
            .unwrap_or_default()
    };
    assert!(
        text_of(5).contains("duration_ms -2 is negative"),
        "{}",
        text_of(5)
    );
    assert!(
        text_of(6).contains("\"abc\" is not a number"),
        "{}",
        text_of(6)
    );
    assert!(
        text_of(12).contains("no duration_ms value"),
        "{}",
        text_of(12)
    );
    assert!(text_of(14).contains("step \"x\" is not a non-negative integer"));
    assert!(text_of(14).contains("step 2 (the row before) is incomplete"));
    assert!(text_of(18).contains("not a finite number"));
    // Every bad line named, each with the file's path.
    for l in [5, 6, 12, 14, 18] {
        assert!(lines.contains(&l), "line {l} named: {lines:?}");
    }
    assert!(f.diagnostics.iter().all(|d| d.path == "bad.csv"));
    // Ranks left without a stage by a refused row are named at their step's first row.
    let missing: Vec<&str> = f
        .diagnostics
        .iter()
        .filter(|d| d.message.contains("has no row for stage"))
        .map(|d| d.message.as_str())
        .collect();
    assert_eq!(missing.len(), 4, "{missing:?}");
    assert!(missing[0].starts_with("step 0 rank 1 has no row for stage \"fwd\""));
    assert_eq!(f.incomplete_steps, [0, 1, 2, 3]);
    // The good rows are all there.
    assert_eq!(f.records.len(), 18 - 1 - 5);
}

#[test]
fn a_rank_missing_a_stage_is_named_at_its_first_row() {
    let text = "step,rank,stage,duration_ms\n\
                5,0,data,1\n5,0,forward,2\n5,0,backward,3\n\
                5,1,data,1\n5,1,backward,3\n\
                6,0,data,1\n6,0,forward,2\n6,0,backward,3\n\
                6,1,data,1\n6,1,forward,2\n6,1,backward,3\n";
    let f = read_stage_file("m.csv", text.as_bytes());
    assert_eq!(f.incomplete_steps, [5]);
    assert_eq!(f.diagnostics.len(), 1, "{:?}", f.diagnostics);
    let d = &f.diagnostics[0];
    assert_eq!(d.line, 5);
    assert!(d
        .message
        .contains("step 5 rank 1 has no row for stage \"forward\""));
}

#[test]
fn repeated_stages_are_kept_in_order_and_concatenated_files_read() {
    // Two per-rank files concatenated, each with its header; rank 1 accumulates twice.
    let text = "step,rank,stage,duration_ms\n0,0,forward,1\n0,0,backward,2\n0,0,forward,1\n0,0,backward,2\n\
                step,rank,stage,duration_ms\n0,1,forward,1\n0,1,backward,2\n0,1,forward,1\n0,1,backward,2\n";
    let f = read_stage_file("c.csv", text.as_bytes());
    assert!(f.diagnostics.is_empty(), "{:?}", f.diagnostics);
    assert_eq!(f.records.len(), 8);
    assert_eq!(f.stage_names, ["forward", "backward"]);
}

#[test]
fn files_that_are_not_stage_files_say_so() {
    let f = read_stage_file("x.csv", b"a,b,c\n1,2,3\n");
    assert!(f.error.as_deref().unwrap().contains("not a stage file"));
    assert!(f.records.is_empty());
    let f = read_stage_file("e.csv", b"");
    assert!(f.error.as_deref().unwrap().contains("empty"));
    let f = read_stage_file("h.csv", b"step,rank,stage,duration_ms\n");
    assert!(f.error.as_deref().unwrap().contains("no usable row"));
    let f = read_stage_file(
        "j.jsonl",
        b"{\"step\":0,\"rank\":0,\"stage\":\"d\",\"duration_ms\":1}\n[1,2]\n\xff\xfe\n",
    );
    assert_eq!(f.records.len(), 1);
    assert_eq!(f.bad_lines, 2);
    assert!(f.diagnostics[0].message.contains("not a JSON object"));
    assert!(f.diagnostics[1].message.contains("not UTF-8"));
}

#[test]
fn a_flood_of_bad_lines_is_counted_not_listed() {
    let mut text = String::from("step,rank,stage,duration_ms\n0,0,data,1\n");
    for _ in 0..1000 {
        text.push_str("0,0,data,oops\n");
    }
    let f = read_stage_file("flood.csv", text.as_bytes());
    assert_eq!(f.bad_lines, 1000);
    assert_eq!(
        f.diagnostics.len() as u64,
        ingest_stages::MAX_NAMED_LINES + 1
    );
    assert!(f
        .diagnostics
        .last()
        .unwrap()
        .message
        .starts_with("800 more bad lines"));
}
