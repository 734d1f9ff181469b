//! Problems found in a script, reported as `path:line:col: error: …` with a hint.

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
