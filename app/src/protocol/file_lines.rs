//! A file's lines around an evidence line (`file:line`), as the page asks the worker for them
//! ([`FileLinesAsk`]) and the worker answers ([`FileLines`]): the worker holds the dropped
//! files' handles and reads only what it needs, off the page's thread.

use serde::{Deserialize, Serialize};

/// Page → worker: the lines of file `path` (as the session names it) around `line`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FileLinesAsk {
    pub path: String,
    pub line: u64,
}

/// Worker → page: lines `first..` of `path` around `line`, each as text (clipped), or why
/// they could not be read.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct FileLines {
    pub path: String,
    pub line: u64,
    /// The number of `lines[0]`.
    pub first: u64,
    pub lines: Vec<String>,
    pub error: Option<String>,
}

impl FileLines {
    /// The text of line `n`, if it was read.
    pub fn text(&self, n: u64) -> Option<&str> {
        let i = n.checked_sub(self.first)?;
        self.lines.get(usize::try_from(i).ok()?).map(String::as_str)
    }
}
