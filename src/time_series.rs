//! Time-series counters at several precisions: Redis in Action chapter 5
//! (`update_counter`, `get_counter`, `clean_counters`), with time from the caller and a
//! cleanup in bounded steps.
//!
//! ```no_run
//! # fn demo() -> redis_patterns::Result<()> {
//! use redis_patterns::time_series::TimeSeries;
//!
//! let mut con = redis::Client::open("redis://127.0.0.1/")?.get_connection()?;
//! let hits = TimeSeries::new("stats")?;
//! hits.update_counter("hits", 1, 1_700_000_000_000).run(&mut con)?;
//! let per_5_s: Vec<(u64, i64)> = hits.get_counter("hits", 5).run(&mut con)?;
//! hits.clean_all(&mut con, 1_700_000_000_000)?;
//! # Ok(()) }
//! ```
//!
//! A [`TimeSeries`] is a namespace of counters, all in one hash slot:
//!
//! | Book key | Here | Holds |
//! |---|---|---|
//! | `known:` | `{ns}:known` | zset: `<precision>:<name>` of every counter → 0 |
//! | `count:<precision>:<name>` | `{ns}:count:<precision>:<name>` | hash: slot start (Unix s) → count |
//!
//! | Book | Here | Wire |
//! |---|---|---|
//! | `update_counter(conn, name, count=1, now=None)` | [`update_counter(name, count, now_ms)`](TimeSeries::update_counter) | script `time_series/update` |
//! | `get_counter(conn, name, precision)` → sorted `[(ts, count)]` | [`get_counter(name, precision)`](TimeSeries::get_counter) → `Vec<(u64, i64)>` | `HGETALL`, sorted here |
//! | `clean_counters(conn)`, a loop that never returns | [`clean_counters(con, now_ms, from, budget)`](TimeSeries::clean_counters): one bounded step; [`clean_all`](TimeSeries::clean_all): steps until done | `ZRANGE … BYLEX`, then script `time_series/clean` per chunk |
//!
//! What differs from the book, and why:
//!
//! - **Time is the caller's, in ms** (the book's is `time.time()` unless `now` is
//!   given): tests and backfills count exactly. Slots are whole seconds, as the book's.
//! - **Cleaning is bounded.** The book reads every sample of a hash with `HKEYS` and runs
//!   for ever; here a step scans at most `budget` chunks of about 1000 fields, and says
//!   where to go on. Taking an emptied counter out of the index happens in the same script
//!   as its last delete, so an update in between cannot be lost from the index (the
//!   book's WATCH only guards that last step). The book cleans a precision of `p` seconds
//!   every `p / 60` passes of a minute; how often to call is yours.
//! - **A slot that would overflow, or holds no integer, is refused before any write**:
//!   in the book, `HINCRBY`'s error leaves the transaction half applied.
//! - Precisions are the book's seven by default, or your own ([`with_precisions`](TimeSeries::with_precisions)).
//!
//! **On a cluster**, the book's `known:` spans every counter, so a namespace is one hash
//! slot and lives on one shard; spread counters over several namespaces to use more.

use crate::runtime::error::{Error, Result};
use crate::runtime::input;
use crate::runtime::op::{Op, ScriptMode};
use crate::scripts::time_series as script;

/// The book's precisions, in seconds: 1 s, 5 s, 1 min, 5 min, 1 h, 5 h, 1 day.
pub const PRECISIONS: [u64; 7] = [1, 5, 60, 300, 3600, 18_000, 86_400];
/// The book's number of slots kept per precision: 100.
pub const SAMPLE_COUNT: u64 = 100;
/// About how many fields of a hash one cleaning call scans.
pub const SCAN_CHUNK: u64 = 1000;

/// Where [`TimeSeries::clean_counters`] goes on: a counter, and where in its hash.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CleanCursor {
    /// `<precision>:<name>`: the counter being cleaned.
    member: String,
    /// The `HSCAN` cursor in its hash.
    scan: String,
}

/// What one [`TimeSeries::clean_counters`] step did.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Cleaned {
    /// Samples deleted.
    pub deleted: u64,
    /// Counters (at one precision) taken out of the index: they had no samples left.
    pub forgotten: u64,
    /// Where to go on, or `None` when every counter has been cleaned.
    pub next: Option<CleanCursor>,
}

/// Counters at several precisions, in one namespace. See the [module docs](self).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TimeSeries {
    namespace: String,
    known: String,
    precisions: Vec<u64>,
    samples: u64,
    /// How the cleaning loops run their scripts.
    mode: ScriptMode,
}

impl TimeSeries {
    /// The namespace `namespace` (its keys are `{namespace}:…`, one hash slot), with the
    /// book's seven precisions, keeping 100 slots of each. An empty namespace is
    /// [`Error::InvalidInput`].
    pub fn new(namespace: &str) -> Result<Self> {
        Ok(TimeSeries {
            known: script::keys::known(namespace)?,
            namespace: namespace.to_owned(),
            precisions: PRECISIONS.to_vec(),
            samples: SAMPLE_COUNT,
            mode: ScriptMode::Eval,
        })
    }

    /// The same counters, whose cleaning loops ([`clean_counters`](Self::clean_counters),
    /// [`clean_all`](Self::clean_all)) run their scripts with `mode`
    /// ([`ScriptMode::Eval`] by default; see [`Op::via`]). The operations they return
    /// choose for themselves.
    ///
    /// ```
    /// use redis_patterns::{ScriptMode, time_series::TimeSeries};
    ///
    /// let hits = TimeSeries::new("hits")?.via(ScriptMode::Functions);
    /// # let _ = hits;
    /// # Ok::<(), redis_patterns::Error>(())
    /// ```
    pub fn via(mut self, mode: ScriptMode) -> Self {
        self.mode = mode;
        self
    }

    /// Counts at `precisions` instead (1 to 16 of them, each from 1 s to 10^9 s, no two
    /// alike).
    pub fn with_precisions(mut self, precisions: &[u64]) -> Result<Self> {
        if precisions.is_empty() || precisions.len() > 16 {
            return Err(Error::invalid("precisions", "from 1 to 16 precisions"));
        }
        for (i, &p) in precisions.iter().enumerate() {
            if !(1..=1_000_000_000).contains(&p) || precisions[..i].contains(&p) {
                return Err(Error::invalid(
                    "precisions",
                    format!("{p}: each precision is from 1 to 10^9 s, and given once"),
                ));
            }
        }
        self.precisions = precisions.to_vec();
        Ok(self)
    }

    /// Keeps `samples` (1 to 100,000) slots of each precision when cleaning.
    pub fn with_samples(mut self, samples: u64) -> Result<Self> {
        input::check_param(&script::CLEAN.args[3], Some(samples))?;
        self.samples = samples;
        Ok(self)
    }

    /// The precisions counted, in seconds.
    pub fn precisions(&self) -> &[u64] {
        &self.precisions
    }

    /// The key of `name`'s hash at `precision` (the book's `count:<precision>:<name>`).
    pub fn count_key(&self, name: &str, precision: u64) -> Result<String> {
        script::keys::hash(&self.namespace, &precision.to_string(), name)
    }

    /// Counts `count` events of `name` at `now` (ms, your clock) at every precision, in
    /// one step; returns the count of `now`'s slot at the first precision. One script
    /// (`time_series/update`).
    pub fn update_counter(&self, name: &str, count: i64, now: u64) -> Op<i64> {
        Op::try_build(|| {
            let keys = self
                .precisions
                .iter()
                .map(|&p| self.count_key(name, p))
                .collect::<Result<Vec<_>>>()?;
            let keys: Vec<&str> = keys.iter().map(String::as_str).collect();
            Ok(script::update(
                &self.known,
                &keys,
                name,
                count,
                now,
                &self.precisions,
            ))
        })
    }

    /// `name`'s slots at `precision` (seconds), oldest first: each slot's start (Unix s)
    /// and count; empty for an unknown counter (`HGETALL`).
    pub fn get_counter(&self, name: &str, precision: u64) -> Op<Vec<(u64, i64)>> {
        Op::try_build(|| {
            let mut cmd = redis::cmd("HGETALL");
            cmd.arg(self.count_key(name, precision)?);
            Ok(Op::native(cmd).map(|slots: Vec<(u64, i64)>| {
                let mut slots = slots;
                slots.sort_unstable();
                Ok(slots)
            }))
        })
    }

    /// The counters known, as `(precision, name)`, from the index (`ZRANGE`).
    pub fn known(&self) -> Op<Vec<(u64, String)>> {
        let mut cmd = redis::cmd("ZRANGE");
        cmd.arg(&self.known).arg(0).arg(-1);
        Op::native(cmd).map(|members: Vec<String>| Ok(members.iter().map(|m| split(m)).collect()))
    }

    /// One bounded step of the book's `clean_counters` at time `now` (ms): from `from`
    /// (`None`: the first counter), deletes the samples older than the newest kept slots
    /// (100 by default) of each counter in turn, and takes a counter that has none left
    /// out of the index. It makes at most `budget` (at least 1) calls of the script
    /// `time_series/clean`, each scanning about 1000 fields of one hash. Round trips: one
    /// read of the index per 100 counters, and one per call.
    pub fn clean_counters(
        &self,
        con: &mut dyn redis::ConnectionLike,
        now: u64,
        from: Option<&CleanCursor>,
        budget: usize,
    ) -> Result<Cleaned> {
        input::count("budget", budget)?;
        let mut done = Cleaned::default();
        let mut position = from.cloned();
        let mut calls = 0;
        loop {
            // The next counters in the index, from where the last step stopped.
            let mut cmd = redis::cmd("ZRANGE");
            cmd.arg(&self.known);
            match &position {
                Some(at) => cmd.arg(format!("[{}", at.member)),
                None => cmd.arg("-"),
            };
            cmd.arg("+").arg("BYLEX").arg("LIMIT").arg(0).arg(100);
            let members: Vec<String> = Op::native(cmd).run(con)?;
            if members.is_empty() {
                return Ok(done);
            }
            let mut last = String::new();
            for member in &members {
                let mut scan = match &position {
                    Some(at) if at.member == *member => at.scan.clone(),
                    _ => "0".to_owned(),
                };
                let (precision, name) = split(member);
                if precision == 0 || name.is_empty() {
                    return Err(Error::unexpected_reply(
                        "time_series index",
                        format!("{member:?} is not <precision>:<name>"),
                    ));
                }
                let key = self.count_key(&name, precision)?;
                loop {
                    if calls == budget {
                        done.next = Some(CleanCursor {
                            member: member.clone(),
                            scan,
                        });
                        return Ok(done);
                    }
                    let (next, deleted, forgotten) = script::clean(
                        &self.known,
                        &key,
                        &name,
                        precision,
                        now,
                        self.samples,
                        &scan,
                        SCAN_CHUNK,
                    )
                    .via(self.mode)
                    .run(con)?;
                    calls += 1;
                    done.deleted += deleted.max(0) as u64;
                    done.forgotten += u64::from(forgotten);
                    if next == "0" {
                        break;
                    }
                    scan = next;
                }
                last.clone_from(member);
            }
            // Every member read is done: go on after the last one.
            position = Some(CleanCursor {
                member: format!("{last}\u{0}"),
                scan: "0".to_owned(),
            });
            if members.len() < 100 {
                return Ok(done);
            }
        }
    }

    /// Runs [`clean_counters`](Self::clean_counters) steps of 10 calls until every counter
    /// has been cleaned at `now` (ms); returns what they did in all.
    pub fn clean_all(&self, con: &mut dyn redis::ConnectionLike, now: u64) -> Result<Cleaned> {
        let mut total = Cleaned::default();
        let mut from = None;
        loop {
            let step = self.clean_counters(con, now, from.as_ref(), 10)?;
            total.deleted += step.deleted;
            total.forgotten += step.forgotten;
            match step.next {
                Some(next) => from = Some(next),
                None => return Ok(total),
            }
        }
    }
}

/// `<precision>:<name>` → `(precision, name)`; precision 0 when it is not a number.
fn split(member: &str) -> (u64, String) {
    let (precision, name) = member.split_once(':').unwrap_or(("", member));
    (precision.parse().unwrap_or(0), name.to_owned())
}
