//! The timeline in a compact binary form, built in the loading worker and transferred to the
//! page (never copied): per track its label, its spans as five columns (starts, ends, op, mark
//! and parallelism bytes: 19 bytes a span), then its level-of-detail summaries. The page decodes
//! it a slice of spans at a time ([`TimelineDecoder`]), so no main-thread task grows with the run.

use model::OpType;
use timeline::{op_byte, Lod, Mark, Marker, MarkerRow, Span, Timeline, Track, LOD_NO_OP};

/// Format tag of [`encode_timeline`]'s output (v3: columns of spans with their match marks and
/// parallelisms, then both summaries).
const TIMELINE_MAGIC: &[u8; 4] = b"NST3";

/// The timeline as bytes: per track its label, its spans as five columns (starts, ends, op,
/// mark and parallelism bytes: 19 bytes a span, read back in one pass without per-field
/// checks), then its [`Lod`] summaries by operation and by parallelism, built in the worker so
/// the page never computes them.
pub fn encode_timeline(t: &Timeline) -> Vec<u8> {
    let mut out = Vec::with_capacity(encoded_len(t));
    encode_timeline_in_parts(t, &mut |part| out.extend_from_slice(part));
    out
}

/// The length of [`encode_timeline`]'s output, without encoding (the loading worker sizes the
/// page's buffer with it; `timeline_round_trips` holds it to the encoder's).
pub fn encoded_len(t: &Timeline) -> usize {
    let text = |s: &str| 4 + s.len();
    let lod = |l: &Lod| 8 * 3 + 4 + l.levels.iter().map(|v| 4 + v.len()).sum::<usize>();
    let tracks: usize = t
        .tracks
        .iter()
        .map(|k| text(&k.label) + 4 + 19 * k.spans.len() + lod(&k.lod) + lod(&k.par_lod))
        .sum();
    let markers: usize = t
        .markers
        .iter()
        .map(|row| {
            let ranges: usize = row.ranges.iter().map(|m| 8 + 8 + 1 + text(&m.text)).sum();
            text(&row.label) + 4 + ranges
        })
        .sum();
    TIMELINE_MAGIC.len() + 8 + 8 + 4 + tracks + 4 + markers
}

/// [`encode_timeline`]'s output handed to `emit` in parts, a track at a time (its head, its
/// columns and summaries, one part each), so that a caller may write it anywhere without the
/// whole of it in memory at once: the loading worker writes it into the page's buffer.
pub fn encode_timeline_in_parts(t: &Timeline, emit: &mut dyn FnMut(&[u8])) {
    let mut out = Vec::new();
    out.extend_from_slice(TIMELINE_MAGIC);
    out.extend_from_slice(&t.start_ns.to_le_bytes());
    out.extend_from_slice(&t.end_ns.to_le_bytes());
    out.extend_from_slice(&(t.tracks.len() as u32).to_le_bytes());
    emit(&out);
    for track in &t.tracks {
        out.clear();
        out.extend_from_slice(&(track.label.len() as u32).to_le_bytes());
        out.extend_from_slice(track.label.as_bytes());
        out.extend_from_slice(&(track.spans.len() as u32).to_le_bytes());
        for s in &track.spans {
            out.extend_from_slice(&s.start_ns.to_le_bytes());
        }
        for s in &track.spans {
            out.extend_from_slice(&s.end_ns.to_le_bytes());
        }
        out.extend(track.spans.iter().map(|s| s.op.map_or(LOD_NO_OP, op_byte)));
        out.extend(track.spans.iter().map(|s| s.mark.byte()));
        out.extend(track.spans.iter().map(|s| s.par));
        encode_lod(&mut out, &track.lod);
        encode_lod(&mut out, &track.par_lod);
        emit(&out);
    }
    out.clear();
    out.extend_from_slice(&(t.markers.len() as u32).to_le_bytes());
    for row in &t.markers {
        put_text(&mut out, &row.label);
        out.extend_from_slice(&(row.ranges.len() as u32).to_le_bytes());
        for m in &row.ranges {
            out.extend_from_slice(&m.start_ns.to_le_bytes());
            out.extend_from_slice(&m.end_ns.to_le_bytes());
            out.push(m.kind);
            put_text(&mut out, &m.text);
        }
    }
    emit(&out);
}

fn put_text(out: &mut Vec<u8>, text: &str) {
    out.extend_from_slice(&(text.len() as u32).to_le_bytes());
    out.extend_from_slice(text.as_bytes());
}

fn text(r: &mut Reader) -> Result<String, String> {
    let len = r.u32()? as usize;
    String::from_utf8(r.take(len)?.to_vec()).map_err(|_| "timeline: a text is not UTF-8".into())
}

fn decode_markers(r: &mut Reader) -> Result<Vec<MarkerRow>, String> {
    let rows = r.u32()? as usize;
    let mut out = Vec::with_capacity(rows.min(16));
    for _ in 0..rows {
        let label = text(r)?;
        let n = r.u32()? as usize;
        let mut ranges = Vec::with_capacity(n.min(1 << 16));
        for _ in 0..n {
            let start_ns = r.i64()?;
            let end_ns = r.i64()?;
            let kind = r.take(1)?[0];
            ranges.push(Marker {
                start_ns,
                end_ns,
                kind,
                text: text(r)?,
            });
        }
        out.push(MarkerRow { label, ranges });
    }
    Ok(out)
}

fn encode_lod(out: &mut Vec<u8>, lod: &Lod) {
    out.extend_from_slice(&lod.origin_ns.to_le_bytes());
    out.extend_from_slice(&lod.bucket_ns.to_le_bytes());
    out.extend_from_slice(&lod.max_span_ns.to_le_bytes());
    out.extend_from_slice(&(lod.levels.len() as u32).to_le_bytes());
    for level in &lod.levels {
        out.extend_from_slice(&(level.len() as u32).to_le_bytes());
        out.extend_from_slice(level);
    }
}

fn decode_lod(r: &mut Reader) -> Result<Lod, String> {
    let origin_ns = r.i64()?;
    let bucket_ns = r.i64()?;
    let max_span_ns = r.i64()?;
    let n_levels = r.u32()? as usize;
    let mut levels = Vec::with_capacity(n_levels.min(64));
    for _ in 0..n_levels {
        let len = r.u32()? as usize;
        levels.push(r.take(len)?.to_vec());
    }
    if bucket_ns < 1 && !levels.is_empty() {
        return Err("timeline: a summary has no bucket width".into());
    }
    Ok(Lod {
        origin_ns,
        bucket_ns,
        max_span_ns,
        levels,
    })
}

/// Reads [`encode_timeline`]'s output back.
pub fn decode_timeline(bytes: &[u8]) -> Result<Timeline, String> {
    let mut d = TimelineDecoder::new(bytes)?;
    loop {
        if d.step(bytes, usize::MAX)? {
            return d.finish(bytes);
        }
    }
}

/// Decodes a timeline a slice of spans at a time, so that the page can decode millions of
/// spans over several short tasks instead of one long one. The bytes are passed to each step
/// (the decoder keeps only its place in them).
pub struct TimelineDecoder {
    at: usize,
    left: usize,
    /// The track being decoded, if its spans are not all read yet.
    partial: Option<PartialTrack>,
    timeline: Timeline,
}

/// A track whose header is read and whose spans are being decoded.
struct PartialTrack {
    label: String,
    n: usize,
    /// Where its five span columns start (starts, ends, ops, marks, parallelisms).
    columns: usize,
    spans: Vec<Span>,
}

impl TimelineDecoder {
    /// Reads the header.
    pub fn new(bytes: &[u8]) -> Result<TimelineDecoder, String> {
        let mut r = Reader { bytes, at: 0 };
        if r.take(4)? != TIMELINE_MAGIC {
            return Err("timeline: bad format tag".into());
        }
        let start_ns = r.i64()?;
        let end_ns = r.i64()?;
        let left = r.u32()? as usize;
        Ok(TimelineDecoder {
            at: r.at,
            left,
            partial: None,
            timeline: Timeline {
                tracks: Vec::with_capacity(left.min(1 << 16)),
                start_ns,
                end_ns,
                markers: Vec::new(),
            },
        })
    }

    /// Decodes about `spans` more spans (whole tracks' headers and summaries around them);
    /// true once every track is read.
    pub fn step(&mut self, bytes: &[u8], spans: usize) -> Result<bool, String> {
        let mut budget = spans.max(1);
        while budget > 0 && (self.left > 0 || self.partial.is_some()) {
            let mut track = match self.partial.take() {
                Some(t) => t,
                None => {
                    let mut r = Reader { bytes, at: self.at };
                    let label = text(&mut r)?;
                    let n = r.u32()? as usize;
                    // 19 bytes a span; a 32-bit count times 19 can overflow wasm32's usize.
                    let size = n.checked_mul(19).ok_or("timeline: too many spans")?;
                    let columns = r.at;
                    r.take(size)?;
                    self.at = r.at;
                    self.left -= 1;
                    PartialTrack {
                        label,
                        n,
                        columns,
                        spans: Vec::with_capacity(n),
                    }
                }
            };
            let from = track.spans.len();
            let to = track.n.min(from.saturating_add(budget));
            decode_spans(bytes, &mut track, to);
            budget -= (to - from).max(1).min(budget);
            if track.spans.len() < track.n {
                self.partial = Some(track);
                break;
            }
            let mut r = Reader { bytes, at: self.at };
            let lod = decode_lod(&mut r)?;
            let par_lod = decode_lod(&mut r)?;
            self.at = r.at;
            self.timeline.tracks.push(Track {
                label: track.label,
                spans: track.spans,
                source: None,
                lod,
                par_lod,
            });
        }
        Ok(self.left == 0 && self.partial.is_none())
    }

    /// The timeline, once [`TimelineDecoder::step`] said it is complete.
    pub fn finish(mut self, bytes: &[u8]) -> Result<Timeline, String> {
        if self.left != 0 || self.partial.is_some() {
            return Err("timeline: not every track is decoded".into());
        }
        let mut r = Reader { bytes, at: self.at };
        self.timeline.markers = decode_markers(&mut r)?;
        if r.at != bytes.len() {
            return Err(format!("timeline: {} trailing bytes", bytes.len() - r.at));
        }
        Ok(self.timeline)
    }
}

/// Decodes `track`'s spans up to index `to` (its columns were bounds-checked with its header).
fn decode_spans(bytes: &[u8], track: &mut PartialTrack, to: usize) {
    let (n, from) = (track.n, track.spans.len());
    let column = |k: usize, width: usize| {
        let base = track.columns + k;
        &bytes[base + from * width..base + to * width]
    };
    let starts = column(0, 8);
    let ends = column(8 * n, 8);
    let ops = column(16 * n, 1);
    let marks = column(17 * n, 1);
    let pars = column(18 * n, 1);
    track.spans.extend(
        starts
            .chunks_exact(8)
            .zip(ends.chunks_exact(8))
            .zip(ops.iter().zip(marks).zip(pars))
            .map(|((a, z), ((&op, &mark), &par))| Span {
                start_ns: le_i64(a),
                end_ns: le_i64(z),
                op: OpType::ALL.get(op as usize).copied(),
                mark: Mark::from_byte(mark).unwrap_or(Mark::Unmatched),
                par,
            }),
    );
}

fn le_i64(b: &[u8]) -> i64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(b);
    i64::from_le_bytes(a)
}

struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], String> {
        let end = self.at.checked_add(n).filter(|e| *e <= self.bytes.len());
        let end = end.ok_or_else(|| format!("timeline: truncated at byte {}", self.at))?;
        let out = &self.bytes[self.at..end];
        self.at = end;
        Ok(out)
    }
    fn u32(&mut self) -> Result<u32, String> {
        let b = self.take(4)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }
    fn i64(&mut self) -> Result<i64, String> {
        Ok(le_i64(self.take(8)?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A timeline shaped like a real one: several tracks, every operation and none, times
    /// at the range of a GPU clock.
    fn sample() -> Timeline {
        let base = 1_700_000_000_000_000_000i64;
        let tracks = (0..3)
            .map(|t| Track {
                label: format!("host{t} pid {} GPU {t} — ü", 1000 + t),
                spans: (0..40)
                    .map(|i| Span {
                        start_ns: base + i * 1_000 + t,
                        end_ns: base + i * 1_000 + 500 + t,
                        op: (i % 12 != 11).then(|| OpType::ALL[(i % 11) as usize]),
                        mark: Mark::ALL[(i % 3) as usize],
                        par: if i % 7 == 6 { LOD_NO_OP } else { (i % 5) as u8 },
                    })
                    .collect::<Vec<_>>(),
                source: None,
                lod: Lod::default(),
                par_lod: Lod::default(),
            })
            .map(|mut k| {
                k.lod = Lod::build(&k.spans);
                k.par_lod = Lod::build_by(&k.spans, |s| s.par);
                k
            })
            .collect();
        Timeline {
            tracks,
            start_ns: base,
            end_ns: base + 40_000,
            markers: vec![
                MarkerRow {
                    label: "NVTX iterations (rank 0)".into(),
                    ranges: vec![Marker {
                        start_ns: base,
                        end_ns: base + 20_000,
                        kind: 0,
                        text: "iteration 0 <b>é".into(),
                    }],
                },
                MarkerRow::default(),
            ],
        }
    }

    #[test]
    fn timeline_round_trips() {
        let t = sample();
        let bytes = encode_timeline(&t);
        assert_eq!(bytes.len(), encoded_len(&t));
        let empty = Timeline::default();
        assert_eq!(encode_timeline(&empty).len(), encoded_len(&empty));
        let mut parts = Vec::new();
        encode_timeline_in_parts(&t, &mut |p| parts.push(p.to_vec()));
        assert!(parts.len() > t.tracks.len(), "a part per track and more");
        assert_eq!(parts.concat(), bytes);
        assert_eq!(decode_timeline(&bytes), Ok(t));
        assert_eq!(
            decode_timeline(&encode_timeline(&Timeline::default())),
            Ok(Timeline::default())
        );
    }

    #[test]
    fn a_timeline_decodes_in_steps() {
        let t = sample();
        let bytes = encode_timeline(&t);
        let mut d = TimelineDecoder::new(&bytes).unwrap();
        let mut steps = 1;
        while !d.step(&bytes, 15).unwrap() {
            steps += 1;
        }
        // 3 tracks of 40 spans, 15 a step: tracks are split across steps.
        assert_eq!(steps, 8);
        assert_eq!(d.finish(&bytes), Ok(t));
    }

    #[test]
    fn every_truncation_of_a_timeline_is_an_error() {
        let bytes = encode_timeline(&sample());
        for len in 0..bytes.len() {
            assert!(
                decode_timeline(&bytes[..len]).is_err(),
                "prefix of {len} bytes"
            );
        }
        let mut longer = bytes.clone();
        longer.push(0);
        assert!(decode_timeline(&longer).is_err());
    }
}
