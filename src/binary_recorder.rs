//! A yes/no record per index, one bit each: 《Redis 应用实例》 chapter 9
//! (`BinaryRecorder`), for daily sign-ins, feature flags per user id, seen/unseen marks.
//!
//! A year of daily sign-ins takes 46 bytes. Every operation is one native command.
//!
//! | Book | Here | Wire |
//! |---|---|---|
//! | `BinaryRecorder(client, key)` | [`BinaryRecorder::new(key)`](BinaryRecorder::new) → `Result` (an empty key is refused) | none |
//! | `setbit(index)` → `None` | [`setbit(index)`](BinaryRecorder::setbit) → the old bit | `SETBIT key index 1` |
//! | `clearbit(index)` → `None` | [`clearbit(index)`](BinaryRecorder::clearbit) → the old bit | `SETBIT key index 0` |
//! | `getbit(index)` → 0/1 | [`getbit(index)`](BinaryRecorder::getbit) → `bool` | `GETBIT key index` |
//! | `countbits(start, end)` | [`countbits(start, end)`](BinaryRecorder::countbits) → `u64` | `BITCOUNT key start end BIT` (Redis 7.0) |
//!
//! What differs from the book, and why:
//!
//! - `setbit` and `clearbit` return the bit as it was (SETBIT answers it anyway), so
//!   "was this the first sign-in today?" costs nothing more. `getbit` returns a `bool`.
//! - Indexes are checked before any I/O: Redis strings hold at most 2^32 bits, so an index
//!   must be below 2^32 ([`MAX_INDEX`]); the book sends anything and Redis answers
//!   `ERR bit offset is not an integer or out of range`. `countbits` takes bit indexes
//!   counted from the start (the book passes them through, so negative ones count from the
//!   end; here they are `u64`). A range whose `start` is after its `end` counts 0, as in
//!   Redis.
//! - Setting a high index makes Redis allocate the string up to it (index 2^32 − 1 takes
//!   512 MB): keep indexes dense, as day numbers since a start date are.
//!
//! ```no_run
//! # fn demo() -> redis_patterns::Result<()> {
//! use redis_patterns::binary_recorder::BinaryRecorder;
//!
//! let mut con = redis::Client::open("redis://127.0.0.1/")?.get_connection()?;
//! let sign_in = BinaryRecorder::new("User:256512:sign_in")?;
//! assert!(!sign_in.setbit(1).run(&mut con)?); // day 1: first sign-in
//! assert!(sign_in.setbit(1).run(&mut con)?); // already signed in
//! sign_in.setbit(3).run(&mut con)?;
//! assert!(sign_in.getbit(3).run(&mut con)?);
//! assert_eq!(sign_in.countbits(0, 6).run(&mut con)?, 2); // days 0 to 6, inclusive
//! # Ok(()) }
//! ```

use crate::runtime::error::Error;
use crate::runtime::input;
use crate::runtime::op::Op;

/// The largest bit index: a Redis string holds at most 2^32 bits (512 MB).
pub const MAX_INDEX: u64 = (1 << 32) - 1;

/// Bits in one string (`SETBIT`, `GETBIT`, `BITCOUNT … BIT`).
///
/// ```no_run
/// # fn demo() -> redis_patterns::Result<()> {
/// use redis_patterns::binary_recorder::BinaryRecorder;
///
/// let mut con = redis::Client::open("redis://127.0.0.1/")?.get_connection()?;
/// let seen = BinaryRecorder::new("article:7:seen_by")?;
/// seen.setbit(10086).run(&mut con)?; // user 10086 saw it
/// seen.clearbit(10086).run(&mut con)?;
/// assert_eq!(seen.countbits(0, 20000).run(&mut con)?, 0);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BinaryRecorder {
    key: String,
}

impl BinaryRecorder {
    /// The recorder stored as a string at `key`. An empty key is
    /// [`Error::InvalidInput`].
    pub fn new(key: impl Into<String>) -> crate::Result<Self> {
        let key = key.into();
        input::key("key", &key)?;
        Ok(BinaryRecorder { key })
    }

    /// The string's key.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// Sets the bit at `index` to 1 (`SETBIT key index 1`) and returns what it was.
    pub fn setbit(&self, index: u64) -> Op<bool> {
        self.write(index, 1)
    }

    /// Sets the bit at `index` to 0 (`SETBIT key index 0`) and returns what it was.
    pub fn clearbit(&self, index: u64) -> Op<bool> {
        self.write(index, 0)
    }

    fn write(&self, index: u64, bit: u8) -> Op<bool> {
        Op::try_build(|| {
            let mut cmd = redis::cmd("SETBIT");
            cmd.arg(&self.key).arg(bit_index("index", index)?).arg(bit);
            Ok(Op::native(cmd))
        })
    }

    /// The bit at `index`; false when the key is missing or shorter (`GETBIT`).
    pub fn getbit(&self, index: u64) -> Op<bool> {
        Op::try_build(|| {
            let mut cmd = redis::cmd("GETBIT");
            cmd.arg(&self.key).arg(bit_index("index", index)?);
            Ok(Op::native(cmd))
        })
    }

    /// How many bits are 1 from bit `start` to bit `end`, both included
    /// (`BITCOUNT key start end BIT`, Redis 7.0); 0 when `start > end`.
    pub fn countbits(&self, start: u64, end: u64) -> Op<u64> {
        Op::try_build(|| {
            let mut cmd = redis::cmd("BITCOUNT");
            cmd.arg(&self.key)
                .arg(bit_index("start", start)?)
                .arg(bit_index("end", end)?)
                .arg("BIT");
            Ok(Op::native(cmd))
        })
    }
}

fn bit_index(what: &'static str, index: u64) -> crate::Result<u64> {
    if index > MAX_INDEX {
        return Err(Error::invalid(
            what,
            format!(
                "a bit index must be at most 2^32 - 1 = {MAX_INDEX} (a Redis string holds 2^32 bits), got {index}"
            ),
        ));
    }
    Ok(index)
}
