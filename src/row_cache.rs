//! Database rows cached on a schedule: Redis in Action chapter 2 (`schedule_row_cache`,
//! `cache_rows`), with each due row claimed by exactly one worker.
//!
//! ```no_run
//! # fn demo() -> redis_patterns::Result<()> {
//! use std::time::Duration;
//! use redis_patterns::row_cache::RowCache;
//!
//! let mut con = redis::Client::open("redis://127.0.0.1/")?.get_connection()?;
//! let rows = RowCache::new("inventory")?;
//! rows.schedule_row_cache("item:10086", Duration::from_secs(5)).run(&mut con)?;
//!
//! // A worker: render every due row from the database, 100 at a time.
//! let pass = rows.cache_rows(&mut con, 100, |row| {
//!     Ok::<_, redis_patterns::Error>(Some(format!(r#"{{"id":"{row}","qty":629}}"#)))
//! })?;
//! let copy: Option<String> = rows.get("item:10086").run(&mut con)?;
//!
//! // Copies are any bytes: store what the database renders, read it back as `Vec<u8>`.
//! rows.store("item:10086", &b"\x1f\x8b\x08gzip"[..]).run(&mut con)?;
//! let raw: Option<Vec<u8>> = rows.get("item:10086").run(&mut con)?;
//! # Ok(()) }
//! ```
//!
//! A [`RowCache`] is a namespace of the book's keys, all in one hash slot:
//!
//! | Book key | Here | Holds |
//! |---|---|---|
//! | `delay:` | `{ns}:delays` | zset: row id → delay between two copies (ms) |
//! | `schedule:` | `{ns}:schedule` | zset: row id → when its next copy is due (ms, server clock) |
//! | `inv:<row>` | `{ns}:inv:<row>` | string: the row's cached copy (the book's JSON) |
//!
//! | Book | Here | Wire |
//! |---|---|---|
//! | `schedule_row_cache(row_id, delay)` | [`schedule_row_cache(row, delay)`](RowCache::schedule_row_cache) | script `row_cache/schedule` |
//! | `schedule_row_cache(row_id, 0)` (a worker unschedules the row later) | [`unschedule(row)`](RowCache::unschedule), or a delay of 0 | same script, at once |
//! | `cache_rows()`, a loop that never returns | [`cache_rows(con, limit, fetch)`](RowCache::cache_rows): one pass; [`run_worker`](RowCache::run_worker): passes until told to stop | scripts `row_cache/claim`, then `row_cache/store` per row |
//! | (readers: `GET inv:<row>`) | [`get(row)`](RowCache::get) | `GET` |
//!
//! What differs from the book, and why:
//!
//! - **Each due row is cached by one worker.** The book's worker reads the first due row,
//!   then its delay, then reschedules it: two workers that read at once both render the
//!   row. Here a worker claims due rows in one step that also reschedules them, so a row
//!   goes to exactly one worker per due time.
//! - **A row without a delay does not crash the worker.** In the book, a row in
//!   `schedule:` with no entry in `delay:` makes `ZSCORE` answer `None`, and `None <= 0`
//!   raises `TypeError` in every worker, for ever. Here such a row is dropped from the
//!   schedule and its copy deleted.
//! - **Unscheduling is immediate**, and a copy rendered by a worker after its row was
//!   unscheduled is not stored (the book would cache it for ever).
//! - Delays are `Duration`s, times the server's clock in ms (the book's are float seconds
//!   of each worker's clock).
//!
//! **Copies are bytes; row ids are text.** A copy is a Redis value, so
//! [`store`](RowCache::store), [`cache_rows`](RowCache::cache_rows) and
//! [`run_worker`](RowCache::run_worker) take any [`ToRedisArgs`] value (JSON text,
//! compressed bytes, …) and [`get`](RowCache::get) returns any [`FromRedisValue`]. A row id
//! is also part of a key name (`{ns}:inv:<row>`), and the crate's key names are text, so
//! row ids are `&str` (any UTF-8, not empty). An app in another language that writes row
//! ids that are not UTF-8 into `{ns}:schedule` cannot share the namespace with this one.
//!
//! **On a cluster**, a namespace is one hash slot, so claims stay atomic; all its rows
//! are on one shard. Rows that need more room can be split over several namespaces, each
//! with its workers.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use redis::{FromRedisValue, ToRedisArgs};

use crate::runtime::error::{Error, Result};
use crate::runtime::input;
use crate::runtime::op::Op;
use crate::scripts::row_cache as script;

/// How long [`RowCache::run_worker`] sleeps when no row is due: the book's 50 ms.
pub const IDLE_PAUSE: Duration = Duration::from_millis(50);

/// Rows claimed by one worker, from [`RowCache::claim`].
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Claimed {
    /// Each row claimed, and the due time (ms, server clock) it was claimed for.
    pub rows: Vec<(String, u64)>,
    /// Rows that were due without a positive delay: now unscheduled, their copies to be
    /// deleted.
    pub dropped: Vec<String>,
}

/// What one pass of [`RowCache::cache_rows`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Pass {
    /// Rows whose fresh copy was stored.
    pub cached: u64,
    /// Rows the database no longer had (`fetch` answered `None`): unscheduled.
    pub removed: u64,
    /// Rows unscheduled while being rendered (their copy was not stored), or due
    /// without a delay: their copies deleted.
    pub dropped: u64,
}

impl Pass {
    /// Whether the pass found no row due.
    pub fn is_idle(&self) -> bool {
        self.cached == 0 && self.removed == 0 && self.dropped == 0
    }
}

/// Rows cached on a schedule, in one namespace. See the [module docs](self).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RowCache {
    namespace: String,
    delays: String,
    schedule: String,
}

impl RowCache {
    /// The namespace `namespace` (its keys are `{namespace}:…`, one hash slot). An
    /// empty namespace is [`Error::InvalidInput`].
    pub fn new(namespace: impl Into<String>) -> Result<Self> {
        let namespace = namespace.into();
        Ok(RowCache {
            delays: script::keys::delays(&namespace)?,
            schedule: script::keys::schedule(&namespace)?,
            namespace,
        })
    }

    /// The namespace.
    pub fn namespace(&self) -> &str {
        &self.namespace
    }

    /// The key of `row`'s cached copy (the book's `inv:<row>`).
    pub fn copy_key(&self, row: &str) -> Result<String> {
        script::keys::copy(&self.namespace, row)
    }

    /// Schedules `row` to be cached now and again every `delay` (whole ms); a delay of
    /// [`Duration::ZERO`] unschedules it and deletes its copy, at once (a delay below 1 ms
    /// is refused rather than taken for 0). Returns when the row is next due (ms, server
    /// clock), or 0 when unscheduled. One script (`row_cache/schedule`).
    pub fn schedule_row_cache(&self, row: &str, delay: Duration) -> Op<u64> {
        Op::try_build(|| {
            if !delay.is_zero() && delay < Duration::from_millis(1) {
                return Err(Error::invalid(
                    "delay",
                    format!("{delay:?} is below 1 ms; Duration::ZERO unschedules the row"),
                ));
            }
            Ok(script::schedule(
                &self.delays,
                &self.schedule,
                &self.copy_key(row)?,
                row,
                delay,
            )
            .map(|due| Ok(due.max(0) as u64)))
        })
    }

    /// Stops caching `row` and deletes its copy, in one step.
    pub fn unschedule(&self, row: &str) -> Op<u64> {
        self.schedule_row_cache(row, Duration::ZERO)
    }

    /// `row`'s cached copy, or `None` (`GET`).
    pub fn get<T: FromRedisValue + 'static>(&self, row: &str) -> Op<Option<T>> {
        Op::try_build(|| {
            let mut cmd = redis::cmd("GET");
            cmd.arg(self.copy_key(row)?);
            Ok(Op::native(cmd))
        })
    }

    /// `row`'s delay, or `None` when it is not scheduled (`ZSCORE`).
    pub fn delay(&self, row: &str) -> Op<Option<Duration>> {
        Op::try_build(|| {
            let mut cmd = redis::cmd("ZSCORE");
            cmd.arg(&self.delays).arg(input::key("row", row)?);
            Ok(Op::native(cmd)
                .map(|ms: Option<f64>| Ok(ms.map(|ms| Duration::from_millis(ms as u64)))))
        })
    }

    /// Claims up to `limit` (1 to 500) due rows, rescheduling each `delay` from now, so
    /// that no other worker gets it before then; rows due without a positive delay are
    /// unscheduled and returned as dropped. One script (`row_cache/claim`).
    pub fn claim(&self, limit: u64) -> Op<Claimed> {
        script::claim(&self.delays, &self.schedule, limit)
            .map(|(rows, dropped)| Ok(Claimed { rows, dropped }))
    }

    /// Stores `content` as `row`'s copy, unless the row was unscheduled meanwhile (then
    /// its copy is deleted): whether it was stored. One script (`row_cache/store`).
    pub fn store<V: ToRedisArgs>(&self, row: &str, content: V) -> Op<bool> {
        Op::try_build(|| {
            let content = input::value("content", &content)?;
            Ok(script::store(
                &self.delays,
                &self.copy_key(row)?,
                row,
                &content,
            ))
        })
    }

    /// One pass of the book's `cache_rows`: claims up to `limit` (1 to 500) due rows,
    /// renders each with `fetch` (the book's `Inventory.get`) and stores its copy;
    /// a row `fetch` answers `None` for is unscheduled. A `fetch` error stops the pass
    /// (the rows claimed and not yet stored are cached again at their next due time).
    /// Round trips: one claim, then one per row.
    pub fn cache_rows<V, E>(
        &self,
        con: &mut dyn redis::ConnectionLike,
        limit: u64,
        mut fetch: impl FnMut(&str) -> std::result::Result<Option<V>, E>,
    ) -> std::result::Result<Pass, E>
    where
        V: ToRedisArgs,
        E: From<Error>,
    {
        let claimed = self.claim(limit).run(con)?;
        let mut pass = Pass::default();
        for row in &claimed.dropped {
            self.drop_copy(con, row)?;
            pass.dropped += 1;
        }
        for (row, _) in &claimed.rows {
            match fetch(row)? {
                Some(content) => {
                    if self.store(row, content).run(con)? {
                        pass.cached += 1;
                    } else {
                        pass.dropped += 1;
                    }
                }
                None => {
                    self.unschedule(row).run(con)?;
                    pass.removed += 1;
                }
            }
        }
        Ok(pass)
    }

    /// Deletes a dropped row's copy (`DEL`).
    fn drop_copy(&self, con: &mut dyn redis::ConnectionLike, row: &str) -> Result<()> {
        let mut cmd = redis::cmd("DEL");
        cmd.arg(self.copy_key(row)?);
        Op::<i64>::native(cmd).run(con)?;
        Ok(())
    }

    /// A worker: runs [`cache_rows`](Self::cache_rows) passes until `quit` is set,
    /// sleeping [`IDLE_PAUSE`] (the book's 50 ms) after a pass that found nothing due.
    /// Returns the sum of its passes.
    pub fn run_worker<V, E>(
        &self,
        con: &mut dyn redis::ConnectionLike,
        limit: u64,
        quit: &AtomicBool,
        mut fetch: impl FnMut(&str) -> std::result::Result<Option<V>, E>,
    ) -> std::result::Result<Pass, E>
    where
        V: ToRedisArgs,
        E: From<Error>,
    {
        let mut total = Pass::default();
        while !quit.load(Ordering::Relaxed) {
            let pass = self.cache_rows(con, limit, &mut fetch)?;
            total.cached += pass.cached;
            total.removed += pass.removed;
            total.dropped += pass.dropped;
            if pass.is_idle() {
                std::thread::sleep(IDLE_PAUSE);
            }
        }
        Ok(total)
    }
}
