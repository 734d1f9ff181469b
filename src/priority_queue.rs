//! Priority queues: 《Redis 应用实例》 chapter 29 (`PriorityQueue`).
//!
//! ```no_run
//! # fn demo() -> redis_patterns::Result<()> {
//! use redis_patterns::priority_queue::PriorityQueue;
//!
//! let mut con = redis::Client::open("redis://127.0.0.1/")?.get_connection()?;
//! let tasks = PriorityQueue::new("tasks")?;
//! tasks.insert("write docs", 3.0).run(&mut con)?;
//! tasks.insert("fix outage", 1.0).run(&mut con)?;
//! tasks.insert("lunch", 2.0).run(&mut con)?;
//! assert_eq!(tasks.pop_min::<String>().run(&mut con)?, Some(("fix outage".to_owned(), 1.0)));
//! assert_eq!(tasks.max::<String>().run(&mut con)?, Some(("write docs".to_owned(), 3.0)));
//! # Ok(()) }
//! ```
//!
//! A queue is one sorted set: the member is the item, the score its priority. Items come
//! out lowest priority first ([`pop_min`](PriorityQueue::pop_min)) or highest first
//! ([`pop_max`](PriorityQueue::pop_max)), the caller's choice at each pop; items of
//! equal priority come out in byte order of the item (Redis's tie-break). An item is in
//! the queue at most once: inserting it again changes its priority. Every operation is
//! one native command, so there is no script here.
//!
//! | Book | Here | Command |
//! |---|---|---|
//! | `insert(item, priority)` → `None` | [`insert`](PriorityQueue::insert) → whether the item is new | `ZADD` |
//! | `remove(item)` → bool | [`remove`](PriorityQueue::remove) | `ZREM` |
//! | `min()` / `max()` → `{item: priority}` or `None` | [`min`](PriorityQueue::min) / [`max`](PriorityQueue::max) → `Option<(item, priority)>` | `ZRANGE key 0 0 WITHSCORES` / `-1 -1` |
//! | `pop_min()` / `pop_max()` | [`pop_min`](PriorityQueue::pop_min) / [`pop_max`](PriorityQueue::pop_max) | `ZPOPMIN` / `ZPOPMAX` |
//! | `length()` | [`length`](PriorityQueue::length) | `ZCARD` |
//! | `blocking_pop_min(timeout=0)` / `blocking_pop_max` | [`blocking_pop_min(timeout)`](PriorityQueue::blocking_pop_min) / [`blocking_pop_max`](PriorityQueue::blocking_pop_max), `None` = forever | `BZPOPMIN` / `BZPOPMAX` |
//!
//! What differs from the book, and why:
//!
//! - An item and its priority come back as a tuple, not a one-entry dict.
//! - `insert` answers whether the item is new (`ZADD`'s count) instead of nothing.
//! - A NaN priority is refused with [`Error::InvalidInput`](crate::Error) before any I/O
//!   (Redis would refuse it too); infinities are fine.
//! - Blocking pops take `Option<Duration>` (`None` waits forever, the book's `0`); see
//!   [`fifo_queue`](crate::fifo_queue#blocking-pops-and-connection-timeouts) about the
//!   connection timeouts a long block needs.
//! - Items are binary-safe; a popped item that does not decode as the type asked for is
//!   added back with its priority before the error returns.
//! - Priorities are `f64`, as sorted-set scores are: integers beyond 2^53 lose precision.

use std::time::Duration;

use redis::{FromRedisValue, ToRedisArgs, Value};

use crate::runtime::input;
use crate::runtime::native;
use crate::runtime::op::Op;

/// A priority queue in one sorted set: the item is the member, the priority its score.
///
/// ```no_run
/// # fn demo() -> redis_patterns::Result<()> {
/// use std::time::Duration;
/// use redis_patterns::priority_queue::PriorityQueue;
///
/// let mut con = redis::Client::open("redis://127.0.0.1/")?.get_connection()?;
/// let q = PriorityQueue::new("alerts")?;
/// assert!(q.insert("disk full", 9.0).run(&mut con)?);
/// assert!(!q.insert("disk full", 10.0).run(&mut con)?); // its priority changed
/// let top = q.blocking_pop_max::<String>(Some(Duration::from_secs(1))).run(&mut con)?;
/// assert_eq!(top, Some(("disk full".to_owned(), 10.0)));
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PriorityQueue {
    key: String,
}

impl PriorityQueue {
    /// The queue stored at `key`.
    ///
    /// An empty key is [`Error::InvalidInput`](crate::Error::InvalidInput).
    pub fn new(key: impl Into<String>) -> crate::Result<Self> {
        let key = key.into();
        input::key("key", &key)?;
        Ok(PriorityQueue { key })
    }

    /// The queue's key.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// Adds `item` with `priority`, or changes its priority if it is queued already
    /// (`ZADD`): true when the item is new. `priority` must not be NaN.
    pub fn insert<V: ToRedisArgs>(&self, item: V, priority: f64) -> Op<bool> {
        Op::try_build(|| {
            let mut cmd = redis::cmd("ZADD");
            cmd.arg(&self.key)
                .arg(input::score("priority", priority)?)
                .arg(input::value("item", &item)?);
            Ok(Op::native(cmd))
        })
    }

    /// Takes `item` out of the queue (`ZREM`): true if it was queued.
    pub fn remove<V: ToRedisArgs>(&self, item: V) -> Op<bool> {
        Op::try_build(|| {
            let mut cmd = redis::cmd("ZREM");
            cmd.arg(&self.key).arg(input::value("item", &item)?);
            Ok(Op::native(cmd))
        })
    }

    /// The item of lowest priority, with its priority, without taking it
    /// (`ZRANGE key 0 0 WITHSCORES`); `None` when the queue is empty.
    pub fn min<T: FromRedisValue + 'static>(&self) -> Op<Option<(T, f64)>> {
        self.peek(0)
    }

    /// The item of highest priority, with its priority, without taking it
    /// (`ZRANGE key -1 -1 WITHSCORES`); `None` when the queue is empty.
    pub fn max<T: FromRedisValue + 'static>(&self) -> Op<Option<(T, f64)>> {
        self.peek(-1)
    }

    fn peek<T: FromRedisValue + 'static>(&self, index: i64) -> Op<Option<(T, f64)>> {
        let mut cmd = redis::cmd("ZRANGE");
        cmd.arg(&self.key).arg(index).arg(index).arg("WITHSCORES");
        first_entry(cmd)
    }

    /// Takes the item of lowest priority (`ZPOPMIN`); `None` when the queue is empty.
    pub fn pop_min<T: FromRedisValue + 'static>(&self) -> Op<Option<(T, f64)>> {
        self.pop("ZPOPMIN")
    }

    /// Takes the item of highest priority (`ZPOPMAX`); `None` when the queue is empty.
    pub fn pop_max<T: FromRedisValue + 'static>(&self) -> Op<Option<(T, f64)>> {
        self.pop("ZPOPMAX")
    }

    fn pop<T: FromRedisValue + 'static>(&self, command: &str) -> Op<Option<(T, f64)>> {
        let mut cmd = redis::cmd(command);
        cmd.arg(&self.key);
        // A reply of [item, priority] (RESP2) or [[item, priority]] (RESP3).
        let key = self.key.clone();
        first_entry(cmd).with_undo(move |value| {
            let pair = match value {
                Value::Array(items) => match items.as_slice() {
                    [Value::Array(pair)] => pair.as_slice(),
                    pair => pair,
                },
                _ => return None,
            };
            put_back(&key, pair)
        })
    }

    /// How many items are queued (`ZCARD`).
    pub fn length(&self) -> Op<u64> {
        native::one_key("ZCARD", &self.key)
    }

    /// Takes the item of lowest priority, waiting up to `timeout` (`None`: forever) for
    /// one when the queue is empty (`BZPOPMIN`); `None` when the timeout passed first.
    /// The connection must wait as long: see
    /// [`fifo_queue`](crate::fifo_queue#blocking-pops-and-connection-timeouts).
    pub fn blocking_pop_min<T: FromRedisValue + 'static>(
        &self,
        timeout: Option<Duration>,
    ) -> Op<Option<(T, f64)>> {
        self.blocking_pop("BZPOPMIN", timeout)
    }

    /// Takes the item of highest priority, waiting up to `timeout` (`None`: forever) for
    /// one when the queue is empty (`BZPOPMAX`); `None` when the timeout passed first.
    pub fn blocking_pop_max<T: FromRedisValue + 'static>(
        &self,
        timeout: Option<Duration>,
    ) -> Op<Option<(T, f64)>> {
        self.blocking_pop("BZPOPMAX", timeout)
    }

    fn blocking_pop<T: FromRedisValue + 'static>(
        &self,
        command: &str,
        timeout: Option<Duration>,
    ) -> Op<Option<(T, f64)>> {
        Op::try_build(|| {
            let mut cmd = redis::cmd(command);
            cmd.arg(&self.key).arg(input::block_timeout(timeout)?);
            // nil on timeout, else [key, item, priority].
            let key = self.key.clone();
            Ok(Op::<Option<(Value, T, f64)>>::native(cmd)
                .map(|reply| Ok(reply.map(|(_, item, priority)| (item, priority))))
                .with_undo(move |value| match value {
                    Value::Array(reply) => put_back(&key, reply.get(1..)?),
                    _ => None,
                }))
        })
    }
}

/// A reply of at most one (item, score) pair.
fn first_entry<T: FromRedisValue + 'static>(cmd: redis::Cmd) -> Op<Option<(T, f64)>> {
    Op::<Vec<(T, f64)>>::native(cmd).map(|entries| Ok(entries.into_iter().next()))
}

/// `ZADD key priority item`, for a popped `[item, priority]` that does not decode: the
/// item goes back with the priority it had.
fn put_back(key: &str, pair: &[Value]) -> Option<redis::Cmd> {
    let [Value::BulkString(item), priority] = pair else {
        return None;
    };
    let priority = match priority {
        Value::BulkString(text) => text.clone(),
        Value::Double(x) => format!("{x:?}").into_bytes(),
        _ => return None,
    };
    let mut cmd = redis::cmd("ZADD");
    cmd.arg(key).arg(priority).arg(item);
    Some(cmd)
}
