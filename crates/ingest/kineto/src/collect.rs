//! What each event of `traceEvents` becomes: most are only counted; NCCL kernels, the launches
//! that may belong to them, communication ranges on the CPU and profiler steps are kept.
//!
//! Memory stays proportional to what is kept, not to the trace: a launch call (a quarter of a
//! trace's events) is kept only when its correlation id is an NCCL kernel's already seen, or
//! when it falls inside a communication range of its thread already seen. Kineto writes the CPU
//! operators before the GPU activities, so the second rule catches the launches of kernels that
//! come later in the file.

use crate::lines::Lines;
use crate::meta::{self, FieldProblem};
use crate::number::{micros_to_ns, u32_of, unsigned};
use crate::scan::{self, text};
use crate::trace::{
    Annotation, Collective, CommOp, EventCounts, Launch, MetaSource, NcclKernel, Problem,
    ProfilerStep, MAX_ANNOTATIONS,
};
use rustc_hash::{FxHashMap, FxHashSet};
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::sync::Arc;

/// The top-level members of one event, raw (strings with their quotes).
#[derive(Default)]
pub(crate) struct Event<'a> {
    pub ph: Option<&'a [u8]>,
    pub cat: Option<&'a [u8]>,
    pub name: Option<&'a [u8]>,
    pub pid: Option<&'a [u8]>,
    pub tid: Option<&'a [u8]>,
    pub ts: Option<&'a [u8]>,
    pub dur: Option<&'a [u8]>,
    pub args: Option<&'a [u8]>,
}

impl<'a> Event<'a> {
    /// Fills the member `key` (raw key bytes) with `value`, if it is one kept.
    #[inline]
    pub fn set(&mut self, key: &[u8], value: &'a [u8]) {
        match key {
            b"ph" => self.ph = Some(value),
            b"cat" => self.cat = Some(value),
            b"name" => self.name = Some(value),
            b"pid" => self.pid = Some(value),
            b"tid" => self.tid = Some(value),
            b"ts" => self.ts = Some(value),
            b"dur" => self.dur = Some(value),
            b"args" => self.args = Some(value),
            _ => {}
        }
    }
}

/// A string value's bytes without its quotes (escapes left as written).
#[inline]
fn inner(raw: &[u8]) -> &[u8] {
    raw.strip_prefix(b"\"")
        .and_then(|r| r.strip_suffix(b"\""))
        .unwrap_or(raw)
}

/// Whether a kernel name is NCCL's (the contract's rule: it contains `nccl`, any case).
fn is_nccl(name: &[u8]) -> bool {
    name.windows(4).any(|w| w.eq_ignore_ascii_case(b"nccl"))
}

/// Everything kept so far.
#[derive(Default)]
pub(crate) struct Collector {
    pub kernels: Vec<NcclKernel>,
    /// Launch calls kept, by correlation id.
    pub launches: FxHashMap<u64, Launch>,
    /// Correlation ids of the NCCL kernels seen.
    wanted: FxHashSet<u64>,
    /// Communication ranges seen, by (pid, tid, start): end (for the launch filter).
    ranges: BTreeMap<(u32, u32, i64), i64>,
    pub comm_ops: Vec<CommOp>,
    pub steps: Vec<ProfilerStep>,
    pub annotations: Vec<Annotation>,
    /// `record_function` ranges past [`MAX_ANNOTATIONS`], counted.
    pub annotations_dropped: u64,
    pub counts: EventCounts,
    /// `process_name` metadata by pid.
    pub process_names: Vec<(u32, String)>,
    /// The pid of the first CPU event (operator or launch).
    pub cpu_pid: Option<u32>,
    /// Kernel names, each kept once.
    names: FxHashMap<Box<[u8]>, Arc<str>>,
    /// Texts and rank lists of the collectives, each kept once.
    shared: meta::Shared,
    /// The category of the last event and its index in the counts (most runs repeat one).
    last_cat: Option<(Vec<u8>, usize)>,
}

impl Collector {
    /// Takes one event; `at` is its offset in `buf` (for its line).
    pub fn event(&mut self, ev: &Event<'_>, lines: &mut Lines, buf: &[u8], at: usize) {
        self.counts.events += 1;
        let cat = ev.cat.map(inner);
        self.count_category(cat.unwrap_or(b"(none)"));
        match cat {
            Some(b"kernel") => self.kernel(ev, lines, buf, at),
            Some(b"cuda_runtime" | b"cuda_driver" | b"hip_runtime" | b"hip_driver") => {
                self.launch(ev)
            }
            Some(b"cpu_op" | b"user_annotation") => self.cpu_range(ev, lines, buf, at),
            None if ev.ph.map(inner) == Some(b"M") => self.metadata(ev),
            _ => {}
        }
    }

    /// Counts one event of category `cat`.
    fn count_category(&mut self, cat: &[u8]) {
        if let Some((last, i)) = &self.last_cat {
            if last.as_slice() == cat {
                self.counts.by_category[*i].1 += 1;
                return;
            }
        }
        let shown = String::from_utf8_lossy(cat).into_owned();
        let i = match self
            .counts
            .by_category
            .iter()
            .position(|(c, _)| *c == shown)
        {
            Some(i) => i,
            None if self.counts.by_category.len() < 256 => {
                self.counts.by_category.push((shown, 0));
                self.counts.by_category.len() - 1
            }
            // A trace with more categories than any writer makes: the rest counted together.
            None => match self
                .counts
                .by_category
                .iter()
                .position(|(c, _)| c == "(other)")
            {
                Some(i) => i,
                None => {
                    self.counts.by_category.push(("(other)".into(), 0));
                    self.counts.by_category.len() - 1
                }
            },
        };
        self.counts.by_category[i].1 += 1;
        self.last_cat = Some((cat.to_vec(), i));
    }

    /// Records an event that lacks something it needs.
    pub fn problem(&mut self, what: String, line: u64) {
        match self.counts.problems.iter_mut().find(|p| p.what == what) {
            Some(p) => p.count += 1,
            None => self.counts.problems.push(Problem {
                what,
                count: 1,
                first_line: line,
            }),
        }
    }

    fn field_problems(&mut self, of: &str, problems: &[FieldProblem], line: u64) {
        for (field, how) in problems {
            self.problem(format!("{of} with a {how} \"{field}\""), line);
        }
    }

    fn kernel(&mut self, ev: &Event<'_>, lines: &mut Lines, buf: &[u8], at: usize) {
        self.counts.kernels += 1;
        let name_raw = ev.name.map(inner).unwrap_or_default();
        // A name with escapes is NCCL's if its text is (`\n` + `ccl` is not).
        let nccl = if name_raw.contains(&b'\\') {
            ev.name
                .and_then(text)
                .is_some_and(|t| is_nccl(t.as_bytes()))
        } else {
            is_nccl(name_raw)
        };
        if !nccl {
            let dur = ev.dur.and_then(micros_to_ns).unwrap_or(0);
            self.counts.other_kernel_ns = self.counts.other_kernel_ns.saturating_add(dur.max(0));
            return;
        }
        self.counts.nccl_kernels += 1;
        let line = lines.at(buf, at);
        let (Some(start), Some(dur)) =
            (ev.ts.and_then(micros_to_ns), ev.dur.and_then(micros_to_ns))
        else {
            let which = if ev.ts.and_then(micros_to_ns).is_none() {
                "ts"
            } else {
                "dur"
            };
            let how = if ev.ts.is_none() || ev.dur.is_none() {
                "missing"
            } else {
                "mistyped"
            };
            self.problem(
                format!("an NCCL kernel with a {how} \"{which}\" (not loaded)"),
                line,
            );
            return;
        };
        let Some(args) = ev
            .args
            .and_then(|a| serde_json::from_slice::<Map<String, Value>>(a).ok())
        else {
            self.problem(
                "an NCCL kernel without readable \"args\" (not loaded)".into(),
                line,
            );
            return;
        };
        let int = |key: &str| args.get(key).and_then(Value::as_u64);
        let Some(correlation) = int("correlation") else {
            self.problem(
                "an NCCL kernel without a \"correlation\" (not loaded)".into(),
                line,
            );
            return;
        };
        let mut problems = Vec::new();
        let mut coll = meta::from_args(&args, &mut self.shared, &mut problems);
        if coll.op.is_none() {
            coll.source = None;
        }
        self.field_problems("an NCCL kernel", &problems, line);
        let triple = |key: &str| -> [u32; 3] {
            let mut t = [0; 3];
            if let Some(a) = args.get(key).and_then(Value::as_array) {
                for (slot, v) in t.iter_mut().zip(a) {
                    *slot = v.as_u64().and_then(|v| u32::try_from(v).ok()).unwrap_or(0);
                }
            }
            t
        };
        let small = |key: &str| int(key).and_then(|v| u32::try_from(v).ok());
        let name = self.intern(name_raw);
        self.wanted.insert(correlation);
        self.kernels.push(NcclKernel {
            name,
            start_ns: start,
            end_ns: start.saturating_add(dur.max(0)),
            device: small("device").unwrap_or(0),
            stream: small("stream").unwrap_or(0),
            correlation,
            external_id: int("External id"),
            grid: triple("grid"),
            block: triple("block"),
            registers_per_thread: small("registers per thread").unwrap_or(0),
            shared_memory: small("shared memory").unwrap_or(0),
            line,
            launch: None,
            coll,
        });
    }

    /// A kernel name, decoded once per distinct name.
    fn intern(&mut self, raw: &[u8]) -> Arc<str> {
        if let Some(n) = self.names.get(raw) {
            return Arc::clone(n);
        }
        let quoted = [&b"\""[..], raw, b"\""].concat();
        let name: Arc<str> = text(&quoted).map_or_else(|| "?".into(), |t| t.as_ref().into());
        self.names.insert(raw.into(), Arc::clone(&name));
        name
    }

    fn launch(&mut self, ev: &Event<'_>) {
        let pid = ev.pid.and_then(u32_of);
        if self.cpu_pid.is_none() {
            self.cpu_pid = pid;
        }
        let name = ev.name.map(inner).unwrap_or_default();
        if !name.windows(5).any(|w| w == b"aunch") {
            return;
        }
        self.counts.launches += 1;
        let (Some(pid), Some(tid), Some(start)) =
            (pid, ev.tid.and_then(u32_of), ev.ts.and_then(micros_to_ns))
        else {
            return;
        };
        let Some(correlation) = ev.args.and_then(|a| member_u64(a, b"correlation")) else {
            return;
        };
        let keep = self.wanted.contains(&correlation) || self.inside_range(pid, tid, start);
        if keep {
            self.launches.insert(
                correlation,
                Launch {
                    pid,
                    tid,
                    start_ns: start,
                },
            );
        }
    }

    /// Whether a communication range of thread (pid, tid) seen so far holds time `t`.
    fn inside_range(&self, pid: u32, tid: u32, t: i64) -> bool {
        // Ranges on one thread nest (c10d operator ⊃ record_param_comms ⊃ nccl:*) or follow each
        // other: the few latest starting before `t` are the only candidates.
        self.ranges
            .range((pid, tid, i64::MIN)..=(pid, tid, t))
            .rev()
            .take(8)
            .any(|(_, &end)| end >= t)
    }

    /// Keeps a `record_function` range (bad times and names are left to the step and
    /// communication readers to report, or are of no use to anyone).
    fn annotation(&mut self, ev: &Event<'_>) {
        let (Some(pid), Some(tid), Some(start), Some(dur), Some(name)) = (
            ev.pid.and_then(u32_of),
            ev.tid.and_then(u32_of),
            ev.ts.and_then(micros_to_ns),
            ev.dur.and_then(micros_to_ns),
            ev.name.and_then(text),
        ) else {
            return;
        };
        if self.annotations.len() >= MAX_ANNOTATIONS {
            self.annotations_dropped += 1;
            return;
        }
        self.annotations.push(Annotation {
            name: self.shared.text(&name),
            pid,
            tid,
            start_ns: start,
            end_ns: start.saturating_add(dur.max(0)),
        });
    }

    fn cpu_range(&mut self, ev: &Event<'_>, lines: &mut Lines, buf: &[u8], at: usize) {
        let pid = ev.pid.and_then(u32_of);
        if self.cpu_pid.is_none() && ev.cat.map(inner) == Some(b"cpu_op") {
            self.cpu_pid = pid;
        }
        let name = ev.name.map(inner).unwrap_or_default();
        let is_comm = name == b"record_param_comms" || name.starts_with(b"nccl:");
        let is_step = name.starts_with(b"ProfilerStep#");
        if !is_comm && ev.cat.map(inner) == Some(b"user_annotation") {
            self.annotation(ev);
        }
        if !is_comm && !is_step {
            return;
        }
        let line = lines.at(buf, at);
        let what = if is_comm {
            "a communication range"
        } else {
            "a profiler step"
        };
        let (Some(pid), Some(tid)) = (pid, ev.tid.and_then(u32_of)) else {
            self.problem(
                format!("{what} without a numeric \"pid\" and \"tid\""),
                line,
            );
            return;
        };
        let (Some(start), Some(dur)) =
            (ev.ts.and_then(micros_to_ns), ev.dur.and_then(micros_to_ns))
        else {
            self.problem(
                format!("{what} without a readable \"ts\" and \"dur\""),
                line,
            );
            return;
        };
        let end = start.saturating_add(dur.max(0));
        if is_step {
            let Some(step) = text(ev.name.unwrap_or_default())
                .and_then(|n| n.strip_prefix("ProfilerStep#")?.trim().parse().ok())
            else {
                self.problem("a profiler step whose name has no number".into(), line);
                return;
            };
            self.steps.push(ProfilerStep {
                step,
                start_ns: start,
                end_ns: end,
                pid,
                tid,
                line,
            });
            return;
        }
        let args = ev
            .args
            .and_then(|a| serde_json::from_slice::<Map<String, Value>>(a).ok())
            .unwrap_or_default();
        let name = text(ev.name.unwrap_or_default()).unwrap_or_default();
        let name = self.shared.text(&name);
        let mut problems = Vec::new();
        let mut coll = if &*name == "record_param_comms" {
            meta::from_args(&args, &mut self.shared, &mut problems)
        } else {
            Collective {
                op: meta::collective_op(&name),
                name: Some(Arc::clone(&name)),
                ..Collective::default()
            }
        };
        self.field_problems("a record_param_comms", &problems, line);
        if coll.in_nelems.is_none() {
            let (n, dtype) = meta::from_first_tensor(&args);
            coll.in_nelems = n;
            if coll.datatype.is_none() {
                coll.datatype = dtype.as_deref().and_then(meta::datatype);
                coll.dtype_name = dtype.map(|d| self.shared.text(&d));
            }
        }
        coll.source = coll.op.map(|_| MetaSource::CpuOp);
        self.ranges.insert((pid, tid, start), end);
        self.comm_ops.push(CommOp {
            name,
            pid,
            tid,
            start_ns: start,
            end_ns: end,
            external_id: args.get("External id").and_then(Value::as_u64),
            coll,
            line,
        });
    }

    fn metadata(&mut self, ev: &Event<'_>) {
        if ev.name.map(inner) != Some(b"process_name") {
            return;
        }
        let (Some(pid), Some(args)) = (ev.pid.and_then(u32_of), ev.args) else {
            return;
        };
        let mut name = None;
        let _ = scan::members(args, 0, |k, _, v| {
            if k == b"name" {
                name = text(v).map(|t| t.into_owned());
            }
        });
        if let Some(name) = name {
            if !self.process_names.iter().any(|(p, _)| *p == pid) {
                self.process_names.push((pid, name));
            }
        }
    }
}

/// The unsigned integer member `key` of the object `obj` (raw bytes), without building it.
fn member_u64(obj: &[u8], key: &[u8]) -> Option<u64> {
    if obj.first() != Some(&b'{') {
        return None;
    }
    let mut found = None;
    let _ = scan::members(obj, 0, |k, _, v| {
        if found.is_none() && k == key {
            found = unsigned(v);
        }
    });
    found
}
