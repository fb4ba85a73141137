//! The log side of every kernel of one process, kept as flat columns.
//!
//! An analysis keeps one match per kernel of the run for as long as the run is open. As a
//! `Vec<Option<(Vec<usize>, Vec<usize>, f64)>>` that was 87 bytes per kernel (two vectors, each
//! with its own one-element heap block); here a kernel's lines are a range of one shared list,
//! 20 bytes per kernel and 4 per matched line (issue 11, *Memory held per operation*).

/// One kernel's match as the aligner builds it: its lines, their later copies, its confidence.
pub type OwnedMatch = (Vec<usize>, Vec<usize>, f64);

/// The log side of one matched kernel, borrowed from [`KernelMatches`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct KernelMatch<'a> {
    /// The log op, or the grouped Send/Recv lines fused into this kernel, in log order (never
    /// empty).
    pub log_ops: &'a [u32],
    /// Later copies of those lines (duplicated logging), not separate operations.
    pub duplicates: &'a [u32],
    /// In [0, 1]: how good the pair is and how well its neighbours align.
    pub confidence: f64,
}

impl KernelMatch<'_> {
    /// The first log line matched (the one whose call the kernel runs).
    pub fn first_line(&self) -> usize {
        self.log_ops[0] as usize
    }

    /// The matched lines as indices into the process's log operations.
    pub fn lines(&self) -> impl Iterator<Item = usize> + '_ {
        self.log_ops.iter().map(|&l| l as usize)
    }
}

/// Every kernel's match, indexed like the process's kernels. A kernel is matched when it has
/// at least one log line (a match always has one).
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[derive(Debug, Clone, PartialEq, Default)]
pub struct KernelMatches {
    /// Per kernel, where its lines end in `lines` (they start where the previous kernel's end).
    line_ends: Vec<u32>,
    lines: Vec<u32>,
    /// Per kernel, where its duplicates end in `duplicates`; empty when no kernel has any (most
    /// processes log each line once).
    duplicate_ends: Vec<u32>,
    duplicates: Vec<u32>,
    /// Per kernel; 0 for a kernel without a match.
    confidence: Vec<f64>,
}

impl KernelMatches {
    /// Room for `n` kernels, none added yet; [`KernelMatches::push`] adds them in kernel order.
    fn with_capacity(n: usize) -> Self {
        KernelMatches {
            line_ends: Vec::with_capacity(n),
            lines: Vec::with_capacity(n),
            duplicate_ends: Vec::new(),
            duplicates: Vec::new(),
            confidence: Vec::with_capacity(n),
        }
    }

    /// Builds the columns from one optional match per kernel, in kernel order.
    pub fn from_options<L, D>(per_kernel: impl IntoIterator<Item = Option<(L, D, f64)>>) -> Self
    where
        L: IntoIterator<Item = usize>,
        D: IntoIterator<Item = usize>,
    {
        let per_kernel = per_kernel.into_iter();
        let mut out = KernelMatches::with_capacity(per_kernel.size_hint().0);
        for m in per_kernel {
            out.push(m);
        }
        out.finish()
    }

    /// Adds the next kernel's match (`None`: not matched).
    fn push<L, D>(&mut self, m: Option<(L, D, f64)>)
    where
        L: IntoIterator<Item = usize>,
        D: IntoIterator<Item = usize>,
    {
        let narrow = |i: usize| u32::try_from(i).expect("a process's log has under 2^32 lines");
        let mut confidence = 0.0;
        if let Some((lines, duplicates, c)) = m {
            self.lines.extend(lines.into_iter().map(narrow));
            self.duplicates.extend(duplicates.into_iter().map(narrow));
            confidence = c;
        }
        self.line_ends.push(self.lines.len() as u32);
        self.duplicate_ends.push(self.duplicates.len() as u32);
        self.confidence.push(confidence);
    }

    /// Drops the duplicate ends when there are no duplicates, and spare capacity.
    fn finish(mut self) -> Self {
        if self.duplicates.is_empty() {
            self.duplicate_ends = Vec::new();
        }
        self.line_ends.shrink_to_fit();
        self.lines.shrink_to_fit();
        self.duplicate_ends.shrink_to_fit();
        self.duplicates.shrink_to_fit();
        self.confidence.shrink_to_fit();
        self
    }

    /// Kernels (matched or not).
    pub fn len(&self) -> usize {
        self.line_ends.len()
    }

    pub fn is_empty(&self) -> bool {
        self.line_ends.is_empty()
    }

    /// Kernel `k`'s match; `None` when it has none or there is no kernel `k`.
    pub fn get(&self, k: usize) -> Option<KernelMatch<'_>> {
        let range = |ends: &[u32], k: usize| {
            let start = if k == 0 { 0 } else { ends[k - 1] as usize };
            start..ends[k] as usize
        };
        if k >= self.len() {
            return None;
        }
        let lines = &self.lines[range(&self.line_ends, k)];
        if lines.is_empty() {
            return None;
        }
        let duplicates = if self.duplicate_ends.is_empty() {
            &[][..]
        } else {
            &self.duplicates[range(&self.duplicate_ends, k)]
        };
        Some(KernelMatch {
            log_ops: lines,
            duplicates,
            confidence: self.confidence[k],
        })
    }

    /// Every kernel's match, in kernel order.
    pub fn iter(&self) -> Iter<'_> {
        Iter {
            matches: self,
            next: 0,
        }
    }

    /// Bytes held (the columns' capacities), for the memory figures.
    pub fn heap_bytes(&self) -> usize {
        4 * (self.line_ends.capacity()
            + self.lines.capacity()
            + self.duplicate_ends.capacity()
            + self.duplicates.capacity())
            + 8 * self.confidence.capacity()
    }
}

/// [`KernelMatches::iter`]: every kernel's match, in kernel order.
pub struct Iter<'a> {
    matches: &'a KernelMatches,
    next: usize,
}

impl<'a> Iterator for Iter<'a> {
    type Item = Option<KernelMatch<'a>>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.next >= self.matches.len() {
            return None;
        }
        self.next += 1;
        Some(self.matches.get(self.next - 1))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let left = self.matches.len() - self.next;
        (left, Some(left))
    }
}

impl ExactSizeIterator for Iter<'_> {}

impl<'a> IntoIterator for &'a KernelMatches {
    type Item = Option<KernelMatch<'a>>;
    type IntoIter = Iter<'a>;

    fn into_iter(self) -> Iter<'a> {
        self.iter()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    type Owned = Option<OwnedMatch>;

    fn round_trip(per_kernel: &[Owned]) -> Vec<Owned> {
        let flat = KernelMatches::from_options(per_kernel.iter().cloned());
        assert_eq!(flat.len(), per_kernel.len());
        flat.iter()
            .map(|m| {
                m.map(|m| {
                    (
                        m.lines().collect(),
                        m.duplicates.iter().map(|&d| d as usize).collect(),
                        m.confidence,
                    )
                })
            })
            .collect()
    }

    #[test]
    fn every_shape_reads_back_as_built() {
        let cases: Vec<Vec<Owned>> = vec![
            vec![],
            vec![None, None],
            vec![Some((vec![0], vec![], 0.9))],
            vec![
                None,
                Some((vec![0], vec![1], 0.5)),
                None,
                Some((vec![2, 3, 4], vec![], 1.0)),
                Some((vec![7], vec![8, 9], 0.25)),
                None,
            ],
            vec![Some((vec![5, 6], vec![], 0.75)), None],
        ];
        for case in cases {
            assert_eq!(round_trip(&case), case);
        }
    }

    #[test]
    fn out_of_range_and_unmatched_kernels_have_no_match() {
        let flat = KernelMatches::from_options([Some((vec![0], vec![], 1.0)), None::<OwnedMatch>]);
        assert!(flat.get(0).is_some());
        assert!(flat.get(1).is_none());
        assert!(flat.get(2).is_none());
        assert!(flat.get(usize::MAX).is_none());
        assert_eq!(flat.iter().flatten().count(), 1);
    }

    #[test]
    fn equal_matches_build_equal_columns() {
        let a: Vec<Owned> = vec![Some((vec![1], vec![], 0.5)), None];
        let b = a.clone();
        assert_eq!(
            KernelMatches::from_options(a),
            KernelMatches::from_options(b)
        );
    }
}
