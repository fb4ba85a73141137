//! Writing trace events as Kineto writes them: `ts`/`dur` in microseconds with three decimals,
//! pretty-printed over several lines (Kineto's own layout) or one event per line.

use std::io::{self, Write};

/// One event's members, written in Kineto's order.
pub(crate) struct Ev<'a> {
    pub ph: &'a str,
    pub cat: &'a str,
    pub name: &'a str,
    pub pid: u32,
    pub tid: u32,
    /// Nanoseconds on the trace's time base.
    pub ts_ns: i64,
    /// `None` for instant and flow events.
    pub dur_ns: Option<i64>,
    /// The args object's members, already JSON (`"device": 0, ...`); empty: no args.
    pub args: &'a str,
    /// Flow events' `id` and binding point.
    pub flow: Option<(u64, bool)>,
}

/// Writes events into `traceEvents`, comma-separated.
pub(crate) struct EventWriter<W: Write> {
    pub out: W,
    pretty: bool,
    first: bool,
    pub events: u64,
    /// Subtracted from every time written (`baseTimeNanoseconds`, or 0 for absolute times).
    pub base: i64,
}

/// `ns` as Kineto's microseconds: an integer when whole, else three decimals.
pub(crate) fn micros(ns: i64) -> String {
    let (sign, a) = if ns < 0 { ("-", -ns) } else { ("", ns) };
    if a % 1000 == 0 {
        format!("{sign}{}", a / 1000)
    } else {
        format!("{sign}{}.{:03}", a / 1000, a % 1000)
    }
}

/// A JSON string literal of `s`.
pub(crate) fn quote(s: &str) -> String {
    serde_json::to_string(s).expect("a string serialises")
}

impl<W: Write> EventWriter<W> {
    pub fn new(out: W, pretty: bool, base: i64) -> Self {
        EventWriter {
            out,
            pretty,
            first: true,
            events: 0,
            base,
        }
    }

    pub fn event(&mut self, e: &Ev<'_>) -> io::Result<()> {
        let sep = if self.first { "" } else { "," };
        self.first = false;
        self.events += 1;
        let w = &mut self.out;
        let name = quote(e.name);
        if self.pretty {
            write!(
                w,
                "{sep}\n  {{\n    \"ph\": \"{}\", \"cat\": \"{}\", \"name\": {name}, ",
                e.ph, e.cat
            )?;
            write!(
                w,
                "\"pid\": {}, \"tid\": {},\n    \"ts\": {}",
                e.pid,
                e.tid,
                micros(e.ts_ns - self.base)
            )?;
        } else {
            write!(
                w,
                "{sep}\n{{\"ph\": \"{}\", \"cat\": \"{}\", \"name\": {name}, ",
                e.ph, e.cat
            )?;
            write!(
                w,
                "\"pid\": {}, \"tid\": {}, \"ts\": {}",
                e.pid,
                e.tid,
                micros(e.ts_ns - self.base)
            )?;
        }
        if let Some(d) = e.dur_ns {
            write!(w, ", \"dur\": {}", micros(d))?;
        }
        if let Some((id, end)) = e.flow {
            write!(w, ", \"id\": {id}")?;
            if end {
                write!(w, ", \"bp\": \"e\"")?;
            }
        }
        if !e.args.is_empty() {
            if self.pretty {
                write!(w, ",\n    \"args\": {{\n      {}\n    }}", e.args)?;
            } else {
                write!(w, ", \"args\": {{{}}}", e.args)?;
            }
        }
        if self.pretty {
            write!(w, "\n  }}")
        } else {
            write!(w, "}}")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn microseconds_as_kineto_writes_them() {
        assert_eq!(micros(1_694_128_201_429_795_000), "1694128201429795");
        assert_eq!(micros(2_636_669), "2636.669");
        assert_eq!(micros(5), "0.005");
        assert_eq!(micros(-1_500), "-1.500");
    }

    #[test]
    fn events_are_json() {
        for pretty in [true, false] {
            let mut w = EventWriter::new(Vec::new(), pretty, 0);
            for i in 0..3 {
                w.event(&Ev {
                    ph: "X",
                    cat: "kernel",
                    name: "a \"quoted\" name",
                    pid: 0,
                    tid: 7,
                    ts_ns: 1_000_500 + i,
                    dur_ns: Some(2_000),
                    args: if i == 1 { "" } else { "\"device\": 0" },
                    flow: (i == 2).then_some((9, true)),
                })
                .unwrap();
            }
            let text = format!("[{}]", String::from_utf8(w.out).unwrap());
            let v: serde_json::Value = serde_json::from_str(&text).unwrap();
            assert_eq!(v.as_array().unwrap().len(), 3);
            assert_eq!(v[0]["name"], "a \"quoted\" name");
            assert_eq!(v[0]["ts"].as_f64(), Some(1000.5));
            assert_eq!(v[2]["bp"], "e");
        }
    }
}
