//! Circular queues: 《Redis 应用实例》 chapter 30 (`CircularQueue` and
//! `UniqueCircularQueue`).
//!
//! ```no_run
//! # fn demo() -> redis_patterns::Result<()> {
//! use redis_patterns::circular_queue::{CircularQueue, UniqueCircularQueue};
//!
//! let mut con = redis::Client::open("redis://127.0.0.1/")?.get_connection()?;
//! let servers = CircularQueue::new("backends")?;
//! servers.insert(&["10.0.0.1", "10.0.0.2", "10.0.0.3"]).run(&mut con)?;
//! assert_eq!(servers.rotate::<String>().run(&mut con)?.as_deref(), Some("10.0.0.1"));
//! assert_eq!(servers.front::<String>().run(&mut con)?.as_deref(), Some("10.0.0.2"));
//!
//! let feeds = UniqueCircularQueue::new("feeds")?;
//! feeds.insert(&["a", "b", "c"]).run(&mut con)?;
//! assert_eq!(feeds.insert(&["a"]).run(&mut con)?, 3); // moved to the rear, not doubled
//! assert_eq!(feeds.rear::<String>().run(&mut con)?.as_deref(), Some("a"));
//! # Ok(()) }
//! ```
//!
//! A circular queue is one list whose items take turns: [`rotate`](CircularQueue::rotate)
//! moves the front item to the rear and returns it, in one atomic command
//! (`LMOVE key key LEFT RIGHT`), so many workers can share the queue and each rotation
//! hands out the next item (round-robin over servers, accounts, feeds to poll…).
//! Rotating never takes an item out: no item is ever lost or doubled by it.
//! [`UniqueCircularQueue`] holds each item at most once.
//!
//! | Book | Here | Runs |
//! |---|---|---|
//! | `insert(*items)` → length | [`insert(&items)`](CircularQueue::insert) | `RPUSH` |
//! | `remove(item, count=0)` → removed | [`remove(item, count)`](CircularQueue::remove) | `LREM key count item` |
//! | `rotate()` (`block_time=-1`) | [`rotate()`](CircularQueue::rotate) | `LMOVE key key LEFT RIGHT` |
//! | `rotate(block_time=N)` | [`rotate_blocking(timeout)`](CircularQueue::rotate_blocking), `None` = forever | `BLMOVE key key LEFT RIGHT timeout` |
//! | `front()` / `rear()` | [`front()`](CircularQueue::front) / [`rear()`](CircularQueue::rear) | `LINDEX key 0` / `-1` |
//! | `length()` | [`length()`](CircularQueue::length) | `LLEN` |
//! | `UniqueCircularQueue.insert(*items)` → length | [`UniqueCircularQueue::insert`] | script `circular_queue/unique_insert` |
//! | `UniqueCircularQueue.remove(item)` → 0/1 | [`UniqueCircularQueue::remove`] → bool | `LREM key 1 item` |
//!
//! [`remove`](CircularQueue::remove)'s `count` is `LREM`'s: `0` removes every copy of the
//! item, a positive `n` the first `n` copies from the front, a negative `-n` the last `n`
//! copies from the rear.
//!
//! What differs from the book, and why:
//!
//! - `UniqueCircularQueue::insert` is one script instead of a Python check followed by
//!   MULTI/LREM…/RPUSH/EXEC: the duplicate check runs inside Redis too (error
//!   `DUPLICATE_ITEMS`), so callers in other languages get it, and it removes every copy
//!   of an item already queued (`LREM key 0`, where the book's `LREM key 1` would leave a
//!   second copy that another writer added). Input with duplicates is refused with
//!   [`Error::InvalidInput`](crate::Error) before any I/O, as the book raises
//!   `ValueError`.
//! - The blocking rotation is its own method taking `Option<Duration>` instead of the
//!   book's magic `-1`; see [`fifo_queue`](crate::fifo_queue#blocking-pops-and-connection-timeouts)
//!   about the connection timeouts a long block needs.
//! - Items are binary-safe; a rotated item that does not decode as the type asked for is
//!   moved back to the front before the error returns, so the queue is as it was.
//! - Needs Redis 6.2 (`LMOVE`/`BLMOVE`), like the book.

use std::time::Duration;

use redis::{FromRedisValue, ToRedisArgs};

use crate::runtime::input;
use crate::runtime::native;
use crate::runtime::op::Op;
use crate::scripts;

/// A circular queue in one list: the head is the front, and a rotation moves the front
/// item to the rear.
///
/// ```no_run
/// # fn demo() -> redis_patterns::Result<()> {
/// use redis_patterns::circular_queue::CircularQueue;
///
/// let mut con = redis::Client::open("redis://127.0.0.1/")?.get_connection()?;
/// let turns = CircularQueue::new("players")?;
/// turns.insert(&["ann", "bob", "ann"]).run(&mut con)?;
/// assert_eq!(turns.rotate::<String>().run(&mut con)?.as_deref(), Some("ann"));
/// assert_eq!(turns.remove("ann", 0).run(&mut con)?, 2); // every copy
/// assert_eq!(turns.length().run(&mut con)?, 1);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CircularQueue {
    key: String,
}

impl CircularQueue {
    /// The queue stored at `key`.
    ///
    /// An empty key is [`Error::InvalidInput`](crate::Error::InvalidInput).
    pub fn new(key: impl Into<String>) -> crate::Result<Self> {
        let key = key.into();
        input::key("key", &key)?;
        Ok(CircularQueue { key })
    }

    /// The queue's key.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// Appends `items`, in order, at the rear (`RPUSH`) and returns the queue's new
    /// length. At least one item; duplicates are allowed.
    pub fn insert<V: ToRedisArgs>(&self, items: &[V]) -> Op<u64> {
        native::push("RPUSH", &self.key, items)
    }

    /// Removes copies of `item` (`LREM key count item`) and returns how many it removed:
    /// every copy for `count` 0, the first `count` from the front for a positive
    /// `count`, the last `-count` from the rear for a negative one.
    pub fn remove<V: ToRedisArgs>(&self, item: V, count: i64) -> Op<u64> {
        lrem(&self.key, item, count)
    }

    /// Moves the front item to the rear and returns it (`LMOVE key key LEFT RIGHT`);
    /// `None` when the queue is empty. Never blocks.
    pub fn rotate<T: FromRedisValue + 'static>(&self) -> Op<Option<T>> {
        rotate(&self.key)
    }

    /// Like [`rotate`](Self::rotate), but waits up to `timeout` (`None`: forever) for an
    /// item when the queue is empty (`BLMOVE`); `None` when the timeout passed first.
    pub fn rotate_blocking<T: FromRedisValue + 'static>(
        &self,
        timeout: Option<Duration>,
    ) -> Op<Option<T>> {
        rotate_blocking(&self.key, timeout)
    }

    /// The front item, the next to rotate (`LINDEX key 0`); `None` when empty.
    pub fn front<T: FromRedisValue + 'static>(&self) -> Op<Option<T>> {
        native::peek(&self.key, 0)
    }

    /// The rear item, the last rotated or inserted (`LINDEX key -1`); `None` when empty.
    pub fn rear<T: FromRedisValue + 'static>(&self) -> Op<Option<T>> {
        native::peek(&self.key, -1)
    }

    /// How many items the queue holds (`LLEN`).
    pub fn length(&self) -> Op<u64> {
        native::length(&self.key)
    }
}

/// A circular queue that holds each item at most once: inserting a queued item moves it
/// to the rear.
///
/// Uniqueness holds as long as every insert goes through this type (or the
/// `circular_queue/unique_insert` script).
///
/// ```no_run
/// # fn demo() -> redis_patterns::Result<()> {
/// use redis_patterns::circular_queue::UniqueCircularQueue;
///
/// let mut con = redis::Client::open("redis://127.0.0.1/")?.get_connection()?;
/// let q = UniqueCircularQueue::new("crawl")?;
/// q.insert(&["a.example", "b.example"]).run(&mut con)?;
/// assert_eq!(q.insert(&["a.example", "c.example"]).run(&mut con)?, 3);
/// assert!(q.insert(&["d.example", "d.example"]).run(&mut con).is_err()); // duplicates
/// assert!(q.remove("b.example").run(&mut con)?);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UniqueCircularQueue {
    key: String,
}

impl UniqueCircularQueue {
    /// The queue stored at `key`.
    ///
    /// An empty key is [`Error::InvalidInput`](crate::Error::InvalidInput).
    pub fn new(key: impl Into<String>) -> crate::Result<Self> {
        let key = scripts::circular_queue::keys::queue(&key.into())?;
        Ok(UniqueCircularQueue { key })
    }

    /// The queue's key.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// Appends `items`, in order, at the rear, first taking out any of them already
    /// queued (so they move to the rear), and returns the queue's new length. At least
    /// one item, no two equal. One script (`circular_queue/unique_insert`).
    pub fn insert<V: ToRedisArgs>(&self, items: &[V]) -> Op<u64> {
        Op::try_build(|| {
            let op = scripts::circular_queue::unique_insert(
                &self.key,
                &input::slices(&input::unique_items(items)?),
            );
            Ok(op.map(|length| {
                u64::try_from(length).map_err(|_| {
                    crate::Error::unexpected_reply(
                        "circular_queue/unique_insert returned a negative length",
                        length.to_string(),
                    )
                })
            }))
        })
    }

    /// Takes `item` out of the queue (`LREM key 1 item`): true if it was queued.
    pub fn remove<V: ToRedisArgs>(&self, item: V) -> Op<bool> {
        lrem(&self.key, item, 1).map(|removed| Ok(removed > 0))
    }

    /// Moves the front item to the rear and returns it; see [`CircularQueue::rotate`].
    pub fn rotate<T: FromRedisValue + 'static>(&self) -> Op<Option<T>> {
        rotate(&self.key)
    }

    /// Rotates, waiting up to `timeout` (`None`: forever) for an item; see
    /// [`CircularQueue::rotate_blocking`].
    pub fn rotate_blocking<T: FromRedisValue + 'static>(
        &self,
        timeout: Option<Duration>,
    ) -> Op<Option<T>> {
        rotate_blocking(&self.key, timeout)
    }

    /// The front item (`LINDEX key 0`); `None` when empty.
    pub fn front<T: FromRedisValue + 'static>(&self) -> Op<Option<T>> {
        native::peek(&self.key, 0)
    }

    /// The rear item (`LINDEX key -1`); `None` when empty.
    pub fn rear<T: FromRedisValue + 'static>(&self) -> Op<Option<T>> {
        native::peek(&self.key, -1)
    }

    /// How many items the queue holds (`LLEN`).
    pub fn length(&self) -> Op<u64> {
        native::length(&self.key)
    }
}

fn lrem<V: ToRedisArgs>(key: &str, item: V, count: i64) -> Op<u64> {
    Op::try_build(|| {
        let mut cmd = redis::cmd("LREM");
        cmd.arg(key).arg(count).arg(input::value("item", &item)?);
        Ok(Op::native(cmd))
    })
}

fn rotate<T: FromRedisValue + 'static>(key: &str) -> Op<Option<T>> {
    let mut cmd = redis::cmd("LMOVE");
    cmd.arg(key).arg(key).arg("LEFT").arg("RIGHT");
    Op::native(cmd).with_undo(rotate_back(key))
}

fn rotate_blocking<T: FromRedisValue + 'static>(
    key: &str,
    timeout: Option<Duration>,
) -> Op<Option<T>> {
    Op::try_build(|| {
        let mut cmd = redis::cmd("BLMOVE");
        cmd.arg(key)
            .arg(key)
            .arg("LEFT")
            .arg("RIGHT")
            .arg(input::block_timeout(timeout)?);
        Ok(Op::native(cmd).with_undo(rotate_back(key)))
    })
}

/// What moves a rotated item that does not decode back to the front, so that the queue is
/// as it was (`LMOVE key key RIGHT LEFT`).
fn rotate_back(key: &str) -> impl Fn(&redis::Value) -> Option<redis::Cmd> + Send + Sync + 'static {
    let key = key.to_owned();
    move |value| {
        matches!(value, redis::Value::BulkString(_)).then(|| {
            let mut cmd = redis::cmd("LMOVE");
            cmd.arg(&key).arg(&key).arg("RIGHT").arg("LEFT");
            cmd
        })
    }
}
