//! Every parsed log comes back from its bytes equal to itself: every real fixture and generator
//! logs of every shape; garbage and every cut of an encoding is an error, never a panic; and a
//! log renumbered after the trip equals the log parsed as that file in the first place.
#![cfg(not(target_arch = "wasm32"))]

use ingest_nccl::{parse_bytes, ParsedLog};

fn fixtures() -> Vec<(String, Vec<u8>)> {
    testkit::fixtures::files("nccl", "log")
        .into_iter()
        .map(|p| {
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            (name, std::fs::read(&p).unwrap())
        })
        .collect()
}

fn logs() -> Vec<(String, Vec<u8>)> {
    let mut v = fixtures();
    for preset in ["demo", "tp4-sym", "ep4-alltoall", "dp4-distopt"] {
        let run = synth::generate(&synth::preset(preset).expect("preset").config);
        v.extend(run.files.into_iter().filter(|(n, _)| n.ends_with(".log")));
    }
    v
}

#[test]
fn logs_come_back_equal() {
    let mut ops = 0;
    for (name, bytes) in logs() {
        let log = parse_bytes(&name, 3, &bytes);
        let wire = wire::log::encode(&log);
        let back = wire::log::decode(&wire).expect("decodes");
        assert_eq!(back, log, "{name}");
        // Not only equal as a list: every record field, printed.
        assert_eq!(format!("{back:?}"), format!("{log:?}"), "{name}");
        ops += log.ops.len();
    }
    assert!(ops > 1000, "{ops} operations travelled");
}

#[test]
fn renumbered_on_arrival_equals_parsed_in_place() {
    for (name, bytes) in logs() {
        let mut ahead =
            wire::log::decode(&wire::log::encode(&parse_bytes(&name, 0, &bytes))).expect("decodes");
        ahead.set_file_index(5);
        let in_place: ParsedLog = parse_bytes(&name, 5, &bytes);
        assert_eq!(ahead, in_place, "{name}");
        assert_eq!(format!("{ahead:?}"), format!("{in_place:?}"), "{name}");
    }
}

#[test]
fn garbage_and_cuts_are_errors() {
    let run = synth::generate(&synth::preset("tp4").expect("preset").config);
    let (name, bytes) = run.files.iter().find(|(n, _)| n.ends_with(".log")).unwrap();
    let wire = wire::log::encode(&parse_bytes(name, 0, bytes));
    for n in (0..wire.len()).step_by(97) {
        assert!(
            wire::log::decode(&wire[..n]).is_err(),
            "a cut at {n} decoded"
        );
    }
    assert!(wire::log::decode(b"NCCL INFO hello").is_err());
    let mut flipped = wire.clone();
    for i in (0..flipped.len()).step_by(13) {
        flipped[i] ^= 0xa5;
    }
    // Garbage may decode into some other log or fail; it must not panic.
    let _ = wire::log::decode(&flipped);
}
