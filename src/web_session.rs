//! Login tokens, carts and view analytics of a web shop: Redis in Action chapter 2
//! (`check_token`, `update_token`, `add_to_cart`, `clean_sessions`,
//! `clean_full_sessions`, `rescale_viewed`), each request one atomic step, and a cleanup
//! that never logs out a user in the middle of a visit.
//!
//! ```no_run
//! # fn demo() -> redis_patterns::Result<()> {
//! use redis_patterns::web_session::WebSessions;
//!
//! let mut con = redis::Client::open("redis://127.0.0.1/")?.get_connection()?;
//! let web = WebSessions::new("web")?;
//! web.update_token("2f6a…", "peter", Some("item:10086")).run(&mut con)?;
//! let user: Option<String> = web.check_token("2f6a…").run(&mut con)?;
//! web.add_to_cart("2f6a…", "item:10086", 2).run(&mut con)?;
//! let cart: Vec<(String, u64)> = web.cart("2f6a…").run(&mut con)?;
//!
//! // Users and items are any bytes; read them back as `Vec<u8>` (or `String`).
//! web.update_token("9c1e…", &b"\xffuser"[..], None::<&str>).run(&mut con)?;
//! let user: Option<Vec<u8>> = web.check_token("9c1e…").run(&mut con)?;
//!
//! // A background job: end the oldest sessions beyond 10 million, carts included.
//! let ended = web.clean_until_limit(&mut con, true, 100)?;
//! # Ok(()) }
//! ```
//!
//! A [`WebSessions`] is a namespace of the book's keys, all in one hash slot:
//!
//! | Book key | Here | Holds |
//! |---|---|---|
//! | `login:` | `{ns}:login` | hash: token → user |
//! | `recent:` | `{ns}:recent` | zset: token → last-seen time (ms, server clock) |
//! | `viewed:<token>` | `{ns}:viewed:<token>` | zset: the token's last items viewed → when (ms) |
//! | `cart:<token>` | `{ns}:cart:<token>` | hash: item → count |
//! | `viewed:` | `{ns}:viewed` | zset: item → minus its views (rank 0 is the most viewed) |
//! | (none) | `{ns}:rescaling` | nothing between calls: where a rescale builds the halved counts |
//!
//! | Book | Here | Wire |
//! |---|---|---|
//! | `check_token(token)` → user or `None` | [`check_token(token)`](WebSessions::check_token) | `HGET` |
//! | `update_token(token, user, item=None)` (listings 2.2 and 2.9) | [`update_token(token, user, item)`](WebSessions::update_token) → last-seen ms | script `web_session/update` |
//! | `add_to_cart(session, item, count)` | [`add_to_cart(session, item, count)`](WebSessions::add_to_cart) | `HSET`, or `HDEL` for a count ≤ 0 |
//! | (the cart, read in the book's later chapters) | [`cart(session)`](WebSessions::cart) | `HGETALL` |
//! | `clean_sessions()`, a loop that never returns | [`clean_sessions(con, batch)`](WebSessions::clean_sessions): one batch; [`clean_until_limit(con, full, batch)`](WebSessions::clean_until_limit): batches until the limit holds | `ZRANGE … WITHSCORES`, then script `web_session/clean` |
//! | `clean_full_sessions()` | [`clean_full_sessions(con, batch)`](WebSessions::clean_full_sessions) | same, carts included |
//! | `rescale_viewed()`, a loop every 300 s, keeping 20,000 | [`rescale_viewed(keep)`](WebSessions::rescale_viewed): one step, keeping at most 10,000; [`rescale_viewed_fully(con, keep)`](WebSessions::rescale_viewed_fully) | script `web_session/rescale` |
//! | `can_cache`'s `ZRANK viewed: item` | [`view_rank(item)`](WebSessions::view_rank) | `ZRANK` |
//! | (the ranking itself) | [`most_viewed(n)`](WebSessions::most_viewed) → `(item, views)` | `ZRANGE … WITHSCORES` |
//!
//! What differs from the book, and why:
//!
//! - **A request is one step.** The book's `update_token` sends up to five commands in
//!   five round trips, without a transaction: a reader, or the cleaner, can find a token
//!   in `login:` and not in `recent:`. Here all the writes happen in one script.
//! - **The cleanup never ends a session that was just used.** The book reads the oldest
//!   tokens, then deletes them: a user who clicks in between is logged out and loses the
//!   cart. Here the cleaner reads the oldest tokens with their last-seen times, and the
//!   script ends only those whose time has not moved since; a token's time grows on every
//!   request (by 1 ms at least), so a refresh is always seen. It stops at the limit, so
//!   several cleaners at once never end too many. One batch is one call; the loop is
//!   yours (or [`clean_until_limit`](WebSessions::clean_until_limit)), with no sleeping
//!   thread inside the crate.
//! - **A count of 0 or less removes the item from the cart.** The book calls `conn.hrem`,
//!   which does not exist, so removing from a cart raises `AttributeError`.
//! - **Rescaling is one step**, and bounded, so it keeps 10,000 items at most (the book
//!   20,000): see [`rescale_viewed`](WebSessions::rescale_viewed).
//! - Times are the server's clock in ms (the book's are each web server's `time.time()`).
//!
//! **Users and items are binary-safe**: they are values in Redis (hash values, hash
//! fields, sorted-set members), so the methods take them as anything redis-rs sends as
//! one argument (`&str`, `String`, `&[u8]`, `Vec<u8>`, numbers: [`ToRedisArgs`]) and
//! return them as any [`FromRedisValue`] (`String`, or `Vec<u8>` for bytes that are not
//! UTF-8). Tokens stay `&str`: a token is also part of two key names (`{ns}:viewed:<token>`,
//! `{ns}:cart:<token>`), and the crate's key names are text. A request that views no item
//! passes `None::<&str>` (any `ToRedisArgs` type will do for the `None`).
//!
//! **On a cluster**, a namespace is one hash slot, so every step above stays atomic, but
//! all its sessions live on one shard. To spread them, give each shard its own namespace
//! (`web:{0}`, `web:{1}`, … chosen by a hash of the token) and run the cleanup per
//! namespace; the view counts are then per namespace too.

use redis::{FromRedisValue, ToRedisArgs, Value};

use crate::runtime::error::{Error, Result};
use crate::runtime::input;
use crate::runtime::native;
use crate::runtime::op::Op;
use crate::scripts::web_session as script;

/// The book's limit on sessions: 10 million.
pub const DEFAULT_LIMIT: u64 = 10_000_000;
/// The book's number of last items viewed kept per token: 25.
pub const DEFAULT_VIEWED_KEPT: u64 = 25;
/// The most viewed items a rescale keeps, at most: 10,000 (the book keeps 20,000; see
/// [`WebSessions::rescale_viewed`]).
pub const MAX_RESCALE_KEEP: u64 = 10_000;
/// The book's batch of sessions ended at once: 100, also the most a batch may hold.
pub const MAX_BATCH: usize = 100;

/// What one call of [`WebSessions::rescale_viewed`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rescaled {
    /// How many of the least viewed items it dropped (at most 1000 per call).
    pub dropped: u64,
    /// Whether it halved the view counts; `false`: items remain beyond `keep`, call again.
    pub halved: bool,
}

/// The login tokens, carts and view counts of one namespace. See the [module docs](self).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WebSessions {
    namespace: String,
    login: String,
    recent: String,
    views: String,
    /// Where a rescale builds the halved counts, renamed over `views` at once.
    scratch: String,
    limit: u64,
    viewed_kept: u64,
}

impl WebSessions {
    /// The namespace `namespace` (its keys are `{namespace}:…`, one hash slot), keeping
    /// 10 million sessions and each token's last 25 items viewed, as the book. An empty
    /// namespace is [`Error::InvalidInput`].
    pub fn new(namespace: impl Into<String>) -> Result<Self> {
        let namespace = namespace.into();
        use script::keys;
        Ok(WebSessions {
            login: keys::login(&namespace)?,
            recent: keys::recent(&namespace)?,
            views: keys::views(&namespace)?,
            scratch: keys::scratch(&namespace)?,
            namespace,
            limit: DEFAULT_LIMIT,
            viewed_kept: DEFAULT_VIEWED_KEPT,
        })
    }

    /// Keeps at most `limit` sessions (0 to 10^15 − 1): the cleanup ends the least
    /// recently seen beyond it.
    pub fn with_limit(mut self, limit: u64) -> Result<Self> {
        input::check_param(&script::CLEAN.args[0], Some(limit))?;
        self.limit = limit;
        Ok(self)
    }

    /// Keeps each token's last `kept` items viewed (1 to 1000).
    pub fn with_viewed_kept(mut self, kept: u64) -> Result<Self> {
        input::check_param(&script::UPDATE.args[3], Some(kept))?;
        self.viewed_kept = kept;
        Ok(self)
    }

    /// The namespace.
    pub fn namespace(&self) -> &str {
        &self.namespace
    }

    /// The key of the view counts (the book's `viewed:`), which
    /// [`PageCache`](crate::page_cache::PageCache) ranks items by.
    pub fn views_key(&self) -> &str {
        &self.views
    }

    /// The key of `token`'s last items viewed (the book's `viewed:<token>`).
    pub fn viewed_key(&self, token: &str) -> Result<String> {
        script::keys::viewed(&self.namespace, token)
    }

    /// The key of `session`'s cart (the book's `cart:<session>`): the second form of
    /// `web_session/clean`'s `sessions`.
    pub fn cart_key(&self, session: &str) -> Result<String> {
        script::keys::sessions_2(&self.namespace, session)
    }

    /// The user `token` belongs to, or `None` when it is not logged in (`HGET`).
    pub fn check_token<T: FromRedisValue + 'static>(&self, token: &str) -> Op<Option<T>> {
        Op::try_build(|| {
            let mut cmd = redis::cmd("HGET");
            cmd.arg(&self.login).arg(input::key("token", token)?);
            Ok(Op::native(cmd))
        })
    }

    /// Records a request of `user` with `token`, and the `item` it views if any, in one
    /// step: the token → user map, the token's last-seen time, its last items viewed
    /// (trimmed to the kept number) and the item's view count. Returns the token's
    /// last-seen time (ms, server clock). One script (`web_session/update`).
    ///
    /// `user` and `item` are any bytes (not empty); a request that views no item passes
    /// `None::<&str>`.
    pub fn update_token<U: ToRedisArgs, I: ToRedisArgs>(
        &self,
        token: &str,
        user: U,
        item: Option<I>,
    ) -> Op<u64> {
        Op::try_build(|| {
            let viewed = self.viewed_key(token)?;
            let user = input::value("user", &user)?;
            let item = match item {
                Some(item) => {
                    let item = input::value("item", &item)?;
                    if item.is_empty() {
                        return Err(Error::invalid(
                            "item",
                            "an item must not be empty; use None",
                        ));
                    }
                    item
                }
                None => Vec::new(),
            };
            Ok(script::update(
                &self.login,
                &self.recent,
                &viewed,
                &self.views,
                token,
                &user,
                &item,
                self.viewed_kept,
            )
            .map(|seen| Ok(seen.max(0) as u64)))
        })
    }

    /// `token`'s last items viewed, newest first (`ZREVRANGE`).
    pub fn viewed<T: FromRedisValue + 'static>(&self, token: &str) -> Op<Vec<T>> {
        Op::try_build(|| {
            let mut cmd = redis::cmd("ZREVRANGE");
            cmd.arg(self.viewed_key(token)?).arg(0).arg(-1);
            Ok(Op::native(cmd))
        })
    }

    /// How many sessions there are (`ZCARD`).
    pub fn count(&self) -> Op<u64> {
        native::one_key("ZCARD", &self.recent)
    }

    /// Sets `item`'s count in `session`'s cart, or removes the item when `count` is 0 or
    /// less (`HSET` or `HDEL`). `item` is any bytes, not empty.
    pub fn add_to_cart<I: ToRedisArgs>(&self, session: &str, item: I, count: i64) -> Op<()> {
        Op::try_build(|| {
            let key = self.cart_key(session)?;
            let item = input::non_empty_value("item", &item)?;
            let mut cmd = redis::cmd(if count <= 0 { "HDEL" } else { "HSET" });
            cmd.arg(&key).arg(item);
            if count > 0 {
                cmd.arg(count);
            }
            Ok(Op::native(cmd).map(|_: i64| Ok(())))
        })
    }

    /// `session`'s cart: each item and its count, by item (in byte order) (`HGETALL`).
    pub fn cart<T: FromRedisValue + 'static>(&self, session: &str) -> Op<Vec<(T, u64)>> {
        Op::try_build(|| {
            let mut cmd = redis::cmd("HGETALL");
            cmd.arg(self.cart_key(session)?);
            Ok(
                Op::native(cmd).map(|cart: std::collections::BTreeMap<Vec<u8>, u64>| {
                    cart.into_iter()
                        .map(|(item, count)| {
                            Ok((T::from_redis_value(Value::BulkString(item))?, count))
                        })
                        .collect()
                }),
            )
        })
    }

    /// The `batch` (1 to 100) least recently seen sessions, with their last-seen times:
    /// the first half of a cleanup step, which [`end_sessions`](Self::end_sessions)
    /// completes (`ZRANGE … WITHSCORES`).
    pub fn oldest(&self, batch: usize) -> Op<Vec<(String, u64)>> {
        Op::try_build(|| {
            let batch = checked_batch(batch)?;
            let mut cmd = redis::cmd("ZRANGE");
            cmd.arg(&self.recent)
                .arg(0)
                .arg(batch - 1)
                .arg("WITHSCORES");
            Ok(Op::native(cmd))
        })
    }

    /// Ends the sessions of `oldest` (tokens and last-seen times, as [`oldest`](Self::oldest)
    /// read them) whose time has not moved since, while more than the limit remain:
    /// deletes each one's items viewed and, with `carts`, its cart, and takes it out of
    /// both indexes. Returns the tokens ended. One script (`web_session/clean`).
    pub fn end_sessions(&self, oldest: &[(String, u64)], carts: bool) -> Op<Vec<String>> {
        Op::try_build(|| {
            checked_batch(oldest.len())?;
            let mut keys = Vec::with_capacity(oldest.len() * 2);
            let mut entries = Vec::with_capacity(oldest.len() * 2);
            for (token, seen) in oldest {
                keys.push(self.viewed_key(token)?);
                keys.push(self.cart_key(token)?);
                entries.push(token.clone());
                entries.push(seen.to_string());
            }
            let keys: Vec<&str> = keys.iter().map(String::as_str).collect();
            let entries: Vec<&str> = entries.iter().map(String::as_str).collect();
            Ok(script::clean(
                &self.login,
                &self.recent,
                &keys,
                self.limit,
                carts,
                &entries,
            ))
        })
    }

    /// One batch of the book's `clean_sessions`: ends up to `batch` (1 to 100) of the
    /// least recently seen sessions beyond the limit, with their items viewed, skipping
    /// any seen again since they were read. Carts are left, as in the book's first
    /// version; [`clean_full_sessions`](Self::clean_full_sessions) deletes them too.
    /// Returns the tokens ended. Two round trips ([`oldest`](Self::oldest), then
    /// [`end_sessions`](Self::end_sessions)); nothing is read when the limit holds.
    pub fn clean_sessions(
        &self,
        con: &mut dyn redis::ConnectionLike,
        batch: usize,
    ) -> Result<Vec<String>> {
        self.clean(con, false, batch)
    }

    /// One batch of the book's `clean_full_sessions`: [`clean_sessions`](Self::clean_sessions),
    /// carts included.
    pub fn clean_full_sessions(
        &self,
        con: &mut dyn redis::ConnectionLike,
        batch: usize,
    ) -> Result<Vec<String>> {
        self.clean(con, true, batch)
    }

    fn clean(
        &self,
        con: &mut dyn redis::ConnectionLike,
        carts: bool,
        batch: usize,
    ) -> Result<Vec<String>> {
        let batch = checked_batch(batch)?;
        let wanted = self.count().run(con)?.saturating_sub(self.limit);
        if wanted == 0 {
            return Ok(Vec::new());
        }
        let oldest = self.oldest(batch.min(wanted) as usize).run(con)?;
        if oldest.is_empty() {
            return Ok(Vec::new());
        }
        self.end_sessions(&oldest, carts).run(con)
    }

    /// Runs cleanup batches of `batch` (1 to 100) sessions, carts included when `carts`,
    /// until no more than the limit remain; returns how many sessions it ended. Each batch
    /// is atomic on its own; sessions created meanwhile may need another call.
    pub fn clean_until_limit(
        &self,
        con: &mut dyn redis::ConnectionLike,
        carts: bool,
        batch: usize,
    ) -> Result<u64> {
        let mut ended = 0;
        loop {
            let batch_ended = self.clean(con, carts, batch)?;
            if batch_ended.is_empty() {
                return Ok(ended);
            }
            ended += batch_ended.len() as u64;
        }
    }

    /// [`clean_sessions`](Self::clean_sessions) (`carts` false) or
    /// [`clean_full_sessions`](Self::clean_full_sessions) (`carts` true), on an async
    /// connection.
    #[cfg(feature = "aio")]
    pub async fn clean_sessions_async<C: redis::aio::ConnectionLike>(
        &self,
        con: &mut C,
        carts: bool,
        batch: usize,
    ) -> Result<Vec<String>> {
        let batch = checked_batch(batch)?;
        let wanted = self
            .count()
            .run_async(con)
            .await?
            .saturating_sub(self.limit);
        if wanted == 0 {
            return Ok(Vec::new());
        }
        let oldest = self
            .oldest(batch.min(wanted) as usize)
            .run_async(con)
            .await?;
        if oldest.is_empty() {
            return Ok(Vec::new());
        }
        self.end_sessions(&oldest, carts).run_async(con).await
    }

    /// One step of the book's `rescale_viewed`: keeps the `keep` (1 to 10,000) most viewed
    /// items and halves every view count, so that new items can climb. One call drops at
    /// most 1000 of the least viewed items; if more remain beyond `keep`, it does not halve
    /// and says so (call again, or use [`rescale_viewed_fully`](Self::rescale_viewed_fully)).
    /// One script (`web_session/rescale`): the book's two commands let views counted in
    /// between escape the halving.
    ///
    /// The book keeps 20,000 items. Halving rebuilds the set, and 20,000 items took 6 to
    /// 10 ms of server time on a 2-core machine, against the 10 ms any one call may take
    /// here; 10,000 take 3 to 4 ms. Items beyond `keep` still count their views between
    /// two rescales, and can climb into the kept ones.
    pub fn rescale_viewed(&self, keep: u64) -> Op<Rescaled> {
        script::rescale(&self.views, &self.scratch, keep).map(|(dropped, halved)| {
            Ok(Rescaled {
                dropped: dropped.max(0) as u64,
                halved,
            })
        })
    }

    /// Runs [`rescale_viewed`](Self::rescale_viewed) until it has halved the counts once;
    /// returns how many items it dropped in all. Run it every 5 minutes, as the book does.
    pub fn rescale_viewed_fully(
        &self,
        con: &mut dyn redis::ConnectionLike,
        keep: u64,
    ) -> Result<u64> {
        let mut dropped = 0;
        loop {
            let step = self.rescale_viewed(keep).run(con)?;
            dropped += step.dropped;
            if step.halved {
                return Ok(dropped);
            }
        }
    }

    /// The `n` (at least 1) most viewed items, most viewed first, each with its view
    /// count (halved by each rescale, so it may have a fraction) (`ZRANGE … WITHSCORES`).
    pub fn most_viewed<T: FromRedisValue + 'static>(&self, n: usize) -> Op<Vec<(T, f64)>> {
        Op::try_build(|| {
            let n = input::count("n", n)?;
            let mut cmd = redis::cmd("ZRANGE");
            cmd.arg(&self.views).arg(0).arg(n - 1).arg("WITHSCORES");
            Ok(Op::native(cmd).map(|items: Vec<(T, f64)>| {
                Ok(items
                    .into_iter()
                    .map(|(item, score)| (item, -score + 0.0))
                    .collect())
            }))
        })
    }

    /// `item`'s rank by views, 0 for the most viewed, or `None` when it has no views
    /// (`ZRANK`). `item` is any bytes, not empty.
    pub fn view_rank<I: ToRedisArgs>(&self, item: I) -> Op<Option<u64>> {
        Op::try_build(|| {
            let mut cmd = redis::cmd("ZRANK");
            cmd.arg(&self.views)
                .arg(input::non_empty_value("item", &item)?);
            Ok(Op::native(cmd))
        })
    }
}

fn checked_batch(batch: usize) -> Result<u64> {
    if (1..=MAX_BATCH).contains(&batch) {
        Ok(batch as u64)
    } else {
        Err(Error::invalid(
            "batch",
            format!("a batch holds from 1 to {MAX_BATCH} sessions, got {batch}"),
        ))
    }
}
