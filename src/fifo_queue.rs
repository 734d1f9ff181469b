//! First-in, first-out queues: 《Redis 应用实例》 chapter 26 (`FifoQueue`, `FifoQueueR`, and
//! the unlisted non-blocking `FifoQueue`).
//!
//! ```no_run
//! # async fn demo() -> redis_patterns::Result<()> {
//! use std::time::Duration;
//! use redis::AsyncConnectionConfig;
//! use redis_patterns::fifo_queue::FifoQueue;
//!
//! let client = redis::Client::open("redis://127.0.0.1/")?;
//! let jobs = FifoQueue::new("jobs")?;
//!
//! // Producers: any connection.
//! let mut con = client.get_multiplexed_async_connection().await?;
//! assert_eq!(jobs.enqueue(&["job:1", "job:2"]).run_async(&mut con).await?, 2);
//! assert_eq!(jobs.dequeue::<String>().run_async(&mut con).await?.as_deref(), Some("job:1"));
//!
//! // A consumer that waits up to a minute: its own connection, no response timeout.
//! let config = AsyncConnectionConfig::new().set_response_timeout(None);
//! let mut blocking = client.get_multiplexed_async_connection_with_config(&config).await?;
//! let job = jobs
//!     .dequeue_blocking::<String>(Some(Duration::from_secs(60)))
//!     .run_async(&mut blocking)
//!     .await?;
//! assert_eq!(job.as_deref(), Some("job:2"));
//! # Ok(()) }
//! ```
//!
//! A queue is one list. [`FifoQueue`] pushes on the right and pops on the left;
//! [`ReversedFifoQueue`] (the book's `FifoQueueR`) pushes on the left and pops on the
//! right. Either way the first item in is the first out. Every operation is one native
//! command, so there is no script here.
//!
//! | Book | Here | Command |
//! |---|---|---|
//! | `enqueue(*items)` → length | [`enqueue(&items)`](FifoQueue::enqueue) → length | `RPUSH` (`LPUSH`) |
//! | `dequeue()` (`timeout=-1`) | [`dequeue()`](FifoQueue::dequeue) → `Option` | `LPOP` (`RPOP`) |
//! | `dequeue(timeout=N)`, `0` = forever | [`dequeue_blocking(Some(t))`](FifoQueue::dequeue_blocking), `None` = forever | `BLPOP` (`BRPOP`) |
//! | `length()` | [`length()`](FifoQueue::length) | `LLEN` |
//!
//! What differs from the book, and why:
//!
//! - The blocking pop is its own method taking `Option<Duration>` instead of the book's
//!   one `dequeue(timeout)` with magic numbers (`-1` = don't block, `0` = forever): the
//!   two calls need different connections (below), so they should look different. The
//!   timeout goes to Redis as seconds with millisecond precision (BLPOP has taken a
//!   fractional timeout since Redis 6.0); `Some(Duration::ZERO)` is refused, because
//!   Redis would read it as "forever".
//! - `enqueue` of no items is refused with [`Error::InvalidInput`](crate::Error) before
//!   any I/O; the book sends `RPUSH key` and gets a Redis error.
//! - Items are binary-safe: `enqueue` takes anything redis-rs sends as one argument
//!   (`&str`, `&[u8]`, `Vec<u8>`, numbers), and the pops decode into the type asked for
//!   (`dequeue::<String>()`, `dequeue::<Vec<u8>>()`). An item that does not decode as that
//!   type is pushed back where it was before the error returns, so it is never lost; the
//!   book's pops hand back whatever the client decoded.
//! - The unlisted non-blocking `FifoQueue` is [`FifoQueue`] without `dequeue_blocking`.
//!
//! # Blocking pops and connection timeouts
//!
//! A blocking pop holds its connection until an item arrives or the timeout passes, so
//! the client must be willing to wait at least that long for the reply:
//!
//! - A sync `redis::Connection` has no read timeout by default: blocking pops just work.
//!   If you set one with `Connection::set_read_timeout`, keep it longer than the pop's
//!   timeout, or `None`.
//! - An async `MultiplexedConnection` (and a `ConnectionManager`) gives up on any reply
//!   after **500 ms** by default. A `dequeue_blocking` longer than that fails with a
//!   timeout error, while the server keeps the pop waiting: an item that arrives later is
//!   popped and its reply thrown away, so **the item is lost**. Give blocking pops a
//!   connection made with `AsyncConnectionConfig::new().set_response_timeout(None)` (or a
//!   response timeout longer than the pop's), via
//!   `Client::get_multiplexed_async_connection_with_config`; for a `ConnectionManager`,
//!   `ConnectionManagerConfig::set_response_timeout`.
//! - A multiplexed connection sends every clone's commands down one socket, and Redis
//!   answers them in order: while a pop blocks, every other command on that connection
//!   waits behind it. Use a connection of its own for each blocked consumer.
//! - Cluster clients have no response timeout unless you set one
//!   (`ClusterClientBuilder::response_timeout`).
//! - Inside a [`Batch`](crate::Batch) transaction, Redis runs a blocking pop as a
//!   non-blocking one.

use std::time::Duration;

use redis::{FromRedisValue, ToRedisArgs};

use crate::runtime::input;
use crate::runtime::native::{blocking_pop, length, pop, push};
use crate::runtime::op::Op;

/// A FIFO queue in one list: `RPUSH` in, `LPOP`/`BLPOP` out.
///
/// ```no_run
/// # fn demo() -> redis_patterns::Result<()> {
/// use std::time::Duration;
/// use redis_patterns::fifo_queue::FifoQueue;
///
/// let mut con = redis::Client::open("redis://127.0.0.1/")?.get_connection()?;
/// let q = FifoQueue::new("orders")?;
/// q.enqueue(&["a", "b", "c"]).run(&mut con)?;
/// assert_eq!(q.dequeue::<String>().run(&mut con)?.as_deref(), Some("a"));
/// assert_eq!(q.length().run(&mut con)?, 2);
/// // Waits up to 5 s for an item (a sync connection has no read timeout by default).
/// let next = q.dequeue_blocking::<String>(Some(Duration::from_secs(5))).run(&mut con)?;
/// assert_eq!(next.as_deref(), Some("b"));
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FifoQueue {
    key: String,
}

impl FifoQueue {
    /// The queue stored at `key`.
    ///
    /// An empty key is [`Error::InvalidInput`](crate::Error::InvalidInput).
    pub fn new(key: impl Into<String>) -> crate::Result<Self> {
        let key = key.into();
        input::key("key", &key)?;
        Ok(FifoQueue { key })
    }

    /// The queue's key.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// Appends `items`, in order, behind the queue's last item (`RPUSH`), and returns the
    /// queue's new length. At least one item.
    pub fn enqueue<V: ToRedisArgs>(&self, items: &[V]) -> Op<u64> {
        push("RPUSH", &self.key, items)
    }

    /// Takes the queue's first item (`LPOP`), or `None` when it is empty. Never blocks.
    pub fn dequeue<T: FromRedisValue + 'static>(&self) -> Op<Option<T>> {
        pop("LPOP", &self.key)
    }

    /// Takes the queue's first item, waiting for one up to `timeout` (`None`: forever)
    /// when it is empty (`BLPOP`); `None` when the timeout passed first.
    ///
    /// The connection must wait for the reply at least as long: see the
    /// [module docs](self#blocking-pops-and-connection-timeouts) for async connections,
    /// whose default 500 ms response timeout would otherwise lose the item.
    pub fn dequeue_blocking<T: FromRedisValue + 'static>(
        &self,
        timeout: Option<Duration>,
    ) -> Op<Option<T>> {
        blocking_pop("BLPOP", &self.key, timeout)
    }

    /// How many items the queue holds (`LLEN`).
    pub fn length(&self) -> Op<u64> {
        length(&self.key)
    }
}

/// The book's `FifoQueueR`: a FIFO queue pushed on the left (`LPUSH`) and popped on the
/// right (`RPOP`/`BRPOP`). Items come out in the order they went in, as with
/// [`FifoQueue`]; the list just runs the other way, newest at index 0.
///
/// ```no_run
/// # fn demo() -> redis_patterns::Result<()> {
/// use redis_patterns::fifo_queue::ReversedFifoQueue;
///
/// let mut con = redis::Client::open("redis://127.0.0.1/")?.get_connection()?;
/// let q = ReversedFifoQueue::new("orders:r")?;
/// q.enqueue(&["a", "b"]).run(&mut con)?;
/// assert_eq!(q.dequeue::<String>().run(&mut con)?.as_deref(), Some("a"));
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReversedFifoQueue {
    key: String,
}

impl ReversedFifoQueue {
    /// The queue stored at `key`.
    ///
    /// An empty key is [`Error::InvalidInput`](crate::Error::InvalidInput).
    pub fn new(key: impl Into<String>) -> crate::Result<Self> {
        let key = key.into();
        input::key("key", &key)?;
        Ok(ReversedFifoQueue { key })
    }

    /// The queue's key.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// Adds `items`, in order, behind the queue's last item (`LPUSH`, so the list's head
    /// is the newest), and returns the queue's new length. At least one item.
    pub fn enqueue<V: ToRedisArgs>(&self, items: &[V]) -> Op<u64> {
        push("LPUSH", &self.key, items)
    }

    /// Takes the queue's first item (`RPOP`), or `None` when it is empty. Never blocks.
    pub fn dequeue<T: FromRedisValue + 'static>(&self) -> Op<Option<T>> {
        pop("RPOP", &self.key)
    }

    /// Takes the queue's first item, waiting for one up to `timeout` (`None`: forever)
    /// when it is empty (`BRPOP`); `None` when the timeout passed first. See
    /// [`FifoQueue::dequeue_blocking`] about connection timeouts.
    pub fn dequeue_blocking<T: FromRedisValue + 'static>(
        &self,
        timeout: Option<Duration>,
    ) -> Op<Option<T>> {
        blocking_pop("BRPOP", &self.key, timeout)
    }

    /// How many items the queue holds (`LLEN`).
    pub fn length(&self) -> Op<u64> {
        length(&self.key)
    }
}
