//! A trace streamed in as it arrives, plain or gzip-compressed: [`KinetoStream`].

use crate::distributed;
use crate::join;
use crate::reader::{Inside, Reader};
use crate::trace::KinetoTrace;
use flate2::write::MultiGzDecoder;
use model::Diagnostic;
use std::io::Write;

/// Compressed bytes inflated per call: the inflated text handed to the reader at a time stays
/// small (a few hundred KiB) whatever the caller's pieces.
const GZIP_PIECE: usize = 32 * 1024;
/// Plain text handed to the reader at a time.
const TEXT_PIECE: usize = 1 << 20;

/// Streams one trace into the reader: feed pieces as they come (cut anywhere), then
/// [`KinetoStream::finish`]. The first two bytes decide between JSON text and gzip.
pub struct KinetoStream {
    path: String,
    input: Input,
    reader: Reader,
}

enum Input {
    /// Nothing decided yet; a lone first byte waits for the second.
    Start(Option<u8>),
    Plain,
    Gzip(Box<Gunzip>),
}

/// A gzip stream (any number of members) inflated as it is fed.
struct Gunzip {
    decoder: MultiGzDecoder<Vec<u8>>,
    /// Compressed bytes taken in.
    compressed: u64,
    /// What stopped it, if anything (the rest of the file is not read).
    failed: Option<String>,
}

impl KinetoStream {
    pub fn new(path: &str) -> Self {
        KinetoStream {
            path: path.to_string(),
            input: Input::Start(None),
            reader: Reader::new(),
        }
    }

    /// Pushes the next bytes of the file.
    pub fn feed(&mut self, chunk: &[u8]) {
        if chunk.is_empty() {
            return;
        }
        if let Input::Start(first) = self.input {
            let head: Vec<u8> = first
                .into_iter()
                .chain(chunk.iter().copied().take(2))
                .collect();
            if head.len() < 2 {
                self.input = Input::Start(head.first().copied());
                return;
            }
            self.input = if head.starts_with(&[0x1f, 0x8b]) {
                Input::Gzip(Box::new(Gunzip {
                    decoder: MultiGzDecoder::new(Vec::new()),
                    compressed: 0,
                    failed: None,
                }))
            } else {
                Input::Plain
            };
            if let Some(b) = first {
                self.push(&[b]);
            }
        }
        self.push(chunk);
    }

    fn push(&mut self, bytes: &[u8]) {
        match &mut self.input {
            // A MiB at a time: the reader's buffer then holds about that, whatever the pieces.
            Input::Plain => bytes
                .chunks(TEXT_PIECE)
                .for_each(|piece| self.reader.push(piece)),
            Input::Gzip(gz) => {
                for piece in bytes.chunks(GZIP_PIECE) {
                    if gz.failed.is_some() {
                        return;
                    }
                    if let Err(e) = gz.decoder.write_all(piece) {
                        gz.failed = Some(format!(
                            "gzip stream damaged near byte {} of the file ({e})",
                            gz.compressed
                        ));
                    }
                    gz.compressed += piece.len() as u64;
                    let text = gz.decoder.get_mut();
                    self.reader.push(text);
                    text.clear();
                }
            }
            Input::Start(_) => {}
        }
    }

    /// Bytes held between pieces besides the records kept: the text not yet read and the
    /// inflater's output buffer. Bounded, whatever the file's size.
    pub fn buffered_bytes(&self) -> usize {
        let gz = match &self.input {
            Input::Gzip(gz) => gz.decoder.get_ref().capacity(),
            _ => 0,
        };
        self.reader.buffered_bytes() + gz
    }

    /// Ends the input: the trace, with diagnostics for a file cut short or damaged.
    pub fn finish(mut self) -> KinetoTrace {
        let mut diagnostics = Vec::new();
        let path = self.path.clone();
        match std::mem::replace(&mut self.input, Input::Plain) {
            Input::Start(Some(b)) => self.reader.push(&[b]),
            Input::Start(None) | Input::Plain => {}
            Input::Gzip(mut gz) => {
                if gz.failed.is_none() {
                    if let Err(e) = gz.decoder.try_finish() {
                        gz.failed = Some(format!(
                            "gzip stream cut short after {} compressed bytes ({e})",
                            gz.compressed
                        ));
                    }
                }
                let text = std::mem::take(gz.decoder.get_mut());
                self.reader.push(&text);
                if let Some(why) = gz.failed {
                    diagnostics.push(Diagnostic::error(
                        &path,
                        0,
                        format!(
                            "{why}: {path} is read up to there ({} bytes of JSON inflated)",
                            self.reader.text_bytes()
                        ),
                    ));
                }
            }
        }
        assemble(path, self.reader, diagnostics)
    }
}

/// The trace from what the reader kept, with every diagnostic.
fn assemble(path: String, mut reader: Reader, mut diagnostics: Vec<Diagnostic>) -> KinetoTrace {
    let end = reader.end_state();
    let events = reader.collector.counts.events;
    let what_read = format!("the {events} complete events before it are read");
    match end.inside {
        Inside::Nothing | Inside::Broken => {}
        Inside::Empty => diagnostics.push(Diagnostic::error(&path, 0, "the file is empty")),
        Inside::Event | Inside::EventsBetween => {
            let cut = if end.inside == Inside::Event {
                "in the middle of an event"
            } else {
                "between two events"
            };
            diagnostics.push(Diagnostic::error(
                &path,
                end.line,
                format!(
                    "the trace ends at byte {} (line {}) inside the traceEvents array, {cut}: \
                     the file was cut short (did the job die while writing it?); {what_read}",
                    end.byte, end.line
                ),
            ));
        }
        Inside::TopLevel if reader.top.events_ended => diagnostics.push(Diagnostic::warning(
            &path,
            end.line,
            format!(
                "the trace ends at byte {} (line {}) after its events, before the document's \
                 closing `}}`: cut short; every event is read",
                end.byte, end.line
            ),
        )),
        Inside::TopLevel => diagnostics.push(Diagnostic::error(
            &path,
            end.line,
            format!(
                "the trace ends at byte {} (line {}) before its traceEvents array: the file was \
                 cut short (did the job die while writing it?); no event is read",
                end.byte, end.line
            ),
        )),
    }
    for (line, why) in &reader.damage {
        diagnostics.push(Diagnostic::warning(
            &path,
            *line,
            format!("damaged JSON ({why}); the reader skipped to the next event"),
        ));
    }
    if matches!(end.inside, Inside::Broken) {
        diagnostics.push(Diagnostic::error(
            &path,
            end.line,
            format!("the rest of the file after the damage is not read; {what_read}"),
        ));
    }
    if !reader.top.events_started && matches!(end.inside, Inside::Nothing | Inside::Broken) {
        diagnostics.push(Diagnostic::error(
            &path,
            0,
            "no traceEvents array: not a PyTorch profiler trace",
        ));
    }
    if reader.top.trailing > 0 {
        diagnostics.push(Diagnostic::warning(
            &path,
            end.line,
            format!(
                "{} bytes of text after the document's end are ignored",
                reader.top.trailing
            ),
        ));
    }
    let distributed = reader.top.distributed.take().and_then(|(raw, line)| {
        let d = distributed::parse(&raw, line);
        if d.is_none() {
            diagnostics.push(Diagnostic::warning(
                &path,
                line,
                "distributedInfo is not a readable JSON object: rank and process groups unknown",
            ));
        }
        d
    });
    let mut c = std::mem::take(&mut reader.collector);
    join::resolve(&mut c.kernels, &c.comm_ops, &c.launches);
    c.kernels.sort_by_key(|k| (k.start_ns, k.correlation));
    c.counts.comm_ops = c.comm_ops.len() as u64;
    c.kernels.shrink_to_fit();
    c.steps.sort_by_key(|s| (s.start_ns, s.step));
    c.annotations.sort_by(|a, b| {
        (a.start_ns, std::cmp::Reverse(a.end_ns)).cmp(&(b.start_ns, std::cmp::Reverse(b.end_ns)))
    });
    c.annotations.shrink_to_fit();
    if c.annotations_dropped > 0 {
        diagnostics.push(Diagnostic::warning(
            &path,
            0,
            format!(
                "{} record_function ranges past the first {} were left out (steps and stages read from those kept)",
                c.annotations_dropped,
                crate::MAX_ANNOTATIONS
            ),
        ));
    }
    for p in &c.counts.problems {
        diagnostics.push(Diagnostic::warning(
            &path,
            p.first_line,
            format!(
                "{} event(s): {} (the first at line {})",
                p.count, p.what, p.first_line
            ),
        ));
    }
    if c.counts.nccl_kernels == 0 && reader.top.events_started {
        diagnostics.push(Diagnostic::warning(
            &path,
            0,
            format!(
                "no NCCL kernels in this trace ({} events, {} GPU kernels): it adds no NCCL operation",
                c.counts.events, c.counts.kernels
            ),
        ));
    }
    let base = reader.top.base_time_ns.unwrap_or(0);
    if base != 0 {
        shift(&mut c, base);
    }
    let cpu_pid = c.cpu_pid;
    let process_name = cpu_pid.and_then(|p| {
        c.process_names
            .iter()
            .find(|(pid, _)| *pid == p)
            .map(|(_, n)| n.clone())
    });
    KinetoTrace {
        path,
        schema_version: reader.top.schema_version.take(),
        distributed,
        base_time_ns: reader.top.base_time_ns,
        cpu_pid,
        process_name,
        kernels: c.kernels,
        steps: c.steps,
        annotations: c.annotations,
        counts: c.counts,
        diagnostics,
        text_bytes: end.byte,
        lines: end.line,
        complete: end.inside == Inside::Nothing && end.damage == 0,
    }
}

/// Adds `baseTimeNanoseconds` to every time kept (times are then epoch nanoseconds).
fn shift(c: &mut crate::collect::Collector, base: i64) {
    for k in &mut c.kernels {
        k.start_ns = k.start_ns.saturating_add(base);
        k.end_ns = k.end_ns.saturating_add(base);
        if let Some(l) = &mut k.launch {
            l.start_ns = l.start_ns.saturating_add(base);
        }
    }
    for s in &mut c.steps {
        s.start_ns = s.start_ns.saturating_add(base);
        s.end_ns = s.end_ns.saturating_add(base);
    }
    for a in &mut c.annotations {
        a.start_ns = a.start_ns.saturating_add(base);
        a.end_ns = a.end_ns.saturating_add(base);
    }
}
