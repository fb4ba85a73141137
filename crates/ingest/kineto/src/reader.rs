//! The document, read as it arrives: the top-level object's members in any order, the
//! `traceEvents` array one event at a time, everything else skipped.
//!
//! The reader holds the text not yet read (at most one event past what it was fed, plus the
//! piece being fed), the records it keeps and the state between pieces. An event is read when
//! all of it is there; a top-level value that is not kept (`deviceProperties`, long `INFO`
//! arrays) is skipped piece by piece whatever its size.

use crate::collect::{Collector, Event};
use crate::lines::Lines;
use crate::scan::{self, Scan, Skipper};

/// An event larger than this is skipped unread (no writer makes one; a damaged file might).
const MAX_EVENT: usize = 16 << 20;
/// Read text is dropped from the buffer's front once this much has piled up.
const COMPACT: usize = 1 << 20;

/// Which top-level member a value belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Key {
    Events,
    Distributed,
    BaseTime,
    Schema,
    Other,
}

#[derive(Debug, Clone)]
enum State {
    /// Before the document's `{`.
    Start,
    /// After `{` or `,`: a member name, or `}`.
    Key,
    /// After `name:`: the value.
    Value(Key),
    /// Inside a value not kept; `events` when it is an event (then the array goes on).
    Skip(Skipper, bool),
    /// Inside `traceEvents`: an element, or `]`.
    Events,
    /// After an element: `,` or `]`.
    EventSep,
    /// After damage inside `traceEvents`: looking for the next event's start.
    Resync,
    /// After a top-level value: `,` or `}`.
    AfterValue,
    /// The document's `}` was read.
    Done,
    /// Unreadable at top level: the rest is not read.
    Broken,
}

/// What the top level says besides the events.
#[derive(Debug, Default)]
pub(crate) struct Top {
    /// The `distributedInfo` value's text and its line.
    pub distributed: Option<(Vec<u8>, u64)>,
    pub base_time_ns: Option<i64>,
    pub schema_version: Option<String>,
    /// Whether `traceEvents` was met, and whether its `]` was.
    pub events_started: bool,
    pub events_ended: bool,
    /// Text found after the document's end (bytes).
    pub trailing: u64,
}

/// The document's reader (text in, records kept in [`Collector`]).
pub(crate) struct Reader {
    buf: Vec<u8>,
    /// Next unread byte of `buf`.
    pos: usize,
    /// Bytes dropped from `buf`'s front so far: `buf[0]` is byte `dropped` of the text.
    dropped: u64,
    lines: Lines,
    state: State,
    pub top: Top,
    pub collector: Collector,
    /// Syntax damage found (line, what), for the diagnostics.
    pub damage: Vec<(u64, String)>,
    damage_count: u64,
}

impl Reader {
    pub fn new() -> Self {
        Reader {
            buf: Vec::new(),
            pos: 0,
            dropped: 0,
            lines: Lines::default(),
            state: State::Start,
            top: Top::default(),
            collector: Collector::default(),
            damage: Vec::new(),
            damage_count: 0,
        }
    }

    /// Bytes held between pieces besides the records: the text not yet read.
    pub fn buffered_bytes(&self) -> usize {
        self.buf.capacity()
    }

    /// Text bytes read so far.
    pub fn text_bytes(&self) -> u64 {
        self.dropped + self.buf.len() as u64
    }

    /// Takes the next piece of text.
    pub fn push(&mut self, text: &[u8]) {
        if matches!(self.state, State::Broken) {
            return;
        }
        if let State::Done = self.state {
            self.top.trailing += text.iter().filter(|c| !c.is_ascii_whitespace()).count() as u64;
            return;
        }
        if let State::Skip(skipper, events) = &mut self.state {
            // A skipped value may be any size: the piece is consumed without being kept.
            if self.pos == self.buf.len() {
                match skipper.feed(text) {
                    None => {
                        self.dropped += text.len() as u64;
                        self.lines_skip(text);
                        return;
                    }
                    Some(n) => {
                        let events = *events;
                        self.dropped += n as u64;
                        self.lines_skip(&text[..n]);
                        self.state = if events {
                            State::EventSep
                        } else {
                            State::AfterValue
                        };
                        self.buf.clear();
                        self.pos = 0;
                        self.buf.extend_from_slice(&text[n..]);
                        self.run();
                        self.compact();
                        return;
                    }
                }
            }
        }
        self.buf.extend_from_slice(text);
        self.run();
        self.compact();
    }

    /// Counts the lines of skipped text that never entered the buffer.
    fn lines_skip(&mut self, text: &[u8]) {
        let mut l = Lines::default();
        let n = l.at(text, text.len()) - 1;
        self.lines.add(n);
    }

    /// The line of byte `at` of the buffer.
    fn line(&mut self, at: usize) -> u64 {
        self.lines.at(&self.buf, at)
    }

    /// Drops the read text from the buffer's front once enough has piled up.
    fn compact(&mut self) {
        if self.pos >= COMPACT || (self.pos > 0 && self.pos == self.buf.len()) {
            self.lines.drop_front(&self.buf, self.pos);
            self.buf.drain(..self.pos);
            self.dropped += self.pos as u64;
            self.pos = 0;
        }
    }

    /// Reads as far as the buffer allows.
    fn run(&mut self) {
        loop {
            let progressed = match std::mem::replace(&mut self.state, State::Broken) {
                State::Start => self.start(),
                State::Key => self.key(),
                State::Value(k) => self.value(k),
                State::Skip(s, events) => self.skip(s, events),
                State::Events => self.element(),
                State::EventSep => self.event_sep(),
                State::Resync => self.resync(),
                State::AfterValue => self.after_value(),
                State::Done => {
                    self.state = State::Done;
                    false
                }
                State::Broken => false,
            };
            if !progressed {
                return;
            }
        }
    }

    /// The next non-whitespace byte's offset, if the buffer has one.
    fn next_byte(&self) -> Option<(usize, u8)> {
        let i = scan::skip_ws(&self.buf, self.pos);
        self.buf.get(i).map(|&c| (i, c))
    }

    /// Stops reading: the rest of the file is not JSON this reader understands.
    fn broken(&mut self, at: usize, why: &str) -> bool {
        let line = self.line(at);
        self.damage.push((line, why.to_string()));
        self.damage_count += 1;
        self.state = State::Broken;
        false
    }

    fn start(&mut self) -> bool {
        // A UTF-8 byte-order mark is not JSON, but some editors write one.
        if self.dropped == 0 && self.pos == 0 && self.buf.starts_with(&[0xef, 0xbb, 0xbf]) {
            self.pos = 3;
        }
        match self.next_byte() {
            None => {
                self.state = State::Start;
                false
            }
            Some((i, b'{')) => {
                self.pos = i + 1;
                self.state = State::Key;
                true
            }
            Some((i, _)) => self.broken(i, "the file does not start with a JSON object"),
        }
    }

    fn key(&mut self) -> bool {
        let Some((i, c)) = self.next_byte() else {
            self.state = State::Key;
            return false;
        };
        match c {
            b'}' => {
                self.pos = i + 1;
                self.state = State::Done;
                return true;
            }
            b'"' => {}
            // `{ ..., }`: a trailing comma, tolerated.
            _ => return self.broken(i, "a member name was expected at the top level"),
        }
        let Ok(end) = scan::string_end(&self.buf, i) else {
            return self.wait(State::Key, i);
        };
        let j = scan::skip_ws(&self.buf, end);
        match self.buf.get(j) {
            None => return self.wait(State::Key, i),
            Some(b':') => {}
            Some(_) => return self.broken(j, "`:` was expected after a top-level name"),
        }
        let key = match &self.buf[i + 1..end - 1] {
            b"traceEvents" => Key::Events,
            b"distributedInfo" => Key::Distributed,
            b"baseTimeNanoseconds" => Key::BaseTime,
            b"schemaVersion" => Key::Schema,
            _ => Key::Other,
        };
        self.pos = j + 1;
        self.state = State::Value(key);
        true
    }

    /// Waits for more text in `state`, unless what waits since `from` is already too long to
    /// be anything but damage.
    fn wait(&mut self, state: State, from: usize) -> bool {
        if self.buf.len() - from > MAX_EVENT {
            return self.broken(from, "a top-level name or value longer than 16 MiB");
        }
        self.state = state;
        false
    }

    fn value(&mut self, key: Key) -> bool {
        let Some((i, c)) = self.next_byte() else {
            self.state = State::Value(key);
            return false;
        };
        match (key, c) {
            (Key::Events, b'[') => {
                self.top.events_started = true;
                self.pos = i + 1;
                self.state = State::Events;
                return true;
            }
            (Key::Distributed, b'{') => {
                let Ok(end) = scan::container_end(&self.buf, i) else {
                    return self.wait(State::Value(key), i);
                };
                let line = self.line(i);
                self.top.distributed = Some((self.buf[i..end].to_vec(), line));
                self.pos = end;
                self.state = State::AfterValue;
                return true;
            }
            _ => {}
        }
        if matches!(c, b'"' | b'{' | b'[') && !matches!(key, Key::Schema) {
            self.pos = i;
            self.state = State::Skip(Skipper::default(), false);
            return true;
        }
        let Ok((_, end)) = scan::value_end(&self.buf, i) else {
            return self.wait(State::Value(key), i);
        };
        let raw = &self.buf[i..end];
        match key {
            Key::BaseTime => self.top.base_time_ns = crate::number::signed(raw),
            Key::Schema => {
                self.top.schema_version = scan::text(raw)
                    .map(|t| t.into_owned())
                    .or_else(|| std::str::from_utf8(raw).ok().map(str::to_string))
            }
            _ => {}
        }
        self.pos = end;
        self.state = State::AfterValue;
        true
    }

    fn skip(&mut self, mut s: Skipper, events: bool) -> bool {
        match s.feed(&self.buf[self.pos..]) {
            Some(n) => {
                self.pos += n;
                self.state = if events {
                    State::EventSep
                } else {
                    State::AfterValue
                };
                true
            }
            None => {
                self.pos = self.buf.len();
                self.state = State::Skip(s, events);
                false
            }
        }
    }

    fn after_value(&mut self) -> bool {
        match self.next_byte() {
            None => {
                self.state = State::AfterValue;
                false
            }
            Some((i, b',')) => {
                self.pos = i + 1;
                self.state = State::Key;
                true
            }
            Some((i, b'}')) => {
                self.pos = i + 1;
                self.state = State::Done;
                true
            }
            Some((i, _)) => self.broken(i, "`,` or `}` was expected after a top-level value"),
        }
    }

    /// One element of `traceEvents`, or its end.
    fn element(&mut self) -> bool {
        let Some((i, c)) = self.next_byte() else {
            self.state = State::Events;
            return false;
        };
        match c {
            b']' => {
                self.top.events_ended = true;
                self.pos = i + 1;
                self.state = State::AfterValue;
                return true;
            }
            // `[,` or `,,`: an empty element some writers leave; tolerated.
            b',' => {
                self.pos = i + 1;
                self.state = State::Events;
                return true;
            }
            b'{' => {}
            _ => {
                return match scan::value_end(&self.buf, i) {
                    Ok((_, end)) => {
                        let line = self.line(i);
                        self.collector.problem(
                            "an element of traceEvents that is not an object".into(),
                            line,
                        );
                        self.pos = end;
                        self.state = State::EventSep;
                        true
                    }
                    Err(Scan::Incomplete) => self.wait_event(i),
                    Err(Scan::Bad(at, why)) => self.damaged(i, at, why),
                };
            }
        }
        let mut ev = Event::default();
        let buf = &self.buf;
        match scan::members(buf, i, |k, _, v| ev.set(k, v)) {
            Ok(end) => {
                self.collector.event(&ev, &mut self.lines, buf, i);
                self.pos = end;
                self.state = State::EventSep;
                true
            }
            Err(Scan::Incomplete) => self.wait_event(i),
            Err(Scan::Bad(at, why)) => self.damaged(i, at, why),
        }
    }

    /// Waits for the rest of the event starting at `i`; one too large is skipped.
    fn wait_event(&mut self, i: usize) -> bool {
        if self.buf.len() - i > MAX_EVENT {
            let line = self.line(i);
            self.collector
                .problem("an event larger than 16 MiB (skipped)".into(), line);
            self.pos = i;
            self.state = State::Skip(Skipper::default(), true);
            return true;
        }
        self.pos = i;
        self.state = State::Events;
        false
    }

    fn event_sep(&mut self) -> bool {
        match self.next_byte() {
            None => {
                self.state = State::EventSep;
                false
            }
            Some((i, b',')) => {
                self.pos = i + 1;
                self.state = State::Events;
                true
            }
            Some((i, b']')) => {
                self.top.events_ended = true;
                self.pos = i + 1;
                self.state = State::AfterValue;
                true
            }
            Some((i, _)) => self.damaged(i, i, "`,` or `]` was expected after an event"),
        }
    }

    /// Damage inside `traceEvents` from `start` (bad at `at`): noted, then the next event is
    /// looked for.
    fn damaged(&mut self, start: usize, at: usize, why: &str) -> bool {
        let first = self.line(start.min(at));
        let line = self.line(at);
        self.damage_count += 1;
        if self.damage.len() < 200 {
            self.damage.push((line, why.to_string()));
        }
        self.collector
            .problem("an event that is not valid JSON (skipped)".into(), first);
        self.pos = at.max(start) + 1;
        self.state = State::Resync;
        true
    }

    /// After damage: the next `{` that follows a `,` (whitespace between) starts the next event.
    fn resync(&mut self) -> bool {
        let mut from = self.pos;
        while let Some(k) = memchr::memchr(b'{', &self.buf[from..]) {
            let at = from + k;
            let before = self.buf[self.pos.min(at)..at]
                .iter()
                .rposition(|c| !c.is_ascii_whitespace())
                .map(|p| self.buf[self.pos.min(at) + p]);
            if before == Some(b',') {
                self.pos = at;
                self.state = State::Events;
                return true;
            }
            from = at + 1;
        }
        // Keep the last byte: a `,` there may precede the next piece's `{`.
        self.pos = self.buf.len().saturating_sub(1).max(self.pos);
        self.state = State::Resync;
        false
    }

    /// Where the text ended, in the terms of the diagnostics: (byte, line, inside what).
    pub fn end_state(&mut self) -> End {
        let at = self.buf.len();
        let line = self.line(at);
        let byte = self.text_bytes();
        let inside = match &self.state {
            State::Done => Inside::Nothing,
            State::Broken => Inside::Broken,
            State::Start => Inside::Empty,
            State::Events | State::Resync => {
                if self.buf[self.pos..].iter().all(u8::is_ascii_whitespace) {
                    Inside::EventsBetween
                } else {
                    Inside::Event
                }
            }
            State::EventSep => Inside::EventsBetween,
            State::Skip(_, true) => Inside::Event,
            _ => Inside::TopLevel,
        };
        End {
            byte,
            line,
            inside,
            damage: self.damage_count,
        }
    }
}

/// Where the text ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct End {
    pub byte: u64,
    pub line: u64,
    pub inside: Inside,
    pub damage: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Inside {
    /// The document ended properly.
    Nothing,
    /// No text at all (or only whitespace).
    Empty,
    /// Inside an event of `traceEvents` (cut in the middle of it).
    Event,
    /// Inside `traceEvents`, between two events.
    EventsBetween,
    /// Outside `traceEvents`, before the document's `}`.
    TopLevel,
    /// Reading stopped at damage outside `traceEvents`.
    Broken,
}
