//! Stacks and last-in, first-out queues: 《Redis 应用实例》 chapter 28 (`Stack`, and the
//! unlisted `LifoQueue`).
//!
//! Both are one list, pushed and popped on the right, so the last item in is the first
//! out. Every operation is one native command, so there is no script here.
//!
//! | Book | Here | Command |
//! |---|---|---|
//! | `Stack.push(item)` → `None` | [`Stack::push`] → the new size | `RPUSH` |
//! | `Stack.pop()` | [`Stack::pop`] | `RPOP` |
//! | `Stack.top()` | [`Stack::top`] | `LINDEX key -1` |
//! | `Stack.size()` | [`Stack::size`] | `LLEN` |
//! | `Stack.trim(n)` | [`Stack::trim`]: keeps the newest `n` | `LTRIM key -n -1`; `DEL` for 0 |
//! | `LifoQueue.enqueue(*items)` → length | [`LifoQueue::enqueue`] | `RPUSH` |
//! | `LifoQueue.dequeue()` | [`LifoQueue::dequeue`] | `RPOP` |
//! | | [`LifoQueue::dequeue_blocking`] | `BRPOP` |
//! | `LifoQueue.length()` | [`LifoQueue::length`] | `LLEN` |
//!
//! [`LifoQueue`] is a second type, not an alias of [`Stack`]: the book gives it queue
//! names (`enqueue` of many items, `dequeue`, `length`) and a stack its own (`push` of one,
//! `pop`, `top`, `size`, `trim`), and an alias would have to carry both sets. They store
//! the same thing, a list whose right end is the top, so a `Stack` and a `LifoQueue` on
//! one key are two views of one stack: [`Stack::as_lifo_queue`] and
//! [`LifoQueue::as_stack`] switch between them.
//!
//! What differs from the book, and why:
//!
//! - `push` returns the stack's new size (what `RPUSH` answers) instead of discarding it.
//! - `enqueue` of no items is refused with [`Error::InvalidInput`](crate::Error) before
//!   any I/O, as is a `trim` size beyond what `LTRIM` takes (`i64::MAX`).
//! - Items are binary-safe, and a popped item that does not decode as the type asked for
//!   goes back on top before the error returns (as in [`fifo_queue`](crate::fifo_queue)).
//! - `LifoQueue` also has a blocking pop, as the FIFO queues do; see
//!   [`fifo_queue`](crate::fifo_queue#blocking-pops-and-connection-timeouts) about
//!   connection timeouts.
//!
//! ```no_run
//! # fn demo() -> redis_patterns::Result<()> {
//! use redis_patterns::stack::Stack;
//!
//! let mut con = redis::Client::open("redis://127.0.0.1/")?.get_connection()?;
//! let undo = Stack::new("editor:undo")?;
//! for edit in ["type a", "type b", "delete"] {
//!     undo.push(edit).run(&mut con)?;
//! }
//! assert_eq!(undo.top::<String>().run(&mut con)?.as_deref(), Some("delete"));
//! assert_eq!(undo.pop::<String>().run(&mut con)?.as_deref(), Some("delete"));
//! undo.trim(1).run(&mut con)?; // keep only the newest
//! assert_eq!(undo.size().run(&mut con)?, 1);
//! # Ok(()) }
//! ```

use std::time::Duration;

use redis::{FromRedisValue, ToRedisArgs};

use crate::runtime::input;
use crate::runtime::native;
use crate::runtime::op::Op;

/// A stack in one list whose right end is the top.
///
/// ```no_run
/// # fn demo() -> redis_patterns::Result<()> {
/// use redis_patterns::stack::Stack;
///
/// let mut con = redis::Client::open("redis://127.0.0.1/")?.get_connection()?;
/// let s = Stack::new("history")?;
/// s.push("page:1").run(&mut con)?;
/// assert_eq!(s.push("page:2").run(&mut con)?, 2);
/// assert_eq!(s.pop::<String>().run(&mut con)?.as_deref(), Some("page:2"));
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stack {
    key: String,
}

impl Stack {
    /// The stack stored at `key`.
    ///
    /// An empty key is [`Error::InvalidInput`](crate::Error::InvalidInput).
    pub fn new(key: impl Into<String>) -> crate::Result<Self> {
        let key = key.into();
        input::key("key", &key)?;
        Ok(Stack { key })
    }

    /// The stack's key.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// The same list seen as a [`LifoQueue`].
    pub fn as_lifo_queue(&self) -> LifoQueue {
        LifoQueue {
            key: self.key.clone(),
        }
    }

    /// Puts `item` on top (`RPUSH`) and returns the stack's new size.
    pub fn push<V: ToRedisArgs>(&self, item: V) -> Op<u64> {
        native::push("RPUSH", &self.key, &[item])
    }

    /// Takes the top item (`RPOP`), or `None` when the stack is empty.
    pub fn pop<T: FromRedisValue + 'static>(&self) -> Op<Option<T>> {
        native::pop("RPOP", &self.key)
    }

    /// The top item without taking it (`LINDEX key -1`), or `None` when the stack is
    /// empty.
    pub fn top<T: FromRedisValue + 'static>(&self) -> Op<Option<T>> {
        native::peek(&self.key, -1)
    }

    /// How many items the stack holds (`LLEN`).
    pub fn size(&self) -> Op<u64> {
        native::length(&self.key)
    }

    /// Keeps the `n` newest items (those nearest the top) and drops the rest
    /// (`LTRIM key -n -1`); `0` empties the stack (`DEL`).
    pub fn trim(&self, n: u64) -> Op<()> {
        // The newest items sit at the tail: `push` pushes on the right.
        native::keep(&self.key, n, false)
    }
}

/// A last-in, first-out queue (the book's unlisted `LifoQueue`): the same list as a
/// [`Stack`], with queue names.
///
/// ```no_run
/// # fn demo() -> redis_patterns::Result<()> {
/// use redis_patterns::stack::LifoQueue;
///
/// let mut con = redis::Client::open("redis://127.0.0.1/")?.get_connection()?;
/// let q = LifoQueue::new("notifications")?;
/// assert_eq!(q.enqueue(&["old", "new"]).run(&mut con)?, 2);
/// assert_eq!(q.dequeue::<String>().run(&mut con)?.as_deref(), Some("new"));
/// assert_eq!(q.as_stack().top::<String>().run(&mut con)?.as_deref(), Some("old"));
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LifoQueue {
    key: String,
}

impl LifoQueue {
    /// The queue stored at `key`.
    ///
    /// An empty key is [`Error::InvalidInput`](crate::Error::InvalidInput).
    pub fn new(key: impl Into<String>) -> crate::Result<Self> {
        let key = key.into();
        input::key("key", &key)?;
        Ok(LifoQueue { key })
    }

    /// The queue's key.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// The same list seen as a [`Stack`].
    pub fn as_stack(&self) -> Stack {
        Stack {
            key: self.key.clone(),
        }
    }

    /// Adds `items`, in order (the last one ends on top), with `RPUSH`, and returns the
    /// queue's new length. At least one item.
    pub fn enqueue<V: ToRedisArgs>(&self, items: &[V]) -> Op<u64> {
        native::push("RPUSH", &self.key, items)
    }

    /// Takes the newest item (`RPOP`), or `None` when the queue is empty.
    pub fn dequeue<T: FromRedisValue + 'static>(&self) -> Op<Option<T>> {
        native::pop("RPOP", &self.key)
    }

    /// Takes the newest item, waiting up to `timeout` (`None`: forever) for one
    /// (`BRPOP`). See [`FifoQueue::dequeue_blocking`](crate::fifo_queue::FifoQueue::dequeue_blocking)
    /// about connection timeouts.
    pub fn dequeue_blocking<T: FromRedisValue + 'static>(
        &self,
        timeout: Option<Duration>,
    ) -> Op<Option<T>> {
        native::blocking_pop("BRPOP", &self.key, timeout)
    }

    /// How many items the queue holds (`LLEN`).
    pub fn length(&self) -> Op<u64> {
        native::length(&self.key)
    }
}
