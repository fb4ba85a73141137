//! The rows of the timeline canvas: the tracks grouped by node (a header row per node, when the
//! run has several; a collapsed node shows its header alone), and the NVTX rows (iterations,
//! phases) folded under the rank whose ranges they are. The canvas draws, picks and scrolls by
//! these rows; they are worked out here from the tracks' and NVTX rows' labels (as the
//! `timeline` crate writes them), so that the grouping is tested natively.

use std::collections::BTreeSet;

/// One row of the canvas.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Row {
    /// A node's header: its host, how many tracks it has, whether they are hidden.
    Group {
        host: String,
        tracks: usize,
        collapsed: bool,
    },
    /// Track `index` of the timeline.
    Track(usize),
    /// NVTX row `index` of the timeline (`Timeline::markers`).
    Marker(usize),
}

/// The rows, and where each track and NVTX row landed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Layout {
    pub rows: Vec<Row>,
    /// Per track, its row (`None`: its node is collapsed).
    pub track_row: Vec<Option<usize>>,
    /// The track the NVTX rows fold under (`None`: they head the rows, as no track is theirs).
    pub markers_under: Option<usize>,
}

impl Layout {
    /// The row of track `t`, if shown.
    pub fn row_of_track(&self, t: usize) -> Option<usize> {
        self.track_row.get(t).copied().flatten()
    }

    /// The row of the first track of global rank `rank` (labels start `rank R ·`), if shown.
    pub fn row_of_rank(&self, labels: &[&str], rank: u32) -> Option<usize> {
        let t = labels.iter().position(|l| rank_of(l) == Some(rank))?;
        self.row_of_track(t)
    }
}

/// The host of a track label: `rank 3 · node01 · GPU 3` → `node01`, `node01 pid 7 · GPU 0` →
/// `node01`, `pid 7 · GPU 0` → `` (unknown).
pub fn host_of(label: &str) -> &str {
    let mut parts = label.split(" · ");
    let first = parts.next().unwrap_or_default();
    if first.starts_with("rank ") {
        return parts.next().unwrap_or_default();
    }
    match first.split_once(" pid ") {
        Some((host, _)) => host,
        None => "",
    }
}

/// The global rank of a track label (`rank 3 · …`).
pub fn rank_of(label: &str) -> Option<u32> {
    label
        .strip_prefix("rank ")?
        .split(" · ")
        .next()?
        .parse()
        .ok()
}

/// Whose ranges an NVTX row holds: its label ends `(rank R)` or `(pid P)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MarkerOwner {
    Rank(u32),
    Pid(u32),
}

pub fn marker_owner(label: &str) -> Option<MarkerOwner> {
    let inner = label.strip_suffix(')')?.rsplit_once('(')?.1;
    if let Some(r) = inner.strip_prefix("rank ") {
        return r.parse().ok().map(MarkerOwner::Rank);
    }
    inner
        .strip_prefix("pid ")?
        .parse()
        .ok()
        .map(MarkerOwner::Pid)
}

/// Whether track label `label` is the owner's (the first such track takes the NVTX rows).
fn owns(label: &str, owner: MarkerOwner) -> bool {
    match owner {
        MarkerOwner::Rank(r) => rank_of(label) == Some(r),
        MarkerOwner::Pid(p) => {
            let first = label.split(" · ").next().unwrap_or_default();
            first == format!("pid {p}") || first.ends_with(&format!(" pid {p}"))
        }
    }
}

/// The rows for tracks labelled `tracks` (in the timeline's order, which keeps a node's tracks
/// together) and NVTX rows labelled `markers`: a header per node when there are several nodes,
/// the tracks of the nodes in `collapsed` hidden, and the NVTX rows under their rank's first
/// track unless `markers_folded`.
pub fn layout(
    tracks: &[&str],
    markers: &[&str],
    collapsed: &BTreeSet<String>,
    markers_folded: bool,
) -> Layout {
    let hosts: Vec<&str> = tracks.iter().map(|l| host_of(l)).collect();
    let grouped = {
        let mut distinct: Vec<&str> = hosts.clone();
        distinct.sort_unstable();
        distinct.dedup();
        distinct.len() > 1
    };
    let owner = markers.first().and_then(|l| marker_owner(l));
    let markers_under = owner.and_then(|o| tracks.iter().position(|l| owns(l, o)));
    let mut out = Layout {
        rows: Vec::with_capacity(tracks.len() + markers.len() + 8),
        track_row: vec![None; tracks.len()],
        markers_under,
    };
    let marker_rows = |out: &mut Layout| {
        if !markers_folded {
            out.rows.extend((0..markers.len()).map(Row::Marker));
        }
    };
    if markers_under.is_none() {
        marker_rows(&mut out);
    }
    let mut t = 0;
    while t < tracks.len() {
        let host = hosts[t];
        let end = t + hosts[t..].iter().take_while(|h| **h == host).count();
        let hidden = grouped && collapsed.contains(host);
        if grouped {
            out.rows.push(Row::Group {
                host: host.to_string(),
                tracks: end - t,
                collapsed: hidden,
            });
        }
        for i in t..end {
            if hidden {
                continue;
            }
            out.track_row[i] = Some(out.rows.len());
            out.rows.push(Row::Track(i));
            if markers_under == Some(i) {
                marker_rows(&mut out);
            }
        }
        t = end;
    }
    out
}

/// The rows' height (canvas pixels) for `rows` rows in a box `available` pixels tall below the
/// ruler: as tall as fills the box, between `min` and `max`.
pub fn row_height(rows: usize, available: f64, min: f64, max: f64) -> f64 {
    if rows == 0 || !available.is_finite() {
        return min;
    }
    (available / rows as f64).floor().clamp(min, max)
}

#[cfg(test)]
mod tests {
    use super::*;

    const TRACKS: [&str; 5] = [
        "rank 0 · node01 · GPU 0",
        "rank 1 · node01 · GPU 1",
        "rank 2 · node02 · GPU 0",
        "rank 3 · node02 · GPU 1",
        "node03 pid 7 · GPU 0",
    ];

    #[test]
    fn labels_name_host_rank_and_owner() {
        assert_eq!(host_of(TRACKS[2]), "node02");
        assert_eq!(host_of(TRACKS[4]), "node03");
        assert_eq!(host_of("pid 7 · GPU 0"), "");
        assert_eq!(rank_of(TRACKS[3]), Some(3));
        assert_eq!(rank_of(TRACKS[4]), None);
        assert_eq!(
            marker_owner("NVTX iterations (rank 2)"),
            Some(MarkerOwner::Rank(2))
        );
        assert_eq!(
            marker_owner("NVTX phases (pid 7)"),
            Some(MarkerOwner::Pid(7))
        );
        assert_eq!(marker_owner("NVTX phases"), None);
    }

    #[test]
    fn nodes_get_headers_and_collapse() {
        let l = layout(&TRACKS, &[], &BTreeSet::new(), false);
        let group = |host: &str, tracks, collapsed| Row::Group {
            host: host.into(),
            tracks,
            collapsed,
        };
        assert_eq!(
            l.rows,
            vec![
                group("node01", 2, false),
                Row::Track(0),
                Row::Track(1),
                group("node02", 2, false),
                Row::Track(2),
                Row::Track(3),
                group("node03", 1, false),
                Row::Track(4),
            ]
        );
        assert_eq!(l.row_of_track(2), Some(4));
        assert_eq!(l.row_of_rank(&TRACKS, 1), Some(2));

        let collapsed: BTreeSet<String> = ["node02".to_string()].into();
        let l = layout(&TRACKS, &[], &collapsed, false);
        assert_eq!(l.rows[3], group("node02", 2, true));
        assert_eq!(l.rows[4], group("node03", 1, false));
        assert_eq!(l.row_of_track(2), None);
        assert_eq!(l.row_of_track(4), Some(5));
        // One node: no header.
        let l = layout(&TRACKS[..2], &[], &BTreeSet::new(), false);
        assert_eq!(l.rows, vec![Row::Track(0), Row::Track(1)]);
    }

    #[test]
    fn nvtx_rows_fold_under_their_rank() {
        let markers = ["NVTX iterations (rank 2)", "NVTX phases (rank 2)"];
        let l = layout(&TRACKS, &markers, &BTreeSet::new(), false);
        assert_eq!(l.markers_under, Some(2));
        assert_eq!(
            &l.rows[4..7],
            &[Row::Track(2), Row::Marker(0), Row::Marker(1)]
        );
        assert_eq!(l.row_of_track(3), Some(7));
        let folded = layout(&TRACKS, &markers, &BTreeSet::new(), true);
        assert_eq!(&folded.rows[4..6], &[Row::Track(2), Row::Track(3)]);
        // Their rank filtered away: they head the rows.
        let l = layout(&TRACKS[..2], &markers, &BTreeSet::new(), false);
        assert_eq!(l.markers_under, None);
        assert_eq!(
            l.rows,
            vec![Row::Marker(0), Row::Marker(1), Row::Track(0), Row::Track(1)]
        );
        // By pid.
        let l = layout(&TRACKS, &["NVTX phases (pid 7)"], &BTreeSet::new(), false);
        assert_eq!(l.markers_under, Some(4));
    }

    #[test]
    fn rows_fill_the_box_within_bounds() {
        assert_eq!(row_height(10, 500.0, 22.0, 40.0), 40.0);
        assert_eq!(row_height(10, 300.0, 22.0, 40.0), 30.0);
        assert_eq!(row_height(100, 300.0, 22.0, 40.0), 22.0);
        assert_eq!(row_height(0, 300.0, 22.0, 40.0), 22.0);
    }
}
