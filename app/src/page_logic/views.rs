//! The page's views as plain data: what the view bar lists, the key that opens each, and the
//! panel ids of the page before views that a link of that layout may name (`p=`). The page
//! pairs each entry with its component (`page::views::registry`); what needs no browser (finding
//! a view by a link's `p=` or by a key, checking a catalogue) is here, tested natively.

/// One view of the page.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ViewSpec {
    /// The view's id: in links (`p=`), in `data-view` and in the tab's `data-testid`
    /// (`view-<slug>`). Lower-case letters and `-` (what a link's `p=` accepts).
    pub slug: &'static str,
    /// The tab's name.
    pub name: &'static str,
    /// The key that opens it (lower case; a letter the focused timeline does not take).
    pub key: char,
    /// Panel ids of the page before views that this view now holds: a link of that layout that
    /// names one opens this view.
    pub legacy: &'static [&'static str],
    /// One line on what it shows (the tab's title).
    pub about: &'static str,
    /// What it needs from the files, said when they lack it.
    pub needs: &'static str,
}

/// Keys the focused timeline canvas takes (zoom, pan, zoom to the selection): a view opened by
/// one of them would take it from a user who thinks the timeline has the focus.
pub const TIMELINE_KEYS: [char; 5] = ['w', 'a', 's', 'd', 'f'];

/// The Timeline's index in the page's catalogue (`page::views::registry::VIEWS`, whose check
/// says so when it moves): state that opens the timeline needs no import of the catalogue.
pub const TIMELINE_VIEW: usize = 1;

/// The view a link's `p=` names: a view's slug, or a panel id of the page before views.
pub fn of_link(views: &[ViewSpec], p: &str) -> Option<usize> {
    views
        .iter()
        .position(|v| v.slug == p)
        .or_else(|| views.iter().position(|v| v.legacy.contains(&p)))
}

/// The view key `key` (`KeyboardEvent.key`) opens: one character, either case.
pub fn of_key(views: &[ViewSpec], key: &str) -> Option<usize> {
    let mut chars = key.chars();
    let (Some(c), None) = (chars.next(), chars.next()) else {
        return None;
    };
    let c = c.to_ascii_lowercase();
    views.iter().position(|v| v.key == c)
}

/// Why `views` cannot be the page's catalogue: a slug a link cannot carry, a slug, key or legacy
/// id used twice, or a key the timeline takes.
pub fn check(views: &[ViewSpec]) -> Result<(), String> {
    for (i, v) in views.iter().enumerate() {
        let slug_ok = !v.slug.is_empty()
            && v.slug.len() <= 32
            && v.slug.bytes().all(|b| b.is_ascii_lowercase() || b == b'-');
        if !slug_ok {
            return Err(format!(
                "view slug “{}” is not lower-case letters and -",
                v.slug
            ));
        }
        if !v.key.is_ascii_lowercase() && !v.key.is_ascii_digit() {
            return Err(format!(
                "view {}: key {:?} is not a lower-case letter or digit",
                v.slug, v.key
            ));
        }
        if TIMELINE_KEYS.contains(&v.key) {
            return Err(format!(
                "view {}: key {:?} is the timeline's",
                v.slug, v.key
            ));
        }
        for w in &views[..i] {
            if w.slug == v.slug {
                return Err(format!("two views named {}", v.slug));
            }
            if w.key == v.key {
                return Err(format!(
                    "views {} and {} share the key {:?}",
                    w.slug, v.slug, v.key
                ));
            }
            let names = |x: &ViewSpec| std::iter::once(x.slug).chain(x.legacy.iter().copied());
            if let Some(id) = names(v).find(|id| names(w).any(|x| x == *id)) {
                return Err(format!(
                    "views {} and {} both answer to {id}",
                    w.slug, v.slug
                ));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const fn spec(slug: &'static str, key: char, legacy: &'static [&'static str]) -> ViewSpec {
        ViewSpec {
            slug,
            name: slug,
            key,
            legacy,
            about: "",
            needs: "",
        }
    }

    const VIEWS: [ViewSpec; 3] = [
        spec("overview", 'o', &[]),
        spec("timeline", 't', &["window"]),
        spec("ranks", 'r', &[]),
    ];

    #[test]
    fn links_name_views_by_slug_or_by_their_old_panel() {
        assert_eq!(of_link(&VIEWS, "ranks"), Some(2));
        assert_eq!(of_link(&VIEWS, "window"), Some(1));
        assert_eq!(of_link(&VIEWS, "timeline"), Some(1));
        assert_eq!(of_link(&VIEWS, "nonsense"), None);
    }

    #[test]
    fn one_key_opens_one_view() {
        assert_eq!(of_key(&VIEWS, "t"), Some(1));
        assert_eq!(of_key(&VIEWS, "R"), Some(2));
        assert_eq!(of_key(&VIEWS, "x"), None);
        assert_eq!(of_key(&VIEWS, "Tab"), None);
        assert_eq!(of_key(&VIEWS, ""), None);
    }

    #[test]
    fn a_catalogue_is_checked() {
        assert_eq!(check(&VIEWS), Ok(()));
        let bad = |views: &[ViewSpec]| check(views).unwrap_err();
        assert!(bad(&[spec("a", 'o', &[]), spec("b", 'o', &[])]).contains("share the key"));
        assert!(bad(&[spec("a", 'o', &[]), spec("a", 'p', &[])]).contains("two views"));
        assert!(bad(&[spec("a", 'o', &["x"]), spec("b", 'p', &["x"])]).contains("answer to x"));
        assert!(bad(&[spec("a", 'o', &["b"]), spec("b", 'p', &[])]).contains("answer to b"));
        assert!(bad(&[spec("a", 'w', &[])]).contains("timeline"));
        assert!(bad(&[spec("Ranks", 'r', &[])]).contains("lower-case"));
        assert!(bad(&[spec("a", 'R', &[])]).contains("lower-case"));
    }
}
