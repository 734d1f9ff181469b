//! Shape and chunking rules the matrix families share: how many cells, rows and bytes one
//! script call takes, and how a larger matrix splits into calls.

use std::ops::Range;

use crate::runtime::error::{Error, Result};
use crate::runtime::input;
use crate::runtime::op::Op;

/// The most bits one string of a matrix holds: 2^23 bits, 1 MiB, what one script call
/// writes or reads at most, so that it stays short.
pub(crate) const MAX_STRING_BITS: u128 = 1 << 23;

/// The most bytes one `init` or `get_all` script call writes or reads (the scripts' cap).
pub(crate) const MAX_BYTES_PER_CALL: usize = 1 << 20;

/// The most keys (rows) one call of the matrix scripts takes (their `@key` count).
pub(crate) const MAX_KEYS_PER_CALL: usize = 512;

/// At least one row and one column, and, for a bitfield form, `(cells, bits per cell, the cells' type)` of one
/// string within [`MAX_STRING_BITS`] (1 MiB).
pub(crate) fn check_shape(
    rows: usize,
    cols: usize,
    string: Option<(usize, u64, &str)>,
) -> Result<()> {
    if rows == 0 {
        return Err(Error::invalid("rows", "must be at least 1, got 0"));
    }
    if cols == 0 {
        return Err(Error::invalid("cols", "must be at least 1, got 0"));
    }
    if rows.checked_mul(cols).is_none() {
        return Err(Error::invalid(
            "rows",
            format!("{rows} × {cols} cells overflow usize"),
        ));
    }
    match string {
        Some((cells, bits, width)) if cells as u128 * u128::from(bits) > MAX_STRING_BITS => {
            Err(Error::invalid(
                "cols",
                format!(
                    "{cells} {} cells take more than the 1 MiB (2^23 bits) one string of a \
                     matrix holds; use fewer cells, a narrower type, or a key per row",
                    width
                ),
            ))
        }
        _ => Ok(()),
    }
}

/// `index < len`.
pub(crate) fn check_index(what: &'static str, index: usize, len: usize) -> Result<()> {
    if index >= len {
        return Err(Error::invalid(
            what,
            format!("must be from 0 to {}, got {index}", len - 1),
        ));
    }
    Ok(())
}

/// `rows` is a non-empty range of rows of a matrix of `len` rows.
pub(crate) fn check_range(rows: &Range<usize>, len: usize) -> Result<()> {
    if rows.is_empty() || rows.end > len {
        return Err(Error::invalid(
            "rows",
            format!(
                "must be a non-empty range within 0..{len}, got {}..{}",
                rows.start, rows.end
            ),
        ));
    }
    Ok(())
}

/// A read of `rows` strings of `row_bytes` each fits one call.
pub(crate) fn check_read(rows: usize, row_bytes: usize) -> Result<()> {
    if rows > MAX_KEYS_PER_CALL {
        return Err(too_many(rows, 1, "rows", MAX_KEYS_PER_CALL));
    }
    if rows * row_bytes > MAX_BYTES_PER_CALL {
        return Err(too_many(rows, row_bytes, "bytes", MAX_BYTES_PER_CALL));
    }
    Ok(())
}

/// `rows` × `each` of something is more than one call takes.
pub(crate) fn too_many(rows: usize, each: usize, what: &str, most: usize) -> Error {
    Error::invalid(
        "rows",
        format!(
            "{rows} rows take {} {what}, more than one call handles ({most}); read them with \
             `get_rows`, a range at a time, or build the matrix with `init_chunks`",
            rows * each
        ),
    )
}

/// The only operation of `ops`, or why the matrix needs several: more than `most` `what`.
pub(crate) fn single(mut ops: Vec<Op<()>>, most: usize, what: &str) -> Result<Op<()>> {
    if ops.len() == 1 {
        return Ok(ops.pop().expect("one op"));
    }
    Err(Error::invalid(
        "elements",
        format!(
            "the matrix takes {} calls of at most {most} {what} each; build it with \
             `init_chunks`, which returns them in order",
            ops.len()
        ),
    ))
}

/// Ranges of consecutive rows of `row_size` each (bytes, cells) of which one call takes
/// at most `most`, and at most [`MAX_KEYS_PER_CALL`] rows; the first starts at row 0.
pub(crate) fn row_chunks(
    rows: usize,
    row_size: usize,
    most: usize,
) -> impl Iterator<Item = Range<usize>> {
    let per_call = (most / row_size.max(1)).clamp(1, MAX_KEYS_PER_CALL);
    (0..rows)
        .step_by(per_call)
        .map(move |first| first..(first + per_call).min(rows))
}

/// What the row keys of the matrix named `id` start with: `{id}:row:`, or `id:row:` when
/// `id` holds a hash tag, so that every row is in `id`'s cluster hash slot. Refuses an
/// empty `id`, or one with a `}` but no hash tag.
pub(crate) fn row_prefix(id: &str) -> Result<String> {
    input::key("id", id)?;
    input::aux_key(id, "row:").map_err(|err| match err {
        Error::InvalidInput { why, .. } => Error::invalid("id", why),
        err => err,
    })
}

/// The keys of the rows in `rows`, from their [`row_prefix`].
pub(crate) fn row_keys(prefix: &str, rows: Range<usize>) -> Vec<String> {
    rows.map(|r| format!("{prefix}{r}")).collect()
}

/// The cells of `rows` row by row, after checking that there are `m` rows of `n` cells
/// and that each cell passes `check`.
pub(crate) fn flatten<T: Copy + std::fmt::Debug>(
    rows: &[Vec<T>],
    m: usize,
    n: usize,
    check: impl Fn(T) -> std::result::Result<(), String>,
) -> Result<Vec<T>> {
    if rows.len() != m {
        return Err(Error::invalid(
            "elements",
            format!("must be {m} rows of {n} cells, got {} rows", rows.len()),
        ));
    }
    let mut cells = Vec::with_capacity(m * n);
    for (r, row) in rows.iter().enumerate() {
        if row.len() != n {
            return Err(Error::invalid(
                "elements",
                format!(
                    "must be {m} rows of {n} cells, got {} cells in row {r}",
                    row.len()
                ),
            ));
        }
        for (c, &value) in row.iter().enumerate() {
            check(value)
                .map_err(|why| Error::invalid("elements", format!("cell ({r}, {c}): {why}")))?;
            cells.push(value);
        }
    }
    Ok(cells)
}
