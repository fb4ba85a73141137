//! Reading a block of lines on several threads while the calling thread applies them in order.
//!
//! The block is cut at newlines into windows. Helper threads (from rayon's pool, so no thread is
//! started per chunk) claim windows in order and read them ([`read_line_into`] holds no parser
//! state); the calling thread applies window 0, 1, 2, ... in order, and whenever the next window
//! is not read yet it claims and reads one itself instead of waiting. So every core works, the
//! applying thread included, and nothing depends on how fast the helpers are or whether they
//! start at all: with none, the calling thread reads everything, as on one thread. Helpers stay
//! at most [`AHEAD`] windows in front of the applied one, which bounds the memory of reads
//! waiting to be applied.

use crate::read::{lines_of, read_line_into, LineCache, Read};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex, PoisonError};

/// How many windows past the one being applied may be read.
const AHEAD: usize = 6;
/// How many reads ahead of the one being applied its text is prefetched.
const PREFETCH: usize = 8;

/// What the threads share: which windows are read, and how far applying got.
struct Shared<'a> {
    /// The next window nobody has claimed.
    next: AtomicUsize,
    state: Mutex<State<'a>>,
    changed: Condvar,
}

struct State<'a> {
    /// Reads of windows claimed by a helper, until applied.
    done: Vec<Option<Vec<Read<'a>>>>,
    /// Windows applied so far.
    applied: usize,
    /// Emptied read buffers, for reuse.
    spare: Vec<Vec<Read<'a>>>,
}

impl<'a> Shared<'a> {
    fn lock(&self) -> std::sync::MutexGuard<'_, State<'a>> {
        // A panicking reader would leave the lock poisoned; its data is still consistent.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Claims the next window, if any is left.
    fn claim(&self, windows: usize) -> Option<usize> {
        let i = self.next.fetch_add(1, Ordering::AcqRel);
        (i < windows).then_some(i)
    }

    fn buffer(&self) -> Vec<Read<'a>> {
        self.lock().spare.pop().unwrap_or_default()
    }
}

fn read_window<'a>(w: &'a [u8], cache: &mut LineCache, mut buf: Vec<Read<'a>>) -> Vec<Read<'a>> {
    for l in lines_of(w) {
        // Read in place in the buffer (see `FastHeads::read_into`).
        buf.push(Read::Blank);
        if let Some(slot) = buf.last_mut() {
            read_line_into(l, cache, slot);
        }
    }
    buf
}

/// Reads every window of `windows` and hands each line's read to `apply`, in order, on the
/// calling thread; `helpers` more threads read ahead where threads exist.
pub(crate) fn read_and_apply<'a>(
    windows: &[&'a [u8]],
    helpers: usize,
    cache: &mut LineCache,
    mut apply: impl FnMut(&mut Read<'a>),
) {
    let n = windows.len();
    let shared = Shared {
        next: AtomicUsize::new(0),
        state: Mutex::new(State {
            done: (0..n).map(|_| None).collect(),
            applied: 0,
            spare: Vec::new(),
        }),
        changed: Condvar::new(),
    };
    let applier = |cache: &mut LineCache| {
        for i in 0..n {
            let mut reads = loop {
                if let Some(r) = shared.lock().done.get_mut(i).and_then(Option::take) {
                    break r;
                }
                // Read a window here rather than wait, unless that would run too far ahead.
                let claimed = if shared.next.load(Ordering::Acquire) <= i + AHEAD {
                    shared.claim(n)
                } else {
                    None
                };
                match claimed {
                    // Nobody is on window `i` yet: it is this thread's.
                    Some(j) if j == i => {
                        break read_window(windows[i], cache, shared.buffer());
                    }
                    Some(j) => {
                        let r = read_window(windows[j], cache, shared.buffer());
                        if let Some(slot) = shared.lock().done.get_mut(j) {
                            *slot = Some(r);
                        }
                    }
                    // A helper is reading `i`.
                    None => {
                        let mut st = shared.lock();
                        while st.done.get(i).is_some_and(Option::is_none) {
                            st = shared
                                .changed
                                .wait(st)
                                .unwrap_or_else(PoisonError::into_inner);
                        }
                    }
                }
            };
            for k in 0..reads.len() {
                // The text a read points into was read on another core: what applying touches
                // of it (the writer's host) is asked for a few reads early, so that it is in
                // this core's cache when it is compared.
                if let Some(ahead) = reads.get(k + PREFETCH) {
                    ahead.prefetch_host();
                }
                if let Some(r) = reads.get_mut(k) {
                    apply(r);
                }
            }
            reads.clear();
            let mut st = shared.lock();
            st.applied = i + 1;
            st.spare.push(reads);
            drop(st);
            shared.changed.notify_all();
        }
    };
    run(helpers, &shared, windows, cache, applier);
}

/// A helper: claims windows in order, reads them, and hands the reads over.
#[cfg(not(target_arch = "wasm32"))]
fn helper<'a>(shared: &Shared<'a>, windows: &[&'a [u8]], mut cache: LineCache) {
    while let Some(j) = shared.claim(windows.len()) {
        {
            let mut st = shared.lock();
            while j > st.applied + AHEAD {
                st = shared
                    .changed
                    .wait(st)
                    .unwrap_or_else(PoisonError::into_inner);
            }
        }
        let r = read_window(windows[j], &mut cache, shared.buffer());
        if let Some(slot) = shared.lock().done.get_mut(j) {
            *slot = Some(r);
        }
        shared.changed.notify_all();
    }
}

#[cfg(not(target_arch = "wasm32"))]
fn run<'a>(
    helpers: usize,
    shared: &Shared<'a>,
    windows: &[&'a [u8]],
    cache: &mut LineCache,
    applier: impl FnOnce(&mut LineCache),
) {
    rayon::in_place_scope(|s| {
        for _ in 0..helpers {
            let own = cache.like();
            s.spawn(move |_| helper(shared, windows, own));
        }
        applier(cache);
    });
}

/// No threads in wasm: the calling thread reads every window itself.
#[cfg(target_arch = "wasm32")]
fn run<'a>(
    _helpers: usize,
    _shared: &Shared<'a>,
    _windows: &[&'a [u8]],
    cache: &mut LineCache,
    applier: impl FnOnce(&mut LineCache),
) {
    applier(cache);
}
