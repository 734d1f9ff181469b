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
//! | (none) | [`adopt(con)`](Leaderboard::adopt), [`adopt_step(from, count)`](Leaderboard::adopt_step) | script `leaderboard/adopt`, in bounded steps |
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
//!
//! ## Adopting a board
//!
//! A board is a plain sorted set, so an app may already have one, written with `ZADD`.
//! Its standard, modified and ordinal ranks read right at once. Its dense ranks count the
//! distinct scores in `{key}:levels`, which only this crate's writes keep: until they are
//! built, [`around`](Leaderboard::around) with [`RankPolicy::Dense`], and
//! [`rank`](Leaderboard::rank), [`standing`](Leaderboard::standing) and
//! [`standings`](Leaderboard::standings) (which answer every policy at once), refuse the
//! board with the script error `NOT_ADOPTED` ([`Error::Script`]) instead of answering a
//! dense rank of 1 for every item. [`adopt`](Leaderboard::adopt) builds the levels, in
//! steps of [`ADOPT_STEP`] items (a few milliseconds of server time each), from the
//! highest score down, each adding the distinct scores it reads;
//! [`adopt_step`](Leaderboard::adopt_step) is one step, for a loop of your own. What the
//! split gives:
//!
//! - Writes through this crate ([`set_weight`](Leaderboard::set_weight),
//!   [`update_weight`](Leaderboard::update_weight), [`remove`](Leaderboard::remove)) may
//!   run while the board is adopted: each keeps the levels of the scores it touches, and
//!   no step undoes that, as a step adds only scores the board holds at that moment. When
//!   the last step is done, the levels are the board's distinct scores.
//! - Between two steps, dense ranks at and above the last score read are already right;
//!   a dense read of a lower score whose level is not built yet is refused
//!   (`NOT_ADOPTED`).
//! - Other clients' writes are seen only until the walk passes their scores: from the
//!   adoption on, write through this crate, or adopt the board again. A level whose score
//!   no item holds any more (another client removed its items) is kept, and counts in the
//!   dense ranks below it: delete [`levels_key`](Leaderboard::levels_key) and adopt the
//!   board again to build the levels anew.

use redis::{FromRedisValue, ToRedisArgs, Value};

use crate::runtime::error::{Error, Result};
use crate::runtime::input;
use crate::runtime::machine::{self, Machine};
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

/// How many items one step of [`Leaderboard::adopt`] reads: the most `leaderboard/adopt`
/// takes (its `count`), which stays within a few milliseconds of server time (a step adds
/// a level per distinct score, about 2 µs each in levels of a million).
pub const ADOPT_STEP: u64 = 1000;

/// Where the next [`Leaderboard::adopt_step`] goes on: the lowest score the walk has read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AdoptCursor(String);

impl AdoptCursor {
    /// The lowest score the walk has read: every score at or above it has its level, and
    /// the next step reads the scores below it.
    pub fn score(&self) -> f64 {
        // The script answers a decimal number, `inf` or `-inf`, all of which parse.
        self.0.parse().unwrap_or(f64::NAN)
    }
}

/// What one [`Leaderboard::adopt_step`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Adopted {
    /// The levels (distinct scores) it added.
    pub added: u64,
    /// Where the next step goes on; `None` when every score of the board has its level.
    pub next: Option<AdoptCursor>,
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

    /// One step of adopting a sorted set that another client wrote: reads up to `count`
    /// (1 to [`ADOPT_STEP`]) items from the highest score down, from `from` (`None` to
    /// begin), and adds each distinct score to the board's levels. See
    /// [adopting a board](self#adopting-a-board). One script (`leaderboard/adopt`).
    pub fn adopt_step(&self, from: Option<&AdoptCursor>, count: u64) -> Op<Adopted> {
        let cursor = from.map_or("", |c| c.0.as_str());
        script::adopt(&self.key, &self.levels, cursor, count).map(|(next, added)| {
            Ok(Adopted {
                added,
                next: next.map(AdoptCursor),
            })
        })
    }

    /// Adopts a sorted set that another client wrote: runs [`adopt_step`](Self::adopt_step)s
    /// of [`ADOPT_STEP`] items until every score of the board has its level, and returns
    /// how many levels they added. One round trip per step; see [adopting a
    /// board](self#adopting-a-board) for what the steps see of writes between them.
    pub fn adopt(&self, con: &mut dyn redis::ConnectionLike) -> Result<u64> {
        machine::drive(&mut self.adopting(), con)
    }

    /// [`adopt`](Self::adopt), on an async connection.
    #[cfg(feature = "aio")]
    pub async fn adopt_async<C: redis::aio::ConnectionLike>(&self, con: &mut C) -> Result<u64> {
        machine::drive_async(&mut self.adopting(), con).await
    }

    /// The walk of [`adopt`](Self::adopt): a step from the start, then from where each
    /// step ended, adding up what they added.
    fn adopting(&self) -> impl Machine<Answer = Adopted, Output = Result<u64>> + '_ {
        let first = self.adopt_step(None, ADOPT_STEP);
        machine::Chain::new([first], 0, move |added: &mut u64, step: Adopted| {
            *added += step.added;
            Ok(step
                .next
                .map(|next| self.adopt_step(Some(&next), ADOPT_STEP)))
        })
    }

    /// `item`'s rank by `policy` (1 for the highest score); `None` if it is not on the
    /// board. Read-only (`leaderboard/standing`).
    pub fn rank(&self, item: impl ToRedisArgs, policy: RankPolicy) -> Op<Option<u64>> {
        self.standing(item)
            .map(move |standing| Ok(standing.map(|s| s.rank(policy))))
    }

    /// `item`'s score, ranks and percentile, read at one moment; `None` if it is not on
    /// the board. Read-only (`leaderboard/standing`). A board another app wrote is
    /// refused (`NOT_ADOPTED`) until it is [adopted](self#adopting-a-board), as a
    /// standing holds the dense rank too.
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
    /// board. Read-only (`leaderboard/around`). Dense ranks of a board another app wrote
    /// are refused (`NOT_ADOPTED`) until it is [adopted](self#adopting-a-board).
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
