//! Timelines, newest first: 《Redis 应用实例》 chapter 24 (`Timeline`) and the 2011 Redis
//! Cookbook's `Timeline`, with every entry of an add kept, a maximum length held on each
//! write, and deletes in bounded steps.
//!
//! ```no_run
//! # fn demo() -> redis_patterns::Result<()> {
//! use redis_patterns::timeline::Timeline;
//!
//! let mut con = redis::Client::open("redis://127.0.0.1/")?.get_connection()?;
//! let timeline = Timeline::new("timeline:peter")?.with_max_length(1000)?;
//! timeline
//!     .add(&[(1_700_000_000_000, "hello"), (1_700_000_060_000, "a minute later")])
//!     .run(&mut con)?;
//! let newest: Vec<String> = timeline.get(1, 10).run(&mut con)?;
//! let last_hour: Vec<(String, u64)> = timeline
//!     .get_by_time_range(1_699_999_000_000, 1_700_000_100_000, 1, 10)
//!     .run(&mut con)?;
//!
//! // Items are any bytes; read them back as `Vec<u8>` when they may not be UTF-8.
//! timeline.add(&[(1_700_000_120_000, &b"\x89PNG"[..])]).run(&mut con)?;
//! let raw: Vec<Vec<u8>> = timeline.get(1, 1).run(&mut con)?;
//! # Ok(()) }
//! ```
//!
//! A timeline is a sorted set at the key you name: item → time. Times are the caller's,
//! whole milliseconds from 0 to 10^15 − 1 of whatever clock the app picks (Unix time,
//! usually): a backfill writes old times, and tests write exact ones.
//!
//! | Book / cookbook | Here | Wire |
//! |---|---|---|
//! | `Timeline(client, key)` | [`Timeline::new(key)`](Timeline::new) → `Result` | none |
//! | `add(*items)` → length; cookbook `append(content)` | [`add(&[(time, item)])`](Timeline::add) → [`Added`] | script `timeline/add` |
//! | `get(page, size=10)`; cookbook `range(start, stop)` | [`get(page, size)`](Timeline::get) | `ZREVRANGE` |
//! | `get_with_time(page, size=10)`; `range(…, display_time=True)` | [`get_with_time(page, size)`](Timeline::get_with_time) → `Vec<(item, time)>` | `ZREVRANGE … WITHSCORES` |
//! | `get_by_time_range(min, max, page, size=10)`; cookbook `range_between_time` | [`get_by_time_range(min, max, page, size)`](Timeline::get_by_time_range) | `ZREVRANGEBYSCORE max min WITHSCORES LIMIT` |
//! | `length()` | [`length()`](Timeline::length) | `ZCARD` |
//! | `number(size=10)` | [`number(size)`](Timeline::number) | `ZCARD`, then rounded up |
//! | cookbook `delete(content)` | [`delete(&items)`](Timeline::delete) → how many | `ZREM` |
//! | cookbook `delete_between_time(min, max)` | [`delete_by_time_range(min, max, limit)`](Timeline::delete_by_time_range) → [`Deleted`] | script `timeline/delete_range` |
//!
//! What differs from the books, and why:
//!
//! - **Every entry of an add is kept.** The book passes each `{item: time}` mapping as its
//!   own argument to redis-py's `zadd`, which reads the second as a flag: `add({"d": 400},
//!   {"e": 500})` sends `ZADD key NX 400 d`, and `e` is silently lost. The cookbook's
//!   `append` fails on redis-py 3 and later. Here one call adds up to 1000 entries.
//! - **A maximum length holds on every write** ([`with_max_length`](Timeline::with_max_length)):
//!   the add trims the oldest entries in the same step, at most 2000 per call (a timeline
//!   whose maximum was just lowered shrinks over a few adds).
//! - **Page 0 is refused**, as in [`pagination`](crate::pagination); pages count from 1.
//! - **Deleting a time range is bounded**: up to `limit` entries per call, and the answer
//!   says whether more remain. The cookbook's one `ZREMRANGEBYSCORE` blocks the server
//!   for as long as the range is large.
//! - Items are binary-safe: the methods take them as anything redis-rs sends as one
//!   argument (`&str`, `String`, `&[u8]`, `Vec<u8>`, numbers: [`ToRedisArgs`]) and return
//!   them as any [`FromRedisValue`] (`String`, or `Vec<u8>` for items that are not
//!   UTF-8). Times are integers of milliseconds (the book's are float seconds).

use redis::{FromRedisValue, ToRedisArgs};

use crate::runtime::error::{Error, Result};
use crate::runtime::input;
use crate::runtime::native;
use crate::runtime::op::Op;
use crate::scripts::timeline as script;

/// What [`Timeline::add`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Added {
    /// The timeline's length now.
    pub length: u64,
    /// How many of its oldest entries were trimmed to keep the maximum length.
    pub trimmed: u64,
}

/// What [`Timeline::delete_by_time_range`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Deleted {
    /// How many entries it deleted.
    pub deleted: u64,
    /// Whether the range still holds entries: call again.
    pub more: bool,
}

/// A timeline in one sorted set, newest first. See the [module docs](self).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Timeline {
    key: String,
    max_length: Option<u64>,
}

impl Timeline {
    /// The timeline at `key`, with no maximum length. An empty key is
    /// [`Error::InvalidInput`].
    pub fn new(key: impl Into<String>) -> Result<Self> {
        let key = script::keys::timeline(&key.into())?;
        Ok(Timeline {
            key,
            max_length: None,
        })
    }

    /// Keeps at most `max_length` (at least 1) entries: each add trims the oldest beyond it.
    pub fn with_max_length(mut self, max_length: u64) -> Result<Self> {
        input::check_param(&script::ADD.args[0], Some(max_length))?;
        self.max_length = Some(max_length);
        Ok(self)
    }

    /// The timeline's key.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// Adds `entries` (from 1 to 1000), each `(time in ms, item)`, then trims to the
    /// maximum length, in one step. An item already in the timeline moves to its new time.
    /// One script (`timeline/add`).
    pub fn add<V: ToRedisArgs>(&self, entries: &[(u64, V)]) -> Op<Added> {
        Op::try_build(|| {
            let mut flat: Vec<Vec<u8>> = Vec::with_capacity(entries.len() * 2);
            for (time, item) in entries {
                flat.push(checked_time("entries", *time)?.to_string().into_bytes());
                flat.push(input::value("entries", item)?);
            }
            Ok(
                script::add(&self.key, self.max_length, &input::slices(&flat)).map(
                    |(length, trimmed)| {
                        Ok(Added {
                            length: length.max(0) as u64,
                            trimmed: trimmed.max(0) as u64,
                        })
                    },
                ),
            )
        })
    }

    /// Page `page` (from 1) of `size` (at least 1) items, newest first (`ZREVRANGE`).
    pub fn get<T: FromRedisValue + 'static>(&self, page: u64, size: usize) -> Op<Vec<T>> {
        self.page(page, size, false)
    }

    /// [`get`](Self::get), with each item's time (`ZREVRANGE … WITHSCORES`).
    pub fn get_with_time<T: FromRedisValue + 'static>(
        &self,
        page: u64,
        size: usize,
    ) -> Op<Vec<(T, u64)>> {
        self.page(page, size, true)
    }

    fn page<T: FromRedisValue + 'static>(
        &self,
        page: u64,
        size: usize,
        with_time: bool,
    ) -> Op<Vec<T>> {
        Op::try_build(|| {
            let (offset, size) = input::page(page, size)?;
            let mut cmd = redis::cmd("ZREVRANGE");
            cmd.arg(&self.key).arg(offset).arg(offset + size - 1);
            if with_time {
                cmd.arg("WITHSCORES");
            }
            Ok(Op::native(cmd))
        })
    }

    /// Page `page` (from 1) of `size` (at least 1) of the entries from time `min` to
    /// `max` (ms, both included), newest first, with their times (`ZREVRANGEBYSCORE max
    /// min WITHSCORES LIMIT`).
    pub fn get_by_time_range<T: FromRedisValue + 'static>(
        &self,
        min: u64,
        max: u64,
        page: u64,
        size: usize,
    ) -> Op<Vec<(T, u64)>> {
        Op::try_build(|| {
            let (offset, size) = input::page(page, size)?;
            let mut cmd = redis::cmd("ZREVRANGEBYSCORE");
            cmd.arg(&self.key)
                .arg(checked_time("max", max)?)
                .arg(checked_time("min", min)?)
                .arg("WITHSCORES")
                .arg("LIMIT")
                .arg(offset)
                .arg(size);
            Ok(Op::native(cmd))
        })
    }

    /// How many entries the timeline holds (`ZCARD`).
    pub fn length(&self) -> Op<u64> {
        native::one_key("ZCARD", &self.key)
    }

    /// How many pages of `size` (at least 1) items it fills; 0 when it is empty.
    pub fn number(&self, size: usize) -> Op<u64> {
        Op::try_build(|| {
            let size = input::count("size", size)?;
            Ok(self.length().map(move |length| Ok(length.div_ceil(size))))
        })
    }

    /// Deletes `items` (at least 1): how many were in the timeline (`ZREM`).
    pub fn delete<V: ToRedisArgs>(&self, items: &[V]) -> Op<u64> {
        Op::try_build(|| {
            let mut cmd = redis::cmd("ZREM");
            cmd.arg(&self.key).arg(input::items(items)?);
            Ok(Op::native(cmd))
        })
    }

    /// Deletes up to `limit` (1 to 1000) entries from time `min` to `max` (ms, both
    /// included), oldest first, and says whether the range holds more. One script
    /// (`timeline/delete_range`).
    pub fn delete_by_time_range(&self, min: u64, max: u64, limit: u64) -> Op<Deleted> {
        script::delete_range(&self.key, min, max, limit).map(|(deleted, more)| {
            Ok(Deleted {
                deleted: deleted.max(0) as u64,
                more,
            })
        })
    }
}

/// A time is whole milliseconds from 0 to 10^15 - 1, the scripts' rule.
fn checked_time(what: &'static str, time: u64) -> Result<u64> {
    input::check_param(&script::DELETE_RANGE.args[0], time).map_err(|_| {
        Error::invalid(
            what,
            format!("times are ms from 0 to 10^15 - 1, got {time}"),
        )
    })?;
    Ok(time)
}
