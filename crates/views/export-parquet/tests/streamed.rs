//! Written a rank at a time (`ParquetWriter::write` per rank, as `ncclscope analyze` writes it),
//! the file is byte for byte the one `write_parquet` writes of all the records at once, and reads
//! back as the records' rows.

use export::fields::{CONFIDENCE, HOST, PROCESS_ID};
use export::{KernelRecord, Records};
use export_parquet::{write_parquet, ParquetWriter};
use parquet::file::reader::{FileReader, SerializedFileReader};
use serde_json::{json, Map};

fn record(rank: u32, i: i64) -> KernelRecord {
    let mut args = Map::new();
    args.insert(HOST.into(), json!(format!("node{:02}", rank / 2)));
    args.insert(PROCESS_ID.into(), json!(1000 + rank));
    if i % 2 == 0 {
        args.insert(CONFIDENCE.into(), json!(0.5 + i as f64 / 100.0));
    }
    KernelRecord {
        rank,
        start_ns: 1_000 * i,
        end_ns: 1_000 * i + 400,
        name: if i % 3 == 0 { "AllReduce" } else { "SendRecv" }.into(),
        matched: i % 4 != 3,
        parallelism: (i % 2 == 0).then_some("DP"),
        args,
    }
}

/// Every row as text, and the number of row groups.
fn rows(bytes: Vec<u8>) -> (Vec<String>, usize) {
    let reader = SerializedFileReader::new(bytes::Bytes::from(bytes)).unwrap();
    let groups = reader.metadata().num_row_groups();
    let rows = reader
        .get_row_iter(None)
        .unwrap()
        .map(|r| r.unwrap().to_string())
        .collect();
    (rows, groups)
}

#[test]
fn rank_by_rank_writes_the_same_rows() {
    let ranks: Vec<Vec<KernelRecord>> = (0..3)
        .map(|rank| (0..5).map(|i| record(rank, i)).collect())
        .collect();
    let whole = Records {
        kernels: ranks.iter().flatten().cloned().collect(),
        ..Records::default()
    };
    let mut all = Vec::new();
    write_parquet(&whole, &mut all).unwrap();
    let mut by_rank = Vec::new();
    let mut w = ParquetWriter::new(&mut by_rank).unwrap();
    for kernels in &ranks {
        w.write(kernels).unwrap();
    }
    w.write(&[]).unwrap();
    w.finish().unwrap();
    assert_eq!(by_rank, all);
    let (got, groups) = rows(by_rank);
    assert_eq!((got.len(), groups), (15, 1));
    let first = &got[0];
    for want in [
        "global_rank: 0",
        "start_ns: 0",
        "end_ns: 400",
        "host: \"node00\"",
        "pid: 1000",
    ] {
        assert!(first.contains(want), "{want} in {first}");
    }
}
