//! Work drawn in animation frames of its own. [`defer`] queues a piece of work; the queue runs
//! one piece per frame, in order, after the frame that asked for it, so that a result of many
//! ranks arrives as a series of short frames (its tables, then each panel, each large chart, a
//! few topology diagrams at a time) instead of one long task. [`idle`] waits until the queue
//! is empty; [`deferred`] is a view drawn that way; [`next_task`] waits for a later task.

use leptos::prelude::*;
use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use wasm_bindgen::JsCast;

thread_local! {
    static QUEUE: RefCell<VecDeque<Box<dyn FnOnce()>>> = const { RefCell::new(VecDeque::new()) };
    static RUNNING: Cell<bool> = const { Cell::new(false) };
}

/// Runs `work` in a later animation frame, after every piece queued before it (one a frame).
pub fn defer(work: impl FnOnce() + 'static) {
    QUEUE.with(|q| q.borrow_mut().push_back(Box::new(work)));
    if !RUNNING.with(|r| r.replace(true)) {
        wasm_bindgen_futures::spawn_local(run());
    }
}

async fn run() {
    loop {
        next_frame().await;
        let Some(work) = QUEUE.with(|q| q.borrow_mut().pop_front()) else {
            break;
        };
        work();
    }
    RUNNING.with(|r| r.set(false));
}

/// Resolves once every piece of work queued so far (and any it queued) has run.
pub async fn idle() {
    while RUNNING.with(Cell::get) {
        next_frame().await;
    }
}

#[wasm_bindgen::prelude::wasm_bindgen]
extern "C" {
    /// The global `setTimeout`, the page's or a worker's.
    #[wasm_bindgen(js_name = setTimeout)]
    fn set_timeout(callback: &js_sys::Function);
}

/// Resolves in a later task (a zero-delay timer), after what already waits: the page can paint
/// and handle input meanwhile, a worker its messages. In the page and in workers.
pub async fn next_task() {
    let promise = js_sys::Promise::new(&mut |resolve, _| set_timeout(&resolve));
    let _ = wasm_bindgen_futures::JsFuture::from(promise).await;
}

/// Resolves at the next animation frame (or after half a second where frames are paused, as in
/// a hidden tab).
pub async fn next_frame() {
    let promise = js_sys::Promise::new(&mut |resolve, _| {
        let global: web_sys::Window = js_sys::global().unchecked_into();
        let _ = global.request_animation_frame(&resolve);
        let _ = global.set_timeout_with_callback_and_timeout_and_arguments_0(&resolve, 500);
    });
    let _ = wasm_bindgen_futures::JsFuture::from(promise).await;
}

/// A view drawn in a frame of its own ([`defer`]): `placeholder` until then.
pub fn deferred<V, P>(
    make: impl Fn() -> V + Send + Sync + 'static,
    placeholder: impl Fn() -> P + Send + Sync + 'static,
) -> impl IntoView
where
    V: IntoView + 'static,
    P: IntoView + 'static,
{
    let ready = RwSignal::new(false);
    // The view may be gone by then (a newer result): its signal then is too.
    defer(move || {
        let _ = ready.try_set(true);
    });
    move || {
        if ready.get() {
            make().into_any()
        } else {
            placeholder().into_any()
        }
    }
}
