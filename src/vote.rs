//! Voting: 《Redis 应用实例》 chapter 21 (`Vote`), with votes that switch sides in one step,
//! a vote you can read back, and subjects ranked as reddit ranks them, kept current on
//! every vote.
//!
//! ```no_run
//! # fn demo() -> redis_patterns::Result<()> {
//! use redis_patterns::vote::{Vote, Votes};
//!
//! let mut con = redis::Client::open("redis://127.0.0.1/")?.get_connection()?;
//! let votes = Votes::new("news")?;
//! votes.post("post:1", None).run(&mut con)?;
//! votes.up("post:1", "peter").run(&mut con)?;
//! votes.down("post:1", "jack").run(&mut con)?;
//! assert_eq!(votes.is_voted("post:1", "jack").run(&mut con)?, Some(Vote::Down));
//! votes.up("post:1", &b"\xffuser:7"[..]).run(&mut con)?; // users are any bytes
//! let front_page = votes.hot(25).run(&mut con)?;
//! # Ok(()) }
//! ```
//!
//! A [`Votes`] namespace keeps, in one hash slot (the namespace is the hash tag):
//!
//! | Key | Type | Holds |
//! |---|---|---|
//! | `{namespace}:up:<subject>`, `{namespace}:down:<subject>` | set | the users who voted the subject up, down (the book's `Vote:<subject>:up`, `:down`) |
//! | `{namespace}:posted` | hash | subject → when it was posted (ms) |
//! | `{namespace}:hot` | zset | subject → its "hot" rank |
//! | `{namespace}:best` | zset | subject → its "best" rank |
//!
//! | Book | Here | Wire |
//! |---|---|---|
//! | `Vote(client, subject)` | [`Votes::new(namespace)`](Votes::new); the subject is each call's first argument | none |
//! | `up(user)` → `True` if new | [`up(subject, user)`](Votes::up) → `bool` | script `vote/cast` |
//! | `down(user)` | [`down(subject, user)`](Votes::down) | script `vote/cast` |
//! | `unvote(user)` → `True` if removed | [`unvote(subject, user)`](Votes::unvote) | script `vote/cast` |
//! | `is_voted(user)` → `0`/`1` | [`is_voted(subject, user)`](Votes::is_voted) → `Option<`[`Vote`]`>` | script `vote/tally` (read-only) |
//! | `up_count()`, `down_count()` | [`up_count(subject)`](Votes::up_count), [`down_count(subject)`](Votes::down_count) | `SCARD` |
//! | `total()` | [`total(subject)`](Votes::total); [`tally(subject, user)`](Votes::tally) for all at once | script `vote/tally` (read-only) |
//! | (none) | [`post(subject, at)`](Votes::post), [`hot(n)`](Votes::hot), [`best(n)`](Votes::best), [`forget(subject)`](Votes::forget) | scripts `vote/post`, `vote/forget`; `ZREVRANGE` |
//!
//! What differs from the book, and why:
//!
//! - **`is_voted` tells up from down.** The book answers `a or b` of two `SISMEMBER`s: 1
//!   whichever way the user voted. Here it is `Some(Vote::Up)`, `Some(Vote::Down)` or
//!   `None`.
//! - **A vote is one script**, which also keeps the rankings current; the book's MULTI
//!   switches sides atomically too, but ranks nothing. A user is never counted twice, nor
//!   on both sides.
//!
//! **Users are binary-safe**: a user is only ever a set member, so the methods that take
//! one take anything redis-rs sends as one argument (`&str`, `String`, `&[u8]`,
//! `Vec<u8>`, numbers: [`ToRedisArgs`]). Subjects are `&str`: a subject is also part of
//! two key names (`{namespace}:up:<subject>`), and the crate's key names are text.
//!
//! ## Rankings
//!
//! Each vote updates two sorted sets of subjects, read with [`hot`](Votes::hot) and
//! [`best`](Votes::best):
//!
//! - **hot**, reddit's: `sign(net) × log10(max(|net|, 1)) + (posted − 1134028003) / 45000`,
//!   with `net` = ups − downs and `posted` in seconds. Ten times the net votes are worth
//!   12.5 hours of age, so new subjects rise above old ones that are only a little better.
//! - **best**: the lower bound of the 95% Wilson score interval of the share of up votes
//!   (0 with no vote). A subject with 90 up and 10 down (0.83) ranks above one with 1 up
//!   and 0 down (0.21): a few votes prove little.
//!
//! A subject's posting time is that of its first vote, unless [`post`](Votes::post) set
//! it (post a subject when it is created, so that it ranks from then).

use redis::ToRedisArgs;

use crate::runtime::error::{Error, Result};
use crate::runtime::input;
use crate::runtime::native;
use crate::runtime::op::Op;
use crate::scripts::vote as script;

/// Which way a user voted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Vote {
    /// Up.
    Up,
    /// Down.
    Down,
}

/// A subject's votes, and one user's, read at one moment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tally {
    /// How many users voted it up.
    pub up: u64,
    /// How many users voted it down.
    pub down: u64,
    /// The user's vote, if any.
    pub mine: Option<Vote>,
}

/// Votes on subjects, in one namespace (one hash slot). See the [module docs](self).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Votes {
    namespace: String,
    posted: String,
    hot: String,
    best: String,
}

impl Votes {
    /// The votes of the namespace `namespace`. An empty one, or one with a `}` but no
    /// hash tag, is [`Error::InvalidInput`].
    pub fn new(namespace: impl Into<String>) -> Result<Self> {
        let namespace = namespace.into();
        Ok(Votes {
            posted: script::keys::posted(&namespace)?,
            hot: script::keys::hot_rank(&namespace)?,
            best: script::keys::best_rank(&namespace)?,
            namespace,
        })
    }

    /// The namespace.
    pub fn namespace(&self) -> &str {
        &self.namespace
    }

    /// The keys of `subject`'s up and down votes: `{namespace}:up:<subject>` and
    /// `{namespace}:down:<subject>`.
    pub fn vote_keys(&self, subject: &str) -> Result<[String; 2]> {
        input::check_param(&script::CAST.args[0], subject)
            .map_err(|_| Error::invalid("subject", "must not be empty"))?;
        Ok([
            script::keys::up(&self.namespace, subject)?,
            script::keys::down(&self.namespace, subject)?,
        ])
    }

    /// The rankings' keys: `{namespace}:hot` and `{namespace}:best`.
    pub fn ranking_keys(&self) -> [&str; 2] {
        [&self.hot, &self.best]
    }

    /// `user` votes `subject` up: true if the vote is new on that side (a switch from
    /// down included). One script (`vote/cast`).
    pub fn up<U: ToRedisArgs>(&self, subject: &str, user: U) -> Op<bool> {
        self.cast(subject, user, "up")
    }

    /// `user` votes `subject` down: true if the vote is new on that side. One script
    /// (`vote/cast`).
    pub fn down<U: ToRedisArgs>(&self, subject: &str, user: U) -> Op<bool> {
        self.cast(subject, user, "down")
    }

    /// `user` takes back its vote on `subject`: true if it had voted. One script
    /// (`vote/cast`).
    pub fn unvote<U: ToRedisArgs>(&self, subject: &str, user: U) -> Op<bool> {
        self.cast(subject, user, "none")
    }

    fn cast<U: ToRedisArgs>(&self, subject: &str, user: U, direction: &str) -> Op<bool> {
        Op::try_build(|| {
            let [up, down] = self.vote_keys(subject)?;
            let user = input::value("user", &user)?;
            Ok(script::cast(
                &up,
                &down,
                &self.posted,
                &self.hot,
                &self.best,
                subject,
                &user,
                direction,
            ))
        })
    }

    /// `subject`'s votes and `user`'s vote (`""` for nobody's), read at one moment.
    /// Read-only (`vote/tally`).
    pub fn tally<U: ToRedisArgs>(&self, subject: &str, user: U) -> Op<Tally> {
        Op::try_build(|| {
            let [up, down] = self.vote_keys(subject)?;
            let user = input::value("user", &user)?;
            Ok(script::tally(&up, &down, &user).map(|(up, down, mine)| {
                Ok(Tally {
                    up: up.max(0) as u64,
                    down: down.max(0) as u64,
                    mine: match mine {
                        1 => Some(Vote::Up),
                        -1 => Some(Vote::Down),
                        _ => None,
                    },
                })
            }))
        })
    }

    /// Which way `user` voted on `subject`, if at all. Read-only (`vote/tally`).
    pub fn is_voted<U: ToRedisArgs>(&self, subject: &str, user: U) -> Op<Option<Vote>> {
        Op::try_build(|| {
            let user = input::non_empty_value("user", &user)?;
            Ok(self.tally(subject, user).map(|tally| Ok(tally.mine)))
        })
    }

    /// How many users voted `subject` up (`SCARD`).
    pub fn up_count(&self, subject: &str) -> Op<u64> {
        Op::try_build(|| Ok(native::one_key("SCARD", &self.vote_keys(subject)?[0])))
    }

    /// How many users voted `subject` down (`SCARD`).
    pub fn down_count(&self, subject: &str) -> Op<u64> {
        Op::try_build(|| Ok(native::one_key("SCARD", &self.vote_keys(subject)?[1])))
    }

    /// How many users voted on `subject`, either way, counted at one moment. Read-only
    /// (`vote/tally`).
    pub fn total(&self, subject: &str) -> Op<u64> {
        self.tally(subject, "")
            .map(|tally| Ok(tally.up + tally.down))
    }

    /// Sets when `subject` was posted (`at`, ms of Unix time; `None` for the server's
    /// now) and ranks it, votes or not. Posting again moves the time. One script
    /// (`vote/post`).
    pub fn post(&self, subject: &str, at: Option<u64>) -> Op<()> {
        Op::try_build(|| {
            let [up, down] = self.vote_keys(subject)?;
            Ok(script::post(
                &up,
                &down,
                &self.posted,
                &self.hot,
                &self.best,
                subject,
                at,
            ))
        })
    }

    /// The `n` (at least 1) hottest subjects with their "hot" ranks, hottest first
    /// (`ZREVRANGE … WITHSCORES`).
    pub fn hot(&self, n: usize) -> Op<Vec<(String, f64)>> {
        top(&self.hot, n)
    }

    /// The `n` (at least 1) best subjects with their Wilson lower bounds, best first
    /// (`ZREVRANGE … WITHSCORES`).
    pub fn best(&self, n: usize) -> Op<Vec<(String, f64)>> {
        top(&self.best, n)
    }

    /// Forgets `subject`: its votes, its posting time and its ranks. True if there was
    /// anything. One script (`vote/forget`).
    pub fn forget(&self, subject: &str) -> Op<bool> {
        Op::try_build(|| {
            let [up, down] = self.vote_keys(subject)?;
            Ok(script::forget(
                &up,
                &down,
                &self.posted,
                &self.hot,
                &self.best,
                subject,
            ))
        })
    }
}

fn top(key: &str, n: usize) -> Op<Vec<(String, f64)>> {
    Op::try_build(|| {
        let n = input::count("n", n)?;
        let mut cmd = redis::cmd("ZREVRANGE");
        cmd.arg(key).arg(0).arg(n - 1).arg("WITHSCORES");
        Ok(Op::native(cmd))
    })
}
