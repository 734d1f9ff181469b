//! A Bloom filter any language shares by its name (beyond the books).
//!
//! A Bloom filter answers "certainly not added" or "maybe added" for an item, in a fixed
//! number of bits: at `capacity` items it says "maybe" for about 1 in `one_in` items that
//! were never added, and never says "not added" for one that was. Here the scripts do
//! everything a client would otherwise do: they hash each item (its SHA-1), compute the
//! filter's size from `capacity` and `one_in`, store the parameters with the filter on its
//! first add, and check them on every call. So a Python, Node or Rust client shares a
//! filter with its name, its two parameters and raw bytes, and a call with other
//! parameters (or on a filter re-created with others) answers the declared error
//! `BAD_PARAMS` instead of a wrong "not added".
//!
//! **Size.** The filter has k = round(log2 one_in) hashes, and the fewest bits m with which
//! k hashes of `capacity` items give the rate, m = ⌈-k × capacity / ln(1 - one_in^(-1/k))⌉
//! (`bloom/add.lua` computes both; [`BloomFilter::bits`] tells them): 9.6 bits and 7
//! hashes per item at 1 in 100, 14.4 bits and 10 hashes at 1 in 1,000. One
//! partition holds at most 2^24 bits (2 MiB, about 1.7 million items at 1 in 100), so that
//! no call allocates more than a few milliseconds' worth; a larger filter is split into
//! partitions ([`BloomFilter::new`] picks the fewest, [`BloomFilter::with_partitions`] more), each a key pair with a hash tag of its
//! own, `{name:i}` (so a cluster spreads them), and each item belongs to the one its
//! SHA-1 names. A call covers one partition: [`add`](BloomFilter::add) and
//! [`contains`](BloomFilter::contains) take the items of one partition (any items when
//! there is one); [`add_all`](BloomFilter::add_all) and
//! [`contains_all`](BloomFilter::contains_all) split any items by partition, a call (a
//! round trip) per partition and per [`MAX_ITEMS_PER_CALL`] items: an item costs up to 30
//! bit operations (at 1 in 10^9), so a call stays within a few milliseconds. An add sets
//! each of an item's k bits; a check reads them up to the first 0, so an item never added
//! costs about one bit in a filter below its capacity.
//!
//! **Count.** Each partition counts the items that were new when added (that set at
//! least one bit): [`count`](BloomFilter::count) sums them, an estimate low by the items
//! that were already false positives when they were added.
//!
//! ```no_run
//! # fn demo() -> redis_patterns::Result<()> {
//! use redis_patterns::bloom::BloomFilter;
//!
//! let mut con = redis::Client::open("redis://127.0.0.1/")?.get_connection()?;
//! // One million items, one false positive in a thousand checks.
//! let seen = BloomFilter::new("seen-urls", 1_000_000, 1000)?;
//! assert_eq!(seen.add(&["https://a.example/"]).run(&mut con)?, vec![true]);
//! assert_eq!(seen.contains(&["https://a.example/", "https://b.example/"]).run(&mut con)?,
//!            vec![true, false]);
//! # Ok(()) }
//! ```
//!
//! | Key | Type | Holds |
//! |---|---|---|
//! | `{name}:bloom` | hash | `capacity`, `one_in`, `partitions`, `partition`, `m`, `k`, `added` |
//! | `{name}:bits` | string | the bitmap |
//!
//! With partitions, partition i is the pair `{name:i}:bloom`, `{name:i}:bits`.
//!
//! From another language, run the script with the parameters (here from redis-cli):
//!
//! ```text
//! $ redis-cli --eval scripts/bloom/add.lua '{seen-urls}:bloom' '{seen-urls}:bits' , 1000000 1000 1 0 https://a.example/
//! 1) (integer) 1
//! $ redis-cli --eval scripts/bloom/check.lua '{seen-urls}:bloom' '{seen-urls}:bits' , 1000000 1000 1 0 https://b.example/
//! 1) (integer) 0
//! ```
//!
//! **At a failover** the replica may miss the last adds: a later check of those items
//! answers "not added". Add with [`Op::wait_for`](crate::Op::wait_for) where that matters.
//!
//! # Beyond Redisson
//!
//! | | Redisson `RBloomFilter` | pottery `BloomFilter` | here |
//! |---|---|---|---|
//! | hashing | on the client (HighwayHash of the codec's bytes): only Redisson with the same codec shares it | on the client (mmh3) | in the script (SHA-1 of the raw bytes): any client shares it |
//! | parameters | stored; `contains` after another client re-created the filter answers "absent" for present items | only in the Python object | stored and checked on every call: `BAD_PARAMS`, never a wrong answer |
//! | size | at most 2^32 bits | one key | partitions of 2^24 bits (up to 1,024), spread over a cluster |
//! | count | `BITCOUNT` of the whole bitmap | `BITCOUNT` | a counter per partition: O(1) |
//! | writes | scripts | WATCH/MULTI | one script per call |

use redis::ToRedisArgs;

use crate::runtime::error::{Error, Result};
use crate::runtime::input;
use crate::runtime::machine::{self, Machine};
use crate::runtime::op::Op;
use crate::scripts;

/// The most bits one partition holds (2 MiB).
pub const MAX_PARTITION_BITS: u64 = 1 << 24;
/// The most items one call takes (the `items` bound of `bloom/add` and `bloom/check`).
pub const MAX_ITEMS_PER_CALL: usize = 100;

/// A Bloom filter shared by name (see the [module docs](self)).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BloomFilter {
    name: String,
    capacity: u64,
    one_in: u64,
    /// Each partition's `params` and `bits` keys.
    parts: Vec<(String, String)>,
}

/// What one partition holds ([`BloomFilter::info`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Info {
    /// The items the whole filter is made for.
    pub capacity: u64,
    /// Its false-positive rate at `capacity` items: 1 in `one_in`.
    pub one_in: u64,
    /// How many partitions the filter has.
    pub partitions: u64,
    /// Which one this is.
    pub partition: u64,
    /// The partition's bits.
    pub m: u64,
    /// The hashes per item.
    pub k: u64,
    /// The items that were new when added to this partition.
    pub added: u64,
}

impl BloomFilter {
    /// The filter `name` for `capacity` items at a false-positive rate of 1 in `one_in`,
    /// in the fewest partitions of at most 2^24 bits that hold it (one up to about 1.7
    /// million items at 1 in 100): ⌈m / 2^24⌉ for the whole filter's m (see
    /// [`with_partitions`](Self::with_partitions) for more).
    ///
    /// `capacity` from 1 to 10^10 and `one_in` from 2 to 10^9, and a filter that fits
    /// 1,024 partitions, else [`crate::Error::InvalidInput`]; so is an empty `name`.
    pub fn new(name: impl Into<String>, capacity: u64, one_in: u64) -> Result<Self> {
        let name = name.into();
        if !(1..=10_000_000_000).contains(&capacity) {
            return Err(Error::invalid(
                "capacity",
                format!("must be from 1 to 10^10, got {capacity}"),
            ));
        }
        if !(2..=1_000_000_000).contains(&one_in) {
            return Err(Error::invalid(
                "one_in",
                format!("must be from 2 to 10^9, got {one_in}"),
            ));
        }
        let (total, _) = shape(capacity, one_in, 1);
        let fewest = total.div_ceil(MAX_PARTITION_BITS).max(1);
        let filter = BloomFilter {
            parts: vec![part(&name)?],
            name,
            capacity,
            one_in,
        };
        filter.with_partitions(u32::try_from(fewest).unwrap_or(u32::MAX))
    }

    /// The filter split into `partitions` (1 to 1024), partition i at `{name:i}:bloom` and
    /// `{name:i}:bits` (`{name}:bloom` and `{name}:bits` for one): more than
    /// [`new`](Self::new) picks spreads a filter over more cluster nodes. Every client of
    /// a filter must use the same count: the filter stores it, and a call with another
    /// answers `BAD_PARAMS`. Too few partitions for the filter's size is
    /// [`crate::Error::InvalidInput`].
    pub fn with_partitions(mut self, partitions: u32) -> Result<Self> {
        if !(1..=1024).contains(&partitions) {
            return Err(Error::invalid(
                "partitions",
                format!(
                    "must be from 1 to 1024, got {partitions} (a filter needs a partition per 2^24 bits)"
                ),
            ));
        }
        self.parts = if partitions == 1 {
            vec![part(&self.name)?]
        } else {
            (0..partitions)
                .map(|i| part(&format!("{}:{i}", self.name)))
                .collect::<Result<_>>()?
        };
        self.check_size()?;
        Ok(self)
    }

    /// The bits m and hashes k of each partition, as the scripts compute them.
    pub fn bits(&self) -> (u64, u64) {
        shape(self.capacity, self.one_in, self.parts.len() as u64)
    }

    fn check_size(&self) -> Result<()> {
        let (m, _) = self.bits();
        if m > MAX_PARTITION_BITS {
            let needed = m.div_ceil(MAX_PARTITION_BITS) * self.parts.len() as u64;
            return Err(Error::invalid(
                "partitions",
                format!(
                    "{} items at 1 in {} need {m} bits per partition, more than 2^24: \
                     use at least {needed} partitions",
                    self.capacity, self.one_in
                ),
            ));
        }
        Ok(())
    }

    /// The partition `item` belongs to: the hex digits 25 to 32 of its SHA-1, as a
    /// number, modulo the partitions (as `bloom/add.lua` computes it).
    pub fn partition_of(&self, item: &[u8]) -> usize {
        let digest = sha1_smol::Sha1::from(item).digest().bytes();
        let word = u32::from_be_bytes([digest[12], digest[13], digest[14], digest[15]]);
        word as usize % self.parts.len()
    }

    /// The keys of partition `partition`: its parameters and its bits.
    pub fn keys(&self, partition: usize) -> Option<(&str, &str)> {
        self.parts
            .get(partition)
            .map(|(params, bits)| (params.as_str(), bits.as_str()))
    }

    /// Adds items of one partition (any items when the filter has one), up to
    /// [`MAX_ITEMS_PER_CALL`]:
    /// per item, true when it was new (it set a bit), false when it may have been added
    /// before. Items of several partitions are [`crate::Error::InvalidInput`]: use
    /// [`add_all`](Self::add_all). One script (`bloom/add`).
    pub fn add<V: ToRedisArgs>(&self, items: &[V]) -> Op<Vec<bool>> {
        Op::try_build(|| {
            let (partition, items) = self.one_partition(items)?;
            Ok(self.add_op(partition, &items))
        })
    }

    /// Checks items of one partition (any items when the filter has one), up to
    /// [`MAX_ITEMS_PER_CALL`]:
    /// per item, true when it may have been added, false when it certainly was not.
    /// Items of several partitions are [`crate::Error::InvalidInput`]: use
    /// [`contains_all`](Self::contains_all). One read-only script (`bloom/check`).
    pub fn contains<V: ToRedisArgs>(&self, items: &[V]) -> Op<Vec<bool>> {
        Op::try_build(|| {
            let (partition, items) = self.one_partition(items)?;
            Ok(self.check_op(partition, &items))
        })
    }

    /// Adds any items: per item, in order, as [`add`](Self::add) answers. One call per
    /// partition the items fall in and per [`MAX_ITEMS_PER_CALL`] items, each atomic on its
    /// own.
    pub fn add_all<V: ToRedisArgs>(
        &self,
        con: &mut dyn redis::ConnectionLike,
        items: &[V],
    ) -> Result<Vec<bool>> {
        machine::drive(&mut self.calls(items, Self::add_op)?.chain(), con)
    }

    /// Checks any items: per item, in order, as [`contains`](Self::contains) answers. One
    /// call per partition the items fall in and per [`MAX_ITEMS_PER_CALL`] items.
    pub fn contains_all<V: ToRedisArgs>(
        &self,
        con: &mut dyn redis::ConnectionLike,
        items: &[V],
    ) -> Result<Vec<bool>> {
        machine::drive(&mut self.calls(items, Self::check_op)?.chain(), con)
    }

    /// [`add_all`](Self::add_all) on an async connection.
    #[cfg(feature = "aio")]
    pub async fn add_all_async<V: ToRedisArgs, C: redis::aio::ConnectionLike>(
        &self,
        con: &mut C,
        items: &[V],
    ) -> Result<Vec<bool>> {
        machine::drive_async(&mut self.calls(items, Self::add_op)?.chain(), con).await
    }

    /// [`contains_all`](Self::contains_all) on an async connection.
    #[cfg(feature = "aio")]
    pub async fn contains_all_async<V: ToRedisArgs, C: redis::aio::ConnectionLike>(
        &self,
        con: &mut C,
        items: &[V],
    ) -> Result<Vec<bool>> {
        machine::drive_async(&mut self.calls(items, Self::check_op)?.chain(), con).await
    }

    /// The calls that cover `items`: one `op` per partition they fall in and per
    /// [`MAX_ITEMS_PER_CALL`].
    fn calls<V: ToRedisArgs>(&self, items: &[V], op: OpOf) -> Result<Calls> {
        let items = input::items(items)?;
        let total = items.len();
        let mut by_partition: Vec<Vec<(usize, Vec<u8>)>> = vec![Vec::new(); self.parts.len()];
        for (at, item) in items.into_iter().enumerate() {
            by_partition[self.partition_of(&item)].push((at, item));
        }
        let mut calls = Vec::new();
        for (partition, items) in by_partition.iter().enumerate() {
            for chunk in items.chunks(MAX_ITEMS_PER_CALL) {
                let (places, items): (Vec<usize>, Vec<Vec<u8>>) = chunk.iter().cloned().unzip();
                calls.push((op(self, partition, &items), places));
            }
        }
        Ok(Calls { total, calls })
    }

    /// What partition `partition` holds, or `None` before its first add. One read-only
    /// script (`bloom/info`).
    pub fn info(&self, partition: usize) -> Op<Option<Info>> {
        Op::try_build(|| {
            let (params, bits) = self.keys(partition).ok_or_else(|| {
                Error::invalid(
                    "partition",
                    format!("must be below {}, got {partition}", self.parts.len()),
                )
            })?;
            Ok(scripts::bloom::info(params, bits).map(|held| {
                Ok(held.map(
                    |(capacity, one_in, partitions, partition, m, k, added)| Info {
                        capacity,
                        one_in,
                        partitions,
                        partition,
                        m,
                        k,
                        added,
                    },
                ))
            }))
        })
    }

    /// The estimate of the items added: the sum of each partition's count of items that
    /// were new when added. One call per partition.
    pub fn count(&self, con: &mut dyn redis::ConnectionLike) -> Result<u64> {
        machine::drive(&mut self.counting(), con)
    }

    /// [`count`](Self::count) on an async connection.
    #[cfg(feature = "aio")]
    pub async fn count_async<C: redis::aio::ConnectionLike>(&self, con: &mut C) -> Result<u64> {
        machine::drive_async(&mut self.counting(), con).await
    }

    /// Each partition's `info`, their adds summed.
    fn counting(&self) -> impl Machine<Answer = Option<Info>, Output = Result<u64>> {
        let infos = (0..self.parts.len()).map(|partition| self.info(partition));
        machine::Chain::new(infos, 0, |total: &mut u64, info: Option<Info>| {
            *total += info.map_or(0, |info| info.added);
            Ok(None)
        })
    }

    fn args(&self, partition: usize) -> (&str, &str, u64, u64, u64, u64) {
        let (params, bits) = &self.parts[partition];
        (
            params,
            bits,
            self.capacity,
            self.one_in,
            self.parts.len() as u64,
            partition as u64,
        )
    }

    fn add_op(&self, partition: usize, items: &[Vec<u8>]) -> Op<Vec<bool>> {
        let (params, bits, capacity, one_in, partitions, partition) = self.args(partition);
        let items = input::slices(items);
        scripts::bloom::add(
            params, bits, capacity, one_in, partitions, partition, &items,
        )
        .map(flags)
    }

    fn check_op(&self, partition: usize, items: &[Vec<u8>]) -> Op<Vec<bool>> {
        let (params, bits, capacity, one_in, partitions, partition) = self.args(partition);
        let items = input::slices(items);
        scripts::bloom::check(
            params, bits, capacity, one_in, partitions, partition, &items,
        )
        .map(flags)
    }

    /// The items, all of one partition, and that partition.
    fn one_partition<V: ToRedisArgs>(&self, items: &[V]) -> Result<(usize, Vec<Vec<u8>>)> {
        let items = input::items(items)?;
        if items.len() > MAX_ITEMS_PER_CALL {
            return Err(Error::invalid(
                "items",
                format!(
                    "at most {MAX_ITEMS_PER_CALL} per call, got {}; use add_all or contains_all",
                    items.len()
                ),
            ));
        }
        let partition = self.partition_of(&items[0]);
        if let Some(other) = items
            .iter()
            .find(|item| self.partition_of(item) != partition)
        {
            return Err(Error::invalid(
                "items",
                format!(
                    "belong to several partitions ({partition} and {}); use add_all or contains_all",
                    self.partition_of(other)
                ),
            ));
        }
        Ok((partition, items))
    }
}

/// How a call of one partition's items is built: [`BloomFilter::add_op`] or
/// [`BloomFilter::check_op`].
type OpOf = fn(&BloomFilter, usize, &[Vec<u8>]) -> Op<Vec<bool>>;

/// The calls of an `add_all` or `contains_all`, each with the places of its items in the
/// caller's order.
struct Calls {
    total: usize,
    calls: Vec<(Op<Vec<bool>>, Vec<usize>)>,
}

impl Calls {
    /// The calls in order, each answer put in its items' places.
    fn chain(self) -> impl Machine<Answer = Vec<bool>, Output = Result<Vec<bool>>> {
        let (ops, places): (Vec<_>, Vec<_>) = self.calls.into_iter().unzip();
        let mut places = places.into_iter();
        let answers = vec![false; self.total];
        machine::Chain::new(ops, answers, move |answers: &mut Vec<bool>, found| {
            if let Some(places) = places.next() {
                place(answers, &places, found);
            }
            Ok(None)
        })
    }
}

fn place(answers: &mut [bool], places: &[usize], found: Vec<bool>) {
    for (at, answer) in places.iter().zip(found) {
        answers[*at] = answer;
    }
}

fn part(filter: &str) -> Result<(String, String)> {
    Ok((
        scripts::bloom::keys::params(filter)?,
        scripts::bloom::keys::bits(filter)?,
    ))
}

/// m and k as `bloom/_shared.lua`'s `filter_shape` computes them.
fn shape(capacity: u64, one_in: u64, partitions: u64) -> (u64, u64) {
    let one_in = one_in as f64;
    let k = (one_in.ln() / std::f64::consts::LN_2 + 0.5)
        .floor()
        .max(1.0);
    let total = (-k * capacity as f64 / (1.0 - one_in.powf(-1.0 / k)).ln()).ceil();
    ((total / partitions as f64).ceil() as u64, k as u64)
}

fn flags(answers: Vec<i64>) -> Result<Vec<bool>> {
    Ok(answers.into_iter().map(|a| a == 1).collect())
}
