//! Matrices of integers: 《Redis 应用实例》 chapter 31 (`ListMatrix`, `BitmapMatrix`, and the
//! unlisted `Matrix`).
//!
//! ```no_run
//! # fn demo() -> redis_patterns::Result<()> {
//! use redis_patterns::matrix::{BitmapMatrix, ListMatrix, Matrix, Width};
//!
//! let mut con = redis::Client::open("redis://127.0.0.1/")?.get_connection()?;
//!
//! let m = ListMatrix::new("m", 2, 3)?;
//! m.init(Some(&[vec![1, 2, 3], vec![4, 5, 6]])).run(&mut con)?;
//! m.set(1, 2, 60).run(&mut con)?;
//! assert_eq!(m.get_all().run(&mut con)?, Some(vec![vec![1, 2, 3], vec![4, 5, 60]]));
//! assert!(m.init(None).run(&mut con).is_err()); // EXISTS: nothing written
//!
//! let b = BitmapMatrix::new("b", 2, 3, Width::U8)?;
//! b.init(None).run(&mut con)?;
//! b.set(0, 1, 255).run(&mut con)?;
//! assert_eq!(b.get_row(0).run(&mut con)?, vec![0, 255, 0]);
//! assert!(b.set(0, 1, 256).run(&mut con).is_err()); // InvalidInput, before any I/O
//!
//! let s = Matrix::new("s", 2, 2, Width::I16)?;
//! assert_eq!(s.set(1, 1, -7).run(&mut con)?, 0); // the old value
//! assert_eq!(s.get_all().run(&mut con)?, vec![vec![0, 0], vec![0, -7]]);
//! # Ok(()) }
//! ```
//!
//! Three layouts of the same M × N matrix:
//!
//! | Type | Keys | Cells | A missing matrix |
//! |---|---|---|---|
//! | [`ListMatrix`] | one list per row, `{id}:row:<r>` | `i64`, stored as decimal text | reads as `None`; `set` fails (`ERR no such key`) |
//! | [`BitmapMatrix`] | one BITFIELD string per row, `{id}:row:<r>` | a [`Width`] (`i8` … `i64`, `u8` … `u63`) | reads as zeros; `set` creates it |
//! | [`Matrix`] | one BITFIELD string, cell `#(row × N + col)` | a [`Width`] | reads as zeros; `set` creates it |
//!
//! A list can tell a missing row from a row of zeros, so [`ListMatrix`] reads answer
//! `Option`. A BITFIELD string reads as zero bits past its end, exactly as the book's
//! `get` says ("0 if unset"), so the bitfield forms answer zeros for cells never written,
//! and a `set` on a missing matrix creates it (after which `init` refuses: the matrix
//! exists). Row keys are `{id}:row:<r>`: every row of a matrix is in one cluster hash
//! slot, so `init` and `get_all` are single scripts on a cluster too.
//!
//! ## The book's methods
//!
//! | Book | Here | Wire |
//! |---|---|---|
//! | `ListMatrix(client, id, M, N)` | [`ListMatrix::new(id, M, N)`](ListMatrix::new) → `Result` | no I/O; the shape is checked here |
//! | `init(elements=None)` | [`init(Option<&[Vec<i64>]>)`](ListMatrix::init) | script `matrix/list_init` |
//! | `set(row, col, value)` | [`set`](ListMatrix::set) | `LSET` |
//! | `get(row, col)` | [`get`](ListMatrix::get) → `Option<i64>` | `LINDEX` |
//! | `get_row(row)` | [`get_row`](ListMatrix::get_row) → `Option<Vec<i64>>` | `LRANGE` |
//! | `get_all()` | [`get_all`](ListMatrix::get_all) → `Option<Vec<Vec<i64>>>` | script `matrix/list_get_all` |
//! | `BitmapMatrix(client, id, M, N, type)` | [`BitmapMatrix::new(id, M, N, Width)`](BitmapMatrix::new) → `Result` | no I/O; the shape is checked here |
//! | `init(elements=None)` | [`init`](BitmapMatrix::init) | script `matrix/bitfield_init` |
//! | `set` / `get` | [`set`](BitmapMatrix::set) / [`get`](BitmapMatrix::get) | `BITFIELD … SET` / `BITFIELD_RO … GET` |
//! | `get_row(row)` | [`get_row`](BitmapMatrix::get_row) | `GET`, decoded in Rust |
//! | `get_all()` | [`get_all`](BitmapMatrix::get_all) | script `matrix/bitmap_get_all` |
//! | `Matrix(client, key, M, N, type)` | [`Matrix::new(key, M, N, Width)`](Matrix::new) → `Result` | no I/O; the shape is checked here |
//! | `init` / `set` (old value) / `get` | [`init`](Matrix::init) / [`set`](Matrix::set) / [`get`](Matrix::get) | script `matrix/bitfield_init` / `BITFIELD` / `BITFIELD_RO` |
//! | `get_row` / `get_all` | [`get_row`](Matrix::get_row) / [`get_all`](Matrix::get_all) | `GETRANGE` / `GET`, decoded in Rust |
//! | (beyond the book) | [`BitmapMatrix::set_row`], [`Matrix::set_row`] | one `BITFIELD` with a `SET` per cell |
//!
//! ## What differs from the book, and why
//!
//! - **Every `BitmapMatrix` has its own keys.** The book's `make_row_key` formats Python's
//!   built-in `id` instead of the matrix id, so every BitmapMatrix shares the keys
//!   `matrix:<built-in function id>:<row>` and a second matrix's `init` fails.
//! - **`init` is atomic: all or nothing.** The book checks `EXISTS` on row 0 (with an
//!   `assert`, skipped under `python -O`), then writes one row per round trip, so two
//!   clients can both pass the check and fill a ListMatrix twice. Here `init` is one script
//!   that checks every row and writes all of them, or writes nothing and fails with the
//!   script error `EXISTS` ([`Error::Script`]). The bitfield forms' `init(None)` writes
//!   zeros (the book writes nothing, so its matrix does not exist afterwards).
//! - **Bounds checks.** Every row, column and value is checked before any I/O and fails
//!   with [`Error::InvalidInput`]: the book's ListMatrix `get` raises `TypeError` past the
//!   end, and its bitmap forms read or write any offset, silently wrapping values that do
//!   not fit the type. Shapes are checked once, when the matrix is built (`new`): at
//!   least one row and one column, a string of a bitfield form holds at most 1 MiB, and
//!   a [`ListMatrix`] has at most 2,048 columns; so is the name, whose rows must share
//!   its cluster hash slot.
//! - **Bounded calls.** One script call writes or reads at most 2,048 cells
//!   ([`ListMatrix::init`]), 8,192 cells ([`ListMatrix::get_all`]) or 1 MiB and 512
//!   rows (the bitfield and logical forms), so that no call holds Redis up for long. A
//!   bigger matrix is built with `init_chunks` (several calls, whole rows each, the first
//!   one holding row 0, so a concurrent `init` still fails) and read with `get_rows`, a
//!   range of rows at a time: each call is one consistent read, several calls are not.
//! - **`get_all` is one consistent snapshot**, in one round trip: the book sends one
//!   command per row, so a write in between shows a matrix that never existed. The
//!   bitfield forms add `set_row`, one command, so a reader never sees half a row
//!   rewritten. [`ListMatrix`] has no `set_row`: rewriting a list in place takes a command
//!   per cell (`LSET`) or a delete and a push, so it would need a script of its own.
//! - **Typed cells.** The book's ListMatrix holds whatever `int()` accepts; here cells are
//!   `i64` (checked by the script too, for callers in other languages).
//! - **Rows are read as bytes.** `get_row`/`get_all` of the bitfield forms read the string
//!   (`GET`/`GETRANGE`) and decode the big-endian fields in Rust, instead of one BITFIELD
//!   `GET` per cell: the reply is the packed cells, not N integer replies.
//!
//! The memory each layout takes is measured in [`crate::logical_matrix`].

use std::ops::Range;

use crate::runtime::error::{Error, Result};
use crate::runtime::grid::{
    MAX_BYTES_PER_CALL, MAX_KEYS_PER_CALL, check_index, check_range, check_read, check_shape,
    flatten, row_chunks, row_keys, row_prefix, single, too_many,
};
use crate::runtime::input;
use crate::runtime::op::Op;
use crate::scripts;

pub use crate::counter::Width;

/// The most cells one `matrix/list_init` call writes (the script's cap), and the most
/// columns a [`ListMatrix`] has.
const LIST_INIT_CELLS: usize = 2048;

/// The most cells one `matrix/list_get_all` call reads (the script's cap).
const LIST_READ_CELLS: usize = 8192;

/// A matrix of `i64` with one list per row (`{id}:row:<r>`), the book's `ListMatrix`.
///
/// ```no_run
/// # fn demo() -> redis_patterns::Result<()> {
/// use redis_patterns::matrix::ListMatrix;
///
/// let mut con = redis::Client::open("redis://127.0.0.1/")?.get_connection()?;
/// let m = ListMatrix::new("scores", 2, 2)?;
/// assert_eq!(m.get(0, 0).run(&mut con)?, None); // not initialised
/// m.init(None).run(&mut con)?; // zeros
/// m.set(0, 1, -5).run(&mut con)?;
/// assert_eq!(m.get_row(0).run(&mut con)?, Some(vec![0, -5]));
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListMatrix {
    id: String,
    rows: usize,
    cols: usize,
    /// `{id}:row:`, the key of row r without its r.
    row_prefix: String,
}

impl ListMatrix {
    /// The `rows` × `cols` matrix named `id`. No I/O.
    ///
    /// [`Error::InvalidInput`] names what is refused: `id` when empty, or when it holds a
    /// `}` but no hash tag (its rows could not share a cluster hash slot); `rows` or
    /// `cols` when 0, or when `cols` is over 2,048 (a row is written in one call).
    pub fn new(id: impl Into<String>, rows: usize, cols: usize) -> Result<Self> {
        let id = id.into();
        let row_prefix = row_prefix(&id)?;
        check_shape(rows, cols, None)?;
        input::check_param(&scripts::matrix::LIST_INIT.args[0], cols as u64)?;
        Ok(ListMatrix {
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

    /// Creates the matrix with `elements` (a slice of rows), or with zeros for `None`.
    ///
    /// One script (`matrix/list_init`): every row or none. Fails with the script error
    /// `EXISTS` when a row of the matrix exists, writing nothing; with
    /// [`Error::InvalidInput`] (`elements`) when the shape is not rows × cols, or when
    /// the matrix has more than 2,048 cells, what one call writes: build that one with
    /// [`init_chunks`](Self::init_chunks).
    pub fn init(&self, elements: Option<&[Vec<i64>]>) -> Op<()> {
        Op::try_build(|| single(self.init_ops(elements)?, LIST_INIT_CELLS, "cells"))
    }

    /// Creates the matrix in calls of at most 2,048 cells each, whole rows each: run the
    /// operations in order. The first holds row 0, so of two clients building the same
    /// matrix the second fails at its first call (`EXISTS`) and writes nothing. The
    /// build is not atomic as a whole: readers see the rows written so far, and a client
    /// that stops halfway leaves a partial matrix (its remaining rows missing), which
    /// [`get_all`](Self::get_all) reports as damaged.
    pub fn init_chunks(&self, elements: Option<&[Vec<i64>]>) -> Vec<Op<()>> {
        self.init_ops(elements)
            .unwrap_or_else(|err| vec![Op::rejected(err)])
    }

    fn init_ops(&self, elements: Option<&[Vec<i64>]>) -> Result<Vec<Op<()>>> {
        let values = match elements {
            Some(rows) => flatten(rows, self.rows, self.cols, |_| Ok(()))?,
            None => Vec::new(),
        };
        Ok(row_chunks(self.rows, self.cols, LIST_INIT_CELLS)
            .map(|rows| {
                let keys = row_keys(&self.row_prefix, rows.clone());
                let keys: Vec<&str> = keys.iter().map(String::as_str).collect();
                let values = if values.is_empty() {
                    &[][..]
                } else {
                    &values[rows.start * self.cols..rows.end * self.cols]
                };
                scripts::matrix::list_init(&keys, self.cols as u64, values)
            })
            .collect())
    }

    /// Sets one cell (`LSET`). Fails with the server's `ERR no such key` when the matrix
    /// was not initialised.
    pub fn set(&self, row: usize, col: usize, value: i64) -> Op<()> {
        Op::try_build(|| {
            self.check_cell(row, col)?;
            let mut cmd = redis::cmd("LSET");
            cmd.arg(self.key_of(row)).arg(col).arg(value);
            Ok(Op::native(cmd))
        })
    }

    /// One cell (`LINDEX`); `None` when the matrix was not initialised.
    pub fn get(&self, row: usize, col: usize) -> Op<Option<i64>> {
        Op::try_build(|| {
            self.check_cell(row, col)?;
            let mut cmd = redis::cmd("LINDEX");
            cmd.arg(self.key_of(row)).arg(col);
            Ok(Op::native(cmd))
        })
    }

    /// One row (`LRANGE`); `None` when the matrix was not initialised.
    pub fn get_row(&self, row: usize) -> Op<Option<Vec<i64>>> {
        Op::try_build(|| {
            let mut cmd = redis::cmd("LRANGE");
            cmd.arg(self.row_key(row)?).arg(0).arg(-1);
            let cols = self.cols;
            Ok(
                Op::<Vec<i64>>::native(cmd).map(move |cells| match cells.len() {
                    0 => Ok(None),
                    n if n == cols => Ok(Some(cells)),
                    n => Err(damaged(format!("the row holds {n} cells, not {cols}"))),
                }),
            )
        })
    }

    /// Every cell, as a vector of rows, in one consistent read (script
    /// `matrix/list_get_all`); `None` when the matrix was not initialised. One call reads
    /// at most 8,192 cells: read a bigger matrix with [`get_rows`](Self::get_rows).
    pub fn get_all(&self) -> Op<Option<Vec<Vec<i64>>>> {
        self.get_rows(0..self.rows)
    }

    /// The rows in `rows`, in one consistent read of at most 8,192 cells (script
    /// `matrix/list_get_all`); `None` when none of them exists. Reads of several ranges
    /// are each consistent, not consistent together: a write between two of them shows.
    pub fn get_rows(&self, rows: Range<usize>) -> Op<Option<Vec<Vec<i64>>>> {
        Op::try_build(|| {
            check_range(&rows, self.rows)?;
            if rows.len() > MAX_KEYS_PER_CALL {
                return Err(too_many(rows.len(), 1, "rows", MAX_KEYS_PER_CALL));
            }
            if rows.len() * self.cols > LIST_READ_CELLS {
                return Err(too_many(rows.len(), self.cols, "cells", LIST_READ_CELLS));
            }
            let keys = row_keys(&self.row_prefix, rows);
            let keys: Vec<&str> = keys.iter().map(String::as_str).collect();
            let cols = self.cols;
            Ok(scripts::matrix::list_get_all(&keys).map(move |rows| {
                if rows.iter().all(Vec::is_empty) {
                    return Ok(None);
                }
                match rows.iter().position(|row| row.len() != cols) {
                    None => Ok(Some(rows)),
                    Some(r) => Err(damaged(format!(
                        "row {r} of the range holds {} cells, not {cols}: the matrix is \
                         partly built, or changed by other means",
                        rows[r].len()
                    ))),
                }
            }))
        })
    }

    fn check_cell(&self, row: usize, col: usize) -> Result<()> {
        check_index("row", row, self.rows)?;
        check_index("col", col, self.cols)
    }
}

/// A matrix of typed integers with one BITFIELD string per row (`{id}:row:<r>`), the
/// book's `BitmapMatrix`, without its key-name bug: each matrix has its own keys.
///
/// ```no_run
/// # fn demo() -> redis_patterns::Result<()> {
/// use redis_patterns::matrix::{BitmapMatrix, Width};
///
/// let mut con = redis::Client::open("redis://127.0.0.1/")?.get_connection()?;
/// let m = BitmapMatrix::new("pixels", 2, 3, Width::I8)?;
/// m.init(Some(&[vec![1, -2, 3], vec![-4, 5, -6]])).run(&mut con)?;
/// m.set(1, 0, 127).run(&mut con)?;
/// assert_eq!(m.get(1, 0).run(&mut con)?, 127);
/// assert_eq!(m.get_all().run(&mut con)?, vec![vec![1, -2, 3], vec![127, 5, -6]]);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BitmapMatrix {
    id: String,
    rows: usize,
    cols: usize,
    width: Width,
    /// `{id}:row:`, the key of row r without its r.
    row_prefix: String,
}

impl BitmapMatrix {
    /// The `rows` × `cols` matrix named `id`, with cells of type `width`. No I/O.
    ///
    /// [`Error::InvalidInput`] names what is refused: `id` when empty, or when it holds a
    /// `}` but no hash tag (its rows could not share a cluster hash slot); `rows` or
    /// `cols` when 0, or `cols` when a row takes more than 1 MiB.
    pub fn new(id: impl Into<String>, rows: usize, cols: usize, width: Width) -> Result<Self> {
        let id = id.into();
        let row_prefix = row_prefix(&id)?;
        check_shape(rows, cols, Some((cols, width.bits(), width.as_str())))?;
        Ok(BitmapMatrix {
            id,
            rows,
            cols,
            width,
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

    /// Creates the matrix with `elements` (a slice of rows), or with zeros for `None`.
    ///
    /// One script (`matrix/bitfield_init`): every row or none. Fails with the script error
    /// `EXISTS` when a row exists (also one created by [`set`](Self::set)), writing
    /// nothing; with [`Error::InvalidInput`] (`elements`) for a wrong shape or a value
    /// outside the cell type, or when the matrix takes more than 1 MiB (or 512 rows),
    /// what one call writes: build that one with [`init_chunks`](Self::init_chunks).
    pub fn init(&self, elements: Option<&[Vec<i64>]>) -> Op<()> {
        Op::try_build(|| single(self.init_ops(elements)?, MAX_BYTES_PER_CALL, "bytes"))
    }

    /// Creates the matrix in calls of at most 1 MiB and 512 rows each, whole rows each:
    /// run the operations in order. The first holds row 0, so of two clients building the
    /// same matrix the second fails at its first call (`EXISTS`) and writes nothing. The
    /// build is not atomic as a whole: readers see zeros in the rows not written yet.
    pub fn init_chunks(&self, elements: Option<&[Vec<i64>]>) -> Vec<Op<()>> {
        self.init_ops(elements)
            .unwrap_or_else(|err| vec![Op::rejected(err)])
    }

    fn init_ops(&self, elements: Option<&[Vec<i64>]>) -> Result<Vec<Op<()>>> {
        let packed: Vec<Vec<u8>> = match elements {
            Some(rows) => flatten(rows, self.rows, self.cols, |v| fits(self.width, v))?
                .chunks(self.cols)
                .map(|row| encode(row, self.width))
                .collect(),
            None => vec![Vec::new(); self.rows],
        };
        Ok(row_chunks(self.rows, self.row_bytes(), MAX_BYTES_PER_CALL)
            .map(|rows| {
                let keys = row_keys(&self.row_prefix, rows.clone());
                let keys: Vec<&str> = keys.iter().map(String::as_str).collect();
                let packed: Vec<&[u8]> = packed[rows].iter().map(Vec::as_slice).collect();
                scripts::matrix::bitfield_init(
                    &keys,
                    self.width.as_str(),
                    self.cols as u64,
                    &packed,
                )
            })
            .collect())
    }

    /// Sets one cell (`BITFIELD row SET type #col value`); `value` must fit the cell type.
    pub fn set(&self, row: usize, col: usize, value: i64) -> Op<()> {
        Op::try_build(|| {
            self.check_cell(row, col)?;
            fits(self.width, value).map_err(|why| Error::invalid("value", why))?;
            Ok(bitfield_set(&self.key_of(row), self.width, col as u64, value).map(|_| Ok(())))
        })
    }

    /// Rewrites a whole row in one command (`BITFIELD row SET type #0 v0 SET type #1 v1 …`),
    /// so a concurrent [`get_all`](Self::get_all) sees the row before or after, never
    /// half of each. Beyond the book. Every value must fit the cell type.
    pub fn set_row(&self, row: usize, values: &[i64]) -> Op<()> {
        Op::try_build(|| {
            let key = self.row_key(row)?;
            check_row(values, self.cols, self.width)?;
            Ok(bitfield_set_all(&key, self.width, 0, values))
        })
    }

    /// One cell (`BITFIELD_RO row GET type #col`); 0 when never written.
    pub fn get(&self, row: usize, col: usize) -> Op<i64> {
        Op::try_build(|| {
            self.check_cell(row, col)?;
            Ok(bitfield_get(&self.key_of(row), self.width, col as u64))
        })
    }

    /// One row (`GET`, decoded in Rust); zeros when never written.
    pub fn get_row(&self, row: usize) -> Op<Vec<i64>> {
        Op::try_build(|| {
            let mut cmd = redis::cmd("GET");
            cmd.arg(self.row_key(row)?);
            let (width, cols) = (self.width, self.cols);
            Ok(Op::<Option<Vec<u8>>>::native(cmd)
                .map(move |bytes| Ok(decode(&bytes.unwrap_or_default(), 0, cols, width))))
        })
    }

    /// Every cell, as a vector of rows, in one consistent read (script
    /// `matrix/bitmap_get_all`); zeros where never written. One call reads at most 1 MiB
    /// and 512 rows: read a bigger matrix with [`get_rows`](Self::get_rows).
    pub fn get_all(&self) -> Op<Vec<Vec<i64>>> {
        self.get_rows(0..self.rows)
    }

    /// The rows in `rows`, in one consistent read of at most 1 MiB and 512 rows (script
    /// `matrix/bitmap_get_all`). Reads of several ranges are each consistent, not
    /// consistent together: a write between two of them shows.
    pub fn get_rows(&self, rows: Range<usize>) -> Op<Vec<Vec<i64>>> {
        Op::try_build(|| {
            check_range(&rows, self.rows)?;
            check_read(rows.len(), self.row_bytes())?;
            let keys = row_keys(&self.row_prefix, rows);
            let keys: Vec<&str> = keys.iter().map(String::as_str).collect();
            let (width, cols) = (self.width, self.cols);
            Ok(scripts::matrix::bitmap_get_all(&keys).map(move |rows| {
                Ok(rows
                    .iter()
                    .map(|bytes| decode(bytes, 0, cols, width))
                    .collect())
            }))
        })
    }

    /// The bytes of one row's string.
    fn row_bytes(&self) -> usize {
        (self.cols * self.width.bits() as usize).div_ceil(8)
    }

    fn check_cell(&self, row: usize, col: usize) -> Result<()> {
        check_index("row", row, self.rows)?;
        check_index("col", col, self.cols)
    }
}

/// A matrix of typed integers in one BITFIELD string, cell `#(row × cols + col)`: the
/// book's unlisted `Matrix`.
///
/// ```no_run
/// # fn demo() -> redis_patterns::Result<()> {
/// use redis_patterns::matrix::{Matrix, Width};
///
/// let mut con = redis::Client::open("redis://127.0.0.1/")?.get_connection()?;
/// let m = Matrix::new("grid", 3, 3, Width::U16)?;
/// m.init(None).run(&mut con)?;
/// assert_eq!(m.set(2, 2, 65535).run(&mut con)?, 0); // the old value
/// assert_eq!(m.get_row(2).run(&mut con)?, vec![0, 0, 65535]);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Matrix {
    key: String,
    rows: usize,
    cols: usize,
    width: Width,
}

impl Matrix {
    /// The `rows` × `cols` matrix stored at `key`, with cells of type `width`. No I/O.
    ///
    /// [`Error::InvalidInput`] names what is refused: an empty `key`; `rows` or `cols`
    /// when 0, or `cols` when the matrix takes more than 1 MiB.
    pub fn new(key: impl Into<String>, rows: usize, cols: usize, width: Width) -> Result<Self> {
        let key = key.into();
        input::key("key", &key)?;
        check_shape(
            rows,
            cols,
            Some((rows.saturating_mul(cols), width.bits(), width.as_str())),
        )?;
        Ok(Matrix {
            key,
            rows,
            cols,
            width,
        })
    }

    /// The matrix's key.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// Creates the matrix with `elements` (a slice of rows), or with zeros for `None`.
    ///
    /// One script (`matrix/bitfield_init`, one key of rows × cols cells). Fails with the
    /// script error `EXISTS` when the key exists, writing nothing; with
    /// [`Error::InvalidInput`] (`elements`) for a wrong shape or a value outside the type.
    pub fn init(&self, elements: Option<&[Vec<i64>]>) -> Op<()> {
        Op::try_build(|| {
            let packed = match elements {
                Some(rows) => encode(
                    &flatten(rows, self.rows, self.cols, |v| fits(self.width, v))?,
                    self.width,
                ),
                None => Vec::new(),
            };
            Ok(scripts::matrix::bitfield_init(
                &[&self.key],
                self.width.as_str(),
                (self.rows * self.cols) as u64,
                &[&packed],
            ))
        })
    }

    /// Sets one cell and returns its old value (`BITFIELD key SET type #offset value`), as
    /// the book's `Matrix.set` does; `value` must fit the cell type.
    pub fn set(&self, row: usize, col: usize, value: i64) -> Op<i64> {
        Op::try_build(|| {
            let offset = self.offset(row, col)?;
            fits(self.width, value).map_err(|why| Error::invalid("value", why))?;
            Ok(bitfield_set(&self.key, self.width, offset, value))
        })
    }

    /// Rewrites a whole row in one command (`BITFIELD key SET type #o v …`, one `SET` per
    /// cell), so a concurrent [`get_all`](Self::get_all) sees the row before or after,
    /// never half of each. Beyond the book. Every value must fit the cell type.
    pub fn set_row(&self, row: usize, values: &[i64]) -> Op<()> {
        Op::try_build(|| {
            let first = self.offset(row, 0)?;
            check_row(values, self.cols, self.width)?;
            Ok(bitfield_set_all(&self.key, self.width, first, values))
        })
    }

    /// One cell (`BITFIELD_RO key GET type #offset`); 0 when never written.
    pub fn get(&self, row: usize, col: usize) -> Op<i64> {
        Op::try_build(|| {
            let offset = self.offset(row, col)?;
            Ok(bitfield_get(&self.key, self.width, offset))
        })
    }

    /// One row (`GETRANGE` of the bytes that hold it, decoded in Rust); zeros when never
    /// written.
    pub fn get_row(&self, row: usize) -> Op<Vec<i64>> {
        Op::try_build(|| {
            let first = self.offset(row, 0)? * self.width.bits();
            let end = first + self.cols as u64 * self.width.bits(); // exclusive
            let mut cmd = redis::cmd("GETRANGE");
            cmd.arg(&self.key).arg(first / 8).arg((end - 1) / 8);
            let (width, cols) = (self.width, self.cols);
            Ok(Op::<Vec<u8>>::native(cmd)
                .map(move |bytes| Ok(decode(&bytes, first % 8, cols, width))))
        })
    }

    /// Every cell, as a vector of rows (`GET`, decoded in Rust): one command, so one
    /// consistent snapshot; zeros where never written.
    pub fn get_all(&self) -> Op<Vec<Vec<i64>>> {
        let mut cmd = redis::cmd("GET");
        cmd.arg(&self.key);
        let (width, rows, cols) = (self.width, self.rows, self.cols);
        Op::<Option<Vec<u8>>>::native(cmd).map(move |bytes| {
            let bytes = bytes.unwrap_or_default();
            let bits = cols as u64 * width.bits();
            Ok((0..rows as u64)
                .map(|r| decode(&bytes, r * bits, cols, width))
                .collect())
        })
    }

    /// The cell's index `row × cols + col`, after the bounds checks.
    fn offset(&self, row: usize, col: usize) -> Result<u64> {
        check_index("row", row, self.rows)?;
        check_index("col", col, self.cols)?;
        Ok((row * self.cols + col) as u64)
    }
}

/// `Ok` when `value` fits the cell type, else what the type accepts.
fn fits(width: Width, value: i64) -> std::result::Result<(), String> {
    let (min, max) = width.range();
    if (min..=max).contains(&value) {
        Ok(())
    } else {
        Err(format!(
            "{value} does not fit a {} cell ({min} to {max})",
            width.as_str()
        ))
    }
}

fn bitfield_set(key: &str, width: Width, index: u64, value: i64) -> Op<i64> {
    let mut cmd = redis::cmd("BITFIELD");
    cmd.arg(key)
        .arg("SET")
        .arg(width.as_str())
        .arg(format!("#{index}"))
        .arg(value);
    Op::<(i64,)>::native(cmd).map(|(old,)| Ok(old))
}

/// `values` is one row: `cols` values, each within the cell type.
fn check_row(values: &[i64], cols: usize, width: Width) -> Result<()> {
    if values.len() != cols {
        return Err(Error::invalid(
            "values",
            format!("must be one row of {cols} cells, got {}", values.len()),
        ));
    }
    for (c, &value) in values.iter().enumerate() {
        fits(width, value).map_err(|why| Error::invalid("values", format!("cell {c}: {why}")))?;
    }
    Ok(())
}

/// One BITFIELD setting `values` at cells `#first`, `#first + 1`, …
fn bitfield_set_all(key: &str, width: Width, first: u64, values: &[i64]) -> Op<()> {
    let mut cmd = redis::cmd("BITFIELD");
    cmd.arg(key);
    for (i, value) in (first..).zip(values) {
        cmd.arg("SET")
            .arg(width.as_str())
            .arg(format!("#{i}"))
            .arg(value);
    }
    Op::<Vec<i64>>::native(cmd).map(|_| Ok(()))
}

fn bitfield_get(key: &str, width: Width, index: u64) -> Op<i64> {
    let mut cmd = redis::cmd("BITFIELD_RO");
    cmd.arg(key)
        .arg("GET")
        .arg(width.as_str())
        .arg(format!("#{index}"));
    Op::<(i64,)>::native(cmd).map(|(value,)| Ok(value))
}

/// `values` packed as BITFIELD stores cells of type `width`: cell i at bit i × bits,
/// big-endian, two's complement for the signed types, the unused bits of the last byte 0.
fn encode(values: &[i64], width: Width) -> Vec<u8> {
    let bits = width.bits() as usize;
    let mut bytes = vec![0u8; (values.len() * bits).div_ceil(8)];
    for (i, &value) in values.iter().enumerate() {
        let raw = value as u64;
        for j in 0..bits {
            if (raw >> (bits - 1 - j)) & 1 == 1 {
                let bit = i * bits + j;
                bytes[bit / 8] |= 0x80 >> (bit % 8);
            }
        }
    }
    bytes
}

/// `count` cells of type `width` from `bytes`, the first one starting at bit `first_bit`,
/// as BITFIELD stores them: big-endian, most significant bit first, two's complement for
/// the signed types; bits past the end of `bytes` are 0.
fn decode(bytes: &[u8], first_bit: u64, count: usize, width: Width) -> Vec<i64> {
    let bits = width.bits() as u32;
    let signed = width.range().0 < 0;
    (0..count as u64)
        .map(|i| {
            let bit = first_bit + i * u64::from(bits);
            let start = (bit / 8) as usize;
            // Nine bytes hold any field of up to 64 bits, whatever its first bit.
            let window = (0..9).fold(0u128, |acc, k| {
                (acc << 8) | u128::from(bytes.get(start + k).copied().unwrap_or(0))
            });
            let shift = 72 - (bit % 8) as u32 - bits;
            let raw = ((window >> shift) & ((1u128 << bits) - 1)) as u64;
            if signed && bits < 64 {
                ((raw << (64 - bits)) as i64) >> (64 - bits)
            } else {
                raw as i64
            }
        })
        .collect()
}

/// A reply that cannot be the matrix: a row key was changed behind the pattern's back.
fn damaged(detail: String) -> Error {
    Error::unexpected_reply("the matrix is damaged", detail)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encode_is_what_decode_reads() {
        for width in [
            Width::I8,
            Width::I16,
            Width::I32,
            Width::I64,
            Width::U8,
            Width::U16,
            Width::U32,
            Width::U63,
        ] {
            let (min, max) = width.range();
            let values = [min, max, 0, 1, max / 3, min / 7];
            assert_eq!(
                decode(&encode(&values, width), 0, values.len(), width),
                values,
                "{width:?}"
            );
        }
        assert_eq!(encode(&[1, -1], Width::I8), [0x01, 0xff]);
        assert_eq!(encode(&[0xabc], Width::U16), [0x0a, 0xbc]);
    }

    #[test]
    fn decode_reads_big_endian_fields_at_any_bit() {
        assert_eq!(decode(&[0x01, 0xff], 0, 3, Width::I8), vec![1, -1, 0]);
        assert_eq!(decode(&[0x01, 0xff], 0, 2, Width::U8), vec![1, 255]);
        // u16 0xABCD starting at bit 4: bytes 0x0A 0xBC 0xD0.
        assert_eq!(decode(&[0x0a, 0xbc, 0xd0], 4, 1, Width::U16), vec![0xabcd]);
        let min = i64::MIN.to_be_bytes();
        assert_eq!(decode(&min, 0, 1, Width::I64), vec![i64::MIN]);
        // u63 max: 63 one bits, then a zero bit.
        let mut max = [0xffu8; 8];
        max[7] = 0xfe;
        assert_eq!(decode(&max, 0, 1, Width::U63), vec![i64::MAX]);
        assert_eq!(decode(&max, 1, 1, Width::U63), vec![i64::MAX - 1]);
    }
}
