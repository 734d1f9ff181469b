//! How much memory each matrix layout of chapters 31 and 32 takes for the same matrix,
//! measured with `MEMORY USAGE key SAMPLES 0` (exact, every element counted) summed over
//! the matrix's keys.
//!
//! ```sh
//! cargo run --example matrix_memory                                  # the Redis at 127.0.0.1:6379
//! REDIS_URL=redis://127.0.0.1:6379/15 cargo run --example matrix_memory   # another
//! ```
//!
//! With no Redis running, `redis-server --daemonize yes` starts one (Debian: `apt-get install redis-server`). It writes only keys whose names start with `memory:` or `{memory:`,
//! and deletes them at the end. The numbers go into the docs of
//! `redis_patterns::logical_matrix`.

use redis_patterns::Op;
use redis_patterns::logical_matrix::{CompactLogicalMatrix, LogicalMatrix};
use redis_patterns::matrix::{BitmapMatrix, ListMatrix, Matrix, Width};

const SIZES: &[usize] = &[10, 100, 1000];

/// The integer cells: (r × 7 + c × 3) % 100.
fn ints(n: usize) -> Vec<Vec<i64>> {
    (0..n)
        .map(|r| (0..n).map(|c| ((r * 7 + c * 3) % 100) as i64).collect())
        .collect()
}

/// The boolean cells: (r × 7 + c × 3) % 5 == 0, a fifth of them true.
fn bools(n: usize) -> Vec<Vec<bool>> {
    (0..n)
        .map(|r| (0..n).map(|c| (r * 7 + c * 3) % 5 == 0).collect())
        .collect()
}

/// One layout: its name, and how to build an n × n matrix under `name`, returning its
/// keys, or `None` when the layout cannot hold it (one string of a matrix holds 1 MiB).
type Build = fn(&mut redis::Connection, &str, usize) -> Option<Vec<String>>;

fn rows(id: &str, n: usize) -> Vec<String> {
    (0..n).map(|r| format!("{{{id}}}:row:{r}")).collect()
}

/// Runs the calls that build a matrix, in order (several for a big one).
fn run(con: &mut redis::Connection, ops: Vec<Op<()>>) {
    for op in ops {
        op.run(con).expect("building the matrix");
    }
}

/// Builds a single-key matrix; `None` when it takes more than one string holds (its
/// `new` refuses the shape).
fn run_single(con: &mut redis::Connection, op: redis_patterns::Result<Op<()>>) -> Option<()> {
    match op.and_then(|op| op.run(con)) {
        Ok(()) => Some(()),
        Err(redis_patterns::Error::InvalidInput { .. }) => None,
        Err(err) => panic!("building the matrix: {err}"),
    }
}

const FORMS: &[(&str, Build)] = &[
    ("ListMatrix (i64 lists)", |con, id, n| {
        let m = ListMatrix::new(id, n, n).expect("a valid matrix");
        run(con, m.init_chunks(Some(&ints(n))));
        Some(rows(id, n))
    }),
    ("BitmapMatrix i64", |con, id, n| {
        let m = BitmapMatrix::new(id, n, n, Width::I64).expect("a valid matrix");
        run(con, m.init_chunks(Some(&ints(n))));
        Some(rows(id, n))
    }),
    ("Matrix i64", |con, id, n| {
        let m = Matrix::new(id, n, n, Width::I64);
        run_single(con, m.map(|m| m.init(Some(&ints(n)))))?;
        Some(vec![id.to_owned()])
    }),
    ("BitmapMatrix u8", |con, id, n| {
        let m = BitmapMatrix::new(id, n, n, Width::U8).expect("a valid matrix");
        run(con, m.init_chunks(Some(&ints(n))));
        Some(rows(id, n))
    }),
    ("Matrix u8", |con, id, n| {
        let m = Matrix::new(id, n, n, Width::U8);
        run_single(con, m.map(|m| m.init(Some(&ints(n)))))?;
        Some(vec![id.to_owned()])
    }),
    ("LogicalMatrix", |con, id, n| {
        let m = LogicalMatrix::new(id, n, n).expect("a valid matrix");
        run(con, m.init_chunks(Some(&bools(n))));
        Some(rows(id, n))
    }),
    ("CompactLogicalMatrix", |con, id, n| {
        let m = CompactLogicalMatrix::new(id, n, n);
        run_single(con, m.map(|m| m.init(Some(&bools(n)))))?;
        Some(vec![id.to_owned()])
    }),
];

fn memory_usage(con: &mut redis::Connection, keys: &[String]) -> u64 {
    keys.iter()
        .map(|key| {
            let bytes: Option<u64> = redis::cmd("MEMORY")
                .arg("USAGE")
                .arg(key)
                .arg("SAMPLES")
                .arg(0)
                .query(con)
                .expect("MEMORY USAGE");
            bytes.expect("the key exists")
        })
        .sum()
}

/// `1234567` as `1,234,567`.
fn grouped(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, d) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(d);
    }
    out
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let url = std::env::var("REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379/".into());
    let mut con = redis::Client::open(url.as_str())?
        .get_connection()
        .map_err(|err| format!("no Redis answers at {url} ({err}): start one with `redis-server --daemonize yes`, or set REDIS_URL"))?;
    let version: String = redis::cmd("INFO").arg("server").query(&mut con)?;
    let version = version
        .lines()
        .find_map(|l| l.strip_prefix("redis_version:"))
        .unwrap_or("?")
        .to_owned();
    println!("MEMORY USAGE … SAMPLES 0, summed over each matrix's keys (Redis {version}, {url})\n");

    // totals[form][size]; None where the form cannot hold the matrix.
    let mut totals = vec![vec![None::<u64>; SIZES.len()]; FORMS.len()];
    for (s, &n) in SIZES.iter().enumerate() {
        for (f, (_, build)) in FORMS.iter().enumerate() {
            let id = format!("memory:{f}:{n}");
            let Some(keys) = build(&mut con, &id, n) else {
                continue;
            };
            totals[f][s] = Some(memory_usage(&mut con, &keys));
            for chunk in keys.chunks(500) {
                let _: () = redis::cmd("DEL").arg(chunk).query(&mut con)?;
            }
        }
    }

    let compact = FORMS.len() - 1;
    print!("| Form |");
    for n in SIZES {
        print!(" {n} × {n} |");
    }
    println!();
    print!("|---|");
    for _ in SIZES {
        print!("---:|");
    }
    println!();
    for ((name, _), form) in FORMS.iter().zip(&totals) {
        print!("| {name} |");
        for (&bytes, &base) in form.iter().zip(&totals[compact]) {
            match (bytes, base) {
                (Some(bytes), Some(base)) => {
                    let ratio = bytes as f64 / base as f64;
                    print!(" {} B (×{ratio:.1}) |", grouped(bytes));
                }
                _ => print!(" over 1 MiB in one string |"),
            }
        }
        println!();
    }
    println!("\n×: the form's total divided by CompactLogicalMatrix's for the same size.");
    Ok(())
}
