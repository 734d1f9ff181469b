//! Problems found in a script, reported as `path:line:col: error: …` with a hint, and
//! where they are.

use std::fmt;

/// One problem in one script.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Diagnostic {
    /// The file's display path, starting with the scripts folder as the app names it
    /// (`sql/inventory/reserve.lua`).
    pub path: String,
    /// 1-based line.
    pub line: usize,
    /// 1-based column, counted in characters.
    pub col: usize,
    /// What is wrong.
    pub message: String,
    /// How to fix it.
    pub hint: String,
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}:{}:{}: error: {}\n  = hint: {}",
            self.path, self.line, self.col, self.message, self.hint
        )
    }
}

/// Collects the diagnostics of one file.
pub(crate) struct Report<'a> {
    path: &'a str,
    pub(crate) diagnostics: Vec<Diagnostic>,
}

impl<'a> Report<'a> {
    pub(crate) fn new(path: &'a str) -> Self {
        Report {
            path,
            diagnostics: Vec::new(),
        }
    }

    pub(crate) fn error(
        &mut self,
        line: usize,
        col: usize,
        message: impl Into<String>,
        hint: impl Into<String>,
    ) {
        self.diagnostics.push(Diagnostic {
            path: self.path.to_string(),
            line,
            col,
            message: message.into(),
            hint: hint.into(),
        });
    }
}

/// A position in the file: 1-based line and character column.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Pos {
    pub line: usize,
    pub col: usize,
}
