//! The two designs of "online friends" (《Redis入门指南》 §5.3.4) side by side in one run:
//! the memory each takes for the same users, and the server time of a visit and of one
//! user's online friends (`INFO commandstats`), at several sizes.
//!
//! ```sh
//! cargo bench --bench online_friends            # 10,000 and 100,000 users online
//! USERS=1000000 cargo bench --bench online_friends
//! ```
//!
//! Every user visits once a minute for the 10 minutes of the window and has 200
//! friends. Design a keeps 10 sets of all the users (one per minute); design b one sorted
//! set. Timings are noisy on a shared machine: read the ratios.

use std::time::{SystemTime, UNIX_EPOCH};

use redis_patterns::online_friends::{LastSeen, MinuteSets};

#[path = "support/fill.rs"]
mod fill;
#[path = "../tests/it/server.rs"]
mod server;

use fill::lua;

const FRIENDS: usize = 200;
const WINDOW_MINUTES: u64 = 10;

fn used_memory(con: &mut redis::Connection) -> u64 {
    let info: String = redis::cmd("INFO").arg("memory").query(con).unwrap();
    info.lines()
        .find_map(|line| line.strip_prefix("used_memory:"))
        .and_then(|n| n.trim().parse().ok())
        .unwrap()
}

/// The server's µs per script call over `calls` calls of `op`.
fn server_us<T: std::fmt::Debug + 'static>(
    con: &mut redis::Connection,
    calls: usize,
    mut op: impl FnMut(usize) -> redis_patterns::Op<T>,
) -> f64 {
    redis::cmd("CONFIG").arg("RESETSTAT").exec(con).unwrap();
    for i in 0..calls {
        op(i).run(con).unwrap();
    }
    let info: String = redis::cmd("INFO").arg("commandstats").query(con).unwrap();
    info.lines()
        // Read-only scripts run as EVALSHA_RO.
        .find(|line| {
            line.starts_with("cmdstat_evalsha:") || line.starts_with("cmdstat_evalsha_ro:")
        })
        .and_then(|line| {
            line.split("usec_per_call=")
                .nth(1)?
                .split(',')
                .next()?
                .parse()
                .ok()
        })
        .unwrap()
}

fn main() {
    let sizes: Vec<u64> = match std::env::var("USERS").ok().and_then(|v| v.parse().ok()) {
        Some(n) => vec![n],
        None => vec![10_000, 100_000],
    };
    let server = server::RedisProcess::start(&[]);
    let mut con = server.connection();
    redis_patterns::load_all(&mut con).unwrap();
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64;

    println!(
        "Online friends, both designs: {WINDOW_MINUTES}-minute window, {FRIENDS} friends each"
    );
    println!(
        "{:>9} {:>12} {:>12} {:>7}   {:>10} {:>10}   {:>10} {:>10} {:>7}",
        "users",
        "a memory",
        "b memory",
        "a / b",
        "a visit µs",
        "b visit µs",
        "a query µs",
        "b query µs",
        "a / b"
    );
    for users in sizes {
        let _: () = redis::cmd("FLUSHALL").query(&mut con).unwrap();
        let minutes = MinuteSets::new("bench")
            .unwrap()
            .with_window(WINDOW_MINUTES as u32)
            .unwrap();
        let seen = LastSeen::new("bench").unwrap();
        // Friends sets: the same for both designs, so they are not counted.
        lua(
            &mut con,
            "for u = 0, tonumber(ARGV[1]) - 1, 50 do
               for v = u, math.min(u + 49, tonumber(ARGV[1]) - 1) do
                 local friends = {}
                 for f = 1, tonumber(ARGV[2]) do friends[f] = 'u' .. ((v * 7919 + f * 104729) % tonumber(ARGV[1])) end
                 redis.call('SADD', '{bench}:friends:u' .. v, unpack(friends))
               end
             end",
            &[],
            &[&users.to_string(), &FRIENDS.to_string()],
        );
        let base = used_memory(&mut con);
        let minute_keys: Vec<String> = (0..WINDOW_MINUTES)
            .map(|back| minutes.minute_key(((now / 60_000 + 60 - back) % 60) as u32))
            .collect();
        for key in &minute_keys {
            lua(
                &mut con,
                "for u = 0, tonumber(ARGV[1]) - 1, 1000 do
                   local batch = {}
                   for v = u, math.min(u + 999, tonumber(ARGV[1]) - 1) do batch[#batch + 1] = 'u' .. v end
                   redis.call('SADD', KEYS[1], unpack(batch))
                 end",
                &[key],
                &[&users.to_string()],
            );
        }
        let with_a = used_memory(&mut con);
        lua(
            &mut con,
            "for u = 0, tonumber(ARGV[1]) - 1, 1000 do
               local batch = {}
               for v = u, math.min(u + 999, tonumber(ARGV[1]) - 1) do
                 batch[#batch + 1] = tonumber(ARGV[2]) - v % 600000
                 batch[#batch + 1] = 'u' .. v
               end
               redis.call('ZADD', KEYS[1], unpack(batch))
             end",
            &[seen.seen_key()],
            &[&users.to_string(), &now.to_string()],
        );
        let with_b = used_memory(&mut con);
        let (a_bytes, b_bytes) = (with_a - base, with_b - with_a);
        let a_visit = server_us(&mut con, 2000, |i| {
            minutes
                .visit_at(&format!("u{}", i as u64 % users), now)
                .map(|_| Ok(()))
        });
        let b_visit = server_us(&mut con, 2000, |i| {
            seen.visit_at(&format!("u{}", i as u64 % users), now)
        });
        let a_query = server_us(&mut con, 500, |i| {
            minutes.online_friends_at(&format!("u{}", i as u64 % users), now)
        });
        let b_query = server_us(&mut con, 500, |i| {
            seen.online_friends_at(&format!("u{}", i as u64 % users), now)
        });
        println!(
            "{users:>9} {:>10.1}MB {:>10.1}MB {:>6.1}×   {a_visit:>10.1} {b_visit:>10.1}   {a_query:>10.1} {b_query:>10.1} {:>6.2}×",
            a_bytes as f64 / 1e6,
            b_bytes as f64 / 1e6,
            a_bytes as f64 / b_bytes as f64,
            a_query / b_query
        );
    }
}
