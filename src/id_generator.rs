//! Auto-increment ids: 《Redis 应用实例》 chapter 5 (`IdGenerator`, `HashIdGenerator`) and
//! the 2011 Redis Cookbook's `Auid`.
//!
//! Every operation is one native command, atomic on its own, so ids never repeat however
//! many clients produce them. `reserve` skips the first ids (for a table whose ids start
//! at 10,000, say) and only works before the first id is produced, as in the book.
//!
//! The 2011 cookbook's `Auid(name)` is [`IdGenerator`]: `incr()` is
//! [`produce`](IdGenerator::produce), and `get()` (the last id, or 0) is
//! [`Counter::get`](crate::counter::Counter::get) on the same key. Its hash variant
//! `Auid(name, key='auid')` is [`HashIdGenerator::new("auid")`](HashIdGenerator::new)
//! with `produce(name)`, and `get()` is
//! [`HashCounter::get`](crate::counter::HashCounter::get).
//!
//! ```no_run
//! # fn demo() -> redis_patterns::Result<()> {
//! use redis_patterns::id_generator::IdGenerator;
//!
//! let mut con = redis::Client::open("redis://127.0.0.1/")?.get_connection()?;
//! let ids = IdGenerator::new("UserID")?;
//! assert!(ids.reserve(10_000).run(&mut con)?);
//! assert_eq!(ids.produce().run(&mut con)?, 10_001);
//! assert!(!ids.reserve(5).run(&mut con)?); // too late: an id was produced
//! # Ok(()) }
//! ```

use crate::runtime::input;
use crate::runtime::op::Op;

/// Ids from one string key (`INCR name`).
///
/// ```no_run
/// # fn demo() -> redis_patterns::Result<()> {
/// use redis_patterns::id_generator::IdGenerator;
///
/// let mut con = redis::Client::open("redis://127.0.0.1/")?.get_connection()?;
/// let ids = IdGenerator::new("OrderID")?;
/// assert_eq!(ids.produce().run(&mut con)?, 1); // first use
/// assert_eq!(ids.produce().run(&mut con)?, 2);
/// assert!(!ids.reserve(1_000).run(&mut con)?); // too late: ids were produced
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdGenerator {
    name: String,
}

impl IdGenerator {
    /// The generator stored at the key `name`. An empty name is
    /// [`Error::InvalidInput`](crate::Error::InvalidInput).
    pub fn new(name: impl Into<String>) -> crate::Result<Self> {
        let name = name.into();
        input::key("name", &name)?;
        Ok(IdGenerator { name })
    }

    /// The generator's key.
    pub fn key(&self) -> &str {
        &self.name
    }

    /// The next id: 1 on first use, or one more than the reserved number.
    pub fn produce(&self) -> Op<i64> {
        let mut cmd = redis::cmd("INCR");
        cmd.arg(&self.name);
        Op::native(cmd)
    }

    /// Makes the ids start after `n` (`SET name n NX`): true if done, false once any id
    /// has been produced or another reservation was made.
    pub fn reserve(&self, n: u64) -> Op<bool> {
        Op::try_build(|| {
            let mut cmd = redis::cmd("SET");
            cmd.arg(&self.name).arg(input::int64("n", n)?).arg("NX");
            Ok(Op::native(cmd))
        })
    }
}

/// Many generators in one hash, one field each (`HINCRBY key name 1`).
///
/// ```no_run
/// # fn demo() -> redis_patterns::Result<()> {
/// use redis_patterns::id_generator::HashIdGenerator;
///
/// let mut con = redis::Client::open("redis://127.0.0.1/")?.get_connection()?;
/// let ids = HashIdGenerator::new("auid")?;
/// assert!(ids.reserve("user", 10_000).run(&mut con)?);
/// assert_eq!(ids.produce("user").run(&mut con)?, 10_001);
/// assert_eq!(ids.produce("order").run(&mut con)?, 1); // another generator, same hash
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HashIdGenerator {
    key: String,
}

impl HashIdGenerator {
    /// The generators stored in the hash at `key`. An empty key is
    /// [`Error::InvalidInput`](crate::Error::InvalidInput).
    pub fn new(key: impl Into<String>) -> crate::Result<Self> {
        let key = key.into();
        input::key("key", &key)?;
        Ok(HashIdGenerator { key })
    }

    /// The hash's key.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// The next id of generator `name`.
    pub fn produce(&self, name: &str) -> Op<i64> {
        Op::try_build(|| {
            let mut cmd = redis::cmd("HINCRBY");
            cmd.arg(&self.key).arg(input::key("name", name)?).arg(1);
            Ok(Op::native(cmd))
        })
    }

    /// Makes generator `name` start after `n` (`HSETNX key name n`): true if done, false
    /// once it has produced an id or was reserved.
    pub fn reserve(&self, name: &str, n: u64) -> Op<bool> {
        Op::try_build(|| {
            let mut cmd = redis::cmd("HSETNX");
            cmd.arg(&self.key)
                .arg(input::key("name", name)?)
                .arg(input::int64("n", n)?);
            Ok(Op::native(cmd))
        })
    }
}
