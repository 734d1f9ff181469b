//! The parsed form of a script: what the header declares, checked against the body, and
//! the rules every stage reads it by (names, integer ranges, error codes).

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
    pub shared: Vec<SharedFile>,
}

/// The name of a file of shared helpers.
pub const SHARED_FILE_NAME: &str = "_shared.lua";

/// A `_shared.lua` file as read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SharedFile {
    /// The path shown in diagnostics and in the scripts' marker line, relative to the
    /// scripts folder as given (`scripts/work_queue/_shared.lua`).
    pub path: String,
    /// The family it serves, or `None` for the one at the top of the folder.
    pub family: Option<String>,
    /// Its text.
    pub source: String,
}

impl SharedFile {
    /// Its path within the scripts folder, which the scripts it is pasted into name, so
    /// that they read the same wherever the folder is: `work_queue/_shared.lua`, or
    /// `_shared.lua` for the folder's own.
    pub fn name(&self) -> String {
        match &self.family {
            Some(family) => format!("{family}/{SHARED_FILE_NAME}"),
            None => SHARED_FILE_NAME.to_string(),
        }
    }
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

impl Arg {
    /// The range a numeric argument accepts: the declared one, or its type's.
    pub(crate) fn range(&self) -> (i64, i64) {
        match self.rule {
            Rule::Range { min, max } => (min, max),
            _ => full_range(self.ty),
        }
    }

    /// Whether an integer argument reaches the script's body as a Lua number (its range
    /// is within ±(2^53 - 1)) rather than as its canonical decimal text.
    pub fn binds_number(&self) -> bool {
        let (min, max) = self.range();
        is_exact(min, max)
    }

    /// Whether the input checks accept `text` as a value of this argument (a `@default`
    /// is checked with it at build time): the same rules, in Rust.
    pub(crate) fn accepts(&self, text: &str) -> bool {
        if self.optional && text.is_empty() {
            return true;
        }
        match (&self.ty, &self.rule) {
            (_, Rule::NonEmpty) => !text.is_empty(),
            (_, Rule::OneOf(options)) => options.iter().any(|o| o == text),
            (_, Rule::Length { min, max }) => {
                text.len() >= *min as usize && max.is_none_or(|max| text.len() <= max as usize)
            }
            (_, Rule::Hex { digits }) => {
                text.len() == *digits as usize && text.bytes().all(|b| b.is_ascii_hexdigit())
            }
            (ArgType::String | ArgType::Bytes | ArgType::Json, _) => true,
            (ArgType::Bool, _) => text == "1" || text == "0",
            // Decimal text of a finite number (the block's rule has more to it; a default is
            // written as a plain number).
            (ArgType::Float, _) => {
                text.bytes()
                    .all(|b| b.is_ascii_digit() || b"-.eE+".contains(&b))
                    && text.parse::<f64>().is_ok_and(f64::is_finite)
            }
            (ArgType::Int | ArgType::Uint | ArgType::Ms, _) => {
                let (min, max) = self.range();
                let digits = text.strip_prefix('-').unwrap_or(text);
                let canonical = text == "0"
                    || (!digits.is_empty()
                        && !digits.starts_with('0')
                        && digits.bytes().all(|b| b.is_ascii_digit()));
                canonical && text.parse::<i64>().is_ok_and(|n| (min..=max).contains(&n))
            }
        }
    }
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

/// The error code of a bad key or argument count.
pub const BAD_ARGS: &str = "BAD_ARGS";

/// The error code of a key that does not follow its template.
pub const BAD_KEYS: &str = "BAD_KEYS";

/// The error code a bad value of argument `arg` gets: `BAD_` and its name in upper case.
pub fn error_code(arg: &str) -> String {
    format!("BAD_{}", arg.to_ascii_uppercase())
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

/// The longest key or argument name.
pub(crate) const MAX_NAME: usize = 32;

/// The largest integer Lua's numbers (doubles) hold exactly, and its negation.
pub(crate) const MAX_EXACT: i64 = (1 << 53) - 1;

/// Whether a range holds only integers Lua's numbers hold exactly.
pub(crate) fn is_exact(min: i64, max: i64) -> bool {
    (-MAX_EXACT..=MAX_EXACT).contains(&min) && (-MAX_EXACT..=MAX_EXACT).contains(&max)
}

/// What a type holds when no range is declared.
pub(crate) fn full_range(ty: ArgType) -> (i64, i64) {
    match ty {
        ArgType::Uint => (0, i64::MAX),
        ArgType::Ms => (0, MAX_EXACT),
        _ => (i64::MIN, i64::MAX),
    }
}

/// Strict and reserved Rust keywords (2024 edition) that are also snake_case; none can name
/// a parameter without `r#`, and `self`/`super`/`crate` not even with it.
pub(crate) fn is_rust_keyword(name: &str) -> bool {
    const RUST_KEYWORDS: &str = "\
        abstract as async await become box break const continue crate do dyn else enum \
        extern false final fn for gen if impl in let loop macro match mod move mut override \
        priv pub ref return self static struct super trait true try type typeof unsafe \
        unsized use virtual where while yield";
    RUST_KEYWORDS.split_whitespace().any(|k| k == name)
}

/// `[a-z][a-z0-9_]*`
pub(crate) fn is_snake(s: &str) -> bool {
    let mut chars = s.chars();
    chars.next().is_some_and(|c| c.is_ascii_lowercase())
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
}

/// `[A-Z][A-Z0-9_]*`
pub(crate) fn is_upper_snake(s: &str) -> bool {
    let mut chars = s.chars();
    chars.next().is_some_and(|c| c.is_ascii_uppercase())
        && chars.all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
}
