//! Social relations, who follows whom: 《Redis 应用实例》 chapter 18 (`Relation`), with both
//! sides changed in one step and lists paged by time.
//!
//! ```no_run
//! # fn demo() -> redis_patterns::Result<()> {
//! use redis_patterns::relation::Relations;
//!
//! let mut con = redis::Client::open("redis://127.0.0.1/")?.get_connection()?;
//! let relations = Relations::new("social")?;
//! relations.follow("peter", "jack").run(&mut con)?;
//! relations.follow("jack", "peter").run(&mut con)?;
//! assert!(relations.is_following_each_other("peter", "jack").run(&mut con)?);
//! let mut page = relations.followers("jack", None, 20).run(&mut con)?;
//! while let Some(cursor) = page.next {
//!     page = relations.followers("jack", Some(cursor), 20).run(&mut con)?;
//! }
//! # Ok(()) }
//! ```
//!
//! Each user has two sorted sets, member → when the follow began (ms, server clock):
//! `{namespace}:following:<user>` and `{namespace}:followers:<user>`. A follow writes
//! the follower's `following` and the target's `followers` at once.
//!
//! | Book | Here | Wire |
//! |---|---|---|
//! | `Relation(client, user)` | [`Relations::new(namespace)`](Relations::new); the user is each call's first argument | none |
//! | `follow(target)` → `True` if new | [`follow(user, target)`](Relations::follow) → `bool` | script `relation/follow` |
//! | `unfollow(target)` → `True` if removed | [`unfollow(user, target)`](Relations::unfollow) → `bool` | script `relation/unfollow` |
//! | `is_following(target)` | [`is_following(user, target)`](Relations::is_following) | `ZSCORE` |
//! | `is_following_by(target)` | [`is_followed_by(user, other)`](Relations::is_followed_by) | `ZSCORE` |
//! | `is_following_each_other(target)` | [`is_following_each_other(user, other)`](Relations::is_following_each_other) | script `relation/mutual` (read-only) |
//! | `following_count()`, `followers_count()` | [`following_count(user)`](Relations::following_count), [`followers_count(user)`](Relations::followers_count) | `ZCARD` |
//! | (none) | [`following(user, page)`](Relations::following), [`followers(user, page)`](Relations::followers) → [`Follows`] | `ZREVRANGEBYSCORE … LIMIT` |
//!
//! What differs from the book, and why:
//!
//! - **Following again keeps the first time**; the book's second follow overwrites both
//!   sides' times, so "followed since" moves. Here a repeated follow changes nothing.
//! - **Following oneself is refused** (`SELF_FOLLOW`); the book allows it.
//! - **Lists page by time, newest first**, with a cursor that never skips or repeats an
//!   entry, however many follows happen between pages: the book has no list at all.
//!   Within one user's list no two entries share a time (a follow in the same millisecond
//!   as the newest one is stamped a millisecond later), so the cursor is the last time
//!   seen. The two sides of one follow may differ by those few milliseconds.
//! - Membership tests use `ZSCORE` (O(1)) where the book uses `ZRANK` (O(log N)).
//!
//! ## Cluster slots
//!
//! A follow changes two users' sets in one step, so every set of a namespace is in one
//! hash slot (the namespace is the hash tag): on a cluster a namespace is one slot, and
//! everything stays atomic there, follow and unfollow included. A graph too large for
//! one node splits by namespace (one per community, or per tenant), never by user: an
//! edge between two slots could not be written atomically, and a crash between its two
//! halves would leave a follow that only one side knows.

use crate::runtime::error::{Error, Result};
use crate::runtime::input;
use crate::runtime::native;
use crate::runtime::op::Op;
use crate::scripts::relation as script;

/// A page of a user's following or followers list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Follows {
    /// Each user, with when the follow began (ms of the server's clock), newest first.
    pub users: Vec<(String, u64)>,
    /// The cursor of the next (older) page: the last time on this one. `None` when the
    /// page came back short, so the list is done; a full page may be followed by an
    /// empty one.
    pub next: Option<u64>,
}

/// Who follows whom, in one namespace (one hash slot). See the [module docs](self).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Relations {
    namespace: String,
}

impl Relations {
    /// The relations of the namespace `namespace`. An empty one, or one with a `}` but no
    /// hash tag, is [`Error::InvalidInput`].
    pub fn new(namespace: impl Into<String>) -> Result<Self> {
        let namespace = namespace.into();
        input::aux_key_of("namespace", &namespace, "following")?;
        Ok(Relations { namespace })
    }

    /// The namespace.
    pub fn namespace(&self) -> &str {
        &self.namespace
    }

    /// The key of `user`'s following list, `{namespace}:following:<user>`.
    pub fn following_key(&self, user: &str) -> Result<String> {
        self.key(script::keys::following, "user", user)
    }

    /// The key of `user`'s followers list, `{namespace}:followers:<user>`.
    pub fn followers_key(&self, user: &str) -> Result<String> {
        self.key(script::keys::followers, "user", user)
    }

    /// The key a list's template (`following` or `followers`) names for `user`, which an
    /// error calls `what`.
    fn key(
        &self,
        list: fn(&str, &str) -> Result<String>,
        what: &'static str,
        user: &str,
    ) -> Result<String> {
        if user.is_empty() {
            return Err(Error::invalid(what, "must not be empty"));
        }
        list(&self.namespace, user)
    }

    /// Makes `user` follow `target`, on both sides in one step: true if it is new; a
    /// second follow changes nothing and keeps the first time. Following oneself fails
    /// with `SELF_FOLLOW`. One script (`relation/follow`).
    pub fn follow(&self, user: &str, target: &str) -> Op<bool> {
        Op::try_build(|| {
            Ok(script::follow(
                &self.following_key(user)?,
                &self.key(script::keys::followers, "target", target)?,
                user,
                target,
            ))
        })
    }

    /// Makes `user` stop following `target`, on both sides in one step: true if it
    /// followed. One script (`relation/unfollow`).
    pub fn unfollow(&self, user: &str, target: &str) -> Op<bool> {
        Op::try_build(|| {
            Ok(script::unfollow(
                &self.following_key(user)?,
                &self.key(script::keys::followers, "target", target)?,
                user,
                target,
            ))
        })
    }

    /// Whether `user` follows `target` (`ZSCORE`).
    pub fn is_following(&self, user: &str, target: &str) -> Op<bool> {
        self.contains(self.following_key(user), target)
    }

    /// Whether `other` follows `user` (`ZSCORE` on `user`'s followers).
    pub fn is_followed_by(&self, user: &str, other: &str) -> Op<bool> {
        self.contains(self.followers_key(user), other)
    }

    fn contains(&self, key: Result<String>, member: &str) -> Op<bool> {
        Op::try_build(|| {
            let mut cmd = redis::cmd("ZSCORE");
            cmd.arg(key?).arg(member);
            Ok(Op::<Option<String>>::native(cmd).map(|score| Ok(score.is_some())))
        })
    }

    /// Whether `user` and `other` follow each other, read at one moment. Read-only
    /// (`relation/mutual`).
    pub fn is_following_each_other(&self, user: &str, other: &str) -> Op<bool> {
        Op::try_build(|| {
            Ok(script::mutual(
                &self.following_key(user)?,
                &self.key(script::keys::following, "other", other)?,
                user,
                other,
            ))
        })
    }

    /// How many users `user` follows (`ZCARD`).
    pub fn following_count(&self, user: &str) -> Op<u64> {
        Op::try_build(|| Ok(native::one_key("ZCARD", &self.following_key(user)?)))
    }

    /// How many users follow `user` (`ZCARD`).
    pub fn followers_count(&self, user: &str) -> Op<u64> {
        Op::try_build(|| Ok(native::one_key("ZCARD", &self.followers_key(user)?)))
    }

    /// A page of up to `n` (at least 1) users `user` follows, newest follow first:
    /// `cursor` `None` for the first page, then each page's [`next`](Follows::next)
    /// (`ZREVRANGEBYSCORE key (cursor -inf WITHSCORES LIMIT 0 n`).
    pub fn following(&self, user: &str, cursor: Option<u64>, n: usize) -> Op<Follows> {
        self.page(self.following_key(user), cursor, n)
    }

    /// A page of up to `n` (at least 1) followers of `user`, newest first; paged as
    /// [`following`](Self::following).
    pub fn followers(&self, user: &str, cursor: Option<u64>, n: usize) -> Op<Follows> {
        self.page(self.followers_key(user), cursor, n)
    }

    fn page(&self, key: Result<String>, cursor: Option<u64>, n: usize) -> Op<Follows> {
        Op::try_build(|| {
            let n = input::count("n", n)?;
            let mut cmd = redis::cmd("ZREVRANGEBYSCORE");
            cmd.arg(key?);
            match cursor {
                Some(cursor) => cmd.arg(format!("({cursor}")),
                None => cmd.arg("+inf"),
            };
            cmd.arg("-inf").arg("WITHSCORES").arg("LIMIT").arg(0).arg(n);
            Ok(Op::<Vec<(String, u64)>>::native(cmd).map(move |users| {
                let next = (users.len() as u64 == n)
                    .then(|| users.last().map(|(_, at)| *at))
                    .flatten();
                Ok(Follows { users, next })
            }))
        })
    }
}
