//! Message queues on a stream, and live comments: 《Redis 应用实例》 chapter 14
//! (`MessageQueue`, and `Chat`, its live-stream comments example).
//!
//! ```no_run
//! # fn demo() -> redis_patterns::Result<()> {
//! use redis_patterns::message_queue::{DEFAULT_COUNT, MessageQueue};
//! use redis_patterns::stream_iterator::Block;
//!
//! let mut con = redis::Client::open("redis://127.0.0.1/")?.get_connection()?;
//!
//! let mut orders = MessageQueue::new("orders")?;
//! let id = orders.send(&[("item", "book"), ("qty", "2")]).run(&mut con)?;
//! assert_eq!(orders.get(id).run(&mut con)?.unwrap().get_str("item"), Some("book"));
//! assert_eq!(orders.length().run(&mut con)?, 1);
//!
//! // Every message from the first, then wait for more.
//! loop {
//!     for msg in orders.receive(&mut con, DEFAULT_COUNT, Block::Forever)? {
//!         println!("{} {:?}", msg.id, msg.get_str("item"));
//!     }
//! }
//! # }
//! ```
//!
//! A queue is one stream. [`MessageQueue::send`] appends a message (`XADD key * …`), and
//! each receiver reads the messages after its own cursor (`XREAD`), which it holds in
//! process memory. Every receiver sees every message: this is fan-out, as in a chat
//! room or an event feed, not a work queue where each message goes to one worker. A
//! [`Chat`] is a queue per broadcaster whose viewers read the comments sent after they
//! joined. Every operation is one native command, so there is no script here; a receive
//! that waits ([`Block::Forever`]) may send
//! several (see [`stream_iterator`](crate::stream_iterator)).
//!
//! | Book | Here | Command |
//! |---|---|---|
//! | `MessageQueue(client, key, cursor=0)` | [`MessageQueue::new(key)`](MessageQueue::new); [`from_now(key)`](MessageQueue::from_now) for the book's cursor `"$"` | |
//! | `send(message: dict)` → id | [`send(&[(field, value), …])`](MessageQueue::send) → [`EntryId`] | `XADD key * field value …` |
//! | `receive(count=10, timeout=None)` → `[{"id", "msg"}]` | [`receive(con, count, block)`](MessageQueue::receive) / [`receive_async`](MessageQueue::receive_async) → `Vec<`[`StreamEntry`]`>` | `XREAD [BLOCK ms] COUNT count STREAMS key cursor` |
//! | `NON_BLOCK = None`, `BLOCK_FOREVER = 0` | `None` ([`Block::No`]), [`Block::Forever`] | `BLOCK_FOREVER`: `XREAD BLOCK 250`, again until a message arrives |
//! | `DEFAULT_COUNT = 10` | [`DEFAULT_COUNT`] | |
//! | `get(message_id)` → fields or `None` | [`get(id)`](MessageQueue::get) → `Option<`[`StreamEntry`]`>` | `XRANGE key id id` |
//! | `length()` | [`length()`](MessageQueue::length) | `XLEN key` |
//! | `Chat(client, broadcaster)` | [`Chat::new(broadcaster)`](Chat::new), key `Chat:<broadcaster>` | |
//! | `send(uid, content, donate=0)` → id | [`send(uid, content, donate)`](Chat::send) → [`EntryId`] | `XADD Chat:<b> MAXLEN ~ 10000 * uid u content c [donate d]` |
//! | `receive(count=10)`: waits for new comments | [`receive(con, count)`](Chat::receive) / [`receive_async`](Chat::receive_async) → `Vec<`[`Comment`]`>` | `XREVRANGE Chat:<b> + - COUNT 1` once, then `XREAD BLOCK 250 COUNT count STREAMS Chat:<b> cursor`, again until a comment arrives |
//! | `show()`: prints forever | [`show(con, out)`](Chat::show): writes to any `io::Write`, returns only on error | as `receive` |
//!
//! What differs from the book, and why:
//!
//! - **Fan-out only, as in the book.** There are no consumer groups, no acknowledgements
//!   and no redelivery: a message is read by every receiver and owned by none, and a
//!   receiver that crashes while handling one does not get it again. For work that each
//!   message must get done once, by one of several workers, with redelivery after a
//!   crash, use [`work_queue`](crate::work_queue) (leases, retries, a dead-letter queue).
//! - **The cursor lives in process memory, as in the book.** A receiver that restarts
//!   starts again from where it is built; to resume, save [`cursor()`](MessageQueue::cursor)
//!   and give it back to [`rewind_to`](MessageQueue::rewind_to).
//! - **A [`MessageQueue`] keeps every message, as in the book** (no `MAXLEN`): trim the
//!   stream yourself (`XTRIM`) if it grows without end. A [`Chat`] trims its history as
//!   it sends (below); the book's keeps every comment forever.
//! - **"From now on" misses nothing.** The book's `"$"` cursor is sent as is until a read
//!   returns something; with a receive that does not wait, every message sent between two
//!   such receives is skipped. Here `"$"` is resolved to an id once, on the first receive
//!   (see [`XreadIterator::from_now`]), and every later receive goes on from the last id
//!   read.
//! - **Waiting forever works on any connection.** The book's `BLOCK_FOREVER` sends `BLOCK
//!   0`, which fails on a connection with a response timeout (every redis-rs async
//!   connection has one: 500 ms by default). [`Block::Forever`] sends bounded blocks
//!   instead, and [`Chat::receive`] uses it.
//! - **Messages are binary-safe.** [`send`](MessageQueue::send) takes field/value pairs of
//!   anything redis-rs sends as one argument (`&str`, `&[u8]`, `Vec<u8>`, numbers), and
//!   messages come back as bytes ([`StreamEntry::get`], [`get_str`](StreamEntry::get_str),
//!   [`get_as`](StreamEntry::get_as)). A message without fields is refused with
//!   [`Error::InvalidInput`] before any I/O (the book sends `XADD key *`, which Redis
//!   refuses).
//! - **Ids are typed.** [`get`](MessageQueue::get) takes an [`EntryId`], as `send` and
//!   `receive` return them; parse a saved one with `"1700000000000-0".parse::<EntryId>()`,
//!   which refuses anything that is not an id with [`Error::InvalidInput`]. It answers
//!   the whole entry (id and fields) where the book answers the fields alone.
//!
//! # Live comments
//!
//! A [`Chat`] keeps the comments of one broadcaster's room in the stream `Chat:<broadcaster>`.
//! Each comment has the viewer's `uid`, its `content` and, for a paid comment (a "super
//! chat"), a `donate` amount. A viewer's first [`receive`](Chat::receive) (or
//! [`join`](Chat::join)) marks "now": comments sent before it are never seen, and every
//! comment sent after it is seen once, in order, by every viewer.
//!
//! Each [`send`](Chat::send) trims the room's history with `MAXLEN ~ history` (10,000 by
//! default, [`with_history`](Chat::with_history) for another): Redis then drops the
//! oldest comments in whole nodes of the stream's radix tree (`stream-node-max-entries`,
//! 100 entries by default) and only when a whole node can go, which is what makes it
//! cheap. So the stream holds at least `history` comments once that many were sent, and
//! a few more: usually less than one node's worth. A viewer that falls more than `history`
//! comments behind misses the trimmed ones, and goes on from the oldest comment left.
//!
//! ```no_run
//! # fn demo() -> redis_patterns::Result<()> {
//! use redis_patterns::message_queue::Chat;
//!
//! let client = redis::Client::open("redis://127.0.0.1/")?;
//!
//! // A viewer joins, then prints the comments as they come, on a connection of its own.
//! let mut viewer = Chat::new("peter")?;
//! let mut con = client.get_connection()?;
//! viewer.join(&mut con)?;
//! std::thread::spawn(move || viewer.show(&mut con, std::io::stdout()));
//!
//! // Viewers comment.
//! let room = Chat::new("peter")?;
//! let mut con = client.get_connection()?;
//! room.send("tom", "hello!", 0).run(&mut con)?;
//! room.send("jack", "great show", 50).run(&mut con)?; // a super chat
//! # Ok(()) }
//! ```

use std::convert::Infallible;
use std::fmt;
use std::io::Write;

use redis::{ToRedisArgs, Value};

use crate::runtime::error::{Error, Result};
use crate::runtime::input;
use crate::runtime::op::Op;
use crate::runtime::show::Bytes;
use crate::stream_iterator::{Block, EntryId, StreamEntry, XreadIterator, entries};

/// How many messages a receive returns at most, by the book's default.
pub const DEFAULT_COUNT: usize = 10;

/// How many comments a [`Chat`] keeps, at least, unless built
/// [`with_history`](Chat::with_history).
pub const DEFAULT_HISTORY: u64 = 10_000;

/// A message queue in one stream: `XADD` in, `XREAD` out from a cursor of its own.
///
/// Each `MessageQueue` value is one receiver: its cursor is the last id it read, held
/// in process memory. Build one per receiver; every receiver reads every message.
///
/// ```no_run
/// # fn demo() -> redis_patterns::Result<()> {
/// use std::time::Duration;
/// use redis_patterns::message_queue::MessageQueue;
///
/// let mut con = redis::Client::open("redis://127.0.0.1/")?.get_connection()?;
/// let mut inbox = MessageQueue::new("mail:alice")?;
/// inbox.send(&[("from", "bob"), ("subject", "lunch?")]).run(&mut con)?;
/// inbox.send(&[("from", "carol"), ("subject", "re: lunch")]).run(&mut con)?;
/// let first = inbox.receive(&mut con, 1, None)?; // bob's
/// let rest = inbox.receive(&mut con, 10, Some(Duration::from_millis(100)))?; // carol's
/// assert_eq!(rest[0].get_str("from"), Some("carol"));
/// assert!(inbox.receive(&mut con, 10, None)?.is_empty());
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MessageQueue {
    key: String,
    reader: XreadIterator,
}

impl MessageQueue {
    /// The queue stored at `key`, received from its first message (cursor `0-0`).
    ///
    /// An empty key is [`Error::InvalidInput`].
    pub fn new(key: impl Into<String>) -> Result<Self> {
        let key = key.into();
        input::key("key", &key)?;
        Ok(MessageQueue {
            reader: XreadIterator::new(key.clone()),
            key,
        })
    }

    /// The queue stored at `key`, received from its first receive on: messages sent
    /// before it are never received (the book's cursor `"$"`, resolved once, see
    /// [`XreadIterator::from_now`]).
    ///
    /// An empty key is [`Error::InvalidInput`].
    ///
    /// ```no_run
    /// # fn demo() -> redis_patterns::Result<()> {
    /// use redis_patterns::message_queue::MessageQueue;
    ///
    /// let mut con = redis::Client::open("redis://127.0.0.1/")?.get_connection()?;
    /// let mut feed = MessageQueue::from_now("prices")?;
    /// assert!(feed.receive(&mut con, 10, None)?.is_empty()); // "now" is resolved here
    /// feed.send(&[("EURUSD", "1.0842")]).run(&mut con)?;
    /// assert_eq!(feed.receive(&mut con, 10, None)?.len(), 1);
    /// # Ok(()) }
    /// ```
    pub fn from_now(key: impl Into<String>) -> Result<Self> {
        let key = key.into();
        input::key("key", &key)?;
        Ok(MessageQueue {
            reader: XreadIterator::from_now(key.clone()),
            key,
        })
    }

    /// The queue's key.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// The last id received (messages after it come next), or `None` for a queue built
    /// [`from_now`](Self::from_now) that has not received yet. Save it to resume with
    /// [`rewind_to`](Self::rewind_to) after a restart.
    pub fn cursor(&self) -> Option<EntryId> {
        self.reader.cursor()
    }

    /// Receives the messages after `cursor` next: an id `ms-seq` or `ms`. Anything else
    /// (`$` included: use [`rewind_to_now`](Self::rewind_to_now)) is
    /// [`Error::InvalidInput`] naming `cursor`, and the cursor does not move.
    pub fn rewind_to(&mut self, cursor: &str) -> Result<()> {
        self.reader.rewind_to(cursor)
    }

    /// Receives only the messages sent after the next receive starts, as a queue built
    /// [`from_now`](Self::from_now) does.
    pub fn rewind_to_now(&mut self) {
        self.reader.rewind_to_now();
    }

    /// Appends a message of `fields` (field/value pairs, in order) and returns its id
    /// (`XADD key * field value …`). At least one pair; each field and each value is one
    /// argument: `&str`, `String`, `&[u8]`, `Vec<u8>`, a number.
    ///
    /// ```no_run
    /// # fn demo() -> redis_patterns::Result<()> {
    /// use redis_patterns::message_queue::MessageQueue;
    ///
    /// let mut con = redis::Client::open("redis://127.0.0.1/")?.get_connection()?;
    /// let q = MessageQueue::new("uploads")?;
    /// let png: &[u8] = b"\x89PNG\r\n";
    /// let id = q.send(&[(&b"name"[..], &b"logo.png"[..]), (b"data", png)]).run(&mut con)?;
    /// let msg = q.get(id).run(&mut con)?.expect("just sent");
    /// assert_eq!(msg.get("data"), Some(png));
    /// # Ok(()) }
    /// ```
    pub fn send<F: ToRedisArgs, V: ToRedisArgs>(&self, fields: &[(F, V)]) -> Op<EntryId> {
        Op::try_build(|| {
            let mut cmd = redis::cmd("XADD");
            cmd.arg(&self.key).arg("*");
            add_fields(&mut cmd, fields)?;
            Ok(added(cmd))
        })
    }

    /// Up to `count` messages after the cursor (`XREAD [BLOCK ms] COUNT count STREAMS key
    /// cursor`), waiting for one as `block` says: `None` ([`Block::No`]) not at all,
    /// `Some(d)` up to `d`, [`Block::Forever`] until one arrives. Empty when nothing came.
    /// [`XreadIterator::next`] tells the rest, and the
    /// [`stream_iterator` docs](crate::stream_iterator#blocking-reads-and-response-timeouts)
    /// what connection a long block needs.
    pub fn receive(
        &mut self,
        con: &mut dyn redis::ConnectionLike,
        count: usize,
        block: impl Into<Block>,
    ) -> Result<Vec<StreamEntry>> {
        self.reader.next(con, count, block)
    }

    /// [`receive`](Self::receive) on an async connection.
    ///
    /// ```no_run
    /// # async fn demo() -> redis_patterns::Result<()> {
    /// use redis_patterns::message_queue::{DEFAULT_COUNT, MessageQueue};
    /// use redis_patterns::stream_iterator::Block;
    ///
    /// let client = redis::Client::open("redis://127.0.0.1/")?;
    /// // Block::Forever works with the default 500 ms response timeout.
    /// let mut con = client.get_multiplexed_async_connection().await?;
    /// let mut events = MessageQueue::from_now("events")?;
    /// loop {
    ///     for event in events.receive_async(&mut con, DEFAULT_COUNT, Block::Forever).await? {
    ///         println!("{event:?}");
    ///     }
    /// }
    /// # }
    /// ```
    #[cfg(feature = "aio")]
    pub async fn receive_async<C>(
        &mut self,
        con: &mut C,
        count: usize,
        block: impl Into<Block>,
    ) -> Result<Vec<StreamEntry>>
    where
        C: redis::aio::ConnectionLike,
    {
        self.reader.next_async(con, count, block).await
    }

    /// The message with id `id` (`XRANGE key id id`), or `None` when there is none (never
    /// sent, deleted, trimmed). Reads it without moving the cursor.
    pub fn get(&self, id: EntryId) -> Op<Option<StreamEntry>> {
        let mut cmd = redis::cmd("XRANGE");
        cmd.arg(&self.key).arg(id.to_string()).arg(id.to_string());
        Op::<Value>::native(cmd).map(|reply| Ok(entries(reply)?.into_iter().next()))
    }

    /// How many messages the stream holds (`XLEN`); 0 when it is missing.
    pub fn length(&self) -> Op<u64> {
        let mut cmd = redis::cmd("XLEN");
        cmd.arg(&self.key);
        Op::native(cmd)
    }
}

/// One broadcaster's live comments: a stream `Chat:<broadcaster>`, trimmed to about
/// `history` comments, read from "now" on.
///
/// Each `Chat` value is one viewer (its cursor is in process memory); any `Chat` of the
/// same broadcaster can send. See the [module docs](self#live-comments).
///
/// ```no_run
/// # fn demo() -> redis_patterns::Result<()> {
/// use redis_patterns::message_queue::Chat;
///
/// let mut con = redis::Client::open("redis://127.0.0.1/")?.get_connection()?;
/// let mut chat = Chat::new("peter")?;
/// chat.join(&mut con)?; // from now on
/// chat.send("tom", "hi peter", 0).run(&mut con)?;
/// chat.send("jack", "for the cat", 100).run(&mut con)?;
/// let comments = chat.receive(&mut con, 10)?; // waits until there is one
/// assert_eq!(comments[0].uid_str(), Some("tom"));
/// assert_eq!(comments[1].donate, 100);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Chat {
    broadcaster: String,
    key: String,
    history: u64,
    reader: XreadIterator,
}

impl Chat {
    /// The room of `broadcaster`, at key `Chat:<broadcaster>`, keeping about
    /// [`DEFAULT_HISTORY`] comments.
    ///
    /// An empty broadcaster is [`Error::InvalidInput`].
    pub fn new(broadcaster: impl Into<String>) -> Result<Self> {
        let broadcaster = broadcaster.into();
        input::key("broadcaster", &broadcaster)?;
        let key = format!("Chat:{broadcaster}");
        Ok(Chat {
            reader: XreadIterator::from_now(key.clone()),
            broadcaster,
            key,
            history: DEFAULT_HISTORY,
        })
    }

    /// The same room, whose [`send`](Self::send) trims the history to about `history`
    /// comments (`MAXLEN ~ history`; see the [module docs](self#live-comments) for what
    /// "about" means). From 1 to 2^63-1; anything else is [`Error::InvalidInput`].
    ///
    /// ```
    /// use redis_patterns::message_queue::Chat;
    ///
    /// let chat = Chat::new("peter")?.with_history(500)?;
    /// assert_eq!(chat.history(), 500);
    /// assert!(Chat::new("peter")?.with_history(0).is_err());
    /// # Ok::<(), redis_patterns::Error>(())
    /// ```
    pub fn with_history(self, history: u64) -> Result<Self> {
        // MAXLEN takes a signed 64-bit count; 0 would empty the room on every send.
        if !(1..=i64::MAX as u64).contains(&history) {
            return Err(Error::invalid(
                "history",
                format!("must be from 1 to {} comments, got {history}", i64::MAX),
            ));
        }
        Ok(Chat { history, ..self })
    }

    /// The broadcaster whose room this is.
    pub fn broadcaster(&self) -> &str {
        &self.broadcaster
    }

    /// The room's key, `Chat:<broadcaster>`.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// About how many comments the room keeps.
    pub fn history(&self) -> u64 {
        self.history
    }

    /// The last comment id this viewer received, or `None` before it joined (its first
    /// [`receive`](Self::receive) or [`join`](Self::join)).
    pub fn cursor(&self) -> Option<EntryId> {
        self.reader.cursor()
    }

    /// Sends a comment by `uid` and returns its id: `XADD Chat:<broadcaster> MAXLEN ~
    /// history * uid <uid> content <content> [donate <donate>]`. The `donate` field is
    /// sent only when `donate` is not 0, as in the book. `uid` and `content` are one
    /// argument each (`&str`, `&[u8]`, a number), stored as sent.
    pub fn send(
        &self,
        uid: impl ToRedisArgs,
        content: impl ToRedisArgs,
        donate: u64,
    ) -> Op<EntryId> {
        Op::try_build(|| {
            let mut cmd = redis::cmd("XADD");
            cmd.arg(&self.key)
                .arg("MAXLEN")
                .arg("~")
                .arg(self.history)
                .arg("*")
                .arg("uid")
                .arg(input::value("uid", &uid)?)
                .arg("content")
                .arg(input::value("content", &content)?);
            if donate != 0 {
                cmd.arg("donate").arg(donate);
            }
            Ok(added(cmd))
        })
    }

    /// Marks "now" for this viewer, if its first receive has not: comments sent from now
    /// on are received, however late the first [`receive`](Self::receive) comes. Returns
    /// the cursor. One `XREVRANGE`; nothing is sent once the viewer has joined.
    pub fn join(&mut self, con: &mut dyn redis::ConnectionLike) -> Result<EntryId> {
        self.reader.resolve(con)
    }

    /// [`join`](Self::join) on an async connection.
    #[cfg(feature = "aio")]
    pub async fn join_async<C>(&mut self, con: &mut C) -> Result<EntryId>
    where
        C: redis::aio::ConnectionLike,
    {
        self.reader.resolve_async(con).await
    }

    /// The next comments, up to `count`, waiting as long as it takes for one. The first
    /// call joins the room (unless [`join`](Self::join) did): comments sent before it are
    /// never received. After that, every comment is received once, in order.
    ///
    /// The wait is `XREAD BLOCK 250` sent again and again
    /// ([`Block::Forever`]), so any connection whose response timeout is over 250 ms
    /// works, the async defaults included; give a viewer a connection of its own, since a
    /// blocked command holds up the commands behind it.
    pub fn receive(
        &mut self,
        con: &mut dyn redis::ConnectionLike,
        count: usize,
    ) -> Result<Vec<Comment>> {
        let batch = self.reader.next(con, count, Block::Forever)?;
        Ok(batch.iter().map(Comment::from_entry).collect())
    }

    /// [`receive`](Self::receive) on an async connection.
    ///
    /// ```no_run
    /// # async fn demo() -> redis_patterns::Result<()> {
    /// use redis_patterns::message_queue::Chat;
    ///
    /// let client = redis::Client::open("redis://127.0.0.1/")?;
    /// let mut con = client.get_multiplexed_async_connection().await?;
    /// let mut chat = Chat::new("peter")?;
    /// loop {
    ///     for comment in chat.receive_async(&mut con, 10).await? {
    ///         println!("{comment}");
    ///     }
    /// }
    /// # }
    /// ```
    #[cfg(feature = "aio")]
    pub async fn receive_async<C>(&mut self, con: &mut C, count: usize) -> Result<Vec<Comment>>
    where
        C: redis::aio::ConnectionLike,
    {
        let batch = self.reader.next_async(con, count, Block::Forever).await?;
        Ok(batch.iter().map(Comment::from_entry).collect())
    }

    /// Writes every comment to `out` as it comes, one line each (as [`Comment`]'s
    /// `Display` writes it), [`DEFAULT_COUNT`] per receive, flushing after each batch.
    ///
    /// Never returns but with an error: Redis's, or a failed write to `out` (an
    /// [`Error::Redis`] of kind `redis::ErrorKind::Io` holding the `io::Error`). To tell
    /// the two apart, or to stop on a signal, loop over [`receive`](Self::receive)
    /// yourself.
    ///
    /// ```no_run
    /// # fn demo() -> redis_patterns::Result<()> {
    /// use redis_patterns::message_queue::Chat;
    ///
    /// let mut con = redis::Client::open("redis://127.0.0.1/")?.get_connection()?;
    /// let err = Chat::new("peter")?.show(&mut con, std::io::stdout().lock());
    /// eprintln!("stopped: {err:?}");
    /// # Ok(()) }
    /// ```
    pub fn show(
        &mut self,
        con: &mut dyn redis::ConnectionLike,
        mut out: impl Write,
    ) -> Result<Infallible> {
        let failed = |err: std::io::Error| Error::Redis(err.into());
        loop {
            for comment in self.receive(con, DEFAULT_COUNT)? {
                writeln!(out, "{comment}").map_err(failed)?;
            }
            out.flush().map_err(failed)?;
        }
    }
}

/// One live comment, as [`Chat::receive`] returns it.
///
/// `uid` and `content` are the bytes that were sent; [`uid_str`](Self::uid_str) and
/// [`content_str`](Self::content_str) read them as text. Its `Display` is the line
/// [`Chat::show`] writes: `uid: content`, or `uid [donate N]: content`, with bytes that
/// are not UTF-8 shown as `\u{FFFD}`.
///
/// ```
/// use redis_patterns::message_queue::Comment;
/// use redis_patterns::stream_iterator::{EntryId, StreamEntry};
///
/// let entry = StreamEntry {
///     id: EntryId::new(1, 0),
///     fields: vec![
///         (b"uid".to_vec(), b"jack".to_vec()),
///         (b"content".to_vec(), b"nice".to_vec()),
///         (b"donate".to_vec(), b"50".to_vec()),
///     ],
/// };
/// let comment = Comment::from_entry(&entry);
/// assert_eq!(comment.uid_str(), Some("jack"));
/// assert_eq!(comment.donate, 50);
/// assert_eq!(comment.to_string(), "jack [donate 50]: nice");
/// assert_eq!(
///     format!("{comment:?}"),
///     r#"Comment { id: 1-0, uid: "jack", content: "nice", donate: 50 }"#
/// );
/// ```
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct Comment {
    /// The comment's id in the stream.
    pub id: EntryId,
    /// Who sent it, as sent.
    pub uid: Vec<u8>,
    /// What it says, as sent.
    pub content: Vec<u8>,
    /// What the viewer paid with it; 0 for a plain comment.
    pub donate: u64,
}

impl Comment {
    /// Reads a comment from a stream entry of a chat's stream.
    ///
    /// An entry that [`Chat::send`] did not write (one added with `XADD` by another
    /// program) decodes too, so that one odd entry never stops a viewer: `uid` and
    /// `content` are the values of the first fields of those names, empty when there is
    /// none; `donate` is the value of the `donate` field as a decimal `u64`, 0 when
    /// there is none or it is not such a number; other fields are ignored. Read such
    /// entries whole with a [`MessageQueue`] on [`Chat::key`].
    ///
    /// ```
    /// use redis_patterns::message_queue::Comment;
    /// use redis_patterns::stream_iterator::{EntryId, StreamEntry};
    ///
    /// let odd = StreamEntry {
    ///     id: EntryId::new(2, 0),
    ///     fields: vec![(b"text".to_vec(), b"hi".to_vec()), (b"donate".to_vec(), b"lots".to_vec())],
    /// };
    /// let comment = Comment::from_entry(&odd);
    /// assert_eq!((comment.uid_str(), comment.content_str(), comment.donate), (Some(""), Some(""), 0));
    /// ```
    pub fn from_entry(entry: &StreamEntry) -> Comment {
        let field = |name: &str| entry.get(name).unwrap_or_default().to_vec();
        Comment {
            id: entry.id,
            uid: field("uid"),
            content: field("content"),
            donate: entry
                .get_str("donate")
                .and_then(|donate| donate.parse().ok())
                .unwrap_or(0),
        }
    }

    /// The sender as text, or `None` when it is not UTF-8.
    pub fn uid_str(&self) -> Option<&str> {
        std::str::from_utf8(&self.uid).ok()
    }

    /// The content as text, or `None` when it is not UTF-8.
    pub fn content_str(&self) -> Option<&str> {
        std::str::from_utf8(&self.content).ok()
    }
}

impl fmt::Display for Comment {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let uid = String::from_utf8_lossy(&self.uid);
        let content = String::from_utf8_lossy(&self.content);
        match self.donate {
            0 => write!(f, "{uid}: {content}"),
            donate => write!(f, "{uid} [donate {donate}]: {content}"),
        }
    }
}

/// Writes `uid` and `content` as string literals, or byte string literals when they are
/// not UTF-8.
impl fmt::Debug for Comment {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Comment")
            .field("id", &format_args!("{}", self.id))
            .field("uid", &Bytes(&self.uid))
            .field("content", &Bytes(&self.content))
            .field("donate", &self.donate)
            .finish()
    }
}

/// Appends `field value …` to an XADD: at least one pair, each field and value one
/// argument.
fn add_fields<F: ToRedisArgs, V: ToRedisArgs>(
    cmd: &mut redis::Cmd,
    fields: &[(F, V)],
) -> Result<()> {
    if fields.is_empty() {
        return Err(Error::invalid(
            "fields",
            "must hold at least one field/value pair, as in &[(\"text\", \"hello\")]",
        ));
    }
    for (field, value) in fields {
        cmd.arg(input::value("fields", field)?)
            .arg(input::value("fields", value)?);
    }
    Ok(())
}

/// An XADD, answering the new entry's id.
fn added(cmd: redis::Cmd) -> Op<EntryId> {
    Op::<String>::native(cmd).map(|id| {
        id.parse().map_err(|_| {
            Error::unexpected_reply("XADD reply", format!("expected an entry id, got {id:?}"))
        })
    })
}
