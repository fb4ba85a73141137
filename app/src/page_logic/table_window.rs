//! The arithmetic of the page's long tables (portable, tested natively): which rows a table
//! shows (those matching its filter, in its sort order) and which of them are in the document:
//! only the rows in the table's scroll box and a margin around them, padding standing in for
//! the rest. A table of 8 192 ranks then costs the page what a table of 50 does.

use crate::protocol::panels::{sort_order, Cell};

/// Rows rendered beyond the visible ones, above and below: a fast scroll or the keyboard's
/// next row finds them in place.
pub const OVERSCAN: usize = 8;
/// A row's height until the table's rows are measured (CSS pixels: a line of 13 px text with
/// 4 px of padding is 26, most rows of the page's tables hold more): rows of one line still
/// cover the box with the margin below.
pub const DEFAULT_ROW_PX: f64 = 34.0;
/// The scroll box's height until it is measured: its CSS `max-height` (36rem).
pub const DEFAULT_VIEW_PX: f64 = 576.0;
/// Tables longer than this offer a filter box.
pub const FILTER_MIN_ROWS: usize = 12;

/// The rows `[first, last)` of `n` (in display order) to render when the scroll box shows
/// `view_px` pixels from `scroll_px` below the first row's top. Rows are placed as if each were
/// `row_px` high (the padding and the scroll bar use that estimate) but are at least `min_px`
/// high: enough rows are rendered to cover the box even if all are that short. The estimate is
/// measured once and then kept: a measure that followed every scroll made the padding, hence
/// the scroll range, move with the rows shown, and the box oscillated at the end of a table of
/// uneven rows.
///
/// `prev`, the window rendered now, keeps its first row while the box's top row stays within
/// `2 × OVERSCAN` rows below it: a scroll of a few pixels then changes no padding. (Otherwise
/// at the end of a table whose rows are taller than their estimate, scrolling to the bottom
/// moved a row into the top padding, which shrank the table, which scrolled the box back up:
/// the last pixels were out of reach.)
pub fn window(
    prev: Option<(usize, usize)>,
    n: usize,
    scroll_px: f64,
    view_px: f64,
    row_px: f64,
    min_px: f64,
) -> (usize, usize) {
    let px = |v: f64| {
        if v.is_finite() && v >= 1.0 {
            v
        } else {
            DEFAULT_ROW_PX
        }
    };
    let (row_px, min_px) = (px(row_px), px(min_px));
    let min_px = min_px.min(row_px);
    let scroll = if scroll_px.is_finite() {
        scroll_px.max(0.0)
    } else {
        0.0
    };
    let view = if view_px.is_finite() {
        view_px.clamp(0.0, 1e5)
    } else {
        DEFAULT_VIEW_PX
    };
    let top = ((scroll / row_px).floor() as usize).min(n);
    let first = match prev {
        Some((kept, _)) if kept <= top && top <= kept + 2 * OVERSCAN => kept,
        _ => top.saturating_sub(OVERSCAN),
    };
    // From `first`: the rows above the box's top (placed `row_px` apart), the box, a margin.
    let cover = (top - first) as f64 * row_px + view;
    let count = (cover / min_px).ceil() as usize + 1 + OVERSCAN;
    let last = first.saturating_add(count).min(n);
    (first.min(last), last)
}

/// The words of a filter query, lower-cased (a row must contain every one).
pub fn query_words(query: &str) -> Vec<String> {
    query.split_whitespace().map(str::to_lowercase).collect()
}

/// Whether a row holds every word of the query in some cell (case-insensitive).
pub fn matches(cells: &[Cell], words: &[String]) -> bool {
    words.iter().all(|w| {
        cells
            .iter()
            .any(|c| c.text.to_lowercase().contains(w.as_str()))
    })
}

/// The rows a table shows, as indices into `rows`: those matching `query`, in the order `sort`
/// asks for (`None`: the data's own order).
pub fn display_order(rows: &[Vec<Cell>], sort: Option<(usize, bool)>, query: &str) -> Vec<usize> {
    let order = match sort {
        Some((c, asc)) => sort_order(rows, c, asc),
        None => (0..rows.len()).collect(),
    };
    let words = query_words(query);
    if words.is_empty() {
        return order;
    }
    order
        .into_iter()
        .filter(|&r| matches(&rows[r], &words))
        .collect()
}

/// The height (px) of the padding above and below the rendered rows `[first, last)` of `n`.
pub fn padding(n: usize, (first, last): (usize, usize), row_px: f64) -> (f64, f64) {
    let last = last.min(n);
    let first = first.min(last);
    (first as f64 * row_px, (n - last) as f64 * row_px)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_the_visible_rows_and_a_margin() {
        // 10 000 rows of 20 px, 400 px shown from row 500 on: rows 500..521 visible.
        let (first, last) = window(None, 10_000, 500.0 * 20.0, 400.0, 20.0, 20.0);
        assert_eq!(first, 500 - OVERSCAN);
        assert_eq!(last, 500 + 21 + OVERSCAN);
        // At the top and at the bottom the margin is cut.
        assert_eq!(
            window(None, 10_000, 0.0, 400.0, 20.0, 20.0),
            (0, 21 + OVERSCAN)
        );
        assert_eq!(
            window(None, 10_000, 1e9, 400.0, 20.0, 20.0),
            (10_000 - OVERSCAN, 10_000)
        );
        // A short table renders whole.
        assert_eq!(window(None, 8, 0.0, 576.0, 26.0, 26.0), (0, 8));
        assert_eq!(window(None, 0, 0.0, 576.0, 26.0, 26.0), (0, 0));
        // Whatever the scroll box says, the count stays bounded.
        for (s, v, r) in [
            (-5.0, 400.0, 20.0),
            (f64::NAN, f64::NAN, 0.0),
            (1e6, 1e3, 0.5),
        ] {
            let (a, b) = window(None, 50_000, s, v, r, r);
            assert!(
                a <= b && b <= 50_000 && b - a <= 2_000,
                "{s} {v} {r}: {a}..{b}"
            );
        }
    }

    #[test]
    fn a_small_scroll_keeps_the_rendered_rows() {
        let at = |prev, rows: f64| window(prev, 10_000, rows * 20.0, 400.0, 20.0, 20.0);
        let start = at(None, 500.0);
        assert_eq!(start.0, 500 - OVERSCAN);
        // Down by less than the margin, and a little up: the same first row, the box covered.
        for rows in [
            500.5,
            503.0,
            500.0 + OVERSCAN as f64,
            499.0,
            500.0 - OVERSCAN as f64,
        ] {
            let (first, last) = at(Some(start), rows);
            assert_eq!(first, start.0, "{rows}");
            assert!(last as f64 >= rows + 20.0, "{rows}: ..{last}");
        }
        // Past the margin, or above the first row: placed afresh.
        assert_eq!(at(Some(start), 600.0), at(None, 600.0));
        assert_eq!(at(Some(start), 400.0), at(None, 400.0));
        assert_eq!(
            at(Some(start), 500.0 - OVERSCAN as f64 - 1.0).0,
            500 - 2 * OVERSCAN - 1
        );
    }

    #[test]
    fn uneven_rows_still_cover_the_box() {
        // Placed 60 px apart, but some rows are one 20 px line: the rows rendered from `first`
        // reach the box's bottom even if every one is that short.
        let (first, last) = window(None, 10_000, 600.0 * 60.0, 500.0, 60.0, 20.0);
        assert_eq!(first, 600 - OVERSCAN);
        let covered = (last - first) as f64 * 20.0;
        assert!(covered >= OVERSCAN as f64 * 60.0 + 500.0, "{first}..{last}");
        assert!(last - first < 100);
    }

    #[test]
    fn padding_stands_in_for_the_rows_not_rendered() {
        assert_eq!(padding(100, (10, 40), 20.0), (200.0, 1200.0));
        assert_eq!(padding(100, (0, 100), 20.0), (0.0, 0.0));
        // A stale window past a shrunk table.
        assert_eq!(padding(5, (10, 40), 20.0), (100.0, 0.0));
    }

    #[test]
    fn filters_on_every_word_in_any_cell_then_sorts() {
        let rows = vec![
            vec![
                Cell::count(2),
                Cell::text("node01"),
                Cell::text("AllReduce: 10"),
            ],
            vec![
                Cell::count(1),
                Cell::text("node02"),
                Cell::text("AllGather: 3"),
            ],
            vec![
                Cell::count(3),
                Cell::text("node01"),
                Cell::text("AllGather: 7"),
            ],
        ];
        assert_eq!(display_order(&rows, None, ""), vec![0, 1, 2]);
        assert_eq!(display_order(&rows, Some((0, true)), "  "), vec![1, 0, 2]);
        assert_eq!(display_order(&rows, None, "NODE01"), vec![0, 2]);
        assert_eq!(
            display_order(&rows, Some((0, false)), "node01 gather"),
            vec![2]
        );
        assert!(display_order(&rows, None, "node03").is_empty());
    }
}
