//! The parsed form of a script: what the header declares, checked against the body.

/// One `.lua` file under the scripts folder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScriptFile {
    /// The family: the name of the folder the script sits in (`identity_lock`).
    pub family: String,
    /// The operation: the file name without `.lua` (`release`).
    pub op: String,
    /// The path shown in diagnostics, docs and the generated `Script::path`: the folder as
    /// given to [`Config::read`](crate::Config::read), then `<family>/<op>.lua`, with `/`
    /// separators (`scripts/identity_lock/release.lua`, `sql/inventory/reserve.lua`).
    pub path: String,
    /// The file's text, exactly as read.
    pub source: String,
    /// The files of shared helpers this script may use: the folder's `_shared.lua`, then
    /// its family's, those that exist.
    pub shared: Vec<crate::shared::SharedFile>,
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
    /// `@uses` entries: the shared helpers the script calls, by name, in the order written.
    pub uses: Vec<String>,
    /// `@default` entries: what the Rust API fills in where the app gives nothing, in the
    /// order written.
    pub defaults: Vec<Preset>,
}

/// `@default <name> <value> <doc>`: the value the Rust API gives an argument, or a key
/// template's placeholder, when the app names none, so that an app in another language
/// shares data with a Rust app built with the defaults.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Preset {
    /// The argument, or the placeholder.
    pub name: String,
    /// The value.
    pub value: PresetValue,
    /// Where the Rust API fills it in (`GcraLimiter::new`).
    pub doc: String,
}

/// What a [`Preset`] fills in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PresetValue {
    /// This text, as the argument is sent (`GcraLimiter`, `30000`).
    Text(String),
    /// `=<arg>`: the value of that argument (`burst` is `=count`).
    SameAs(String),
}

/// `@key <name> <type> [<count>] [<template>] <doc>`; `<name>...` marks the last key
/// variadic.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Key {
    /// snake_case name, without the `...`.
    pub name: String,
    /// The Redis type the key holds.
    pub ty: KeyType,
    /// What the key holds.
    pub doc: String,
    /// Whether this (last) key takes any number of keys.
    pub variadic: bool,
    /// How many keys a variadic key takes (`1..=1000`); `0..` when not declared. Always
    /// exactly one for a key that is not variadic.
    pub count: Count,
    /// How the pattern names the key from its parameters (`{<name>}:waiting`), when the
    /// header says.
    pub template: Option<KeyTemplate>,
}

/// A key's name template, such as `{<name>}:waiting` or `recent:{<name>:<severity>}`.
///
/// Literal text, `<param>` placeholders (the parameter's value, as it is) and at most one
/// `{…}` group per form: the cluster hash tag. After the values are put in, the group's
/// content is wrapped in `{}`, unless it already holds a hash tag (a `{` followed, later,
/// by a `}`, with something between), in which case it stands as it is; a content with a
/// `}` but no hash tag, one whose hash tag begins in one value and ends in another, and an
/// empty value, are refused. Every key of one call takes the
/// same group, so they share one slot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyTemplate {
    /// The template as the header writes it.
    pub text: String,
    /// Its forms, in order: one, or for a variadic key whose items take several forms,
    /// each form of `a|b`.
    pub forms: Vec<KeyForm>,
}

impl KeyTemplate {
    /// The parameters of every form, each once, in order of first appearance.
    pub fn params(&self) -> Vec<&str> {
        let mut params = Vec::new();
        for form in &self.forms {
            for param in form.params() {
                if !params.contains(&param) {
                    params.push(param);
                }
            }
        }
        params
    }
}

/// One form of a [`KeyTemplate`]: `{<name>}:waiting`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyForm {
    /// The form as written.
    pub text: String,
    /// Its pieces, in order.
    pub parts: Vec<KeyPart>,
}

impl KeyForm {
    /// Its parameters, each once, in order of first appearance.
    pub fn params(&self) -> Vec<&str> {
        let mut params: Vec<&str> = Vec::new();
        let flat = self.parts.iter().flat_map(|part| match part {
            KeyPart::HashTag(inner) => inner.iter().collect::<Vec<_>>(),
            other => vec![other],
        });
        for part in flat {
            if let KeyPart::Param(name) = part
                && !params.contains(&name.as_str())
            {
                params.push(name);
            }
        }
        params
    }

    /// The `{…}` group as written (`{<name>}`), if the form has one.
    pub fn hash_tag(&self) -> Option<String> {
        self.parts.iter().find_map(|part| match part {
            KeyPart::HashTag(inner) => Some(format!("{{{}}}", spell(inner))),
            _ => None,
        })
    }
}

/// A piece of a [`KeyForm`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeyPart {
    /// Literal text.
    Text(String),
    /// `<name>`: the parameter's value.
    Param(String),
    /// `{…}`: the hash tag, of literal text and placeholders (never another group).
    HashTag(Vec<KeyPart>),
}

/// Parts as the header writes them.
pub(crate) fn spell(parts: &[KeyPart]) -> String {
    parts
        .iter()
        .map(|part| match part {
            KeyPart::Text(text) => text.clone(),
            KeyPart::Param(name) => format!("<{name}>"),
            KeyPart::HashTag(inner) => format!("{{{}}}", spell(inner)),
        })
        .collect()
}

/// The Redis types a `@key` may declare: what `TYPE key` answers when the key exists.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyType {
    /// `string`
    String,
    /// `hash`
    Hash,
    /// `list`
    List,
    /// `set`
    Set,
    /// `zset`
    Zset,
    /// `stream`
    Stream,
    /// `any`: a key the script only deletes, whatever type it holds.
    Any,
}

impl KeyType {
    /// The header's spelling, which is also the name `TYPE` answers with (but for `any`).
    pub fn name(self) -> &'static str {
        match self {
            KeyType::String => "string",
            KeyType::Hash => "hash",
            KeyType::List => "list",
            KeyType::Set => "set",
            KeyType::Zset => "zset",
            KeyType::Stream => "stream",
            KeyType::Any => "any",
        }
    }
}

/// `@arg <name> <type>[?][...] [<constraint>...] <doc>`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Arg {
    /// snake_case name.
    pub name: String,
    /// The declared type.
    pub ty: ArgType,
    /// `<type>?`: an empty string stands for "none" (an `Option` in Rust).
    pub optional: bool,
    /// What the values must be: a range, non-empty, one of a list.
    pub rule: Rule,
    /// What the argument means.
    pub doc: String,
    /// Whether this (last) argument takes any number of values.
    pub variadic: bool,
    /// How many values a variadic argument takes; exactly one otherwise.
    pub count: Count,
}

/// What an argument's values must be, besides their type's own form.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Rule {
    /// Any value of the type.
    Any,
    /// `non-empty`: a string or bytes of at least one byte.
    NonEmpty,
    /// `A..=B`: an integer (or whole milliseconds) from `min` to `max`, both included.
    Range {
        /// The smallest value accepted.
        min: i64,
        /// The largest value accepted.
        max: i64,
    },
    /// `a|b|c`: one of these strings.
    OneOf(Vec<String>),
    /// `len:A..` or `len:A..=B`: a string or bytes of at least `min` bytes, and at most
    /// `max` when given (a token long enough to hold 128 random bits: `len:16..`).
    Length {
        /// The fewest bytes.
        min: u32,
        /// The most bytes; `None` for no bound.
        max: Option<u32>,
    },
    /// `hex:N`: exactly `digits` hexadecimal digits, of either case (a 128-bit token:
    /// `hex:32`).
    Hex {
        /// How many digits.
        digits: u32,
    },
}

/// How many values a variadic key or argument takes, both ends included.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Count {
    /// The fewest.
    pub min: u32,
    /// The most; `None` for no bound.
    pub max: Option<u32>,
}

impl Count {
    /// Exactly one: a key or argument that is not variadic.
    pub const ONE: Count = Count {
        min: 1,
        max: Some(1),
    };
    /// Any number, none included: a variadic with no declared count.
    pub const ANY: Count = Count { min: 0, max: None };
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
    /// `uint`: an integer from 0 to 2^63 - 1 (what Redis stores as a signed 64-bit one).
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
    /// `uint`: an integer reply that is never negative (a count, a length).
    Uint,
    /// `uint?`
    OptUint,
    /// `decimal`: a signed 64-bit integer sent as a decimal string, exact beyond 2^53.
    Decimal,
    /// `decimal?`
    OptDecimal,
    /// `float` (Lua returns it as a string)
    Float,
    /// `float?`
    OptFloat,
    /// `string`
    String,
    /// `string?`
    OptString,
    /// `bytes`
    Bytes,
    /// `bytes?`
    OptBytes,
    /// `[string]`
    Strings,
    /// `[bytes]`
    BytesList,
    /// `[int]`
    Ints,
    /// `[decimal]`
    Decimals,
    /// `[[decimal]]`: an array of arrays, such as the rows of a matrix.
    DecimalRows,
    /// `[(t1, t2, …)]`: an array of rows, each an array of these scalar types, such as
    /// `[(string, float)]` for members and their scores.
    Rows(Vec<ReturnType>),
    /// `(t1, t2, …)`: a fixed-size array whose elements are scalar types (`bool`, `int`,
    /// `int?`, `uint`, `uint?`, `decimal`, `decimal?`, `float`, `float?`, `string`,
    /// `string?`, `bytes`, `bytes?`), lists of them (`[string]`, `[bytes]`, `[int]`,
    /// `[decimal]`) or rows of them (`[(string, bytes)]`): `(uint, [bytes])` is a cursor
    /// and a page of items.
    Tuple(Vec<ReturnType>),
    /// `(t1, t2, …)?`: such a tuple, or nil.
    OptTuple(Vec<ReturnType>),
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
