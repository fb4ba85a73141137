//! Iterating a compact store ([`crate::log_ops::LogOps`], [`crate::kernel_store::KernelStore`])
//! as whole records, each built from its row when it is reached.

/// A store whose row `i` can be built as a whole record.
pub trait Rows {
    /// The record a row builds.
    type Row;
    /// Row `i` as a record (`None` past the end).
    fn row(&self, i: usize) -> Option<Self::Row>;
}

/// The rows `next..end` of a store, built one at a time.
pub struct RowIter<'a, S> {
    store: &'a S,
    next: usize,
    end: usize,
}

impl<'a, S> RowIter<'a, S> {
    /// The first `len` rows of `store`.
    pub fn new(store: &'a S, len: usize) -> Self {
        RowIter {
            store,
            next: 0,
            end: len,
        }
    }
}

impl<S> Clone for RowIter<'_, S> {
    fn clone(&self) -> Self {
        RowIter { ..*self }
    }
}

impl<S: Rows> Iterator for RowIter<'_, S> {
    type Item = S::Row;

    fn next(&mut self) -> Option<S::Row> {
        if self.next >= self.end {
            return None;
        }
        self.next += 1;
        self.store.row(self.next - 1)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = self.end - self.next;
        (n, Some(n))
    }

    fn nth(&mut self, n: usize) -> Option<S::Row> {
        self.next = self.next.saturating_add(n).min(self.end);
        self.next()
    }
}

impl<S: Rows> DoubleEndedIterator for RowIter<'_, S> {
    fn next_back(&mut self) -> Option<S::Row> {
        if self.next >= self.end {
            return None;
        }
        self.end -= 1;
        self.store.row(self.end)
    }
}

impl<S: Rows> ExactSizeIterator for RowIter<'_, S> {}

/// The traits a compact store shares with the `Vec` of records it stands for, over its
/// inherent `new`, `len`, `push(&record)` and `iter`: it prints and compares as that list (however
/// its rows are interned), collects and extends from records, and iterates by reference.
macro_rules! record_store_traits {
    ($store:ident, $record:ty) => {
        impl std::fmt::Debug for $store {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.debug_list().entries(self.iter()).finish()
            }
        }

        impl PartialEq for $store {
            fn eq(&self, other: &Self) -> bool {
                self.len() == other.len() && self.iter().eq(other.iter())
            }
        }

        impl FromIterator<$record> for $store {
            fn from_iter<I: IntoIterator<Item = $record>>(iter: I) -> Self {
                let mut store = $store::new();
                store.extend(iter);
                store
            }
        }

        impl Extend<$record> for $store {
            fn extend<I: IntoIterator<Item = $record>>(&mut self, iter: I) {
                for r in iter {
                    self.push(&r);
                }
            }
        }

        impl<'a> IntoIterator for &'a $store {
            type Item = $record;
            type IntoIter = $crate::rows::RowIter<'a, $store>;

            fn into_iter(self) -> Self::IntoIter {
                self.iter()
            }
        }

        impl $crate::rows::Rows for $store {
            type Row = $record;

            fn row(&self, i: usize) -> Option<$record> {
                self.get(i)
            }
        }
    };
}
pub(crate) use record_store_traits;
