//! Parses the input whole and in chunks (size chosen by the first byte): neither may panic and
//! both must give the same result.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let (whole, chunked) = ingest_nccl::fuzz_parse(data);
    assert_eq!(whole, chunked, "chunked parse differs from whole parse");
});
