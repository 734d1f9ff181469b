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

use redis_patterns::binary_recorder::BinaryRecorder;
use redis_patterns::compact_string::CompactString;
use redis_patterns::counter::{CompactCounter, Counter, HashCounter, Overflow, Width};
use redis_patterns::fenced_lock::FencedLock;
use redis_patterns::id_generator::{HashIdGenerator, IdGenerator};
use redis_patterns::identity_lock::IdentityLock;
use redis_patterns::lock::{AutoReleaseLock, Lock};
use redis_patterns::resource_pool::ResourcePool;
use redis_patterns::unique_counter::{HllUniqueCounter, UniqueCounter};
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

    unique_counter(con)?;
    binary_recorder(con)?;
    compact_string(con)?;
    resource_pool(con)?;

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

fn unique_counter(con: &mut Con) -> redis_patterns::Result<()> {
    section(
        "UniqueCounter, HllUniqueCounter (book ch. 7): count each item once",
        "Union and difference are counted in Redis: no member is sent back.",
    );
    let monday = UniqueCounter::new("tour:{visits}:monday");
    let tuesday = UniqueCounter::new("tour:{visits}:tuesday");
    show(con, "monday.include(\"Peter\")", monday.include("Peter"))?;
    show(
        con,
        "monday.include(\"Peter\")  (again)",
        monday.include("Peter"),
    )?;
    show(con, "tuesday.include(\"Jack\")", tuesday.include("Jack"))?;
    show(con, "tuesday.include(\"Peter\")", tuesday.include("Peter"))?;
    show(
        con,
        "UniqueCounter::union(&[&monday, &tuesday])",
        UniqueCounter::union(&[&monday, &tuesday]),
    )?;
    show(
        con,
        "UniqueCounter::diff(&tuesday, &monday)",
        UniqueCounter::diff(&tuesday, &monday),
    )?;
    let _ = show(
        con,
        "UniqueCounter::inter(&[&monday, \"other\"])  (two slots)",
        UniqueCounter::inter(&[&monday, &UniqueCounter::new("tour:other")]),
    );
    let hll = HllUniqueCounter::new("tour:hll_visits");
    for who in ["Peter", "Jack", "Tom", "Tom"] {
        show(con, &format!("hll.include(\"{who}\")"), hll.include(who))?;
    }
    show(con, "hll.count()  (approximate)", hll.count())?;
    let _ = show(con, "hll.exclude(\"Tom\")", hll.exclude("Tom"));
    Ok(())
}

fn binary_recorder(con: &mut Con) -> redis_patterns::Result<()> {
    section(
        "BinaryRecorder (book ch. 9): one bit per day, a year in 46 bytes",
        "setbit returns the old bit; countbits bounds are inclusive bit indexes.",
    );
    let sign_in = BinaryRecorder::new("tour:User:256512:sign_in");
    show(con, "sign_in.setbit(1)", sign_in.setbit(1))?;
    show(con, "sign_in.setbit(1)  (already set)", sign_in.setbit(1))?;
    show(con, "sign_in.setbit(3)", sign_in.setbit(3))?;
    show(con, "sign_in.getbit(2)", sign_in.getbit(2))?;
    show(con, "sign_in.countbits(0, 6)", sign_in.countbits(0, 6))?;
    let _ = show(
        con,
        "sign_in.setbit(1 << 32)  (past a string's 2^32 bits)",
        sign_in.setbit(1 << 32),
    );
    Ok(())
}

fn compact_string(con: &mut Con) -> redis_patterns::Result<()> {
    section(
        "CompactString (book ch. 11): short items packed in one string",
        "Items are bytes; an item that would break the framing is refused.",
    );
    let log = CompactString::new("tour:log");
    show(
        con,
        "log.append(\"HTTP/1.1 200 OK\")",
        log.append("HTTP/1.1 200 OK"),
    )?;
    show(
        con,
        "log.append(\"Server: nginx\")",
        log.append("Server: nginx"),
    )?;
    let as_text = |items: Vec<Vec<u8>>| {
        Ok(items
            .iter()
            .map(|item| String::from_utf8_lossy(item).into_owned())
            .collect::<Vec<_>>())
    };
    show(
        con,
        "log.get_bytes(0, 20)  (bytes, shown as text)",
        log.get_bytes(0, 20).map(as_text),
    )?;
    let _ = show(con, "log.append(\"two\\nlines\")", log.append("two\nlines"));
    Ok(())
}

fn resource_pool(con: &mut Con) -> redis_patterns::Result<()> {
    section(
        "ResourcePool (book ch. 10, plus leases): take a resource, give it back",
        "One script each: None only when every resource is held; a lease returns a crashed client's resource.",
    );
    let pool = ResourcePool::new("tour:{printers}");
    show(
        con,
        "pool.associate(\"printer-1\")",
        pool.associate("printer-1"),
    )?;
    show(
        con,
        "pool.associate(\"printer-1\")  (again)",
        pool.associate("printer-1"),
    )?;
    let printer = show(con, "pool.acquire()", pool.acquire())?;
    show(con, "pool.acquire()  (every printer held)", pool.acquire())?;
    if let Some(printer) = printer {
        show(con, "pool.release(printer)", pool.release(&printer))?;
    }
    let lease = show(
        con,
        "pool.acquire_with_lease(100 ms)",
        pool.acquire_with_lease(Duration::from_millis(100)),
    )?;
    std::thread::sleep(Duration::from_millis(150));
    println!("    (the holder crashes; 150 ms pass)");
    show(con, "pool.acquire()  (the lease ran out)", pool.acquire())?;
    if let Some(lease) = lease {
        show(
            con,
            "pool.release_lease(&stale)",
            pool.release_lease(&lease),
        )?;
    }
    show(con, "pool.total_count()", pool.total_count())?;
    Ok(())
}
