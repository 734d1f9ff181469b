//! Leaderboards: 《Redis 应用实例》 chapter 22 (`Ranking`), with scores kept as floats, ranks
//! by the tie policy you choose, "around me", percentiles, and several boards read in one
//! step.
//!
//! ```no_run
//! # fn demo() -> redis_patterns::Result<()> {
//! use redis_patterns::leaderboard::{Leaderboard, RankPolicy};
//!
//! let mut con = redis::Client::open("redis://127.0.0.1/")?.get_connection()?;
//! let board = Leaderboard::new("{game}:all-time")?;
//! board.set_weight("ann", 100.0).run(&mut con)?;
//! board.update_weight("bob", 90.5).run(&mut con)?;
//! let best: Vec<(String, f64)> = board.top(10).run(&mut con)?;
//! let bob = board.rank("bob", RankPolicy::Dense).run(&mut con)?; // Some(2)
//! let neighbours = board.around::<String>("bob", 5, RankPolicy::Standard).run(&mut con)?;
//!
//! // Items are any bytes; read them back as `Vec<u8>` when they may not be UTF-8.
//! board.set_weight(&b"\xff\x00id"[..], 80.0).run(&mut con)?;
//! let last: Vec<(Vec<u8>, f64)> = board.bottom(1).run(&mut con)?;
//! # Ok(()) }
//! ```
//!
//! A [`Leaderboard`] keeps items and their scores in a sorted set at the key you name, as
//! the book does, and beside it, in the key's hash slot, `{key}:levels`: each distinct
//! score once, which the writes keep current so that a dense rank is one count away.
//!
//! | Book | Here | Wire |
//! |---|---|---|
//! | `Ranking(client, key)` | [`Leaderboard::new(key)`](Leaderboard::new) → `Result` | none |
//! | `set_weight(item, weight)` → `True` if new | [`set_weight(item, weight)`](Leaderboard::set_weight) → `bool` | script `leaderboard/set` |
//! | `get_weight(item)` → `int` or `None` | [`get_weight(item)`](Leaderboard::get_weight) → `Option<f64>` | `ZSCORE` |
//! | `update_weight(item, change)` → new score | [`update_weight(item, change)`](Leaderboard::update_weight) → `f64` | script `leaderboard/update` |
//! | `remove(item)` → `bool` | [`remove(item)`](Leaderboard::remove) | script `leaderboard/remove` |
//! | `length()` | [`length()`](Leaderboard::length) | `ZCARD` |
//! | `top(N)` → `[{item: int}]` | [`top(n)`](Leaderboard::top) → `Vec<(T, f64)>` | `ZREVRANGE key 0 n-1 WITHSCORES` |
//! | `bottom(N)` | [`bottom(n)`](Leaderboard::bottom) | `ZRANGE key 0 n-1 WITHSCORES` |
//! | (none) | [`rank(item, policy)`](Leaderboard::rank), [`standing(item)`](Leaderboard::standing), [`standings(boards, item)`](Leaderboard::standings) | script `leaderboard/standing` (read-only) |
//! | (none) | [`around(item, n, policy)`](Leaderboard::around) | script `leaderboard/around` (read-only) |
//!
//! What differs from the book, and why:
//!
//! - **Scores stay floats.** The book's `get_weight` and `top` cast scores with `int()`,
//!   so 7.9 reads as 7 and two different scores can look tied.
//! - **`top(0)` and `bottom(0)` are refused.** The book sends `ZREVRANGE key 0 -1`, which
//!   returns the whole board: a board of a million items in one reply.
//! - **Writes are scripts**, because each also keeps `{key}:levels` (one more command,
//!   in the same step). Reads stay native.
//! - **Items are binary-safe**: every method takes an item as anything redis-rs sends as
//!   one argument (`&str`, `String`, `&[u8]`, `Vec<u8>`, numbers: [`ToRedisArgs`]), and
//!   [`top`](Leaderboard::top), [`bottom`](Leaderboard::bottom) and
//!   [`around`](Leaderboard::around) return items as any [`FromRedisValue`] (`String`, or
//!   `Vec<u8>` for items that are not UTF-8).
//!
//! ## Ties
//!
//! Ranks count from 1 for the highest score. How tied items rank is a [`RankPolicy`]; for
//! the scores below:
//!
//! | Item | Score | [`Standard`](RankPolicy::Standard) ("1224") | [`Dense`](RankPolicy::Dense) ("1223") | [`Modified`](RankPolicy::Modified) ("1334") | [`Ordinal`](RankPolicy::Ordinal) ("1234") |
//! |---|---|---|---|---|---|
//! | ann | 100 | 1 | 1 | 1 | 1 |
//! | bob | 90 | 2 | 2 | 3 | 3 |
//! | cat | 90 | 2 | 2 | 3 | 2 |
//! | dan | 80 | 4 | 3 | 4 | 4 |
//!
//! Standard: 1 + the items scored higher (sports tables). Dense: 1 + the distinct scores
//! higher (no gaps). Modified: the items scored as high or higher. Ordinal: the place in
//! `ZREVRANGE`, which orders tied items in reverse byte order (so `cat` before `bob`).
//!
//! A [`Standing`] also gives the percentile: 100 × (the items scored lower + half the
//! items with the same score, itself included) / the items. On the board above, `ann` is
//! at 87.5, `bob` and `cat` at 50, `dan` at 12.5.
//!
//! Every read of ranks is one script, so its answer is of one moment, however many
//! writes run meanwhile; [`standings`](Leaderboard::standings) reads several boards (a
//! daily, a weekly and an all-time board, all in one hash slot: name them `{game}:daily`,
//! `{game}:weekly`, …) at one moment too.

use redis::{FromRedisValue, ToRedisArgs, Value};

use crate::runtime::error::{Error, Result};
use crate::runtime::input;
use crate::runtime::op::Op;
use crate::scripts::leaderboard as script;

/// How tied items rank. See the [module docs](self#ties).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RankPolicy {
    /// "1224": 1 + the items scored higher.
    Standard,
    /// "1223": 1 + the distinct scores higher.
    Dense,
    /// "1334": the items scored as high or higher.
    Modified,
    /// "1234": the place on the board; tied items in reverse byte order.
    Ordinal,
}

impl RankPolicy {
    /// The name the scripts take: `standard`, `dense`, `modified` or `ordinal`.
    pub fn as_str(self) -> &'static str {
        match self {
            RankPolicy::Standard => "standard",
            RankPolicy::Dense => "dense",
            RankPolicy::Modified => "modified",
            RankPolicy::Ordinal => "ordinal",
        }
    }
}

/// Where an item stands on a board, all read at one moment.
#[derive(Debug, Clone, PartialEq)]
pub struct Standing {
    /// Its score.
    pub score: f64,
    /// Its rank by [`RankPolicy::Standard`].
    pub standard: u64,
    /// Its rank by [`RankPolicy::Dense`].
    pub dense: u64,
    /// Its rank by [`RankPolicy::Modified`].
    pub modified: u64,
    /// Its rank by [`RankPolicy::Ordinal`].
    pub ordinal: u64,
    /// Its percentile, from 0 to 100 (see the [module docs](self#ties)).
    pub percentile: f64,
    /// How many items the board holds.
    pub of: u64,
}

impl Standing {
    /// Its rank by `policy`.
    pub fn rank(&self, policy: RankPolicy) -> u64 {
        match policy {
            RankPolicy::Standard => self.standard,
            RankPolicy::Dense => self.dense,
            RankPolicy::Modified => self.modified,
            RankPolicy::Ordinal => self.ordinal,
        }
    }
}

/// An item of [`Leaderboard::around`]'s answer, the item itself as a `T` (`String`
/// unless asked otherwise, such as `Ranked<Vec<u8>>` for items that are not UTF-8).
#[derive(Debug, Clone, PartialEq)]
pub struct Ranked<T = String> {
    /// The item.
    pub item: T,
    /// Its score.
    pub score: f64,
    /// Its rank, by the policy asked for.
    pub rank: u64,
}

/// A leaderboard in one sorted set. See the [module docs](self).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Leaderboard {
    key: String,
    levels: String,
}

impl Leaderboard {
    /// The board at `key`, with its distinct scores at `{key}:levels`.
    ///
    /// An empty key, or one with a `}` but no hash tag, is [`Error::InvalidInput`].
    pub fn new(key: impl Into<String>) -> Result<Self> {
        let key = key.into();
        let levels = script::keys::levels(&key)?;
        Ok(Leaderboard {
            key: script::keys::board(&key)?,
            levels,
        })
    }

    /// The board's key.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// The key of its distinct scores, `{key}:levels`.
    pub fn levels_key(&self) -> &str {
        &self.levels
    }

    /// Sets `item`'s score to `weight` (finite): true if the item is new. One script
    /// (`leaderboard/set`).
    pub fn set_weight(&self, item: impl ToRedisArgs, weight: f64) -> Op<bool> {
        Op::try_build(|| {
            let item = input::value("item", &item)?;
            Ok(script::set(&self.key, &self.levels, &item, weight))
        })
    }

    /// `item`'s score, `None` if it is not on the board (`ZSCORE`).
    pub fn get_weight(&self, item: impl ToRedisArgs) -> Op<Option<f64>> {
        Op::try_build(|| {
            let mut cmd = redis::cmd("ZSCORE");
            cmd.arg(&self.key).arg(input::value("item", &item)?);
            Ok(Op::native(cmd))
        })
    }

    /// Adds `change` (finite; negative to take away) to `item`'s score, from 0 if it is
    /// not on the board, and returns the new score. One script (`leaderboard/update`).
    pub fn update_weight(&self, item: impl ToRedisArgs, change: f64) -> Op<f64> {
        Op::try_build(|| {
            let item = input::value("item", &item)?;
            Ok(script::update(&self.key, &self.levels, &item, change))
        })
    }

    /// Takes `item` off the board: true if it was on it. One script
    /// (`leaderboard/remove`).
    pub fn remove(&self, item: impl ToRedisArgs) -> Op<bool> {
        Op::try_build(|| {
            let item = input::value("item", &item)?;
            Ok(script::remove(&self.key, &self.levels, &item))
        })
    }

    /// How many items the board holds (`ZCARD`).
    pub fn length(&self) -> Op<u64> {
        crate::runtime::native::one_key("ZCARD", &self.key)
    }

    /// The `n` (at least 1) highest items with their scores, highest first (`ZREVRANGE
    /// … WITHSCORES`); tied items in reverse byte order.
    pub fn top<T: FromRedisValue + 'static>(&self, n: usize) -> Op<Vec<(T, f64)>> {
        self.ends("ZREVRANGE", n)
    }

    /// The `n` (at least 1) lowest items with their scores, lowest first (`ZRANGE …
    /// WITHSCORES`).
    pub fn bottom<T: FromRedisValue + 'static>(&self, n: usize) -> Op<Vec<(T, f64)>> {
        self.ends("ZRANGE", n)
    }

    fn ends<T: FromRedisValue + 'static>(&self, command: &str, n: usize) -> Op<Vec<(T, f64)>> {
        Op::try_build(|| {
            let n = input::count("n", n)?;
            let mut cmd = redis::cmd(command);
            cmd.arg(&self.key).arg(0).arg(n - 1).arg("WITHSCORES");
            Ok(Op::native(cmd))
        })
    }

    /// `item`'s rank by `policy` (1 for the highest score); `None` if it is not on the
    /// board. Read-only (`leaderboard/standing`).
    pub fn rank(&self, item: impl ToRedisArgs, policy: RankPolicy) -> Op<Option<u64>> {
        self.standing(item)
            .map(move |standing| Ok(standing.map(|s| s.rank(policy))))
    }

    /// `item`'s score, ranks and percentile, read at one moment; `None` if it is not on
    /// the board. Read-only (`leaderboard/standing`).
    pub fn standing(&self, item: impl ToRedisArgs) -> Op<Option<Standing>> {
        Self::standings(&[self], item).map(|mut all| Ok(all.pop().flatten()))
    }

    /// `item`'s standing on each of `boards` (from 1 to 10, all in one hash slot), in
    /// order, read at one moment. Read-only (`leaderboard/standing`).
    pub fn standings(boards: &[&Leaderboard], item: impl ToRedisArgs) -> Op<Vec<Option<Standing>>> {
        Op::try_build(|| {
            let item = input::value("item", &item)?;
            let keys: Vec<&str> = boards
                .iter()
                .flat_map(|b| [b.key.as_str(), b.levels.as_str()])
                .collect();
            input::same_slot("boards", &keys)?;
            Ok(script::standing(&keys, &item).map(|rows| rows.into_iter().map(standing).collect()))
        })
    }

    /// The items around `item`: up to `n` (1 to 100) ranked above it and `n` below, with
    /// their scores and ranks by `policy`, highest first (`item` itself included); `None`
    /// if it is not on the board. Tied items at the edges get their rank on the whole
    /// board. Read-only (`leaderboard/around`).
    pub fn around<T: FromRedisValue + 'static>(
        &self,
        item: impl ToRedisArgs,
        n: u64,
        policy: RankPolicy,
    ) -> Op<Option<Vec<Ranked<T>>>> {
        Op::try_build(|| {
            let item = input::value("item", &item)?;
            Ok(
                script::around(&self.key, &self.levels, &item, n, policy.as_str()).map(|rows| {
                    if rows.is_empty() {
                        return Ok(None);
                    }
                    rows.into_iter()
                        .map(|(item, score, rank)| {
                            Ok(Ranked {
                                item: T::from_redis_value(Value::BulkString(item))?,
                                score,
                                rank,
                            })
                        })
                        .collect::<Result<_>>()
                        .map(Some)
                }),
            )
        })
    }
}

/// One board's row of `leaderboard/standing`'s reply: score, the four ranks, percentile,
/// items.
type StandingRow = (
    Option<f64>,
    Option<u64>,
    Option<u64>,
    Option<u64>,
    Option<u64>,
    Option<f64>,
    u64,
);

/// A board's standing, from its row; `None` when the item is not on the board.
fn standing(row: StandingRow) -> Result<Option<Standing>> {
    let (score, standard, dense, modified, ordinal, percentile, of) = row;
    let Some(score) = score else {
        return Ok(None);
    };
    let given = |value: Option<u64>| {
        value.ok_or_else(|| {
            Error::unexpected_reply("leaderboard/standing reply", "a score without its ranks")
        })
    };
    Ok(Some(Standing {
        score,
        standard: given(standard)?,
        dense: given(dense)?,
        modified: given(modified)?,
        ordinal: given(ordinal)?,
        percentile: percentile.ok_or_else(|| {
            Error::unexpected_reply(
                "leaderboard/standing reply",
                "a score without its percentile",
            )
        })?,
        of,
    }))
}
