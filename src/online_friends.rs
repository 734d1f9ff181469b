//! Who is online, and which friends: 《Redis入门指南》 §5.3.4 (在线的好友), both of the
//! book's designs.
//!
//! ```no_run
//! # fn demo() -> redis_patterns::Result<()> {
//! use redis_patterns::online_friends::{LastSeen, MinuteSets};
//!
//! let mut con = redis::Client::open("redis://127.0.0.1/")?.get_connection()?;
//! let minutes = MinuteSets::new("site")?; // online = seen in the last 10 minutes
//! minutes.add_friends("peter", &["jack", "tom"]).run(&mut con)?;
//! minutes.visit("jack").run(&mut con)?;
//! assert_eq!(minutes.online_friends("peter").run(&mut con)?, ["jack"]);
//!
//! let seen = LastSeen::new("site")?;
//! seen.visit("tom").run(&mut con)?;
//! assert_eq!(seen.online_friends("peter").run(&mut con)?, ["tom"]);
//! # Ok(()) }
//! ```
//!
//! - [`MinuteSets`] (design a): one set per minute of the hour, `{ns}:active.users:<MM>`
//!   (`00` to `59`), each holding the users seen in that minute and expiring a little
//!   after the window it serves. The users online are the union of the last N minutes'
//!   sets; a user's online friends, the friends found in any of them.
//! - [`LastSeen`] (design b): one sorted set `{ns}:last.seen`, user → when it was last
//!   seen (ms). The users online are a score range; a user's online friends, the friends
//!   whose score is recent.
//!
//! A user's friends are a set, `{ns}:friends:<user>`, filled with
//! [`add_friends`](MinuteSets::add_friends). Every key of a namespace is in one hash slot
//! (the namespace is the hash tag), so each call works on a cluster; one namespace is one
//! slot. Time is the caller's (`SystemTime::now()`, or the `_at` forms), as in the book:
//! design a names its sets by the minute.
//!
//! | Book | Here | Wire |
//! |---|---|---|
//! | a: `SADD active.users:<MM> user` + `EXPIRE` | [`MinuteSets::visit`] | script `online_friends/minute_visit` |
//! | a: `SUNION` of the last N minutes | [`MinuteSets::online_users`] | `SUNION` |
//! | a: `SUNIONSTORE` into a temporary key, `SINTER` with the friends | [`MinuteSets::online_friends`] | script `online_friends/minute_friends` (read-only, no temporary key) |
//! | b: `ZADD last.seen <now> user` | [`LastSeen::visit`] (also trims) | script `online_friends/seen_visit` |
//! | b: `ZRANGEBYSCORE last.seen <now - N> +inf` | [`LastSeen::online_users`], [`online_count`](LastSeen::online_count) | `ZRANGE … BYSCORE`, `ZCOUNT` |
//! | b: five steps through shared temporary keys | [`LastSeen::online_friends`] | script `online_friends/seen_friends` (read-only, `ZMSCORE`) |
//!
//! What differs from the book, and why:
//!
//! - **No temporary keys.** The book builds its answers in keys every caller shares, so
//!   two callers at once overwrite each other's. Here a user's online friends are read in
//!   one read-only script (SMISMEMBER or ZMSCORE over the friends), with nothing written.
//! - **A minute's set always expires.** The book adds and sets the expiry in two commands;
//!   a crash between them leaves a set with no expiry, whose users come back online when
//!   its minute's name comes round an hour later. Here both are one step, and the expiry
//!   (the window plus a minute, at most 50 minutes) is checked to end before the name is
//!   used again.
//! - **One boundary for both queries of design b.** The book's two queries disagree on a
//!   user seen exactly `window` ago: its online users (`ZRANGEBYSCORE last.seen <now -
//!   N> +inf`) count it, its online friends (`ZREMRANGEBYSCORE temp.last.seen 0 <now -
//!   N>` on a copy) leave it out. Here both count it, as the book's first query does:
//!   online means seen at `now − window` or later, so a user's online friends are always
//!   among the online users.
//! - **`last.seen` is trimmed** in bounded steps: each visit forgets up to 100 users not
//!   seen for `keep` (a day by default); the book's grows for ever.
//! - A friends set is read whole, so its size is bounded (`TOO_MANY_FRIENDS` beyond): 300
//!   users for design a, whose query looks each friend not found yet up in each minute of
//!   a window of at most 10 minutes, and 1,000 for design b, which looks each up once in
//!   the set of every user seen.
//!
//! # Which design
//!
//! Measured with `cargo bench --bench online_friends` (10-minute window, every user seen
//! each minute, 200 friends each):
//!
//! | users online | design a memory | design b memory | a visit | b visit | a's online friends | b's online friends |
//! |---|---|---|---|---|---|---|
//! | 10,000 | 6.0 MB | 1.2 MB | 16 µs | 23 µs | 250 µs | 420 µs |
//! | 100,000 | 56 MB | 10 MB | 16 µs | 21 µs | 230 µs | 400 µs |
//!
//! Design a stores each user once per minute of its window (5× design b's memory here),
//! answers to the minute, and needs no trimming (its sets expire); its online-friends
//! query is quick while friends are few (300 at most, in a window of 10 minutes at most).
//! Design b stores each user once, answers to the millisecond over any window, trims as it
//! is written, and takes up to 1,000 friends. Pick design a for short windows and small
//! friend lists where its simplicity and self-expiry help; design b for everything else,
//! and whenever memory matters.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::runtime::error::{Error, Result};
use crate::runtime::input;
use crate::runtime::op::Op;
use crate::scripts::online_friends as script;

/// The longest window of [`MinuteSets`], in minutes: an online-friends query looks each
/// friend up in each minute's set, and stays bounded (its sets live a minute longer,
/// well before their names come back an hour later).
pub const MAX_WINDOW_MINUTES: u32 = 10;

/// The caller's clock, in milliseconds since the Unix epoch.
fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// The key of `user`'s friends in namespace `ns`.
fn friends_key(ns: &str, user: &str) -> Result<String> {
    // The scripts' rule for a user, for the key built here.
    input::check_param(&script::MINUTE_VISIT.args[0], user)?;
    script::keys::friends(ns, user)
}

/// `SADD friends:<user> friend…`: how many were new.
fn add_friends(ns: &str, user: &str, friends: &[&str]) -> Op<u64> {
    Op::try_build(|| {
        if friends.is_empty() || friends.iter().any(|f| f.is_empty()) {
            return Err(Error::invalid(
                "friends",
                "must hold at least one friend, none empty",
            ));
        }
        let mut cmd = redis::cmd("SADD");
        cmd.arg(friends_key(ns, user)?).arg(friends);
        Ok(Op::native(cmd))
    })
}

/// Design a: one set per minute of the hour. See the [module docs](self).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MinuteSets {
    ns: String,
    window: u32,
}

impl MinuteSets {
    /// The sets of namespace `ns`: `{ns}:active.users:00` to `{ns}:active.users:59`; a
    /// user is online when seen in the last 10 minutes.
    ///
    /// An empty `ns`, or one with a `}` but no hash tag, is [`Error::InvalidInput`].
    pub fn new(ns: impl Into<String>) -> Result<Self> {
        let ns = ns.into();
        // Refuses a bad `ns` as `name`, as every namespace of the family.
        input::aux_key(&ns, "active.users")?;
        Ok(MinuteSets { ns, window: 10 })
    }

    /// Online means seen in the last `minutes` minutes, this one included (1 to
    /// [`MAX_WINDOW_MINUTES`]).
    pub fn with_window(mut self, minutes: u32) -> Result<Self> {
        if !(1..=MAX_WINDOW_MINUTES).contains(&minutes) {
            return Err(Error::invalid(
                "minutes",
                format!("must be from 1 to {MAX_WINDOW_MINUTES}, got {minutes}"),
            ));
        }
        self.window = minutes;
        Ok(self)
    }

    /// The set of minute `minute` of the hour (0 to 59): `{ns}:active.users:<MM>`.
    pub fn minute_key(&self, minute: u32) -> String {
        script::keys::minute(&self.ns, &format!("{:02}", minute % 60))
            .expect("`new` checked `ns`, and a minute is two digits")
    }

    /// The set of `user`'s friends: `{ns}:friends:<user>`.
    pub fn friends_key(&self, user: &str) -> Result<String> {
        friends_key(&self.ns, user)
    }

    /// Adds `friends` to `user`'s friends (`SADD`): how many were new.
    pub fn add_friends(&self, user: &str, friends: &[&str]) -> Op<u64> {
        add_friends(&self.ns, user, friends)
    }

    /// Marks `user` seen now. One script (`online_friends/minute_visit`).
    pub fn visit(&self, user: &str) -> Op<bool> {
        self.visit_at(user, now_ms())
    }

    /// Marks `user` seen at `at_ms` (ms since the Unix epoch).
    pub fn visit_at(&self, user: &str, at_ms: u64) -> Op<bool> {
        let ttl = Duration::from_secs(60 * u64::from(self.window + 1));
        script::minute_visit(&self.minute_key(minute_of(at_ms)), user, ttl)
    }

    /// The minutes' sets of the window that ends at `at_ms`, newest first.
    fn window_keys(&self, at_ms: u64) -> Vec<String> {
        let now = minute_of(at_ms);
        (0..self.window)
            .map(|back| self.minute_key((now + 60 - back) % 60))
            .collect()
    }

    /// The users seen in the window, now (`SUNION`).
    pub fn online_users(&self) -> Op<Vec<String>> {
        self.online_users_at(now_ms())
    }

    /// The users seen in the window that ends at `at_ms`.
    pub fn online_users_at(&self, at_ms: u64) -> Op<Vec<String>> {
        let mut cmd = redis::cmd("SUNION");
        cmd.arg(self.window_keys(at_ms));
        Op::native(cmd)
    }

    /// `user`'s friends seen in the window, now. One read-only script
    /// (`online_friends/minute_friends`).
    pub fn online_friends(&self, user: &str) -> Op<Vec<String>> {
        self.online_friends_at(user, now_ms())
    }

    /// `user`'s friends seen in the window that ends at `at_ms`.
    pub fn online_friends_at(&self, user: &str, at_ms: u64) -> Op<Vec<String>> {
        Op::try_build(|| {
            let keys = self.window_keys(at_ms);
            let keys: Vec<&str> = keys.iter().map(String::as_str).collect();
            Ok(script::minute_friends(&self.friends_key(user)?, &keys))
        })
    }
}

/// The minute of the hour of `at_ms`.
fn minute_of(at_ms: u64) -> u32 {
    ((at_ms / 60_000) % 60) as u32
}

/// Design b: one sorted set, user → last seen. See the [module docs](self).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LastSeen {
    ns: String,
    seen: String,
    window: Duration,
    keep: Duration,
}

impl LastSeen {
    /// The sorted set `{ns}:last.seen`; a user is online when seen in the last 10
    /// minutes, and forgotten a day after it was last seen.
    ///
    /// An empty `ns`, or one with a `}` but no hash tag, is [`Error::InvalidInput`].
    pub fn new(ns: impl Into<String>) -> Result<Self> {
        let ns = ns.into();
        Ok(LastSeen {
            seen: input::aux_key(&ns, "last.seen").and(script::keys::seen(&ns))?,
            ns,
            window: Duration::from_secs(600),
            keep: Duration::from_secs(86_400),
        })
    }

    /// Online means seen within `window` (whole milliseconds, at least 1).
    pub fn with_window(mut self, window: Duration) -> Result<Self> {
        input::check_param(&script::SEEN_FRIENDS.args[1], window)?;
        self.window = window;
        Ok(self)
    }

    /// A user not seen for `keep` is forgotten, up to 100 per visit (whole milliseconds,
    /// at least 1).
    pub fn with_keep(mut self, keep: Duration) -> Result<Self> {
        input::check_param(&script::SEEN_VISIT.args[2], keep)?;
        self.keep = keep;
        Ok(self)
    }

    /// The sorted set: `{ns}:last.seen`.
    pub fn seen_key(&self) -> &str {
        &self.seen
    }

    /// The set of `user`'s friends: `{ns}:friends:<user>`.
    pub fn friends_key(&self, user: &str) -> Result<String> {
        friends_key(&self.ns, user)
    }

    /// Adds `friends` to `user`'s friends (`SADD`): how many were new.
    pub fn add_friends(&self, user: &str, friends: &[&str]) -> Op<u64> {
        add_friends(&self.ns, user, friends)
    }

    /// Marks `user` seen now, and forgets up to 100 users not seen for `keep`. One script
    /// (`online_friends/seen_visit`).
    pub fn visit(&self, user: &str) -> Op<()> {
        self.visit_at(user, now_ms())
    }

    /// Marks `user` seen at `at_ms` (ms since the Unix epoch).
    pub fn visit_at(&self, user: &str, at_ms: u64) -> Op<()> {
        script::seen_visit(&self.seen, user, at_ms, self.keep)
    }

    /// The users seen in the window, now, most recent last (`ZRANGE … BYSCORE`).
    pub fn online_users(&self) -> Op<Vec<String>> {
        self.online_users_at(now_ms())
    }

    /// The users seen in the window that ends at `at_ms`.
    pub fn online_users_at(&self, at_ms: u64) -> Op<Vec<String>> {
        let mut cmd = redis::cmd("ZRANGE");
        cmd.arg(&self.seen)
            .arg(self.since(at_ms))
            .arg("+inf")
            .arg("BYSCORE");
        Op::native(cmd)
    }

    /// How many users were seen in the window, now (`ZCOUNT`).
    pub fn online_count(&self) -> Op<u64> {
        let mut cmd = redis::cmd("ZCOUNT");
        cmd.arg(&self.seen).arg(self.since(now_ms())).arg("+inf");
        Op::native(cmd)
    }

    fn since(&self, at_ms: u64) -> u64 {
        at_ms.saturating_sub(self.window.as_millis() as u64)
    }

    /// `user`'s friends seen in the window, now. One read-only script
    /// (`online_friends/seen_friends`).
    pub fn online_friends(&self, user: &str) -> Op<Vec<String>> {
        self.online_friends_at(user, now_ms())
    }

    /// `user`'s friends seen in the window that ends at `at_ms`.
    pub fn online_friends_at(&self, user: &str, at_ms: u64) -> Op<Vec<String>> {
        Op::try_build(|| {
            Ok(script::seen_friends(
                &self.friends_key(user)?,
                &self.seen,
                at_ms,
                self.window,
            ))
        })
    }
}
