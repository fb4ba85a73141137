//! What the file list shows for one input.

use crate::sniff::InputKind;
use model::Diagnostic;

/// One input's summary: kind, version, a few headline counts, and every problem found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileReport {
    pub name: String,
    pub kind: InputKind,
    pub bytes: u64,
    /// NCCL version (logs) or export schema version (SQLite).
    pub version: Option<String>,
    /// Headline counts, in display order (`NCCL operations` → `1234`).
    pub facts: Vec<(String, String)>,
    pub diagnostics: Vec<Diagnostic>,
    /// Set when the file could not be used at all.
    pub error: Option<String>,
    /// [`crate::records_digest`] of everything read from the file (equal across engines).
    pub digest: Option<String>,
}

impl FileReport {
    pub fn failed(name: &str, kind: InputKind, bytes: u64, error: String) -> Self {
        FileReport {
            name: name.to_string(),
            kind,
            bytes,
            version: None,
            facts: Vec::new(),
            diagnostics: Vec::new(),
            error: Some(error),
            digest: None,
        }
    }

    /// The value of a headline count, if present.
    pub fn fact(&self, key: &str) -> Option<&str> {
        self.facts
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }
}
