//! Counters: 《Redis 应用实例》 chapter 6 (`Counter`, `HashCounter`, and the unlisted
//! `CompactCounter`) and the 2011 Redis Cookbook's counters.
//!
//! Every operation but [`HashCounter::reset`] is one native command. The hash reset is the
//! script `scripts/counter/hash_reset.lua`: it returns the old value and refuses to
//! overwrite a field that holds no integer.
//!
//! The 2011 cookbook's string `Counter(name)` is [`Counter`]: `incr(n)`/`decr(n)` are
//! [`increase`](Counter::increase)/[`decrease`](Counter::decrease), `get()` is
//! [`get`](Counter::get), and both `set(value)` and `reset()` are
//! [`reset`](Counter::reset) (which also returns the old value). Its hash
//! `Counter(field, key='counter')` is [`HashCounter::new("counter", field)`](HashCounter::new).
//!
//! Every constructor checks its key and settings (a `CompactCounter`'s slot must fit in a
//! string) and returns [`Error::InvalidInput`] naming the one at fault, so a bad setting
//! fails where the counter is built instead of on every call.
//!
//! ```no_run
//! # fn demo() -> redis_patterns::Result<()> {
//! use redis_patterns::counter::{CompactCounter, Counter, HashCounter, Overflow, Width};
//!
//! let mut con = redis::Client::open("redis://127.0.0.1/")?.get_connection()?;
//!
//! let views = Counter::new("page:views")?;
//! views.increase(10).run(&mut con)?;
//! assert_eq!(views.reset(0).run(&mut con)?, 10); // the old value
//!
//! let likes = HashCounter::new("post:7", "likes")?;
//! assert_eq!(likes.increase(1).run(&mut con)?, 1);
//!
//! // 8-bit counters packed in one string; at 255 an increase is refused, not wrapped.
//! let hits = CompactCounter::new("hits:byte", 3, Width::U8, Overflow::Fail)?;
//! hits.increase(200).run(&mut con)?;
//! assert!(hits.increase(100).run(&mut con).is_err());
//! # Ok(()) }
//! ```

use crate::runtime::error::Error;
use crate::runtime::input;
use crate::runtime::op::Op;
use crate::scripts;

/// A counter in one string key (`INCRBY`, `DECRBY`, `GET`, `SET … GET`).
///
/// ```no_run
/// # fn demo() -> redis_patterns::Result<()> {
/// use redis_patterns::counter::Counter;
///
/// let mut con = redis::Client::open("redis://127.0.0.1/")?.get_connection()?;
/// let views = Counter::new("page:views")?;
/// assert_eq!(views.increase(10).run(&mut con)?, 10);
/// assert_eq!(views.decrease(3).run(&mut con)?, 7);
/// assert_eq!(views.reset(0).run(&mut con)?, 7); // the old value
/// assert_eq!(views.get().run(&mut con)?, 0);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Counter {
    key: String,
}

impl Counter {
    /// The counter stored at `key`. An empty key is [`Error::InvalidInput`].
    pub fn new(key: impl Into<String>) -> crate::Result<Self> {
        let key = key.into();
        input::key("key", &key)?;
        Ok(Counter { key })
    }

    /// The counter's key.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// Adds `n` (which may be negative) and returns the new value.
    pub fn increase(&self, n: i64) -> Op<i64> {
        self.by("INCRBY", n)
    }

    /// Subtracts `n` (which may be negative) and returns the new value.
    pub fn decrease(&self, n: i64) -> Op<i64> {
        self.by("DECRBY", n)
    }

    fn by(&self, command: &str, n: i64) -> Op<i64> {
        let mut cmd = redis::cmd(command);
        cmd.arg(&self.key).arg(n);
        Op::native(cmd)
    }

    /// The value; 0 when the key is missing.
    pub fn get(&self) -> Op<i64> {
        let mut cmd = redis::cmd("GET");
        cmd.arg(&self.key);
        zero_if_missing(cmd)
    }

    /// Sets the value to `n` and returns the old one (0 when the key was missing), in one
    /// command (`SET key n GET`, Redis 6.2).
    pub fn reset(&self, n: i64) -> Op<i64> {
        let mut cmd = redis::cmd("SET");
        cmd.arg(&self.key).arg(n).arg("GET");
        zero_if_missing(cmd)
    }
}

/// A counter in one field of a hash (`HINCRBY`, `HGET`), so that many counters share a key.
///
/// The field is a name, as the key is: the app picks it (`likes`, `shares`) and the
/// counter is built from it, so it is a `String` (any UTF-8, not empty), not an arbitrary
/// value. The counter's value is an integer, as for every counter here.
///
/// ```no_run
/// # fn demo() -> redis_patterns::Result<()> {
/// use redis_patterns::counter::HashCounter;
///
/// let mut con = redis::Client::open("redis://127.0.0.1/")?.get_connection()?;
/// let likes = HashCounter::new("post:7", "likes")?;
/// let shares = HashCounter::new("post:7", "shares")?; // same hash, another field
/// assert_eq!(likes.increase(2).run(&mut con)?, 2);
/// assert_eq!(shares.increase(1).run(&mut con)?, 1);
/// assert_eq!(likes.reset(0).run(&mut con)?, 2); // the old value
/// assert_eq!(likes.get().run(&mut con)?, 0);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HashCounter {
    key: String,
    field: String,
}

impl HashCounter {
    /// The counter in field `field` of the hash at `key`. An empty key or field is
    /// [`Error::InvalidInput`] naming it.
    pub fn new(key: impl Into<String>, field: impl Into<String>) -> crate::Result<Self> {
        let key = scripts::counter::keys::counters(&key.into())?;
        let field = field.into();
        input::key("field", &field)?;
        Ok(HashCounter { key, field })
    }

    /// The hash's key.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// The counter's field.
    pub fn field(&self) -> &str {
        &self.field
    }

    /// Adds `n` (which may be negative) and returns the new value.
    pub fn increase(&self, n: i64) -> Op<i64> {
        self.by(Ok(n))
    }

    /// Subtracts `n` and returns the new value (`HINCRBY key field -n`).
    pub fn decrease(&self, n: i64) -> Op<i64> {
        self.by(input::negate("n", n))
    }

    fn by(&self, n: crate::Result<i64>) -> Op<i64> {
        Op::try_build(|| {
            let mut cmd = redis::cmd("HINCRBY");
            cmd.arg(&self.key).arg(&self.field).arg(n?);
            Ok(Op::native(cmd))
        })
    }

    /// The value; 0 when the field is missing.
    pub fn get(&self) -> Op<i64> {
        let mut cmd = redis::cmd("HGET");
        cmd.arg(&self.key).arg(&self.field);
        zero_if_missing(cmd)
    }

    /// Sets the value to `n` and returns the old one (0 when the field was missing).
    ///
    /// One script (`counter/hash_reset`): unlike the book's MULTI/HGET/HSET/EXEC, it fails
    /// with the script error `NOT_INTEGER`, writing nothing, when the field holds
    /// something other than an integer.
    pub fn reset(&self, n: i64) -> Op<i64> {
        scripts::counter::hash_reset(&self.key, &self.field, n)
    }
}

/// The integer type of a [`CompactCounter`], as BITFIELD spells it.
///
/// ```
/// use redis_patterns::counter::Width;
///
/// assert_eq!(Width::U8.as_str(), "u8");
/// assert_eq!(Width::U8.bits(), 8);
/// assert_eq!(Width::U8.range(), (0, 255));
/// assert_eq!(Width::I16.range(), (-32_768, 32_767));
/// assert_eq!(Width::U63.range(), (0, i64::MAX));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Width {
    /// Signed 8-bit: -128 to 127.
    I8,
    /// Signed 16-bit.
    I16,
    /// Signed 32-bit.
    I32,
    /// Signed 64-bit.
    I64,
    /// Unsigned 8-bit: 0 to 255.
    U8,
    /// Unsigned 16-bit.
    U16,
    /// Unsigned 32-bit.
    U32,
    /// Unsigned 63-bit, the widest unsigned type BITFIELD has.
    U63,
}

impl Width {
    /// BITFIELD's name for the type (`u8`, `i64`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            Width::I8 => "i8",
            Width::I16 => "i16",
            Width::I32 => "i32",
            Width::I64 => "i64",
            Width::U8 => "u8",
            Width::U16 => "u16",
            Width::U32 => "u32",
            Width::U63 => "u63",
        }
    }

    /// How many bits the type takes.
    pub fn bits(self) -> u64 {
        match self {
            Width::I8 | Width::U8 => 8,
            Width::I16 | Width::U16 => 16,
            Width::I32 | Width::U32 => 32,
            Width::I64 => 64,
            Width::U63 => 63,
        }
    }

    /// The smallest and largest value the type holds.
    pub fn range(self) -> (i64, i64) {
        match self {
            Width::I8 => (i8::MIN.into(), i8::MAX.into()),
            Width::I16 => (i16::MIN.into(), i16::MAX.into()),
            Width::I32 => (i32::MIN.into(), i32::MAX.into()),
            Width::I64 => (i64::MIN, i64::MAX),
            Width::U8 => (0, u8::MAX.into()),
            Width::U16 => (0, u16::MAX.into()),
            Width::U32 => (0, u32::MAX.into()),
            Width::U63 => (0, i64::MAX),
        }
    }
}

/// What a [`CompactCounter`] does when a change would leave its type's range.
///
/// The book's counter always wraps, silently (a `u8` at 0 plus 300 gives 44); here the
/// choice is explicit.
///
/// ```no_run
/// # fn demo() -> redis_patterns::Result<()> {
/// use redis_patterns::{Error, counter::{CompactCounter, Overflow, Width}};
///
/// let mut con = redis::Client::open("redis://127.0.0.1/")?.get_connection()?;
/// let wrap = CompactCounter::new("hits:u8", 0, Width::U8, Overflow::Wrap)?;
/// assert_eq!(wrap.increase(300).run(&mut con)?, 44);
/// let sat = CompactCounter::new("hits:u8", 1, Width::U8, Overflow::Sat)?;
/// assert_eq!(sat.increase(300).run(&mut con)?, 255);
/// let fail = CompactCounter::new("hits:u8", 2, Width::U8, Overflow::Fail)?;
/// assert!(matches!(fail.increase(300).run(&mut con), Err(Error::Overflow { .. })));
/// assert_eq!(fail.get().run(&mut con)?, 0); // unchanged
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Overflow {
    /// Wrap around, as machine integers do.
    Wrap,
    /// Stop at the type's smallest or largest value.
    Sat,
    /// Refuse the change: the operation fails with [`Error::Overflow`] and the counter
    /// keeps its value.
    Fail,
}

impl Overflow {
    fn as_str(self) -> &'static str {
        match self {
            Overflow::Wrap => "WRAP",
            Overflow::Sat => "SAT",
            Overflow::Fail => "FAIL",
        }
    }
}

/// A small counter packed at slot `index` of a string with many others (`BITFIELD`):
/// a million `u8` counters take 1 MB.
///
/// ```no_run
/// # fn demo() -> redis_patterns::Result<()> {
/// use redis_patterns::counter::{CompactCounter, Overflow, Width};
///
/// let mut con = redis::Client::open("redis://127.0.0.1/")?.get_connection()?;
/// // Slot 3 of a string of 8-bit counters, stopping at 0 and 255.
/// let hits = CompactCounter::new("hits:byte", 3, Width::U8, Overflow::Sat)?;
/// assert_eq!(hits.increase(200).run(&mut con)?, 200);
/// assert_eq!(hits.increase(100).run(&mut con)?, 255); // saturated
/// assert_eq!(hits.decrease(5).run(&mut con)?, 250);
/// assert_eq!(hits.reset(0).run(&mut con)?, 250); // the old value
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompactCounter {
    key: String,
    width: Width,
    overflow: Overflow,
    /// BITFIELD's `#index`.
    slot: String,
}

impl CompactCounter {
    /// The counter at slot `index` (`#index`: counted in counters, not bits) of the string
    /// at `key`.
    ///
    /// An empty key, or an `index` whose counter would end past a string's 2^32 bits
    /// (BITFIELD's limit), is [`Error::InvalidInput`] naming it.
    pub fn new(
        key: impl Into<String>,
        index: u64,
        width: Width,
        overflow: Overflow,
    ) -> crate::Result<Self> {
        let key = key.into();
        input::key("key", &key)?;
        let bits = width.bits();
        let fits = index
            .checked_mul(bits)
            .is_some_and(|offset| offset + bits <= 1 << 32);
        if !fits {
            return Err(Error::invalid(
                "index",
                format!(
                    "{index} {} counters do not fit in a string (at most 2^32 bits); use a smaller index",
                    width.as_str()
                ),
            ));
        }
        Ok(CompactCounter {
            key,
            width,
            overflow,
            slot: format!("#{index}"),
        })
    }

    /// The string's key.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// Adds `n` (which may be negative) and returns the new value, under the counter's
    /// [`Overflow`] policy.
    pub fn increase(&self, n: i64) -> Op<i64> {
        self.by(Ok(n))
    }

    /// Subtracts `n` and returns the new value, under the counter's [`Overflow`] policy.
    pub fn decrease(&self, n: i64) -> Op<i64> {
        self.by(input::negate("n", n))
    }

    fn by(&self, n: crate::Result<i64>) -> Op<i64> {
        Op::try_build(|| {
            let mut cmd = redis::cmd("BITFIELD");
            cmd.arg(&self.key)
                .arg("OVERFLOW")
                .arg(self.overflow.as_str())
                .arg("INCRBY")
                .arg(self.width.as_str())
                .arg(&self.slot)
                .arg(n?);
            let (key, slot) = (self.key.clone(), self.describe());
            // BITFIELD answers one entry per subcommand; OVERFLOW FAIL makes it nil.
            Ok(Op::<(Option<i64>,)>::native(cmd).map(move |(value,)| {
                value.ok_or_else(|| Error::Overflow {
                    key: key.clone(),
                    slot: slot.clone(),
                })
            }))
        })
    }

    /// The value; 0 when the key is missing (`BITFIELD_RO … GET`).
    pub fn get(&self) -> Op<i64> {
        let mut cmd = redis::cmd("BITFIELD_RO");
        cmd.arg(&self.key)
            .arg("GET")
            .arg(self.width.as_str())
            .arg(&self.slot);
        only_entry(cmd)
    }

    /// Sets the value to `n` and returns the old one; `n` must fit the counter's type.
    pub fn reset(&self, n: i64) -> Op<i64> {
        Op::try_build(|| {
            let (min, max) = self.width.range();
            if !(min..=max).contains(&n) {
                return Err(Error::invalid(
                    "n",
                    format!(
                        "{n} does not fit a {} counter ({min} to {max})",
                        self.width.as_str()
                    ),
                ));
            }
            let mut cmd = redis::cmd("BITFIELD");
            cmd.arg(&self.key)
                .arg("SET")
                .arg(self.width.as_str())
                .arg(&self.slot)
                .arg(n);
            Ok(only_entry(cmd))
        })
    }

    fn describe(&self) -> String {
        format!("{} {}", self.width.as_str(), self.slot)
    }
}

/// A command whose nil reply (a missing key or field) reads as 0, as the book's counters do.
fn zero_if_missing(cmd: redis::Cmd) -> Op<i64> {
    Op::<Option<i64>>::native(cmd).map(|value| Ok(value.unwrap_or(0)))
}

/// A BITFIELD with one subcommand: its reply is a one-entry array.
fn only_entry(cmd: redis::Cmd) -> Op<i64> {
    Op::<(i64,)>::native(cmd).map(|(value,)| Ok(value))
}
