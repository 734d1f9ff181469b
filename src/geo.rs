//! Places and "shake": 《Redis 应用实例》 chapter 25 (`Location`), with pins that expire
//! ("last seen") and a neighbour cache that is built once per miss.
//!
//! ```no_run
//! # fn demo() -> redis_patterns::Result<()> {
//! use std::time::Duration;
//! use redis_patterns::geo::Location;
//!
//! let mut con = redis::Client::open("redis://127.0.0.1/")?.get_connection()?;
//! let places = Location::new("places")?;
//! places.pin("peter", 113.2099647, 23.593675).run(&mut con)?;
//! places.pin("jack", 113.2099100, 23.593600).run(&mut con)?;
//! // Seen a minute ago: gone from every answer after 5 minutes.
//! places.pin_for("tom", 113.2098, 23.5935, Duration::from_secs(300)).run(&mut con)?;
//!
//! for (who, km) in places.search("peter", 1.0, 10).run(&mut con)? {
//!     println!("{who} is {km:.3} km away");
//! }
//! let shake = places.cached_random_neighbour("peter", 10).run(&mut con)?;
//! # Ok(()) }
//! ```
//!
//! A [`Location`] keeps members (user ids) in a geo set at the key you name, as the book
//! does, and beside it, in the key's hash slot, `{key}:deadlines` (member → when its pin
//! expires, ms of the server's clock) and a neighbour cache per member,
//! `{key}:neighbours:<member>`. Distances are in km, as in the book.
//!
//! | Book | Here | Wire |
//! |---|---|---|
//! | `Location(client, key)` | [`Location::new(key)`](Location::new) → `Result` | none |
//! | `pin(user, long, lati)` | [`pin(user, lon, lat)`](Location::pin); [`pin_for(…, ttl)`](Location::pin_for) for a pin that expires | script `geo/pin` |
//! | `locate(user)` → `(lon, lat)` or `None` | [`locate(user)`](Location::locate) → `Option<(f64, f64)>` | script `geo/locate` (read-only) |
//! | `distance(x, y)` → km or `None` | [`distance(x, y)`](Location::distance) → `Option<f64>` | script `geo/distance` (read-only) |
//! | `size()` | [`size()`](Location::size) | script `geo/size` (read-only) |
//! | `search(user, radius, limit=10)` | [`search(user, radius_km, limit)`](Location::search) → `Vec<(member, km)>` | script `geo/search` (read-only) |
//! | `random_neighbour(user, limit=10)` | [`random_neighbour(user, limit)`](Location::random_neighbour) → `Option<String>` | script `geo/search` |
//! | `cached_random_neighbour(user, limit=10)` | [`cached_random_neighbour(user, limit)`](Location::cached_random_neighbour) → `Option<String>` | script `geo/neighbours` |
//! | (none) | [`purge(limit)`](Location::purge) | script `geo/purge` |
//!
//! What differs from the book, and why:
//!
//! - **The member never takes a place in `limit`.** The book asks GEOSEARCH for `limit`
//!   members and removes the member from the answer, so it gets `limit - 1` neighbours.
//!   Here it gets up to `limit`, nearest first, each with its distance.
//! - **An unknown member is an answer, not a crash.** The book's search fails with
//!   Redis's "could not decode requested zset member" (and then a Python `ValueError`);
//!   here it fails with the script's code [`UNKNOWN_MEMBER`]
//!   (`err.code() == Some(UNKNOWN_MEMBER)`).
//! - **The neighbour cache is built once per miss, and caches "no neighbours" too.** The
//!   book reads the cache and builds it in a separate transaction, so clients that miss
//!   at once all build it; and a member with no neighbours leaves an empty set, which
//!   Redis deletes, so every call for it searches again. Here the read and the build are
//!   one script, and a lonely member's empty answer is cached like any other (for 60 s,
//!   or [`with_cache_ttl`](Location::with_cache_ttl)).
//! - **Pins may expire** (beyond the book; what users of every geo library ask for): a
//!   pin made with [`pin_for`](Location::pin_for) lasts `ttl`. Every read leaves out an
//!   expired pin at once; the pins themselves are deleted in bounded steps (up to 10 with
//!   each pin, up to `limit` with [`purge`](Location::purge)). A pin with no ttl lasts
//!   until the member is pinned again.
//!
//! All of a location's keys are in one hash slot (its key's), so every call works on a
//! cluster; one location is one slot.
//!
//! A search's cost grows with the members in the searched area, as GEOSEARCH's does
//! (it looks at each, then sorts): with 10,000 members within 1 km and `limit` 100, one
//! search takes about 5 ms of server time (`cargo bench --bench worst_case`). `limit` is
//! at most 100, and expired pins not yet purged cost one lookup each.

use std::time::Duration;

use crate::runtime::error::{Error, Result};
use crate::runtime::input;
use crate::runtime::op::Op;
use crate::runtime::token;
use crate::scripts::geo as script;

/// The code of the error [`search`](Location::search), [`random_neighbour`](Location::random_neighbour)
/// and [`cached_random_neighbour`](Location::cached_random_neighbour) fail with when the
/// member is not pinned (or its pin expired).
pub const UNKNOWN_MEMBER: &str = "UNKNOWN_MEMBER";

/// The radius of [`random_neighbour`](Location::random_neighbour) and of the cache, in
/// km, as in the book.
pub const NEIGHBOUR_RADIUS_KM: f64 = 1.0;

/// How long the neighbour cache lasts unless set with
/// [`with_cache_ttl`](Location::with_cache_ttl): 60 s, as in the book.
pub const DEFAULT_CACHE_TTL: Duration = Duration::from_secs(60);

/// The largest radius: half the Earth's circumference, in km.
pub const MAX_RADIUS_KM: f64 = 20_037.5;

/// Members on a map: a geo set at `key`, pins that may expire, and a neighbour cache per
/// member. See the [module docs](self).
#[derive(Debug, Clone, PartialEq)]
pub struct Location {
    key: String,
    deadlines: String,
    cache_ttl: Duration,
}

impl Location {
    /// The geo set at `key` (the book's key), with `{key}:deadlines` beside it.
    ///
    /// An empty key, or one with a `}` but no hash tag, is [`Error::InvalidInput`].
    pub fn new(key: impl Into<String>) -> Result<Self> {
        let key = key.into();
        let deadlines = script::keys::deadlines(&key)?;
        Ok(Location {
            deadlines,
            key: script::keys::places(&key)?,
            cache_ttl: DEFAULT_CACHE_TTL,
        })
    }

    /// How long a member's neighbour cache lasts (whole milliseconds, 1 ms to 10^15 - 1
    /// ms).
    pub fn with_cache_ttl(mut self, ttl: Duration) -> Result<Self> {
        input::check_param(&script::NEIGHBOURS.args[2], ttl)?;
        self.cache_ttl = ttl;
        Ok(self)
    }

    /// The geo set's key.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// The key of the pins' deadlines, `{key}:deadlines`.
    pub fn deadlines_key(&self) -> &str {
        &self.deadlines
    }

    /// The key of `member`'s neighbour cache, `{key}:neighbours:<member>`. An empty
    /// member, which no script takes, is [`Error::InvalidInput`].
    pub fn cache_key(&self, member: &str) -> Result<String> {
        script::keys::cache(&self.key, member)
    }

    /// Pins `member` at `longitude`, `latitude` (degrees), for ever (until pinned again).
    /// One script (`geo/pin`).
    pub fn pin(&self, member: &str, longitude: f64, latitude: f64) -> Op<()> {
        self.pin_with(member, longitude, latitude, None)
    }

    /// Pins `member` for `ttl` only: once it has passed, every read leaves the member out.
    /// One script (`geo/pin`).
    pub fn pin_for(&self, member: &str, longitude: f64, latitude: f64, ttl: Duration) -> Op<()> {
        self.pin_with(member, longitude, latitude, Some(ttl))
    }

    fn pin_with(
        &self,
        member: &str,
        longitude: f64,
        latitude: f64,
        ttl: Option<Duration>,
    ) -> Op<()> {
        Op::try_build(|| {
            within("longitude", longitude, -180.0, 180.0)?;
            within("latitude", latitude, -85.051_128_78, 85.051_128_78)?;
            Ok(script::pin(
                &self.key,
                &self.deadlines,
                member,
                longitude,
                latitude,
                ttl,
            ))
        })
    }

    /// Where `member` is: `(longitude, latitude)`, or `None` when it is not pinned. One
    /// read-only script (`geo/locate`).
    pub fn locate(&self, member: &str) -> Op<Option<(f64, f64)>> {
        script::locate(&self.key, &self.deadlines, member).map(|(lon, lat)| Ok(lon.zip(lat)))
    }

    /// The distance between `x` and `y` in km, or `None` when either is not pinned. One
    /// read-only script (`geo/distance`).
    pub fn distance(&self, x: &str, y: &str) -> Op<Option<f64>> {
        script::distance(&self.key, &self.deadlines, x, y)
    }

    /// How many members are pinned, leaving out expired pins. One read-only script
    /// (`geo/size`).
    pub fn size(&self) -> Op<u64> {
        script::size(&self.key, &self.deadlines)
    }

    /// Up to `limit` (1 to 100) members within `radius_km` of `member` (more than 0, at
    /// most [`MAX_RADIUS_KM`]), nearest first, with their distance in km; `member` itself
    /// never takes a place. Fails with [`UNKNOWN_MEMBER`] when `member` is not pinned. One
    /// read-only script (`geo/search`).
    pub fn search(&self, member: &str, radius_km: f64, limit: u64) -> Op<Vec<(String, f64)>> {
        Op::try_build(|| {
            if !(radius_km > 0.0 && radius_km <= MAX_RADIUS_KM) {
                return Err(Error::invalid(
                    "radius",
                    format!(
                        "must be a number of km above 0 and at most {MAX_RADIUS_KM}, got {radius_km}"
                    ),
                ));
            }
            Ok(script::search(
                &self.key,
                &self.deadlines,
                member,
                radius_km,
                limit,
            ))
        })
    }

    /// A member picked at random among the `limit` nearest within 1 km of `member`, or
    /// `None` when there is none (the book's `random_neighbour`). Fails with
    /// [`UNKNOWN_MEMBER`] when `member` is not pinned. One read-only script
    /// (`geo/search`); the pick is made here.
    pub fn random_neighbour(&self, member: &str, limit: u64) -> Op<Option<String>> {
        self.search(member, NEIGHBOUR_RADIUS_KM, limit)
            .map(|mut found| {
                if found.is_empty() {
                    return Ok(None);
                }
                let pick = token::below(found.len());
                Ok(Some(found.swap_remove(pick).0))
            })
    }

    /// A member picked at random from `member`'s cached neighbours: the `limit` (1 to 100)
    /// nearest within 1 km, cached for 60 s (or [`with_cache_ttl`](Self::with_cache_ttl)) in
    /// `{key}:neighbours:<member>`. `None` when there is none; that answer is cached too.
    /// A miss is computed once, however many clients miss at once. Fails with
    /// [`UNKNOWN_MEMBER`] when `member` is not pinned and nothing is cached. One script
    /// (`geo/neighbours`).
    pub fn cached_random_neighbour(&self, member: &str, limit: u64) -> Op<Option<String>> {
        Op::try_build(|| {
            let cache = self.cache_key(member)?;
            Ok(script::neighbours(
                &self.key,
                &self.deadlines,
                &cache,
                member,
                limit,
                self.cache_ttl,
            ))
        })
    }

    /// Deletes up to `limit` (1 to 1000) members whose pin expired; how many. One script
    /// (`geo/purge`).
    pub fn purge(&self, limit: u64) -> Op<u64> {
        script::purge(&self.key, &self.deadlines, limit)
    }
}

/// A coordinate within its range (GEOADD's), checked before any I/O.
fn within(what: &'static str, value: f64, min: f64, max: f64) -> Result<()> {
    if (min..=max).contains(&value) {
        Ok(())
    } else {
        Err(Error::invalid(
            what,
            format!("must be degrees from {min} to {max}, got {value}"),
        ))
    }
}
