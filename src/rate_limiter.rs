//! Rate limiters: 《Redis 应用实例》 chapter 8 (`RateLimiter`, a fixed window), and two
//! algorithms beyond the book, a sliding window and GCRA, all behind one trait.
//!
//! | | [`RateLimiter`] (book) | [`SlidingWindowLimiter`] | [`GcraLimiter`] |
//! |---|---|---|---|
//! | Algorithm | fixed window | sliding-window log | GCRA (token bucket) |
//! | Memory per key | one counter | one sorted-set entry per admitted request: O(`limit`) | one string (a time) |
//! | Exactness | up to 2 × `maximum` in a span of `interval` that straddles two windows | exact: no span of `period` ever holds more than `limit` | exact for its model: at most `burst + t × rate` in any span t |
//! | Bursts | the whole `maximum` at any moment, twice at a window edge | the whole `limit`, then nothing until the oldest request leaves | `burst` at once, then evenly spaced at the sustained rate |
//! | Clock | Redis's key expiry | the server's `TIME` | the server's `TIME` |
//! | Script | `is_permitted`, `duration` (read-only) | `sliding_window` | `gcra` |
//!
//! All three implement [`Limiter`]: [`attempt`](Limiter::attempt) spends `cost` units for
//! a client and answers a [`Decision`] (allowed, remaining, retry-after, reset-after), in
//! one script and one round trip. Times come from the Redis server, never from the
//! caller's clock, so every client of a limiter agrees on them. Each key expires when its
//! limiter would be full again, so an idle client costs no memory. A refused attempt is
//! not counted and writes nothing.
//!
//! The sliding window and GCRA read the server's clock once per call (`TIME`), so their
//! answers do not depend on the callers' clocks being in sync; a server that forbids
//! `TIME` in scripts (some managed offerings restrict it) cannot run them. When Redis
//! itself fails, the operation returns the error and the caller decides whether to fail
//! open (admit) or closed; for an API, failing open is the usual advice.
//!
//! Keys are per client and action, as in the book: `RateLimiter:<uid>:<action>`,
//! `SlidingWindowLimiter:<uid>:<action>` and `GcraLimiter:<uid>:<action>`, or another
//! prefix set with `with_prefix`. Each call touches one key, so they work on a cluster as
//! they are.
//!
//! # Differences from the book
//!
//! - `is_permitted` is one script (`rate_limiter/is_permitted`) instead of
//!   MULTI/INCRBY/EXPIRE NX/EXEC, because it reads the count before counting: a refused
//!   attempt is **not** counted (the book counts it). The window never moves either way
//!   (the book's `EXPIRE NX`), so counting refusals changes no answer; it would only cost
//!   a write (replicated, persisted) per refusal during a flood, and let the stored count
//!   grow past `maximum`, which is the number the per-window invariant is about.
//! - The window's length is a [`Duration`] in milliseconds, and
//!   [`duration`](RateLimiter::duration) answers to the millisecond, not the book's whole
//!   seconds of `TTL`. It is one read-only script (`rate_limiter/duration`), run with
//!   `EVALSHA_RO`.
//! - A counter that lost its expiry (PERSIST, a SET from elsewhere) gets its window back
//!   on the next attempt instead of refusing forever.
//! - `remaining` and `revoke` stay single native commands (`GET`, `DEL`).
//!
//! ```no_run
//! # fn demo() -> redis_patterns::Result<()> {
//! use std::time::Duration;
//! use redis_patterns::rate_limiter::{GcraLimiter, Limiter, RateLimiter};
//!
//! let mut con = redis::Client::open("redis://127.0.0.1/")?.get_connection()?;
//!
//! // The book: at most 3 logins per hour for each user.
//! let login = RateLimiter::new("login", Duration::from_secs(3600), 3);
//! assert!(login.is_permitted("Peter").run(&mut con)?);
//! assert_eq!(login.remaining("Peter").run(&mut con)?, 2);
//!
//! // An API: bursts of 20, then 10 requests per second.
//! let api = GcraLimiter::new("api", 20, 10, Duration::from_secs(1));
//! let decision = api.attempt("client-7", 1).run(&mut con)?;
//! if !decision.allowed {
//!     println!("429, retry after {:?}", decision.retry_after);
//! }
//! # Ok(()) }
//! ```

use std::time::Duration;

use crate::runtime::error::Error;
use crate::runtime::input;
use crate::runtime::op::Op;
use crate::scripts;

/// The longest time a GCRA bucket may take to refill (`burst × period / count`), in
/// milliseconds: the longest `period` the scripts accept, about 115 days.
const MAX_REFILL_MS: u64 = 10_000_000_000;

/// What a limiter answered to one [`attempt`](Limiter::attempt), computed on the server's
/// clock; enough for the `RateLimit-*` and `Retry-After` headers of an HTTP 429.
///
/// ```no_run
/// # fn demo() -> redis_patterns::Result<()> {
/// use std::time::Duration;
/// use redis_patterns::rate_limiter::{Limiter, SlidingWindowLimiter};
///
/// let mut con = redis::Client::open("redis://127.0.0.1/")?.get_connection()?;
/// let limiter = SlidingWindowLimiter::new("message", 5, Duration::from_secs(60));
/// let d = limiter.attempt("Peter", 1).run(&mut con)?;
/// println!(
///     "allowed={} limit={} remaining={} retry_after={:?} reset_after={:?}",
///     d.allowed, d.limit, d.remaining, d.retry_after, d.reset_after
/// );
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Decision {
    /// Whether the attempt was admitted (and counted).
    pub allowed: bool,
    /// The limiter's size: `maximum`, `limit` or `burst`.
    pub limit: u64,
    /// Attempts of cost 1 that would still be admitted right now.
    pub remaining: u64,
    /// When refused: how long until the same attempt would be admitted. `None` when
    /// allowed.
    pub retry_after: Option<Duration>,
    /// How long until the limiter is back to full (`remaining == limit`) if nothing more
    /// is admitted; for the fixed window, until the window resets.
    pub reset_after: Duration,
}

/// A rate limiter keyed per client: the common face of [`RateLimiter`],
/// [`SlidingWindowLimiter`] and [`GcraLimiter`].
///
/// ```no_run
/// # fn demo() -> redis_patterns::Result<()> {
/// use std::time::Duration;
/// use redis_patterns::rate_limiter::{GcraLimiter, Limiter, RateLimiter, SlidingWindowLimiter};
///
/// let mut con = redis::Client::open("redis://127.0.0.1/")?.get_connection()?;
/// let limiters: Vec<Box<dyn Limiter>> = vec![
///     Box::new(RateLimiter::new("search", Duration::from_secs(1), 10)),
///     Box::new(SlidingWindowLimiter::new("search", 10, Duration::from_secs(1))),
///     Box::new(GcraLimiter::new("search", 10, 10, Duration::from_secs(1))),
/// ];
/// for limiter in &limiters {
///     let decision = limiter.attempt("Peter", 1).run(&mut con)?;
///     assert!(decision.allowed);
///     limiter.reset("Peter").run(&mut con)?;
/// }
/// # Ok(()) }
/// ```
pub trait Limiter {
    /// The key that holds `uid`'s state; fails on an empty `uid` or action.
    fn key(&self, uid: &str) -> crate::Result<String>;

    /// Spends `cost` units (from 1 to the limiter's size) for `uid`, all or none, and
    /// says whether they were admitted. One atomic script.
    fn attempt(&self, uid: &str, cost: u64) -> Op<Decision>;

    /// Forgets `uid`'s history (`DEL`): its next attempt finds the limiter full. True if
    /// there was something to forget.
    fn reset(&self, uid: &str) -> Op<bool> {
        Op::try_build(|| {
            let mut cmd = redis::cmd("DEL");
            cmd.arg(self.key(uid)?);
            Ok(Op::<i64>::native(cmd).map(|n| Ok(n > 0)))
        })
    }
}

/// The book's fixed-window limiter: at most `maximum` attempts per `interval` for each
/// client, the window starting at a client's first admitted attempt.
///
/// ```no_run
/// # fn demo() -> redis_patterns::Result<()> {
/// use std::time::Duration;
/// use redis_patterns::rate_limiter::RateLimiter;
///
/// let mut con = redis::Client::open("redis://127.0.0.1/")?.get_connection()?;
/// let login = RateLimiter::new("login", Duration::from_secs(3600), 3);
/// for _ in 0..3 {
///     assert!(login.is_permitted("Peter").run(&mut con)?);
/// }
/// assert!(!login.is_permitted("Peter").run(&mut con)?);
/// assert_eq!(login.remaining("Peter").run(&mut con)?, 0);
/// assert!(login.duration("Peter").run(&mut con)?.is_some()); // until the window resets
/// login.revoke("Peter").run(&mut con)?;
/// assert_eq!(login.remaining("Peter").run(&mut con)?, 3);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RateLimiter {
    prefix: String,
    action: String,
    interval: Duration,
    maximum: u64,
}

impl RateLimiter {
    /// At most `maximum` attempts of `action` (from 1 to 10^15 - 1) per `interval` (whole
    /// milliseconds, from 1 ms to 10^10 ms, about 115 days) for each client: the ranges
    /// of `rate_limiter/is_permitted`, checked when an operation is built.
    pub fn new(action: impl Into<String>, interval: Duration, maximum: u64) -> Self {
        RateLimiter {
            prefix: "RateLimiter".to_owned(),
            action: action.into(),
            interval,
            maximum,
        }
    }

    /// Keys `<prefix>:<uid>:<action>` instead of `RateLimiter:<uid>:<action>`, to keep an
    /// app's keys under its own namespace.
    pub fn with_prefix(mut self, prefix: impl Into<String>) -> Self {
        self.prefix = prefix.into();
        self
    }

    /// The action this limiter counts.
    pub fn action(&self) -> &str {
        &self.action
    }

    /// Whether one more attempt of `uid` is admitted; an admitted one is counted.
    /// One atomic script (`rate_limiter/is_permitted`); a refused attempt writes nothing.
    pub fn is_permitted(&self, uid: &str) -> Op<bool> {
        Op::try_build(|| Ok(self.attempt_op(uid, 1)?.map(|d| Ok(d.allowed))))
    }

    /// Attempts `uid` has left in the current window: `maximum` when it has none
    /// running, 0 when it is used up (`GET`).
    pub fn remaining(&self, uid: &str) -> Op<u64> {
        Op::try_build(|| {
            let maximum = self.maximum;
            input::check_param(&scripts::rate_limiter::IS_PERMITTED.args[0], maximum)?;
            let mut cmd = redis::cmd("GET");
            cmd.arg(self.key(uid)?);
            Ok(Op::<Option<u64>>::native(cmd)
                .map(move |n| Ok(maximum.saturating_sub(n.unwrap_or(0)))))
        })
    }

    /// How long until `uid`'s window resets, only when its limit is reached; `None` while
    /// attempts are admitted. One read-only script (`rate_limiter/duration`, `EVALSHA_RO`).
    pub fn duration(&self, uid: &str) -> Op<Option<Duration>> {
        Op::try_build(|| {
            Ok(
                scripts::rate_limiter::duration(&self.key(uid)?, self.maximum).map(|ms| {
                    Ok(ms
                        .and_then(|ms| u64::try_from(ms).ok())
                        .map(Duration::from_millis))
                }),
            )
        })
    }

    /// Ends `uid`'s window (`DEL`): its next attempt starts a fresh one.
    pub fn revoke(&self, uid: &str) -> Op<()> {
        Op::try_build(|| {
            let mut cmd = redis::cmd("DEL");
            cmd.arg(self.key(uid)?);
            Ok(Op::<i64>::native(cmd).map(|_| Ok(())))
        })
    }

    fn attempt_op(&self, uid: &str, cost: u64) -> crate::Result<Op<Decision>> {
        let maximum = self.maximum;
        check_cost(cost, "maximum", maximum)?;
        Ok(
            scripts::rate_limiter::is_permitted(&self.key(uid)?, maximum, self.interval, cost)
                .map(move |reply| decision(maximum, reply)),
        )
    }
}

impl Limiter for RateLimiter {
    /// `RateLimiter:<uid>:<action>`, as in the book.
    fn key(&self, uid: &str) -> crate::Result<String> {
        per_client_key(&self.prefix, uid, &self.action)
    }

    fn attempt(&self, uid: &str, cost: u64) -> Op<Decision> {
        Op::try_build(|| self.attempt_op(uid, cost))
    }
}

/// An exact sliding window: at most `limit` attempts in any span of `period`, whatever
/// its alignment. Beyond the book.
///
/// The log is a sorted set with one entry per admitted attempt in the window, so memory
/// grows with the traffic (at most `limit` entries, `limit` at most 10^6): meant for
/// limits such as login attempts or messages per minute. Each attempt costs O(log N)
/// whatever its `cost`. For large limits, [`GcraLimiter`] keeps one string.
///
/// ```no_run
/// # fn demo() -> redis_patterns::Result<()> {
/// use std::time::Duration;
/// use redis_patterns::rate_limiter::{Limiter, SlidingWindowLimiter};
///
/// let mut con = redis::Client::open("redis://127.0.0.1/")?.get_connection()?;
/// let sms = SlidingWindowLimiter::new("sms", 3, Duration::from_secs(600));
/// let d = sms.attempt("+33600000000", 1).run(&mut con)?;
/// assert!(d.allowed);
/// assert_eq!(d.remaining, 2);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SlidingWindowLimiter {
    prefix: String,
    action: String,
    limit: u64,
    period: Duration,
}

impl SlidingWindowLimiter {
    /// At most `limit` attempts of `action` (from 1 to 10^6) in any span of `period`
    /// (whole milliseconds, from 1 ms to 10^10 ms) for each client: the ranges of
    /// `rate_limiter/sliding_window`, checked when an operation is built.
    pub fn new(action: impl Into<String>, limit: u64, period: Duration) -> Self {
        SlidingWindowLimiter {
            prefix: "SlidingWindowLimiter".to_owned(),
            action: action.into(),
            limit,
            period,
        }
    }

    /// Keys `<prefix>:<uid>:<action>` instead of `SlidingWindowLimiter:<uid>:<action>`,
    /// to keep an app's keys under its own namespace.
    pub fn with_prefix(mut self, prefix: impl Into<String>) -> Self {
        self.prefix = prefix.into();
        self
    }

    /// The action this limiter counts.
    pub fn action(&self) -> &str {
        &self.action
    }
}

impl Limiter for SlidingWindowLimiter {
    /// `SlidingWindowLimiter:<uid>:<action>`.
    fn key(&self, uid: &str) -> crate::Result<String> {
        per_client_key(&self.prefix, uid, &self.action)
    }

    /// One atomic script (`rate_limiter/sliding_window`).
    fn attempt(&self, uid: &str, cost: u64) -> Op<Decision> {
        Op::try_build(|| {
            let limit = self.limit;
            check_cost(cost, "limit", limit)?;
            Ok(
                scripts::rate_limiter::sliding_window(&self.key(uid)?, limit, self.period, cost)
                    .map(move |reply| decision(limit, reply)),
            )
        })
    }
}

/// GCRA, the token bucket without a refill process: `burst` attempts at once, then
/// `count` per `period`. Beyond the book; what redis-cell's `CL.THROTTLE` and
/// go-redis/redis_rate do.
///
/// Only the theoretical arrival time is stored: one string per client, whatever the
/// rate. Over any span t it admits at most `burst + t × count / period` attempts, and
/// exactly that many when clients keep asking.
///
/// ```no_run
/// # fn demo() -> redis_patterns::Result<()> {
/// use std::time::Duration;
/// use redis_patterns::rate_limiter::{GcraLimiter, Limiter};
///
/// let mut con = redis::Client::open("redis://127.0.0.1/")?.get_connection()?;
/// // Uploads weighted by size: a bucket of 100 MB, refilled at 10 MB per second.
/// let upload = GcraLimiter::new("upload_mb", 100, 10, Duration::from_secs(1));
/// let d = upload.attempt("Peter", 25).run(&mut con)?;
/// assert!(d.allowed);
/// assert_eq!(d.remaining, 75);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GcraLimiter {
    prefix: String,
    action: String,
    burst: u64,
    count: u64,
    period: Duration,
}

impl GcraLimiter {
    /// A bucket of `burst` attempts of `action` per client that regains `count` attempts
    /// per `period` (whole milliseconds). `burst` and `count` go from 1 to 10^15 - 1,
    /// `period` from 1 ms to 10^10 ms (the ranges of `rate_limiter/gcra`), and the time to
    /// refill the whole bucket (`burst × period / count`) is at most 10^10 ms.
    pub fn new(action: impl Into<String>, burst: u64, count: u64, period: Duration) -> Self {
        GcraLimiter {
            prefix: "GcraLimiter".to_owned(),
            action: action.into(),
            burst,
            count,
            period,
        }
    }

    /// Keys `<prefix>:<uid>:<action>` instead of `GcraLimiter:<uid>:<action>`, to keep an
    /// app's keys under its own namespace.
    pub fn with_prefix(mut self, prefix: impl Into<String>) -> Self {
        self.prefix = prefix.into();
        self
    }

    /// The action this limiter counts.
    pub fn action(&self) -> &str {
        &self.action
    }

    /// The time between two attempts at the sustained rate: `period / count`.
    pub fn emission_interval(&self) -> Duration {
        let nanos = self.period.as_nanos() / u128::from(self.count.max(1));
        Duration::from_nanos(u64::try_from(nanos).unwrap_or(u64::MAX))
    }
}

impl Limiter for GcraLimiter {
    /// `GcraLimiter:<uid>:<action>`.
    fn key(&self, uid: &str) -> crate::Result<String> {
        per_client_key(&self.prefix, uid, &self.action)
    }

    /// One atomic script (`rate_limiter/gcra`).
    fn attempt(&self, uid: &str, cost: u64) -> Op<Decision> {
        Op::try_build(|| {
            let (burst, rate) = (self.burst, self.count);
            let gcra = &scripts::rate_limiter::GCRA;
            input::check_param(&gcra.args[0], burst)?;
            input::check_param(&gcra.args[1], rate)?;
            input::check_param(&gcra.args[2], self.period)?;
            // The one rule over several settings, after each alone.
            let period_ms = self.period.as_millis();
            if u128::from(burst) * period_ms > u128::from(MAX_REFILL_MS) * u128::from(rate) {
                return Err(Error::invalid(
                    "period",
                    format!(
                        "the bucket would take burst × period / count = {burst} × {period_ms} ms / {rate} to refill; at most {MAX_REFILL_MS} ms"
                    ),
                ));
            }
            check_cost(cost, "burst", burst)?;
            Ok(
                scripts::rate_limiter::gcra(&self.key(uid)?, burst, rate, self.period, cost)
                    .map(move |reply| decision(burst, reply)),
            )
        })
    }
}

/// `<prefix>:<uid>:<action>`, with no part empty.
fn per_client_key(prefix: &str, uid: &str, action: &str) -> crate::Result<String> {
    let prefix = input::key("prefix", prefix)?;
    let uid = input::key("uid", uid)?;
    let action = input::key("action", action)?;
    Ok(format!("{prefix}:{uid}:{action}"))
}

/// A cost up to the limiter's size: a larger one could never be admitted. (A cost of 0,
/// like a size of 0, is refused by the script's own ranges, with the call.)
fn check_cost(cost: u64, size: &str, max: u64) -> crate::Result<()> {
    if cost > max && max > 0 {
        return Err(Error::invalid(
            "cost",
            format!("must be from 1 to the limiter's {size} ({max}), got {cost}"),
        ));
    }
    Ok(())
}

/// The scripts' reply: allowed, remaining, retry-after µs (-1 when allowed), reset-after µs.
fn decision(
    limit: u64,
    (allowed, remaining, retry, reset): (bool, i64, i64, i64),
) -> crate::Result<Decision> {
    let micros = |what: &'static str, n: i64| {
        u64::try_from(n)
            .map(Duration::from_micros)
            .map_err(|_| Error::unexpected_reply(what, n.to_string()))
    };
    Ok(Decision {
        allowed,
        limit,
        remaining: u64::try_from(remaining).map_err(|_| {
            Error::unexpected_reply("a negative remaining count", remaining.to_string())
        })?,
        retry_after: if allowed {
            None
        } else {
            Some(micros("a negative retry-after", retry)?)
        },
        reset_after: micros("a negative reset-after", reset)?,
    })
}
