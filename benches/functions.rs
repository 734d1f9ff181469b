//! The same operations run as scripts (`EVALSHA`) and as Redis Functions (`FCALL`), side
//! by side in one run: three scripts of different weight, each the mean of its rounds.
//!
//! ```sh
//! cargo bench --bench functions             # 5,000 rounds per way
//! ROUNDS=20000 cargo bench --bench functions
//! ```
//!
//! The two ways take turns round by round on one connection, so that a noisy moment hits
//! them alike; read the ratios. Nothing here asserts on timing.

use std::time::{Duration, Instant};

use redis_patterns::ScriptMode::{Eval, Functions};
use redis_patterns::identity_lock::IdentityLock;
use redis_patterns::stats::Stats;
use redis_patterns::timeline::Timeline;
use redis_patterns::{Op, catalog};

#[path = "../tests/it/server.rs"]
mod server;

/// Mean time of `op(mode)` per mode, the modes taking turns.
fn measure<T: 'static>(
    con: &mut redis::Connection,
    rounds: u32,
    mut op: impl FnMut(u32) -> Op<T>,
) -> [Duration; 2] {
    let mut totals = [Duration::ZERO; 2];
    for round in 0..rounds {
        for (i, mode) in [Eval, Functions].into_iter().enumerate() {
            let op = op(round).via(mode);
            let start = Instant::now();
            op.run(con).expect("the operation runs");
            totals[i] += start.elapsed();
        }
    }
    totals.map(|t| t / rounds)
}

fn main() {
    let rounds: u32 = std::env::var("ROUNDS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(5_000)
        .max(10);
    let server = server::RedisProcess::start(&[]);
    let mut con = server.connection();
    catalog::load_all(&mut con).unwrap();
    catalog::load_functions(&mut con).unwrap();

    let lock = IdentityLock::new("bench:lock").unwrap();
    let timeline = Timeline::new("bench:timeline")
        .unwrap()
        .with_max_length(100)
        .unwrap();
    let stats = Stats::new().with_prefix("bench").unwrap();
    let rows: Vec<(&str, [Duration; 2])> = vec![
        (
            "identity_lock/release (O(1), a miss)",
            measure(&mut con, rounds, |_| lock.release("t").map(|_| Ok(()))),
        ),
        (
            "timeline/add (5 entries, trimmed to 100)",
            measure(&mut con, rounds, |round| {
                let base = u64::from(round) * 5;
                let items: Vec<(u64, String)> = (0..5)
                    .map(|i| (base + i, format!("i{}", base + i)))
                    .collect();
                let entries: Vec<(u64, &str)> =
                    items.iter().map(|(t, i)| (*t, i.as_str())).collect();
                timeline.add(&entries).map(|_| Ok(()))
            }),
        ),
        (
            "stats/update (min, max, 3 sums)",
            measure(&mut con, rounds, |round| {
                stats
                    .update_stats("page", "t", f64::from(round % 100), 1_700_000_000_000)
                    .map(|_| Ok(()))
            }),
        ),
    ];
    println!(
        "Scripts against Redis Functions: mean per call over {rounds} rounds (loopback, one connection; read the ratios)"
    );
    println!(
        "  {:<44} {:>12} {:>12} {:>14}",
        "script", "EVALSHA µs", "FCALL µs", "FCALL/EVALSHA"
    );
    for (name, [eval, fcall]) in rows {
        println!(
            "  {name:<44} {:>12.1} {:>12.1} {:>13.2}×",
            eval.as_secs_f64() * 1e6,
            fcall.as_secs_f64() * 1e6,
            fcall.as_secs_f64() / eval.as_secs_f64()
        );
    }
}
