//! What the crate knows about each script: its header, source and SHA1, all fixed at build
//! time by `build.rs`.

/// One script under `scripts/`, with everything its header declares.
///
/// Every script of the crate has a `static` of this type in [`crate::scripts`], next to
/// the typed function that calls it. [`crate::catalog`] lists them all.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Script {
    /// `<family>/<op>`, such as `identity_lock/release`.
    pub name: &'static str,
    /// The file, relative to the crate root: `scripts/identity_lock/release.lua`.
    pub path: &'static str,
    /// The hex SHA1 of [`source`](Self::source), as `EVALSHA` and `SCRIPT LOAD` use it.
    pub sha1: &'static str,
    /// The script's text, byte for byte.
    pub source: &'static str,
    /// The flags of its `#!lua flags=` line; empty when it has none.
    pub flags: &'static [&'static str],
    /// The header's first line.
    pub summary: &'static str,
    /// The header's prose after the summary (lines joined with `\n`).
    pub description: &'static str,
    /// `@key` lines, in `KEYS` order.
    pub keys: &'static [Param],
    /// `@arg` lines, in `ARGV` order.
    pub args: &'static [Param],
    /// The `@return` line.
    pub returns: Returns,
    /// `@error` lines: every error reply the script can raise.
    pub errors: &'static [ErrorDoc],
    /// The `@clock` line, for scripts that read the current time.
    pub clock: Option<Clock>,
    /// The `@complexity` line.
    pub complexity: &'static str,
}

impl Script {
    /// Whether the script writes nothing (`#!lua flags=no-writes`). Such scripts run with
    /// `EVALSHA_RO`, so they may run on replicas.
    pub fn is_read_only(&self) -> bool {
        self.flags.contains(&"no-writes")
    }

    /// Whether `code` is one of the error codes this script declares.
    pub fn declares_error(&self, code: &str) -> bool {
        self.errors.iter().any(|e| e.code == code)
    }
}

/// A `@key` or `@arg` line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Param {
    /// Its name, as the script's local and the Rust parameter are called.
    pub name: &'static str,
    /// The header type (`string`, `ms`, …); empty for keys.
    pub ty: &'static str,
    /// Whether it takes any number of values (the last `@key`/`@arg` only).
    pub variadic: bool,
    /// What it is.
    pub doc: &'static str,
}

/// The `@return` line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Returns {
    /// The header type (`bool`, `int?`, `[string]`, …).
    pub ty: &'static str,
    /// What the reply means.
    pub doc: &'static str,
}

/// An `@error` line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ErrorDoc {
    /// The code: the first word of the error reply.
    pub code: &'static str,
    /// When the script raises it.
    pub doc: &'static str,
}

/// Where a script's notion of "now" comes from (`@clock`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Clock {
    /// The server's `TIME`: one clock for every client.
    Server,
    /// A `now` argument from the caller.
    Caller,
}
