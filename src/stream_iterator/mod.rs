//! Reading a stream in batches: 《Redis 应用实例》 chapter 13 (both classes are named
//! `StreamIterator` in the book: one over `XRANGE`, one over `XREAD`).
//!
//! ```no_run
//! # fn demo() -> redis_patterns::Result<()> {
//! use std::time::Duration;
//! use redis_patterns::stream_iterator::{Block, XrangeIterator, XreadIterator};
//!
//! let mut con = redis::Client::open("redis://127.0.0.1/")?.get_connection()?;
//!
//! let mut it = XrangeIterator::new("events");
//! loop {
//!     let batch = it.next(&mut con, 100)?;
//!     if batch.is_empty() { break; }
//!     for entry in batch {
//!         let user = entry.get_str("user").unwrap_or("?");
//!         let amount: Option<u64> = entry.get_as("amount")?;
//!         println!("{} {user} {amount:?}", entry.id);
//!     }
//! }
//!
//! // Wait up to 2 s for entries newer than the last one read.
//! let mut tail = XreadIterator::new("events");
//! tail.rewind_to("1700000000000-0")?;
//! let fresh = tail.next(&mut con, 10, Some(Duration::from_secs(2)))?;
//!
//! // Only what is added from now on, waiting as long as it takes.
//! let mut live = XreadIterator::from_now("events");
//! loop {
//!     for entry in live.next(&mut con, 10, Block::Forever)? {
//!         println!("new: {}", entry.id);
//!     }
//! }
//! # }
//! ```
//!
//! [`XrangeIterator`] walks a stream from the oldest entry with `XRANGE key (last-id + COUNT
//! n`: the cursor is exclusive, so no entry is returned twice, and entries appended between
//! calls are picked up by later calls. [`XreadIterator`] reads with `XREAD [BLOCK ms] COUNT
//! n STREAMS key last-id`, and can wait for new entries ([`Block`]), from the first entry or
//! from "now on" ([`XreadIterator::from_now`]). Both return [`StreamEntry`]s (an
//! [`EntryId`] and the field/value pairs, as bytes), on sync and async connections (feature
//! `aio`), and both have a Rust [`Iterator`] and a `futures_core::Stream` form.
//!
//! Each batch is one native command; a walk is inherently one round trip per batch (and a
//! [`Block::Forever`] read one per [`FOREVER_SLICE`] while nothing arrives). Streams are
//! single keys, so both iterators work on a cluster connection as they are.
//!
//! # Reading from now on
//!
//! [`XreadIterator::from_now`] (or [`rewind_to_now`](XreadIterator::rewind_to_now)) reads
//! only the entries added after its first read starts. That first read resolves "now" to a
//! concrete id once (the stream's newest entry, with `XREVRANGE key + - COUNT 1`; `0-0`
//! when the stream is missing or empty), and every read after it goes on from the last id
//! read. So an entry added between two reads is never missed, which `XREAD … STREAMS key $`
//! sent on each call would do: `$` means "after the newest entry when this command runs".
//! The first read is two round trips (`XREVRANGE`, then `XREAD`); the others are one.
//! [`resolve`](XreadIterator::resolve) pins "now" earlier than the first read, when the
//! reader must not miss what is added while it gets ready.
//!
//! # Blocking reads and response timeouts
//!
//! How long a read waits when nothing newer than the cursor is there is a [`Block`]:
//! [`Block::No`] (no `BLOCK`; also `None`), [`Block::For(d)`](Block::For) (`BLOCK ms`; also
//! `Some(d)` or a bare `Duration`), or [`Block::Forever`]. `XREAD BLOCK ms` holds the
//! connection until an entry arrives or `ms` pass, so:
//!
//! - For `Block::For(d)` the client must wait longer than `d`. A sync `redis::Connection`
//!   has no read timeout unless you set one (`set_read_timeout`). redis-rs async
//!   connections do: a `MultiplexedConnection` from `Client::get_multiplexed_async_connection`
//!   and a `ConnectionManager` time out after **500 ms** by default, and an async cluster
//!   connection after its `ClusterClientBuilder::response_timeout`. Open the connection
//!   for a longer block with `AsyncConnectionConfig::new().set_response_timeout(None)` (or
//!   a timeout above the block) and `Client::get_multiplexed_async_connection_with_config`,
//!   or call `MultiplexedConnection::set_response_timeout`. A read that times out on the
//!   client returns an error and leaves the cursor where it was: nothing is lost, the next
//!   call reads the same entries.
//! - `Block::Forever` never sends `BLOCK 0`, which no response timeout survives: it sends
//!   `XREAD BLOCK 250` ([`FOREVER_SLICE`]) again and again, from the same cursor, until one
//!   returns an entry. It therefore works on any connection that waits longer than 250 ms
//!   for a reply, the async defaults included, and misses nothing between two slices.
//! - A blocked command holds up every command behind it on the same connection, so give a
//!   blocking reader a connection of its own, not one shared through a multiplexer.
//!
//! # The book's methods
//!
//! | Book | Here |
//! |---|---|
//! | `StreamIterator(client, key, cursor="-")` (XRANGE) | [`XrangeIterator::new(key)`](XrangeIterator::new), then [`rewind_to`](XrangeIterator::rewind_to) for another start |
//! | `next(count=10)` | [`next(con, count)`](XrangeIterator::next) / [`next_async`](XrangeIterator::next_async) |
//! | `rewind(cursor="-")` | [`rewind()`](XrangeIterator::rewind), [`rewind_to(cursor)`](XrangeIterator::rewind_to) |
//! | `StreamIterator(client, key, cursor=0)` (XREAD) | [`XreadIterator::new(key)`](XreadIterator::new) |
//! | `StreamIterator(client, key, cursor="$")` | [`XreadIterator::from_now(key)`](XreadIterator::from_now): `$` resolved once, on the first read |
//! | `next(count=10, block=None)` | [`next(con, count, block)`](XreadIterator::next) / [`next_async`](XreadIterator::next_async), `block`: `None`, `Some(d)`, or a [`Block`] |
//! | `next(block=0)` (wait forever) | `next(con, count, Block::Forever)`: bounded slices, safe with response timeouts |
//! | `rewind(cursor=0)` | [`rewind()`](XreadIterator::rewind), [`rewind_to(cursor)`](XreadIterator::rewind_to), [`rewind_to_now()`](XreadIterator::rewind_to_now) |
//! | `[{"id": …, "msg": {…}}, …]` | `Vec<`[`StreamEntry`]`>`; an empty `Vec` at the end, on a block timeout, or when the key is missing |
//!
//! What differs from the book, and why:
//!
//! - Cursors are checked before any I/O: [`rewind_to`](XrangeIterator::rewind_to) takes
//!   `-`, an id (`1700000000000-0`, or `1700000000000` for its first entry) or an
//!   exclusive `(id`, and anything else (`"abc"`) is [`Error::InvalidInput`]. A count of 0
//!   (which never advances) and a block under 1 ms (`BLOCK 0` would wait forever; use
//!   [`Block::Forever`] for that) are refused the same way.
//! - The book's XREAD iterator accepts `$` as a cursor and sends it on every call, so an
//!   entry added between two calls is skipped. Here `$` is refused by
//!   [`rewind_to`](XreadIterator::rewind_to); [`from_now`](XreadIterator::from_now)
//!   resolves it once instead (see above).
//! - The book's `block=0` sends `BLOCK 0`, which fails on a connection with a response
//!   timeout (every redis-rs async connection by default); [`Block::Forever`] waits in
//!   slices instead.
//! - The book's XREAD parsing depends on redis-py's reply shape (a list under RESP2, and
//!   it breaks on the dict redis-py 5 returns under RESP3); both shapes decode here.
//! - Field names and values are bytes, as Redis stores them: an entry whose fields or
//!   values are not UTF-8 (an image, a serialised struct) reads back unchanged, where the
//!   book's `decode_responses=True` client fails on it. Read a value with
//!   [`get`](StreamEntry::get) (bytes), [`get_str`](StreamEntry::get_str) (text, `None`
//!   when not UTF-8) or [`get_as`](StreamEntry::get_as) (any redis-rs `FromRedisValue`:
//!   a number, a `String`). The stream's key is text: it is the one you name.
//! - The async forms (`next_async`, `entry_stream`) need the `aio` feature (on by
//!   default).

use std::fmt;
use std::time::Duration;

use redis::Value;

use crate::runtime::error::{Error, Result};
use crate::runtime::input;
use crate::runtime::op::Op;

mod entry;
pub(crate) use entry::entries;
use entry::read_reply;
pub use entry::{EntryId, StreamEntry};

/// Where an [`XrangeIterator`] starts its next batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Start {
    /// `-`: the first entry.
    First,
    /// `id`: this entry or the first after it.
    From(EntryId),
    /// `(id`: the first entry after it.
    After(EntryId),
}

impl fmt::Display for Start {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Start::First => f.write_str("-"),
            Start::From(id) => write!(f, "{id}"),
            Start::After(id) => write!(f, "({id}"),
        }
    }
}

/// Walks a stream from its oldest entry with `XRANGE` (Redis 6.2), a batch per call.
///
/// After a batch the cursor becomes `(last-id`, exclusive: each entry is returned once, in
/// id order, and entries appended since the last call are returned by later calls. An
/// empty batch means the walk has caught up with the stream (or the key is missing);
/// calling again later returns what was appended since. A failed call leaves the cursor
/// where it was.
///
/// ```no_run
/// # fn demo() -> redis_patterns::Result<()> {
/// use redis_patterns::stream_iterator::XrangeIterator;
///
/// let mut con = redis::Client::open("redis://127.0.0.1/")?.get_connection()?;
///
/// let mut it = XrangeIterator::new("orders");
/// it.rewind_to("(1700000000000-0")?; // resume after an entry already handled
/// let batch = it.next(&mut con, 10)?;
/// println!("resume from {}", it.cursor());
///
/// // Everything there is now, one entry at a time.
/// for entry in XrangeIterator::new("orders").entries(&mut con, 100) {
///     println!("{}", entry?.id);
/// }
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct XrangeIterator {
    key: String,
    start: Start,
}

impl XrangeIterator {
    /// A walk of the stream at `key`, from its first entry (cursor `-`).
    pub fn new(key: impl Into<String>) -> Self {
        XrangeIterator {
            key: key.into(),
            start: Start::First,
        }
    }

    /// The stream's key.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// The cursor as XRANGE takes it: `-`, `id` or `(id`. Save it to resume later with
    /// [`rewind_to`](Self::rewind_to).
    pub fn cursor(&self) -> String {
        self.start.to_string()
    }

    /// Back to the first entry (the book's `rewind()`).
    pub fn rewind(&mut self) {
        self.start = Start::First;
    }

    /// Moves the cursor (the book's `rewind(cursor)`): `-` (the first entry), an id `ms-seq`
    /// or `ms` (from that entry on), or `(id` (after it). Anything else is
    /// [`Error::InvalidInput`] naming `cursor`, and the cursor does not move.
    pub fn rewind_to(&mut self, cursor: &str) -> Result<()> {
        let parse = |id: &str| {
            id.parse::<EntryId>().map_err(|_| {
                Error::invalid(
                    "cursor",
                    format!("must be `-`, a stream id `ms-seq` or `ms`, or `(id`, got {cursor:?}"),
                )
            })
        };
        self.start = match cursor {
            "-" => Start::First,
            _ => match cursor.strip_prefix('(') {
                Some(id) => Start::After(parse(id)?),
                None => Start::From(parse(cursor)?),
            },
        };
        Ok(())
    }

    /// The next batch of up to `count` entries (`XRANGE key cursor + COUNT count`); empty
    /// when the walk has caught up or the key is missing.
    pub fn next(
        &mut self,
        con: &mut dyn redis::ConnectionLike,
        count: usize,
    ) -> Result<Vec<StreamEntry>> {
        match self.range(count) {
            Some(op) => Ok(self.advance(op.run(con)?)),
            None => Ok(Vec::new()),
        }
    }

    /// [`next`](Self::next) on an async connection.
    #[cfg(feature = "aio")]
    pub async fn next_async<C>(&mut self, con: &mut C, count: usize) -> Result<Vec<StreamEntry>>
    where
        C: redis::aio::ConnectionLike,
    {
        match self.range(count) {
            Some(op) => Ok(self.advance(op.run_async(con).await?)),
            None => Ok(Vec::new()),
        }
    }

    /// The XRANGE to send, or `None` when the cursor is past the largest possible id.
    fn range(&self, count: usize) -> Option<Op<Vec<StreamEntry>>> {
        if self.start == Start::After(EntryId::MAX) {
            return None;
        }
        Some(Op::try_build(|| {
            let mut cmd = redis::cmd("XRANGE");
            cmd.arg(input::key("key", &self.key)?)
                .arg(self.start.to_string())
                .arg("+")
                .arg("COUNT")
                .arg(input::count("count", count)?);
            Ok(Op::<Value>::native(cmd).map(entries))
        }))
    }

    fn advance(&mut self, batch: Vec<StreamEntry>) -> Vec<StreamEntry> {
        if let Some(last) = batch.last() {
            self.start = Start::After(last.id);
        }
        batch
    }

    /// The entries from the cursor on, one at a time, `count` per round trip, until the
    /// walk catches up with the stream (the first empty batch). After an error the
    /// iterator ends.
    pub fn entries(
        self,
        con: &mut dyn redis::ConnectionLike,
        count: usize,
    ) -> impl Iterator<Item = Result<StreamEntry>> + '_ {
        let mut walk = self;
        batches(move || walk.next(con, count))
    }

    /// [`entries`](Self::entries) as a [`futures_core::Stream`] on an async connection.
    ///
    /// ```no_run
    /// # async fn demo() -> redis_patterns::Result<()> {
    /// use futures_util::TryStreamExt;
    /// use redis_patterns::stream_iterator::{StreamEntry, XrangeIterator};
    ///
    /// let client = redis::Client::open("redis://127.0.0.1/")?;
    /// let mut con = client.get_multiplexed_async_connection().await?;
    /// let all: Vec<StreamEntry> = XrangeIterator::new("orders")
    ///     .entry_stream(&mut con, 100)
    ///     .try_collect()
    ///     .await?;
    /// # Ok(()) }
    /// ```
    #[cfg(feature = "aio")]
    pub fn entry_stream<C>(
        self,
        con: &mut C,
        count: usize,
    ) -> impl futures_core::Stream<Item = Result<StreamEntry>> + '_
    where
        C: redis::aio::ConnectionLike,
    {
        let state = (self, con, Vec::new().into_iter(), false);
        futures_util::stream::unfold(state, move |(mut walk, con, mut batch, done)| async move {
            if let Some(entry) = batch.next() {
                return Some((Ok(entry), (walk, con, batch, done)));
            }
            if done {
                return None;
            }
            match walk.next_async(con, count).await {
                Ok(entries) if entries.is_empty() => None,
                Ok(entries) => {
                    let mut batch = entries.into_iter();
                    let first = batch.next().map(Ok);
                    first.map(|first| (first, (walk, con, batch, false)))
                }
                Err(err) => Some((Err(err), (walk, con, batch, true))),
            }
        })
    }
}

/// How long an [`XreadIterator`] read waits when nothing newer than its cursor is there.
///
/// `None` and `Some(d)` convert to [`No`](Block::No) and [`For(d)`](Block::For), and a bare
/// `Duration` to `For`, so a read takes any of them:
///
/// ```no_run
/// # fn demo() -> redis_patterns::Result<()> {
/// use std::time::Duration;
/// use redis_patterns::stream_iterator::{Block, XreadIterator};
///
/// let mut con = redis::Client::open("redis://127.0.0.1/")?.get_connection()?;
/// let mut it = XreadIterator::new("events");
/// it.next(&mut con, 10, None)?; // Block::No
/// it.next(&mut con, 10, Some(Duration::from_millis(100)))?; // Block::For
/// it.next(&mut con, 10, Duration::from_millis(100))?; // Block::For
/// let at_least_one = it.next(&mut con, 10, Block::Forever)?;
/// assert!(!at_least_one.is_empty());
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Block {
    /// Answer at once (no `BLOCK`): the book's `block=None`.
    #[default]
    No,
    /// Wait up to this long (`BLOCK ms`, in whole milliseconds, from 1 ms). One command: the
    /// connection must wait longer than this for its reply (see the
    /// [module docs](self#blocking-reads-and-response-timeouts)).
    For(Duration),
    /// Wait until at least one entry arrives, however long that takes: the book's
    /// `block=0`. Sent as `XREAD BLOCK 250` ([`FOREVER_SLICE`]) again and again from the
    /// same cursor, never as `BLOCK 0`, so that a connection whose response timeout is over
    /// 250 ms (the 500 ms default of redis-rs's async connections included) can wait
    /// forever. A read with `Forever` never returns an empty batch.
    Forever,
}

impl From<Option<Duration>> for Block {
    /// `None` is [`Block::No`], `Some(d)` is [`Block::For(d)`](Block::For).
    fn from(block: Option<Duration>) -> Self {
        block.map_or(Block::No, Block::For)
    }
}

impl From<Duration> for Block {
    /// [`Block::For(d)`](Block::For).
    fn from(block: Duration) -> Self {
        Block::For(block)
    }
}

/// How long each `XREAD BLOCK` of a [`Block::Forever`] read waits: half of the 500 ms
/// response timeout that redis-rs's async connections have by default, so that a slice's
/// reply comes back well within it, and long enough that an idle reader sends only a few
/// commands a second.
pub const FOREVER_SLICE: Duration = Duration::from_millis(250);

/// Reads a stream with `XREAD`, a batch per call, optionally waiting for new entries.
///
/// The cursor starts at `0-0` (every entry) with [`new`](Self::new), or at "now" with
/// [`from_now`](Self::from_now), and becomes the last id read. An empty batch means nothing
/// newer than the cursor arrived (within the block time, if any) or the key is missing. See
/// the [module docs](self#blocking-reads-and-response-timeouts) for how to configure a
/// connection for long blocks.
///
/// ```no_run
/// # fn demo() -> redis_patterns::Result<()> {
/// use std::time::Duration;
/// use redis_patterns::stream_iterator::XreadIterator;
///
/// // A sync connection has no read timeout unless one is set: it waits as long as the
/// // BLOCK does.
/// let mut con = redis::Client::open("redis://127.0.0.1/")?.get_connection()?;
///
/// let mut it = XreadIterator::new("chat:room:1");
/// loop {
///     for msg in it.next(&mut con, 100, Some(Duration::from_secs(5)))? {
///         println!("{}: {}", msg.id, msg.get_str("text").unwrap_or("(binary)"));
///     }
/// }
/// # }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct XreadIterator {
    key: String,
    /// The last id read; `None` until the first read of a reader that starts from now.
    cursor: Option<EntryId>,
}

impl XreadIterator {
    /// A reader of the stream at `key`, from its first entry (cursor `0-0`).
    pub fn new(key: impl Into<String>) -> Self {
        XreadIterator {
            key: key.into(),
            cursor: Some(EntryId::MIN),
        }
    }

    /// A reader of the stream at `key` that returns only the entries added after its first
    /// read starts (the book's cursor `$`, resolved once).
    ///
    /// The first read sets the cursor to the stream's newest entry (`XREVRANGE key + -
    /// COUNT 1`; `0-0` when the key is missing or the stream empty), then reads from there
    /// as every later read does: an entry added between two reads is never missed. Until
    /// then [`cursor`](Self::cursor) is `None`. A first read whose input is refused
    /// resolves nothing; one that fails after the resolution (a client-side timeout) keeps
    /// the resolved cursor, so entries added since are still read next.
    ///
    /// ```no_run
    /// # fn demo() -> redis_patterns::Result<()> {
    /// use redis_patterns::stream_iterator::{Block, XreadIterator};
    ///
    /// let mut con = redis::Client::open("redis://127.0.0.1/")?.get_connection()?;
    /// let mut live = XreadIterator::from_now("orders");
    /// assert_eq!(live.cursor(), None);
    /// // Nothing that is in the stream already; waits for the next order.
    /// let fresh = live.next(&mut con, 10, Block::Forever)?;
    /// assert_eq!(live.cursor(), fresh.last().map(|e| e.id));
    /// # Ok(()) }
    /// ```
    pub fn from_now(key: impl Into<String>) -> Self {
        XreadIterator {
            key: key.into(),
            cursor: None,
        }
    }

    /// The stream's key.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// The last id read (entries after it come next): `Some(0-0)` for a reader made with
    /// [`new`](Self::new) that has read nothing yet, and `None` for a reader that starts
    /// from now ([`from_now`](Self::from_now), [`rewind_to_now`](Self::rewind_to_now))
    /// until its first read resolves "now" to an id.
    pub fn cursor(&self) -> Option<EntryId> {
        self.cursor
    }

    /// Back to the first entry (the book's `rewind()`, cursor 0).
    pub fn rewind(&mut self) {
        self.cursor = Some(EntryId::MIN);
    }

    /// Reads entries after `cursor` next (the book's `rewind(cursor)`): an id `ms-seq` or
    /// `ms`. Anything else is [`Error::InvalidInput`] naming `cursor`, and the cursor does
    /// not move. That includes `$`, which sent as is would skip the entries added between
    /// two reads: use [`rewind_to_now`](Self::rewind_to_now).
    pub fn rewind_to(&mut self, cursor: &str) -> Result<()> {
        self.cursor = Some(cursor.parse().map_err(|_| {
            let hint = if cursor == "$" {
                "; for the entries added from now on, use rewind_to_now()"
            } else {
                ""
            };
            Error::invalid(
                "cursor",
                format!("must be a stream id `ms-seq` or `ms`, got {cursor:?}{hint}"),
            )
        })?);
        Ok(())
    }

    /// Reads only the entries added after the next read starts, as a reader made with
    /// [`from_now`](Self::from_now) does; no I/O until then.
    pub fn rewind_to_now(&mut self) {
        self.cursor = None;
    }

    /// Pins "now" at this moment for a reader that starts from now and has not read yet
    /// (one `XREVRANGE key + - COUNT 1`), rather than at its first read; returns the
    /// cursor. Entries added from now on are read by the next reads, however late they
    /// come. A reader whose cursor is already an id keeps it, and nothing is sent.
    ///
    /// ```no_run
    /// # fn demo() -> redis_patterns::Result<()> {
    /// use redis_patterns::stream_iterator::{Block, XreadIterator};
    ///
    /// let mut con = redis::Client::open("redis://127.0.0.1/")?.get_connection()?;
    /// let mut live = XreadIterator::from_now("orders");
    /// let since = live.resolve(&mut con)?;
    /// // ... set up, take a while; orders placed meanwhile are not lost ...
    /// let orders = live.next(&mut con, 10, Block::Forever)?;
    /// assert!(orders.iter().all(|o| o.id > since));
    /// # Ok(()) }
    /// ```
    pub fn resolve(&mut self, con: &mut dyn redis::ConnectionLike) -> Result<EntryId> {
        if let Some(cursor) = self.cursor {
            return Ok(cursor);
        }
        let key = input::key("key", &self.key)?;
        Ok(*self.cursor.insert(newest(key).run(con)?))
    }

    /// [`resolve`](Self::resolve) on an async connection.
    #[cfg(feature = "aio")]
    pub async fn resolve_async<C>(&mut self, con: &mut C) -> Result<EntryId>
    where
        C: redis::aio::ConnectionLike,
    {
        if let Some(cursor) = self.cursor {
            return Ok(cursor);
        }
        let key = input::key("key", &self.key)?;
        Ok(*self.cursor.insert(newest(key).run_async(con).await?))
    }

    /// Up to `count` entries after the cursor (`XREAD [BLOCK ms] COUNT count STREAMS key
    /// cursor`). `block` says how long to wait when there is nothing new: `None` or
    /// [`Block::No`] not at all; `Some(d)`, `d` or [`Block::For(d)`](Block::For) up to `d`
    /// (whole milliseconds, at least 1; the connection must wait longer than that, see the
    /// [module docs](self#blocking-reads-and-response-timeouts)); [`Block::Forever`] until
    /// an entry arrives, in slices of [`FOREVER_SLICE`]. Empty when nothing arrived.
    ///
    /// A reader that starts from now resolves its cursor first (one more round trip, on
    /// its first read only). Input is checked before any I/O; a failed call leaves the
    /// cursor where it was.
    pub fn next(
        &mut self,
        con: &mut dyn redis::ConnectionLike,
        count: usize,
        block: impl Into<Block>,
    ) -> Result<Vec<StreamEntry>> {
        let read = Read::new(&self.key, count, block.into())?;
        let cursor = match self.cursor {
            Some(cursor) => cursor,
            None => *self.cursor.insert(newest(read.key).run(con)?),
        };
        let xread = read.op(cursor);
        loop {
            let batch = xread.run(con)?;
            if !batch.is_empty() || !read.forever {
                return Ok(self.advance(batch));
            }
        }
    }

    /// [`next`](Self::next) on an async connection.
    ///
    /// Dropping the future (a `select!`, a timeout) loses nothing: the cursor moves only
    /// when a batch is returned.
    ///
    /// ```no_run
    /// # async fn demo() -> redis_patterns::Result<()> {
    /// use std::time::Duration;
    /// use redis_patterns::stream_iterator::{Block, XreadIterator};
    ///
    /// let client = redis::Client::open("redis://127.0.0.1/")?;
    /// // The default 500 ms response timeout: enough for Block::Forever's slices.
    /// let mut con = client.get_multiplexed_async_connection().await?;
    /// let mut live = XreadIterator::from_now("chat:room:1");
    /// loop {
    ///     for msg in live.next_async(&mut con, 100, Block::Forever).await? {
    ///         println!("{}: {}", msg.id, String::from_utf8_lossy(msg.get("text").unwrap_or_default()));
    ///     }
    /// }
    /// # }
    /// ```
    ///
    /// A single longer block needs a connection that waits longer:
    ///
    /// ```no_run
    /// # async fn demo() -> redis_patterns::Result<()> {
    /// use std::time::Duration;
    /// use redis_patterns::stream_iterator::XreadIterator;
    ///
    /// let client = redis::Client::open("redis://127.0.0.1/")?;
    /// // No response timeout: the connection waits as long as the BLOCK does.
    /// let config = redis::AsyncConnectionConfig::new().set_response_timeout(None);
    /// let mut con = client.get_multiplexed_async_connection_with_config(&config).await?;
    /// let mut it = XreadIterator::new("chat:room:1");
    /// let batch = it.next_async(&mut con, 100, Some(Duration::from_secs(5))).await?;
    /// # Ok(()) }
    /// ```
    #[cfg(feature = "aio")]
    pub async fn next_async<C>(
        &mut self,
        con: &mut C,
        count: usize,
        block: impl Into<Block>,
    ) -> Result<Vec<StreamEntry>>
    where
        C: redis::aio::ConnectionLike,
    {
        let read = Read::new(&self.key, count, block.into())?;
        let cursor = match self.cursor {
            Some(cursor) => cursor,
            None => *self.cursor.insert(newest(read.key).run_async(con).await?),
        };
        let xread = read.op(cursor);
        loop {
            let batch = xread.run_async(con).await?;
            if !batch.is_empty() || !read.forever {
                return Ok(self.advance(batch));
            }
        }
    }

    fn advance(&mut self, batch: Vec<StreamEntry>) -> Vec<StreamEntry> {
        if let Some(last) = batch.last() {
            self.cursor = Some(last.id);
        }
        batch
    }

    /// The entries after the cursor, one at a time, `count` per round trip, until a read
    /// returns nothing (with `block`: until nothing arrives for that long; with
    /// [`Block::Forever`], never: it follows the stream). After an error the iterator
    /// ends.
    pub fn entries(
        self,
        con: &mut dyn redis::ConnectionLike,
        count: usize,
        block: impl Into<Block>,
    ) -> impl Iterator<Item = Result<StreamEntry>> + '_ {
        let mut reader = self;
        let block = block.into();
        batches(move || reader.next(con, count, block))
    }

    /// [`entries`](Self::entries) as a [`futures_core::Stream`] on an async connection.
    #[cfg(feature = "aio")]
    pub fn entry_stream<C>(
        self,
        con: &mut C,
        count: usize,
        block: impl Into<Block>,
    ) -> impl futures_core::Stream<Item = Result<StreamEntry>> + '_
    where
        C: redis::aio::ConnectionLike,
    {
        let block = block.into();
        let state = (self, con, Vec::new().into_iter(), false);
        futures_util::stream::unfold(
            state,
            move |(mut reader, con, mut batch, done)| async move {
                if let Some(entry) = batch.next() {
                    return Some((Ok(entry), (reader, con, batch, done)));
                }
                if done {
                    return None;
                }
                match reader.next_async(con, count, block).await {
                    Ok(entries) => {
                        let mut batch = entries.into_iter();
                        let first = batch.next()?;
                        Some((Ok(first), (reader, con, batch, false)))
                    }
                    Err(err) => Some((Err(err), (reader, con, batch, true))),
                }
            },
        )
    }
}

/// An XREAD's checked input.
struct Read<'a> {
    key: &'a str,
    count: u64,
    block_ms: Option<u64>,
    /// Send the XREAD again while it returns nothing.
    forever: bool,
}

impl<'a> Read<'a> {
    fn new(key: &'a str, count: usize, block: Block) -> Result<Self> {
        let key = input::key("key", key)?;
        let count = input::count("count", count)?;
        let (block_ms, forever) = match block {
            Block::No => (None, false),
            Block::For(block) => (Some(block_ms(block)?), false),
            Block::Forever => (Some(FOREVER_SLICE.as_millis() as u64), true),
        };
        Ok(Read {
            key,
            count,
            block_ms,
            forever,
        })
    }

    /// `XREAD [BLOCK ms] COUNT count STREAMS key cursor`.
    fn op(&self, cursor: EntryId) -> Op<Vec<StreamEntry>> {
        let mut cmd = redis::cmd("XREAD");
        if let Some(ms) = self.block_ms {
            cmd.arg("BLOCK").arg(ms);
        }
        cmd.arg("COUNT")
            .arg(self.count)
            .arg("STREAMS")
            .arg(self.key)
            .arg(cursor.to_string());
        Op::<Value>::native(cmd).map(read_reply)
    }
}

/// The id "now" resolves to: the stream's newest entry's, `0-0` when it has none.
///
/// Not the stream's last-generated id (`XINFO STREAM`), which is higher when the newest
/// entries were deleted: every entry added later gets an id above the last-generated one,
/// so reading after the newest entry left sees exactly those. It still does after an
/// `XSETID` lowered the last-generated id (Redis allows that down to the newest entry),
/// where a cursor at the old last-generated id would skip the entries added since.
/// XREVRANGE is also a small reply, and answers a missing key with nothing rather than an
/// error.
fn newest(key: &str) -> Op<EntryId> {
    let mut cmd = redis::cmd("XREVRANGE");
    cmd.arg(key).arg("+").arg("-").arg("COUNT").arg(1);
    Op::<Value>::native(cmd).map(|reply| {
        Ok(entries(reply)?
            .first()
            .map_or(EntryId::MIN, |entry| entry.id))
    })
}

/// The longest block: as for the other blocking commands.
fn block_ms(block: Duration) -> Result<u64> {
    input::millis_in(block, input::MAX_BLOCK_MS).ok_or_else(|| {
        Error::invalid(
            "block",
            format!(
                "must be from 1 ms to {} ms, got {block:?}; Block::No (None) does not block, \
                 Block::Forever waits until an entry arrives",
                input::MAX_BLOCK_MS
            ),
        )
    })
}

/// Yields the items of each batch `next` returns, until an empty batch or an error.
fn batches<T>(mut next: impl FnMut() -> Result<Vec<T>>) -> impl Iterator<Item = Result<T>> {
    let mut batch = Vec::new().into_iter();
    let mut done = false;
    std::iter::from_fn(move || {
        if let Some(item) = batch.next() {
            return Some(Ok(item));
        }
        if done {
            return None;
        }
        match next() {
            Ok(items) => {
                batch = items.into_iter();
                let first = batch.next();
                done = first.is_none();
                first.map(Ok)
            }
            Err(err) => {
                done = true;
                Some(Err(err))
            }
        }
    })
}
