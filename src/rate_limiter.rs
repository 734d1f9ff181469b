//! Rate limiters: 《Redis 应用实例》 chapter 8 (`RateLimiter`, a fixed window), and two
//! algorithms beyond the book, a sliding window and GCRA, all behind one trait.
//!
//! ```no_run
//! # fn demo() -> redis_patterns::Result<()> {
//! use std::time::Duration;
//! use redis_patterns::rate_limiter::{GcraLimiter, Limiter, RateLimiter};
//!
//! let mut con = redis::Client::open("redis://127.0.0.1/")?.get_connection()?;
//!
//! // The book: at most 3 logins per hour for each user.
//! let login = RateLimiter::new("login", 3, Duration::from_secs(3600))?;
//! assert!(login.is_permitted("Peter").run(&mut con)?);
//! assert_eq!(login.remaining("Peter").run(&mut con)?, 2);
//!
//! // An API: 10 requests per second, in bursts of up to 20.
//! let api = GcraLimiter::new("api", 10, Duration::from_secs(1))?.with_burst(20)?;
//! let decision = api.attempt("client-7", 1).run(&mut con)?;
//! if !decision.allowed {
//!     println!("429, retry after {:?}", decision.retry_after);
//! }
//!
//! // A limit of 0 could never admit anything: refused where the limiter is built.
//! assert!(GcraLimiter::new("api", 0, Duration::from_secs(1)).is_err());
//! # Ok(()) }
//! ```
//!
//! | | [`RateLimiter`] (book) | [`SlidingWindowLimiter`] | [`GcraLimiter`] |
//! |---|---|---|---|
//! | Algorithm | fixed window | sliding-window log | GCRA (token bucket) |
//! | Memory per key | one counter | one sorted-set entry per admitted request: O(`limit`) | one string (a time) |
//! | Exactness | up to 2 × `limit` in a span of `period` that straddles two windows | exact: no span of `period` ever holds more than `limit` | exact for its model: at most `burst + t × limit / period` in any span t |
//! | Bursts | the whole `limit` at any moment, twice at a window edge | the whole `limit`, then nothing until the oldest request leaves | `burst` at once (`limit` unless set), then evenly spaced at the sustained rate |
//! | Clock | Redis's key expiry | the server's `TIME` | the server's `TIME` |
//! | Script | `is_permitted`, `duration` (read-only) | `sliding_window` | `gcra` |
//!
//! All three are built the same way, `new(action, limit, period)`: at most `limit`
//! attempts of `action` per `period` for each client. The settings are checked there,
//! once, so a bad one fails where the limiter is built, with
//! [`Error::InvalidInput`] naming it, instead of on every
//! request. [`GcraLimiter::with_burst`] sets a bucket larger (or smaller) than `limit`,
//! and `with_prefix` another key prefix.
//!
//! All three implement [`Limiter`]: [`attempt`](Limiter::attempt) spends `cost` units for
//! a client and answers a [`Decision`] (allowed, remaining, retry-after, reset-after), in
//! one script and one round trip; [`reset`](Limiter::reset) forgets a client. Times come
//! from the Redis server, never from the caller's clock, so every client of a limiter
//! agrees on them. Each key expires when its limiter would be full again, so an idle
//! client costs no memory. A refused attempt is not counted and writes nothing.
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
//! # The book's `RateLimiter`
//!
//! | Book | Here | Runs |
//! |---|---|---|
//! | `RateLimiter(client, action, interval, maximum)` | [`RateLimiter::new(action, limit, period)`](RateLimiter::new): `limit` is the book's `maximum`, `period` its `interval` | none |
//! | `is_permitted(uid)` → bool | [`is_permitted(uid)`](RateLimiter::is_permitted) → bool; [`attempt(uid, cost)`](Limiter::attempt) → [`Decision`] | script `rate_limiter/is_permitted` |
//! | `remaining(uid)` | [`remaining(uid)`](RateLimiter::remaining) | `GET` |
//! | `duration(uid)` → whole seconds or `None` | [`duration(uid)`](RateLimiter::duration) → `Option<Duration>`, to the millisecond | script `rate_limiter/duration` (read-only) |
//! | `revoke(uid)` → `None` | [`reset(uid)`](Limiter::reset) → whether there was a window to end | `DEL` |
//!
//! # Differences from the book
//!
//! - The settings come in the order and under the names the other two limiters use,
//!   `(action, limit, period)`, rather than the book's `(action, interval, maximum)`, so
//!   that moving to another algorithm changes the type's name and nothing else.
//! - `revoke` is [`Limiter::reset`], the one `DEL` every limiter has; it also says whether
//!   the client had a window running.
//! - `is_permitted` is one script (`rate_limiter/is_permitted`) instead of
//!   MULTI/INCRBY/EXPIRE NX/EXEC, because it reads the count before counting: a refused
//!   attempt is **not** counted (the book counts it). The window never moves either way
//!   (the book's `EXPIRE NX`), so counting refusals changes no answer; it would only cost
//!   a write (replicated, persisted) per refusal during a flood, and let the stored count
//!   grow past `limit`, which is the number the per-window invariant is about.
//! - The window's length is a [`Duration`] in milliseconds, and
//!   [`duration`](RateLimiter::duration) answers to the millisecond, not the book's whole
//!   seconds of `TTL`. It is one read-only script (`rate_limiter/duration`), run with
//!   `EVALSHA_RO`.
//! - A counter that lost its expiry (PERSIST, a SET from elsewhere) gets its window back
//!   on the next attempt instead of refusing forever.
//! - `remaining` and `reset` stay single native commands (`GET`, `DEL`).

use std::time::Duration;

use crate::runtime::error::Error;
use crate::runtime::input;
use crate::runtime::input::ScriptArg;
use crate::runtime::op::Op;
use crate::runtime::script::Param;
use crate::scripts;

/// The longest time a GCRA bucket may take to refill (`burst × period / limit`), in
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
/// let limiter = SlidingWindowLimiter::new("message", 5, Duration::from_secs(60))?;
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
    /// The limiter's size: its `limit`, or for a [`GcraLimiter`] its `burst` (which is
    /// `limit` unless set with [`with_burst`](GcraLimiter::with_burst)).
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
/// let second = Duration::from_secs(1);
/// let limiters: Vec<Box<dyn Limiter>> = vec![
///     Box::new(RateLimiter::new("search", 10, second)?),
///     Box::new(SlidingWindowLimiter::new("search", 10, second)?),
///     Box::new(GcraLimiter::new("search", 10, second)?),
/// ];
/// for limiter in &limiters {
///     let decision = limiter.attempt("Peter", 1).run(&mut con)?;
///     assert!(decision.allowed);
///     limiter.reset("Peter").run(&mut con)?;
/// }
/// # Ok(()) }
/// ```
pub trait Limiter {
    /// The key that holds `uid`'s state, `<prefix>:<uid>:<action>`. Fails only on an
    /// empty `uid`: the limiter's own parts were checked when it was built.
    fn key(&self, uid: &str) -> crate::Result<String>;

    /// Spends `cost` units (from 1 to the limiter's size) for `uid`, all or none, and
    /// says whether they were admitted. One atomic script.
    fn attempt(&self, uid: &str, cost: u64) -> Op<Decision>;

    /// Forgets `uid`'s history (`DEL`): its next attempt finds the limiter full (for
    /// [`RateLimiter`], starts a fresh window: the book's `revoke`). True if there was
    /// something to forget.
    fn reset(&self, uid: &str) -> Op<bool> {
        Op::try_build(|| {
            let mut cmd = redis::cmd("DEL");
            cmd.arg(self.key(uid)?);
            Ok(Op::<i64>::native(cmd).map(|n| Ok(n > 0)))
        })
    }
}

/// The book's fixed-window limiter: at most `limit` attempts (the book's `maximum`) per
/// `period` (its `interval`) for each client, the window starting at a client's first
/// admitted attempt.
///
/// ```no_run
/// # fn demo() -> redis_patterns::Result<()> {
/// use std::time::Duration;
/// use redis_patterns::rate_limiter::{Limiter, RateLimiter};
///
/// let mut con = redis::Client::open("redis://127.0.0.1/")?.get_connection()?;
/// let login = RateLimiter::new("login", 3, Duration::from_secs(3600))?;
/// for _ in 0..3 {
///     assert!(login.is_permitted("Peter").run(&mut con)?);
/// }
/// assert!(!login.is_permitted("Peter").run(&mut con)?);
/// assert_eq!(login.remaining("Peter").run(&mut con)?, 0);
/// assert!(login.duration("Peter").run(&mut con)?.is_some()); // until the window resets
/// assert!(login.reset("Peter").run(&mut con)?); // the book's revoke
/// assert_eq!(login.remaining("Peter").run(&mut con)?, 3);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RateLimiter {
    keys: ClientKeys,
    limit: u64,
    period: Duration,
}

impl RateLimiter {
    /// At most `limit` attempts of `action` (from 1 to 10^15 - 1) per `period` (whole
    /// milliseconds, from 1 ms to 10^10 ms, about 115 days) for each client: the ranges
    /// of `rate_limiter/is_permitted`.
    ///
    /// An empty `action`, or a setting out of its range, is
    /// [`Error::InvalidInput`] naming it.
    pub fn new(action: impl Into<String>, limit: u64, period: Duration) -> crate::Result<Self> {
        let script = &scripts::rate_limiter::IS_PERMITTED;
        let keys = ClientKeys::new(
            scripts::rate_limiter::IS_PERMITTED.default_text("prefix"),
            action.into(),
        )?;
        setting("limit", &script.args[0], limit)?;
        setting("period", &script.args[1], period)?;
        Ok(RateLimiter {
            keys,
            limit,
            period,
        })
    }

    /// Keys `<prefix>:<uid>:<action>` instead of `RateLimiter:<uid>:<action>`, to keep an
    /// app's keys under its own namespace. An empty `prefix` is
    /// [`Error::InvalidInput`].
    pub fn with_prefix(self, prefix: impl Into<String>) -> crate::Result<Self> {
        Ok(RateLimiter {
            keys: self.keys.with_prefix(prefix.into())?,
            ..self
        })
    }

    /// The action this limiter counts.
    pub fn action(&self) -> &str {
        &self.keys.action
    }

    /// Whether one more attempt of `uid` is admitted; an admitted one is counted.
    /// One atomic script (`rate_limiter/is_permitted`); a refused attempt writes nothing.
    pub fn is_permitted(&self, uid: &str) -> Op<bool> {
        self.attempt(uid, 1).map(|d| Ok(d.allowed))
    }

    /// Attempts `uid` has left in the current window: `limit` when it has none running,
    /// 0 when it is used up (`GET`).
    pub fn remaining(&self, uid: &str) -> Op<u64> {
        Op::try_build(|| {
            let limit = self.limit;
            let mut cmd = redis::cmd("GET");
            cmd.arg(self.key(uid)?);
            Ok(Op::<Option<u64>>::native(cmd)
                .map(move |n| Ok(limit.saturating_sub(n.unwrap_or(0)))))
        })
    }

    /// How long until `uid`'s window resets, only when its limit is reached; `None` while
    /// attempts are admitted. One read-only script (`rate_limiter/duration`, `EVALSHA_RO`).
    pub fn duration(&self, uid: &str) -> Op<Option<Duration>> {
        Op::try_build(|| {
            Ok(
                scripts::rate_limiter::duration(&self.key(uid)?, self.limit).map(|ms| {
                    Ok(ms
                        .and_then(|ms| u64::try_from(ms).ok())
                        .map(Duration::from_millis))
                }),
            )
        })
    }
}

impl Limiter for RateLimiter {
    /// `RateLimiter:<uid>:<action>`, as in the book.
    fn key(&self, uid: &str) -> crate::Result<String> {
        self.keys.key(uid)
    }

    fn attempt(&self, uid: &str, cost: u64) -> Op<Decision> {
        Op::try_build(|| {
            let limit = self.limit;
            check_cost(cost, "limit", limit)?;
            Ok(
                scripts::rate_limiter::is_permitted(&self.key(uid)?, limit, self.period, cost)
                    .map(move |reply| decision(limit, reply)),
            )
        })
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
/// let sms = SlidingWindowLimiter::new("sms", 3, Duration::from_secs(600))?;
/// let d = sms.attempt("+33600000000", 1).run(&mut con)?;
/// assert!(d.allowed);
/// assert_eq!(d.remaining, 2);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SlidingWindowLimiter {
    keys: ClientKeys,
    limit: u64,
    period: Duration,
}

impl SlidingWindowLimiter {
    /// At most `limit` attempts of `action` (from 1 to 10^6) in any span of `period`
    /// (whole milliseconds, from 1 ms to 10^10 ms) for each client: the ranges of
    /// `rate_limiter/sliding_window`.
    ///
    /// An empty `action`, or a setting out of its range, is
    /// [`Error::InvalidInput`] naming it.
    pub fn new(action: impl Into<String>, limit: u64, period: Duration) -> crate::Result<Self> {
        let script = &scripts::rate_limiter::SLIDING_WINDOW;
        let keys = ClientKeys::new(
            scripts::rate_limiter::SLIDING_WINDOW.default_text("prefix"),
            action.into(),
        )?;
        setting("limit", &script.args[0], limit)?;
        setting("period", &script.args[1], period)?;
        Ok(SlidingWindowLimiter {
            keys,
            limit,
            period,
        })
    }

    /// Keys `<prefix>:<uid>:<action>` instead of `SlidingWindowLimiter:<uid>:<action>`,
    /// to keep an app's keys under its own namespace. An empty `prefix` is
    /// [`Error::InvalidInput`].
    pub fn with_prefix(self, prefix: impl Into<String>) -> crate::Result<Self> {
        Ok(SlidingWindowLimiter {
            keys: self.keys.with_prefix(prefix.into())?,
            ..self
        })
    }

    /// The action this limiter counts.
    pub fn action(&self) -> &str {
        &self.keys.action
    }
}

impl Limiter for SlidingWindowLimiter {
    /// `SlidingWindowLimiter:<uid>:<action>`.
    fn key(&self, uid: &str) -> crate::Result<String> {
        self.keys.key(uid)
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

/// GCRA, the token bucket without a refill process: `limit` attempts per `period` at the
/// sustained rate, and up to `burst` at once (`limit` unless set with
/// [`with_burst`](Self::with_burst)). Beyond the book; what redis-cell's `CL.THROTTLE`
/// and go-redis/redis_rate do.
///
/// Only the theoretical arrival time is stored: one string per client, whatever the
/// rate. Over any span t it admits at most `burst + t × limit / period` attempts, and
/// exactly that many when clients keep asking.
///
/// ```no_run
/// # fn demo() -> redis_patterns::Result<()> {
/// use std::time::Duration;
/// use redis_patterns::rate_limiter::{GcraLimiter, Limiter};
///
/// let mut con = redis::Client::open("redis://127.0.0.1/")?.get_connection()?;
/// // Uploads weighted by size: 10 MB per second, in bursts of up to 100 MB.
/// let upload = GcraLimiter::new("upload_mb", 10, Duration::from_secs(1))?.with_burst(100)?;
/// let d = upload.attempt("Peter", 25).run(&mut con)?;
/// assert!(d.allowed);
/// assert_eq!(d.remaining, 75);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GcraLimiter {
    keys: ClientKeys,
    burst: u64,
    limit: u64,
    period: Duration,
}

impl GcraLimiter {
    /// A bucket that regains `limit` attempts of `action` (from 1 to 10^15 - 1) per
    /// `period` (whole milliseconds, from 1 ms to 10^10 ms) for each client, and holds
    /// `limit` of them: the ranges of `rate_limiter/gcra`.
    ///
    /// An empty `action`, or a setting out of its range, is
    /// [`Error::InvalidInput`] naming it.
    pub fn new(action: impl Into<String>, limit: u64, period: Duration) -> crate::Result<Self> {
        let script = &scripts::rate_limiter::GCRA;
        let keys = ClientKeys::new(
            scripts::rate_limiter::GCRA.default_text("prefix"),
            action.into(),
        )?;
        setting("limit", &script.args[1], limit)?;
        setting("period", &script.args[2], period)?;
        GcraLimiter {
            keys,
            burst: limit,
            limit,
            period,
        }
        .with_burst(limit)
    }

    /// The same limiter with a bucket of `burst` attempts: that many are admitted at once,
    /// then `limit` per `period`. From 1 to 10^15 - 1, and the bucket must refill within
    /// 10^10 ms (`burst × period / limit`), else
    /// [`Error::InvalidInput`] about `burst`.
    pub fn with_burst(self, burst: u64) -> crate::Result<Self> {
        setting("burst", &scripts::rate_limiter::GCRA.args[0], burst)?;
        // The one rule over several settings, after each alone.
        let period_ms = self.period.as_millis();
        let limit = self.limit;
        if u128::from(burst) * period_ms > u128::from(MAX_REFILL_MS) * u128::from(limit) {
            return Err(Error::invalid(
                "burst",
                format!(
                    "the bucket would take burst × period / limit = {burst} × {period_ms} ms / {limit} to refill; at most {MAX_REFILL_MS} ms"
                ),
            ));
        }
        Ok(GcraLimiter { burst, ..self })
    }

    /// Keys `<prefix>:<uid>:<action>` instead of `GcraLimiter:<uid>:<action>`, to keep an
    /// app's keys under its own namespace. An empty `prefix` is
    /// [`Error::InvalidInput`].
    pub fn with_prefix(self, prefix: impl Into<String>) -> crate::Result<Self> {
        Ok(GcraLimiter {
            keys: self.keys.with_prefix(prefix.into())?,
            ..self
        })
    }

    /// The action this limiter counts.
    pub fn action(&self) -> &str {
        &self.keys.action
    }

    /// The bucket's size: attempts admitted at once.
    pub fn burst(&self) -> u64 {
        self.burst
    }

    /// The time between two attempts at the sustained rate: `period / limit`.
    pub fn emission_interval(&self) -> Duration {
        let nanos = self.period.as_nanos() / u128::from(self.limit);
        Duration::from_nanos(u64::try_from(nanos).unwrap_or(u64::MAX))
    }
}

impl Limiter for GcraLimiter {
    /// `GcraLimiter:<uid>:<action>`.
    fn key(&self, uid: &str) -> crate::Result<String> {
        self.keys.key(uid)
    }

    /// One atomic script (`rate_limiter/gcra`).
    fn attempt(&self, uid: &str, cost: u64) -> Op<Decision> {
        Op::try_build(|| {
            let burst = self.burst;
            check_cost(cost, "burst", burst)?;
            Ok(
                scripts::rate_limiter::gcra(&self.key(uid)?, burst, self.limit, self.period, cost)
                    .map(move |reply| decision(burst, reply)),
            )
        })
    }
}

/// The keys of one limiter, `<prefix>:<uid>:<action>`: the parts around the client's
/// `uid` are checked once, when the limiter is built.
#[derive(Debug, Clone, PartialEq, Eq)]
struct ClientKeys {
    action: String,
    prefix: String,
}

impl ClientKeys {
    fn new(prefix: &str, action: String) -> crate::Result<Self> {
        input::key("action", &action)?;
        Ok(ClientKeys {
            prefix: prefix.to_owned(),
            action,
        })
    }

    fn with_prefix(self, prefix: String) -> crate::Result<Self> {
        input::key("prefix", &prefix)?;
        Ok(ClientKeys { prefix, ..self })
    }

    /// The key of `uid`: every limiter's scripts name it `<prefix>:<uid>:<action>` (the
    /// fixed window's `counter`, the sliding window's `log`, GCRA's `tat`).
    fn key(&self, uid: &str) -> crate::Result<String> {
        scripts::rate_limiter::keys::counter(&self.prefix, uid, &self.action)
    }
}

/// A setting checked by the rule of the script argument it is sent as, named as the
/// constructor names it (the fixed window's script says `maximum` and `interval`, as the
/// book does; its constructor says `limit` and `period`, as the other limiters do).
fn setting(what: &'static str, param: &Param, value: impl ScriptArg) -> crate::Result<()> {
    input::check_param(param, value).map_err(|err| match err {
        Error::InvalidInput { why, .. } => Error::InvalidInput { what, why },
        other => other,
    })
}

/// A cost up to the limiter's size: a larger one could never be admitted. (A cost of 0
/// is refused by the script's own range, with the call.)
fn check_cost(cost: u64, size: &str, max: u64) -> crate::Result<()> {
    if cost > max {
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
