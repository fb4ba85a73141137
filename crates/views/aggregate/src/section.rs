//! One rank's detail: its NCCL kernels with their enriched fields, stored as columns (the text
//! values once, in a table of the section's own, so that a merge copies sections unchanged).
//!
//! Why columns and deltas: a rank's kernels follow each other, so start deltas, durations and
//! correlation-id deltas are small varints, and a column of one kind compresses far better than
//! interleaved records (about 6 bytes a kernel after zlib on the generator's runs).

use crate::format::{deflate, inflate, Error};
use crate::overview::Clock;
use serde::{Deserialize, Serialize};

/// One NCCL kernel of a rank. Text fields are indices into [`RankDetail::strings`].
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Kernel {
    /// Synchronised across the source's ranks (after [`RankDetail::map_times`], the run's).
    pub start_ns: i64,
    pub end_ns: i64,
    /// The start as the GPU's own clock read it.
    pub own_start_ns: i64,
    /// The log operation's name when matched, else the kernel name's operation, else
    /// `NCCL kernel`.
    pub op: u32,
    /// The CUDA kernel's name.
    pub kernel: u32,
    pub stream: u64,
    pub correlation_id: u64,
    pub matched: bool,
    pub confidence: Option<f32>,
    /// The logical communicator's id.
    pub comm: Option<u32>,
    pub op_count: Option<u64>,
    pub count: Option<u64>,
    /// `count × sizeof(datatype)`.
    pub bytes: Option<u64>,
    pub datatype: Option<u32>,
    pub algorithm: Option<u32>,
    pub protocol: Option<u32>,
    pub channels: Option<u32>,
    pub algo_bw_gbps: Option<f32>,
    pub bus_bw_gbps: Option<f32>,
    pub bus_efficiency: Option<f32>,
}

/// A rank's kernels, by start time, and the texts they refer to.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct RankDetail {
    pub strings: Vec<String>,
    pub kernels: Vec<Kernel>,
}

impl RankDetail {
    /// The text at `i` (empty if out of range: [`decode`] checks every index).
    pub fn text(&self, i: u32) -> &str {
        self.strings.get(i as usize).map_or("", String::as_str)
    }

    /// Index of `s` in the table, added if new (for writers; linear in the table, which holds a
    /// few dozen texts).
    pub fn intern(&mut self, s: &str) -> u32 {
        match self.strings.iter().position(|x| x == s) {
            Some(i) => i as u32,
            None => {
                self.strings.push(s.to_string());
                (self.strings.len() - 1) as u32
            }
        }
    }

    /// Moves every kernel's synchronised times through `clock` (the source's time to the run's).
    pub fn map_times(&mut self, clock: &Clock) {
        if *clock == Clock::IDENTITY {
            return;
        }
        for k in &mut self.kernels {
            k.start_ns = clock.apply(k.start_ns);
            k.end_ns = clock.apply(k.end_ns).max(k.start_ns);
        }
    }
}

/// The stored columns (postcard, then zlib). Text columns hold an index into `strings`, or for
/// optional ones 0 for none and index + 1.
#[derive(Serialize, Deserialize)]
struct Columns {
    strings: Vec<String>,
    start_delta: Vec<i64>,
    duration: Vec<u64>,
    own_offset: Vec<i64>,
    op: Vec<u32>,
    kernel: Vec<u32>,
    stream: Vec<u64>,
    correlation_delta: Vec<i64>,
    matched: Vec<bool>,
    confidence: Vec<Option<f32>>,
    comm: Vec<u32>,
    op_count: Vec<Option<u64>>,
    count: Vec<Option<u64>>,
    bytes: Vec<Option<u64>>,
    datatype: Vec<u32>,
    algorithm: Vec<u32>,
    protocol: Vec<u32>,
    channels: Vec<Option<u32>>,
    algo_bw: Vec<Option<f32>>,
    bus_bw: Vec<Option<f32>>,
    bus_efficiency: Vec<Option<f32>>,
}

fn opt_index(v: Option<u32>) -> u32 {
    v.map_or(0, |i| i.saturating_add(1))
}

/// The section's bytes and inflated size.
pub fn encode(d: &RankDetail) -> (Vec<u8>, u64) {
    let ks = &d.kernels;
    let mut prev_start = 0i64;
    let mut prev_corr = 0i64;
    let columns = Columns {
        strings: d.strings.clone(),
        start_delta: ks
            .iter()
            .map(|k| {
                let d = k.start_ns.wrapping_sub(prev_start);
                prev_start = k.start_ns;
                d
            })
            .collect(),
        duration: ks
            .iter()
            .map(|k| k.end_ns.saturating_sub(k.start_ns).max(0) as u64)
            .collect(),
        own_offset: ks
            .iter()
            .map(|k| k.own_start_ns.wrapping_sub(k.start_ns))
            .collect(),
        op: ks.iter().map(|k| k.op).collect(),
        kernel: ks.iter().map(|k| k.kernel).collect(),
        stream: ks.iter().map(|k| k.stream).collect(),
        correlation_delta: ks
            .iter()
            .map(|k| {
                let c = k.correlation_id as i64;
                let d = c.wrapping_sub(prev_corr);
                prev_corr = c;
                d
            })
            .collect(),
        matched: ks.iter().map(|k| k.matched).collect(),
        confidence: ks.iter().map(|k| k.confidence).collect(),
        comm: ks.iter().map(|k| opt_index(k.comm)).collect(),
        op_count: ks.iter().map(|k| k.op_count).collect(),
        count: ks.iter().map(|k| k.count).collect(),
        bytes: ks.iter().map(|k| k.bytes).collect(),
        datatype: ks.iter().map(|k| opt_index(k.datatype)).collect(),
        algorithm: ks.iter().map(|k| opt_index(k.algorithm)).collect(),
        protocol: ks.iter().map(|k| opt_index(k.protocol)).collect(),
        channels: ks.iter().map(|k| k.channels).collect(),
        algo_bw: ks.iter().map(|k| k.algo_bw_gbps).collect(),
        bus_bw: ks.iter().map(|k| k.bus_bw_gbps).collect(),
        bus_efficiency: ks.iter().map(|k| k.bus_efficiency).collect(),
    };
    deflate(&columns)
}

/// Reads a section of `kernels` kernels (the rank row's count) and `raw_len` inflated bytes.
/// `what` names it in errors (`rank 12's section`).
pub fn decode(
    file: &str,
    what: &str,
    bytes: &[u8],
    raw_len: u64,
    kernels: u64,
) -> Result<RankDetail, Error> {
    let c: Columns = inflate(file, what, bytes, raw_len)?;
    let bad = |m: &str| Err(Error::new(file, format!("{what} is garbled: {m}")));
    let n = c.start_delta.len();
    if n as u64 != kernels {
        return bad(&format!("{n} kernels, the overview says {kernels}"));
    }
    let lens = [
        c.duration.len(),
        c.own_offset.len(),
        c.op.len(),
        c.kernel.len(),
        c.stream.len(),
        c.correlation_delta.len(),
        c.matched.len(),
        c.confidence.len(),
        c.comm.len(),
        c.op_count.len(),
        c.count.len(),
        c.bytes.len(),
        c.datatype.len(),
        c.algorithm.len(),
        c.protocol.len(),
        c.channels.len(),
        c.algo_bw.len(),
        c.bus_bw.len(),
        c.bus_efficiency.len(),
    ];
    if lens.iter().any(|&l| l != n) {
        return bad("columns of different lengths");
    }
    let texts = c.strings.len() as u32;
    let required = |i: u32| (i < texts).then_some(i);
    let optional = |i: u32| -> Result<Option<u32>, ()> {
        match i {
            0 => Ok(None),
            i if i - 1 < texts => Ok(Some(i - 1)),
            _ => Err(()),
        }
    };
    let mut out = Vec::with_capacity(n);
    let (mut start, mut corr) = (0i64, 0i64);
    for i in 0..n {
        let Some(s) = start.checked_add(c.start_delta[i]) else {
            return bad("a start time overflows");
        };
        start = s;
        corr = corr.wrapping_add(c.correlation_delta[i]);
        let end = i64::try_from(c.duration[i])
            .ok()
            .and_then(|d| start.checked_add(d));
        let (Some(end), Some(own)) = (end, start.checked_add(c.own_offset[i])) else {
            return bad("a time overflows");
        };
        let (Some(op), Some(kernel)) = (required(c.op[i]), required(c.kernel[i])) else {
            return bad("a text index is out of range");
        };
        let texts = (
            optional(c.comm[i]),
            optional(c.datatype[i]),
            optional(c.algorithm[i]),
            optional(c.protocol[i]),
        );
        let (Ok(comm), Ok(datatype), Ok(algorithm), Ok(protocol)) = texts else {
            return bad("a text index is out of range");
        };
        out.push(Kernel {
            start_ns: start,
            end_ns: end,
            own_start_ns: own,
            op,
            kernel,
            stream: c.stream[i],
            correlation_id: corr as u64,
            matched: c.matched[i],
            confidence: c.confidence[i],
            comm,
            op_count: c.op_count[i],
            count: c.count[i],
            bytes: c.bytes[i],
            datatype,
            algorithm,
            protocol,
            channels: c.channels[i],
            algo_bw_gbps: c.algo_bw[i],
            bus_bw_gbps: c.bus_bw[i],
            bus_efficiency: c.bus_efficiency[i],
        });
    }
    Ok(RankDetail {
        strings: c.strings,
        kernels: out,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(crate) fn sample(n: usize) -> RankDetail {
        let mut d = RankDetail::default();
        let ar = d.intern("AllReduce");
        let name = d.intern("ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevComm *, ...)");
        let comm = d.intern("0x1234abcd");
        let unmatched = d.intern("NCCL kernel");
        for i in 0..n as i64 {
            let matched = i % 5 != 4;
            d.kernels.push(Kernel {
                start_ns: 5_000_000_000 + i * 40_000,
                end_ns: 5_000_000_000 + i * 40_000 + 25_000 + i,
                own_start_ns: 5_002_444_643 + i * 40_000,
                op: if matched { ar } else { unmatched },
                kernel: name,
                stream: 7,
                correlation_id: 100 + 3 * i as u64,
                matched,
                confidence: matched.then_some(0.9),
                comm: matched.then_some(comm),
                op_count: matched.then_some(i as u64),
                count: matched.then_some(1 << 20),
                bytes: matched.then_some(4 << 20),
                datatype: None,
                algorithm: None,
                protocol: None,
                channels: matched.then_some(8),
                algo_bw_gbps: matched.then_some(160.5),
                bus_bw_gbps: matched.then_some(280.875),
                bus_efficiency: matched.then_some(0.61),
            });
        }
        d
    }

    #[test]
    fn a_section_round_trips() {
        for n in [0, 1, 1000] {
            let d = sample(n);
            let (bytes, raw) = encode(&d);
            assert_eq!(decode("f", "s", &bytes, raw, n as u64), Ok(d));
        }
    }

    #[test]
    fn a_section_is_compact() {
        let (bytes, _) = encode(&sample(10_000));
        assert!(bytes.len() < 10_000 * 8, "{} bytes", bytes.len());
    }

    #[test]
    fn a_section_of_another_size_or_with_bad_indices_is_refused() {
        let d = sample(10);
        let (bytes, raw) = encode(&d);
        let e = decode("r.agg", "rank 3's section", &bytes, raw, 11).unwrap_err();
        assert!(e.to_string().starts_with("r.agg: rank 3's section"), "{e}");
        let mut bad = d.clone();
        bad.kernels[3].comm = Some(99);
        let (bytes, raw) = encode(&bad);
        assert!(decode("f", "s", &bytes, raw, 10).is_err());
        // Start deltas whose sum leaves i64: an error, not a wrapped time.
        let (bytes, raw) = encode(&d);
        let mut c: Columns = inflate("f", "s", &bytes, raw).unwrap();
        c.start_delta[1] = i64::MAX;
        let (bytes, raw) = deflate(&c);
        let e = decode("f", "s", &bytes, raw, 10).unwrap_err();
        assert!(e.message.contains("overflows"), "{e}");
    }
}
