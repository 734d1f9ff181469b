//! The parsed form of a script: what the header declares, checked against the body.

/// One `.lua` file under the scripts folder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScriptFile {
    /// The family: the name of the folder the script sits in (`identity_lock`).
    pub family: String,
    /// The operation: the file name without `.lua` (`release`).
    pub op: String,
    /// The path shown in diagnostics and docs, with `/` separators (`scripts/identity_lock/release.lua`).
    pub path: String,
    /// The file's text, exactly as read.
    pub source: String,
}

/// A script whose header parsed and matched its body.
#[derive(Debug, Clone, PartialEq)]
pub struct Script {
    /// The file it came from.
    pub file: ScriptFile,
    /// What its header declares.
    pub header: Header,
}

/// The header: the optional `#!lua flags=` line and the `---` block.
#[derive(Debug, Clone, PartialEq)]
pub struct Header {
    /// Flags from the `#!lua flags=a,b` line, in the order written; empty without one.
    pub flags: Vec<String>,
    /// The first `---` line: one sentence.
    pub summary: String,
    /// The prose lines between the summary and the first tag, blank lines kept as `""`,
    /// with leading and trailing blank lines removed.
    pub description: Vec<String>,
    /// `@key` entries, in `KEYS` order.
    pub keys: Vec<Key>,
    /// `@arg` entries, in `ARGV` order.
    pub args: Vec<Arg>,
    /// The `@return` entry.
    pub returns: Return,
    /// `@error` entries, in the order written.
    pub errors: Vec<ErrorCode>,
    /// The `@clock` entry, if any.
    pub clock: Option<Clock>,
    /// The `@complexity` text (`O(1)`).
    pub complexity: String,
}

/// `@key <name> <doc>`; `<name>...` marks the last key variadic.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Key {
    /// snake_case name, without the `...`.
    pub name: String,
    /// What the key holds.
    pub doc: String,
    /// Whether this (last) key takes any number of keys.
    pub variadic: bool,
}

/// `@arg <name> <type> <doc>`; `<type>...` marks the last argument variadic.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Arg {
    /// snake_case name.
    pub name: String,
    /// The declared type.
    pub ty: ArgType,
    /// What the argument means.
    pub doc: String,
    /// Whether this (last) argument takes any number of values.
    pub variadic: bool,
}

/// The types an `@arg` may declare.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ArgType {
    /// `string`: UTF-8 text.
    String,
    /// `bytes`: any bytes.
    Bytes,
    /// `int`: a signed 64-bit integer.
    Int,
    /// `uint`: an unsigned 64-bit integer.
    Uint,
    /// `float`: a 64-bit float.
    Float,
    /// `bool`: sent as `1` or `0`.
    Bool,
    /// `ms`: a duration, sent as whole milliseconds.
    Ms,
    /// `json`: a serde `Serialize` value, sent as JSON text.
    Json,
}

/// `@return <type> <doc>`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Return {
    /// The declared type.
    pub ty: ReturnType,
    /// What the reply means.
    pub doc: String,
}

/// The types a `@return` may declare.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReturnType {
    /// `nil`
    Nil,
    /// `bool`
    Bool,
    /// `int`
    Int,
    /// `int?`
    OptInt,
    /// `float` (Lua returns it as a string)
    Float,
    /// `float?`
    OptFloat,
    /// `string`
    String,
    /// `string?`
    OptString,
    /// `bytes?`
    OptBytes,
    /// `[string]`
    Strings,
    /// `[bytes]`
    BytesList,
    /// `[int]`
    Ints,
    /// `[(string, float)]`: a flat array of member, score pairs.
    ScoredStrings,
    /// `(t1, t2, …)`: a fixed-size array whose elements are scalar types
    /// (`bool`, `int`, `int?`, `float`, `float?`, `string`, `string?`, `bytes?`).
    Tuple(Vec<ReturnType>),
}

/// `@error <CODE> <doc>`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ErrorCode {
    /// UPPER_SNAKE code: the first word of the error reply.
    pub code: String,
    /// When the script raises it.
    pub doc: String,
}

/// `@clock server|caller`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Clock {
    /// The script reads `redis.call('TIME')`.
    Server,
    /// The caller passes the time as the `now` argument.
    Caller,
}
