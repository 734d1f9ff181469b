//! A user login system: the 2011 Redis Cookbook's recipe (by hoterran): names mapped to
//! ids, each user's login count and last login time, the latest logins, and the users
//! who log in most.
//!
//! ```no_run
//! # fn demo() -> redis_patterns::Result<()> {
//! use redis_patterns::user_login::{Login, UserLogin};
//!
//! let mut con = redis::Client::open("redis://127.0.0.1/")?.get_connection()?;
//! let logins = UserLogin::new("login")?;
//! logins.register("peter", "10086").run(&mut con)?;
//! let login: Login = logins.login("peter").run(&mut con)?.expect("a registered name");
//! println!("{} has logged in {} times", login.id, login.count);
//! let regulars: Vec<(String, u64)> = logins.most_frequent(10).run(&mut con)?;
//!
//! // Names and ids are any bytes; read ids back as `Vec<u8>` when they may not be UTF-8.
//! logins.register(&b"\xffjack"[..], &b"\x00\x01"[..]).run(&mut con)?;
//! let id: Option<Vec<u8>> = logins.id_of(&b"\xffjack"[..]).run(&mut con)?;
//! # Ok(()) }
//! ```
//!
//! A system named `name` keeps, in `name`'s hash slot (one slot for all its users):
//!
//! | Key | Type | Holds | The cookbook's |
//! |---|---|---|---|
//! | `{name}:ids` | hash | name → user id | `login:<name>:id` |
//! | `{name}:counts` | zset | user id → logins | `login:<uid>:login_times` and `login:login_times` |
//! | `{name}:last` | hash | user id → last login (ms, server clock) | `login:<uid>:last_login_time` |
//! | `{name}:recent` | list | user ids of the latest logins, newest first | `login:last_login_times` |
//!
//! | Cookbook | Here | Wire |
//! |---|---|---|
//! | `SET login:<name>:id <id>` | [`register(name, id)`](UserLogin::register) → `bool` | `HSETNX` |
//! | the login flow: `GET` the id, `INCR` the count, `SET` the time, `LPUSH` + `LTRIM` the recent list, `ZINCRBY` the ranking | [`login(name)`](UserLogin::login) → `Option<Login>` | script `user_login/login` |
//! | `GET login:<name>:id` | [`id_of(name)`](UserLogin::id_of) | `HGET` |
//! | `GET login:<uid>:login_times` | [`login_count(id)`](UserLogin::login_count) | `ZSCORE` |
//! | `GET login:<uid>:last_login_time` | [`last_login_ms(id)`](UserLogin::last_login_ms) | `HGET` |
//! | `LRANGE login:last_login_times 0 N-1` | [`recent(n)`](UserLogin::recent) | `LRANGE` |
//! | `ZREVRANGE login:login_times 0 N-1` | [`most_frequent(n)`](UserLogin::most_frequent) → `(id, logins)` | `ZREVRANGE … WITHSCORES` |
//!
//! What differs from the cookbook, and why:
//!
//! - **A login is one step.** The cookbook sends four to six commands per login (and its
//!   snippet calls a misspelt `redis.ltrim`); logins at the same moment interleave, and
//!   a crash between them leaves a count that the ranking does not show. Here one script
//!   does it all, and each user's count *is* its score in the ranking.
//! - **The time is the server's** (one clock for every app server), in milliseconds.
//! - **An unknown name logs nothing** and answers `None`; registering a name twice keeps
//!   the first id (`HSETNX`), where the cookbook's `SET` silently replaces it.
//!
//! **Names and ids are binary-safe**: both are Redis values (hash fields and values,
//! sorted-set members, list items), so the methods take them as anything redis-rs sends
//! as one argument (`&str`, `String`, `&[u8]`, `Vec<u8>`, numbers: [`ToRedisArgs`]) and
//! return ids as any [`FromRedisValue`] (`String` by default in [`Login`], `Vec<u8>` for
//! ids that are not UTF-8). A login is recorded before its reply is decoded: ask
//! [`login`](UserLogin::login) for a type every id decodes as (`Vec<u8>` always does), or
//! an id that does not decode is an error for a login that was counted.

use redis::{FromRedisValue, ToRedisArgs, Value};

use crate::runtime::error::Result;
use crate::runtime::input;
use crate::runtime::op::Op;
use crate::scripts::user_login as script;

/// How many latest logins [`UserLogin::recent`] keeps unless set with
/// [`with_recent`](UserLogin::with_recent).
pub const DEFAULT_RECENT: u64 = 100;

/// A login recorded by [`UserLogin::login`], with the user's id as a `T` (`String`
/// unless asked otherwise, such as `Login<Vec<u8>>` for ids that are not UTF-8).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Login<T = String> {
    /// The user's id.
    pub id: T,
    /// How many times the user has logged in, this one included.
    pub count: u64,
}

/// A user login system named `name`. See the [module docs](self).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UserLogin {
    name: String,
    ids: String,
    counts: String,
    last: String,
    recent: String,
    keep: u64,
}

impl UserLogin {
    /// The system named `name`, with its keys `{name}:ids`, `{name}:counts`,
    /// `{name}:last` and `{name}:recent`, keeping the latest [`DEFAULT_RECENT`] logins.
    ///
    /// An empty `name`, or one with a `}` but no hash tag, is
    /// [`Error::InvalidInput`](crate::Error::InvalidInput).
    pub fn new(name: impl Into<String>) -> Result<Self> {
        let name = name.into();
        use script::keys;
        Ok(UserLogin {
            ids: keys::ids(&name)?,
            counts: keys::counts(&name)?,
            last: keys::last(&name)?,
            recent: keys::recent(&name)?,
            name,
            keep: DEFAULT_RECENT,
        })
    }

    /// How many latest logins `{name}:recent` keeps (1 to 10,000).
    pub fn with_recent(mut self, keep: u64) -> Result<Self> {
        input::check_param(&script::LOGIN.args[1], keep)?;
        self.keep = keep;
        Ok(self)
    }

    /// The system's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Its keys: ids, counts, last and recent.
    pub fn keys(&self) -> [&str; 4] {
        [&self.ids, &self.counts, &self.last, &self.recent]
    }

    /// Registers `name` as the user `id`: true if it was new; false if the name already
    /// had an id, which it keeps (`HSETNX`). Neither may be empty; both are any bytes.
    pub fn register(&self, name: impl ToRedisArgs, id: impl ToRedisArgs) -> Op<bool> {
        Op::try_build(|| {
            let name = checked_name(&name)?;
            let id = input::non_empty_value("id", &id)?;
            let mut cmd = redis::cmd("HSETNX");
            cmd.arg(&self.ids).arg(name).arg(id);
            Ok(Op::native(cmd))
        })
    }

    /// Records a login by `name`: its count goes up by one (in the ranking too), its last
    /// login time becomes now (server clock), and it goes first in the latest logins.
    /// `None` for a name never registered, which records nothing. One script
    /// (`user_login/login`).
    ///
    /// The login is recorded before the reply is decoded: with a `T` the id does not
    /// decode as (a `String` for an id that is not UTF-8), the login counts and the call
    /// fails; `Vec<u8>` never fails.
    pub fn login<T: FromRedisValue + 'static>(
        &self,
        name: impl ToRedisArgs,
    ) -> Op<Option<Login<T>>> {
        Op::try_build(|| {
            let name = checked_name(&name)?;
            Ok(script::login(
                &self.ids,
                &self.counts,
                &self.last,
                &self.recent,
                &name,
                self.keep,
            )
            .map(|(id, count)| {
                id.map(|id| {
                    Ok(Login {
                        id: T::from_redis_value(Value::BulkString(id))?,
                        count: count.max(0) as u64,
                    })
                })
                .transpose()
            }))
        })
    }

    /// The id registered for `name` (`HGET`).
    pub fn id_of<T: FromRedisValue + 'static>(&self, name: impl ToRedisArgs) -> Op<Option<T>> {
        Op::try_build(|| {
            let mut cmd = redis::cmd("HGET");
            cmd.arg(&self.ids).arg(checked_name(&name)?);
            Ok(Op::native(cmd))
        })
    }

    /// How many times user `id` has logged in; 0 if never (`ZSCORE`).
    pub fn login_count(&self, id: impl ToRedisArgs) -> Op<u64> {
        Op::try_build(|| {
            let mut cmd = redis::cmd("ZSCORE");
            cmd.arg(&self.counts).arg(input::value("id", &id)?);
            Ok(Op::<Option<u64>>::native(cmd).map(|n| Ok(n.unwrap_or(0))))
        })
    }

    /// When user `id` last logged in, in milliseconds of the server's clock (Unix time);
    /// `None` if never (`HGET`).
    pub fn last_login_ms(&self, id: impl ToRedisArgs) -> Op<Option<u64>> {
        Op::try_build(|| {
            let mut cmd = redis::cmd("HGET");
            cmd.arg(&self.last).arg(input::value("id", &id)?);
            Ok(Op::native(cmd))
        })
    }

    /// The ids of the latest `n` logins (1 to the number kept), newest first; an id
    /// appears once per login (`LRANGE`).
    pub fn recent<T: FromRedisValue + 'static>(&self, n: usize) -> Op<Vec<T>> {
        Op::try_build(|| {
            let n = input::count("n", n)?;
            let mut cmd = redis::cmd("LRANGE");
            cmd.arg(&self.recent).arg(0).arg(n - 1);
            Ok(Op::native(cmd))
        })
    }

    /// The `n` users who logged in most, with their counts, most first; users with the
    /// same count in reverse id order, as `ZREVRANGE` gives them.
    pub fn most_frequent<T: FromRedisValue + 'static>(&self, n: usize) -> Op<Vec<(T, u64)>> {
        Op::try_build(|| {
            let n = input::count("n", n)?;
            let mut cmd = redis::cmd("ZREVRANGE");
            cmd.arg(&self.counts).arg(0).arg(n - 1).arg("WITHSCORES");
            Ok(Op::native(cmd))
        })
    }
}

/// A name is one value, never empty: the login script's rule, for the native calls.
fn checked_name(name: &impl ToRedisArgs) -> Result<Vec<u8>> {
    input::non_empty_value("name", name)
}
