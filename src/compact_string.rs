//! Many short items packed into one string, each followed by a separator:
//! 《Redis 应用实例》 chapter 11 (`CompactString`), for log lines and other append-only
//! records that are read back by byte range.
//!
//! ```no_run
//! # fn demo() -> redis_patterns::Result<()> {
//! use redis_patterns::compact_string::CompactString;
//!
//! let mut con = redis::Client::open("redis://127.0.0.1/")?.get_connection()?;
//! let log = CompactString::new("log:2024-05-01")?;
//! assert_eq!(log.append("HTTP/1.1 200 OK").run(&mut con)?, 16); // bytes, with "\n"
//! log.append("Server: nginx").run(&mut con)?;
//! // Bytes 0 to 20, both included: the second item is cut.
//! let items = log.get_bytes(0, 20).run(&mut con)?;
//! assert_eq!(items, vec![b"HTTP/1.1 200 OK".to_vec(), b"Serve".to_vec()]);
//! assert!(log.append("two\nlines").run(&mut con).is_err()); // would break the framing
//! # Ok(()) }
//! ```
//!
//! One string holds what would otherwise be a list of small strings, without the
//! per-element overhead; both operations are one native command.
//!
//! | Book | Here | Wire |
//! |---|---|---|
//! | `CompactString(client, key, separator="\n")` | [`CompactString::new(key)`](CompactString::new), [`CompactString::with_separator(key, separator)`](CompactString::with_separator) → `Result` (an empty key or separator is refused) | none |
//! | `append(string)` → total length | [`append(item)`](CompactString::append) → `u64` | `APPEND key item+separator` |
//! | `get_bytes(start=0, end=-1)` → `[str]` | [`get_bytes(start, end)`](CompactString::get_bytes) → `Vec<Vec<u8>>`, [`get_all()`](CompactString::get_all) | `GETRANGE key start end` |
//!
//! What differs from the book, and why:
//!
//! - **Items are bytes.** A byte range can cut a multi-byte UTF-8 character, which makes
//!   the book's `decode_responses=True` client raise. Here an item goes in as any one
//!   value redis-rs sends (`&str`, `String`, `&[u8]`, `Vec<u8>`, numbers), binary-safe,
//!   and items come back as `Vec<u8>`, so a cut end is just shorter bytes; use
//!   `String::from_utf8_lossy` or `from_utf8` as the data needs.
//! - **The framing cannot be broken.** The book appends whatever it gets, so an item that
//!   holds the separator reads back as two items, and an empty one shifts the others
//!   (`['a', '', 'b']` reads back as `['a', 'b', '']`). Here an empty `separator` is
//!   refused where the `CompactString` is built, and `append` refuses, before any I/O,
//!   with [`Error::InvalidInput`]: an empty `item`, and an item that holds the separator
//!   or ends with its beginning (with `";;"`, the item `"a;"` would read back as `"a"`).
//! - **Empty items are refused** rather than stored, because a range read could not tell
//!   an empty item from a range that starts or ends exactly at a separator.
//! - The read splits what `GETRANGE` returns at each separator and drops the empty piece
//!   before the first separator and after the last one (the range began or ended on an
//!   item boundary). The book drops the first empty piece anywhere, which loses data as
//!   shown above. As in the book, the items at the two ends of a range may be cut, and
//!   with a multi-byte separator a cut end may hold part of it.

use redis::ToRedisArgs;

use crate::runtime::error::Error;
use crate::runtime::input;
use crate::runtime::op::Op;

/// Items appended to one string, each followed by a separator (`APPEND`, `GETRANGE`).
///
/// ```no_run
/// # fn demo() -> redis_patterns::Result<()> {
/// use redis_patterns::compact_string::CompactString;
///
/// let mut con = redis::Client::open("redis://127.0.0.1/")?.get_connection()?;
/// let tags = CompactString::with_separator("post:7:tags", ";")?;
/// tags.append("redis").run(&mut con)?;
/// tags.append("rust").run(&mut con)?;
/// assert_eq!(tags.get_all().run(&mut con)?, vec![b"redis".to_vec(), b"rust".to_vec()]);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompactString {
    key: String,
    separator: Vec<u8>,
}

impl CompactString {
    /// The items stored at `key`, each followed by `"\n"`, as in the book. An empty key
    /// is [`Error::InvalidInput`].
    pub fn new(key: impl Into<String>) -> crate::Result<Self> {
        Self::with_separator(key, "\n")
    }

    /// The items stored at `key`, each followed by `separator` (any bytes). An empty key
    /// or separator is [`Error::InvalidInput`] naming it: without a separator, items
    /// could not be told apart.
    pub fn with_separator(
        key: impl Into<String>,
        separator: impl AsRef<[u8]>,
    ) -> crate::Result<Self> {
        let key = key.into();
        input::key("key", &key)?;
        let separator = separator.as_ref().to_vec();
        if separator.is_empty() {
            return Err(Error::invalid(
                "separator",
                "must not be empty: items could not be told apart; the book's is \"\\n\"",
            ));
        }
        Ok(CompactString { key, separator })
    }

    /// The string's key.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// The separator written after each item.
    pub fn separator(&self) -> &[u8] {
        &self.separator
    }

    /// Appends `item` (one value, any bytes) and the separator (`APPEND`); returns the
    /// string's length in bytes afterwards.
    ///
    /// Refused with [`Error::InvalidInput`] (`item`) when `item` is empty, holds the
    /// separator, or ends with the separator's beginning: any of them would read back as
    /// other items.
    pub fn append<V: ToRedisArgs>(&self, item: V) -> Op<u64> {
        Op::try_build(|| {
            let item = input::value("item", &item)?;
            let separator = self.separator.as_slice();
            if item.is_empty() {
                return Err(Error::invalid(
                    "item",
                    "must not be empty: a range read could not tell it from a range that \
                     begins or ends at a separator",
                ));
            }
            let mut framed = Vec::with_capacity(item.len() + separator.len());
            framed.extend_from_slice(&item);
            framed.extend_from_slice(separator);
            if find(&framed, separator) != Some(item.len()) {
                return Err(Error::invalid(
                    "item",
                    format!(
                        "must not hold the separator {:?}, nor end with its beginning, or it \
                         would read back as other items",
                        String::from_utf8_lossy(separator)
                    ),
                ));
            }
            let mut cmd = redis::cmd("APPEND");
            cmd.arg(&self.key).arg(framed);
            Ok(Op::native(cmd))
        })
    }

    /// The items in bytes `start` to `end`, both included (`GETRANGE`); negative offsets
    /// count from the end, `-1` being the last byte. The items at the two ends may be cut.
    /// Empty when the key is missing or the range holds nothing.
    pub fn get_bytes(&self, start: i64, end: i64) -> Op<Vec<Vec<u8>>> {
        let mut cmd = redis::cmd("GETRANGE");
        cmd.arg(&self.key).arg(start).arg(end);
        let separator = self.separator.clone();
        Op::<Vec<u8>>::native(cmd).map(move |bytes| Ok(split(&bytes, &separator)))
    }

    /// Every item: [`get_bytes(0, -1)`](Self::get_bytes), the book's default range.
    pub fn get_all(&self) -> Op<Vec<Vec<u8>>> {
        self.get_bytes(0, -1)
    }
}

/// The first position of `needle` in `haystack`.
fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack
        .windows(needle.len())
        .position(|window| window == needle)
}

/// The pieces of `bytes` between separators, without the empty piece before the first
/// separator or after the last one (the range began or ended on an item boundary).
fn split(bytes: &[u8], separator: &[u8]) -> Vec<Vec<u8>> {
    let mut pieces = Vec::new();
    let mut rest = bytes;
    while let Some(at) = find(rest, separator) {
        pieces.push(rest[..at].to_vec());
        rest = &rest[at + separator.len()..];
    }
    pieces.push(rest.to_vec());
    if pieces.last().is_some_and(Vec::is_empty) {
        pieces.pop();
    }
    if pieces.first().is_some_and(Vec::is_empty) {
        pieces.remove(0);
    }
    pieces
}
