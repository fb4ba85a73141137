//! Data-quality findings shown to the user. A bad line is a diagnostic, never a panic.

/// How much a finding matters to the user.
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Severity {
    /// Worth knowing (an unrecognised but harmless line).
    Info,
    /// Data was skipped or may be wrong (a garbled line, a duplicate).
    Warning,
    /// A whole input or table could not be used.
    Error,
}

/// One finding about one input, with the line (1-based) when it is about a text line.
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagnostic {
    pub path: String,
    /// 1-based line number in a text input; 0 when the finding is not about one line.
    pub line: u64,
    pub severity: Severity,
    pub message: String,
}

impl Diagnostic {
    pub fn new(path: &str, line: u64, severity: Severity, message: impl Into<String>) -> Self {
        Diagnostic {
            path: path.to_string(),
            line,
            severity,
            message: message.into(),
        }
    }

    pub fn warning(path: &str, line: u64, message: impl Into<String>) -> Self {
        Self::new(path, line, Severity::Warning, message)
    }

    pub fn error(path: &str, line: u64, message: impl Into<String>) -> Self {
        Self::new(path, line, Severity::Error, message)
    }
}

impl std::fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.line > 0 {
            write!(f, "{}:{}: {}", self.path, self.line, self.message)
        } else {
            write!(f, "{}: {}", self.path, self.message)
        }
    }
}
