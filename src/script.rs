//! What the crate knows about each script: its header, source and SHA1, all fixed at build
//! time by `build.rs`.

/// One script under `scripts/`, with everything its header declares.
///
/// Every script of the crate has a `static` of this type in [`crate::scripts`], next to
/// the typed function that calls it. [`crate::catalog`] lists them all.
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

/// A `@key` or `@arg` line.
///
/// ```
/// use redis_patterns::scripts::identity_lock::EXTEND;
///
/// assert_eq!(EXTEND.keys[0].name, "lock");
/// assert_eq!(EXTEND.keys[0].ty, ""); // keys have no type
/// let names: Vec<&str> = EXTEND.args.iter().map(|arg| arg.name).collect();
/// assert_eq!(names, ["token", "ttl"]);
/// assert_eq!(EXTEND.args[1].ty, "ms");
/// assert!(!EXTEND.args[1].variadic);
/// ```
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
/// assert_eq!(codes, ["BAD_TOKEN", "BAD_TTL"]);
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
