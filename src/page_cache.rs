//! Web page caching: Redis in Action chapter 2 (`cache_request`, `can_cache`,
//! `hash_request`), on top of [`Cache::get_or_compute`], so that a page is rendered once
//! however many requests miss it at the same moment.
//!
//! ```no_run
//! # fn demo() -> redis_patterns::Result<()> {
//! use redis_patterns::page_cache::PageCache;
//! use redis_patterns::web_session::WebSessions;
//!
//! let mut con = redis::Client::open("redis://127.0.0.1/")?.get_connection()?;
//! let pages = PageCache::new(&WebSessions::new("web")?);
//! let page: String = pages.cache_request(&mut con, "http://shop/view?item=10086", |request| {
//!     Ok::<_, redis_patterns::Error>(format!("<html>{request}</html>"))
//! })?;
//! # Ok(()) }
//! ```
//!
//! | Book | Here | Wire |
//! |---|---|---|
//! | `cache_request(conn, request, callback)` | [`PageCache::cache_request(con, request, callback)`](PageCache::cache_request) | `ZRANK`, then `GET`; on a miss, scripts `cache/claim` and `cache/fill` |
//! | `can_cache(conn, request)` | [`can_cache(con, request)`](PageCache::can_cache) | `ZRANK` on the view counts of [`WebSessions`] |
//! | `extract_item_id`, `is_dynamic` | [`item_of(request)`](PageCache::item_of) | none |
//! | `hash_request(request)` | [`request_key(request)`](PageCache::request_key): `cache:` and the SHA-1 of the request | none |
//!
//! What differs from the book, and why:
//!
//! - **Every process finds the same cache entry.** The book's `hash_request` is Python's
//!   `hash()`, which is randomised per process since Python 3.3: each web server has a
//!   cache of its own, and nothing is shared. Here the key is the SHA-1 of the request
//!   (hex), the same in every process and language (`hashlib.sha1`, `redis.sha1hex`).
//! - **A miss renders the page once.** The book's `GET`, render, `SETEX` lets every
//!   request that misses render the page (a stampede on a popular page, the very pages
//!   that are cached). Here [`Cache::get_or_compute`] lets one render while the others
//!   wait for its result.
//! - **The book's `SETEX` arguments are in redis-py 2's order** (`setex(name, value,
//!   time)`), which redis-py 3 reads as a value of 300 and an expiry of the page's
//!   length; the ttl here is a `Duration` (300 s by default).
//! - A request can be cached when it names an item (`?item=…`), is not dynamic (no
//!   `_=…`), and the item is among the 10,000 most viewed, as in the book.
//! - **Items are bytes**, as in [`WebSessions`]: [`item_of`](PageCache::item_of) returns
//!   the item's exact bytes (`?item=%FF%00a` is the item `b"\xff\x00a"`, not text with a
//!   replacement character), and [`is_popular`](PageCache::is_popular) takes any
//!   [`ToRedisArgs`] value. Pages are any value too (`String`, `Vec<u8>`, …). The request
//!   itself is a URL, so it is text.
//!
//! Keys: the view counts are those of a [`WebSessions`] namespace (one slot); each page is
//! a key of its own (`cache:<sha1>`), so pages spread over a cluster's shards. Checking the
//! rank and reading the page are two round trips, as in the book: they are on different
//! shards.

use std::time::Duration;

use redis::{FromRedisValue, ToRedisArgs};

use crate::cache::{Cache, ComputeOptions};
use crate::runtime::error::{Error, Result};
use crate::runtime::input;
use crate::runtime::op::Op;
use crate::web_session::WebSessions;

/// The book's page ttl: 300 s.
pub const DEFAULT_TTL: Duration = Duration::from_secs(300);
/// The book's bar for caching: the 10,000 most viewed items.
pub const DEFAULT_TOP: u64 = 10_000;

/// A cache of rendered pages, for the most viewed items. See the [module docs](self).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PageCache {
    cache: Cache,
    views: String,
    top: u64,
    ttl: Duration,
    prefix: String,
}

impl PageCache {
    /// Pages of the items most viewed in `sessions` (its view counts), cached for 300 s
    /// under `cache:<sha1>` when the item is among the 10,000 most viewed, as the book.
    pub fn new(sessions: &WebSessions) -> Self {
        PageCache {
            cache: Cache::new(),
            views: sessions.views_key().to_owned(),
            top: DEFAULT_TOP,
            ttl: DEFAULT_TTL,
            prefix: "cache:".to_owned(),
        }
    }

    /// Caches each page for `ttl` (whole ms, from 1 ms to 10^15 − 1 ms).
    pub fn with_ttl(mut self, ttl: Duration) -> Result<Self> {
        input::ttl_ms(ttl)?;
        self.ttl = ttl;
        Ok(self)
    }

    /// Caches the pages of the `top` (at least 1) most viewed items.
    pub fn with_top(mut self, top: u64) -> Result<Self> {
        if top == 0 {
            return Err(Error::invalid("top", "must be at least 1"));
        }
        self.top = top;
        Ok(self)
    }

    /// Starts each page's key with `prefix` (`cache:` by default); it may be empty.
    pub fn with_prefix(mut self, prefix: impl Into<String>) -> Self {
        self.prefix = prefix.into();
        self
    }

    /// How a request waits while another renders the page it missed
    /// ([`ComputeOptions`]).
    pub fn with_options(mut self, options: ComputeOptions) -> Result<Self> {
        self.cache = Cache::with_options(options)?;
        Ok(self)
    }

    /// The key of `request`'s page: the prefix, then the SHA-1 of the request in hex.
    ///
    /// ```
    /// use redis_patterns::page_cache::PageCache;
    /// use redis_patterns::web_session::WebSessions;
    ///
    /// let pages = PageCache::new(&WebSessions::new("web")?);
    /// assert_eq!(pages.request_key("abc"), "cache:a9993e364706816aba3e25717850c26c9cd0d89d");
    /// # Ok::<(), redis_patterns::Error>(())
    /// ```
    pub fn request_key(&self, request: &str) -> String {
        format!("{}{}", self.prefix, sha1_smol::Sha1::from(request).digest())
    }

    /// The item a request views (its `item` query parameter), as bytes, or `None` when
    /// it names none or is dynamic (it has a `_` parameter): the book's `extract_item_id`
    /// and `is_dynamic`. Parameters are decoded as forms are (`+` is a space, `%XX` a
    /// byte, kept as it is even when the result is not UTF-8), and, as Python's
    /// `parse_qs`, one with an empty value counts as absent.
    ///
    /// ```
    /// use redis_patterns::page_cache::PageCache;
    ///
    /// assert_eq!(PageCache::item_of("http://shop/view?item=10086").as_deref(), Some(&b"10086"[..]));
    /// assert_eq!(PageCache::item_of("/view?item=a%20b&ref=mail").as_deref(), Some(&b"a b"[..]));
    /// assert_eq!(PageCache::item_of("/view?item=%FF%00a").as_deref(), Some(&b"\xff\x00a"[..]));
    /// assert_eq!(PageCache::item_of("/view?item=10086&_=1700000000"), None);
    /// assert_eq!(PageCache::item_of("/view"), None);
    /// ```
    pub fn item_of(request: &str) -> Option<Vec<u8>> {
        let query = request.split_once('?')?.1;
        let query = query.split('#').next().unwrap_or("");
        let mut item = None;
        for pair in query.split('&') {
            let (name, value) = pair.split_once('=').unwrap_or((pair, ""));
            let (name, value) = (form_decoded(name), form_decoded(value));
            if value.is_empty() {
                continue;
            }
            match name.as_slice() {
                b"_" => return None,
                b"item" if item.is_none() => item = Some(value),
                _ => {}
            }
        }
        item
    }

    /// Whether `item` (any bytes, not empty) is among the `top` most viewed (`ZRANK`).
    pub fn is_popular<I: ToRedisArgs>(&self, item: I) -> Op<bool> {
        let top = self.top;
        Op::try_build(|| {
            let item = input::non_empty_value("item", &item)?;
            let mut cmd = redis::cmd("ZRANK");
            cmd.arg(&self.views).arg(item);
            Ok(Op::native(cmd).map(move |rank: Option<u64>| Ok(rank.is_some_and(|r| r < top))))
        })
    }

    /// Whether `request`'s page may be cached: it views an item
    /// ([`item_of`](Self::item_of)) that [`is_popular`](Self::is_popular). A request that
    /// names no item is answered without a round trip.
    pub fn can_cache(&self, con: &mut dyn redis::ConnectionLike, request: &str) -> Result<bool> {
        match Self::item_of(request) {
            Some(item) => self.is_popular(&item).run(con),
            None => Ok(false),
        }
    }

    /// [`can_cache`](Self::can_cache) on an async connection.
    #[cfg(feature = "aio")]
    pub async fn can_cache_async<C: redis::aio::ConnectionLike>(
        &self,
        con: &mut C,
        request: &str,
    ) -> Result<bool> {
        match Self::item_of(request) {
            Some(item) => self.is_popular(&item).run_async(con).await,
            None => Ok(false),
        }
    }

    /// The page for `request`: when it [`can_cache`](Self::can_cache), from the cache,
    /// rendered by `callback` on a miss (once, however many requests miss together) and
    /// kept for the ttl; otherwise `callback`'s page, uncached. A hit is two round trips
    /// (`ZRANK`, `GET`).
    pub fn cache_request<T, E>(
        &self,
        con: &mut dyn redis::ConnectionLike,
        request: &str,
        callback: impl FnOnce(&str) -> std::result::Result<T, E>,
    ) -> std::result::Result<T, E>
    where
        T: ToRedisArgs + FromRedisValue + 'static,
        E: From<Error>,
    {
        if !self.can_cache(con, request)? {
            return callback(request);
        }
        let key = self.request_key(request);
        self.cache
            .get_or_compute(con, &key, Some(self.ttl), || callback(request))
    }

    /// [`cache_request`](Self::cache_request) on an async connection, with an async
    /// `callback`.
    #[cfg(feature = "aio")]
    pub async fn cache_request_async<T, C, F, Fut, E>(
        &self,
        con: &mut C,
        request: &str,
        callback: F,
    ) -> std::result::Result<T, E>
    where
        T: ToRedisArgs + FromRedisValue + 'static,
        C: redis::aio::ConnectionLike,
        F: FnOnce(String) -> Fut,
        Fut: std::future::Future<Output = std::result::Result<T, E>>,
        E: From<Error>,
    {
        if !self.can_cache_async(con, request).await? {
            return callback(request.to_owned()).await;
        }
        let key = self.request_key(request);
        self.cache
            .get_or_compute_async(con, &key, Some(self.ttl), || callback(request.to_owned()))
            .await
    }
}

/// A query string's name or value as a form encodes it: `+` is a space, `%XX` a byte
/// (a malformed escape stays as it is); the bytes are kept as they are, UTF-8 or not.
fn form_decoded(s: &str) -> Vec<u8> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < bytes.len() => match (hex(bytes[i + 1]), hex(bytes[i + 2])) {
                (Some(high), Some(low)) => {
                    out.push(high << 4 | low);
                    i += 2;
                }
                _ => out.push(b'%'),
            },
            b => out.push(b),
        }
        i += 1;
    }
    out
}

fn hex(digit: u8) -> Option<u8> {
    (digit as char).to_digit(16).map(|d| d as u8)
}
