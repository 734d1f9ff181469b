//! A walk through every finished pattern.
//!
//! ```sh
//! cargo run --example tour                          # against a throwaway redis-server
//! REDIS_URL=redis://127.0.0.1:6379/15 cargo run --example tour   # against yours
//! ```
//!
//! Against `REDIS_URL` it writes only keys that start with `tour:`, and deletes them at
//! the end.

use std::time::Duration;

use redis_patterns::counter::{CompactCounter, Counter, HashCounter, Overflow, Width};
use redis_patterns::fenced_lock::FencedLock;
use redis_patterns::id_generator::{HashIdGenerator, IdGenerator};
use redis_patterns::identity_lock::IdentityLock;
use redis_patterns::lock::{AutoReleaseLock, Lock};
use redis_patterns::logical_matrix::{CompactLogicalMatrix, LogicalMatrix};
use redis_patterns::matrix::{BitmapMatrix, ListMatrix, Matrix};
use redis_patterns::{Batch, Op, catalog};

#[path = "../tests/it/server.rs"]
mod server;

type Con = redis::Connection;

/// Runs `op`, printing the call and its result, and returns the result.
fn show<T: std::fmt::Debug + 'static>(
    con: &mut Con,
    call: &str,
    op: Op<T>,
) -> redis_patterns::Result<T> {
    let result = op.run(con);
    match &result {
        Ok(value) => println!("    {call:<52} → {value:?}"),
        Err(err) => println!("    {call:<52} → error: {err}"),
    }
    result
}

fn section(title: &str, note: &str) {
    println!("\n{title}\n    {note}");
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // Keep the throwaway server alive until the end of main.
    let (_server, url) = match std::env::var("REDIS_URL") {
        Ok(url) => (None, url),
        Err(_) => {
            let server = server::RedisProcess::start(&[]);
            let url = server.url(0);
            (Some(server), url)
        }
    };
    let mut con = redis::Client::open(url.as_str())?.get_connection()?;
    println!("redis-patterns tour, on {url}");
    let con = &mut con;

    section(
        "Lock (book ch. 3): one native command each, no owner",
        "Anyone can release it; AutoReleaseLock adds a lease.",
    );
    let lock = Lock::new("tour:lock");
    show(con, "lock.acquire()", lock.acquire())?;
    show(con, "lock.acquire()  (held)", lock.acquire())?;
    show(con, "lock.release()", lock.release())?;
    let auto = AutoReleaseLock::new("tour:auto_lock");
    show(
        con,
        "auto.acquire(100 ms)",
        auto.acquire(Duration::from_millis(100)),
    )?;
    std::thread::sleep(Duration::from_millis(150));
    show(
        con,
        "auto.acquire(10 s)  (after the lease)",
        auto.acquire(Duration::from_secs(10)),
    )?;

    section(
        "IdentityLock (book ch. 4): release and extend check a token",
        "The book's WATCH/GET/MULTI/DEL release is one script here: one round trip, never gives up.",
    );
    let lock = IdentityLock::new("tour:identity_lock");
    let token = IdentityLock::random_token();
    println!("    token = IdentityLock::random_token() = {token}");
    show(
        con,
        "lock.acquire(token, 30 s)",
        lock.acquire(&token, Some(Duration::from_secs(30))),
    )?;
    show(con, "lock.release(\"guess\")", lock.release("guess"))?;
    show(
        con,
        "lock.extend(token, 60 s)",
        lock.extend(&token, Duration::from_secs(60)),
    )?;
    show(con, "lock.lease(token)", lock.lease(&token))?;
    show(con, "lock.release(token)", lock.release(&token))?;
    let _ = show(
        con,
        "lock.release(\"\")  (checked before any I/O)",
        lock.release(""),
    );

    section(
        "FencedLock (beyond the book): every acquisition gets a larger token",
        "A storage that remembers the highest token refuses writes from a holder whose lease ran out.",
    );
    let lock = FencedLock::new("tour:fenced_lock");
    let first = show(
        con,
        "lock.acquire(100 ms)",
        lock.acquire(Duration::from_millis(100)),
    )?;
    std::thread::sleep(Duration::from_millis(150));
    let second = show(
        con,
        "lock.acquire(30 s)  (after the lease)",
        lock.acquire(Duration::from_secs(30)),
    )?;
    if let (Some(first), Some(second)) = (first, second) {
        show(
            con,
            &format!("lock.release({first})  (stale token)"),
            lock.release(first),
        )?;
        show(
            con,
            &format!("lock.release({second})"),
            lock.release(second),
        )?;
    }

    section(
        "IdGenerator (book ch. 5; the 2011 cookbook's Auid)",
        "INCR and SET NX: ids never repeat.",
    );
    let ids = IdGenerator::new("tour:user_id");
    show(con, "ids.reserve(10000)", ids.reserve(10_000))?;
    show(con, "ids.produce()", ids.produce())?;
    show(con, "ids.reserve(5)  (an id was produced)", ids.reserve(5))?;
    let hashed = HashIdGenerator::new("tour:ids");
    show(con, "hashed.produce(\"post\")", hashed.produce("post"))?;

    section(
        "Counters (book ch. 6; the 2011 cookbook's counters)",
        "HashCounter::reset is one script that refuses to overwrite a non-integer.",
    );
    let views = Counter::new("tour:views");
    show(con, "views.increase(10)", views.increase(10))?;
    show(
        con,
        "views.reset(0)  (returns the old value)",
        views.reset(0),
    )?;
    let likes = HashCounter::new("tour:post:7", "likes");
    show(con, "likes.increase(3)", likes.increase(3))?;
    show(con, "likes.reset(0)", likes.reset(0))?;
    for (name, overflow) in [
        ("wrap", Overflow::Wrap),
        ("sat", Overflow::Sat),
        ("fail", Overflow::Fail),
    ] {
        let index = overflow as u64;
        let counter = CompactCounter::new("tour:compact", index, Width::U8, overflow);
        let _ = show(
            con,
            &format!("u8 {name}: increase(300)"),
            counter.increase(300),
        );
    }

    matrix(con)?;
    logical_matrix(con)?;

    section(
        "Batch: several operations in one round trip",
        "Scripts it calls are loaded first.",
    );
    let mut batch = Batch::transaction();
    let a = batch.add(views.increase(5));
    let b = batch.add(likes.reset(1));
    let mut replies = batch.run(con)?;
    println!(
        "    views.increase(5), likes.reset(1)                    → {:?}, {:?}",
        a.take(&mut replies)?,
        b.take(&mut replies)?
    );

    section(
        "The catalogue",
        "Every script, for tools and for apps in other languages:",
    );
    for script in catalog::scripts() {
        println!(
            "    {:<24} {}  {}",
            script.name,
            &script.sha1[..8],
            script.summary
        );
    }
    println!(
        "\n    Run one from a shell:  redis-cli --eval scripts/identity_lock/release.lua lock:1 , secret"
    );

    let keys: Vec<String> = redis::cmd("KEYS").arg("tour:*").query(con)?;
    let keys: Vec<String> = keys
        .into_iter()
        .chain(["{tour:fenced_lock}:fence".to_owned()])
        .collect();
    let _: () = redis::cmd("DEL").arg(&keys).query(con)?;
    Ok(())
}

fn matrix(con: &mut Con) -> redis_patterns::Result<()> {
    section(
        "Matrices (book ch. 31): lists, one BITFIELD per row, or one BITFIELD",
        "init is one script, all or nothing; every index and value is checked before any I/O.",
    );
    let elements = [vec![1, 2, 3], vec![4, 5, 6]];
    let list = ListMatrix::new("tour:{list_matrix}", 2, 3);
    show(
        con,
        "list.init(Some([[1, 2, 3], [4, 5, 6]]))",
        list.init(Some(&elements)),
    )?;
    let _ = show(con, "list.init(None)  (exists)", list.init(None));
    show(con, "list.set(1, 1, -50)", list.set(1, 1, -50))?;
    show(con, "list.get_all()", list.get_all())?;
    let bitmap = BitmapMatrix::new("tour:{bitmap_matrix}", 2, 3, Width::U8);
    show(con, "bitmap.init(None)", bitmap.init(None))?;
    show(con, "bitmap.set(0, 2, 255)", bitmap.set(0, 2, 255))?;
    let _ = show(
        con,
        "bitmap.set(0, 2, 256)  (not a u8)",
        bitmap.set(0, 2, 256),
    );
    show(con, "bitmap.get_row(0)", bitmap.get_row(0))?;
    let single = Matrix::new("tour:matrix", 2, 3, Width::I16);
    show(con, "single.init(Some(..))", single.init(Some(&elements)))?;
    show(
        con,
        "single.set(1, 2, -7)  (old value)",
        single.set(1, 2, -7),
    )?;
    let _ = show(con, "single.get(0, 3)  (no column 3)", single.get(0, 3));
    show(con, "single.get_all()", single.get_all())?;
    Ok(())
}

fn logical_matrix(con: &mut Con) -> redis_patterns::Result<()> {
    section(
        "Logical matrices (book ch. 32): one bitmap per row, or one bitmap",
        "init SETs packed bitmaps; rows are read as bytes and decoded in Rust. \
         `cargo run --example matrix_memory` measures the memory of every form.",
    );
    let elements = [vec![true, false, true], vec![false, true, false]];
    let rows = LogicalMatrix::new("tour:{logical_matrix}", 2, 3);
    show(con, "rows.init(Some(..))", rows.init(Some(&elements)))?;
    show(con, "rows.set(1, 2, true)", rows.set(1, 2, true))?;
    show(con, "rows.get_all()", rows.get_all())?;
    let compact = CompactLogicalMatrix::new("tour:compact_logical_matrix", 2, 3);
    show(con, "compact.init(Some(..))", compact.init(Some(&elements)))?;
    show(con, "compact.get_row(1)", compact.get_row(1))?;
    let _ = show(
        con,
        "compact.get(0, 3)  (the book reads row 1 here)",
        compact.get(0, 3),
    );
    Ok(())
}
