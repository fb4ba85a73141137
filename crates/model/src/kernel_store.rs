//! [`KernelStore`]: an export's NCCL kernels, stored compactly.
//!
//! An export holds millions of NCCL kernels from a few launch configurations: one process,
//! device and stream launch the same few kernels (name, grid, block, shared memory, registers)
//! from the same thread over and over. So each distinct configuration is stored once
//! ([`KernelSite`]) and each kernel as a 24-byte row of what changes (start, duration, launch
//! time, correlation id), instead of the 120 bytes of a [`Kernel`]. Reading gives whole [`Kernel`]
//! values; `Debug` and equality are those of the list of kernels.

use crate::nsys::Kernel;
use crate::rows::{record_store_traits, RowIter};
use std::collections::HashMap;
use std::sync::Arc;

/// What a kernel launch repeats from launch to launch.
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct KernelSite {
    pid: u32,
    device: u32,
    stream: u32,
    name: Arc<str>,
    grid: [u32; 3],
    block: [u32; 3],
    static_shared_bytes: u32,
    dynamic_shared_bytes: u32,
    registers_per_thread: u32,
    local_memory_total: u64,
    launch_tid: Option<u32>,
}

/// What changes from launch to launch, in 24 bytes: the start, the duration and how long before
/// it the launch was, in 32 bits each (4.3 s). A kernel whose times do not fit (a hang, a launch
/// after its start) keeps its end and launch whole in [`KernelStore::wide`], the row holding its
/// index there.
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[derive(Debug, Clone, Copy, PartialEq)]
struct KernelRow {
    start_ns: i64,
    /// `end − start`, or the index of its times in [`KernelStore::wide`] when [`WIDE`].
    duration_ns: u32,
    /// `start − launch`, when it has a launch and is not [`WIDE`].
    launch_before_ns: u32,
    correlation_id: u32,
    /// The site, and the flags [`HAS_LAUNCH`] and [`WIDE`] in its top bits.
    site: u32,
}

const _: () = assert!(std::mem::size_of::<KernelRow>() == 24);

/// The kernel has a launch (its CPU-side call's time).
const HAS_LAUNCH: u32 = 1 << 31;
/// The kernel's times are in [`KernelStore::wide`].
const WIDE: u32 = 1 << 30;
/// The site's bits of [`KernelRow::site`].
const SITE: u32 = WIDE - 1;

impl KernelRow {
    fn site(&self) -> usize {
        (self.site & SITE) as usize
    }
}

/// A kernel's end and launch, whole (see [`KernelRow`]).
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[derive(Debug, Clone, Copy, PartialEq)]
struct WideTimes {
    end_ns: i64,
    launch_ns: i64,
}

const RECENT_SITES: usize = 16;

/// NCCL kernels in order, stored compactly (see the module comment).
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[derive(Clone, Default)]
pub struct KernelStore {
    sites: Vec<KernelSite>,
    rows: Vec<KernelRow>,
    /// The times of the kernels whose times do not fit their row ([`WIDE`]).
    wide: Vec<WideTimes>,
    /// Interning: derived from `sites`, rebuilt when missing.
    #[cfg_attr(feature = "serde", serde(skip))]
    site_ids: HashMap<KernelSite, u32>,
    #[cfg_attr(feature = "serde", serde(skip))]
    recent: [u32; RECENT_SITES],
}

impl KernelStore {
    pub fn new() -> Self {
        KernelStore::default()
    }

    pub fn len(&self) -> usize {
        self.rows.len()
    }

    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// Room for `n` more kernels; an error (nothing reserved) when the memory cannot hold them,
    /// so that a caller can read rows as they come instead of aborting on the allocation.
    pub fn try_reserve_exact(&mut self, n: usize) -> Result<(), std::collections::TryReserveError> {
        self.rows.try_reserve_exact(n)
    }

    /// The `i`-th kernel, whole.
    pub fn get(&self, i: usize) -> Option<Kernel> {
        let r = self.rows.get(i)?;
        let s = self.sites.get(r.site())?;
        let t = self.times(r);
        Some(Kernel {
            pid: s.pid,
            start_ns: r.start_ns,
            end_ns: t.end_ns,
            device: s.device,
            stream: s.stream,
            correlation_id: r.correlation_id,
            name: s.name.clone(),
            grid: s.grid,
            block: s.block,
            static_shared_bytes: s.static_shared_bytes,
            dynamic_shared_bytes: s.dynamic_shared_bytes,
            registers_per_thread: s.registers_per_thread,
            local_memory_total: s.local_memory_total,
            launch_ns: (r.site & HAS_LAUNCH != 0).then_some(t.launch_ns),
            launch_tid: s.launch_tid,
        })
    }

    pub fn first(&self) -> Option<Kernel> {
        self.get(0)
    }

    pub fn last(&self) -> Option<Kernel> {
        self.len().checked_sub(1).and_then(|i| self.get(i))
    }

    /// Every kernel in order, as whole values.
    pub fn iter(&self) -> Iter<'_> {
        RowIter::new(self, self.len())
    }

    // Single fields, without building the whole record (hot loops over millions of kernels).

    pub fn pid(&self, i: usize) -> Option<u32> {
        self.site(i).map(|s| s.pid)
    }

    pub fn start_ns(&self, i: usize) -> Option<i64> {
        self.rows.get(i).map(|r| r.start_ns)
    }

    pub fn end_ns(&self, i: usize) -> Option<i64> {
        self.rows.get(i).map(|r| self.times(r).end_ns)
    }

    /// A row's end and launch (the launch meaningless without [`HAS_LAUNCH`]).
    fn times(&self, r: &KernelRow) -> WideTimes {
        if r.site & WIDE != 0 {
            if let Some(t) = self.wide.get(r.duration_ns as usize) {
                return *t;
            }
        }
        WideTimes {
            end_ns: r.start_ns + i64::from(r.duration_ns),
            launch_ns: r.start_ns - i64::from(r.launch_before_ns),
        }
    }

    /// A row of `site` for these times: in the row where they fit, else in [`Self::wide`].
    fn row(
        &mut self,
        site: u32,
        start_ns: i64,
        end_ns: i64,
        launch_ns: Option<i64>,
        correlation_id: u32,
    ) -> KernelRow {
        let fit = |d: Option<i64>| d.and_then(|d| u32::try_from(d).ok());
        let duration = fit(end_ns.checked_sub(start_ns));
        let before = match launch_ns {
            Some(l) => fit(start_ns.checked_sub(l)),
            None => Some(0),
        };
        let launch = if launch_ns.is_some() { HAS_LAUNCH } else { 0 };
        match (duration, before) {
            (Some(d), Some(b)) => KernelRow {
                start_ns,
                duration_ns: d,
                launch_before_ns: b,
                correlation_id,
                site: site | launch,
            },
            _ => {
                self.wide.push(WideTimes {
                    end_ns,
                    launch_ns: launch_ns.unwrap_or(0),
                });
                KernelRow {
                    start_ns,
                    duration_ns: (self.wide.len() - 1) as u32,
                    launch_before_ns: 0,
                    correlation_id,
                    site: site | launch | WIDE,
                }
            }
        }
    }

    pub fn device(&self, i: usize) -> Option<u32> {
        self.site(i).map(|s| s.device)
    }

    pub fn name(&self, i: usize) -> Option<&Arc<str>> {
        self.site(i).map(|s| &s.name)
    }

    fn site(&self, i: usize) -> Option<&KernelSite> {
        self.sites.get(self.rows.get(i)?.site())
    }

    /// Appends one kernel.
    pub fn push(&mut self, k: &Kernel) {
        let site = self.intern(KernelSite {
            pid: k.pid,
            device: k.device,
            stream: k.stream,
            name: k.name.clone(),
            grid: k.grid,
            block: k.block,
            static_shared_bytes: k.static_shared_bytes,
            dynamic_shared_bytes: k.dynamic_shared_bytes,
            registers_per_thread: k.registers_per_thread,
            local_memory_total: k.local_memory_total,
            launch_tid: k.launch_tid,
        });
        let row = self.row(site, k.start_ns, k.end_ns, k.launch_ns, k.correlation_id);
        self.rows.push(row);
    }

    fn intern(&mut self, site: KernelSite) -> u32 {
        // One process's stream launches a handful of configurations in turn: remember the
        // recent ones by a cheap hash, and hash the whole site (its name's text) on a miss.
        let slot = ((u64::from(site.pid) << 32
            ^ u64::from(site.stream) << 8
            ^ u64::from(site.device)
            ^ (Arc::as_ptr(&site.name) as *const u8 as u64))
            .wrapping_mul(0x9e37_79b9_7f4a_7c15)
            >> 60) as usize
            % RECENT_SITES;
        let cached = self.recent[slot] as usize;
        if self.sites.get(cached) == Some(&site) {
            return cached as u32;
        }
        if self.site_ids.len() != self.sites.len() {
            self.site_ids = (0..)
                .zip(&self.sites)
                .map(|(i, s)| (s.clone(), i))
                .collect();
        }
        let id = match self.site_ids.get(&site) {
            Some(&id) => id,
            None => {
                // The row's top bits are flags: 2^30 distinct launch configurations is more
                // than an export holds (they are counted in thousands at most).
                let id = (self.sites.len() as u32).min(SITE);
                self.site_ids.insert(site.clone(), id);
                self.sites.push(site);
                id
            }
        };
        self.recent[slot] = id;
        id
    }

    /// Sets the `i`-th kernel's launch (its CPU-side call's time and thread).
    pub fn set_launch(&mut self, i: usize, launch_ns: Option<i64>, launch_tid: Option<u32>) {
        let Some(mut site) = self.site(i).cloned() else {
            return;
        };
        site.launch_tid = launch_tid;
        let id = self.intern(site);
        let Some(&r) = self.rows.get(i) else {
            return;
        };
        let end = self.times(&r).end_ns;
        let row = self.row(id, r.start_ns, end, launch_ns, r.correlation_id);
        if let Some(r) = self.rows.get_mut(i) {
            *r = row;
        }
    }

    /// Reorders the kernels so that the `i`-th becomes the old `perm[i]`-th (`perm` is a
    /// permutation of `0..len`), each moved once, in place.
    pub fn permute(&mut self, perm: &[u32]) {
        let v = &mut self.rows;
        let mut done = vec![false; v.len()];
        for first in 0..v.len() {
            let mut cur = first;
            while !done[cur] {
                done[cur] = true;
                let next = perm.get(cur).map_or(cur, |&p| p as usize);
                if next == first || next >= v.len() {
                    break;
                }
                v.swap(cur, next);
                cur = next;
            }
        }
    }

    /// Keeps the kernels whose `keep` flag is set, in order.
    pub fn retain_flagged(&mut self, keep: &[bool]) {
        let mut i = 0;
        self.rows.retain(|_| {
            let k = keep.get(i).copied().unwrap_or(true);
            i += 1;
            k
        });
    }

    pub fn stream(&self, i: usize) -> Option<u32> {
        self.site(i).map(|s| s.stream)
    }

    pub fn correlation_id(&self, i: usize) -> Option<u32> {
        self.rows.get(i).map(|r| r.correlation_id)
    }

    /// Bytes held per kernel (rows, and the configurations shared out).
    pub fn bytes_per_kernel(&self) -> f64 {
        let sites: usize = self
            .sites
            .iter()
            .map(|s| std::mem::size_of::<KernelSite>() + s.name.len())
            .sum();
        let total = self.rows.capacity() * std::mem::size_of::<KernelRow>()
            + self.wide.capacity() * std::mem::size_of::<WideTimes>()
            + sites;
        total as f64 / self.len().max(1) as f64
    }
}

record_store_traits!(KernelStore, Kernel);

/// The kernels of a [`KernelStore`], built one at a time.
pub type Iter<'a> = RowIter<'a, KernelStore>;

#[cfg(test)]
mod tests {
    use super::*;

    fn kernel(i: u64, names: &[Arc<str>]) -> Kernel {
        Kernel {
            pid: 100 + (i % 3) as u32,
            start_ns: i as i64 * 1000 - 7,
            end_ns: i as i64 * 1000 + 500,
            device: (i % 2) as u32,
            stream: 7 + (i % 4) as u32,
            correlation_id: i as u32 * 3,
            name: names[(i % names.len() as u64) as usize].clone(),
            grid: [(i % 5) as u32, 1, 1],
            block: [640, 1, 1],
            static_shared_bytes: (i % 7) as u32,
            dynamic_shared_bytes: 0,
            registers_per_thread: 96,
            local_memory_total: 1 << 20,
            launch_ns: (!i.is_multiple_of(4)).then_some(i as i64 * 1000 - 20_000),
            launch_tid: (!i.is_multiple_of(5)).then_some(4242 + (i % 2) as u32),
        }
    }

    /// Every field of every kernel comes back as pushed, in order; equality and `Debug` are
    /// those of the list; far fewer configurations than kernels are stored.
    #[test]
    fn round_trip() {
        let names: Vec<Arc<str>> = [
            "ncclDevKernel_AllReduce_Sum_f32_RING_LL",
            "ncclKernel_SendRecv",
        ]
        .iter()
        .map(|n| Arc::from(*n))
        .collect();
        let all: Vec<Kernel> = (0..5000).map(|i| kernel(i, &names)).collect();
        let store: KernelStore = all.iter().cloned().collect();
        assert_eq!(store.len(), all.len());
        assert!(store.iter().eq(all.iter().cloned()));
        assert!(store.iter().rev().eq(all.iter().rev().cloned()));
        for (i, k) in all.iter().enumerate() {
            assert_eq!(store.get(i).as_ref(), Some(k));
            assert_eq!(store.pid(i), Some(k.pid));
            assert_eq!(store.start_ns(i), Some(k.start_ns));
            assert_eq!(store.end_ns(i), Some(k.end_ns));
            assert_eq!(store.device(i), Some(k.device));
            assert_eq!(store.name(i), Some(&k.name));
        }
        assert_eq!(format!("{store:?}"), format!("{all:?}"));
        assert!(store.sites.len() < all.len() / 4, "{}", store.sites.len());
        // Equal names in other allocations are the same configuration.
        let copies: KernelStore = all
            .iter()
            .map(|k| Kernel {
                name: Arc::from(&*k.name),
                ..k.clone()
            })
            .collect();
        assert_eq!(copies, store);
        assert_eq!(copies.sites.len(), store.sites.len());
        let mut shorter = store.clone();
        shorter.rows.pop();
        assert_ne!(shorter, store);
    }

    /// Times past what a row holds (a kernel of more than 4.3 s, a launch after its start or
    /// long before it) come back whole, through a permutation and a filter too.
    #[test]
    fn wide_times_round_trip() {
        let names: Vec<Arc<str>> = vec![Arc::from("ncclDevKernel_AllReduce_Sum_f32_RING_LL")];
        let mut all: Vec<Kernel> = (0..200).map(|i| kernel(i, &names)).collect();
        for (i, k) in all.iter_mut().enumerate() {
            match i % 5 {
                0 => k.end_ns = k.start_ns + 10_000_000_000,
                1 => k.launch_ns = Some(k.start_ns + 5),
                2 => k.launch_ns = Some(k.start_ns - 9_000_000_000),
                3 => k.end_ns = k.start_ns - 1,
                _ => {}
            }
        }
        let mut store: KernelStore = all.iter().cloned().collect();
        assert!(store.iter().eq(all.iter().cloned()));
        for (i, k) in all.iter().enumerate() {
            assert_eq!(store.end_ns(i), Some(k.end_ns), "{i}");
        }
        let perm: Vec<u32> = (0..200u32).map(|i| (i * 13 + 5) % 200).collect();
        store.permute(&perm);
        let all: Vec<Kernel> = perm.iter().map(|&p| all[p as usize].clone()).collect();
        assert!(store.iter().eq(all.iter().cloned()));
        let keep: Vec<bool> = (0..200).map(|i| i % 3 != 1).collect();
        store.retain_flagged(&keep);
        let kept = all
            .into_iter()
            .zip(&keep)
            .filter(|(_, k)| **k)
            .map(|(x, _)| x);
        assert!(store.iter().eq(kept));
    }

    /// Launches set in place, a permutation and a filter act as on a vector of kernels.
    #[test]
    fn edits_in_place() {
        let names: Vec<Arc<str>> = vec![Arc::from("ncclDevKernel_Generic")];
        let mut all: Vec<Kernel> = (0..300).map(|i| kernel(i, &names)).collect();
        let mut store: KernelStore = all.iter().cloned().collect();
        for i in (0..300).step_by(7) {
            let (ns, tid) = ((i % 2 == 0).then_some(i as i64), (i % 3 == 0).then_some(9));
            store.set_launch(i, ns, tid);
            all[i].launch_ns = ns;
            all[i].launch_tid = tid;
        }
        let perm: Vec<u32> = (0..300u32).map(|i| (i * 7 + 3) % 300).collect();
        store.permute(&perm);
        let all: Vec<Kernel> = perm.iter().map(|&p| all[p as usize].clone()).collect();
        assert!(store.iter().eq(all.iter().cloned()));
        let keep: Vec<bool> = (0..300).map(|i| i % 5 != 1).collect();
        store.retain_flagged(&keep);
        let kept: Vec<Kernel> = all
            .into_iter()
            .zip(&keep)
            .filter(|(_, k)| **k)
            .map(|(x, _)| x)
            .collect();
        assert!(store.iter().eq(kept.into_iter()));
    }
}
