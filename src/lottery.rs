//! A lottery: 《Redis 应用实例》 chapter 17 (`Lottery`). Players join a set; a draw picks
//! winners at random, with or without taking them out of the pool.
//!
//! | Book | Here | Command |
//! |---|---|---|
//! | `Lottery(client, key)` | [`Lottery::new(key)`](Lottery::new) → `Result` | none |
//! | `join(player)` → `True` if new | [`join(player)`](Lottery::join) → `bool` | `SADD` |
//! | `draw(number)` | [`draw(number)`](Lottery::draw): winners stay in the pool | `SRANDMEMBER key number` |
//! | `draw(number, remove=True)` | [`draw_and_remove(number)`](Lottery::draw_and_remove) | `SPOP key number` |
//! | `size()` | [`size()`](Lottery::size) | `SCARD` |
//!
//! Every operation is one native command, atomic in Redis: two draws at once that remove
//! their winners never share one. What differs from the book, and why:
//!
//! - **A draw's `number` is at least 1.** The book passes it to Redis as is: a negative
//!   number makes `SRANDMEMBER` return that many players *with repeats* (one player can
//!   win twice), and makes `SPOP` fail. Here it is a `usize`, and 0 is
//!   [`Error::InvalidInput`](crate::Error::InvalidInput).
//! - Winners are distinct in both draws; a pool smaller than `number` gives all its
//!   players, in random order.
//! - Players are binary-safe: `join` takes anything redis-rs sends as one argument, and a
//!   draw decodes into the type asked for.
//!
//! ```no_run
//! # fn demo() -> redis_patterns::Result<()> {
//! use redis_patterns::lottery::Lottery;
//!
//! let mut con = redis::Client::open("redis://127.0.0.1/")?.get_connection()?;
//! let lottery = Lottery::new("lottery:new-year")?;
//! for player in ["peter", "jack", "tom", "mary"] {
//!     lottery.join(player).run(&mut con)?;
//! }
//! let first_prize: Vec<String> = lottery.draw_and_remove(1).run(&mut con)?;
//! let second_prizes: Vec<String> = lottery.draw_and_remove(2).run(&mut con)?;
//! assert_eq!(lottery.size().run(&mut con)?, 1);
//! # Ok(()) }
//! ```

use redis::{FromRedisValue, ToRedisArgs};

use crate::runtime::error::Result;
use crate::runtime::input;
use crate::runtime::native;
use crate::runtime::op::Op;

/// A lottery's pool of players, in one set. See the [module docs](self).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lottery {
    key: String,
}

impl Lottery {
    /// The lottery whose players are the set at `key`. An empty key is
    /// [`Error::InvalidInput`](crate::Error::InvalidInput).
    pub fn new(key: impl Into<String>) -> Result<Self> {
        let key = key.into();
        input::key("key", &key)?;
        Ok(Lottery { key })
    }

    /// The pool's key.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// Adds `player` to the pool (`SADD`): true if it was not in it yet.
    pub fn join<V: ToRedisArgs>(&self, player: V) -> Op<bool> {
        Op::try_build(|| {
            let mut cmd = redis::cmd("SADD");
            cmd.arg(&self.key).arg(input::value("player", &player)?);
            Ok(Op::native(cmd))
        })
    }

    /// Up to `number` distinct players at random, who stay in the pool and can win
    /// again (`SRANDMEMBER key number`). Fewer when the pool is smaller; none when it is
    /// empty.
    pub fn draw<T: FromRedisValue + 'static>(&self, number: usize) -> Op<Vec<T>> {
        self.pick("SRANDMEMBER", number)
    }

    /// Up to `number` distinct players at random, taken out of the pool (`SPOP key
    /// number`): each player wins at most once, however many draws run at once.
    pub fn draw_and_remove<T: FromRedisValue + 'static>(&self, number: usize) -> Op<Vec<T>> {
        self.pick("SPOP", number)
    }

    fn pick<T: FromRedisValue + 'static>(&self, command: &str, number: usize) -> Op<Vec<T>> {
        Op::try_build(|| {
            let mut cmd = redis::cmd(command);
            cmd.arg(&self.key).arg(input::count("number", number)?);
            Ok(Op::native(cmd))
        })
    }

    /// How many players are in the pool (`SCARD`).
    pub fn size(&self) -> Op<u64> {
        native::one_key("SCARD", &self.key)
    }
}
