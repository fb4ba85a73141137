//! Which rows of a long list to render: a scroll box that holds only its visible rows and a
//! margin, padding standing in for the rest (the page's notes list). Portable, tested natively.

/// Which rows of a list of `total` rows of `row_px` to render when its scroll box shows
/// `view_px` from `scroll_px`, and the padding above and below them.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ListWindow {
    pub first: usize,
    pub last: usize,
    pub pad_top: f64,
    pub pad_bottom: f64,
}

/// The tallest a list's scroll box is made: browsers cap an element's height (Firefox near
/// 17.9 million pixels), so a longer list scrolls by share instead of by pixel.
pub const MAX_LIST_PX: f64 = 8_000_000.0;
/// Rows rendered beyond the visible ones, above and below.
pub const LIST_OVERSCAN: usize = 8;

/// The rows to render (see [`ListWindow`]). Up to [`MAX_LIST_PX`] of rows, each row is at its
/// own place and a margin is rendered around the visible ones; past it, the box scrolls
/// [`MAX_LIST_PX`], its position picks the rows by share (the end shows the last rows) and they
/// are rendered where the box looks.
pub fn list_window(total: usize, scroll_px: f64, view_px: f64, row_px: f64) -> ListWindow {
    let row = if row_px.is_finite() && row_px >= 1.0 {
        row_px
    } else {
        22.0
    };
    let view = if view_px.is_finite() {
        view_px.clamp(0.0, 1e5)
    } else {
        480.0
    };
    let scroll = if scroll_px.is_finite() {
        scroll_px.max(0.0)
    } else {
        0.0
    };
    let visible = (view / row).ceil() as usize + 1;
    if total as f64 * row <= MAX_LIST_PX {
        let top = ((scroll / row).floor() as usize).min(total);
        let first = top.saturating_sub(LIST_OVERSCAN);
        let last = top.saturating_add(visible + LIST_OVERSCAN).min(total);
        return ListWindow {
            first,
            last,
            pad_top: first as f64 * row,
            pad_bottom: (total - last) as f64 * row,
        };
    }
    let range = (MAX_LIST_PX - view).max(1.0);
    let share = (scroll / range).clamp(0.0, 1.0);
    let top = ((total + 1 - visible) as f64 * share).floor() as usize;
    let last = (top + visible).min(total);
    let first = top.min(last);
    let block = (last - first) as f64 * row;
    let pad_top = scroll.min(MAX_LIST_PX - block).max(0.0);
    ListWindow {
        first,
        last,
        pad_top,
        pad_bottom: (MAX_LIST_PX - pad_top - block).max(0.0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn list_window_covers_the_box_and_reaches_the_end() {
        // Short enough for a box: rows at their places, a margin around.
        let w = list_window(1000, 220.0, 440.0, 22.0);
        assert_eq!(
            (w.first, w.last),
            (10 - LIST_OVERSCAN, 10 + 21 + LIST_OVERSCAN)
        );
        assert_eq!(w.pad_top, w.first as f64 * 22.0);
        assert_eq!(
            w.pad_top + (w.last - w.first) as f64 * 22.0 + w.pad_bottom,
            22_000.0
        );
        let end = list_window(1000, 22_000.0 - 440.0, 440.0, 22.0);
        assert_eq!(end.last, 1000);
        // Ten million rows: the box stays MAX_LIST_PX tall; wherever it is scrolled the rows
        // rendered cover what it shows, and its end shows the last row.
        for scroll in [
            0.0,
            1.0,
            123_456.7,
            MAX_LIST_PX / 2.0,
            MAX_LIST_PX - 441.0,
            MAX_LIST_PX - 440.0,
        ] {
            let w = list_window(10_000_000, scroll, 440.0, 22.0);
            let block = (w.last - w.first) as f64 * 22.0;
            assert!(
                w.pad_top <= scroll && w.pad_top + block >= scroll + 440.0,
                "{w:?}"
            );
            assert!(
                (w.pad_top + block + w.pad_bottom - MAX_LIST_PX).abs() < 1e-6,
                "{w:?}"
            );
        }
        assert_eq!(list_window(10_000_000, 0.0, 440.0, 22.0).first, 0);
        assert_eq!(
            list_window(10_000_000, MAX_LIST_PX - 440.0, 440.0, 22.0).last,
            10_000_000
        );
        assert_eq!(
            list_window(0, 100.0, 440.0, 22.0),
            ListWindow {
                first: 0,
                last: 0,
                pad_top: 0.0,
                pad_bottom: 0.0
            }
        );
    }
}
