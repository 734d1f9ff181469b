//! How the memory of chapter 16's autocomplete grows with the vocabulary: random
//! lowercase words of 4 to 10 letters fed into one subject, with `used_memory` (from
//! `INFO memory`) read before and after, and the tables counted with `DBSIZE`.
//!
//! ```sh
//! cargo run --example autocomplete_memory                                  # the Redis at 127.0.0.1:6379
//! REDIS_URL=redis://127.0.0.1:6379/15 cargo run --example autocomplete_memory   # another (an idle one)
//! ```
//!
//! An idle server of its own, on a Unix socket that no other server can hold (as the
//! README's quick start starts one):
//!
//! ```sh
//! dir=$(mktemp -d)
//! redis-server --port 0 --unixsocket "$dir/redis.sock" --save '' --daemonize yes --pidfile "$dir/redis.pid"
//! REDIS_URL="redis+unix://$dir/redis.sock" cargo run --example autocomplete_memory
//! redis-cli -s "$dir/redis.sock" shutdown nosave; rm -r "$dir"
//! ```
//!
//! `used_memory` counts the whole server, so run it on an idle one. It writes only keys whose names start with `{memory:`, and deletes them at the end.
//! The numbers go into the docs of `redis_patterns::autocomplete`.

use redis_patterns::Batch;
use redis_patterns::autocomplete::Autocomplete;

const SIZES: &[usize] = &[1_000, 10_000, 100_000];

/// Deterministic words: a linear congruential generator picks each length and letter.
fn words(n: usize) -> Vec<String> {
    let mut state: u64 = 0x2545_f491_4f6c_dd1d;
    let mut next = move |below: u64| {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (state >> 33) % below
    };
    (0..n)
        .map(|_| {
            let len = 4 + next(7);
            (0..len).map(|_| (b'a' + next(26) as u8) as char).collect()
        })
        .collect()
}

fn used_memory(con: &mut redis::Connection) -> redis::RedisResult<i64> {
    let info: String = redis::cmd("INFO").arg("memory").query(con)?;
    Ok(info
        .lines()
        .find_map(|l| l.strip_prefix("used_memory:"))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0))
}

fn delete_matching(con: &mut redis::Connection, pattern: &str) -> redis::RedisResult<()> {
    let mut cursor = 0_u64;
    loop {
        let (next, keys): (u64, Vec<String>) = redis::cmd("SCAN")
            .arg(cursor)
            .arg("MATCH")
            .arg(pattern)
            .arg("COUNT")
            .arg(1000)
            .query(con)?;
        if !keys.is_empty() {
            let _: () = redis::cmd("UNLINK").arg(&keys).query(con)?;
        }
        if next == 0 {
            return Ok(());
        }
        cursor = next;
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let url = std::env::var("REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379/".into());
    let mut con = redis::Client::open(url.as_str())?
        .get_connection()
        .map_err(|err| format!("no Redis answers at {url} ({err}): start one with `redis-server --daemonize yes`, or set REDIS_URL"))?;
    println!("Autocomplete memory: random words of 4 to 10 letters, fed once each ({url})\n");
    println!("| Words | Tables | Entries | Memory | Per word |");
    println!("|---|---|---|---|---|");
    for &n in SIZES {
        let subject = format!("{{memory:ac:{n}}}");
        let complete = Autocomplete::new(subject.as_str())?;
        let words = words(n);
        let keys_before: u64 = redis::cmd("DBSIZE").query(&mut con)?;
        let before = used_memory(&mut con)?;
        for chunk in words.chunks(500) {
            let mut batch = Batch::new();
            for word in chunk {
                // Only the memory matters here; each reply is ().
                let _ = batch.add(complete.feed(word, 1.0));
            }
            batch.run(&mut con)?;
        }
        let after = used_memory(&mut con)?;
        let keys_after: u64 = redis::cmd("DBSIZE").query(&mut con)?;
        let entries: usize = words.iter().map(String::len).sum();
        let bytes = after - before;
        println!(
            "| {n} | {} | {entries} | {:.1} MiB | {} bytes |",
            keys_after - keys_before,
            bytes as f64 / (1024.0 * 1024.0),
            bytes / n as i64
        );
        delete_matching(&mut con, &format!("{{memory:ac:{n}}}:*"))?;
    }
    Ok(())
}
