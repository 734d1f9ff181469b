//! Short links: 《Redis 应用实例》 chapter 20 (`UrlShorty`, `UrlShortyWithCache`,
//! `base62`), plus custom slugs, links that expire or allow a number of visits, and visit
//! counts.
//!
//! ```no_run
//! # fn demo() -> redis_patterns::Result<()> {
//! use std::time::Duration;
//! use redis_patterns::short_url::{LinkOptions, UrlShorty};
//!
//! let mut con = redis::Client::open("redis://127.0.0.1/")?.get_connection()?;
//! let shorty = UrlShorty::new();
//! let id = shorty.shorten("https://redis.io/docs/").run(&mut con)?;
//! assert_eq!(shorty.restore(&id).run(&mut con)?.as_deref(), Some("https://redis.io/docs/"));
//!
//! // A vanity link that works for a week, for 1000 visits at most.
//! let week = LinkOptions::new().ttl(Duration::from_secs(7 * 86_400)).max_visits(1000);
//! if shorty.claim("spring-sale", "https://shop.example/sale", week).run(&mut con)? {
//!     // The redirect endpoint:
//!     let target = shorty.visit("spring-sale").run(&mut con)?; // Some(url), counted
//!     println!("{:?}, visited {} times", target, shorty.visits("spring-sale").run(&mut con)?);
//! }
//! # Ok(()) }
//! ```
//!
//! A shortener named `name` (the book's is `UrlShorty`) keeps, in `name`'s hash slot:
//!
//! | Key | Type | Holds |
//! |---|---|---|
//! | `{name}:id_counter` | string | the last number handed out |
//! | `{name}:mapping_hash` | hash | short id → URL |
//! | `{name}:mapping_cache` | hash | URL → short id, for [`shorten_cached`](UrlShorty::shorten_cached) |
//! | `{name}:expiries` | zset | short id → when the link expires (ms, server clock) |
//! | `{name}:limits` | hash | short id → the most visits the link allows |
//! | `{name}:visits` | hash | short id → visits so far |
//!
//! A short id is the [`base62`] of a number from the counter (`1`, `2`, … `Z`, `10`, …),
//! or a custom slug ([`claim`](UrlShorty::claim)).
//!
//! | Book | Here | Wire |
//! |---|---|---|
//! | `base62(n)` | [`base62(n)`](base62) (and the same function in the scripts) | none |
//! | `UrlShorty(client)` | [`UrlShorty::new()`](UrlShorty::new), or [`with_name`](UrlShorty::with_name) | none |
//! | `shorten(url)` → id | [`shorten(url)`](UrlShorty::shorten) → `String`; [`shorten_with`](UrlShorty::shorten_with) for an expiry or a visit limit | script `short_url/shorten` |
//! | `restore(short_id)` → url or `None` | [`restore(id)`](UrlShorty::restore) → `Option<String>` | script `short_url/restore` (read-only) |
//! | `UrlShortyWithCache(client)` | [`UrlShortyWithCache::new()`](UrlShortyWithCache::new) | none |
//! | `UrlShortyWithCache.shorten(url)` | [`UrlShortyWithCache::shorten`], the same as [`UrlShorty::shorten_cached`] | script `short_url/shorten_cached` |
//! | (none) | [`claim(slug, url, options)`](UrlShorty::claim) → `bool` | script `short_url/claim` |
//! | (none) | [`visit(id)`](UrlShorty::visit) → `Option<String>`, counted; [`visits(id)`](UrlShorty::visits) | script `short_url/visit`; `HGET` |
//! | (none) | [`purge(limit)`](UrlShorty::purge) | script `short_url/purge` |
//!
//! What differs from the book, and why:
//!
//! - **One step each.** The book's `shorten` sends `INCRBY`, then `HSET`; its cached
//!   version checks the cache, then creates an id, in four round trips, so two clients
//!   shortening the same URL at once both miss and get two ids. Here each is one script:
//!   a URL gets exactly one id from [`shorten_cached`](UrlShorty::shorten_cached),
//!   however many clients ask at once.
//! - **Custom slugs never collide with numbered ids.** A slug made of base62 digits
//!   (`sale`) is also the id of some number; when the counter reaches it, `shorten` skips
//!   it (up to 1000 in a row per call; past that it answers `IDS_TAKEN` and has moved the
//!   counter on, so the next call goes on).
//! - **Links may expire or run out of visits**, and [`visit`](UrlShorty::visit), the
//!   call a redirect endpoint makes, enforces both on the server's clock and counts the
//!   visit in the same step. [`restore`](UrlShorty::restore), the book's read, answers
//!   `None` for such a link too, and counts nothing. An expired link is deleted when it
//!   is visited, or by [`purge`](UrlShorty::purge) (bounded); a used-up link stays, so its
//!   count can be read.
//! - **The cache follows the links**: a URL whose cached id no longer leads to it (the
//!   link expired and was purged) gets a new id.
//! - The counter is checked: a counter key that holds something other than a count from
//!   0 to 2^53 − 1 in the one form of integers (`7`, not `007`) is refused with
//!   `BAD_COUNTER` before anything is written. Ids are the numbers 1 to 2^53 − 1 (the
//!   largest is `FfGNdXsE7` in base 62), all exact in Lua's numbers; past the last one
//!   `shorten` answers `BAD_COUNTER`.

use std::time::Duration;

use crate::runtime::error::{Error, Result};
use crate::runtime::input;
use crate::runtime::op::Op;
use crate::scripts::short_url as script;

/// The book's base62 digits: `0-9`, then `a-z`, then `A-Z`.
const DIGITS: &[u8; 62] = b"0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";

/// `n` in base 62 with the book's digits (`0-9a-zA-Z`), as the scripts write ids.
///
/// ```
/// use redis_patterns::short_url::base62;
///
/// assert_eq!(base62(0), "0");
/// assert_eq!(base62(61), "Z");
/// assert_eq!(base62(62), "10");
/// assert_eq!(base62(10086), "2CG");
/// ```
pub fn base62(mut n: u64) -> String {
    let mut digits = Vec::new();
    loop {
        digits.push(DIGITS[(n % 62) as usize]);
        n /= 62;
        if n == 0 {
            break;
        }
    }
    digits.reverse();
    String::from_utf8(digits).expect("ASCII digits")
}

/// The longest custom slug, in characters.
pub const MAX_SLUG_LEN: usize = 64;

/// What a link allows: how long it lives and how many visits. The default is forever,
/// with no limit.
///
/// ```
/// use std::time::Duration;
/// use redis_patterns::short_url::LinkOptions;
///
/// let one_shot = LinkOptions::new().max_visits(1).ttl(Duration::from_secs(600));
/// # let _ = one_shot;
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LinkOptions {
    ttl: Option<Duration>,
    max_visits: Option<u64>,
}

impl LinkOptions {
    /// Forever, with no visit limit.
    pub fn new() -> Self {
        LinkOptions::default()
    }

    /// The link expires `ttl` after it is made (whole milliseconds, 1 ms to 10^15 - 1 ms;
    /// checked when the call is built).
    pub fn ttl(mut self, ttl: Duration) -> Self {
        self.ttl = Some(ttl);
        self
    }

    /// The link allows at most `visits` [`visit`](UrlShorty::visit)s (1 to 10^15 - 1).
    pub fn max_visits(mut self, visits: u64) -> Self {
        self.max_visits = Some(visits);
        self
    }
}

/// A URL shortener: the book's `UrlShorty`, with custom slugs, expiring and
/// visit-limited links, and visit counts. See the [module docs](self).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UrlShorty {
    name: String,
    counter: String,
    links: String,
    cache: String,
    expiries: String,
    limits: String,
    visits: String,
}

impl Default for UrlShorty {
    fn default() -> Self {
        UrlShorty::new()
    }
}

impl UrlShorty {
    /// The book's shortener, named `UrlShorty`: keys `{UrlShorty}:id_counter`,
    /// `{UrlShorty}:mapping_hash`, ….
    pub fn new() -> Self {
        UrlShorty::with_name("UrlShorty").expect("a valid name")
    }

    /// A shortener named `name`, with its keys `{name}:id_counter`, `{name}:mapping_hash`,
    /// `{name}:mapping_cache`, `{name}:expiries`, `{name}:limits` and `{name}:visits`.
    ///
    /// An empty `name`, or one with a `}` but no hash tag, is [`Error::InvalidInput`].
    pub fn with_name(name: impl Into<String>) -> Result<Self> {
        let name = name.into();
        use script::keys;
        Ok(UrlShorty {
            counter: keys::counter(&name)?,
            links: keys::links(&name)?,
            cache: keys::cache(&name)?,
            expiries: keys::expiries(&name)?,
            limits: keys::limits(&name)?,
            visits: keys::visits(&name)?,
            name,
        })
    }

    /// The shortener's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Its keys: the counter, the links (id → URL), the cache (URL → id), the expiries,
    /// the visit limits and the visit counts.
    pub fn keys(&self) -> [&str; 6] {
        [
            &self.counter,
            &self.links,
            &self.cache,
            &self.expiries,
            &self.limits,
            &self.visits,
        ]
    }

    /// A new short id for `url`: the base62 of the next number (the book's `shorten`;
    /// each call gives a new id, even for a URL shortened before). One script
    /// (`short_url/shorten`).
    pub fn shorten(&self, url: &str) -> Op<String> {
        self.shorten_with(url, LinkOptions::new())
    }

    /// [`shorten`](Self::shorten) with an expiry or a visit limit.
    pub fn shorten_with(&self, url: &str, options: LinkOptions) -> Op<String> {
        script::shorten(
            &self.counter,
            &self.links,
            &self.expiries,
            &self.limits,
            url,
            options.ttl,
            options.max_visits,
        )
    }

    /// The short id of `url`: the one it has, or a new one (the book's
    /// `UrlShortyWithCache.shorten`). A URL gets one id however many clients shorten it at
    /// once. One script (`short_url/shorten_cached`).
    pub fn shorten_cached(&self, url: &str) -> Op<String> {
        script::shorten_cached(&self.counter, &self.links, &self.cache, url)
    }

    /// Makes `slug` lead to `url`, unless a live link holds it: true if it does now. A
    /// slug is 1 to [`MAX_SLUG_LEN`] characters of `0-9a-zA-Z`, `-` and `_`; anything else
    /// is [`Error::InvalidInput`]. A slug whose link expired or is used up is free again.
    /// One script (`short_url/claim`).
    pub fn claim(&self, slug: &str, url: &str, options: LinkOptions) -> Op<bool> {
        Op::try_build(|| {
            let fits = (1..=MAX_SLUG_LEN).contains(&slug.len())
                && slug
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
            if !fits {
                let shown: String = slug.chars().take(32).collect();
                return Err(Error::invalid(
                    "slug",
                    format!(
                        "must be 1 to {MAX_SLUG_LEN} characters of 0-9, a-z, A-Z, `-` and `_`, got {shown:?}"
                    ),
                ));
            }
            Ok(script::claim(
                &self.links,
                &self.expiries,
                &self.limits,
                &self.visits,
                slug,
                url,
                options.ttl,
                options.max_visits,
            ))
        })
    }

    /// The URL of `id`, without counting a visit (the book's `restore`); `None` when
    /// there is no such link, or it has expired or is used up. One read-only script
    /// (`short_url/restore`).
    pub fn restore(&self, id: &str) -> Op<Option<String>> {
        script::restore(&self.links, &self.expiries, &self.limits, &self.visits, id)
    }

    /// Follows `id` as a redirect does: its URL, with the visit counted; `None` when there
    /// is no such link, or it has expired or is used up (the visit that uses up the last
    /// one allowed still gets the URL). An expired link is deleted. One script
    /// (`short_url/visit`).
    pub fn visit(&self, id: &str) -> Op<Option<String>> {
        script::visit(&self.links, &self.expiries, &self.limits, &self.visits, id)
    }

    /// How many times `id` was visited ([`visit`](Self::visit)); 0 for a link never
    /// visited or gone (`HGET`).
    pub fn visits(&self, id: &str) -> Op<u64> {
        Op::try_build(|| {
            input::check_param(&script::VISIT.args[0], id)?;
            let mut cmd = redis::cmd("HGET");
            cmd.arg(&self.visits).arg(id);
            Ok(Op::<Option<u64>>::native(cmd).map(|n| Ok(n.unwrap_or(0))))
        })
    }

    /// Deletes up to `limit` (1 to 100) expired links with their counts; how many. An
    /// expired link is also deleted when it is visited; call this now and then for the
    /// ones nobody visits. One script (`short_url/purge`).
    pub fn purge(&self, limit: u64) -> Op<u64> {
        script::purge(
            &self.links,
            &self.cache,
            &self.expiries,
            &self.limits,
            &self.visits,
            limit,
        )
    }
}

/// The book's `UrlShortyWithCache`: a [`UrlShorty`] whose `shorten` gives a URL the id it
/// already has.
///
/// ```no_run
/// # fn demo() -> redis_patterns::Result<()> {
/// use redis_patterns::short_url::UrlShortyWithCache;
///
/// let mut con = redis::Client::open("redis://127.0.0.1/")?.get_connection()?;
/// let shorty = UrlShortyWithCache::new();
/// let a = shorty.shorten("https://redis.io/").run(&mut con)?;
/// let b = shorty.shorten("https://redis.io/").run(&mut con)?;
/// assert_eq!(a, b);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct UrlShortyWithCache {
    shorty: UrlShorty,
}

impl UrlShortyWithCache {
    /// The book's shortener with a cache, on the keys of [`UrlShorty::new`].
    pub fn new() -> Self {
        UrlShortyWithCache {
            shorty: UrlShorty::new(),
        }
    }

    /// The same, on the keys of [`UrlShorty::with_name`].
    pub fn with_name(name: impl Into<String>) -> Result<Self> {
        Ok(UrlShortyWithCache {
            shorty: UrlShorty::with_name(name)?,
        })
    }

    /// The short id of `url`: see [`UrlShorty::shorten_cached`].
    pub fn shorten(&self, url: &str) -> Op<String> {
        self.shorty.shorten_cached(url)
    }

    /// The URL of `id`: see [`UrlShorty::restore`].
    pub fn restore(&self, id: &str) -> Op<Option<String>> {
        self.shorty.restore(id)
    }

    /// The shortener underneath, for the calls beyond the book.
    pub fn shorty(&self) -> &UrlShorty {
        &self.shorty
    }
}
