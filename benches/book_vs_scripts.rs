//! The crate's one-round-trip scripts against the book's multi-round-trip or WATCH/MULTI
//! way of doing the same thing (《Redis 应用实例》 chapters 10, 30 and 31), side by side in
//! one run:
//!
//! - `ResourcePool::acquire` + `release` (one script each) against the book's
//!   `WATCH avail occ; SRANDMEMBER avail; MULTI; SMOVE avail occ r; EXEC` and
//!   `SMOVE occ avail r`: latency on one client, then 8 threads with their own connections
//!   on a pool of 4, counting the acquires that came back empty-handed while the pool
//!   was not empty (the book's `WatchError`s);
//! - `UniqueCircularQueue::insert` of 5 items on a 100-item queue against the book's
//!   `MULTI; LREM key 1 i (per item); RPUSH key i…; EXEC`;
//! - `ListMatrix::get_all` (one read-only script) against the book's one `LRANGE` per row,
//!   on a 10×10 and a 100×10 matrix.
//!
//! ```sh
//! cargo bench --bench book_vs_scripts             # 5,000 rounds per way (500 for 100×10)
//! ROUNDS=20000 cargo bench --bench book_vs_scripts
//! ATTEMPTS=5000 cargo bench --bench book_vs_scripts   # acquires per thread under contention
//! ```
//!
//! The ways take turns round by round on one connection, so that a noisy moment on the
//! machine hits them alike. Timings are noisy on a shared machine; the ratios are what to
//! read. Nothing here asserts on timing.

use std::time::{Duration, Instant};

use redis_patterns::circular_queue::UniqueCircularQueue;
use redis_patterns::matrix::ListMatrix;
use redis_patterns::resource_pool::ResourcePool;

#[path = "../tests/it/server.rs"]
mod server;

/// The resources of the pools.
const RESOURCES: [&str; 4] = ["r1", "r2", "r3", "r4"];
/// Threads competing for the pool of 4.
const THREADS: usize = 8;
/// Items in each queue.
const QUEUE_LEN: usize = 100;
/// Items per insert.
const INSERTED: usize = 5;

type Way<'a> = Box<dyn FnMut(&mut redis::Connection, u32) + 'a>;

/// Mean time of each way over `rounds`; the ways take turns round by round. Each way gets
/// the round's number (to pick what it works on).
fn measure(con: &mut redis::Connection, rounds: u32, ways: &mut [Way<'_>]) -> Vec<Duration> {
    let mut totals = vec![Duration::ZERO; ways.len()];
    for round in 0..rounds {
        for (way, total) in ways.iter_mut().zip(&mut totals) {
            let start = Instant::now();
            way(con, round);
            *total += start.elapsed();
        }
    }
    totals.into_iter().map(|t| t / rounds.max(1)).collect()
}

/// Warms up, then measures the crate's way against the book's.
fn crate_vs_book(
    con: &mut redis::Connection,
    rounds: u32,
    crate_way: Way<'_>,
    book_way: Way<'_>,
) -> (Duration, Duration) {
    let mut ways = [crate_way, book_way];
    measure(con, (rounds / 10).clamp(1, 500), &mut ways);
    let [ours, book] = measure(con, rounds, &mut ways)[..] else {
        unreachable!("one mean per way")
    };
    (ours, book)
}

// ---------------------------------------------------------------------------------------
// Chapter 10: the resource pool.

/// The book's two sets.
struct BookPool {
    available: String,
    occupied: String,
}

/// What one acquire attempt came to.
enum Acquired {
    Got(String),
    /// No resource to take: the pool was empty.
    Empty,
    /// SRANDMEMBER saw a resource, then EXEC was aborted because another client touched
    /// the watched sets: a `None` while the pool was not empty.
    Conflict,
}

impl BookPool {
    fn new(name: &str) -> Self {
        BookPool {
            available: format!("ResourcePool:{name}:available"),
            occupied: format!("ResourcePool:{name}:occupied"),
        }
    }

    /// `WATCH avail occ; SRANDMEMBER avail;` then `UNWATCH` if nil, else
    /// `MULTI; SMOVE avail occ r; EXEC`. One attempt, as the book makes.
    fn acquire(&self, con: &mut redis::Connection) -> Acquired {
        let _: () = redis::cmd("WATCH")
            .arg(&self.available)
            .arg(&self.occupied)
            .query(con)
            .unwrap();
        let picked: Option<String> = redis::cmd("SRANDMEMBER")
            .arg(&self.available)
            .query(con)
            .unwrap();
        let Some(resource) = picked else {
            let _: () = redis::cmd("UNWATCH").query(con).unwrap();
            return Acquired::Empty;
        };
        let moved: Option<(i64,)> = redis::pipe()
            .atomic()
            .cmd("SMOVE")
            .arg(&self.available)
            .arg(&self.occupied)
            .arg(&resource)
            .query(con)
            .unwrap();
        match moved {
            Some((1,)) => Acquired::Got(resource),
            _ => Acquired::Conflict,
        }
    }

    /// `SMOVE occ avail r`.
    fn release(&self, con: &mut redis::Connection, resource: &str) -> bool {
        redis::cmd("SMOVE")
            .arg(&self.occupied)
            .arg(&self.available)
            .arg(resource)
            .query(con)
            .unwrap()
    }
}

/// Per-way tallies of the contention run.
#[derive(Default)]
struct Tally {
    got: u64,
    empty: u64,
    spurious: u64,
}

impl Tally {
    fn add(&mut self, other: &Tally) {
        self.got += other.got;
        self.empty += other.empty;
        self.spurious += other.spurious;
    }
}

/// `THREADS` threads, each on its own connection, make `attempts` acquire attempts each,
/// releasing at once what they got. Returns the tallies and the wall time.
fn contend(
    url: &str,
    attempts: u32,
    attempt: impl Fn(&mut redis::Connection) -> Acquired + Sync,
    release: impl Fn(&mut redis::Connection, &str) + Sync,
) -> (Tally, Duration) {
    let client = redis::Client::open(url).unwrap();
    let mut cons: Vec<redis::Connection> = (0..THREADS)
        .map(|_| client.get_connection().unwrap())
        .collect();
    let start = Instant::now();
    let tallies: Vec<Tally> = std::thread::scope(|s| {
        let handles: Vec<_> = cons
            .iter_mut()
            .map(|con| {
                let (attempt, release) = (&attempt, &release);
                s.spawn(move || {
                    let mut tally = Tally::default();
                    for _ in 0..attempts {
                        match attempt(con) {
                            Acquired::Got(resource) => {
                                tally.got += 1;
                                release(con, &resource);
                            }
                            Acquired::Empty => tally.empty += 1,
                            Acquired::Conflict => tally.spurious += 1,
                        }
                    }
                    tally
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let elapsed = start.elapsed();
    let mut total = Tally::default();
    for tally in &tallies {
        total.add(tally);
    }
    (total, elapsed)
}

// ---------------------------------------------------------------------------------------
// Chapter 30: the unique circular queue.

/// `MULTI; LREM key 1 i` (per item) `; RPUSH key i…; EXEC`, after the book's client-side
/// duplicate check.
fn book_unique_insert(con: &mut redis::Connection, key: &str, items: &[String]) -> u64 {
    for (i, item) in items.iter().enumerate() {
        assert!(!items[..i].contains(item), "the book raises ValueError");
    }
    let mut tx = redis::pipe();
    tx.atomic();
    for item in items {
        tx.cmd("LREM").arg(key).arg(1).arg(item).ignore();
    }
    tx.cmd("RPUSH").arg(key).arg(items);
    let (length,): (u64,) = tx.query(con).unwrap();
    length
}

/// The 5 items round `round` inserts: all already queued, spread over the queue.
fn items_of(round: u32) -> Vec<String> {
    let first = round as usize * 7;
    (0..INSERTED)
        .map(|j| format!("item:{}", (first + j * (QUEUE_LEN / INSERTED)) % QUEUE_LEN))
        .collect()
}

// ---------------------------------------------------------------------------------------
// Chapter 31: the list matrix.

/// One `LRANGE row 0 -1` round trip per row.
fn book_get_all(con: &mut redis::Connection, row_keys: &[String]) -> Vec<Vec<i64>> {
    row_keys
        .iter()
        .map(|key| {
            redis::cmd("LRANGE")
                .arg(key)
                .arg(0)
                .arg(-1)
                .query(con)
                .unwrap()
        })
        .collect()
}

fn matrix(con: &mut redis::Connection, id: &str, rows: usize, cols: usize) -> ListMatrix {
    let m = ListMatrix::new(id, rows, cols).unwrap();
    let cells: Vec<Vec<i64>> = (0..rows)
        .map(|r| (0..cols).map(|c| (r * cols + c) as i64).collect())
        .collect();
    m.init(Some(&cells)).run(con).unwrap();
    m
}

// ---------------------------------------------------------------------------------------

fn env_number(name: &str, default: u32) -> u32 {
    std::env::var(name)
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(default)
}

fn micros(t: Duration) -> f64 {
    t.as_secs_f64() * 1e6
}

fn main() {
    let rounds = env_number("ROUNDS", 5_000).max(1);
    let attempts = env_number("ATTEMPTS", 2_000).max(1);
    let big_rounds = (rounds / 10).max(1);
    let server = server::RedisProcess::start(&[]);
    let url = server.url(0);
    let mut con = redis::Client::open(url.as_str())
        .unwrap()
        .get_connection()
        .unwrap();
    redis_patterns::load_all(&mut con).unwrap();

    // The pools: the crate's and the book's, with the same 4 resources.
    let pool = ResourcePool::new("bench:pool").unwrap();
    let book_pool = BookPool::new("bench:pool");
    for r in RESOURCES {
        assert!(pool.associate(r).run(&mut con).unwrap());
        let _: () = redis::cmd("SADD")
            .arg(&book_pool.available)
            .arg(r)
            .query(&mut con)
            .unwrap();
    }
    let pool_times = crate_vs_book(
        &mut con,
        rounds,
        Box::new(|con, _| {
            let r = pool.acquire().run(con).unwrap().expect("a free resource");
            assert!(pool.release(&r).run(con).unwrap());
        }),
        Box::new(|con, _| {
            let Acquired::Got(r) = book_pool.acquire(con) else {
                panic!("one client alone cannot conflict or find the pool empty")
            };
            assert!(book_pool.release(con, &r));
        }),
    );

    // The queues: 100 items each, in the same order; both ways insert the same items
    // each round, so the two queues stay alike.
    let queue = UniqueCircularQueue::new("bench:queue:crate").unwrap();
    let book_queue = "bench:queue:book";
    let all: Vec<String> = (0..QUEUE_LEN).map(|i| format!("item:{i}")).collect();
    assert_eq!(queue.insert(&all).run(&mut con).unwrap(), QUEUE_LEN as u64);
    assert_eq!(
        book_unique_insert(&mut con, book_queue, &all),
        QUEUE_LEN as u64
    );
    let queue_times = crate_vs_book(
        &mut con,
        rounds,
        Box::new(|con, round| {
            let n = queue.insert(&items_of(round)).run(con).unwrap();
            assert_eq!(n, QUEUE_LEN as u64);
        }),
        Box::new(|con, round| {
            let n = book_unique_insert(con, book_queue, &items_of(round));
            assert_eq!(n, QUEUE_LEN as u64);
        }),
    );
    let queues_alike = {
        let a: Vec<String> = redis::cmd("LRANGE")
            .arg(queue.key())
            .arg(0)
            .arg(-1)
            .query(&mut con)
            .unwrap();
        let b: Vec<String> = redis::cmd("LRANGE")
            .arg(book_queue)
            .arg(0)
            .arg(-1)
            .query(&mut con)
            .unwrap();
        a == b
    };
    assert!(queues_alike, "the two ways left different queues");

    // The matrices: both ways read the same rows.
    let mut matrix_times = Vec::new();
    for (rows, cols, n) in [(10, 10, rounds), (100, 10, big_rounds)] {
        let m = matrix(&mut con, &format!("bench:matrix:{rows}x{cols}"), rows, cols);
        let keys: Vec<String> = (0..rows).map(|r| m.row_key(r).unwrap()).collect();
        let expected = m.get_all().run(&mut con).unwrap().expect("initialised");
        assert_eq!(book_get_all(&mut con, &keys), expected);
        let times = crate_vs_book(
            &mut con,
            n,
            Box::new(|con, _| {
                let all = m.get_all().run(con).unwrap().expect("initialised");
                assert_eq!(all.len(), rows);
            }),
            Box::new(|con, _| {
                let all = book_get_all(con, &keys);
                assert_eq!(all.len(), rows);
            }),
        );
        matrix_times.push((rows, cols, n, times));
    }

    // Contention: the book's way, then the crate's, each on its own fresh pool of 4.
    let contended = ResourcePool::new("bench:contended").unwrap();
    let book_contended = BookPool::new("bench:contended");
    for r in RESOURCES {
        assert!(contended.associate(r).run(&mut con).unwrap());
        let _: () = redis::cmd("SADD")
            .arg(&book_contended.available)
            .arg(r)
            .query(&mut con)
            .unwrap();
    }
    let (book_tally, book_elapsed) = contend(
        &url,
        attempts,
        |con| book_contended.acquire(con),
        |con, r| assert!(book_contended.release(con, r)),
    );
    let (crate_tally, crate_elapsed) = contend(
        &url,
        attempts,
        |con| match contended.acquire().run(con).unwrap() {
            Some(r) => Acquired::Got(r),
            // The script decides atomically: None means SPOP found no resource.
            None => Acquired::Empty,
        },
        |con, r| assert!(contended.release(r).run(con).unwrap()),
    );

    println!(
        "Book vs scripts: the ways take turns round by round on one connection (loopback); \
         wall-clock numbers on a shared machine should be read as ratios."
    );
    println!(
        "  {:<52} {:>7} {:>10} {:>10} {:>11}",
        "operation (round trips: crate vs book)", "rounds", "crate µs", "book µs", "book/crate"
    );
    let row = |name: &str, n: u32, (ours, book): (Duration, Duration)| {
        println!(
            "  {name:<52} {n:>7} {:>10.1} {:>10.1} {:>10.2}×",
            micros(ours),
            micros(book),
            book.as_secs_f64() / ours.as_secs_f64()
        );
    };
    row(
        "ResourcePool acquire + release (2 vs 4)",
        rounds,
        pool_times,
    );
    row(
        "UniqueCircularQueue insert 5 of 100 (1 vs 1 MULTI)",
        rounds,
        queue_times,
    );
    for (rows, cols, n, times) in matrix_times {
        row(
            &format!("ListMatrix get_all {rows}×{cols} (1 vs {rows})"),
            n,
            times,
        );
    }

    let total = u64::from(attempts) * THREADS as u64;
    println!(
        "\nResourcePool under contention: {THREADS} threads, own connections, pool of 4, \
         {attempts} acquire attempts each ({total} in all), releasing at once; \
         the book's way ran first, then the crate's:"
    );
    println!(
        "  {:<8} {:>9} {:>16} {:>26} {:>12}",
        "way", "acquired", "None: pool empty", "None: pool NOT empty", "wall time"
    );
    let tally_row = |name: &str, t: &Tally, elapsed: Duration| {
        println!(
            "  {name:<8} {:>9} {:>16} {:>26} {:>10.2} s",
            t.got,
            t.empty,
            t.spurious,
            elapsed.as_secs_f64()
        );
    };
    tally_row("book", &book_tally, book_elapsed);
    tally_row("crate", &crate_tally, crate_elapsed);
    println!(
        "  (book: NOT empty = SRANDMEMBER saw a resource, then EXEC was aborted by a WATCH \
         conflict; crate: the script picks and moves atomically, so None means no resource \
         was available)"
    );
}
