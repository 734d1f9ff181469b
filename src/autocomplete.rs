//! Autocomplete: 《Redis 应用实例》 chapter 16 (`AutoComplete`), one table of suggestions per
//! prefix, fed in one step, with suggestions that can be taken back and tables whose size
//! is capped.
//!
//! ```no_run
//! # fn demo() -> redis_patterns::Result<()> {
//! use redis_patterns::autocomplete::Autocomplete;
//!
//! let mut con = redis::Client::open("redis://127.0.0.1/")?.get_connection()?;
//! let search = Autocomplete::new("search")?.with_cap(100)?;
//! search.feed("redis", 1.0).run(&mut con)?;
//! search.feed("redis cluster", 1.0).run(&mut con)?;
//! search.feed("redis", 1.0).run(&mut con)?;
//! assert_eq!(search.hint("re", 10).run(&mut con)?, ["redis", "redis cluster"]);
//! # Ok(()) }
//! ```
//!
//! An [`Autocomplete`] of the subject `subject` keeps, for each prefix of each content
//! fed, a sorted set `{subject}:<prefix>`: content → weight. A content's prefixes are cut
//! by characters (`"红茶"` gives `"红"` and `"红茶"`), never inside a UTF-8 character.
//!
//! | Book | Here | Wire |
//! |---|---|---|
//! | `AutoComplete(client, subject)` | [`Autocomplete::new(subject)`](Autocomplete::new) → `Result` | none |
//! | `feed(content, weight=1.0)` | [`feed(content, weight)`](Autocomplete::feed) | script `autocomplete/feed` (`ZINCRBY` per prefix) |
//! | `set(content, weight)` | [`set(content, weight)`](Autocomplete::set) | script `autocomplete/feed` (`ZADD` per prefix) |
//! | `feedex(content, weight=1.0, ttl=300)` | [`feedex(content, weight, ttl)`](Autocomplete::feedex) | script `autocomplete/feed` (`ZINCRBY` + `PEXPIRE` per prefix) |
//! | `hint(segment, num=10)` | [`hint(segment, n)`](Autocomplete::hint) | `ZREVRANGE {subject}:<segment> 0 n-1` |
//! | (none) | [`remove(content)`](Autocomplete::remove) | script `autocomplete/remove` |
//!
//! What differs from the book, and why:
//!
//! - **`hint(0)` is refused.** The book sends `ZREVRANGE key 0 -1`: the whole table,
//!   which for a one-letter prefix is much of the vocabulary.
//! - **A suggestion can be removed** from every table of its prefixes in one step; the
//!   book has no way to take one back.
//! - **Tables can be capped** ([`with_cap`](Autocomplete::with_cap)): each feed drops the
//!   lightest entries beyond the cap (at most 100 per table per call). The book's tables
//!   grow with the vocabulary: a one-letter prefix's table holds every content that
//!   starts with that letter. With a cap, a new content lighter than all the kept ones is
//!   dropped at once, so feed weights that grow with use.
//! - A content is at most 64 characters (64 tables per feed, one step each).
//!
//! ## Memory
//!
//! A content of L characters is an entry in L tables, so the memory grows with the
//! vocabulary times the average length. Measured with `cargo run --example
//! autocomplete_memory` (random lowercase words of 4 to 10 letters, each fed once;
//! `used_memory` before and after; Redis 7.0.15 on x86-64):
//!
//! | Words | Tables | Entries | Memory | Per word |
//! |---|---|---|---|---|
//! | 1,000 | 5,525 | 7,017 | 0.8 MiB | 816 bytes |
//! | 10,000 | 48,074 | 69,812 | 6.6 MiB | 695 bytes |
//! | 100,000 | 407,972 | 700,288 | 69.2 MiB | 725 bytes |
//!
//! About 700 bytes a word, and linear: most long prefixes belong to one word only, so
//! most tables are keys of one entry, and a key's own overhead (about 100 bytes) is most
//! of the cost. Short prefixes' tables are few but large (a one-letter table holds every
//! word with that letter): [`with_cap`](Autocomplete::with_cap) bounds those, and
//! [`feedex`](Autocomplete::feedex) lets the cold long ones expire.
//!
//! All of a subject's tables are in one hash slot (the subject is the hash tag), so a
//! feed works on a cluster; a subject is one slot.

use std::time::Duration;

use crate::runtime::error::{Error, Result};
use crate::runtime::input;
use crate::runtime::op::Op;
use crate::scripts::autocomplete as script;

/// The most characters a content may have: one prefix table each.
pub const MAX_CONTENT_CHARS: usize = 64;

/// The suggestions of one subject. See the [module docs](self).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Autocomplete {
    subject: String,
    cap: Option<u64>,
}

impl Autocomplete {
    /// The suggestions of `subject`, with no cap. An empty subject, or one with a `}` but
    /// no hash tag, is [`Error::InvalidInput`].
    pub fn new(subject: impl Into<String>) -> Result<Self> {
        let subject = subject.into();
        input::aux_key_of("subject", &subject, "x")?;
        Ok(Autocomplete { subject, cap: None })
    }

    /// Keeps at most `cap` (1 to 1,000,000) entries in each prefix table.
    pub fn with_cap(mut self, cap: u64) -> Result<Self> {
        input::check_param(&script::FEED.args[4], Some(cap))?;
        self.cap = Some(cap);
        Ok(self)
    }

    /// The subject.
    pub fn subject(&self) -> &str {
        &self.subject
    }

    /// The key of `prefix`'s table, `{subject}:<prefix>`.
    pub fn table_key(&self, prefix: &str) -> Result<String> {
        if prefix.is_empty() {
            return Err(Error::invalid("segment", "must not be empty"));
        }
        script::keys::tables(&self.subject, prefix)
    }

    /// The keys of `content`'s prefix tables, shortest prefix first, cut by characters.
    pub fn table_keys(&self, content: &str) -> Result<Vec<String>> {
        let chars = content.chars().count();
        if chars == 0 || chars > MAX_CONTENT_CHARS {
            return Err(Error::invalid(
                "content",
                format!("must have from 1 to {MAX_CONTENT_CHARS} characters, got {chars}"),
            ));
        }
        content
            .char_indices()
            .map(|(at, c)| self.table_key(&content[..at + c.len_utf8()]))
            .collect()
    }

    /// Adds `weight` (finite) to `content`'s weight in each of its prefix tables (the
    /// book's `feed`). One script (`autocomplete/feed`).
    pub fn feed(&self, content: &str, weight: f64) -> Op<()> {
        self.write(content, weight, "incr", None)
    }

    /// Sets `content`'s weight to `weight` (finite) in each of its prefix tables (the
    /// book's `set`). One script (`autocomplete/feed`).
    pub fn set(&self, content: &str, weight: f64) -> Op<()> {
        self.write(content, weight, "set", None)
    }

    /// [`feed`](Self::feed), and each of the prefix tables expires `ttl` after this feed
    /// (the book's `feedex`: tables nobody feeds disappear). One script
    /// (`autocomplete/feed`).
    pub fn feedex(&self, content: &str, weight: f64, ttl: Duration) -> Op<()> {
        self.write(content, weight, "incr", Some(ttl))
    }

    fn write(&self, content: &str, weight: f64, mode: &str, ttl: Option<Duration>) -> Op<()> {
        Op::try_build(|| {
            let keys = self.table_keys(content)?;
            let keys: Vec<&str> = keys.iter().map(String::as_str).collect();
            Ok(script::feed(&keys, content, weight, mode, ttl, self.cap))
        })
    }

    /// Up to `n` (at least 1) suggestions for `segment`, heaviest first (`ZREVRANGE`);
    /// contents of equal weight in reverse byte order.
    pub fn hint(&self, segment: &str, n: usize) -> Op<Vec<String>> {
        Op::try_build(|| {
            let n = input::count("n", n)?;
            let mut cmd = redis::cmd("ZREVRANGE");
            cmd.arg(self.table_key(segment)?).arg(0).arg(n - 1);
            Ok(Op::native(cmd))
        })
    }

    /// Takes `content` out of each of its prefix tables: how many held it. One script
    /// (`autocomplete/remove`).
    pub fn remove(&self, content: &str) -> Op<u64> {
        Op::try_build(|| {
            let keys = self.table_keys(content)?;
            let keys: Vec<&str> = keys.iter().map(String::as_str).collect();
            Ok(script::remove(&keys, content))
        })
    }
}
