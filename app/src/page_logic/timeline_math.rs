//! The timeline's view arithmetic, kept apart from the canvas so it is tested natively: zoom
//! around a point, pan, WASD motion over time, and the time ruler's ticks.

/// The narrowest window a zoom goes to, in ns (a kernel launch is a few µs).
pub const MIN_SPAN_NS: f64 = 1000.0;

/// Held W/S zoom by e^ZOOM_RATE per second (about 7× a second), as smooth as Perfetto's.
pub const ZOOM_RATE: f64 = 2.0;
/// Held A/D pan by this many windows per second.
pub const PAN_RATE: f64 = 1.2;
/// A key press moves at once by this much time's worth of motion, so a tap does something even
/// when released before the next animation frame.
pub const FIRST_STEP_S: f64 = 1.0 / 15.0;

/// Window `(start, end)` scaled by `factor` around the point at fraction `at` (0..=1) of it,
/// which stays where it is on screen.
pub fn zoom(w: (f64, f64), at: f64, factor: f64) -> (f64, f64) {
    let span = (w.1 - w.0).max(1.0);
    let at = at.clamp(0.0, 1.0);
    let pivot = w.0 + span * at;
    let new = (span * factor).max(MIN_SPAN_NS);
    let start = pivot - new * at;
    (start, start + new)
}

/// Window `w` moved by `windows` of its own width (negative: left, to earlier times).
pub fn pan(w: (f64, f64), windows: f64) -> (f64, f64) {
    let d = (w.1 - w.0) * windows;
    (w.0 + d, w.1 + d)
}

/// Window `w` moved (not resized) so that it stays over the run `run`: a window narrower than
/// the run stays inside it, a wider one keeps the whole run in view. Pans (keys, drags, the
/// minimap) end at the run's ends instead of running into empty time.
pub fn keep_within(w: (f64, f64), run: (f64, f64)) -> (f64, f64) {
    let width = w.1 - w.0;
    if run.1 <= run.0 || width.is_nan() || width <= 0.0 {
        return w;
    }
    let start = if width <= run.1 - run.0 {
        w.0.clamp(run.0, run.1 - width)
    } else {
        w.0.clamp(run.1 - width, run.0)
    };
    (start, start + width)
}

/// What a navigation key does: `w`/`s` (and the up/down arrows) zoom in/out, `a`/`d` (and
/// left/right) pan; `None` for any other key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Motion {
    ZoomIn,
    ZoomOut,
    Left,
    Right,
}

impl Motion {
    /// `key` as `KeyboardEvent.key` spells it.
    pub fn of_key(key: &str) -> Option<Motion> {
        match key {
            "w" | "W" | "ArrowUp" => Some(Motion::ZoomIn),
            "s" | "S" | "ArrowDown" => Some(Motion::ZoomOut),
            "a" | "A" | "ArrowLeft" => Some(Motion::Left),
            "d" | "D" | "ArrowRight" => Some(Motion::Right),
            _ => None,
        }
    }

    /// Window `w` after `dt` seconds of this motion, zooming around fraction `at` of it.
    pub fn apply(self, w: (f64, f64), at: f64, dt: f64) -> (f64, f64) {
        match self {
            Motion::ZoomIn => zoom(w, at, (-ZOOM_RATE * dt).exp()),
            Motion::ZoomOut => zoom(w, at, (ZOOM_RATE * dt).exp()),
            Motion::Left => pan(w, -PAN_RATE * dt),
            Motion::Right => pan(w, PAN_RATE * dt),
        }
    }
}

/// The ruler's ticks over window `(start, end)` (absolute ns): a round step (1, 2 or 5 × 10^k
/// ns) giving at most `max` ticks, each with its label relative to `origin` (the run's start).
/// One unit for the whole ruler (that of the farthest time shown), with as many decimals as the
/// step needs, so neighbouring labels always differ however deep the zoom.
pub fn ticks(w: (f64, f64), origin: f64, max: usize) -> Vec<(f64, String)> {
    let span = (w.1 - w.0).max(1.0);
    let raw = span / max.max(1) as f64;
    let mag = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * mag)
        .find(|s| *s >= raw * (1.0 - 1e-9))
        .unwrap_or(10.0 * mag)
        .max(1.0);
    let far = (w.0 - origin).abs().max((w.1 - origin).abs());
    let (unit, name) = if far >= 1e9 {
        (1e9, "s")
    } else if far >= 1e6 {
        (1e6, "ms")
    } else if far >= 1e3 {
        (1e3, "µs")
    } else {
        (1.0, "ns")
    };
    let decimals = (-(step / unit).log10() - 1e-9).ceil().clamp(0.0, 9.0) as usize;
    let first = ((w.0 - origin) / step).ceil();
    (0..=max * 2)
        .map(|i| (first + i as f64) * step)
        .take_while(|rel| origin + rel <= w.1)
        .map(|rel| {
            (
                origin + rel,
                format!("{:.*} {name}", decimals, rel / unit + 0.0),
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zoom_keeps_the_point_under_the_cursor() {
        let w = (1000.0, 11_000.0);
        let z = zoom(w, 0.25, 0.5);
        assert_eq!(z, (2250.0, 7250.0));
        // The pivot (3500) is at the same fraction before and after.
        assert!(((3500.0 - z.0) / (z.1 - z.0) - 0.25).abs() < 1e-12);
        let tiny = zoom(w, 0.5, 1e-9);
        assert_eq!(tiny.1 - tiny.0, MIN_SPAN_NS);
    }

    #[test]
    fn keys_move_the_window_the_right_way() {
        let w = (0.0, 1e6);
        let zin = Motion::of_key("w").unwrap().apply(w, 0.5, 0.1);
        assert!(zin.1 - zin.0 < 1e6 && zin.0 > 0.0);
        let zout = Motion::of_key("S").unwrap().apply(w, 0.5, 0.1);
        assert!(zout.1 - zout.0 > 1e6);
        let left = Motion::of_key("a").unwrap().apply(w, 0.5, 0.1);
        assert!(left.0 < 0.0 && (left.1 - left.0 - 1e6).abs() < 1e-6);
        let right = Motion::of_key("ArrowRight").unwrap().apply(w, 0.5, 0.1);
        assert!(right.0 > 0.0);
        assert_eq!(Motion::of_key("x"), None);
        // Two half-steps are one step: motion depends on time held, not on the frame rate.
        let half = Motion::ZoomIn.apply(Motion::ZoomIn.apply(w, 0.3, 0.05), 0.3, 0.05);
        let whole = Motion::ZoomIn.apply(w, 0.3, 0.1);
        assert!((half.0 - whole.0).abs() < 1e-6 && (half.1 - whole.1).abs() < 1e-6);
    }

    #[test]
    fn pans_stop_at_the_run_ends() {
        let run = (1000.0, 2000.0);
        assert_eq!(keep_within((1900.0, 2100.0), run), (1800.0, 2000.0));
        assert_eq!(keep_within((800.0, 900.0), run), (1000.0, 1100.0));
        assert_eq!(keep_within((1200.0, 1300.0), run), (1200.0, 1300.0));
        // Zoomed out past the run: it stays in view, wherever it is in the window.
        assert_eq!(keep_within((1500.0, 4500.0), run), (1000.0, 4000.0));
        assert_eq!(keep_within((0.0, 3000.0), run), (0.0, 3000.0));
        assert_eq!(keep_within((-5000.0, -2000.0), run), (-1000.0, 2000.0));
        // Held D at the end of the run moves no further.
        let mut w = (1800.0, 2000.0);
        for _ in 0..10 {
            w = keep_within(Motion::Right.apply(w, 0.5, 0.1), run);
        }
        assert_eq!(w, (1800.0, 2000.0));
    }

    #[test]
    fn ticks_are_round_and_labelled_in_adaptive_units() {
        let origin = 5e9;
        let t = ticks((origin, origin + 10e6), origin, 10);
        let labels: Vec<&str> = t.iter().map(|(_, l)| l.as_str()).collect();
        assert_eq!(labels[0], "0 ms");
        assert_eq!(labels[1], "1 ms");
        assert_eq!(labels.len(), 11);

        let t = ticks((origin + 3.3e3, origin + 3.7e3), origin, 10);
        assert_eq!(t[0].1, "3.30 µs");
        assert_eq!(t[1].1, "3.35 µs");

        // Deep in a long run: seconds, with enough decimals that every label differs.
        let t = ticks((origin + 2e9, origin + 2e9 + 2e3), origin, 8);
        assert_eq!(t[0].1, "2.0000000 s");
        assert_eq!(t[1].1, "2.0000005 s");
        let mut seen: Vec<&String> = t.iter().map(|(_, l)| l).collect();
        seen.dedup();
        assert_eq!(seen.len(), t.len());
        assert!(t
            .iter()
            .all(|(ns, _)| *ns >= origin + 2e9 && *ns <= origin + 2e9 + 2e3));

        assert!(ticks((0.0, 500.0), 0.0, 5)
            .iter()
            .all(|(_, l)| l.ends_with(" ns")));
    }
}
