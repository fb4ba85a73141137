//! What an analysis assumed where the inputs did not say (a communicator whose rings were not
//! printed, an operation with no tuning line, a kernel of zero duration): one note per kind,
//! with how often it happened and a few examples, so the rest of the result stands and the
//! reader knows what it rests on.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// One kind of assumption, and how often it was made.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Note {
    /// A stable key (`textbook-ring`, `no-algorithm`, `zero-duration`, ...).
    pub kind: String,
    /// What was assumed, in one plain sentence.
    pub message: String,
    /// How many times (operations, kernels, communicators: the message says which).
    pub count: u64,
    /// Up to [`EXAMPLES`] of the places it happened (communicator ids, ranks).
    pub examples: Vec<String>,
}

/// Examples kept per note.
pub const EXAMPLES: usize = 5;

/// Notes gathered while an analysis runs, one per kind.
#[derive(Debug, Default, Clone)]
pub struct Notes {
    by_kind: BTreeMap<&'static str, Note>,
}

impl Notes {
    /// Counts `n` more of `kind` (its message set the first time), with an example.
    pub fn add(&mut self, kind: &'static str, message: &str, n: u64, example: Option<String>) {
        let note = self.by_kind.entry(kind).or_insert_with(|| Note {
            kind: kind.to_string(),
            message: message.to_string(),
            count: 0,
            examples: Vec::new(),
        });
        note.count += n;
        if let Some(e) = example {
            if note.examples.len() < EXAMPLES && !note.examples.contains(&e) {
                note.examples.push(e);
            }
        }
    }

    pub fn into_vec(self) -> Vec<Note> {
        self.by_kind.into_values().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn notes_count_per_kind_and_keep_a_few_distinct_examples() {
        let mut n = Notes::default();
        for i in 0..8 {
            n.add(
                "textbook-ring",
                "no ring printed",
                2,
                Some(format!("c{}", i % 7)),
            );
        }
        n.add("zero-duration", "kernels of zero duration", 1, None);
        let v = n.into_vec();
        assert_eq!(v.len(), 2);
        assert_eq!(v[0].kind, "textbook-ring");
        assert_eq!(v[0].count, 16);
        assert_eq!(v[0].examples, ["c0", "c1", "c2", "c3", "c4"]);
        assert_eq!(v[1].count, 1);
        assert!(v[1].examples.is_empty());
    }
}
