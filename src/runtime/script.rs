//! What the crate knows about each script: its header, source and SHA1, all fixed at build
//! time by `build.rs`.

/// One script under `scripts/`, with everything its header declares.
///
/// Every script of the crate has a `static` of this type in [`crate::scripts`], next to
/// the typed function that calls it. [`crate::runtime::catalog`] lists them all.
///
/// ```
/// use redis_patterns::{catalog, identity_lock::IdentityLock, scripts::identity_lock::RELEASE};
///
/// assert_eq!(RELEASE.path, "scripts/identity_lock/release.lua");
/// assert!(!RELEASE.is_read_only()); // it deletes: EVALSHA, not EVALSHA_RO
/// assert!(RELEASE.declares_error("BAD_TOKEN"));
/// assert_eq!(catalog::find("identity_lock/release"), Some(&RELEASE));
///
/// // An op names the script it calls; building it sends nothing.
/// let op = IdentityLock::new("report:lock").release("secret");
/// assert_eq!(op.script(), Some(&RELEASE));
/// ```
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

/// A `@key` or `@arg` line: a name, a type, and what its values must be.
///
/// The generated function of a script checks every argument against these before any I/O
/// (failing with [`Error::InvalidInput`](crate::Error::InvalidInput)), and the script
/// checks them again with the same rules, so a caller in another language gets the same
/// answer (`BAD_ARGS`, `BAD_<NAME>`).
///
/// ```
/// use redis_patterns::{Rule, scripts::identity_lock::EXTEND};
///
/// assert_eq!(EXTEND.keys[0].name, "lock");
/// assert_eq!(EXTEND.keys[0].ty, "string"); // what the key holds
/// let names: Vec<&str> = EXTEND.args.iter().map(|arg| arg.name).collect();
/// assert_eq!(names, ["token", "ttl"]);
/// assert_eq!(EXTEND.args[0].rule, Rule::NonEmpty);
/// assert_eq!(EXTEND.args[1].ty, "ms");
/// assert_eq!(EXTEND.args[1].rule, Rule::Range { min: 1, max: 999_999_999_999_999 });
/// assert!(!EXTEND.args[1].variadic);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Param {
    /// Its name, as the script's local and the Rust parameter are called.
    pub name: &'static str,
    /// For an `@arg`, its header type without `?` or `...` (`string`, `ms`, …); for a
    /// `@key`, the Redis type it holds (`string`, `hash`, `zset`, …).
    pub ty: &'static str,
    /// `<type>?`: an empty string stands for none.
    pub optional: bool,
    /// Whether it takes any number of values (the last `@key`/`@arg` only).
    pub variadic: bool,
    /// How many values it takes: exactly one unless it is variadic.
    pub count: Count,
    /// What each value must be.
    pub rule: Rule,
    /// What it is.
    pub doc: &'static str,
}

/// What an argument's values must be, besides their type's form (the header's
/// constraint words).
///
/// Integers (`int`, `uint`, `ms`) are always decimal digits with an optional leading `-`
/// and no leading zero: the one rule for numbers, which every script applies the same way.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rule {
    /// Any value of the type.
    Any,
    /// `non-empty`.
    NonEmpty,
    /// `A..=B`: an integer (whole milliseconds for `ms`) from `min` to `max`, both included.
    Range {
        /// The smallest value accepted.
        min: i64,
        /// The largest value accepted.
        max: i64,
    },
    /// `a|b|c`: one of these strings.
    OneOf(&'static [&'static str]),
}

/// How many values a key or argument takes, both ends included.
///
/// ```
/// let union = redis_patterns::catalog::find("unique_counter/union_count").unwrap();
/// let counters = union.keys.last().unwrap();
/// assert!(counters.variadic);
/// assert_eq!((counters.count.min, counters.count.max), (1, Some(1000)));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Count {
    /// The fewest.
    pub min: u32,
    /// The most; `None` for no bound.
    pub max: Option<u32>,
}

/// The `@return` line.
///
/// ```
/// use redis_patterns::scripts::identity_lock::{LEASE, RELEASE};
///
/// assert_eq!(RELEASE.returns.ty, "bool");
/// assert_eq!(LEASE.returns.ty, "int?"); // nil when not held with the token
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Returns {
    /// The header type (`bool`, `int?`, `[string]`, …).
    pub ty: &'static str,
    /// What the reply means.
    pub doc: &'static str,
}

/// An `@error` line.
///
/// ```
/// let extend = redis_patterns::catalog::find("identity_lock/extend").unwrap();
/// let codes: Vec<&str> = extend.errors.iter().map(|e| e.code).collect();
/// // An error reply with one of these codes becomes `Error::Script { code, .. }`.
/// assert_eq!(codes, ["BAD_ARGS", "BAD_TOKEN", "BAD_TTL"]);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ErrorDoc {
    /// The code: the first word of the error reply.
    pub code: &'static str,
    /// When the script raises it.
    pub doc: &'static str,
}

/// Where a script's notion of "now" comes from (`@clock`).
///
/// ```
/// use redis_patterns::{Clock, catalog};
///
/// let gcra = catalog::find("rate_limiter/gcra").unwrap();
/// assert_eq!(gcra.clock, Some(Clock::Server)); // it reads the server's TIME
/// let release = catalog::find("identity_lock/release").unwrap();
/// assert_eq!(release.clock, None); // it never looks at the time
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Clock {
    /// The server's `TIME`: one clock for every client.
    Server,
    /// A `now` argument from the caller.
    Caller,
}
