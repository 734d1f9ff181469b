//! Application logs in Redis: Redis in Action chapter 5 (`log_recent`, `log_common`),
//! the recent log of each name and severity, and the hourly counts of common messages,
//! each write one step on the server's clock.
//!
//! ```no_run
//! # fn demo() -> redis_patterns::Result<()> {
//! use redis_patterns::app_log::{AppLog, Severity};
//!
//! let mut con = redis::Client::open("redis://127.0.0.1/")?.get_connection()?;
//! let log = AppLog::new("checkout")?;
//! log.log_common("payment declined", Severity::Warning).run(&mut con)?;
//! for entry in log.recent(Severity::Warning).run(&mut con)? {
//!     println!("{} {}", entry.time_ms, entry.message);
//! }
//! let top = log.common(Severity::Warning, 10).run(&mut con)?;
//! # Ok(()) }
//! ```
//!
//! (For 《Redis 应用实例》's log, see [`log`](crate::log).)
//!
//! The logs of a name and a severity are five keys in one hash slot, the book's with a
//! hash tag:
//!
//! | Book key | Here | Holds |
//! |---|---|---|
//! | `recent:<name>:<severity>` | `recent:{<name>:<severity>}` | list: the newest entries first, `<ms> <message>` |
//! | `common:<name>:<severity>` | `common:{<name>:<severity>}` | zset: message → its count this hour |
//! | `…:start` | `common:{<name>:<severity>}:start` | the hour the counts are of (Unix s) |
//! | `…:last`, `…:pstart` | `common:{…}:last`, `common:{…}:pstart` | the previous hour's counts, and that hour |
//!
//! | Book | Here | Wire |
//! |---|---|---|
//! | `log_recent(conn, name, message, severity=INFO)` | [`log_recent(message, severity)`](AppLog::log_recent) | script `app_log/recent` |
//! | `log_common(conn, name, message, severity=INFO, timeout=5)` | [`log_common(message, severity)`](AppLog::log_common) | script `app_log/common` |
//! | (reading them back) | [`recent(severity)`](AppLog::recent), [`common(severity, n)`](AppLog::common), [`common_last_hour(severity, n)`](AppLog::common_last_hour) | `LRANGE`, `ZREVRANGE … WITHSCORES` |
//!
//! What differs from the book, and why:
//!
//! - **`log_common` always logs, once.** The book retries a WATCH transaction for 5 s
//!   and then returns having logged nothing, without a word. Here the rotation, the count
//!   and the recent entry are one script, which never conflicts.
//! - **The hour rotates once per hour, every hour.** The book's first version compares
//!   hour numbers of the day, so after midnight it never rotates again; its rotation
//!   fails (`RENAME` of a missing key) when `:start` exists and the counts do not. Here
//!   hours are absolute Unix hours of the server's clock, and a missing count set is no
//!   error.
//! - **Entries carry the server's time in ms** (`<ms> <message>`), where the book writes
//!   each web server's `time.asctime()`: one clock orders every server's entries, and
//!   [`recent`](AppLog::recent) reads them back as [`LogEntry`] values.
//!
//! **On a cluster**, each name and severity is one hash slot, so a `log_common` stays
//! atomic, and logs spread over the shards by name and severity.

use crate::runtime::error::{Error, Result};
use crate::runtime::input;
use crate::runtime::op::Op;
use crate::runtime::reply;
use crate::scripts::app_log as script;

/// The book's number of recent entries kept: 100.
pub const RECENT_KEPT: u64 = 100;

/// How severe a message is: Python's `logging` levels, named as the book's keys name
/// them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Severity {
    /// `debug`
    Debug,
    /// `info`
    Info,
    /// `warning`
    Warning,
    /// `error`
    Error,
    /// `critical`
    Critical,
}

impl Severity {
    /// The name in the keys: `debug`, `info`, `warning`, `error` or `critical`.
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Debug => "debug",
            Severity::Info => "info",
            Severity::Warning => "warning",
            Severity::Error => "error",
            Severity::Critical => "critical",
        }
    }
}

/// An entry of a recent log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogEntry {
    /// When it was logged (Unix ms, the server's clock).
    pub time_ms: u64,
    /// The message.
    pub message: String,
}

/// The recent and common logs of one name. See the [module docs](self).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AppLog {
    name: String,
    recent_kept: u64,
}

/// The five keys of a name and severity.
struct Keys {
    recent: String,
    common: String,
    start: String,
    last: String,
    pstart: String,
}

impl AppLog {
    /// The logs named `name` (a part of a hash tag: no `{` or `}`), keeping the last 100
    /// recent entries of each severity, as the book.
    pub fn new(name: impl Into<String>) -> Result<Self> {
        let name = name.into();
        input::key("name", &name)?;
        if name.contains(['{', '}']) {
            return Err(Error::invalid(
                "name",
                format!("{name:?} must not hold `{{` or `}}`: it is a part of a hash tag"),
            ));
        }
        Ok(AppLog {
            name,
            recent_kept: RECENT_KEPT,
        })
    }

    /// Keeps the last `kept` (1 to 10,000) recent entries of each severity.
    pub fn with_recent_kept(mut self, kept: u64) -> Result<Self> {
        input::check_param(&script::RECENT.args[1], Some(kept))?;
        self.recent_kept = kept;
        Ok(self)
    }

    /// The name.
    pub fn name(&self) -> &str {
        &self.name
    }

    fn keys(&self, severity: Severity) -> Keys {
        use script::keys;
        let (name, severity) = (self.name.as_str(), severity.as_str());
        // `new` refused an empty name and one with a brace, and a severity is a plain
        // word: the templates take every such pair.
        let key = |built: crate::Result<String>| built.expect("a checked name and a severity");
        Keys {
            recent: key(keys::recent(name, severity)),
            common: key(keys::common(name, severity)),
            start: key(keys::start(name, severity)),
            last: key(keys::last(name, severity)),
            pstart: key(keys::pstart(name, severity)),
        }
    }

    /// The keys of `severity`'s logs: recent, common, start, last and pstart.
    pub fn key_names(&self, severity: Severity) -> [String; 5] {
        let k = self.keys(severity);
        [k.recent, k.common, k.start, k.last, k.pstart]
    }

    /// Logs `message` to the recent log of `severity`, keeping the last entries; returns
    /// when it was logged (ms, server clock). One script (`app_log/recent`).
    pub fn log_recent(&self, message: &str, severity: Severity) -> Op<u64> {
        script::recent(&self.keys(severity).recent, message, self.recent_kept)
            .map(|ms| Ok(ms.max(0) as u64))
    }

    /// Counts `message` in this hour's common log of `severity` (rotating the previous
    /// hour out first, on the server's clock) and logs it to the recent log; returns its
    /// count this hour. One script (`app_log/common`).
    pub fn log_common(&self, message: &str, severity: Severity) -> Op<u64> {
        let k = self.keys(severity);
        script::common(
            &k.common,
            &k.start,
            &k.last,
            &k.pstart,
            &k.recent,
            message,
            self.recent_kept,
        )
        .map(|count| Ok(count.max(0) as u64))
    }

    /// The recent log of `severity`, newest first (`LRANGE`).
    pub fn recent(&self, severity: Severity) -> Op<Vec<LogEntry>> {
        let mut cmd = redis::cmd("LRANGE");
        cmd.arg(self.keys(severity).recent).arg(0).arg(-1);
        Op::native(cmd).map(|entries: Vec<Vec<u8>>| {
            entries
                .into_iter()
                .map(|entry| {
                    let space = entry.iter().position(|&b| b == b' ').unwrap_or(entry.len());
                    Ok(LogEntry {
                        time_ms: reply::number(&entry[..space])?,
                        message: reply::text(entry.get(space + 1..).unwrap_or_default().to_vec())?,
                    })
                })
                .collect()
        })
    }

    /// The `n` (at least 1) most common messages of `severity` this hour, with their
    /// counts (`ZREVRANGE … WITHSCORES`).
    pub fn common(&self, severity: Severity, n: usize) -> Op<Vec<(String, u64)>> {
        top(self.keys(severity).common, n)
    }

    /// The `n` (at least 1) most common messages of `severity` in the previous hour, with
    /// their counts.
    pub fn common_last_hour(&self, severity: Severity, n: usize) -> Op<Vec<(String, u64)>> {
        top(self.keys(severity).last, n)
    }
}

fn top(key: String, n: usize) -> Op<Vec<(String, u64)>> {
    Op::try_build(|| {
        let n = input::count("n", n)?;
        let mut cmd = redis::cmd("ZREVRANGE");
        cmd.arg(key).arg(0).arg(n - 1).arg("WITHSCORES");
        Ok(Op::native(cmd))
    })
}
