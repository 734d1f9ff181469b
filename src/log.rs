//! Logs, newest first: the 2011 Redis Cookbook's list-based `Log` (`r/log/list_implement.py`).
//!
//! A log is one list; [`append`](Log::append) pushes on the left, so index 0 is the newest
//! entry and [`read`](Log::read) pages from the newest back. Every operation is one native
//! command, so there is no script here.
//!
//! | Cookbook | Here | Command |
//! |---|---|---|
//! | `Log(name)` | [`Log::new(name)`](Log::new) | |
//! | `append(content)` → length | [`append`](Log::append) | `LPUSH` |
//! | `read(start=0, stop=-1)` | [`read(start, stop)`](Log::read) | `LRANGE` |
//! | `length()` | [`length`](Log::length) | `LLEN` |
//! | `clear()` | [`clear`](Log::clear) → whether there was a log | `DEL` |
//! | `keep(size)` | [`keep(n)`](Log::keep): the newest `n` | `LTRIM name 0 n-1`; `DEL` for 0 |
//!
//! What differs from the cookbook, and why:
//!
//! - `keep(0)` empties the log. The cookbook sends `LTRIM name 0 -1`, which keeps
//!   everything: the opposite of what was asked.
//! - `read` takes both indexes (the cookbook's defaults are `0, -1`: the whole log).
//!   They are `LRANGE`'s: from 0 (newest), negative ones count from the oldest.
//! - Entries are binary-safe: `append` takes anything redis-rs sends as one argument, and
//!   `read` decodes into the type asked for (`read::<String>`, `read::<Vec<u8>>`).
//! - The cookbook's functions take a global `client=Redis()` default argument; here the
//!   connection is the caller's, as for every pattern.
//!
//! For a log that trims itself on every append, as Redis in Action's `log_recent` does,
//! run [`append`](Log::append) and [`keep`](Log::keep) in one
//! [`Batch::transaction`](crate::Batch::transaction).
//!
//! ```no_run
//! # fn demo() -> redis_patterns::Result<()> {
//! use redis_patterns::log::Log;
//!
//! let mut con = redis::Client::open("redis://127.0.0.1/")?.get_connection()?;
//! let log = Log::new("log:web")?;
//! log.append("GET /").run(&mut con)?;
//! log.append("GET /about").run(&mut con)?;
//! assert_eq!(log.read::<String>(0, 0).run(&mut con)?, ["GET /about"]);
//! log.keep(100).run(&mut con)?;
//! # Ok(()) }
//! ```

use redis::{FromRedisValue, ToRedisArgs};

use crate::runtime::input;
use crate::runtime::native;
use crate::runtime::op::Op;

/// A log in one list, newest entry first.
///
/// ```no_run
/// # fn demo() -> redis_patterns::Result<()> {
/// use redis_patterns::log::Log;
///
/// let mut con = redis::Client::open("redis://127.0.0.1/")?.get_connection()?;
/// let log = Log::new("log:deploys")?;
/// log.append("v1").run(&mut con)?;
/// assert_eq!(log.append("v2").run(&mut con)?, 2);
/// assert_eq!(log.read::<String>(0, -1).run(&mut con)?, ["v2", "v1"]);
/// assert!(log.clear().run(&mut con)?);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Log {
    name: String,
}

impl Log {
    /// The log stored at key `name`.
    ///
    /// An empty key is [`Error::InvalidInput`](crate::Error::InvalidInput).
    pub fn new(name: impl Into<String>) -> crate::Result<Self> {
        let name = name.into();
        input::key("name", &name)?;
        Ok(Log { name })
    }

    /// The log's key (its name).
    pub fn key(&self) -> &str {
        &self.name
    }

    /// Adds `content` as the newest entry (`LPUSH`) and returns the log's length.
    pub fn append<V: ToRedisArgs>(&self, content: V) -> Op<u64> {
        Op::try_build(|| {
            let mut cmd = redis::cmd("LPUSH");
            cmd.arg(&self.name).arg(input::value("content", &content)?);
            Ok(Op::native(cmd))
        })
    }

    /// The entries from index `start` to `stop`, both included, newest first
    /// (`LRANGE`): `read(0, 9)` is the ten newest, `read(0, -1)` the whole log.
    pub fn read<T: FromRedisValue + 'static>(&self, start: i64, stop: i64) -> Op<Vec<T>> {
        let mut cmd = redis::cmd("LRANGE");
        cmd.arg(&self.name).arg(start).arg(stop);
        Op::native(cmd)
    }

    /// How many entries the log holds (`LLEN`).
    pub fn length(&self) -> Op<u64> {
        native::length(&self.name)
    }

    /// Deletes the log (`DEL`): true if it held entries.
    pub fn clear(&self) -> Op<bool> {
        native::one_key("DEL", &self.name)
    }

    /// Keeps the `n` newest entries and drops the rest (`LTRIM name 0 n-1`); `0` deletes
    /// the log.
    pub fn keep(&self, n: u64) -> Op<()> {
        // The newest entries sit at the head: `append` pushes on the left.
        native::keep(&self.name, n, true)
    }
}
