//! Several aggregates (the per-node jobs of one run, or merged parts of it) into one.
//!
//! What a merge does beyond concatenating:
//! - **Communicators** with the same `0x<commId>` become one: members united, kernels and
//!   bandwidth histograms added, operation signatures combined ([`enrich::Signature::combine`]).
//!   Then the whole run is labelled again ([`enrich::infer_from_signatures`]): a node alone sees
//!   one member of a DP group and cannot tell it from anything else; the run can.
//! - **Clocks**: each input has its own time (a per-node job synchronises only its node). The
//!   members of a collective instance finish together, so the inputs' anchors (instance ends,
//!   [`crate::Anchor`]) give every input's offset and drift against the input holding the lowest
//!   rank ([`enrich::synchronise`], inputs in the role of ranks), composed into each rank's
//!   clock.
//! - **Ranks**: ranks from init lines are run-wide and must not clash (an error naming both
//!   files); ranks a job numbered itself are renumbered after them, with a note.
//!
//! Sections are copied unchanged (their times stay in their job's clock; the rank row carries
//! the map), so a merge streams: [`Merge::new`] needs only the inputs' overviews and anchors,
//! then takes each section once ([`Merge::add_section`], which decodes it for the activity strip)
//! in the order [`Merge::sections`] gives, and [`Merge::finish`] writes the tail and header. Its
//! memory is the overviews and one section, whatever the run's size.

use crate::file::{self, Anchor};
use crate::format::{Block, Error, Header, HEADER_LEN};
use crate::heat::{busy_intervals, strip, Axis, HEAT_BINS};
use crate::overview::{Clock, CommRow, Layout, Overview, RankRow, Source};
use enrich::{Communicators, GroupedBy, Hints, LogicalComm};
use std::collections::{BTreeMap, BTreeSet};

/// One aggregate to merge: its name (for errors), header, overview and anchors.
#[derive(Debug, Clone)]
pub struct Input {
    pub file: String,
    pub header: Header,
    pub overview: Overview,
    pub anchors: Vec<Anchor>,
    /// Its rank-to-rank matrix (`None` for a format 1 file: the merge then has none).
    pub matrix: Option<crate::matrix::Matrix>,
}

/// A merge in progress.
pub struct Merge {
    out: Overview,
    /// Per output rank row: its input and its section there.
    from: Vec<(usize, Block)>,
    inputs: Vec<String>,
    /// Sections taken so far, and the strips they gave.
    next: usize,
    strips: Vec<u8>,
    axis: Axis,
    anchors: Vec<Anchor>,
    matrix: Option<crate::matrix::Matrix>,
}

impl Merge {
    /// Plans the merge of `inputs` (at least one).
    pub fn new(inputs: Vec<Input>) -> Result<Merge, Error> {
        if inputs.is_empty() {
            return Err(Error::new("merge", "no aggregate to merge"));
        }
        // The readers check what they decode; inputs built by other means are checked here, so
        // nothing below indexes out of range.
        for input in &inputs {
            let sections_end = input
                .header
                .overview
                .offset
                .min(input.header.anchors.offset);
            input.overview.check(&input.file, sections_end)?;
            if input
                .anchors
                .iter()
                .any(|a| a.comm as usize >= input.overview.comms.len())
            {
                return Err(Error::new(
                    &input.file,
                    "a clock anchor names no communicator",
                ));
            }
        }
        let mut notes: Vec<String> = inputs
            .iter()
            .flat_map(|i| i.overview.notes.iter().cloned())
            .collect();
        check_processes(&inputs)?;
        let renumber = renumber(&inputs, &mut notes)?;

        let (mut comms, comm_map) = merged_comms(&inputs, &renumber);
        let layout = relabel(&inputs, &mut comms);
        let matrix = merged_matrix(&inputs, &renumber, &comm_map, comms.len(), &mut notes);
        // Clocks: every input's time against the input with the lowest rank.
        let clocks = input_clocks(&inputs, &renumber, &comm_map, &mut notes);

        // Rank rows, sources, anchors.
        let mut sources: Vec<Source> = Vec::new();
        let mut rows: Vec<(RankRow, usize, Block)> = Vec::new();
        let mut anchors: BTreeMap<(u32, u64), i64> = BTreeMap::new();
        for (i, input) in inputs.iter().enumerate() {
            let base = sources.len() as u32;
            sources.extend(input.overview.sources.iter().cloned());
            for r in &input.overview.ranks {
                let mut row = r.clone();
                row.global_rank = renumber[i]
                    .get(&r.global_rank)
                    .copied()
                    .unwrap_or(r.global_rank);
                row.source += base;
                row.clock = clocks[i].after(&r.clock);
                for c in &mut row.comms {
                    c.comm = comm_map[i][c.comm as usize];
                }
                rows.push((row, i, r.section));
            }
            for a in &input.anchors {
                let comm = comm_map[i][a.comm as usize];
                let c = &comms[comm as usize];
                if (c.global_ranks.len() as u64) < u64::from(c.size) {
                    anchors
                        .entry((comm, a.op_count))
                        .or_insert(clocks[i].apply(a.end_ns));
                }
            }
        }
        rows.sort_by_key(|(r, _, _)| r.global_rank);
        let mut at = HEADER_LEN as u64;
        let mut from = Vec::with_capacity(rows.len());
        let mut ranks = Vec::with_capacity(rows.len());
        for (mut row, input, block) in rows {
            row.section = Block {
                offset: at,
                ..block
            };
            at += block.len;
            from.push((input, block));
            ranks.push(row);
        }
        let with_kernels = || ranks.iter().filter(|r| r.kernels > 0);
        let axis = Axis::new(
            with_kernels()
                .map(|r| r.clock.apply(r.first_ns))
                .min()
                .unwrap_or(0),
            with_kernels()
                .map(|r| r.clock.apply(r.last_ns))
                .max()
                .unwrap_or(0),
            HEAT_BINS,
        );
        let out = Overview {
            producer: format!("ncclscope {}", env!("CARGO_PKG_VERSION")),
            sources,
            ranks,
            comms,
            layout,
            heat: Default::default(),
            notes,
        };
        Ok(Merge {
            strips: Vec::with_capacity(out.ranks.len() * axis.bins as usize),
            out,
            from,
            inputs: inputs.into_iter().map(|i| i.file).collect(),
            next: 0,
            axis,
            matrix,
            anchors: anchors
                .into_iter()
                .map(|((comm, op_count), end_ns)| Anchor {
                    comm,
                    op_count,
                    end_ns,
                })
                .collect(),
        })
    }

    /// Every section to pass to [`Merge::add_section`], in order: its input (as given to
    /// [`Merge::new`]) and where it lies there.
    pub fn sections(&self) -> Vec<(usize, Block)> {
        self.from.clone()
    }

    /// Takes the next section's bytes (read from its input as [`Merge::sections`] says); the
    /// caller writes them to the output unchanged, after the header's [`HEADER_LEN`] bytes.
    pub fn add_section(&mut self, bytes: &[u8]) -> Result<(), Error> {
        let Some(row) = self.out.ranks.get(self.next) else {
            return Err(Error::new("merge", "more sections than ranks"));
        };
        let (input, _) = self.from[self.next];
        let detail = file::read_rank(&self.inputs[input], row, bytes)?;
        self.strips
            .extend(strip(&busy_intervals(&detail.kernels), &self.axis));
        self.next += 1;
        Ok(())
    }

    /// The header (written first) and the tail (written after the sections).
    pub fn finish(mut self) -> Result<(Header, Vec<u8>), Error> {
        if self.next != self.out.ranks.len() {
            return Err(Error::new(
                "merge",
                format!("{} of {} sections read", self.next, self.out.ranks.len()),
            ));
        }
        self.out.heat = crate::overview::Heat {
            start_ns: self.axis.start_ns,
            end_ns: self.axis.end_ns,
            bins: self.axis.bins,
            busy: self.strips,
        };
        let sections_end = HEADER_LEN as u64 + self.from.iter().map(|f| f.1.len).sum::<u64>();
        Ok(file::tail(
            &self.out,
            &self.anchors,
            self.matrix.as_ref(),
            sections_end,
        ))
    }

    /// The merged overview so far (complete but for the activity strip until [`Merge::finish`]).
    pub fn overview(&self) -> &Overview {
        &self.out
    }
}

/// The inputs' matrices merged, or `None` (and a note) when one has none.
fn merged_matrix(
    inputs: &[Input],
    renumber: &[BTreeMap<u32, u32>],
    comm_map: &[Vec<u32>],
    comms: usize,
    notes: &mut Vec<String>,
) -> Option<crate::matrix::Matrix> {
    let each: Vec<_> = inputs.iter().map(|i| i.matrix.as_ref()).collect();
    let matrix = crate::matrix::merge(&each, renumber, comm_map, comms);
    if matrix.is_none() {
        notes.push(
            "the rank-to-rank matrix is absent: an input was written without one (an older ncclscope)"
                .into(),
        );
    }
    matrix
}

/// Merges whole files held in memory (tests, and the page when several aggregates are dropped
/// together, where they are small).
pub fn merge_files(files: &[(String, Vec<u8>)]) -> Result<Vec<u8>, Error> {
    let mut inputs = Vec::with_capacity(files.len());
    for (name, bytes) in files {
        let a = file::Aggregate::open(name, bytes)?;
        inputs.push(Input {
            anchors: a.anchors()?,
            matrix: a.matrix()?,
            file: name.clone(),
            header: a.header,
            overview: a.overview,
        });
    }
    let mut m = Merge::new(inputs)?;
    let mut body = Vec::new();
    for (i, b) in m.sections() {
        let bytes = &files[i].1[b.offset as usize..(b.offset + b.len) as usize];
        m.add_section(bytes)?;
        body.extend_from_slice(bytes);
    }
    let (header, tail) = m.finish()?;
    let mut out = Vec::with_capacity(HEADER_LEN + body.len() + tail.len());
    out.extend_from_slice(&header.encode());
    out.extend_from_slice(&body);
    out.extend_from_slice(&tail);
    Ok(out)
}

/// The same process in two inputs is the same node analysed twice: refused.
fn check_processes(inputs: &[Input]) -> Result<(), Error> {
    let mut seen: BTreeMap<(&str, u32), &str> = BTreeMap::new();
    for input in inputs {
        for r in &input.overview.ranks {
            if let Some(other) = seen.insert((&r.host, r.pid), &input.file) {
                return Err(Error::new(
                    &input.file,
                    format!(
                        "process {}:{} is also in {other}: the same node's files in two aggregates",
                        r.host, r.pid
                    ),
                ));
            }
        }
    }
    Ok(())
}

/// Per input, the ranks that change: ranks not from init lines, numbered after every rank that
/// is. Two inputs claiming one init-line rank is an error naming both.
fn renumber(inputs: &[Input], notes: &mut Vec<String>) -> Result<Vec<BTreeMap<u32, u32>>, Error> {
    let mut known: BTreeMap<u32, &str> = BTreeMap::new();
    for input in inputs {
        for r in input.overview.ranks.iter().filter(|r| r.rank_from_init) {
            if let Some(other) = known.insert(r.global_rank, &input.file) {
                return Err(Error::new(
                    &input.file,
                    format!(
                        "global rank {} is also in {other} (from init lines in both): aggregates of different runs?",
                        r.global_rank
                    ),
                ));
            }
        }
    }
    let mut next = known.keys().next_back().map_or(0, |r| r + 1);
    let mut out = Vec::with_capacity(inputs.len());
    let mut moved = 0usize;
    for input in inputs {
        let mut map = BTreeMap::new();
        for r in input.overview.ranks.iter().filter(|r| !r.rank_from_init) {
            if r.global_rank != next {
                moved += 1;
            }
            map.insert(r.global_rank, next);
            next += 1;
        }
        out.push(map);
    }
    if moved > 0 && inputs.len() > 1 {
        notes.push(format!(
            "{moved} processes had no init line giving their global rank: numbered after the known ranks"
        ));
    }
    Ok(out)
}

/// Adds `c` (another input's view of the same communicator) to `into`.
fn merge_comm(into: &mut CommRow, c: CommRow) {
    into.size = into.size.max(c.size);
    into.global_ranks.extend(c.global_ranks);
    into.global_ranks.sort_unstable();
    into.global_ranks.dedup();
    into.kernels = into.kernels.saturating_add(c.kernels);
    into.bus_bw.add(&c.bus_bw);
    if into.bottleneck.is_none() {
        into.bottleneck = c.bottleneck;
    }
    let sig = enrich::Signature::combine((&into.signature).into(), (&c.signature).into());
    into.signature = (&sig).into();
}

/// Labels every merged communicator from the combined signatures, as one analysis of the whole
/// run would; returns the layout.
fn relabel(inputs: &[Input], comms: &mut [CommRow]) -> Layout {
    let layouts: Vec<&Layout> = inputs.iter().map(|i| &i.overview.layout).collect();
    let world = layouts
        .iter()
        .map(|l| l.world_size)
        .chain(comms.iter().map(|c| c.size))
        .max()
        .unwrap_or(0);
    // The sizes the user gave, when every job was given the same.
    let given = layouts[0]
        .given
        .filter(|g| layouts.iter().all(|l| l.given == Some(*g)));
    let iterations = layouts.iter().filter_map(|l| l.iterations).max();
    let mut logical = Communicators::default();
    logical.world_size = world;
    logical.comms = comms
        .iter()
        .map(|c| LogicalComm {
            id: c.id.clone(),
            size: c.size,
            members: Vec::new(),
            global_ranks: c.global_ranks.clone(),
            split_parent: None,
            grouped_by: GroupedBy::Sequence { ambiguous: false },
            ranks_from_init: true,
        })
        .collect();
    let sigs = comms.iter().map(|c| (&c.signature).into()).collect();
    let hints = Hints {
        sizes: given.map(Into::into),
        iterations,
    };
    let inf = enrich::infer_from_signatures(&logical, sigs, &hints);
    for l in &inf.comms {
        if let Some(c) = comms.get_mut(l.comm) {
            c.parallelism = l.parallelism.name().to_string();
            c.confidence = l.confidence;
            c.evidence = l.evidence.clone();
        }
    }
    Layout {
        sizes: inf.sizes.map(Into::into),
        given,
        evidence: inf.evidence,
        confidence: inf.confidence,
        world_size: world,
        iterations,
    }
}

/// Each input's map from its time to the merged run's: inputs play the ranks of
/// [`enrich::synchronise`] (ordered by their lowest rank, so the reference holds the lowest),
/// their anchors its collective instances.
fn input_clocks(
    inputs: &[Input],
    renumber: &[BTreeMap<u32, u32>],
    comm_map: &[Vec<u32>],
    notes: &mut Vec<String>,
) -> Vec<Clock> {
    if inputs.len() < 2 {
        return vec![Clock::IDENTITY; inputs.len()];
    }
    let lowest = |i: usize| {
        inputs[i]
            .overview
            .ranks
            .iter()
            .map(|r| {
                renumber[i]
                    .get(&r.global_rank)
                    .copied()
                    .unwrap_or(r.global_rank)
            })
            .min()
            .unwrap_or(u32::MAX)
    };
    let mut order: Vec<usize> = (0..inputs.len()).collect();
    order.sort_by_key(|&i| (lowest(i), i));
    let mut instances: BTreeMap<(u32, u64), Vec<(u32, i64)>> = BTreeMap::new();
    for (id, &i) in order.iter().enumerate() {
        let mut seen: BTreeSet<(u32, u64)> = BTreeSet::new();
        for a in &inputs[i].anchors {
            let key = (comm_map[i][a.comm as usize], a.op_count);
            if seen.insert(key) {
                instances
                    .entry(key)
                    .or_default()
                    .push((id as u32, a.end_ns));
            }
        }
    }
    let observed: Vec<Vec<(u32, i64)>> = instances.into_values().filter(|m| m.len() >= 2).collect();
    let sync = enrich::synchronise(&observed, None);
    let mut out = vec![Clock::IDENTITY; inputs.len()];
    let mut alone = Vec::new();
    for (id, &i) in order.iter().enumerate() {
        let id = id as u32;
        let clock = Clock::of_sync(&sync, id);
        // A fit that makes a clock run 1 % off (anchors of another run, or garbage) is no fit.
        let tied = !observed.is_empty()
            && (id == sync.reference_rank || sync.ranks.contains_key(&id))
            && clock.plausible();
        if tied {
            out[i] = clock;
        } else {
            alone.push(inputs[i].file.as_str());
        }
    }
    if !alone.is_empty() {
        notes.push(format!(
            "no collective ties the clock of {} to the others: its times are its own",
            alone.join(", ")
        ));
    }
    out
}

/// The communicators of all `inputs`: one per commId across inputs (their ranks renumbered, the
/// others merged into the first seen); the rest stay their input's own. Also, per input, where
/// each of its communicators went.
fn merged_comms(
    inputs: &[Input],
    renumber: &[BTreeMap<u32, u32>],
) -> (Vec<CommRow>, Vec<Vec<u32>>) {
    let mut comms: Vec<CommRow> = Vec::new();
    let mut by_id: BTreeMap<String, usize> = BTreeMap::new();
    let mut comm_map: Vec<Vec<u32>> = Vec::with_capacity(inputs.len());
    for (i, input) in inputs.iter().enumerate() {
        let mut map = Vec::with_capacity(input.overview.comms.len());
        for c in &input.overview.comms {
            let mut c = c.clone();
            c.global_ranks = c
                .global_ranks
                .iter()
                .map(|r| renumber[i].get(r).copied().unwrap_or(*r))
                .collect();
            if !c.id.starts_with("0x") {
                c.id = format!("{}@{}", c.id, input.file);
            }
            let at = match by_id.get(&c.id) {
                Some(&at) => {
                    merge_comm(&mut comms[at], c);
                    at
                }
                None => {
                    by_id.insert(c.id.clone(), comms.len());
                    c.global_ranks.sort_unstable();
                    c.global_ranks.dedup();
                    comms.push(c);
                    comms.len() - 1
                }
            };
            map.push(at as u32);
        }
        comm_map.push(map);
    }
    (comms, comm_map)
}
