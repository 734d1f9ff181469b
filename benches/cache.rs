//! What a cache hit through `Cache::get_or_compute` costs against a plain `GET` of the
//! same key on the same connection, side by side in one run: a hit is one `GET`, so the
//! ratio should sit near 1. For comparison, the `cache/claim` script, which a miss runs
//! (and which every read ran before hits became plain `GET`s).
//!
//! ```sh
//! cargo bench --bench cache               # 20,000 reads per way
//! ROUNDS=100000 cargo bench --bench cache
//! ```
//!
//! The ways take turns read by read, so that a noisy moment on the machine hits them
//! alike. Timings are noisy on a shared machine; the ratios are what to read.

use std::time::{Duration, Instant};

use redis_patterns::Error;
use redis_patterns::cache::{Cache, JsonCache};
use redis_patterns::scripts;

#[path = "../tests/it/server.rs"]
mod server;

const NAME: &str = "bench:page";

type Read<'a> = Box<dyn FnMut(&mut redis::Connection) -> usize + 'a>;

/// Mean time of each way's read over `rounds`, taking turns read by read.
fn measure(con: &mut redis::Connection, rounds: u32, ways: &mut [Read<'_>]) -> Vec<Duration> {
    let mut totals = vec![Duration::ZERO; ways.len()];
    for _ in 0..rounds {
        for (way, total) in ways.iter_mut().zip(&mut totals) {
            let start = Instant::now();
            let len = way(con);
            *total += start.elapsed();
            assert!(len > 0, "a read missed");
        }
    }
    totals.into_iter().map(|t| t / rounds).collect()
}

fn never<T>() -> Result<T, Error> {
    panic!("a hit must not compute")
}

fn main() {
    let rounds: u32 = std::env::var("ROUNDS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(20_000);
    let server = server::RedisProcess::start(&[]);
    let mut con = server.connection();
    redis_patterns::load_all(&mut con).unwrap();

    let page = "<html>".to_owned() + &"x".repeat(1000) + "</html>";
    let cache = Cache::new();
    cache.set(NAME, &page, None).run(&mut con).unwrap();
    let json = JsonCache::<Vec<u32>>::new();
    json.set("bench:json", &(0..100).collect(), None)
        .run(&mut con)
        .unwrap();
    let claim = scripts::cache::claim(
        NAME,
        "{bench:page}:computing",
        "token",
        Duration::from_secs(10),
    );

    let mut ways: [Read<'_>; 4] = [
        Box::new(|con| {
            let value: Option<String> = redis::cmd("GET").arg(NAME).query(con).unwrap();
            value.unwrap().len()
        }),
        Box::new(|con| {
            let value: String = cache.get_or_compute(con, NAME, None, never).unwrap();
            value.len()
        }),
        Box::new(|con| {
            let value = json
                .get_or_compute(&cache, con, "bench:json", None, never)
                .unwrap();
            value.len()
        }),
        Box::new(|con| {
            let (answer, value) = claim.run(con).unwrap();
            assert_eq!(answer, "hit");
            value.unwrap().len()
        }),
    ];
    // Warm up the connection, the server and the caches.
    measure(&mut con, 1000, &mut ways);
    let [get, hit, json_hit, script] = measure(&mut con, rounds, &mut ways)[..] else {
        unreachable!("one mean per way")
    };

    println!("A cache hit of a 1 KB page, mean of {rounds} each (one connection, loopback):");
    let row = |name: &str, t: Duration| {
        println!(
            "  {name:<58} {:>8.1} µs  {:>5.2}× a plain GET",
            t.as_secs_f64() * 1e6,
            t.as_secs_f64() / get.as_secs_f64()
        );
    };
    row("redis-rs: GET, decoded as String", get);
    row("crate: cache.get_or_compute(..) -> String, a hit", hit);
    row(
        "crate: JsonCache::get_or_compute, a hit (100 numbers)",
        json_hit,
    );
    row(
        "a cache/claim script per read (the miss path's first step)",
        script,
    );
}
