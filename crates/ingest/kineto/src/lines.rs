//! Line numbers of a text read through a moving buffer, counted only as far as someone asks.

/// Where counting has got to in the reader's buffer.
#[derive(Debug, Clone)]
pub(crate) struct Lines {
    /// Offset in the buffer up to which newlines are counted.
    counted_to: usize,
    /// The 1-based line at `counted_to`.
    line: u64,
}

impl Default for Lines {
    fn default() -> Self {
        Lines {
            counted_to: 0,
            line: 1,
        }
    }
}

impl Lines {
    /// The line of byte `at` of `buf` (offsets only move forward: an earlier one gets the line
    /// counted so far).
    pub fn at(&mut self, buf: &[u8], at: usize) -> u64 {
        let at = at.min(buf.len());
        if at > self.counted_to {
            let n = memchr::memchr_iter(b'\n', &buf[self.counted_to..at]).count();
            self.line += n as u64;
            self.counted_to = at;
        }
        self.line
    }

    /// The buffer's first `n` bytes are dropped: counts them first.
    pub fn drop_front(&mut self, buf: &[u8], n: usize) {
        self.at(buf, n);
        self.counted_to -= n.min(self.counted_to);
    }

    /// Adds `n` lines of text that went past the buffer (skipped without being kept).
    pub fn add(&mut self, n: u64) {
        self.line += n;
    }
}
