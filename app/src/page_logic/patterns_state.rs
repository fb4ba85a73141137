//! The Patterns view's state, as a share link and a bundle carry it: what the heat map shows
//! (observed, predicted from the layout, or their difference), its parallelism and operation
//! filter, node or rank cells, and the cell picked.
//!
//! In a link it is the `pt=` key ([`super::link`]): `pt=MODE*CELLS*PARALLELISM*OP*SRC_DST`, with
//! `MODE` one of `o`, `p`, `d`; `CELLS` one of `a` (automatic: ranks when the page has them),
//! `r`, `n`; the filters empty for "all" (short names: letters, digits, `_`, `-`); the pick empty
//! or two indices (ranks, or hosts in the heat map's order). The value is untrusted text:
//! [`decode`] bounds every field and refuses anything else.

/// What the heat map's cells hold.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Mode {
    /// The bytes the logs say each pair moved.
    #[default]
    Observed,
    /// The pairs the layout implies, with the theory's bytes.
    Predicted,
    /// Observed minus predicted.
    Difference,
}

impl Mode {
    pub const ALL: [Mode; 3] = [Mode::Observed, Mode::Predicted, Mode::Difference];

    fn code(self) -> char {
        match self {
            Mode::Observed => 'o',
            Mode::Predicted => 'p',
            Mode::Difference => 'd',
        }
    }

    /// The word the page and its tests use (`data-mode`).
    pub fn name(self) -> &'static str {
        match self {
            Mode::Observed => "observed",
            Mode::Predicted => "predicted",
            Mode::Difference => "difference",
        }
    }
}

/// A cell per rank or per node.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Cells {
    /// Ranks when the page has the rank-to-rank entries, else nodes.
    #[default]
    Auto,
    Ranks,
    Nodes,
}

impl Cells {
    fn code(self) -> char {
        match self {
            Cells::Auto => 'a',
            Cells::Ranks => 'r',
            Cells::Nodes => 'n',
        }
    }
}

/// The Patterns view's state.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PatternsState {
    pub mode: Mode,
    pub cells: Cells,
    /// Only this parallelism (`TP`, `DP`, ...); `None`: all.
    pub parallelism: Option<String>,
    /// Only this operation (`AllReduce`, ...); `None`: all.
    pub op: Option<String>,
    /// The picked cell: (row, column) as (source, destination) rank or host index.
    pub picked: Option<(u32, u32)>,
}

/// The longest filter name accepted.
const MAX_NAME: usize = 32;

impl PatternsState {
    /// Whether it is the state a fresh page starts with (a link then leaves the key out).
    pub fn is_default(&self) -> bool {
        *self == PatternsState::default()
    }
}

/// The `pt=` value of `s`.
pub fn encode(s: &PatternsState) -> String {
    let picked = s
        .picked
        .map_or_else(String::new, |(a, b)| format!("{a}_{b}"));
    format!(
        "{}*{}*{}*{}*{picked}",
        s.mode.code(),
        s.cells.code(),
        s.parallelism.as_deref().unwrap_or(""),
        s.op.as_deref().unwrap_or("")
    )
}

/// Reads a `pt=` value.
pub fn decode(value: &str) -> Result<PatternsState, String> {
    let bad = |why: &str| {
        let shown: String = value.chars().take(60).collect();
        format!("patterns view “{shown}”: {why}")
    };
    if value.len() > 4 * MAX_NAME {
        return Err(bad("too long"));
    }
    let fields: Vec<&str> = value.split('*').collect();
    let [mode, cells, par, op, picked] = fields[..] else {
        return Err(bad("expected MODE*CELLS*PARALLELISM*OP*PICK"));
    };
    let mode = match mode {
        "o" => Mode::Observed,
        "p" => Mode::Predicted,
        "d" => Mode::Difference,
        _ => return Err(bad("the mode is not o, p or d")),
    };
    let cells = match cells {
        "a" => Cells::Auto,
        "r" => Cells::Ranks,
        "n" => Cells::Nodes,
        _ => return Err(bad("the cells are not a, r or n")),
    };
    let name = |v: &str| -> Result<Option<String>, String> {
        let ok = v.len() <= MAX_NAME
            && v.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
        if !ok {
            return Err(bad("a filter is not a short name"));
        }
        Ok((!v.is_empty()).then(|| v.to_string()))
    };
    let picked = if picked.is_empty() {
        None
    } else {
        let (a, b) = picked
            .split_once('_')
            .ok_or_else(|| bad("the pick is not SRC_DST"))?;
        let n = |v: &str| {
            v.parse::<u32>()
                .ok()
                .filter(|_| v.bytes().all(|b| b.is_ascii_digit()))
                .ok_or_else(|| bad("the pick is not two indices"))
        };
        Some((n(a)?, n(b)?))
    };
    Ok(PatternsState {
        mode,
        cells,
        parallelism: name(par)?,
        op: name(op)?,
        picked,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_state_round_trips() {
        for mode in Mode::ALL {
            for cells in [Cells::Auto, Cells::Ranks, Cells::Nodes] {
                for (par, op, picked) in [
                    (None, None, None),
                    (Some("TP"), Some("AllReduce"), Some((3, 4))),
                    (Some("unknown"), None, Some((0, u32::MAX))),
                ] {
                    let s = PatternsState {
                        mode,
                        cells,
                        parallelism: par.map(str::to_string),
                        op: op.map(str::to_string),
                        picked,
                    };
                    assert_eq!(decode(&encode(&s)), Ok(s.clone()), "{}", encode(&s));
                }
            }
        }
        assert_eq!(encode(&PatternsState::default()), "o*a***");
        assert!(PatternsState::default().is_default());
    }

    #[test]
    fn garbled_values_are_errors() {
        let long = format!("o*a*{}**", "A".repeat(40));
        for bad in [
            "",
            "o",
            "o*a**",
            "o*a****",
            "x*a***",
            "o*z***",
            "o*a*<b>**",
            "o*a*T%20P**",
            "o*a***3",
            "o*a***3_",
            "o*a***_4",
            "o*a***3_4_5",
            "o*a***-1_2",
            "o*a***+1_2",
            "o*a***99999999999_1",
            long.as_str(),
        ] {
            assert!(decode(bad).is_err(), "{bad}");
        }
    }
}
