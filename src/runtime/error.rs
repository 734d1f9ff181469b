//! The crate's one error type.

use std::fmt;
use std::time::Duration;

/// What a `redis-patterns` operation can fail with.
///
/// ```
/// use redis_patterns::{Error, counter::HashCounter};
///
/// // A `Client` connects only when a command is sent, and an op whose input was
/// // rejected sends none: this runs without a server.
/// let mut client = redis::Client::open("redis://127.0.0.1/")?;
/// let likes = HashCounter::new("post:7", "likes")?;
/// match likes.decrease(i64::MIN).run(&mut client) {
///     Err(Error::InvalidInput { what, .. }) => assert_eq!(what, "n"),
///     other => panic!("expected InvalidInput, got {other:?}"),
/// }
/// # Ok::<(), redis_patterns::Error>(())
/// ```
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum Error {
    /// The input was rejected before anything was sent to Redis.
    InvalidInput {
        /// The parameter at fault (`ttl`, `key`, `token`, …).
        what: &'static str,
        /// Why it was rejected, and what is accepted instead.
        why: String,
    },
    /// A script refused its input with one of the error codes its header declares
    /// (`@error`). Nothing was written.
    Script {
        /// The script's name (`identity_lock/release`).
        script: &'static str,
        /// Its file, relative to the root of the crate that generated its wrapper
        /// (`scripts/identity_lock/release.lua`), where its `@error` lines say what the
        /// code means.
        path: &'static str,
        /// The declared code (`BAD_TOKEN`).
        code: String,
        /// The rest of the error reply.
        message: String,
    },
    /// A counter with [`Overflow::Fail`](crate::counter::Overflow::Fail) refused a change
    /// that would leave its range. Nothing was written.
    Overflow {
        /// The counter's key.
        key: String,
        /// The slot and type, as BITFIELD spells them (`u8 #3`).
        slot: String,
    },
    /// A bounded wait ran out: another client was still at work when the time was up
    /// (for [`Cache::get_or_compute`](crate::cache::Cache::get_or_compute): another client
    /// held the computing marker for the whole wait).
    Timeout {
        /// What was waited for (`cache entry "page:1"`).
        what: String,
        /// How long the caller waited before giving up.
        waited: Duration,
    },
    /// Redis, the connection or the reply failed: an I/O error, a server error such as
    /// `WRONGTYPE`, or a reply that did not decode to the expected type.
    Redis(redis::RedisError),
}

impl Error {
    /// The error's code, when it has one: a script's declared code (`BAD_TTL`) or the
    /// server's (`WRONGTYPE`, `NOSCRIPT`, …).
    pub fn code(&self) -> Option<&str> {
        match self {
            Error::Script { code, .. } => Some(code),
            Error::Redis(err) => err.code(),
            _ => None,
        }
    }

    /// A reply that is not what the operation expects (a client-side check, not a server
    /// error reply).
    pub(crate) fn unexpected_reply(what: &'static str, detail: impl Into<String>) -> Self {
        Error::Redis(redis::RedisError::from((
            redis::ErrorKind::UnexpectedReturnType,
            what,
            detail.into(),
        )))
    }

    pub(crate) fn invalid(what: &'static str, why: impl Into<String>) -> Self {
        Error::InvalidInput {
            what,
            why: why.into(),
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::InvalidInput { what, why } => write!(f, "invalid `{what}`: {why}"),
            Error::Script {
                script,
                path,
                code,
                message,
            } => write!(
                f,
                "script `{script}` refused its input: {code} {message} (see the @error lines of {path})"
            ),
            Error::Overflow { key, slot } => write!(
                f,
                "counter `{key}` {slot} would overflow, so nothing was written; use a wider type or Overflow::Sat"
            ),
            Error::Timeout { what, waited } => write!(
                f,
                "gave up waiting for {what} after {waited:?}: another client was still computing it; \
                 raise the max wait above the computation's usual time, and keep it above the lease \
                 so that a crashed client's claim runs out while the others still wait"
            ),
            Error::Redis(err) => write!(f, "redis: {err}"),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Redis(err) => Some(err),
            _ => None,
        }
    }
}

impl From<redis::RedisError> for Error {
    fn from(err: redis::RedisError) -> Self {
        Error::Redis(err)
    }
}

impl From<redis::ParsingError> for Error {
    fn from(err: redis::ParsingError) -> Self {
        Error::Redis(err.into())
    }
}

/// `Result` with the crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
