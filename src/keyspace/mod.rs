//! Walking the keyspace: 《Redis 应用实例》 chapter 12 (`DbIterator`, `DbSampler`,
//! `random_key_generator`).
//!
//! ```no_run
//! # fn demo() -> redis_patterns::Result<()> {
//! use redis_patterns::keyspace::{DbIterator, DbSampler, KeyName, KeyType, RandomKeyGenerator};
//!
//! let mut con = redis::Client::open("redis://127.0.0.1/")?.get_connection()?;
//! RandomKeyGenerator::new("bench", 42).generate(&mut con, 1000)?;
//!
//! // The book's way: a batch per call.
//! let mut it = DbIterator::new(100).matching("bench:*");
//! while let Some(batch) = it.next(&mut con)? {
//!     println!("{} keys", batch.len());
//! }
//!
//! // A Rust iterator over the keys.
//! let hashes: Vec<KeyName> = DbIterator::new(100)
//!     .of_type(KeyType::Hash)
//!     .keys(&mut con)
//!     .collect::<Result<_, _>>()?;
//! for key in &hashes {
//!     let fields: usize = redis::cmd("HLEN").arg(key).query(&mut con)?; // the same key
//!     println!("{key}: {fields} fields"); // printed as text
//! }
//!
//! // The share of each type.
//! let mut sampler = DbSampler::new(100);
//! while sampler.sample(&mut con)?.is_some() {}
//! println!("{}", sampler.stats());
//! # Ok(()) }
//! ```
//!
//! [`DbIterator`] walks the keys of one server with `SCAN`, a batch per call, as the book's
//! does; [`DbIterator::keys`] and `DbIterator::key_stream` (feature `aio`) turn it into a
//! Rust [`Iterator`] and a `futures_core::Stream` of keys. [`DbSampler`] asks the `TYPE` of
//! each batch of keys in one pipeline and keeps a [`SampleStats`] of the types seen.
//! [`RandomKeyGenerator`] fills a database with keys of every type for tests and
//! benchmarks.
//!
//! # Key names are bytes
//!
//! A Redis key name is any byte string, and a walk returns whatever is there, so every key
//! comes back as a [`KeyName`]: the name's exact bytes, which never fail to decode. It
//! prints as text (`Display` replaces bytes that are not UTF-8 with `�`; `Debug` writes
//! `"user:1"`, or `b"bin:\xff"` for a name that is not UTF-8), compares with a `&str`,
//! gives the text back with [`to_str`](KeyName::to_str) when it is UTF-8, and goes back to
//! Redis unchanged: it is a redis-rs `ToRedisArgs` (and `FromRedisValue`), so
//! `con.del(&key)` or `cmd("TYPE").arg(&key)` reach that very key. A `String` would fail on
//! a binary name (as the book's `decode_responses=True` client does), a lossy `String`
//! would name another key, and a bare `Vec<u8>` prints as a list of numbers.
//!
//! An iteration is inherently several round trips: one `SCAN` per batch (and, for the
//! sampler, one pipeline of `TYPE`s per batch). Nothing here is a script: `SCAN` must not
//! run inside one, and each step is a single command.
//!
//! # What SCAN guarantees
//!
//! A full iteration (from a fresh or [rewound](DbIterator::rewind) iterator until
//! [`next`](DbIterator::next) returns `None`) returns every key that exists for the whole
//! iteration. It may return a key more than once (when the server rehashes between calls),
//! may or may not return keys added or deleted during it, and a batch may be empty while the
//! iteration goes on (most often with a `MATCH` pattern or a type filter, which the server
//! applies after picking a batch). Deduplicate when it matters.
//!
//! # Redis Cluster
//!
//! `SCAN` walks one node. A [`DbIterator`] takes the connection of **one node**: on a
//! cluster, list the masters with [`cluster_masters`] and walk each with its own connection
//! (see the example there). Do not pass a cluster connection: redis-rs sends `SCAN` to
//! a random node on each call, so the cursor would reach nodes it does not belong to. Keys
//! that move between nodes during the walk (resharding) may be missed or seen twice.
//!
//! # The book's methods
//!
//! | Book | Here |
//! |---|---|
//! | `DbIterator(client, count)` | [`DbIterator::new(count)`](DbIterator::new), plus [`matching`](DbIterator::matching) and [`of_type`](DbIterator::of_type) (`SCAN … MATCH … TYPE …`) |
//! | `next()`: a batch, `None` when done | [`next(con)`](DbIterator::next) / `next_async`: `Some(Vec<KeyName>)`, then `None` forever |
//! | `rewind()` | [`rewind()`](DbIterator::rewind) |
//! | (a Python loop over `next()`) | [`keys(con)`](DbIterator::keys): `Iterator<Item = Result<KeyName>>`; `key_stream(con)`: the same as a `Stream` |
//! | `DbSampler(client, count)`, `sample()` | [`DbSampler::new(count)`](DbSampler::new), [`sample(con)`](DbSampler::sample): keys sampled in this batch, `None` when done |
//! | `show_stats()` prints | [`stats()`](DbSampler::stats) returns a [`SampleStats`]; its `Display` prints what the book printed |
//! | `random_key_generator(client, count)` | [`RandomKeyGenerator::new(prefix, seed)`](RandomKeyGenerator::new), [`generate(con, count)`](RandomKeyGenerator::generate) |
//!
//! What differs from the book, and why:
//!
//! - The sampler sends each batch's `TYPE`s as a plain pipeline, not `MULTI`/`EXEC`: the
//!   sample is not atomic anyway (keys change between `SCAN` and `TYPE`), and a pipeline
//!   costs the same round trip. A key deleted in between is counted as
//!   [`KeyType::Missing`] (`none`), as in the book.
//! - The book's generator names keys `Key:<10 random digits>`: two draws of the same
//!   digits give one key two types (`WRONGTYPE`) or fewer keys than asked. Here the `n`-th
//!   key is `<prefix>:<n>` (zero-padded), its type is drawn from a generator seeded by the
//!   caller, and each key is deleted before it is written: the same prefix and seed give
//!   the same keyspace, every time, and nothing outside the prefix is touched. Writes are
//!   pipelined (the book sends one command per round trip).
//! - Key names are bytes ([`KeyName`]): a key whose name is not UTF-8 is returned, typed
//!   and sampled like any other, where the book's `decode_responses=True` client fails on
//!   it. A [`matching`](DbIterator::matching) pattern may be bytes too. The generator's
//!   own names are text, so it returns `String`s.
//! - The async forms (`next_async`, `key_stream`, `sample_async`, `generate_async`) need
//!   the `aio` feature (which `tokio` and `smol` turn on).

use std::borrow::{Borrow, Cow};
use std::collections::BTreeMap;
use std::fmt;

use redis::{FromRedisValue, ParsingError, RedisWrite, ToRedisArgs, ToSingleRedisArg, Value};

use crate::runtime::batch::Batch;
use crate::runtime::error::{Error, Result};
use crate::runtime::input;
use crate::runtime::op::Op;
use crate::runtime::show::Bytes;

mod cluster;
pub use cluster::{ClusterNode, cluster_masters};

/// The type of a key, as `TYPE` names it.
///
/// ```
/// use redis_patterns::keyspace::KeyType;
///
/// assert_eq!(KeyType::from_name("zset"), KeyType::ZSet);
/// assert_eq!(KeyType::ZSet.as_str(), "zset");
/// assert_eq!(KeyType::from_name("ReJSON-RL"), KeyType::Other("ReJSON-RL".into()));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum KeyType {
    /// `string`
    String,
    /// `hash`
    Hash,
    /// `list`
    List,
    /// `set`
    Set,
    /// `zset`
    ZSet,
    /// `stream`
    Stream,
    /// `none`: the key does not exist (it was deleted after `SCAN` returned it).
    Missing,
    /// Any other type: a module's (`ReJSON-RL`), or one added by a later Redis.
    Other(String),
}

impl KeyType {
    /// The six types of core Redis that [`RandomKeyGenerator`] creates, in its order.
    pub const CORE: [KeyType; 6] = [
        KeyType::String,
        KeyType::Hash,
        KeyType::List,
        KeyType::Set,
        KeyType::ZSet,
        KeyType::Stream,
    ];

    /// The type `TYPE` names `name`.
    pub fn from_name(name: &str) -> Self {
        match name {
            "string" => KeyType::String,
            "hash" => KeyType::Hash,
            "list" => KeyType::List,
            "set" => KeyType::Set,
            "zset" => KeyType::ZSet,
            "stream" => KeyType::Stream,
            "none" => KeyType::Missing,
            other => KeyType::Other(other.to_owned()),
        }
    }

    /// The name `TYPE` gives it (and `SCAN … TYPE` takes).
    pub fn as_str(&self) -> &str {
        match self {
            KeyType::String => "string",
            KeyType::Hash => "hash",
            KeyType::List => "list",
            KeyType::Set => "set",
            KeyType::ZSet => "zset",
            KeyType::Stream => "stream",
            KeyType::Missing => "none",
            KeyType::Other(name) => name,
        }
    }
}

impl fmt::Display for KeyType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A key's name as Redis stores it: any bytes (see [Key names are bytes](self#key-names-are-bytes)).
///
/// It never fails to decode, prints as text, compares with a `&str`, and goes back to
/// Redis as the same bytes (it is a `ToRedisArgs`, and a `FromRedisValue` for your own
/// commands).
///
/// ```
/// use redis_patterns::keyspace::KeyName;
///
/// let text = KeyName::from("user:1");
/// assert_eq!(text, "user:1");
/// assert_eq!(text.to_str(), Some("user:1"));
/// assert_eq!(format!("{text} {text:?}"), r#"user:1 "user:1""#);
///
/// let binary = KeyName::new(b"bin:\xff\xfe".to_vec());
/// assert_eq!(binary.as_bytes(), b"bin:\xff\xfe");
/// assert_eq!(binary.to_str(), None);
/// assert_eq!(binary.to_string(), "bin:\u{fffd}\u{fffd}"); // Display is lossy
/// assert_eq!(format!("{binary:?}"), r#"b"bin:\xff\xfe""#); // Debug is exact
///
/// // Sent as its bytes, one argument.
/// use redis::ToRedisArgs;
/// assert_eq!(binary.to_redis_args(), vec![b"bin:\xff\xfe".to_vec()]);
/// ```
#[derive(Clone, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct KeyName(Vec<u8>);

impl KeyName {
    /// The key named `bytes`.
    pub fn new(bytes: impl Into<Vec<u8>>) -> Self {
        KeyName(bytes.into())
    }

    /// The name's bytes.
    pub fn as_bytes(&self) -> &[u8] {
        &self.0
    }

    /// The name's bytes, owned.
    pub fn into_bytes(self) -> Vec<u8> {
        self.0
    }

    /// The name as text, or `None` when it is not UTF-8.
    pub fn to_str(&self) -> Option<&str> {
        std::str::from_utf8(&self.0).ok()
    }

    /// The name as text, each byte sequence that is not UTF-8 replaced with `�` (for
    /// display only: the result may name another key).
    pub fn to_string_lossy(&self) -> Cow<'_, str> {
        String::from_utf8_lossy(&self.0)
    }
}

/// Lossy, as [`to_string_lossy`](KeyName::to_string_lossy).
impl fmt::Display for KeyName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_string_lossy())
    }
}

/// Exact: `"text"` when the name is UTF-8, else `b"…"` with the other bytes escaped.
impl fmt::Debug for KeyName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&Bytes(&self.0), f)
    }
}

impl From<Vec<u8>> for KeyName {
    fn from(bytes: Vec<u8>) -> Self {
        KeyName(bytes)
    }
}

impl From<&[u8]> for KeyName {
    fn from(bytes: &[u8]) -> Self {
        KeyName(bytes.to_vec())
    }
}

impl From<String> for KeyName {
    fn from(text: String) -> Self {
        KeyName(text.into_bytes())
    }
}

impl From<&str> for KeyName {
    fn from(text: &str) -> Self {
        KeyName(text.as_bytes().to_vec())
    }
}

impl From<KeyName> for Vec<u8> {
    fn from(key: KeyName) -> Self {
        key.0
    }
}

impl AsRef<[u8]> for KeyName {
    fn as_ref(&self) -> &[u8] {
        &self.0
    }
}

/// Hashes and orders as its bytes, so a `HashSet<KeyName>` can be asked about a `&[u8]`.
impl Borrow<[u8]> for KeyName {
    fn borrow(&self) -> &[u8] {
        &self.0
    }
}

impl PartialEq<str> for KeyName {
    fn eq(&self, other: &str) -> bool {
        self.0 == other.as_bytes()
    }
}

impl PartialEq<&str> for KeyName {
    fn eq(&self, other: &&str) -> bool {
        self.0 == other.as_bytes()
    }
}

impl ToRedisArgs for KeyName {
    fn write_redis_args<W>(&self, out: &mut W)
    where
        W: ?Sized + RedisWrite,
    {
        out.write_arg(&self.0);
    }
}

impl ToSingleRedisArg for KeyName {}

/// Any bulk string, as is; a simple string or a number as its text.
impl FromRedisValue for KeyName {
    fn from_redis_value(value: Value) -> std::result::Result<Self, ParsingError> {
        match value {
            Value::BulkString(bytes) => Ok(KeyName(bytes)),
            Value::Attribute { data, .. } => Self::from_redis_value(*data),
            other => String::from_redis_value(other).map(KeyName::from),
        }
    }
}

/// A `SCAN` walk over the keys of one server (or one cluster node), a batch per call.
///
/// The cursor lives in the iterator, as in the book. [`next`](Self::next) returns each
/// batch SCAN gives (possibly empty, possibly repeating keys), then `None` once the server
/// has returned cursor 0, and `None` again on every later call, without I/O, until
/// [`rewind`](Self::rewind). A failed call leaves the cursor where it was, so calling
/// again retries the same batch.
///
/// ```no_run
/// # fn demo() -> redis_patterns::Result<()> {
/// use redis_patterns::keyspace::DbIterator;
///
/// let mut con = redis::Client::open("redis://127.0.0.1/")?.get_connection()?;
///
/// let mut it = DbIterator::new(10).matching("user:*");
/// while let Some(batch) = it.next(&mut con)? {
///     for key in batch {
///         println!("{key}");
///     }
/// }
/// assert!(it.next(&mut con)?.is_none()); // done until rewound
/// it.rewind();
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DbIterator {
    count: usize,
    /// Bytes, as a key name: a pattern may be binary too.
    pattern: Option<KeyName>,
    key_type: Option<KeyType>,
    /// The next cursor to send; `None` once the walk is done.
    cursor: Option<u64>,
}

impl DbIterator {
    /// A walk that asks for about `count` keys per batch (`SCAN … COUNT count`; a hint the
    /// server may exceed). `count` must be at least 1, checked when a batch is asked for.
    pub fn new(count: usize) -> Self {
        DbIterator {
            count,
            pattern: None,
            key_type: None,
            cursor: Some(0),
        }
    }

    /// Only keys matching the glob-style `pattern` (`SCAN … MATCH pattern`): text, or
    /// bytes (`b"bin:\xff*"`) to match names that are not UTF-8. It must not be empty,
    /// checked when a batch is asked for.
    pub fn matching(mut self, pattern: impl AsRef<[u8]>) -> Self {
        self.pattern = Some(KeyName::from(pattern.as_ref()));
        self
    }

    /// Only keys of type `key_type` (`SCAN … TYPE type`).
    pub fn of_type(mut self, key_type: KeyType) -> Self {
        self.key_type = Some(key_type);
        self
    }

    /// The cursor the next call sends (0 at the start), or `None` once the walk is done.
    pub fn cursor(&self) -> Option<u64> {
        self.cursor
    }

    /// Whether the walk is done: the server has returned cursor 0.
    pub fn is_done(&self) -> bool {
        self.cursor.is_none()
    }

    /// Starts the walk again from the beginning (cursor 0).
    pub fn rewind(&mut self) {
        self.cursor = Some(0);
    }

    /// The next batch of keys (`SCAN cursor [MATCH p] COUNT n [TYPE t]`), or `None` once
    /// the walk is done.
    pub fn next(&mut self, con: &mut dyn redis::ConnectionLike) -> Result<Option<Vec<KeyName>>> {
        let Some(cursor) = self.cursor else {
            return Ok(None);
        };
        let (next, keys) = self.scan(cursor).run(con)?;
        Ok(Some(self.advance(next, keys)))
    }

    /// [`next`](Self::next) on an async connection.
    #[cfg(feature = "aio")]
    pub async fn next_async<C>(&mut self, con: &mut C) -> Result<Option<Vec<KeyName>>>
    where
        C: redis::aio::ConnectionLike,
    {
        let Some(cursor) = self.cursor else {
            return Ok(None);
        };
        let (next, keys) = self.scan(cursor).run_async(con).await?;
        Ok(Some(self.advance(next, keys)))
    }

    fn advance(&mut self, next: u64, keys: Vec<KeyName>) -> Vec<KeyName> {
        self.cursor = (next != 0).then_some(next);
        keys
    }

    fn scan(&self, cursor: u64) -> Op<(u64, Vec<KeyName>)> {
        Op::try_build(|| {
            let mut cmd = redis::cmd("SCAN");
            cmd.arg(cursor);
            if let Some(pattern) = &self.pattern {
                if pattern.as_bytes().is_empty() {
                    return Err(Error::invalid("pattern", "must not be empty"));
                }
                cmd.arg("MATCH").arg(pattern);
            }
            cmd.arg("COUNT").arg(input::count("count", self.count)?);
            if let Some(key_type) = &self.key_type {
                cmd.arg("TYPE").arg(scannable_type(key_type)?);
            }
            Ok(Op::native(cmd))
        })
    }

    /// The keys of the rest of the walk, one at a time, on a sync connection: a batch is
    /// fetched when the previous one is used up. After an error the iterator ends.
    pub fn keys(self, con: &mut dyn redis::ConnectionLike) -> Keys<'_> {
        Keys {
            walk: self,
            con,
            batch: Vec::new().into_iter(),
            failed: false,
        }
    }

    /// The keys of the rest of the walk as a [`futures_core::Stream`], on an async
    /// connection. After an error the stream ends.
    ///
    /// ```no_run
    /// # async fn demo() -> redis_patterns::Result<()> {
    /// use futures_util::TryStreamExt;
    /// use redis_patterns::keyspace::{DbIterator, KeyName, KeyType};
    ///
    /// let client = redis::Client::open("redis://127.0.0.1/")?;
    /// let mut con = client.get_multiplexed_async_connection().await?;
    /// let streams: Vec<KeyName> = DbIterator::new(100)
    ///     .of_type(KeyType::Stream)
    ///     .key_stream(&mut con)
    ///     .try_collect()
    ///     .await?;
    /// # Ok(()) }
    /// ```
    #[cfg(feature = "aio")]
    pub fn key_stream<C>(
        self,
        con: &mut C,
    ) -> impl futures_core::Stream<Item = Result<KeyName>> + '_
    where
        C: redis::aio::ConnectionLike,
    {
        let state = (self, con, Vec::new().into_iter(), false);
        futures_util::stream::unfold(state, |(mut walk, con, mut batch, failed)| async move {
            loop {
                if let Some(key) = batch.next() {
                    return Some((Ok(key), (walk, con, batch, failed)));
                }
                if failed {
                    return None;
                }
                match walk.next_async(con).await {
                    Ok(Some(keys)) => batch = keys.into_iter(),
                    Ok(None) => return None,
                    Err(err) => return Some((Err(err), (walk, con, batch, true))),
                }
            }
        })
    }
}

/// The keys of a [`DbIterator`] walk, one at a time ([`DbIterator::keys`]).
///
/// ```no_run
/// # fn demo() -> redis_patterns::Result<()> {
/// use redis_patterns::keyspace::DbIterator;
///
/// let mut con = redis::Client::open("redis://127.0.0.1/")?.get_connection()?;
/// for key in DbIterator::new(100).matching("session:*").keys(&mut con) {
///     println!("{}", key?);
/// }
/// # Ok(()) }
/// ```
pub struct Keys<'a> {
    walk: DbIterator,
    con: &'a mut dyn redis::ConnectionLike,
    batch: std::vec::IntoIter<KeyName>,
    failed: bool,
}

impl Keys<'_> {
    /// The walk, to [`rewind`](DbIterator::rewind) it or read its cursor.
    pub fn walk(&self) -> &DbIterator {
        &self.walk
    }
}

impl Iterator for Keys<'_> {
    type Item = Result<KeyName>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if let Some(key) = self.batch.next() {
                return Some(Ok(key));
            }
            if self.failed {
                return None;
            }
            match self.walk.next(self.con) {
                Ok(Some(keys)) => self.batch = keys.into_iter(),
                Ok(None) => return None,
                Err(err) => {
                    self.failed = true;
                    return Some(Err(err));
                }
            }
        }
    }
}

impl fmt::Debug for Keys<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Keys")
            .field("walk", &self.walk)
            .field("buffered", &self.batch.len())
            .finish_non_exhaustive()
    }
}

fn scannable_type(key_type: &KeyType) -> Result<&str> {
    match key_type {
        KeyType::Missing => Err(Error::invalid(
            "key_type",
            "`none` is not a type SCAN can filter by; use a type such as KeyType::Hash",
        )),
        KeyType::Other(name) if name.is_empty() || name.contains(char::is_whitespace) => {
            Err(Error::invalid(
                "key_type",
                format!("must be a type name as TYPE returns it, got {name:?}"),
            ))
        }
        other => Ok(other.as_str()),
    }
}

/// How many keys of each type a [`DbSampler`] has seen.
///
/// Its `Display` prints what the book's `show_stats()` printed: one line per type with its
/// count and share, in [`KeyType`] order.
///
/// ```
/// use redis_patterns::keyspace::{KeyType, SampleStats};
///
/// let mut stats = SampleStats::default();
/// stats.record(KeyType::Hash);
/// stats.record(KeyType::Hash);
/// stats.record(KeyType::List);
/// assert_eq!(stats.total(), 3);
/// assert_eq!(stats.count(&KeyType::Hash), 2);
/// assert!((stats.share(&KeyType::List) - 1.0 / 3.0).abs() < 1e-9);
/// assert_eq!(stats.to_string(), "hash: 2 (66.67%)\nlist: 1 (33.33%)\n");
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SampleStats {
    counts: BTreeMap<KeyType, u64>,
    total: u64,
}

impl SampleStats {
    /// Counts one more key of type `key_type`.
    pub fn record(&mut self, key_type: KeyType) {
        *self.counts.entry(key_type).or_default() += 1;
        self.total += 1;
    }

    /// How many keys were sampled.
    pub fn total(&self) -> u64 {
        self.total
    }

    /// How many sampled keys had type `key_type`.
    pub fn count(&self, key_type: &KeyType) -> u64 {
        self.counts.get(key_type).copied().unwrap_or(0)
    }

    /// The share of sampled keys that had type `key_type`, from 0.0 to 1.0 (0.0 when
    /// nothing was sampled).
    pub fn share(&self, key_type: &KeyType) -> f64 {
        if self.total == 0 {
            0.0
        } else {
            self.count(key_type) as f64 / self.total as f64
        }
    }

    /// Each type seen, with its count, in [`KeyType`] order.
    pub fn iter(&self) -> impl Iterator<Item = (&KeyType, u64)> {
        self.counts.iter().map(|(t, n)| (t, *n))
    }
}

impl fmt::Display for SampleStats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (key_type, n) in self.iter() {
            writeln!(f, "{key_type}: {n} ({:.2}%)", 100.0 * self.share(key_type))?;
        }
        Ok(())
    }
}

/// Samples the keyspace: each call walks one more [`DbIterator`] batch and asks the type
/// of its keys, all `TYPE`s in one pipeline.
///
/// ```no_run
/// # fn demo() -> redis_patterns::Result<()> {
/// use redis_patterns::keyspace::{DbIterator, DbSampler, KeyType};
///
/// let mut con = redis::Client::open("redis://127.0.0.1/")?.get_connection()?;
/// let mut sampler = DbSampler::new(100);
/// // Sample about 1000 keys, or all of them if there are fewer.
/// while sampler.stats().total() < 1000 && sampler.sample(&mut con)?.is_some() {}
/// println!("{:.1}% hashes", 100.0 * sampler.stats().share(&KeyType::Hash));
///
/// // Only some keys.
/// let sessions = DbSampler::from_iterator(DbIterator::new(100).matching("session:*"));
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DbSampler {
    walk: DbIterator,
    stats: SampleStats,
}

impl DbSampler {
    /// A sampler over the whole database, `count` keys per batch (as [`DbIterator::new`]).
    pub fn new(count: usize) -> Self {
        Self::from_iterator(DbIterator::new(count))
    }

    /// A sampler over the keys `walk` returns (with its pattern and type filter).
    pub fn from_iterator(walk: DbIterator) -> Self {
        DbSampler {
            walk,
            stats: SampleStats::default(),
        }
    }

    /// Samples one more batch: the number of keys sampled in it (possibly 0), or `None`
    /// once the walk is done. Two round trips: `SCAN`, then the pipeline of `TYPE`s
    /// (skipped for an empty batch). If the `TYPE`s fail, the error is returned and that
    /// batch is not counted; the walk has moved past it, so the next call samples the next
    /// batch.
    pub fn sample(&mut self, con: &mut dyn redis::ConnectionLike) -> Result<Option<usize>> {
        let Some(keys) = self.walk.next(con)? else {
            return Ok(None);
        };
        let (batch, slots) = types_of(&keys);
        if !slots.is_empty() {
            let mut replies = batch.run(con)?;
            self.record(slots, &mut replies)?;
        }
        Ok(Some(keys.len()))
    }

    /// [`sample`](Self::sample) on an async connection.
    #[cfg(feature = "aio")]
    pub async fn sample_async<C>(&mut self, con: &mut C) -> Result<Option<usize>>
    where
        C: redis::aio::ConnectionLike,
    {
        let Some(keys) = self.walk.next_async(con).await? else {
            return Ok(None);
        };
        let (batch, slots) = types_of(&keys);
        if !slots.is_empty() {
            let mut replies = batch.run_async(con).await?;
            self.record(slots, &mut replies)?;
        }
        Ok(Some(keys.len()))
    }

    fn record(
        &mut self,
        slots: Vec<crate::Slot<KeyType>>,
        replies: &mut crate::Replies,
    ) -> Result<()> {
        // Decode the whole batch before counting, so a failed batch counts nothing.
        let types = slots
            .into_iter()
            .map(|slot| slot.take(replies))
            .collect::<Result<Vec<_>>>()?;
        types.into_iter().for_each(|t| self.stats.record(t));
        Ok(())
    }

    /// What has been sampled so far (the book's `show_stats()`, without the printing).
    pub fn stats(&self) -> &SampleStats {
        &self.stats
    }

    /// The walk, to read its cursor or check whether it is done.
    pub fn walk(&self) -> &DbIterator {
        &self.walk
    }
}

/// `TYPE key`, decoded; the key is sent as its bytes.
fn key_type(key: &KeyName) -> Op<KeyType> {
    let mut cmd = redis::cmd("TYPE");
    cmd.arg(key);
    Op::<String>::native(cmd).map(|name| Ok(KeyType::from_name(&name)))
}

fn types_of(keys: &[KeyName]) -> (Batch, Vec<crate::Slot<KeyType>>) {
    let mut batch = Batch::new();
    let slots = keys.iter().map(|key| batch.add(key_type(key))).collect();
    (batch, slots)
}

/// Writes keys of every core type, for tests and benchmarks: the `n`-th key is
/// `<prefix>:<n>` (ten digits, zero-padded) and its type is drawn by a small xorshift
/// generator seeded by the caller, so the same prefix and seed give the same keys and
/// types every time.
///
/// Each key is deleted and then written with one empty member, as in the book
/// (`SET k ""`, `HSET k "" ""`, `RPUSH k ""`, `SADD k ""`, `ZADD k 0 ""`,
/// `XADD k * "" ""`), in pipelines of up to 512 keys. On a Redis Cluster a pipeline goes
/// to one node, so give a prefix holding a hash tag (`{bench}`): all the keys then share
/// its slot.
///
/// ```no_run
/// # fn demo() -> redis_patterns::Result<()> {
/// use redis_patterns::keyspace::{KeyType, RandomKeyGenerator};
///
/// let mut con = redis::Client::open("redis://127.0.0.1/")?.get_connection()?;
/// let keys = RandomKeyGenerator::new("test:keys", 7).generate(&mut con, 100)?;
/// assert_eq!(keys[0].0, "test:keys:0000000000");
/// let hashes = keys.iter().filter(|(_, t)| *t == KeyType::Hash).count();
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RandomKeyGenerator {
    prefix: String,
    seed: u64,
}

/// How many keys one pipeline writes.
const GENERATOR_CHUNK: usize = 512;

impl RandomKeyGenerator {
    /// Keys named `<prefix>:<n>`, types drawn from `seed`.
    pub fn new(prefix: impl Into<String>, seed: u64) -> Self {
        RandomKeyGenerator {
            prefix: prefix.into(),
            seed,
        }
    }

    /// The keys and types [`generate`](Self::generate) writes, without writing them.
    pub fn plan(&self, count: usize) -> Result<Vec<(String, KeyType)>> {
        let prefix = input::key("prefix", &self.prefix)?;
        let mut rng = XorShift::new(self.seed);
        Ok((0..count)
            .map(|n| {
                let key_type = KeyType::CORE[(rng.next() % 6) as usize].clone();
                (format!("{prefix}:{n:010}"), key_type)
            })
            .collect())
    }

    /// Writes `count` keys and returns them with their types, in order.
    pub fn generate(
        &self,
        con: &mut dyn redis::ConnectionLike,
        count: usize,
    ) -> Result<Vec<(String, KeyType)>> {
        let keys = self.plan(count)?;
        for chunk in keys.chunks(GENERATOR_CHUNK) {
            let (batch, slots) = writes(chunk);
            let mut replies = batch.run(con)?;
            take_all(slots, &mut replies)?;
        }
        Ok(keys)
    }

    /// [`generate`](Self::generate) on an async connection.
    #[cfg(feature = "aio")]
    pub async fn generate_async<C>(
        &self,
        con: &mut C,
        count: usize,
    ) -> Result<Vec<(String, KeyType)>>
    where
        C: redis::aio::ConnectionLike,
    {
        let keys = self.plan(count)?;
        for chunk in keys.chunks(GENERATOR_CHUNK) {
            let (batch, slots) = writes(chunk);
            let mut replies = batch.run_async(con).await?;
            take_all(slots, &mut replies)?;
        }
        Ok(keys)
    }
}

fn writes(keys: &[(String, KeyType)]) -> (Batch, Vec<crate::Slot<Value>>) {
    let mut batch = Batch::new();
    let mut slots = Vec::with_capacity(2 * keys.len());
    for (key, key_type) in keys {
        let mut del = redis::cmd("DEL");
        del.arg(key);
        slots.push(batch.add(Op::native(del)));
        let write = match key_type {
            KeyType::String => redis::cmd("SET").arg(key).arg("").to_owned(),
            KeyType::Hash => redis::cmd("HSET").arg(key).arg("").arg("").to_owned(),
            KeyType::List => redis::cmd("RPUSH").arg(key).arg("").to_owned(),
            KeyType::Set => redis::cmd("SADD").arg(key).arg("").to_owned(),
            KeyType::ZSet => redis::cmd("ZADD").arg(key).arg(0).arg("").to_owned(),
            _ => redis::cmd("XADD")
                .arg(key)
                .arg("*")
                .arg("")
                .arg("")
                .to_owned(),
        };
        slots.push(batch.add(Op::native(write)));
    }
    (batch, slots)
}

fn take_all(slots: Vec<crate::Slot<Value>>, replies: &mut crate::Replies) -> Result<()> {
    for slot in slots {
        slot.take(replies)?;
    }
    Ok(())
}

/// xorshift64* (Vigna): plenty for picking key types, and no dependency.
struct XorShift(u64);

impl XorShift {
    fn new(seed: u64) -> Self {
        // Zero is xorshift's one fixed point; mix the seed so that 0 works too.
        XorShift(seed ^ 0x9E37_79B9_7F4A_7C15 | 1)
    }

    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
}
