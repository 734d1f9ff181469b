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
    /// A blocking command (`BLPOP`, `BZPOPMIN`, `BLMOVE`, …) outlived the connection's
    /// response timeout: the client stopped waiting while the server still blocks, so
    /// an item that arrives later is popped and its reply thrown away. Give blocking
    /// commands a connection whose response timeout is longer than theirs (see
    /// [`fifo_queue`](crate::fifo_queue#blocking-pops-and-connection-timeouts)).
    ResponseTimeout {
        /// The blocking command (`BLPOP`).
        command: String,
        /// The client's timeout error.
        source: redis::RedisError,
    },
    /// The server refused a [`Batch::transaction`](crate::Batch::transaction)'s `MULTI`
    /// (a user without the `multi` permission), and then ran its commands one by one,
    /// outside any transaction, as they came: some or all of them may have been applied,
    /// and other clients' commands may have run in between. Nothing was sent again.
    /// Grant the user `+multi +exec` (see "ACL permissions" in the README).
    RanOutsideTransaction {
        /// The server's reply to `MULTI`.
        refused: redis::RedisError,
        /// How many commands ran outside the transaction (the operations and the
        /// `SCRIPT LOAD`s of their scripts).
        commands: usize,
    },
    /// A [`work_queue::Worker`](crate::work_queue::Worker) set to
    /// [`OnEviction::Refuse`](crate::work_queue::OnEviction::Refuse) found its server's
    /// `maxmemory-policy` evicting any key (`allkeys-lru`, …): the server may evict a
    /// queue's records and lose its jobs silently. Nothing was taken.
    EvictingServer {
        /// The server's `maxmemory-policy`.
        policy: String,
    },
    /// Redis, the connection or the reply failed: an I/O error, a server error such as
    /// `WRONGTYPE`, or a reply that did not decode to the expected type. Its `Display` is
    /// redis-rs's own, which includes the cause (an I/O error's text).
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
            Error::ResponseTimeout { command, .. } => write!(
                f,
                "the connection stopped waiting for the reply of {command} before the command's \
                 own timeout, and an item it pops later will be lost: give blocking commands a \
                 connection whose response timeout is longer than theirs (see \"Blocking pops and \
                 connection timeouts\" in the fifo_queue docs)"
            ),
            Error::RanOutsideTransaction { refused, commands } => write!(
                f,
                "the server refused MULTI ({refused}), so the transaction's {commands} commands \
                 ran one by one, outside a transaction: any of them may have been applied, and \
                 nothing was sent again; grant the user `+multi +exec` (see \"ACL permissions\" \
                 in the README)"
            ),
            Error::EvictingServer { policy } => write!(
                f,
                "the server's maxmemory-policy is {policy}, which may evict a queue's keys and \
                 lose its jobs silently: set it to noeviction (or a volatile-* policy), or run \
                 the worker with OnEviction::Warn"
            ),
            // Transparent: what redis-rs says, once; its own source chain follows.
            Error::Redis(err) => fmt::Display::fmt(err, f),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            // redis-rs's message already includes its own cause (an I/O error's text), so
            // handing that cause on would print it twice: the field holds it.
            Error::ResponseTimeout { source, .. } => Some(source),
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

#[cfg(test)]
mod tests {
    use std::error::Error as _;

    use super::*;

    /// Every message appears once in the chain that `anyhow` and friends print: the
    /// Redis variant shows redis-rs's message, which already holds its cause.
    #[test]
    fn a_chain_says_each_thing_once() {
        let io = std::io::Error::new(std::io::ErrorKind::ConnectionReset, "peer reset");
        let err = Error::from(redis::RedisError::from(io));
        let mut chain = vec![err.to_string()];
        let mut next = err.source();
        while let Some(cause) = next {
            chain.push(cause.to_string());
            next = cause.source();
        }
        for (i, line) in chain.iter().enumerate() {
            for later in &chain[i + 1..] {
                assert!(!line.contains(later.as_str()), "{chain:?}");
            }
        }
        assert!(chain[0].contains("peer reset"), "{chain:?}");
    }
}
