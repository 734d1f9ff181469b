//! Counters that count each item once: 《Redis 应用实例》 chapter 7 (`UniqueCounter`,
//! `HllUniqueCounter`, and the unlisted `HllUniqueCounterMerger`).
//!
//! ```no_run
//! # fn demo() -> redis_patterns::Result<()> {
//! use redis_patterns::unique_counter::{HllUniqueCounter, UniqueCounter};
//!
//! let mut con = redis::Client::open("redis://127.0.0.1/")?.get_connection()?;
//!
//! let monday = UniqueCounter::new("{visits}:monday")?;
//! let tuesday = UniqueCounter::new("{visits}:tuesday")?;
//! assert!(monday.include("Peter").run(&mut con)?);
//! assert!(!monday.include("Peter").run(&mut con)?); // counted once
//! tuesday.include("Peter").run(&mut con)?;
//! tuesday.include("Jack").run(&mut con)?;
//! assert_eq!(UniqueCounter::inter(&[&monday, &tuesday]).run(&mut con)?, 1);
//! assert_eq!(UniqueCounter::union(&[&monday, &tuesday]).run(&mut con)?, 2);
//! assert_eq!(UniqueCounter::diff(&tuesday, &monday).run(&mut con)?, 1);
//!
//! let visitors = HllUniqueCounter::new("HllVisitCounter")?;
//! visitors.include("Peter").run(&mut con)?;
//! visitors.include(b"\xff\xfe".as_slice()).run(&mut con)?; // any bytes
//! assert_eq!(visitors.count().run(&mut con)?, 2);
//! # Ok(()) }
//! ```
//!
//! [`UniqueCounter`] is a set: exact, and it can forget an item. [`HllUniqueCounter`] is
//! a HyperLogLog: about 12 KB however many items it counts, with a standard error of
//! 0.81 %, and it cannot forget.
//!
//! Items are binary-safe: anything redis-rs sends as one value (`&str`, `String`,
//! `&[u8]`, `Vec<u8>`, numbers), counted by its bytes, so `"7"` and `7` are one item.
//!
//! | Book | Here | Wire |
//! |---|---|---|
//! | `UniqueCounter(client, key)` | [`UniqueCounter::new(key)`](UniqueCounter::new) → `Result` (an empty key, or one no scratch key can be derived from, is refused here) | none |
//! | `include(item)` / `exclude(item)` / `count()` | [`include`](UniqueCounter::include) / [`exclude`](UniqueCounter::exclude) / [`count`](UniqueCounter::count) | `SADD` / `SREM` / `SCARD` |
//! | `inter(client, *keys)` | [`UniqueCounter::inter(&[..])`](UniqueCounter::inter) | `SINTERCARD n k…` |
//! | `union(client, *keys)` | [`UniqueCounter::union(&[..])`](UniqueCounter::union) | script `unique_counter/union_count` |
//! | `diff(client, x, y)` | [`UniqueCounter::diff(x, y)`](UniqueCounter::diff) | script `unique_counter/diff_count` (read-only) |
//! | `HllUniqueCounter(client, key)` | [`HllUniqueCounter::new(key)`](HllUniqueCounter::new) → `Result` | none |
//! | `include(item)` / `count()` | [`include`](HllUniqueCounter::include) / [`count`](HllUniqueCounter::count) | `PFADD` / `PFCOUNT` |
//! | `exclude(item)` raises `NotImplementedError` | (none): a HyperLogLog keeps no items, so it cannot remove one; count with [`UniqueCounter`] when items must be excluded | none |
//! | `HllUniqueCounterMerger(client, result).merge(*keys)` → `True` | [`result.merge(&[..])`](HllUniqueCounter::merge) → `()` | `PFMERGE result k…` |
//! | (none) | [`HllUniqueCounter::union(&[..])`](HllUniqueCounter::union) | `PFCOUNT k…` |
//!
//! What differs from the book, and why:
//!
//! - **Nothing is counted on the client.** The book's `union` and `diff` fetch every member
//!   (SUNION, SDIFF) to take `len()` of the list. Here `union` builds the union in a
//!   scratch key, takes its size and deletes it, in one script that no other client sees
//!   halfway; `diff` is |x| − |x ∩ y| (SCARD and SINTERCARD) in a read-only script that
//!   needs no scratch key and also runs on replicas.
//! - **Counters of one call share a cluster hash slot**, and this is checked before any
//!   I/O, on a standalone server too, so code does not break the day it moves to a
//!   cluster: give them one hash tag, as in `{visits}:monday` and `{visits}:tuesday`.
//!   Keys in different slots fail with [`Error::InvalidInput`] (`what` = `"counters"`).
//! - `count` returns `u64`; `merge` returns `()` (PFMERGE always answers OK, so the
//!   book's `True` carries nothing).
//! - `HllUniqueCounter::include` is approximate, as in the book: it is true when the
//!   HyperLogLog changed, which a new item does not always do.

use redis::ToRedisArgs;

use crate::runtime::error::Error;
use crate::runtime::input;
use crate::runtime::op::Op;
use crate::scripts;

/// The most counters one `inter`, `union` or `merge` takes: far more than the slot rule
/// makes practical, and few enough for the script's `unpack`.
pub const MAX_COUNTERS: usize = 1000;

/// An exact unique counter: a set (`SADD`, `SREM`, `SCARD`).
///
/// ```no_run
/// # fn demo() -> redis_patterns::Result<()> {
/// use redis_patterns::unique_counter::UniqueCounter;
///
/// let mut con = redis::Client::open("redis://127.0.0.1/")?.get_connection()?;
/// let counter = UniqueCounter::new("VisitCounter")?;
/// assert!(counter.include("Tom").run(&mut con)?);
/// assert!(counter.include(10086).run(&mut con)?); // a user id
/// assert!(counter.exclude("Tom").run(&mut con)?);
/// assert_eq!(counter.count().run(&mut con)?, 1);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UniqueCounter {
    key: String,
    scratch: String,
}

impl UniqueCounter {
    /// The counter stored as a set at `key`.
    ///
    /// An empty key is [`Error::InvalidInput`] about `key`, as is a key that holds a `}`
    /// but no hash tag (such as `a}b`), from which no [`scratch_key`](Self::scratch_key)
    /// in the same cluster slot can be derived.
    pub fn new(key: impl Into<String>) -> crate::Result<Self> {
        let key = key.into();
        let scratch = scripts::unique_counter::keys::scratch(&key)?;
        Ok(UniqueCounter {
            key: scripts::unique_counter::keys::counters(&key)?,
            scratch,
        })
    }

    /// The set's key.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// The key [`union`](Self::union) builds its result in, when this counter comes first:
    /// `{key}:union_scratch` (or `key:union_scratch` when `key` holds a hash tag), in the
    /// counter's hash slot. It exists only inside the script; the script refuses to run
    /// if it holds anything.
    pub fn scratch_key(&self) -> &str {
        &self.scratch
    }

    /// Counts `item` (one value, any bytes): true if it was not counted yet (`SADD`).
    pub fn include<V: ToRedisArgs>(&self, item: V) -> Op<bool> {
        self.member_cmd("SADD", item)
    }

    /// Forgets `item`: true if it was counted (`SREM`).
    pub fn exclude<V: ToRedisArgs>(&self, item: V) -> Op<bool> {
        self.member_cmd("SREM", item)
    }

    fn member_cmd<V: ToRedisArgs>(&self, command: &str, item: V) -> Op<bool> {
        Op::try_build(|| {
            let mut cmd = redis::cmd(command);
            cmd.arg(&self.key).arg(input::value("item", &item)?);
            Ok(Op::native(cmd))
        })
    }

    /// How many items are counted; 0 when the key is missing (`SCARD`).
    pub fn count(&self) -> Op<u64> {
        let mut cmd = redis::cmd("SCARD");
        cmd.arg(&self.key);
        Op::native(cmd)
    }

    /// How many items every one of `counters` counts (`SINTERCARD`, Redis 7.0).
    ///
    /// The counters must share one cluster hash slot; from 1 to [`MAX_COUNTERS`].
    pub fn inter(counters: &[&UniqueCounter]) -> Op<u64> {
        Op::try_build(|| {
            let keys = counter_keys(counters)?;
            let mut cmd = redis::cmd("SINTERCARD");
            cmd.arg(keys.len()).arg(&keys);
            Ok(Op::native(cmd))
        })
    }

    /// How many items at least one of `counters` counts. One script
    /// (`unique_counter/union_count`) that builds the union in the first counter's
    /// [`scratch_key`](Self::scratch_key), takes its size and deletes it: no member is
    /// sent to the client.
    ///
    /// The counters must share one cluster hash slot; from 1 to [`MAX_COUNTERS`].
    pub fn union(counters: &[&UniqueCounter]) -> Op<u64> {
        Op::try_build(|| {
            let keys = counter_keys(counters)?;
            Ok(scripts::unique_counter::union_count(
                &counters[0].scratch,
                &keys,
            ))
        })
    }

    /// How many items `x` counts that `y` does not. One read-only script
    /// (`unique_counter/diff_count`): |x| − |x ∩ y|, no member sent to the client.
    ///
    /// The two counters must share one cluster hash slot.
    pub fn diff(x: &UniqueCounter, y: &UniqueCounter) -> Op<u64> {
        Op::try_build(|| {
            counter_keys(&[x, y])?;
            Ok(scripts::unique_counter::diff_count(&x.key, &y.key))
        })
    }
}

/// An approximate unique counter: a HyperLogLog (`PFADD`, `PFCOUNT`, `PFMERGE`).
///
/// About 12 KB whatever it counts, with a standard error of 0.81 %. It cannot tell
/// whether one item was counted, nor forget one: there is no `exclude` (the book's raises
/// `NotImplementedError`); count with [`UniqueCounter`] when items must be excluded.
///
/// ```no_run
/// # fn demo() -> redis_patterns::Result<()> {
/// use redis_patterns::unique_counter::HllUniqueCounter;
///
/// let mut con = redis::Client::open("redis://127.0.0.1/")?.get_connection()?;
/// let web = HllUniqueCounter::new("{visitors}:web")?;
/// let app = HllUniqueCounter::new("{visitors}:app")?;
/// let all = HllUniqueCounter::new("{visitors}:all")?;
/// web.include("Peter").run(&mut con)?;
/// app.include("Jack").run(&mut con)?;
/// all.merge(&[&web, &app]).run(&mut con)?;
/// assert_eq!(all.count().run(&mut con)?, 2);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HllUniqueCounter {
    key: String,
}

impl HllUniqueCounter {
    /// The counter stored as a HyperLogLog at `key`. An empty key is
    /// [`Error::InvalidInput`].
    pub fn new(key: impl Into<String>) -> crate::Result<Self> {
        let key = key.into();
        input::key("key", &key)?;
        Ok(HllUniqueCounter { key })
    }

    /// The HyperLogLog's key.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// Counts `item` (one value, any bytes) (`PFADD`): true if the estimate's registers
    /// changed. Approximate: a new item does not always change them, so false does not
    /// prove it was counted.
    pub fn include<V: ToRedisArgs>(&self, item: V) -> Op<bool> {
        Op::try_build(|| {
            let mut cmd = redis::cmd("PFADD");
            cmd.arg(&self.key).arg(input::value("item", &item)?);
            Ok(Op::native(cmd))
        })
    }

    /// The estimated number of distinct items; 0 when the key is missing (`PFCOUNT`).
    pub fn count(&self) -> Op<u64> {
        let mut cmd = redis::cmd("PFCOUNT");
        cmd.arg(&self.key);
        Op::native(cmd)
    }

    /// The estimated number of distinct items of all `counters` together, without storing
    /// anything (`PFCOUNT k…`).
    ///
    /// The counters must share one cluster hash slot; from 1 to [`MAX_COUNTERS`].
    pub fn union(counters: &[&HllUniqueCounter]) -> Op<u64> {
        Op::try_build(|| {
            let keys = hll_keys(counters, None)?;
            let mut cmd = redis::cmd("PFCOUNT");
            cmd.arg(&keys);
            Ok(Op::native(cmd))
        })
    }

    /// Adds everything `sources` counted into this counter (`PFMERGE key source…`): the
    /// book's unlisted `HllUniqueCounterMerger(client, key).merge(*sources)`. What this
    /// counter held stays counted; missing sources count nothing.
    ///
    /// This counter and the sources must share one cluster hash slot; from 1 to
    /// [`MAX_COUNTERS`] sources.
    pub fn merge(&self, sources: &[&HllUniqueCounter]) -> Op<()> {
        Op::try_build(|| {
            let keys = hll_keys(sources, Some(&self.key))?;
            let mut cmd = redis::cmd("PFMERGE");
            cmd.arg(&self.key).arg(&keys);
            Ok(Op::native(cmd))
        })
    }
}

/// The keys of several counters: from 1 to [`MAX_COUNTERS`], in one hash slot.
fn counter_keys<'a>(counters: &[&'a UniqueCounter]) -> crate::Result<Vec<&'a str>> {
    check_keys(counters.iter().map(|c| c.key.as_str()).collect(), None)
}

fn hll_keys<'a>(
    counters: &[&'a HllUniqueCounter],
    dest: Option<&str>,
) -> crate::Result<Vec<&'a str>> {
    check_keys(counters.iter().map(|c| c.key.as_str()).collect(), dest)
}

fn check_keys<'a>(keys: Vec<&'a str>, dest: Option<&str>) -> crate::Result<Vec<&'a str>> {
    if keys.is_empty() || keys.len() > MAX_COUNTERS {
        return Err(Error::invalid(
            "counters",
            format!("pass from 1 to {MAX_COUNTERS} counters, got {}", keys.len()),
        ));
    }
    let mut all: Vec<&str> = dest.into_iter().collect();
    all.extend(&keys);
    input::same_slot("counters", &all)?;
    Ok(keys)
}
