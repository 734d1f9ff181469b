//! Boolean matrices in bitmaps: 《Redis 应用实例》 chapter 32 (`LogicalMatrix` and
//! `CompactLogicalMatrix`).
//!
//! ```no_run
//! # fn demo() -> redis_patterns::Result<()> {
//! use redis_patterns::logical_matrix::{CompactLogicalMatrix, LogicalMatrix};
//!
//! let mut con = redis::Client::open("redis://127.0.0.1/")?.get_connection()?;
//!
//! let m = LogicalMatrix::new("seats", 2, 3)?;
//! m.init(Some(&[vec![true, false, true], vec![false, false, true]])).run(&mut con)?;
//! m.set(1, 0, true).run(&mut con)?;
//! assert_eq!(m.get_row(1).run(&mut con)?, vec![true, false, true]);
//!
//! let c = CompactLogicalMatrix::new("seats:compact", 2, 3)?;
//! c.set(0, 2, true).run(&mut con)?;
//! assert!(c.get(0, 3).run(&mut con).is_err()); // col 3 is out of range, not row 1's col 0
//! assert_eq!(c.get_all().run(&mut con)?, vec![vec![false, false, true], vec![false; 3]]);
//! # Ok(()) }
//! ```
//!
//! | Type | Keys | Cell `(row, col)` |
//! |---|---|---|
//! | [`LogicalMatrix`] | one bitmap per row, `{id}:row:<r>` | bit `col` of row `row`'s bitmap |
//! | [`CompactLogicalMatrix`] | one bitmap | bit `row × cols + col` |
//!
//! Bits never written read as `false`, so a matrix that was never initialised reads as
//! all `false` (as in the book), and `set` on it creates it (after which `init` refuses:
//! the matrix exists).
//!
//! ## The book's methods
//!
//! | Book | Here | Wire |
//! |---|---|---|
//! | `LogicalMatrix(client, id, row_size, col_size)` | [`LogicalMatrix::new(id, rows, cols)`](LogicalMatrix::new) → `Result` | no I/O; the shape is checked here |
//! | `init(elements=None)` | [`init(Option<&[Vec<bool>]>)`](LogicalMatrix::init) | script `logical_matrix/init`: one `SET` per row |
//! | `set(row, col, value)` | [`set`](LogicalMatrix::set) | `SETBIT` |
//! | `get(row, col)` | [`get`](LogicalMatrix::get) → `bool` | `GETBIT` |
//! | `get_row(row)` | [`get_row`](LogicalMatrix::get_row) → `Vec<bool>` | `GET`, decoded in Rust |
//! | `get_all()` | [`get_all`](LogicalMatrix::get_all) → `Vec<Vec<bool>>` | script `logical_matrix/get_all`: one `GET` per row |
//! | `CompactLogicalMatrix(client, id, row_size, col_size)` | [`CompactLogicalMatrix::new(key, rows, cols)`](CompactLogicalMatrix::new) → `Result` | no I/O; the shape is checked here |
//! | `init` / `set` / `get` | [`init`](CompactLogicalMatrix::init) / [`set`](CompactLogicalMatrix::set) / [`get`](CompactLogicalMatrix::get) | script `logical_matrix/init` (one `SET`) / `SETBIT` / `GETBIT` |
//! | `get_row` / `get_all` | [`get_row`](CompactLogicalMatrix::get_row) / [`get_all`](CompactLogicalMatrix::get_all) | `GETRANGE` / `GET`, decoded in Rust |
//! | (beyond the book) | [`LogicalMatrix::set_row`], [`CompactLogicalMatrix::set_row`] | `SETRANGE` / one `BITFIELD` with a `SET u1` per cell: a whole row in one command |
//!
//! ## What differs from the book, and why
//!
//! - **Bounds checks.** Rows and columns are checked before any I/O, and the shape once,
//!   when the matrix is built (`new`): both fail with [`Error::InvalidInput`]. The book
//!   checks nothing, and its compact form reads and writes into the next row when
//!   `col >= cols`.
//! - **`init` writes the packed bitmaps, all or nothing, and only once.** The book sends
//!   one `SETBIT` per cell (rows × cols commands in a MULTI), does not check the shape,
//!   and overwrites an existing matrix cell by cell; its `init(None)` writes nothing. Here
//!   Rust packs each bitmap and the script `SET`s them, after checking that none exists
//!   (else the script error `EXISTS`, nothing written). `init(None)` writes zero bitmaps,
//!   so the matrix exists and takes its full memory at once.
//! - **Rows are read as bytes.** `get_row` and `get_all` read the bitmaps (`GET`,
//!   `GETRANGE`) and decode the bits in Rust: one round trip whose reply is cols / 8
//!   bytes per row. The book's MULTI of one GETBIT per cell answers one integer reply per
//!   cell (about 4 bytes each on the wire, and a command each to run); a BITFIELD with one
//!   `GET u1` per cell costs the same. `get_all` of [`LogicalMatrix`] is a read-only
//!   script (one `GET` per row, atomic), not `MGET`, which answers nil for a key of
//!   another type instead of failing with `WRONGTYPE`.
//!
//! ## Memory
//!
//! The same matrices in every form of chapters 31 and 32, filled with the same cells
//! (`(r × 7 + c × 3) % 5 == 0` for the boolean forms, `(r × 7 + c × 3) % 100` for the
//! integer ones), measured with `MEMORY USAGE key SAMPLES 0` summed over the matrix's keys
//! (Redis 7.0.15, 64-bit, jemalloc):
//!
//! | Form | 10 × 10 | 100 × 100 | 1000 × 1000 |
//! |---|---:|---:|---:|
//! | [`ListMatrix`](crate::matrix::ListMatrix) (`i64`) | 1,840 B (×20.9) | 37,600 B (×28.1) | 2,200,000 B (×16.8) |
//! | [`BitmapMatrix`](crate::matrix::BitmapMatrix) `i64` | 1,680 B (×19.1) | 96,800 B (×72.5) | 8,264,000 B (×63.0) |
//! | [`Matrix`](crate::matrix::Matrix) `i64` | 952 B (×10.8) | 81,976 B (×61.4) | 8,388,664 B (×64.0)¹ |
//! | [`BitmapMatrix`](crate::matrix::BitmapMatrix) `u8` | 880 B (×10.0) | 18,400 B (×13.8) | 1,096,000 B (×8.4) |
//! | [`Matrix`](crate::matrix::Matrix) `u8` | 168 B (×1.9) | 10,296 B (×7.7) | 1,048,632 B (×8.0) |
//! | [`LogicalMatrix`] | 896 B (×10.2) | 10,400 B (×7.8) | 232,000 B (×1.8) |
//! | [`CompactLogicalMatrix`] | 88 B (×1.0) | 1,336 B (×1.0) | 131,128 B (×1.0) |
//!
//! (×: the total divided by [`CompactLogicalMatrix`]'s for the same size. ¹ Measured
//! before one string of a matrix was capped at 1 MiB, what one bounded call writes: the
//! 8 MB `i64` [`Matrix`](crate::matrix::Matrix) can no longer be built, and
//! `cargo run --example matrix_memory` now shows it as over 1 MiB.) What the numbers say:
//!
//! - **Every key costs about 70–110 bytes** (its name, dictionary entry and object header)
//!   besides its value. A form with one key per row pays that once per row: a 10 × 10
//!   [`LogicalMatrix`] takes 10 times the memory of the compact one, though both hold 100
//!   bits. The gap closes as rows get longer (×1.8 at 1000 × 1000, where a row is 125
//!   bytes of bits in 232 bytes).
//! - **A single string is rounded up to the allocator's size class**: the compact
//!   1000 × 1000 bitmap is 125,000 bytes of bits in a 128 KiB allocation, and the `i64`
//!   [`Matrix`](crate::matrix::Matrix) 8,000,000 bytes in 8 MiB.
//! - **Narrow types matter more than layout** for integers: `u8` cells take an eighth of
//!   `i64`'s. A [`ListMatrix`](crate::matrix::ListMatrix) of small values (0 to 99 here) is
//!   smaller than an `i64` bitfield, because a list stores such integers in 2 bytes each;
//!   with large values it would not be.
//! - `init` creates each string at its exact size. Strings grown by `BITFIELD`/`SETBIT`
//!   alone (cells `set` on a missing matrix) are grown greedily, to up to twice their size.
//!
//! Rerun: `cargo run --example matrix_memory` (with `REDIS_URL=redis://…/15` to measure on
//! your own server; it writes and deletes only keys whose names start with `memory:` or
//! `{memory:`).

use std::ops::Range;

use crate::runtime::error::{Error, Result};
use crate::runtime::grid::{
    MAX_BYTES_PER_CALL, MAX_STRING_BITS, check_index, check_range, check_read, check_shape,
    flatten, row_chunks, row_keys, row_prefix, single,
};
use crate::runtime::input;
use crate::runtime::op::Op;
use crate::scripts;

/// A boolean matrix with one bitmap per row (`{id}:row:<r>`), the book's `LogicalMatrix`.
///
/// ```no_run
/// # fn demo() -> redis_patterns::Result<()> {
/// use redis_patterns::logical_matrix::LogicalMatrix;
///
/// let mut con = redis::Client::open("redis://127.0.0.1/")?.get_connection()?;
/// let follows = LogicalMatrix::new("follows", 3, 3)?;
/// follows.init(None).run(&mut con)?; // all false
/// follows.set(0, 2, true).run(&mut con)?;
/// assert!(follows.get(0, 2).run(&mut con)?);
/// assert_eq!(follows.get_all().run(&mut con)?[0], vec![false, false, true]);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogicalMatrix {
    id: String,
    rows: usize,
    cols: usize,
    /// `{id}:row:`, the key of row r without its r.
    row_prefix: String,
}

impl LogicalMatrix {
    /// The `rows` × `cols` matrix named `id`. No I/O.
    ///
    /// [`Error::InvalidInput`] names what is refused: `id` when empty, or when it holds a
    /// `}` but no hash tag (its rows could not share a cluster hash slot); `rows` or
    /// `cols` when 0, or `cols` when a row takes more than 1 MiB (2^23 bits).
    pub fn new(id: impl Into<String>, rows: usize, cols: usize) -> Result<Self> {
        let id = id.into();
        let row_prefix = row_prefix(&id)?;
        check_bitmap(rows, cols, cols)?;
        Ok(LogicalMatrix {
            id,
            rows,
            cols,
            row_prefix,
        })
    }

    /// The matrix's name.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The key of row `row`: `{id}:row:<row>` (`id:row:<row>` when `id` holds a hash tag).
    /// [`Error::InvalidInput`] (`row`) past the last row.
    pub fn row_key(&self, row: usize) -> Result<String> {
        check_index("row", row, self.rows)?;
        Ok(self.key_of(row))
    }

    /// The key of row `row`, a row of the matrix.
    fn key_of(&self, row: usize) -> String {
        format!("{}{row}", self.row_prefix)
    }

    /// Creates the matrix with `elements` (a slice of rows), or all `false` for `None`.
    ///
    /// One script (`logical_matrix/init`): one `SET` per row, every row or none. Fails
    /// with the script error `EXISTS` when a row exists (also one created by
    /// [`set`](Self::set)), writing nothing; with [`Error::InvalidInput`] (`elements`)
    /// for a wrong shape, or when the matrix takes more than 1 MiB (or 512 rows), what
    /// one call writes: build that one with [`init_chunks`](Self::init_chunks).
    pub fn init(&self, elements: Option<&[Vec<bool>]>) -> Op<()> {
        Op::try_build(|| single(self.init_ops(elements)?, MAX_BYTES_PER_CALL, "bytes"))
    }

    /// Creates the matrix in calls of at most 1 MiB and 512 rows each, whole rows each:
    /// run the operations in order. The first holds row 0, so of two clients building the
    /// same matrix the second fails at its first call (`EXISTS`) and writes nothing. The
    /// build is not atomic as a whole: readers see `false` in the rows not written yet.
    pub fn init_chunks(&self, elements: Option<&[Vec<bool>]>) -> Vec<Op<()>> {
        self.init_ops(elements)
            .unwrap_or_else(|err| vec![Op::rejected(err)])
    }

    fn init_ops(&self, elements: Option<&[Vec<bool>]>) -> Result<Vec<Op<()>>> {
        let packed: Vec<Vec<u8>> = match elements {
            Some(rows) => flatten(rows, self.rows, self.cols, |_| Ok(()))?
                .chunks(self.cols)
                .map(pack)
                .collect(),
            None => vec![Vec::new(); self.rows],
        };
        Ok(
            row_chunks(self.rows, self.cols.div_ceil(8), MAX_BYTES_PER_CALL)
                .map(|rows| {
                    let keys = row_keys(&self.row_prefix, rows.clone());
                    let keys: Vec<&str> = keys.iter().map(String::as_str).collect();
                    let packed: Vec<&[u8]> = packed[rows].iter().map(Vec::as_slice).collect();
                    scripts::logical_matrix::init(&keys, self.cols as u64, &packed)
                })
                .collect(),
        )
    }

    /// Sets one cell (`SETBIT row col 0|1`).
    pub fn set(&self, row: usize, col: usize, value: bool) -> Op<()> {
        Op::try_build(|| {
            self.check_cell(row, col)?;
            Ok(setbit(&self.key_of(row), col as u64, value))
        })
    }

    /// Rewrites a whole row in one command (`SETRANGE row 0 <packed bits>`), so a
    /// concurrent [`get_all`](Self::get_all) sees the row before or after, never half of
    /// each. Beyond the book.
    pub fn set_row(&self, row: usize, values: &[bool]) -> Op<()> {
        Op::try_build(|| {
            let key = self.row_key(row)?;
            check_row(values, self.cols)?;
            let mut cmd = redis::cmd("SETRANGE");
            cmd.arg(key).arg(0).arg(pack(values));
            Ok(Op::<i64>::native(cmd).map(|_| Ok(())))
        })
    }

    /// One cell (`GETBIT row col`); `false` when never written.
    pub fn get(&self, row: usize, col: usize) -> Op<bool> {
        Op::try_build(|| {
            self.check_cell(row, col)?;
            Ok(getbit(&self.key_of(row), col as u64))
        })
    }

    /// One row (`GET`, decoded in Rust); all `false` when never written.
    pub fn get_row(&self, row: usize) -> Op<Vec<bool>> {
        Op::try_build(|| {
            let mut cmd = redis::cmd("GET");
            cmd.arg(self.row_key(row)?);
            let cols = self.cols;
            Ok(Op::<Option<Vec<u8>>>::native(cmd)
                .map(move |bytes| Ok(unpack(&bytes.unwrap_or_default(), 0, cols))))
        })
    }

    /// Every cell, as a vector of rows, in one consistent read (script
    /// `logical_matrix/get_all`); `false` where never written. One call reads at most
    /// 1 MiB and 512 rows: read a bigger matrix with [`get_rows`](Self::get_rows).
    pub fn get_all(&self) -> Op<Vec<Vec<bool>>> {
        self.get_rows(0..self.rows)
    }

    /// The rows in `rows`, in one consistent read of at most 1 MiB and 512 rows (script
    /// `logical_matrix/get_all`). Reads of several ranges are each consistent, not
    /// consistent together: a write between two of them shows.
    pub fn get_rows(&self, rows: Range<usize>) -> Op<Vec<Vec<bool>>> {
        Op::try_build(|| {
            check_range(&rows, self.rows)?;
            check_read(rows.len(), self.cols.div_ceil(8))?;
            let keys = row_keys(&self.row_prefix, rows);
            let keys: Vec<&str> = keys.iter().map(String::as_str).collect();
            let cols = self.cols;
            Ok(scripts::logical_matrix::get_all(&keys)
                .map(move |rows| Ok(rows.iter().map(|bytes| unpack(bytes, 0, cols)).collect())))
        })
    }

    fn check_cell(&self, row: usize, col: usize) -> Result<()> {
        check_index("row", row, self.rows)?;
        check_index("col", col, self.cols)
    }
}

/// A boolean matrix in a single bitmap, bit `row × cols + col`: the book's
/// `CompactLogicalMatrix`, with bounds checks (the book's reads into the next row when
/// `col >= cols`).
///
/// ```no_run
/// # fn demo() -> redis_patterns::Result<()> {
/// use redis_patterns::logical_matrix::CompactLogicalMatrix;
///
/// let mut con = redis::Client::open("redis://127.0.0.1/")?.get_connection()?;
/// let m = CompactLogicalMatrix::new("board", 2, 2)?;
/// m.init(Some(&[vec![true, false], vec![false, true]])).run(&mut con)?;
/// assert_eq!(m.get_row(1).run(&mut con)?, vec![false, true]);
/// assert!(m.init(None).run(&mut con).is_err()); // EXISTS
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompactLogicalMatrix {
    key: String,
    rows: usize,
    cols: usize,
}

impl CompactLogicalMatrix {
    /// The `rows` × `cols` matrix stored at `key`. No I/O.
    ///
    /// [`Error::InvalidInput`] names what is refused: an empty `key`; `rows` or `cols`
    /// when 0, or `cols` when the matrix takes more than 1 MiB (2^23 bits).
    pub fn new(key: impl Into<String>, rows: usize, cols: usize) -> Result<Self> {
        let key = key.into();
        input::key("key", &key)?;
        check_bitmap(rows, cols, rows.saturating_mul(cols))?;
        Ok(CompactLogicalMatrix { key, rows, cols })
    }

    /// The matrix's key.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// Creates the matrix with `elements` (a slice of rows), or all `false` for `None`.
    ///
    /// One script (`logical_matrix/init`, one `SET`). Fails with the script error
    /// `EXISTS` when the key exists, writing nothing; with
    /// [`Error::InvalidInput`] (`elements`) for a wrong shape.
    pub fn init(&self, elements: Option<&[Vec<bool>]>) -> Op<()> {
        Op::try_build(|| {
            let cells = self.rows * self.cols;
            let packed = match elements {
                Some(rows) => pack(&flatten(rows, self.rows, self.cols, |_| Ok(()))?),
                None => Vec::new(),
            };
            Ok(scripts::logical_matrix::init(
                &[&self.key],
                cells as u64,
                &[&packed],
            ))
        })
    }

    /// Sets one cell (`SETBIT key row×cols+col 0|1`).
    pub fn set(&self, row: usize, col: usize, value: bool) -> Op<()> {
        Op::try_build(|| {
            let bit = self.bit(row, col)?;
            Ok(setbit(&self.key, bit, value))
        })
    }

    /// Rewrites a whole row in one command (`BITFIELD key SET u1 <bit> 0|1 …`, one `SET`
    /// per cell: a row need not start on a byte boundary), so a concurrent
    /// [`get_all`](Self::get_all) sees the row before or after, never half of each.
    /// Beyond the book.
    pub fn set_row(&self, row: usize, values: &[bool]) -> Op<()> {
        Op::try_build(|| {
            let first = self.bit(row, 0)?;
            check_row(values, self.cols)?;
            let mut cmd = redis::cmd("BITFIELD");
            cmd.arg(&self.key);
            for (bit, &value) in (first..).zip(values) {
                cmd.arg("SET").arg("u1").arg(bit).arg(u8::from(value));
            }
            Ok(Op::<Vec<i64>>::native(cmd).map(|_| Ok(())))
        })
    }

    /// One cell (`GETBIT key row×cols+col`); `false` when never written.
    pub fn get(&self, row: usize, col: usize) -> Op<bool> {
        Op::try_build(|| {
            let bit = self.bit(row, col)?;
            Ok(getbit(&self.key, bit))
        })
    }

    /// One row (`GETRANGE` of the bytes that hold it, decoded in Rust); all `false` when
    /// never written.
    pub fn get_row(&self, row: usize) -> Op<Vec<bool>> {
        Op::try_build(|| {
            let first = self.bit(row, 0)?;
            let last = first + self.cols as u64 - 1;
            let mut cmd = redis::cmd("GETRANGE");
            cmd.arg(&self.key).arg(first / 8).arg(last / 8);
            let cols = self.cols;
            Ok(Op::<Vec<u8>>::native(cmd).map(move |bytes| Ok(unpack(&bytes, first % 8, cols))))
        })
    }

    /// Every cell, as a vector of rows (`GET`, decoded in Rust): one command, so one
    /// consistent snapshot; `false` where never written.
    pub fn get_all(&self) -> Op<Vec<Vec<bool>>> {
        let mut cmd = redis::cmd("GET");
        cmd.arg(&self.key);
        let (rows, cols) = (self.rows, self.cols);
        Op::<Option<Vec<u8>>>::native(cmd).map(move |bytes| {
            let bytes = bytes.unwrap_or_default();
            Ok((0..rows as u64)
                .map(|r| unpack(&bytes, r * cols as u64, cols))
                .collect())
        })
    }

    /// The cell's bit `row × cols + col`, after the bounds checks.
    fn bit(&self, row: usize, col: usize) -> Result<u64> {
        check_index("row", row, self.rows)?;
        check_index("col", col, self.cols)?;
        Ok((row * self.cols + col) as u64)
    }
}

/// At least one row and one column, and `bits` within one bitmap's 2^23 bits (1 MiB).
fn check_bitmap(rows: usize, cols: usize, bits: usize) -> Result<()> {
    check_shape(rows, cols, None)?;
    if bits as u128 > MAX_STRING_BITS {
        return Err(Error::invalid(
            "cols",
            format!(
                "{bits} cells take more than the 2^23 bits (1 MiB) one bitmap of a matrix \
                 holds; use fewer cells, or a LogicalMatrix (a bitmap per row)"
            ),
        ));
    }
    Ok(())
}

/// `values` is one row of `cols` cells.
fn check_row(values: &[bool], cols: usize) -> Result<()> {
    if values.len() != cols {
        return Err(Error::invalid(
            "values",
            format!("must be one row of {cols} cells, got {}", values.len()),
        ));
    }
    Ok(())
}

fn setbit(key: &str, bit: u64, value: bool) -> Op<()> {
    let mut cmd = redis::cmd("SETBIT");
    cmd.arg(key).arg(bit).arg(u8::from(value));
    Op::<i64>::native(cmd).map(|_| Ok(()))
}

fn getbit(key: &str, bit: u64) -> Op<bool> {
    let mut cmd = redis::cmd("GETBIT");
    cmd.arg(key).arg(bit);
    Op::<i64>::native(cmd).map(|bit| Ok(bit == 1))
}

/// Bits packed as SETBIT numbers them: bit i is bit 7 - i % 8 of byte i / 8.
fn pack(bits: &[bool]) -> Vec<u8> {
    let mut bytes = vec![0; bits.len().div_ceil(8)];
    for (i, _) in bits.iter().enumerate().filter(|(_, bit)| **bit) {
        bytes[i / 8] |= 0x80 >> (i % 8);
    }
    bytes
}

/// `count` bits of `bytes` from bit `first`; bits past the end are `false`.
fn unpack(bytes: &[u8], first: u64, count: usize) -> Vec<bool> {
    (first..first + count as u64)
        .map(|i| {
            bytes
                .get((i / 8) as usize)
                .is_some_and(|byte| byte & (0x80 >> (i % 8)) != 0)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pack_and_unpack_agree_with_setbit_numbering() {
        let bits = [true, false, false, false, false, false, false, true, true];
        assert_eq!(pack(&bits), vec![0x81, 0x80]);
        assert_eq!(unpack(&[0x81, 0x80], 0, 9), bits);
        assert_eq!(unpack(&[0x81, 0x80], 7, 3), vec![true, true, false]);
    }
}
