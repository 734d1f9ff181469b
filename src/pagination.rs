//! Pages of a list, newest first: 《Redis 应用实例》 chapter 23 (`Pagging`), by offset as in
//! the book, and by a cursor that new items never shift.
//!
//! ```no_run
//! # fn demo() -> redis_patterns::Result<()> {
//! use redis_patterns::pagination::Paging;
//!
//! let mut con = redis::Client::open("redis://127.0.0.1/")?.get_connection()?;
//! let posts = Paging::new("user:peter:posts")?;
//! posts.add(&["hello", "second post", "third"]).run(&mut con)?;
//! let newest: Vec<String> = posts.get(1, 2).run(&mut con)?; // ["third", "second post"]
//!
//! // A cursor: pages never shift, whatever is added between them.
//! let mut page = posts.first_page::<String>(2).run(&mut con)?;
//! while let Some(cursor) = page.next {
//!     page = posts.page_after(cursor, 2).run(&mut con)?;
//! }
//! # Ok(()) }
//! ```
//!
//! | Book | Here | Wire |
//! |---|---|---|
//! | `Pagging(client, key)` | [`Paging::new(key)`](Paging::new) → `Result` | none |
//! | `add(*items)` → length | [`add(&items)`](Paging::add) | script `pagination/add` (`LPUSH`, and the count of items ever added) |
//! | `get(page, size=10)` | [`get(page, size)`](Paging::get) | `LRANGE key (page-1)*size page*size-1` |
//! | `length()` | [`length()`](Paging::length) | `LLEN` |
//! | `number(size=10)` → pages | [`number(size)`](Paging::number) | `LLEN`, then rounded up |
//! | (none) | [`first_page(size)`](Paging::first_page), [`page_after(cursor, size)`](Paging::page_after) → [`Page`] | script `pagination/page` (read-only) |
//! | (none) | [`clear()`](Paging::clear) | `DEL` of both keys |
//!
//! What differs from the book, and why:
//!
//! - **Page 0 is refused**, as is a size of 0. Pages count from 1; the book sends page 0
//!   as `LRANGE key -size -1`, which quietly returns the *oldest* items.
//! - **Offset pages shift; cursor pages do not.** An item added between two reads of
//!   offset pages pushes every item one place down, so the next page starts with an item
//!   the reader has already seen. Here every item gets an arrival number when it is added
//!   (1 for the first item ever added: [`add`](Paging::add) counts them in a second key,
//!   `{<key>}:added`, in the list's hash slot), and a [`PageCursor`] is the number of the
//!   newest item still to read. A reader that pages with
//!   [`page_after`](Paging::page_after) sees every item that was in the list when it
//!   started exactly once, in order, however many are added meanwhile. (The new ones are
//!   on a new [`first_page`](Paging::first_page).)
//! - **A reader never sees an item twice, even while the list is trimmed.** Trimming at
//!   the tail (`LTRIM key 0 n`, the usual cap on a list) takes the oldest items away and
//!   numbers none anew, so the reader goes on with the items left, and a cursor whose
//!   items were all trimmed answers an empty last page. (Counting from the tail instead,
//!   as this crate did before, read a trimmed list's newest items again.) Other removals
//!   (`LREM`, a trim at the head) make a cursor skip as many items, never repeat one.
//!   Items must be added through [`add`](Paging::add) (or the script `pagination/add`):
//!   a bare `LPUSH` is not counted, and cursors issued before it may show items again. A
//!   list filled by `LPUSH` alone is read as if its oldest item were number 1, and is
//!   counted from its first [`add`](Paging::add) on.
//! - Items are binary-safe: `add` takes anything redis-rs sends as one argument, and the
//!   reads decode into the type asked for.

use std::fmt;
use std::str::FromStr;

use redis::{FromRedisValue, ToRedisArgs};

use crate::runtime::error::{Error, Result};
use crate::runtime::input;
use crate::runtime::native;
use crate::runtime::op::Op;
use crate::scripts::pagination as script;

/// Where the next cursor page starts: the arrival number of the newest item still to
/// read (1 for the first item ever added to the list). Send it to a client as text
/// ([`Display`](fmt::Display)) and parse it back ([`FromStr`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PageCursor(u64);

impl PageCursor {
    /// The arrival number of the newest item still to read.
    pub fn number(self) -> u64 {
        self.0
    }
}

impl fmt::Display for PageCursor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

impl FromStr for PageCursor {
    type Err = Error;

    /// A cursor as [`Display`](fmt::Display) writes it: a decimal from 1 to 10^15 - 1.
    fn from_str(s: &str) -> Result<Self> {
        // The scripts' one rule for integers: no sign, no leading zero, no spaces.
        let cursor = s
            .parse::<u64>()
            .ok()
            .filter(|cursor| cursor.to_string() == s)
            .ok_or_else(|| Error::invalid("cursor", format!("not a page cursor: {s:?}")))?;
        input::check_param(&script::PAGE.args[0], Some(cursor))?;
        Ok(PageCursor(cursor))
    }
}

/// One page read by a cursor.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Page<T> {
    /// The page's items, newest first.
    pub items: Vec<T>,
    /// The cursor of the next (older) page; `None` after the oldest item.
    pub next: Option<PageCursor>,
}

/// A list read in pages, newest item first. See the [module docs](self).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Paging {
    key: String,
    added: String,
}

impl Paging {
    /// The list at `key`, and its count of items added at [`added_key`](Self::added_key).
    /// An empty key, or one with a `}` but no hash tag (its count could not share its
    /// slot), is [`Error::InvalidInput`].
    pub fn new(key: impl Into<String>) -> Result<Self> {
        let key = key.into();
        let added = script::keys::added(&key)?;
        Ok(Paging {
            key: script::keys::list(&key)?,
            added,
        })
    }

    /// The list's key.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// The key that counts the items ever added: `{<key>}:added` (or `<key>:added` when
    /// the key holds a hash tag).
    pub fn added_key(&self) -> &str {
        &self.added
    }

    /// Adds `items` at the head, in order, so the last is the newest (`LPUSH`), numbers
    /// them for cursors, and returns the list's length. From 1 to 1000 items, in one
    /// step (`pagination/add`).
    pub fn add<V: ToRedisArgs>(&self, items: &[V]) -> Op<u64> {
        Op::try_build(|| {
            Ok(script::add(
                &self.key,
                &self.added,
                &input::slices(&input::items(items)?),
            ))
        })
    }

    /// Deletes the list and its count of items added (`DEL` of both keys); cursors
    /// issued before answer an empty page.
    pub fn clear(&self) -> Op<u64> {
        let mut cmd = redis::cmd("DEL");
        cmd.arg(&self.key).arg(&self.added);
        Op::native(cmd)
    }

    /// Page `page` (from 1) of `size` items (at least 1), newest first: `LRANGE key
    /// (page-1)*size page*size-1`. Empty past the end.
    pub fn get<T: FromRedisValue + 'static>(&self, page: u64, size: usize) -> Op<Vec<T>> {
        Op::try_build(|| {
            let (start, size) = input::page(page, size)?;
            let mut cmd = redis::cmd("LRANGE");
            cmd.arg(&self.key).arg(start).arg(start + size - 1);
            Ok(Op::native(cmd))
        })
    }

    /// How many items the list holds (`LLEN`).
    pub fn length(&self) -> Op<u64> {
        native::length(&self.key)
    }

    /// How many pages of `size` items (at least 1) the list fills; 0 when it is empty.
    pub fn number(&self, size: usize) -> Op<u64> {
        Op::try_build(|| {
            let size = input::count("size", size)?;
            Ok(self.length().map(move |length| Ok(length.div_ceil(size))))
        })
    }

    /// The newest `size` items (1 to 1000), and the cursor of the page after them.
    /// Read-only (`pagination/page`).
    pub fn first_page<T: FromRedisValue + 'static>(&self, size: usize) -> Op<Page<T>> {
        self.page(None, size)
    }

    /// The `size` items (1 to 1000) after the page that gave `cursor`, newest first, and
    /// the cursor of the page after them. Items added since do not shift it. Read-only
    /// (`pagination/page`).
    pub fn page_after<T: FromRedisValue + 'static>(
        &self,
        cursor: PageCursor,
        size: usize,
    ) -> Op<Page<T>> {
        self.page(Some(cursor.0), size)
    }

    fn page<T: FromRedisValue + 'static>(&self, cursor: Option<u64>, size: usize) -> Op<Page<T>> {
        script::page(&self.key, &self.added, cursor, size as u64).map(|(next, items)| {
            let items = items
                .into_iter()
                .map(|item| Ok(T::from_redis_value(redis::Value::BulkString(item))?))
                .collect::<Result<_>>()?;
            Ok(Page {
                items,
                next: (next > 0).then_some(PageCursor(next)),
            })
        })
    }
}
