//! Hourly statistics (count, sum, sum of squares, min, max, average, standard
//! deviation) and the slowest pages: Redis in Action chapter 5 (`update_stats`,
//! `get_stats`, `access_time`), each update one step with no temporary keys.
//!
//! ```no_run
//! # fn demo() -> redis_patterns::Result<()> {
//! use redis_patterns::stats::Stats;
//!
//! let mut con = redis::Client::open("redis://127.0.0.1/")?.get_connection()?;
//! let stats = Stats::new();
//! let page = stats.access_time(&mut con, "ProfilePage", || {
//!     Ok::<_, redis_patterns::Error>("<html>…</html>")
//! })?;
//! if let Some(s) = stats.get_stats("ProfilePage", "AccessTime").run(&mut con)? {
//!     println!("{} views, {:.3} s on average", s.count, s.average);
//! }
//! # Ok(()) }
//! ```
//!
//! The statistics of a context (a page, an endpoint) and a type (`AccessTime`, …) are
//! four keys in one hash slot, the book's with a hash tag:
//!
//! | Book key | Here | Holds |
//! |---|---|---|
//! | `stats:<context>:<type>` | `{stats:<context>:<type>}` | zset: `count`, `sum`, `sumsq`, `min`, `max` → values |
//! | `…:start` | `{stats:<context>:<type>}:start` | the hour they are of (Unix s) |
//! | `…:last`, `…:pstart` | `{…}:last`, `{…}:pstart` | the previous hour's statistics, and that hour |
//! | `slowest:AccessTime` | `slowest:AccessTime` | zset: context → its average access time (s) |
//!
//! | Book | Here | Wire |
//! |---|---|---|
//! | `update_stats(conn, context, type, value, timeout=5)` → `[count, sum, sumsq]` | [`update_stats(context, type, value, now_ms)`](Stats::update_stats) → [`Totals`] | script `stats/update` |
//! | `get_stats(conn, context, type)` → dict | [`get_stats(context, type)`](Stats::get_stats) → `Option<Summary>` | `ZRANGE … WITHSCORES` |
//! | (the rotated hour) | [`last_hour_stats(context, type)`](Stats::last_hour_stats) | `ZRANGE … WITHSCORES` |
//! | `access_time(conn, context)` (a context manager) | [`access_time(con, context, f)`](Stats::access_time) | scripts `stats/update`, then `stats/slowest` |
//! | (the ranking it keeps) | [`slowest(n)`](Stats::slowest) | `ZREVRANGE … WITHSCORES` |
//!
//! What differs from the book, and why:
//!
//! - **An update is one step that always happens.** The book retries a WATCH
//!   transaction for 5 s and then returns `None` having recorded nothing, silently; here
//!   the script never conflicts.
//! - **No temporary keys.** The book finds the min and max with `ZUNIONSTORE` against two
//!   random keys, which live in other hash slots on a cluster (the transaction is refused)
//!   and are written, replicated and deleted on every update. Here the script compares.
//! - **No data is `None`**, where the book's `get_stats` raises `KeyError: b'sum'`.
//! - **Hours are absolute** (Unix hours from the caller's `now`): the book's first
//!   version compares hour numbers of the day, so it never rotates again after midnight.
//!   A rotation happens once per hour boundary, whoever writes first; a writer still in
//!   an earlier hour counts into the current one, as in the book.
//! - The standard deviation is the sample's (`n − 1`), as the book's, and 0 for one value.
//! - **The standard deviation is a real number.** Rounding can leave `sumsq − sum²/count`
//!   a little below 0 when the values are all alike (0.1 three times: −3.5 × 10⁻¹⁸), and
//!   the book's `(…) ** .5` then answers a complex number. Here that numerator counts as
//!   0, and the deviation is 0.0.
//!
//! **On a cluster**, each (context, type) is one hash slot, so an update is atomic and
//! contexts spread over the shards. `access_time` is two round trips, each atomic: the
//! ranking of the slowest is one key of its own, in another slot.

use std::collections::HashMap;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use crate::runtime::error::{Error, Result};
use crate::runtime::input;
use crate::runtime::op::{Op, ScriptMode};
use crate::scripts::stats as script;

/// The book's ranking of the slowest contexts: `slowest:AccessTime`.
pub const SLOWEST_KEY: &str = "slowest:AccessTime";
/// The book's size of that ranking: 100.
pub const SLOWEST_KEPT: u64 = 100;
/// The type `access_time` records under: the book's `AccessTime`.
pub const ACCESS_TIME: &str = "AccessTime";

/// What an update leaves: the book's `[count, sum, sumsq]`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Totals {
    /// How many values this hour.
    pub count: u64,
    /// Their sum.
    pub sum: f64,
    /// The sum of their squares.
    pub sumsq: f64,
}

/// An hour's statistics, as the book's `get_stats` computes them.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Summary {
    /// How many values.
    pub count: u64,
    /// Their sum.
    pub sum: f64,
    /// The sum of their squares.
    pub sumsq: f64,
    /// The smallest.
    pub min: f64,
    /// The largest.
    pub max: f64,
    /// `sum / count`.
    pub average: f64,
    /// The sample standard deviation: `√((sumsq − sum²/count) / (count − 1))` (over 1
    /// for one value).
    pub stddev: f64,
}

impl Summary {
    fn from_scores(scores: HashMap<String, f64>, key: &str) -> Result<Option<Summary>> {
        if scores.is_empty() {
            return Ok(None);
        }
        let get = |name: &str| {
            scores
                .get(name)
                .copied()
                .ok_or_else(|| Error::unexpected_reply("stats", format!("{key} has no `{name}`")))
        };
        let (count, sum, sumsq) = (get("count")?, get("sum")?, get("sumsq")?);
        let numerator = (sumsq - sum * sum / count).max(0.0);
        Ok(Some(Summary {
            count: count as u64,
            sum,
            sumsq,
            min: get("min")?,
            max: get("max")?,
            average: sum / count,
            stddev: (numerator / (count - 1.0).max(1.0)).sqrt(),
        }))
    }
}

/// Hourly statistics and the ranking of the slowest contexts. See the [module docs](self).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stats {
    prefix: String,
    slowest: String,
    slowest_kept: u64,
    /// How [`access_time`](Stats::access_time) runs its scripts.
    mode: ScriptMode,
}

impl Default for Stats {
    fn default() -> Self {
        Stats::new()
    }
}

impl Stats {
    /// The book's keys: `stats:<context>:<type>` (with a hash tag) and
    /// `slowest:AccessTime`, keeping the 100 slowest.
    pub fn new() -> Self {
        Stats {
            prefix: "stats".to_owned(),
            slowest: SLOWEST_KEY.to_owned(),
            slowest_kept: SLOWEST_KEPT,
            mode: ScriptMode::Eval,
        }
    }

    /// The same statistics, whose [`access_time`](Stats::access_time) runs its scripts
    /// with `mode` ([`ScriptMode::Eval`] by default; see [`Op::via`]). The operations
    /// they return choose for themselves.
    ///
    /// ```
    /// use redis_patterns::{ScriptMode, stats::Stats};
    ///
    /// let stats = Stats::new().via(ScriptMode::Functions);
    /// # let _ = stats;
    /// ```
    pub fn via(mut self, mode: ScriptMode) -> Self {
        self.mode = mode;
        self
    }

    /// Names the statistics `{<prefix>:<context>:<type>}` instead. An empty prefix is
    /// [`Error::InvalidInput`].
    pub fn with_prefix(mut self, prefix: impl Into<String>) -> Result<Self> {
        let prefix = prefix.into();
        input::key("prefix", &prefix)?;
        self.prefix = prefix;
        Ok(self)
    }

    /// Keeps the ranking of the slowest at `key`, with the `kept` (1 to 10,000) slowest.
    pub fn with_slowest(mut self, key: impl Into<String>, kept: u64) -> Result<Self> {
        let key = script::keys::slowest(&key.into())?;
        input::check_param(&script::SLOWEST.args[2], Some(kept))?;
        self.slowest = key;
        self.slowest_kept = kept;
        Ok(self)
    }

    /// The four keys of a context's statistics of a type: the current hour, its start,
    /// the previous hour, and its start.
    pub fn keys(&self, context: &str, kind: &str) -> Result<[String; 4]> {
        input::key("context", context)?;
        input::key("type", kind)?;
        let name = format!("{}:{context}:{kind}", self.prefix);
        if name.contains(['{', '}']) {
            return Err(Error::invalid(
                "context",
                format!("{name:?}: the prefix, context and type must not hold `{{` or `}}`"),
            ));
        }
        let prefix = self.prefix.as_str();
        Ok([
            script::keys::stats(prefix, context, kind)?,
            script::keys::start(prefix, context, kind)?,
            script::keys::last(prefix, context, kind)?,
            script::keys::pstart(prefix, context, kind)?,
        ])
    }

    /// Adds `value` (finite, at most 10^100 in size) to this hour's statistics of
    /// `context` and `kind`, at `now` (ms, your clock): rotates the previous hour out first
    /// if `now` is in a later hour, then counts the value, in one step. One script
    /// (`stats/update`).
    pub fn update_stats(&self, context: &str, kind: &str, value: f64, now: u64) -> Op<Totals> {
        Op::try_build(|| {
            let [stats, start, last, pstart] = self.keys(context, kind)?;
            Ok(
                script::update(&stats, &start, &last, &pstart, value, now).map(
                    |(count, sum, sumsq)| {
                        Ok(Totals {
                            count: count as u64,
                            sum,
                            sumsq,
                        })
                    },
                ),
            )
        })
    }

    /// This hour's statistics of `context` and `kind`, or `None` when there are none
    /// (`ZRANGE … WITHSCORES`).
    pub fn get_stats(&self, context: &str, kind: &str) -> Op<Option<Summary>> {
        Op::try_build(|| {
            let [stats, ..] = self.keys(context, kind)?;
            Ok(summary_of(stats))
        })
    }

    /// The previous hour's statistics (the last one rotated out), or `None`.
    pub fn last_hour_stats(&self, context: &str, kind: &str) -> Op<Option<Summary>> {
        Op::try_build(|| {
            let [_, _, last, _] = self.keys(context, kind)?;
            Ok(summary_of(last))
        })
    }

    /// Records `average` as `context`'s in the ranking of the slowest, keeping the
    /// slowest; returns the ranking's size. One script (`stats/slowest`).
    pub fn record_slowest(&self, context: &str, average: f64) -> Op<u64> {
        script::slowest(&self.slowest, context, average, self.slowest_kept)
            .map(|size| Ok(size.max(0) as u64))
    }

    /// The `n` (at least 1) slowest contexts, slowest first, with their average (s).
    pub fn slowest(&self, n: usize) -> Op<Vec<(String, f64)>> {
        Op::try_build(|| {
            let n = input::count("n", n)?;
            let mut cmd = redis::cmd("ZREVRANGE");
            cmd.arg(&self.slowest).arg(0).arg(n - 1).arg("WITHSCORES");
            Ok(Op::native(cmd))
        })
    }

    /// Runs `f`, then records how long it took (seconds) in `context`'s `AccessTime`
    /// statistics at the system clock's time, and `context`'s new average in the ranking
    /// of the slowest; returns what `f` returned. The time is recorded whether `f`
    /// succeeds or fails; `f`'s error comes first. Two round trips, each one script.
    pub fn access_time<T, E: From<Error>>(
        &self,
        con: &mut dyn redis::ConnectionLike,
        context: &str,
        f: impl FnOnce() -> std::result::Result<T, E>,
    ) -> std::result::Result<T, E> {
        let started = Instant::now();
        let result = f();
        let recorded = self.record_access(con, context, started.elapsed().as_secs_f64());
        let value = result?;
        recorded?;
        Ok(value)
    }

    fn record_access(
        &self,
        con: &mut dyn redis::ConnectionLike,
        context: &str,
        seconds: f64,
    ) -> Result<()> {
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as u64);
        let totals = self
            .update_stats(context, ACCESS_TIME, seconds, now)
            .via(self.mode)
            .run(con)?;
        self.record_slowest(context, totals.sum / totals.count.max(1) as f64)
            .via(self.mode)
            .run(con)?;
        Ok(())
    }
}

fn summary_of(key: String) -> Op<Option<Summary>> {
    let mut cmd = redis::cmd("ZRANGE");
    cmd.arg(&key).arg(0).arg(-1).arg("WITHSCORES");
    Op::native(cmd).map(move |scores: HashMap<String, f64>| Summary::from_scores(scores, &key))
}
