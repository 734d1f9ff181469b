//! Bounded FIFO queues: 《Redis 应用实例》 chapter 27 (`FixedLengthQueue` and `FadedQueue`).
//!
//! ```no_run
//! # fn demo() -> redis_patterns::Result<()> {
//! use redis_patterns::fixed_length_queue::{FadedQueue, FixedLengthQueue};
//!
//! let mut con = redis::Client::open("redis://127.0.0.1/")?.get_connection()?;
//! let oldest = FixedLengthQueue::new("signups", 3)?;
//! assert_eq!(oldest.enqueue(&["a", "b"]).run(&mut con)?, 2);
//! assert_eq!(oldest.enqueue(&["c", "d", "e"]).run(&mut con)?, 1); // [a, b, c]
//!
//! let newest = FadedQueue::new("recent", 3)?;
//! newest.enqueue(&["a", "b"]).run(&mut con)?;
//! let pushed = newest.enqueue_counted(&["c", "d", "e"]).run(&mut con)?; // [c, d, e]
//! assert_eq!((pushed.kept, pushed.evicted), (3, 2));
//! # Ok(()) }
//! ```
//!
//! Both are FIFO queues in one list (pushed on the right, popped on the left, like
//! [`FifoQueue`](crate::fifo_queue::FifoQueue)) that never hold more than `max_length`
//! items. They differ in what gives way when a push would overflow:
//!
//! - [`FixedLengthQueue`] keeps its **oldest** items: new items that do not fit are
//!   dropped (`max_length` 3, after `a, b` then `c, d, e`: `[a, b, c]`, 1 kept).
//! - [`FadedQueue`] keeps its **newest** items: old ones are evicted to make room
//!   (`[c, d, e]`, 3 kept).
//!
//! | Book | Here | Runs |
//! |---|---|---|
//! | `enqueue(*items)` → new items kept | [`enqueue(&items)`](FixedLengthQueue::enqueue) → new items kept | script `fixed_length_queue/enqueue` (`faded_enqueue`) |
//! | | [`enqueue_counted(&items)`](FixedLengthQueue::enqueue_counted) → [`Enqueued`] | the same script |
//! | `dequeue(timeout=-1)` (inherited) | [`dequeue()`](FixedLengthQueue::dequeue), [`dequeue_blocking(timeout)`](FixedLengthQueue::dequeue_blocking) | `LPOP`, `BLPOP` |
//! | `length()` (inherited) | [`length()`](FixedLengthQueue::length) | `LLEN` |
//!
//! What differs from the book, and why:
//!
//! - Each `enqueue` is one script that computes what it returns from the list itself.
//!   The book's `FadedQueue` returns `min(len(items), max_length)` computed in Python
//!   without looking at the list, and its `FixedLengthQueue` pushes every item and then
//!   trims the ones that do not fit; the scripts push only the items that will stay.
//! - [`enqueue_counted`](FixedLengthQueue::enqueue_counted) also reports how many items
//!   that were already queued the push removed: for a `FadedQueue`, the old items it
//!   evicted; for a `FixedLengthQueue`, items beyond `max_length` that were there before
//!   (only when the list was written by other means or `max_length` was lowered). With
//!   it, every item is accounted for: pushed = kept + dropped, and kept = dequeued +
//!   still queued + evicted.
//! - `max_length` must be at least 1 (checked in Rust and again in the scripts); the
//!   book's `LTRIM key 0 -1` for `max_length` 0 would keep everything.
//! - Items are binary-safe (the scripts take them as `bytes`), and a popped item that
//!   does not decode as the type asked for is pushed back before the error returns.
//! - Blocking pops: see [`fifo_queue`](crate::fifo_queue#blocking-pops-and-connection-timeouts)
//!   about connection timeouts.

use std::time::Duration;

use redis::{FromRedisValue, ToRedisArgs};

use crate::runtime::error::Error;
use crate::runtime::input;
use crate::runtime::native;
use crate::runtime::op::Op;
use crate::scripts;

/// What one `enqueue_counted` did.
///
/// ```no_run
/// # fn demo() -> redis_patterns::Result<()> {
/// use redis_patterns::fixed_length_queue::{Enqueued, FixedLengthQueue};
///
/// let mut con = redis::Client::open("redis://127.0.0.1/")?.get_connection()?;
/// let q = FixedLengthQueue::new("slots", 2)?;
/// let done = q.enqueue_counted(&["a", "b", "c"]).run(&mut con)?;
/// assert_eq!(done, Enqueued { kept: 2, evicted: 0 });
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Enqueued {
    /// How many of the new items are now queued: the first ones for a
    /// [`FixedLengthQueue`], the last ones for a [`FadedQueue`]. The others were dropped.
    pub kept: u64,
    /// How many items that were queued before the call it removed.
    pub evicted: u64,
}

/// A FIFO queue of at most `max_length` items that keeps its oldest: new items that do
/// not fit are dropped.
///
/// ```no_run
/// # fn demo() -> redis_patterns::Result<()> {
/// use redis_patterns::fixed_length_queue::FixedLengthQueue;
///
/// let mut con = redis::Client::open("redis://127.0.0.1/")?.get_connection()?;
/// let q = FixedLengthQueue::new("waiting_room", 2)?;
/// assert_eq!(q.enqueue(&["ann", "bob", "cid"]).run(&mut con)?, 2); // cid is turned away
/// assert_eq!(q.dequeue::<String>().run(&mut con)?.as_deref(), Some("ann"));
/// assert_eq!(q.enqueue(&["cid"]).run(&mut con)?, 1);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FixedLengthQueue {
    key: String,
    max_length: u64,
}

impl FixedLengthQueue {
    /// The queue stored at `key`, holding at most `max_length` items: from 1 to
    /// 10^15 - 1, else [`crate::Error::InvalidInput`], as for an empty
    /// key.
    pub fn new(key: impl Into<String>, max_length: u64) -> crate::Result<Self> {
        let key = scripts::fixed_length_queue::keys::queue(&key.into())?;
        input::check_param(&scripts::fixed_length_queue::ENQUEUE.args[0], max_length)?;
        Ok(FixedLengthQueue { key, max_length })
    }

    /// The queue's key.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// The most items the queue holds.
    pub fn max_length(&self) -> u64 {
        self.max_length
    }

    /// Appends as many of `items`, in order, as fit, and returns how many did: the first
    /// ones; the rest are dropped. At least one item. One script
    /// (`fixed_length_queue/enqueue`).
    pub fn enqueue<V: ToRedisArgs>(&self, items: &[V]) -> Op<u64> {
        self.enqueue_counted(items).map(|done| Ok(done.kept))
    }

    /// [`enqueue`](Self::enqueue), also reporting how many items already queued were
    /// trimmed (only when the queue held more than `max_length`).
    pub fn enqueue_counted<V: ToRedisArgs>(&self, items: &[V]) -> Op<Enqueued> {
        Op::try_build(|| {
            let op = scripts::fixed_length_queue::enqueue(
                &self.key,
                self.max_length,
                &input::slices(&input::items(items)?),
            );
            Ok(op.map(enqueued))
        })
    }

    /// Takes the queue's first item (`LPOP`), or `None` when it is empty.
    pub fn dequeue<T: FromRedisValue + 'static>(&self) -> Op<Option<T>> {
        native::pop("LPOP", &self.key)
    }

    /// Takes the queue's first item, waiting up to `timeout` (`None`: forever) for one
    /// (`BLPOP`). See [`FifoQueue::dequeue_blocking`](crate::fifo_queue::FifoQueue::dequeue_blocking)
    /// about connection timeouts.
    pub fn dequeue_blocking<T: FromRedisValue + 'static>(
        &self,
        timeout: Option<Duration>,
    ) -> Op<Option<T>> {
        native::blocking_pop("BLPOP", &self.key, timeout)
    }

    /// How many items the queue holds (`LLEN`).
    pub fn length(&self) -> Op<u64> {
        native::length(&self.key)
    }
}

/// A FIFO queue of at most `max_length` items that keeps its newest: old items are
/// evicted to make room (the book's 淘汰队列, "eviction queue").
///
/// ```no_run
/// # fn demo() -> redis_patterns::Result<()> {
/// use redis_patterns::fixed_length_queue::FadedQueue;
///
/// let mut con = redis::Client::open("redis://127.0.0.1/")?.get_connection()?;
/// let q = FadedQueue::new("last_seen", 2)?;
/// q.enqueue(&["ann", "bob", "cid"]).run(&mut con)?; // ann fades out
/// assert_eq!(q.dequeue::<String>().run(&mut con)?.as_deref(), Some("bob"));
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FadedQueue {
    key: String,
    max_length: u64,
}

impl FadedQueue {
    /// The queue stored at `key`, holding at most `max_length` items: from 1 to
    /// 10^15 - 1, else [`crate::Error::InvalidInput`], as for an empty
    /// key.
    pub fn new(key: impl Into<String>, max_length: u64) -> crate::Result<Self> {
        let key = scripts::fixed_length_queue::keys::queue(&key.into())?;
        input::check_param(&scripts::fixed_length_queue::ENQUEUE.args[0], max_length)?;
        Ok(FadedQueue { key, max_length })
    }

    /// The queue's key.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// The most items the queue holds.
    pub fn max_length(&self) -> u64 {
        self.max_length
    }

    /// Appends `items`, in order, evicting the oldest queued items beyond `max_length`,
    /// and returns how many of `items` were kept: all of them, or the last `max_length`
    /// when more were passed. At least one item. One script
    /// (`fixed_length_queue/faded_enqueue`).
    pub fn enqueue<V: ToRedisArgs>(&self, items: &[V]) -> Op<u64> {
        self.enqueue_counted(items).map(|done| Ok(done.kept))
    }

    /// [`enqueue`](Self::enqueue), also reporting how many items already queued were
    /// evicted.
    pub fn enqueue_counted<V: ToRedisArgs>(&self, items: &[V]) -> Op<Enqueued> {
        Op::try_build(|| {
            let op = scripts::fixed_length_queue::faded_enqueue(
                &self.key,
                self.max_length,
                &input::slices(&input::items(items)?),
            );
            Ok(op.map(enqueued))
        })
    }

    /// Takes the queue's first (oldest) item (`LPOP`), or `None` when it is empty.
    pub fn dequeue<T: FromRedisValue + 'static>(&self) -> Op<Option<T>> {
        native::pop("LPOP", &self.key)
    }

    /// Takes the queue's first item, waiting up to `timeout` (`None`: forever) for one
    /// (`BLPOP`). See [`FifoQueue::dequeue_blocking`](crate::fifo_queue::FifoQueue::dequeue_blocking)
    /// about connection timeouts.
    pub fn dequeue_blocking<T: FromRedisValue + 'static>(
        &self,
        timeout: Option<Duration>,
    ) -> Op<Option<T>> {
        native::blocking_pop("BLPOP", &self.key, timeout)
    }

    /// How many items the queue holds (`LLEN`).
    pub fn length(&self) -> Op<u64> {
        native::length(&self.key)
    }
}

/// The scripts' `{kept, evicted}`.
fn enqueued((kept, evicted): (i64, i64)) -> crate::Result<Enqueued> {
    match (u64::try_from(kept), u64::try_from(evicted)) {
        (Ok(kept), Ok(evicted)) => Ok(Enqueued { kept, evicted }),
        _ => Err(Error::unexpected_reply(
            "a fixed-length queue's enqueue returned a negative count",
            format!("{{{kept}, {evicted}}}"),
        )),
    }
}
