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
use redis_patterns::circular_queue::{CircularQueue, UniqueCircularQueue};
use redis_patterns::compact_string::CompactString;
use redis_patterns::counter::{CompactCounter, Counter, HashCounter, Overflow, Width};
use redis_patterns::fenced_lock::FencedLock;
use redis_patterns::fifo_queue::{FifoQueue, ReversedFifoQueue};
use redis_patterns::fixed_length_queue::{FadedQueue, FixedLengthQueue};
use redis_patterns::id_generator::{HashIdGenerator, IdGenerator};
use redis_patterns::identity_lock::IdentityLock;
use redis_patterns::lock::{AutoReleaseLock, Lock};
use redis_patterns::log::Log;
use redis_patterns::logical_matrix::{CompactLogicalMatrix, LogicalMatrix};
use redis_patterns::matrix::{BitmapMatrix, ListMatrix, Matrix};
use redis_patterns::priority_queue::PriorityQueue;
use redis_patterns::rate_limiter::{GcraLimiter, Limiter, RateLimiter, SlidingWindowLimiter};
use redis_patterns::resource_pool::ResourcePool;
use redis_patterns::stack::Stack;
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
    let (_server, url) = server::env_url_or_throwaway();
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

    matrix(con)?;
    logical_matrix(con)?;

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

    keyspace(con)?;
    stream_iterator(con)?;

    cache(con)?;

    rate_limiter(con)?;

    queues(con)?;
    log(con)?;

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

fn keyspace(con: &mut Con) -> redis_patterns::Result<()> {
    use redis_patterns::keyspace::{DbIterator, DbSampler, KeyType, RandomKeyGenerator};
    let say = |call: &str, result: String| println!("    {call:<52} → {result}");

    section(
        "Keyspace (book ch. 12): SCAN a batch at a time, sample the types",
        "Several round trips by nature; SCAN may repeat keys, and returns every key that stays.",
    );
    let keys = RandomKeyGenerator::new("tour:keys", 42).generate(con, 30)?;
    say(
        "RandomKeyGenerator::new(\"tour:keys\", 42).generate(30)",
        format!("{} keys, the first {:?}", keys.len(), keys[0]),
    );
    let mut it = DbIterator::new(10).matching("tour:keys:*");
    while let Some(batch) = it.next(con)? {
        say("it.next()", format!("{} keys", batch.len()));
    }
    say(
        "it.next()  (the walk is done)",
        format!("{:?}", it.next(con)?),
    );
    let lists = DbIterator::new(10)
        .matching("tour:keys:*")
        .of_type(KeyType::List)
        .keys(con)
        .collect::<redis_patterns::Result<Vec<_>>>()?;
    say(
        "DbIterator…of_type(List).keys().count()",
        lists.len().to_string(),
    );
    let mut sampler = DbSampler::from_iterator(DbIterator::new(10).matching("tour:keys:*"));
    while sampler.sample(con)?.is_some() {}
    for line in sampler.stats().to_string().lines() {
        say("sampler.stats()", line.to_owned());
    }
    Ok(())
}

fn stream_iterator(con: &mut Con) -> redis_patterns::Result<()> {
    use redis_patterns::stream_iterator::{XrangeIterator, XreadIterator};
    let say = |call: &str, result: String| println!("    {call:<52} → {result}");

    section(
        "Stream iterators (book ch. 13): XRANGE with an exclusive cursor, XREAD with a block",
        "One command per batch; entries appended between calls are picked up.",
    );
    let _: () = redis::cmd("DEL").arg("tour:stream").query(con)?;
    for n in 1..=5 {
        let _: () = redis::cmd("XADD")
            .arg("tour:stream")
            .arg(format!("{n}-1"))
            .arg("reading")
            .arg(n * 10)
            .query(con)?;
    }
    let mut it = XrangeIterator::new("tour:stream");
    for _ in 0..3 {
        let ids: Vec<String> = it.next(con, 2)?.iter().map(|e| e.id.to_string()).collect();
        say("it.next(2)", format!("{ids:?}, cursor now {}", it.cursor()));
    }
    let mut reader = XreadIterator::new("tour:stream");
    reader.rewind_to("4-1")?;
    let fresh = reader.next(con, 10, Some(Duration::from_millis(100)))?;
    let readings: Vec<_> = fresh.iter().filter_map(|e| e.get("reading")).collect();
    say(
        "reader.rewind_to(\"4-1\"); reader.next(10, 100 ms)",
        format!("{readings:?}"),
    );
    let none = reader.next(con, 10, Some(Duration::from_millis(100)))?;
    say(
        "reader.next(10, 100 ms)  (nothing new)",
        format!("{none:?}"),
    );
    let bad = reader.rewind_to("abc").unwrap_err();
    say(
        "reader.rewind_to(\"abc\")  (no I/O)",
        format!("error: {bad}"),
    );
    Ok(())
}

/// Caches (book ch. 1 and 2, the 2011 cookbook's category cache), and a cache-aside read
/// that computes a missing value once.
fn cache(con: &mut Con) -> Result<(), Box<dyn std::error::Error>> {
    use redis_patterns::cache::{BinaryCache, Cache, CategoryCache, HashCache, JsonCache};

    section(
        "Caches (book ch. 1, 2; 2011 cookbook): native commands, one script for hashes",
        "HashCache::set replaces the entry and its ttl atomically; JsonCache tells null from a miss.",
    );
    let cache = Cache::new();
    let minute = Some(Duration::from_secs(60));
    show(
        con,
        "cache.set(\"tour:greeting\", \"hello\", 60 s)",
        cache.set("tour:greeting", "hello", minute),
    )?;
    show(
        con,
        "cache.get(\"tour:greeting\")",
        cache.get("tour:greeting"),
    )?;
    let _ = show(
        con,
        "cache.set(.., ttl 0)",
        cache.set("tour:greeting", "hello", Some(Duration::ZERO)),
    );

    let json = JsonCache::<Option<Vec<u32>>>::new();
    show(
        con,
        "json.set(\"tour:json\", &None, None)",
        json.set("tour:json", &None, None),
    )?;
    show(
        con,
        "json.get(\"tour:json\")  (a cached null)",
        json.get("tour:json"),
    )?;
    show(
        con,
        "json.get(\"tour:json:missing\")",
        json.get("tour:json:missing"),
    )?;

    let hashes = HashCache::new();
    show(
        con,
        "hashes.set(\"tour:user\", id+name, 60 s)",
        hashes.set("tour:user", [("id", "10086"), ("name", "peter")], minute),
    )?;
    show(
        con,
        "hashes.set(\"tour:user\", name only, 60 s)",
        hashes.set("tour:user", [("name", "jack")], minute),
    )?;
    show(
        con,
        "hashes.get(\"tour:user\")  (replaced, not merged)",
        hashes.get("tour:user"),
    )?;

    let binary = BinaryCache::new();
    show(
        con,
        "binary.set(\"tour:bytes\", [0, 159, 255])",
        binary.set("tour:bytes", &[0, 159, 255], None),
    )?;
    show(con, "binary.get(\"tour:bytes\")", binary.get("tour:bytes"))?;

    let page = cache.get_or_compute(con, "tour:page:10086", minute, || {
        Ok::<_, redis_patterns::Error>("<html>10086</html>".to_owned())
    })?;
    println!(
        "    {:<52} → {page:?}",
        "cache.get_or_compute(\"tour:page:10086\", render)"
    );

    let pages = CategoryCache::new("tour:page_cache");
    show(
        con,
        "pages.set(\"/topic/123\", \"hello\")",
        pages.set("/topic/123", "hello"),
    )?;
    show(
        con,
        "pages.expire(3 s)",
        pages.expire(Duration::from_secs(3)),
    )?;
    show(con, "pages.size()", pages.size())?;
    Ok(())
}

/// Rate limiters (book ch. 8 and beyond): the book's fixed window, a sliding window, GCRA.
fn rate_limiter(con: &mut Con) -> redis_patterns::Result<()> {
    section(
        "RateLimiter (book ch. 8): a fixed window; refused attempts are not counted",
        "Peter may try to log in 3 times per hour; is_permitted is one script.",
    );
    let login =
        RateLimiter::new("login", Duration::from_secs(3600), 3).with_prefix("tour:RateLimiter");
    for _ in 0..4 {
        show(
            con,
            "login.is_permitted(\"Peter\")",
            login.is_permitted("Peter"),
        )?;
    }
    show(con, "login.remaining(\"Peter\")", login.remaining("Peter"))?;
    show(con, "login.duration(\"Peter\")", login.duration("Peter"))?;
    show(con, "login.revoke(\"Peter\")", login.revoke("Peter"))?;

    section(
        "SlidingWindowLimiter and GcraLimiter: one Limiter trait, a Decision on the server's clock",
        "Sliding window: exact, one entry per request. GCRA: a burst, then a steady rate, one string.",
    );
    let messages = SlidingWindowLimiter::new("message", 2, Duration::from_secs(1))
        .with_prefix("tour:SlidingWindowLimiter");
    for _ in 0..3 {
        show(
            con,
            "messages.attempt(\"Peter\", 1)",
            messages.attempt("Peter", 1),
        )?;
    }
    let api =
        GcraLimiter::new("api", 3, 10, Duration::from_secs(1)).with_prefix("tour:GcraLimiter");
    show(
        con,
        "api.attempt(\"Peter\", 3)  (the burst)",
        api.attempt("Peter", 3),
    )?;
    show(con, "api.attempt(\"Peter\", 1)", api.attempt("Peter", 1))?;
    std::thread::sleep(Duration::from_millis(100));
    show(
        con,
        "api.attempt(\"Peter\", 1)  (100 ms later)",
        api.attempt("Peter", 1),
    )?;
    println!(
        "    keys: {}, {}",
        messages.key("Peter")?,
        api.key("Peter")?
    );
    Ok(())
}

/// Queues (book ch. 26–30): FIFO, bounded, stack, priority and circular.
fn queues(con: &mut Con) -> redis_patterns::Result<()> {
    section(
        "Queues (book ch. 26–30): FIFO, fixed-length, stack, priority, circular",
        "Blocking pops need a connection that waits as long: see the fifo_queue docs.",
    );
    let fifo = FifoQueue::new("tour:fifo");
    show(
        con,
        "fifo.enqueue(&[\"a\", \"b\"])",
        fifo.enqueue(&["a", "b"]),
    )?;
    show(con, "fifo.dequeue()", fifo.dequeue())?;
    show(
        con,
        "fifo.dequeue_blocking(Some(100 ms))",
        fifo.dequeue_blocking(Some(Duration::from_millis(100))),
    )?;
    show(
        con,
        "fifo.dequeue_blocking(Some(100 ms))  (empty)",
        fifo.dequeue_blocking(Some(Duration::from_millis(100))),
    )?;
    let reversed = ReversedFifoQueue::new("tour:fifo_r");
    show(
        con,
        "reversed.enqueue(&[\"a\", \"b\"])",
        reversed.enqueue(&["a", "b"]),
    )?;
    show(con, "reversed.dequeue()", reversed.dequeue())?;

    let oldest = FixedLengthQueue::new("tour:oldest", 3);
    show(
        con,
        "oldest(3).enqueue(&[a, b])",
        oldest.enqueue(&["a", "b"]),
    )?;
    show(
        con,
        "oldest(3).enqueue(&[c, d, e])  (new items kept)",
        oldest.enqueue(&["c", "d", "e"]),
    )?;
    let newest = FadedQueue::new("tour:newest", 3);
    show(
        con,
        "newest(3).enqueue(&[a, b])",
        newest.enqueue(&["a", "b"]),
    )?;
    show(
        con,
        "newest(3).enqueue_counted(&[c, d, e])",
        newest.enqueue_counted(&["c", "d", "e"]),
    )?;
    show(con, "newest.dequeue()", newest.dequeue())?;

    let stack = Stack::new("tour:stack");
    for item in ["1", "2", "3"] {
        show(con, &format!("stack.push({item:?})"), stack.push(item))?;
    }
    show(con, "stack.pop()", stack.pop())?;
    show(con, "stack.trim(1)", stack.trim(1))?;
    show(
        con,
        "stack.as_lifo_queue().dequeue()",
        stack.as_lifo_queue().dequeue(),
    )?;

    let tasks = PriorityQueue::new("tour:tasks");
    show(
        con,
        "tasks.insert(\"docs\", 3.0)",
        tasks.insert("docs", 3.0),
    )?;
    show(
        con,
        "tasks.insert(\"outage\", 1.0)",
        tasks.insert("outage", 1.0),
    )?;
    show(con, "tasks.pop_min()", tasks.pop_min())?;
    let _ = show(
        con,
        "tasks.insert(\"x\", f64::NAN)  (checked before any I/O)",
        tasks.insert("x", f64::NAN),
    );

    let ring = CircularQueue::new("tour:ring");
    show(
        con,
        "ring.insert(&[s1, s2, s3])",
        ring.insert(&["s1", "s2", "s3"]),
    )?;
    show(con, "ring.rotate()", ring.rotate())?;
    show(con, "ring.rotate()", ring.rotate())?;
    show(con, "ring.front()", ring.front())?;
    let unique = UniqueCircularQueue::new("tour:unique_ring");
    show(
        con,
        "unique.insert(&[a, b, c])",
        unique.insert(&["a", "b", "c"]),
    )?;
    show(
        con,
        "unique.insert(&[a])  (moves a to the rear, one script)",
        unique.insert(&["a"]),
    )?;
    let _ = show(con, "unique.insert(&[d, d])", unique.insert(&["d", "d"]));
    Ok(())
}

/// The 2011 cookbook's log, newest first.
fn log(con: &mut Con) -> redis_patterns::Result<()> {
    section(
        "Log (2011 cookbook): a list, newest entry first",
        "keep(n) keeps the newest n; keep(0) empties it (the cookbook's kept everything).",
    );
    let log = Log::new("tour:log");
    for entry in ["boot", "login", "logout"] {
        show(con, &format!("log.append({entry:?})"), log.append(entry))?;
    }
    show(con, "log.read(0, 1)", log.read(0, 1))?;
    show(con, "log.keep(1)", log.keep(1))?;
    show(con, "log.read(0, -1)", log.read(0, -1))?;
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
    let log = CompactString::new("tour:access_log");
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
