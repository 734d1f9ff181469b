//! Caches: 《Redis 应用实例》 chapters 1 and 2 (`Cache`, `JsonCache`, `HashCache`,
//! `BinaryCache`, the cache-aside example `cache_usage.py`), the 2011 Redis Cookbook's
//! string and hash caches, and [`Cache::get_or_compute`], a cache-aside read that computes
//! a missing value once however many clients miss it at the same moment.
//!
//! ```no_run
//! # fn demo() -> redis_patterns::Result<()> {
//! use std::time::Duration;
//! use redis_patterns::cache::{Cache, HashCache};
//!
//! let mut con = redis::Client::open("redis://127.0.0.1/")?.get_connection()?;
//!
//! let cache = Cache::new();
//! cache.set("greeting", "hello", Some(Duration::from_secs(60))).run(&mut con)?;
//! assert_eq!(cache.get::<String>("greeting").run(&mut con)?.as_deref(), Some("hello"));
//!
//! // Cache-aside without a stampede: however many clients miss, one renders the page.
//! let page = cache.get_or_compute(&mut con, "page:10086", Some(Duration::from_secs(60)), || {
//!     Ok::<_, redis_patterns::Error>("<html>...</html>".to_owned())
//! })?;
//!
//! let users = HashCache::new();
//! users.set("user:10086", [("id", "10086"), ("name", "peter")], None).run(&mut con)?;
//! # Ok(()) }
//! ```
//!
//! | Book | Here | What differs |
//! |---|---|---|
//! | `Cache.set(name, content, ttl=None)` (`SET [EX]`) | [`Cache::set`] (`SET [PX]`) | the ttl is a `Duration` (whole ms); the book's `ttl=0` server error is [`Error::InvalidInput`] before any I/O |
//! | `Cache.get(name)`, 2011 `get(name)` | [`Cache::get`] | |
//! | 2011 `delete(name)` (`DEL`) | [`Cache::delete`] | returns whether an entry was removed |
//! | 2011 `set(name, value, ttl)` (`SETEX`) | [`Cache::set`] | the recipe's SETEX argument order is wrong on redis-py ≥ 3 (value and ttl swapped); not here |
//! | `JsonCache.set` / `get` | [`JsonCache::set`] / [`JsonCache::get`] | typed through serde; a cached JSON `null` is told apart from a miss; a value that does not decode is an error |
//! | `HashCache.set(name, dict, ttl=None)` (`HSET`, `MULTI HSET EXPIRE`) | [`HashCache::set`] (script `cache/hash_set`) | **replaces** the whole entry (the book's HSET merges and keeps stale fields, and a set without ttl keeps the old ttl); an empty map is [`Error::InvalidInput`] |
//! | `HashCache.get(name)` (`HGETALL`) | [`HashCache::get`] | |
//! | `BinaryCache.set(name, path, ttl=None)` | [`BinaryCache::set_file`] (and [`BinaryCache::set`] for bytes in memory) | an unreadable file is an `io::Error` and nothing is sent, as in the book |
//! | `BinaryCache.get(name)` | [`BinaryCache::get`] | |
//! | `cache_usage.py`: GET, build on a miss, SET EX | [`Cache::get_or_compute`] | the book rebuilds the value in every client that misses (a stampede); here one computes and the others wait for its result |
//! | 2011 `@cache` decorator (broken: wrong key, value never stored) | [`Cache::get_or_compute`] | a closure instead of a decorator; the key is the caller's |
//! | 2011 hash `set/get/delete(category, name…)`, `expire/ttl/size(category)` | [`CategoryCache`] | `delete` and `expire` say whether they did something; `ttl` tells "no expiry" from "no such category" ([`Ttl`]) |
//!
//! A `set` with a ttl takes whole milliseconds (`PX`), from 1 ms to 10^15 - 1 ms; `None`
//! keeps the entry until it is replaced or deleted. Every operation is one native command,
//! except [`HashCache::set`] (one script, so no reader sees the hash without its time to
//! live) and [`Cache::get_or_compute`] (scripts, several round trips; see there).
//!
//! [`JsonCache`] needs the `json` feature (serde and serde_json), which is on by default;
//! `default-features = false` builds the crate without it.

use std::path::Path;
use std::time::{Duration, Instant};

use redis::{FromRedisValue, ToRedisArgs, Value};

use crate::runtime::error::{Error, Result};
use crate::runtime::input;
use crate::runtime::machine::{self, Machine, Step};
use crate::runtime::op::{Op, ScriptMode};
use crate::runtime::token;
use crate::scripts;

/// `SET name content [PX ttl]`.
fn set_op(name: &str, content: &[u8], ttl: Option<Duration>) -> Op<()> {
    Op::try_build(|| {
        let mut cmd = redis::cmd("SET");
        cmd.arg(input::key("name", name)?).arg(content);
        if let Some(ttl) = ttl {
            cmd.arg("PX").arg(input::ttl_ms(ttl)?);
        }
        Ok(Op::native(cmd))
    })
}

fn get_op<T: FromRedisValue + 'static>(name: &str) -> Op<Option<T>> {
    Op::try_build(|| {
        let mut cmd = redis::cmd("GET");
        cmd.arg(input::key("name", name)?);
        Ok(Op::native(cmd))
    })
}

/// How [`Cache::get_or_compute`] waits while another client computes a missing value.
///
/// ```
/// use std::time::Duration;
/// use redis_patterns::cache::{Cache, ComputeOptions};
///
/// // A report that takes up to a minute to build.
/// let cache = Cache::with_options(ComputeOptions {
///     lease: Duration::from_secs(90),
///     max_wait: Duration::from_secs(100),
///     ..ComputeOptions::default()
/// })?;
///
/// // A lease is whole milliseconds, at least one: refused when the cache is built.
/// let zero = ComputeOptions { lease: Duration::ZERO, ..ComputeOptions::default() };
/// assert!(Cache::with_options(zero).is_err());
/// # Ok::<(), redis_patterns::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ComputeOptions {
    /// How long a client's claim to compute a value lasts. It must cover the computation:
    /// once it runs out, another client computes too. If the computing client crashes,
    /// the others compute after this long. Default 10 s.
    pub lease: Duration,
    /// How long a client waits for another's result before giving up with
    /// [`Error::Timeout`]. Keep it above `lease`, so that a waiter outlives a crashed
    /// client's claim and computes the value itself. Default 12 s.
    pub max_wait: Duration,
    /// The first pause between two looks at the entry while waiting; it doubles after
    /// each look, up to 8 times this. Default 10 ms.
    pub poll: Duration,
}

impl Default for ComputeOptions {
    fn default() -> Self {
        ComputeOptions {
            lease: Duration::from_secs(10),
            max_wait: Duration::from_secs(12),
            poll: Duration::from_millis(10),
        }
    }
}

/// A cache of values, one string key per entry (`SET`, `GET`, `DEL`).
///
/// The book's `Cache(client)` and the 2011 cookbook's string cache; the key is the
/// caller's `name`, with no prefix. Values are any redis-rs value, binary-safe: `&str`,
/// `String`, `Vec<u8>`, numbers; [`get`](Cache::get) decodes into the type asked for.
///
/// ```no_run
/// # fn demo() -> redis_patterns::Result<()> {
/// use std::time::Duration;
/// use redis_patterns::cache::Cache;
///
/// let mut con = redis::Client::open("redis://127.0.0.1/")?.get_connection()?;
/// let cache = Cache::new();
/// cache.set("phone", "10086", Some(Duration::from_secs(3))).run(&mut con)?;
/// assert_eq!(cache.get::<String>("phone").run(&mut con)?.as_deref(), Some("10086"));
/// assert_eq!(cache.get::<u64>("phone").run(&mut con)?, Some(10086));
/// assert!(cache.delete("phone").run(&mut con)?);
/// assert_eq!(cache.get::<Vec<u8>>("phone").run(&mut con)?, None);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Cache {
    options: ComputeOptions,
    /// How `get_or_compute`'s scripts run.
    mode: ScriptMode,
}

impl Cache {
    /// A cache with the default [`ComputeOptions`]. Cheap: no I/O.
    pub fn new() -> Self {
        Cache::default()
    }

    /// A cache whose [`get_or_compute`](Cache::get_or_compute) waits as `options` say.
    ///
    /// The lease must be from 1 ms to 10^15 - 1 ms (whole milliseconds, as the claim
    /// script takes it), else [`Error::InvalidInput`] about `lease`.
    pub fn with_options(options: ComputeOptions) -> Result<Self> {
        input::check_param(&scripts::cache::CLAIM.args[1], options.lease)?;
        Ok(Cache {
            options,
            mode: ScriptMode::Eval,
        })
    }

    /// The same cache, whose [`get_or_compute`](Cache::get_or_compute) runs its scripts
    /// (the claim, the fill, the release) with `mode` ([`ScriptMode::Eval`] by default;
    /// see [`Op::via`]). The operations a cache returns choose for themselves.
    ///
    /// ```
    /// use redis_patterns::{ScriptMode, cache::Cache};
    ///
    /// let cache = Cache::new().via(ScriptMode::Functions);
    /// assert_eq!(cache.mode(), ScriptMode::Functions);
    /// ```
    pub fn via(mut self, mode: ScriptMode) -> Self {
        self.mode = mode;
        self
    }

    /// How [`get_or_compute`](Cache::get_or_compute) runs its scripts.
    pub fn mode(&self) -> ScriptMode {
        self.mode
    }

    /// The options of [`get_or_compute`](Cache::get_or_compute).
    pub fn options(&self) -> &ComputeOptions {
        &self.options
    }

    /// Stores `content` at `name` (`SET name content [PX ttl]`), replacing any value.
    ///
    /// With a `ttl` (whole milliseconds, from 1 ms) the entry expires; without, it stays
    /// until replaced or deleted. A zero ttl is [`Error::InvalidInput`].
    pub fn set<V: ToRedisArgs>(&self, name: &str, content: V, ttl: Option<Duration>) -> Op<()> {
        match input::value("content", &content) {
            Ok(content) => set_op(name, &content, ttl),
            Err(err) => Op::rejected(err),
        }
    }

    /// The value at `name` (`GET`) as `T`, or `None` when missing or expired. A value
    /// that does not decode as `T` is an error, and stays cached.
    pub fn get<T: FromRedisValue + 'static>(&self, name: &str) -> Op<Option<T>> {
        get_op(name)
    }

    /// Removes the entry (`DEL`): true if there was one.
    pub fn delete(&self, name: &str) -> Op<bool> {
        Op::try_build(|| {
            let mut cmd = redis::cmd("DEL");
            cmd.arg(input::key("name", name)?);
            Ok(Op::native(cmd))
        })
    }

    /// The value at `name`; on a miss, `compute`s it once, stores it with `ttl`, and
    /// returns it, even when many clients miss at the same moment.
    ///
    /// A hit is one plain `GET`, as cheap as [`get`](Cache::get) (and fit for a replica
    /// connection). On a miss, the first client to miss claims the entry (a marker at
    /// `{name}:computing`, which lasts [`lease`](ComputeOptions::lease)) and runs
    /// `compute`; the others wait, looking again after a short pause that doubles each
    /// time, and return the value it stores. If `compute` fails, its error is returned
    /// and the claim is released at once, so a waiting client computes instead; if the
    /// computing client crashes, one of the waiters computes when the lease runs out. A
    /// waiter that has waited [`max_wait`](ComputeOptions::max_wait) gives up with
    /// [`Error::Timeout`].
    ///
    /// `T` is any value redis-rs both sends and reads: `String`, `Vec<u8>`, numbers;
    /// [`JsonCache::get_or_compute`] caches serde values. A miss is inherently several
    /// round trips (`GET`, then scripts `cache/claim` and `cache/fill`, and
    /// `identity_lock/release` on failure), so this takes a connection instead of
    /// returning an [`Op`], and cannot run in a [`Batch`](crate::Batch). The error type
    /// is the caller's, as long as the crate's [`Error`] converts into it (`anyhow`
    /// errors and the crate's own both do).
    ///
    /// ```no_run
    /// # fn demo() -> redis_patterns::Result<()> {
    /// use std::time::Duration;
    /// use redis_patterns::cache::Cache;
    ///
    /// let mut con = redis::Client::open("redis://127.0.0.1/")?.get_connection()?;
    /// let page: String = Cache::new().get_or_compute(&mut con, "page:10086", Some(Duration::from_secs(60)), || {
    ///     // Runs in one client only, however many miss at once.
    ///     Ok::<_, redis_patterns::Error>("<html>...</html>".to_owned())
    /// })?;
    /// # Ok(()) }
    /// ```
    pub fn get_or_compute<T, E>(
        &self,
        con: &mut dyn redis::ConnectionLike,
        name: &str,
        ttl: Option<Duration>,
        compute: impl FnOnce() -> std::result::Result<T, E>,
    ) -> std::result::Result<T, E>
    where
        T: ToRedisArgs + FromRedisValue + 'static,
        E: From<Error>,
    {
        compute_sync(self, &Plain, con, name, ttl, compute)
    }

    /// [`get_or_compute`](Cache::get_or_compute) on an async connection, with an async
    /// `compute`. It runs on any runtime: it waits with a timer of its own.
    ///
    /// ```no_run
    /// # async fn demo() -> redis_patterns::Result<()> {
    /// use std::time::Duration;
    /// use redis_patterns::cache::Cache;
    ///
    /// let client = redis::Client::open("redis://127.0.0.1/")?;
    /// let mut con = client.get_multiplexed_async_connection().await?;
    /// let page: Vec<u8> = Cache::new()
    ///     .get_or_compute_async(&mut con, "page:10086", Some(Duration::from_secs(60)), || async {
    ///         Ok::<_, redis_patterns::Error>(b"<html>...</html>".to_vec())
    ///     })
    ///     .await?;
    /// # Ok(()) }
    /// ```
    #[cfg(feature = "aio")]
    pub async fn get_or_compute_async<T, C, F, Fut, E>(
        &self,
        con: &mut C,
        name: &str,
        ttl: Option<Duration>,
        compute: F,
    ) -> std::result::Result<T, E>
    where
        T: ToRedisArgs + FromRedisValue + 'static,
        C: redis::aio::ConnectionLike,
        F: FnOnce() -> Fut,
        Fut: std::future::Future<Output = std::result::Result<T, E>>,
        E: From<Error>,
    {
        compute_async(self, &Plain, con, name, ttl, compute).await
    }
}

/// How [`Cache::get_or_compute`] and [`JsonCache::get_or_compute`] store their values.
trait Codec<T> {
    fn encode(&self, value: &T) -> Result<Vec<u8>>;
    fn decode(&self, name: &str, bytes: Vec<u8>) -> Result<T>;
}

/// Values as redis-rs sends and reads them.
struct Plain;

impl<T: ToRedisArgs + FromRedisValue> Codec<T> for Plain {
    fn encode(&self, value: &T) -> Result<Vec<u8>> {
        input::value("content", value)
    }

    fn decode(&self, _name: &str, bytes: Vec<u8>) -> Result<T> {
        Ok(T::from_redis_value(Value::BulkString(bytes))?)
    }
}

/// `get_or_compute` on a sync connection: a plain `GET` first, the claim only on a miss.
fn compute_sync<T, E: From<Error>>(
    cache: &Cache,
    codec: &impl Codec<T>,
    con: &mut dyn redis::ConnectionLike,
    name: &str,
    ttl: Option<Duration>,
    compute: impl FnOnce() -> std::result::Result<T, E>,
) -> std::result::Result<T, E> {
    check_ttl(ttl)?;
    if let Some(bytes) = get_op::<Vec<u8>>(name).run(con)? {
        return Ok(codec.decode(name, bytes)?);
    }
    let job = Job::new(name, ttl, cache)?;
    let Some(bytes) = machine::drive(&mut Claiming::new(&job, name, cache), con)? else {
        return match compute() {
            Ok(value) => {
                job.fill(&codec.encode(&value)?).run(con)?;
                Ok(value)
            }
            Err(err) => {
                // The caller's error matters more; an unreleased claim runs out after its
                // lease anyway.
                let _ = job.release().run(con);
                Err(err)
            }
        };
    };
    Ok(codec.decode(name, bytes)?)
}

/// A bad `ttl` fails every call alike, hit or miss, by `cache/fill`'s own rule.
fn check_ttl(ttl: Option<Duration>) -> Result<()> {
    input::check_param(&scripts::cache::FILL.args[2], ttl)
}

/// [`compute_sync`] on an async connection.
#[cfg(feature = "aio")]
async fn compute_async<T, C, F, Fut, E>(
    cache: &Cache,
    codec: &impl Codec<T>,
    con: &mut C,
    name: &str,
    ttl: Option<Duration>,
    compute: F,
) -> std::result::Result<T, E>
where
    C: redis::aio::ConnectionLike,
    F: FnOnce() -> Fut,
    Fut: std::future::Future<Output = std::result::Result<T, E>>,
    E: From<Error>,
{
    check_ttl(ttl)?;
    if let Some(bytes) = get_op::<Vec<u8>>(name).run_async(con).await? {
        return Ok(codec.decode(name, bytes)?);
    }
    let job = Job::new(name, ttl, cache)?;
    let Some(bytes) = machine::drive_async(&mut Claiming::new(&job, name, cache), con).await?
    else {
        return match compute().await {
            Ok(value) => {
                job.fill(&codec.encode(&value)?).run_async(con).await?;
                Ok(value)
            }
            Err(err) => {
                let _ = job.release().run_async(con).await;
                Err(err)
            }
        };
    };
    Ok(codec.decode(name, bytes)?)
}

/// The wait of `get_or_compute`, for both drivers: claim the entry until it is there
/// (`Some`, its bytes) or this caller may compute it (`None`), pausing between looks as
/// [`Wait`] says, up to the timeout.
struct Claiming<'j> {
    job: &'j Job,
    wait: Wait,
    pause: Option<Duration>,
    output: Option<Result<Option<Vec<u8>>>>,
}

impl<'j> Claiming<'j> {
    fn new(job: &'j Job, name: &str, cache: &Cache) -> Self {
        Claiming {
            job,
            wait: Wait::new(name, &cache.options),
            pause: None,
            output: None,
        }
    }
}

impl Machine for Claiming<'_> {
    type Answer = Claim;
    type Output = Result<Option<Vec<u8>>>;

    fn step(&mut self) -> Step<Claim, Result<Option<Vec<u8>>>> {
        if let Some(output) = self.output.take() {
            return Step::Done(output);
        }
        match self.pause.take() {
            Some(pause) => Step::Pause(pause),
            None => Step::Run(self.job.claim()),
        }
    }

    fn feed(&mut self, answer: Result<Claim>) {
        match answer {
            Ok(Claim::Hit(bytes)) => self.output = Some(Ok(Some(bytes))),
            Ok(Claim::Compute) => self.output = Some(Ok(None)),
            Ok(Claim::Wait) => match self.wait.next_pause() {
                Ok(pause) => self.pause = Some(pause),
                Err(err) => self.output = Some(Err(err)),
            },
            Err(err) => self.output = Some(Err(err)),
        }
    }
}

/// What `cache/claim` answered.
enum Claim {
    Hit(Vec<u8>),
    Compute,
    Wait,
}

/// The keys, token and arguments of one `get_or_compute` call, checked once.
struct Job {
    value: String,
    marker: String,
    token: String,
    ttl: Option<Duration>,
    lease: Duration,
    mode: ScriptMode,
}

impl Job {
    fn new(name: &str, ttl: Option<Duration>, cache: &Cache) -> Result<Job> {
        let marker = scripts::cache::keys::marker(name)?;
        Ok(Job {
            value: scripts::cache::keys::value(name)?,
            marker,
            token: token::random(),
            ttl,
            lease: cache.options.lease,
            mode: cache.mode,
        })
    }

    fn claim(&self) -> Op<Claim> {
        scripts::cache::claim(&self.value, &self.marker, &self.token, self.lease)
            .map(|(answer, value)| match (answer.as_str(), value) {
                ("hit", Some(value)) => Ok(Claim::Hit(value)),
                ("compute", None) => Ok(Claim::Compute),
                ("wait", None) => Ok(Claim::Wait),
                (answer, value) => Err(Error::unexpected_reply(
                    "cache/claim answered neither hit, compute nor wait",
                    format!("{answer:?}, {value:?}"),
                )),
            })
            .via(self.mode)
    }

    fn fill(&self, content: &[u8]) -> Op<bool> {
        scripts::cache::fill(&self.value, &self.marker, &self.token, content, self.ttl)
            .via(self.mode)
    }

    fn release(&self) -> Op<bool> {
        scripts::identity_lock::release(&self.marker, &self.token).via(self.mode)
    }
}

/// The pauses of one waiting client, bounded by `max_wait`.
struct Wait {
    what: String,
    started: Instant,
    max_wait: Duration,
    pause: Duration,
    max_pause: Duration,
}

impl Wait {
    fn new(name: &str, options: &ComputeOptions) -> Wait {
        let poll = options.poll.max(Duration::from_millis(1));
        Wait {
            what: format!("cache entry {name:?}"),
            started: Instant::now(),
            max_wait: options.max_wait,
            pause: poll,
            max_pause: poll.saturating_mul(8),
        }
    }

    /// How long to pause before the next look, or the timeout once `max_wait` is spent.
    fn next_pause(&mut self) -> Result<Duration> {
        let waited = self.started.elapsed();
        if waited >= self.max_wait {
            return Err(Error::Timeout {
                what: std::mem::take(&mut self.what),
                waited,
            });
        }
        let pause = self.pause.min(self.max_wait - waited);
        self.pause = self.pause.saturating_mul(2).min(self.max_pause);
        Ok(pause)
    }
}

/// A cache of any serde value, stored as JSON text in one string key.
///
/// The book's `JsonCache`, typed. A cached JSON `null` is a value, not a miss: with
/// `T = Option<U>`, [`get`](JsonCache::get) gives `Some(None)` for a cached `null` and
/// `None` for a miss (the book gives `None` for both). A stored value that does not
/// decode as `T` is an error ([`Error::Redis`], kind `UnexpectedReturnType`), not a panic.
/// Needs the `json` feature (on by default).
///
/// ```no_run
/// # fn demo() -> redis_patterns::Result<()> {
/// use std::collections::BTreeMap;
/// use redis_patterns::cache::JsonCache;
///
/// let mut con = redis::Client::open("redis://127.0.0.1/")?.get_connection()?;
/// let users = JsonCache::<BTreeMap<String, String>>::new();
/// let peter = BTreeMap::from([("name".to_owned(), "peter".to_owned())]);
/// users.set("user:10086", &peter, None).run(&mut con)?;
/// assert_eq!(users.get("user:10086").run(&mut con)?, Some(peter));
///
/// // A cached "nothing" is not a miss.
/// let lookups = JsonCache::<Option<u64>>::new();
/// lookups.set("owner:of:tmp", &None, None).run(&mut con)?;
/// assert_eq!(lookups.get("owner:of:tmp").run(&mut con)?, Some(None));
/// assert_eq!(lookups.get("owner:of:etc").run(&mut con)?, None);
/// # Ok(()) }
/// ```
#[cfg(feature = "json")]
pub struct JsonCache<T> {
    _value: std::marker::PhantomData<fn() -> T>,
}

#[cfg(feature = "json")]
impl<T> std::fmt::Debug for JsonCache<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "JsonCache<{}>", std::any::type_name::<T>())
    }
}

#[cfg(feature = "json")]
impl<T> Clone for JsonCache<T> {
    fn clone(&self) -> Self {
        *self
    }
}

#[cfg(feature = "json")]
impl<T> Copy for JsonCache<T> {}

#[cfg(feature = "json")]
impl<T> Default for JsonCache<T> {
    fn default() -> Self {
        JsonCache {
            _value: std::marker::PhantomData,
        }
    }
}

#[cfg(feature = "json")]
impl<T: serde::Serialize + serde::de::DeserializeOwned + 'static> JsonCache<T> {
    /// A cache of `T` values. Cheap: no I/O.
    pub fn new() -> Self {
        JsonCache::default()
    }

    /// Stores `content` as JSON at `name` (`SET name json [PX ttl]`).
    ///
    /// A value serde_json cannot write (a map whose keys are not strings, a failing
    /// `Serialize`) is [`Error::InvalidInput`] about `content`.
    pub fn set(&self, name: &str, content: &T, ttl: Option<Duration>) -> Op<()> {
        match Json.encode(content) {
            Ok(json) => set_op(name, &json, ttl),
            Err(err) => Op::rejected(err),
        }
    }

    /// The value at `name` (`GET`, then JSON-decoded), or `None` when missing or expired.
    pub fn get(&self, name: &str) -> Op<Option<T>> {
        let key = name.to_owned();
        get_op::<Vec<u8>>(name)
            .map(move |json| json.map(|json| Json.decode(&key, json)).transpose())
    }

    /// [`Cache::get_or_compute`] for serde values: a hit is one `GET` and a JSON decode;
    /// a miss computes once, however many clients miss, and stores the value as JSON.
    ///
    /// ```no_run
    /// # fn demo() -> redis_patterns::Result<()> {
    /// use std::time::Duration;
    /// use redis_patterns::cache::{Cache, JsonCache};
    ///
    /// let mut con = redis::Client::open("redis://127.0.0.1/")?.get_connection()?;
    /// let scores = JsonCache::<Vec<u32>>::new();
    /// let top = scores.get_or_compute(&Cache::new(), &mut con, "top:10", None, || {
    ///     Ok::<_, redis_patterns::Error>(vec![99, 97, 90])
    /// })?;
    /// # Ok(()) }
    /// ```
    pub fn get_or_compute<E: From<Error>>(
        &self,
        cache: &Cache,
        con: &mut dyn redis::ConnectionLike,
        name: &str,
        ttl: Option<Duration>,
        compute: impl FnOnce() -> std::result::Result<T, E>,
    ) -> std::result::Result<T, E> {
        compute_sync(cache, &Json, con, name, ttl, compute)
    }

    /// [`get_or_compute`](JsonCache::get_or_compute) on an async connection.
    #[cfg(feature = "aio")]
    pub async fn get_or_compute_async<C, F, Fut, E>(
        &self,
        cache: &Cache,
        con: &mut C,
        name: &str,
        ttl: Option<Duration>,
        compute: F,
    ) -> std::result::Result<T, E>
    where
        C: redis::aio::ConnectionLike,
        F: FnOnce() -> Fut,
        Fut: std::future::Future<Output = std::result::Result<T, E>>,
        E: From<Error>,
    {
        compute_async(cache, &Json, con, name, ttl, compute).await
    }
}

/// Values as JSON text.
#[cfg(feature = "json")]
struct Json;

#[cfg(feature = "json")]
impl<T: serde::Serialize + serde::de::DeserializeOwned> Codec<T> for Json {
    fn encode(&self, value: &T) -> Result<Vec<u8>> {
        serde_json::to_vec(value)
            .map_err(|err| Error::invalid("content", format!("must serialise to JSON: {err}")))
    }

    fn decode(&self, name: &str, json: Vec<u8>) -> Result<T> {
        serde_json::from_slice(&json).map_err(|err| {
            Error::unexpected_reply(
                "a cached value does not decode as the JsonCache's type",
                format!(
                    "{name:?} holds {:?}, which is not JSON of type {}: {err}",
                    String::from_utf8_lossy(&json),
                    std::any::type_name::<T>()
                ),
            )
        })
    }
}

/// A cache whose entries are hashes: one hash per entry, fields and values binary-safe.
///
/// The book's `HashCache`. [`set`](HashCache::set) **replaces** the whole entry in one
/// script (`cache/hash_set`): the old fields are gone and the new ttl (or none) applies,
/// where the book's HSET merges into the old hash, keeping stale fields, and keeps the
/// old ttl when given none. No reader ever sees the hash half-written or without its ttl.
///
/// ```no_run
/// # fn demo() -> redis_patterns::Result<()> {
/// use std::time::Duration;
/// use std::collections::HashMap;
/// use redis_patterns::cache::HashCache;
///
/// let mut con = redis::Client::open("redis://127.0.0.1/")?.get_connection()?;
/// let cache = HashCache::new();
/// cache.set("user:10086", [("id", "10086"), ("name", "peter")], Some(Duration::from_secs(60)))
///     .run(&mut con)?;
/// let user: HashMap<String, String> = cache.get("user:10086").run(&mut con)?.unwrap();
/// assert_eq!(user["name"], "peter");
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct HashCache;

impl HashCache {
    /// A cache of hashes. Cheap: no I/O.
    pub fn new() -> Self {
        HashCache
    }

    /// Replaces the entry at `name` with `fields` (a map, or any field/value pairs), with
    /// `ttl` or no expiry, in one script (`cache/hash_set`).
    ///
    /// From 1 to 1000 fields, or [`Error::InvalidInput`] (Redis has no empty hash; one
    /// call stays short). A key that holds another type fails with `WRONGTYPE`, and is
    /// left as it is.
    pub fn set<K, V>(
        &self,
        name: &str,
        fields: impl IntoIterator<Item = (K, V)>,
        ttl: Option<Duration>,
    ) -> Op<()>
    where
        K: ToRedisArgs,
        V: ToRedisArgs,
    {
        Op::try_build(|| {
            let name = scripts::cache::keys::cache(name)?;
            let mut flat = Vec::new();
            for (field, value) in fields {
                flat.push(input::value("fields", &field)?);
                flat.push(input::value("fields", &value)?);
            }
            Ok(scripts::cache::hash_set(&name, ttl, &input::slices(&flat)))
        })
    }

    /// The entry at `name` (`HGETALL`) as `T` (a `HashMap` or `BTreeMap` of the field and
    /// value types asked for, `Vec<(K, V)>`, …), or `None` when missing or expired.
    pub fn get<T: FromRedisValue + 'static>(&self, name: &str) -> Op<Option<T>> {
        Op::try_build(|| {
            let mut cmd = redis::cmd("HGETALL");
            cmd.arg(input::key("name", name)?);
            Ok(Op::<Value>::native(cmd).map(|reply| match reply {
                Value::Array(ref items) if items.is_empty() => Ok(None),
                Value::Map(ref items) if items.is_empty() => Ok(None),
                reply => Ok(Some(T::from_redis_value(reply)?)),
            }))
        })
    }

    /// Removes the entry (`DEL`): true if there was one.
    pub fn delete(&self, name: &str) -> Op<bool> {
        Cache::new().delete(name)
    }
}

/// A cache of bytes, one string key per entry: images, compressed pages, anything.
///
/// The book's `BinaryCache` (chapter 2). Values come back byte for byte; they are capped
/// by the server's `proto-max-bulk-len` (512 MB by default).
///
/// ```no_run
/// # fn demo() -> Result<(), Box<dyn std::error::Error>> {
/// use std::time::Duration;
/// use redis_patterns::cache::BinaryCache;
///
/// let mut con = redis::Client::open("redis://127.0.0.1/")?.get_connection()?;
/// let cache = BinaryCache::new();
/// // The file is read before anything is sent: an unreadable one is an io::Error.
/// cache.set_file("logo.png", "static/logo.png", Some(Duration::from_secs(3600)))?
///     .run(&mut con)?;
/// let png: Option<Vec<u8>> = cache.get("logo.png").run(&mut con)?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BinaryCache;

impl BinaryCache {
    /// A cache of bytes. Cheap: no I/O.
    pub fn new() -> Self {
        BinaryCache
    }

    /// Stores `content` at `name` (`SET name bytes [PX ttl]`).
    pub fn set(&self, name: &str, content: &[u8], ttl: Option<Duration>) -> Op<()> {
        set_op(name, content, ttl)
    }

    /// Reads the file at `path`, then returns the operation that stores its bytes at
    /// `name`: the book's `BinaryCache.set(name, path, ttl)`. A file that cannot be read
    /// is an `io::Error`, and nothing is sent.
    pub fn set_file(
        &self,
        name: &str,
        path: impl AsRef<Path>,
        ttl: Option<Duration>,
    ) -> std::io::Result<Op<()>> {
        let content = std::fs::read(path)?;
        Ok(self.set(name, &content, ttl))
    }

    /// The bytes at `name` (`GET`), or `None` when missing or expired.
    pub fn get(&self, name: &str) -> Op<Option<Vec<u8>>> {
        get_op(name)
    }

    /// Removes the entry (`DEL`): true if there was one.
    pub fn delete(&self, name: &str) -> Op<bool> {
        Cache::new().delete(name)
    }
}

/// How long a [`CategoryCache`] stays ([`CategoryCache::ttl`]), or one of its entries
/// ([`CategoryCache::entry_ttl`]).
///
/// ```no_run
/// # fn demo() -> redis_patterns::Result<()> {
/// use redis_patterns::cache::{CategoryCache, Ttl};
///
/// let mut con = redis::Client::open("redis://127.0.0.1/")?.get_connection()?;
/// match CategoryCache::new("page_cache")?.ttl().run(&mut con)? {
///     Ttl::Missing => println!("no such category"),
///     Ttl::Forever => println!("never expires"),
///     Ttl::Expires(left) => println!("expires in {left:?}"),
/// }
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ttl {
    /// The category (or the entry) does not exist, or it expired.
    Missing,
    /// It exists and has no expiry of its own.
    Forever,
    /// It expires in this long (to the millisecond).
    Expires(Duration),
}

/// What `PTTL` and `HPTTL` answer: -2 for missing, -1 for no expiry, else milliseconds.
fn ttl_from_pttl(command: &'static str, ms: i64) -> Result<Ttl> {
    Ok(match ms {
        -2 => Ttl::Missing,
        -1 => Ttl::Forever,
        ms => Ttl::Expires(Duration::from_millis(u64::try_from(ms).map_err(|_| {
            Error::unexpected_reply("a negative ttl", format!("{command} returned {ms}"))
        })?)),
    })
}

/// The 2011 Redis Cookbook's hash cache: the entries of one category in one hash, with
/// one ttl for the whole category (`HSET`, `HGET`, `HDEL`, `PEXPIRE`, `PTTL`, `HLEN`).
///
/// The cookbook's functions took the category as their first argument; here it is the
/// constructor's, as in its earlier `Cache(category)` class.
///
/// ```no_run
/// # fn demo() -> redis_patterns::Result<()> {
/// use std::time::Duration;
/// use redis_patterns::cache::{CategoryCache, Ttl};
///
/// let mut con = redis::Client::open("redis://127.0.0.1/")?.get_connection()?;
/// let pages = CategoryCache::new("page_cache")?;
/// pages.set("/topic/123", "hello").run(&mut con)?;
/// assert_eq!(pages.size().run(&mut con)?, 1);
/// assert_eq!(pages.ttl().run(&mut con)?, Ttl::Forever);
/// pages.expire(Duration::from_secs(3)).run(&mut con)?;
/// assert_eq!(pages.get::<String>("/topic/123").run(&mut con)?.as_deref(), Some("hello"));
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CategoryCache {
    category: String,
}

impl CategoryCache {
    /// The category stored in the hash at `category`. Cheap: no I/O. An empty key is
    /// [`Error::InvalidInput`].
    pub fn new(category: impl Into<String>) -> Result<Self> {
        let category = category.into();
        input::key("category", &category)?;
        Ok(CategoryCache { category })
    }

    /// The category's key.
    pub fn category(&self) -> &str {
        &self.category
    }

    fn cmd(&self, command: &str, name: Option<&str>) -> Result<redis::Cmd> {
        let mut cmd = redis::cmd(command);
        cmd.arg(&self.category);
        if let Some(name) = name {
            cmd.arg(input::key("name", name)?);
        }
        Ok(cmd)
    }

    /// Stores `value` under `name` (`HSET category name value`). The category's ttl, if
    /// any, is left as it is.
    pub fn set<V: ToRedisArgs>(&self, name: &str, value: V) -> Op<()> {
        Op::try_build(|| {
            let mut cmd = self.cmd("HSET", Some(name))?;
            cmd.arg(input::value("value", &value)?);
            Ok(Op::native(cmd))
        })
    }

    /// The value under `name` (`HGET`) as `T`, or `None`.
    pub fn get<T: FromRedisValue + 'static>(&self, name: &str) -> Op<Option<T>> {
        Op::try_build(|| Ok(Op::native(self.cmd("HGET", Some(name))?)))
    }

    /// Removes `name` (`HDEL`): true if it was there.
    pub fn delete(&self, name: &str) -> Op<bool> {
        Op::try_build(|| Ok(Op::native(self.cmd("HDEL", Some(name))?)))
    }

    /// Stores `value` under `name` with a time to live of its own (`HSETEX category PX ttl
    /// FIELDS 1 name value`): the entry expires alone, while the category's other entries
    /// and its own ttl stay as they are. The cookbook's category has one ttl for all.
    ///
    /// Needs per-field expiry, which Redis 8.0 and Valkey 9.0 added
    /// ([`Capability::HashFieldExpiry`](crate::server::Capability::HashFieldExpiry) tells);
    /// an older server refuses the command (`ERR unknown command 'hsetex'`) and nothing is
    /// written. A later [`set`](Self::set) of the same entry keeps it for good again.
    ///
    /// ```no_run
    /// # fn demo() -> redis_patterns::Result<()> {
    /// use std::time::Duration;
    /// use redis_patterns::cache::{CategoryCache, Ttl};
    /// use redis_patterns::server::{Capability, Server};
    ///
    /// let mut con = redis::Client::open("redis://127.0.0.1/")?.get_connection()?;
    /// let pages = CategoryCache::new("page_cache")?;
    /// if Server::probe(&mut con)?.supports(Capability::HashFieldExpiry) {
    ///     pages.set_with_ttl("/news", "<html>…", Duration::from_secs(30)).run(&mut con)?;
    ///     assert!(matches!(pages.entry_ttl("/news").run(&mut con)?, Ttl::Expires(_)));
    /// }
    /// # Ok(()) }
    /// ```
    pub fn set_with_ttl<V: ToRedisArgs>(&self, name: &str, value: V, ttl: Duration) -> Op<()> {
        Op::try_build(|| {
            let mut cmd = redis::cmd("HSETEX");
            cmd.arg(&self.category)
                .arg("PX")
                .arg(input::ttl_ms(ttl)?)
                .arg("FIELDS")
                .arg(1)
                .arg(input::key("name", name)?)
                .arg(input::value("value", &value)?);
            Ok(Op::native(cmd))
        })
    }

    /// How long the entry at `name` stays on its own (`HPTTL`): [`Ttl::Missing`] when
    /// there is no such entry, [`Ttl::Forever`] when it has no ttl of its own (it still goes
    /// when the whole category expires). The same servers as
    /// [`set_with_ttl`](Self::set_with_ttl).
    pub fn entry_ttl(&self, name: &str) -> Op<Ttl> {
        Op::try_build(|| {
            let mut cmd = self.cmd("HPTTL", None)?;
            cmd.arg("FIELDS").arg(1).arg(input::key("name", name)?);
            Ok(Op::native(cmd).map(|ms: Vec<i64>| match ms[..] {
                [ms] => ttl_from_pttl("HPTTL", ms),
                _ => Err(Error::unexpected_reply(
                    "HPTTL did not return one ttl for one field",
                    format!("{ms:?}"),
                )),
            }))
        })
    }

    /// Makes the whole category expire in `ttl` (`PEXPIRE`, whole milliseconds): true if
    /// the category exists, false if it does not (then nothing is set).
    pub fn expire(&self, ttl: Duration) -> Op<bool> {
        Op::try_build(|| {
            let mut cmd = self.cmd("PEXPIRE", None)?;
            cmd.arg(input::ttl_ms(ttl)?);
            Ok(Op::native(cmd))
        })
    }

    /// How long the category stays (`PTTL`).
    pub fn ttl(&self) -> Op<Ttl> {
        Op::try_build(|| {
            Ok(Op::native(self.cmd("PTTL", None)?).map(|ms: i64| ttl_from_pttl("PTTL", ms)))
        })
    }

    /// The number of entries (`HLEN`); 0 when the category is missing.
    pub fn size(&self) -> Op<u64> {
        Op::try_build(|| Ok(Op::native(self.cmd("HLEN", None)?)))
    }
}
