//! Redis in Action chapters 2 and 5: each operation the crate's way against the book's,
//! side by side in one run, with the round trips each way took (counted on the
//! connection, not assumed) and the time per operation.
//!
//! ```sh
//! cargo bench --bench in_action            # 2,000 rounds per way
//! ROUNDS=10000 cargo bench --bench in_action
//! ```
//!
//! The book's ways are its Python listings sent command for command from Rust (the same
//! client, so the difference is the protocol, not the language). The ways take turns
//! round by round on one connection, so that a noisy moment hits them alike; each round
//! first sets up what it works on, untimed. Timings are noisy on a shared machine: read
//! the ratios. Nothing here asserts on timing.

use std::time::{Duration, Instant};

use redis::{ConnectionLike, RedisResult, Value};
use redis_patterns::app_log::{AppLog, Severity};
use redis_patterns::ip_city::{IpBlock, IpCities};
use redis_patterns::row_cache::RowCache;
use redis_patterns::stats::Stats;
use redis_patterns::time_series::{PRECISIONS, TimeSeries};
use redis_patterns::web_session::WebSessions;

#[path = "../tests/it/server.rs"]
mod server;

/// A connection that counts its round trips: a command or a pipeline is one.
struct Counted<'a> {
    con: &'a mut redis::Connection,
    trips: u64,
}

impl ConnectionLike for Counted<'_> {
    fn req_packed_command(&mut self, cmd: &[u8]) -> RedisResult<Value> {
        self.trips += 1;
        self.con.req_packed_command(cmd)
    }

    fn req_packed_commands(
        &mut self,
        cmd: &[u8],
        offset: usize,
        count: usize,
    ) -> RedisResult<Vec<Value>> {
        self.trips += 1;
        self.con.req_packed_commands(cmd, offset, count)
    }

    fn get_db(&self) -> i64 {
        self.con.get_db()
    }

    fn check_connection(&mut self) -> bool {
        self.con.check_connection()
    }

    fn is_open(&self) -> bool {
        self.con.is_open()
    }
}

/// What a way does before a round, untimed.
type Setup<'a> = Box<dyn FnMut(&mut redis::Connection, u32) + 'a>;
/// The timed operation of a round.
type Run<'a> = Box<dyn FnMut(&mut Counted<'_>, u32) + 'a>;

/// One way of doing an operation: untimed setup for the round, then the timed operation.
struct Way<'a> {
    setup: Setup<'a>,
    run: Run<'a>,
}

fn way<'a>(
    setup: impl FnMut(&mut redis::Connection, u32) + 'a,
    run: impl FnMut(&mut Counted<'_>, u32) + 'a,
) -> Way<'a> {
    Way {
        setup: Box::new(setup),
        run: Box::new(run),
    }
}

/// Mean time and round trips per operation of each way; the ways take turns.
fn measure(con: &mut redis::Connection, rounds: u32, ways: &mut [Way<'_>]) -> Vec<(Duration, f64)> {
    let mut totals = vec![(Duration::ZERO, 0u64); ways.len()];
    for round in 0..rounds {
        for (way, total) in ways.iter_mut().zip(&mut totals) {
            (way.setup)(con, round);
            let mut counted = Counted { con, trips: 0 };
            let start = Instant::now();
            (way.run)(&mut counted, round);
            total.0 += start.elapsed();
            total.1 += counted.trips;
        }
    }
    totals
        .into_iter()
        .map(|(time, trips)| (time / rounds, trips as f64 / f64::from(rounds)))
        .collect()
}

/// A row of the report: the crate's way against the book's.
struct Row {
    name: &'static str,
    ours: (Duration, f64),
    book: (Duration, f64),
}

fn compare(
    con: &mut redis::Connection,
    rounds: u32,
    name: &'static str,
    ours: Way<'_>,
    book: Way<'_>,
) -> Row {
    let mut ways = [ours, book];
    measure(con, (rounds / 10).max(1), &mut ways);
    let [ours, book] = measure(con, rounds, &mut ways)[..] else {
        unreachable!("one result per way")
    };
    Row { name, ours, book }
}

fn cmd(con: &mut dyn ConnectionLike, args: &[&str]) {
    let mut cmd = redis::cmd(args[0]);
    for arg in &args[1..] {
        cmd.arg(*arg);
    }
    let _: Value = cmd.query(con).unwrap();
}

fn now_secs() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64()
}

// ---------------------------------------------------------------------------------------
// Chapter 2, the book's way.

/// Listing 2.9: `update_token` with an item, five commands in five round trips.
fn book_update_token(con: &mut dyn ConnectionLike, token: &str, user: &str, item: &str) {
    let ts = now_secs().to_string();
    let viewed = format!("book:viewed:{token}");
    cmd(con, &["HSET", "book:login:", token, user]);
    cmd(con, &["ZADD", "book:recent:", &ts, token]);
    cmd(con, &["ZADD", &viewed, &ts, item]);
    cmd(con, &["ZREMRANGEBYRANK", &viewed, "0", "-26"]);
    cmd(con, &["ZINCRBY", "book:viewed:", "-1", item]);
}

/// One pass of `clean_full_sessions`' loop body, at a limit of 0.
fn book_clean_full_sessions(con: &mut dyn ConnectionLike) {
    let size: u64 = redis::cmd("ZCARD").arg("book:recent:").query(con).unwrap();
    let end = size.min(100);
    let tokens: Vec<String> = redis::cmd("ZRANGE")
        .arg("book:recent:")
        .arg(0)
        .arg(end as i64 - 1)
        .query(con)
        .unwrap();
    let mut keys = Vec::new();
    for token in &tokens {
        keys.push(format!("book:viewed:{token}"));
        keys.push(format!("book:cart:{token}"));
    }
    let _: () = redis::cmd("DEL").arg(&keys).query(con).unwrap();
    let _: () = redis::cmd("HDEL")
        .arg("book:login:")
        .arg(&tokens)
        .query(con)
        .unwrap();
    let _: () = redis::cmd("ZREM")
        .arg("book:recent:")
        .arg(&tokens)
        .query(con)
        .unwrap();
}

/// One pass of `cache_rows`' loop body, with the first row due.
fn book_cache_row(con: &mut dyn ConnectionLike) {
    let next: Vec<(String, f64)> = redis::cmd("ZRANGE")
        .arg("book:schedule:")
        .arg(0)
        .arg(0)
        .arg("WITHSCORES")
        .query(con)
        .unwrap();
    let (row, _) = next.into_iter().next().expect("a due row");
    let delay: f64 = redis::cmd("ZSCORE")
        .arg("book:delay:")
        .arg(&row)
        .query(con)
        .unwrap();
    let now = now_secs();
    cmd(
        con,
        &["ZADD", "book:schedule:", &(now + delay).to_string(), &row],
    );
    cmd(
        con,
        &["SET", &format!("book:inv:{row}"), r#"{"id":1,"qty":629}"#],
    );
}

// ---------------------------------------------------------------------------------------
// Chapter 5, the book's way.

/// The hour's start, the book's `:start` value (the errata's absolute hours).
fn hour_now() -> String {
    ((now_secs() as u64) / 3600 * 3600).to_string()
}

/// `log_common` in the hour it started: `WATCH`, `GET`, then the transaction.
fn book_log_common(con: &mut dyn ConnectionLike, message: &str) {
    let (destination, start) = ("book:common:bench:info", "book:common:bench:info:start");
    cmd(con, &["WATCH", start]);
    let existing: Option<String> = redis::cmd("GET").arg(start).query(con).unwrap();
    let hour = hour_now();
    let mut tx = redis::pipe();
    tx.atomic();
    if existing.is_none() {
        tx.cmd("SET").arg(start).arg(&hour).ignore();
    }
    let entry = format!("{} {message}", now_secs());
    tx.cmd("ZINCRBY")
        .arg(destination)
        .arg(1)
        .arg(message)
        .ignore();
    tx.cmd("LPUSH")
        .arg("book:recent:bench:info")
        .arg(entry)
        .ignore();
    tx.cmd("LTRIM")
        .arg("book:recent:bench:info")
        .arg(0)
        .arg(99)
        .ignore();
    let _: () = tx.query(con).unwrap();
}

/// `update_counter`: one transaction of 14 commands.
fn book_update_counter(con: &mut dyn ConnectionLike, name: &str, count: i64) {
    let now = now_secs();
    let mut tx = redis::pipe();
    tx.atomic();
    for prec in PRECISIONS {
        let pnow = (now / prec as f64) as u64 * prec;
        let hash = format!("{prec}:{name}");
        tx.cmd("ZADD").arg("book:known:").arg(0).arg(&hash).ignore();
        tx.cmd("HINCRBY")
            .arg(format!("book:count:{hash}"))
            .arg(pnow)
            .arg(count)
            .ignore();
    }
    let _: () = tx.query(con).unwrap();
}

/// `update_stats` in the hour it started: `WATCH`, `GET`, then the transaction with two
/// temporary keys.
fn book_update_stats(con: &mut dyn ConnectionLike, value: f64, round: u32) {
    let (destination, start) = ("book:stats:bench:t", "book:stats:bench:t:start");
    cmd(con, &["WATCH", start]);
    let existing: Option<String> = redis::cmd("GET").arg(start).query(con).unwrap();
    let (tkey1, tkey2) = (format!("book:tmp1:{round}"), format!("book:tmp2:{round}"));
    let mut tx = redis::pipe();
    tx.atomic();
    if existing.is_none() {
        tx.cmd("SET").arg(start).arg(hour_now()).ignore();
    }
    tx.cmd("ZADD").arg(&tkey1).arg(value).arg("min").ignore();
    tx.cmd("ZADD").arg(&tkey2).arg(value).arg("max").ignore();
    tx.cmd("ZUNIONSTORE")
        .arg(destination)
        .arg(2)
        .arg(destination)
        .arg(&tkey1)
        .arg("AGGREGATE")
        .arg("MIN")
        .ignore();
    tx.cmd("ZUNIONSTORE")
        .arg(destination)
        .arg(2)
        .arg(destination)
        .arg(&tkey2)
        .arg("AGGREGATE")
        .arg("MAX")
        .ignore();
    tx.cmd("DEL").arg(&tkey1).arg(&tkey2).ignore();
    tx.cmd("ZINCRBY")
        .arg(destination)
        .arg(1)
        .arg("count")
        .ignore();
    tx.cmd("ZINCRBY")
        .arg(destination)
        .arg(value)
        .arg("sum")
        .ignore();
    tx.cmd("ZINCRBY")
        .arg(destination)
        .arg(value * value)
        .arg("sumsq")
        .ignore();
    let _: () = tx.query(con).unwrap();
}

/// `find_city_by_ip`: the block, then its city.
fn book_find_city_by_ip(con: &mut dyn ConnectionLike, ip: u32) -> Option<String> {
    let ids: Vec<String> = redis::cmd("ZREVRANGEBYSCORE")
        .arg("book:ip2cityid:")
        .arg(ip)
        .arg(0)
        .arg("LIMIT")
        .arg(0)
        .arg(1)
        .query(con)
        .unwrap();
    let id = ids.first()?.split('_').next()?.to_owned();
    redis::cmd("HGET")
        .arg("book:cityid2city:")
        .arg(id)
        .query(con)
        .unwrap()
}

fn main() {
    let rounds = std::env::var("ROUNDS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(2_000u32)
        .max(10);
    let server = server::RedisProcess::start(&[]);
    let mut con = server.connection();
    redis_patterns::load_all(&mut con).unwrap();
    let mut rows = Vec::new();

    let web = WebSessions::new("bench:web").unwrap();
    rows.push(compare(
        &mut con,
        rounds,
        "update_token, with an item",
        way(
            |_, _| {},
            |con, round| {
                let token = format!("t{}", round % 1000);
                let item = format!("item:{}", round % 100);
                web.update_token(&token, "u", Some(&item)).run(con).unwrap();
            },
        ),
        way(
            |_, _| {},
            |con, round| {
                let token = format!("t{}", round % 1000);
                let item = format!("item:{}", round % 100);
                book_update_token(con, &token, "u", &item);
            },
        ),
    ));

    // Each round ends 10 sessions, each with 5 items viewed and a cart.
    let cleaned = WebSessions::new("bench:clean")
        .unwrap()
        .with_limit(0)
        .unwrap();
    rows.push(compare(
        &mut con,
        rounds / 10,
        "clean_full_sessions, a batch of 10",
        way(
            |con, round| {
                for s in 0..10 {
                    let token = format!("c{round}:{s}");
                    for i in 0..5 {
                        cleaned
                            .update_token(&token, "u", Some(&format!("item:{i}")))
                            .run(con)
                            .unwrap();
                    }
                    cleaned.add_to_cart(&token, "item:1", 1).run(con).unwrap();
                }
            },
            |con, _| {
                let ended = cleaned.clean_full_sessions(con, 100).unwrap();
                assert_eq!(ended.len(), 10);
            },
        ),
        way(
            |con, round| {
                for s in 0..10 {
                    let token = format!("c{round}:{s}");
                    for i in 0..5 {
                        book_update_token(con, &token, "u", &format!("item:{i}"));
                    }
                    cmd(con, &["HSET", &format!("book:cart:{token}"), "item:1", "1"]);
                }
            },
            |con, _| book_clean_full_sessions(con),
        ),
    ));

    rows.push(compare(
        &mut con,
        rounds,
        "rescale_viewed, 1,000 items",
        way(
            |con, round| {
                if round == 0 {
                    for i in 0..1000 {
                        let item = format!("item:{i}");
                        web.update_token("r", "u", Some(&item)).run(con).unwrap();
                    }
                }
            },
            |con, _| {
                assert!(web.rescale_viewed(10_000).run(con).unwrap().halved);
            },
        ),
        way(
            |con, round| {
                if round == 0 {
                    for i in 0..1000 {
                        book_update_token(con, "r", "u", &format!("item:{i}"));
                    }
                }
            },
            |con, _| {
                cmd(con, &["ZREMRANGEBYRANK", "book:viewed:", "20000", "-1"]);
                cmd(
                    con,
                    &[
                        "ZINTERSTORE",
                        "book:viewed:",
                        "1",
                        "book:viewed:",
                        "WEIGHTS",
                        "0.5",
                    ],
                );
            },
        ),
    ));

    let row_cache = RowCache::new("bench:rows").unwrap();
    rows.push(compare(
        &mut con,
        rounds,
        "schedule_row_cache",
        way(
            |_, _| {},
            |con, round| {
                let row = format!("row{}", round % 100);
                row_cache
                    .schedule_row_cache(&row, Duration::from_secs(5))
                    .run(con)
                    .unwrap();
            },
        ),
        way(
            |_, _| {},
            |con, round| {
                let row = format!("row{}", round % 100);
                cmd(con, &["ZADD", "book:delay:", "5", &row]);
                cmd(
                    con,
                    &["ZADD", "book:schedule:", &now_secs().to_string(), &row],
                );
            },
        ),
    ));

    // Each round makes one row due, which the worker then caches.
    let due = RowCache::new("bench:due").unwrap();
    rows.push(compare(
        &mut con,
        rounds,
        "cache_rows, one due row",
        way(
            |con, _| {
                due.schedule_row_cache("row", Duration::from_secs(3600))
                    .run(con)
                    .unwrap();
            },
            |con, _| {
                let pass = due
                    .cache_rows(con, 1, |_| {
                        Ok::<_, redis_patterns::Error>(Some(r#"{"id":1,"qty":629}"#))
                    })
                    .unwrap();
                assert_eq!(pass.cached, 1);
            },
        ),
        way(
            |con, _| {
                cmd(con, &["ZADD", "book:delay:", "3600", "row"]);
                cmd(con, &["ZADD", "book:schedule:", "0", "row"]);
            },
            |con, _| book_cache_row(con),
        ),
    ));

    let log = AppLog::new("bench").unwrap();
    rows.push(compare(
        &mut con,
        rounds,
        "log_common",
        way(
            |_, _| {},
            |con, round| {
                let message = format!("message {}", round % 10);
                log.log_common(&message, Severity::Info).run(con).unwrap();
            },
        ),
        way(
            |_, _| {},
            |con, round| book_log_common(con, &format!("message {}", round % 10)),
        ),
    ));

    let counters = TimeSeries::new("bench:ts").unwrap();
    rows.push(compare(
        &mut con,
        rounds,
        "update_counter, 7 precisions",
        way(
            |_, _| {},
            |con, round| {
                let now = (now_secs() * 1000.0) as u64;
                let name = format!("c{}", round % 10);
                counters.update_counter(&name, 1, now).run(con).unwrap();
            },
        ),
        way(
            |_, _| {},
            |con, round| book_update_counter(con, &format!("c{}", round % 10), 1),
        ),
    ));

    let stats = Stats::new().with_prefix("bench:stats").unwrap();
    rows.push(compare(
        &mut con,
        rounds,
        "update_stats",
        way(
            |_, _| {},
            |con, round| {
                let now = (now_secs() * 1000.0) as u64;
                let value = f64::from(round % 100);
                stats
                    .update_stats("bench", "t", value, now)
                    .run(con)
                    .unwrap();
            },
        ),
        way(
            |_, _| {},
            |con, round| book_update_stats(con, f64::from(round % 100), round),
        ),
    ));

    // 10,000 blocks of 256 addresses, in both layouts.
    let geo = IpCities::new("bench:geo").unwrap();
    let blocks = (0..10_000u32).map(|i| {
        Ok(IpBlock {
            start: i * 256,
            end: None,
            city_id: format!("c{i}"),
        })
    });
    geo.import_blocks(&mut con, blocks).unwrap();
    geo.import_cities(
        &mut con,
        (0..10_000u32).map(|i| Ok((format!("c{i}"), Default::default()))),
    )
    .unwrap();
    let mut fill = redis::pipe();
    for i in 0..10_000u32 {
        fill.cmd("ZADD")
            .arg("book:ip2cityid:")
            .arg(i * 256)
            .arg(format!("c{i}_{i}"))
            .ignore();
        fill.cmd("HSET")
            .arg("book:cityid2city:")
            .arg(format!("c{i}"))
            .arg(r#"["","",""]"#)
            .ignore();
    }
    fill.exec(&mut con).unwrap();
    rows.push(compare(
        &mut con,
        rounds,
        "find_city_by_ip",
        way(
            |_, _| {},
            |con, round| {
                let ip = round * 7919 % (10_000 * 256);
                assert!(geo.find_city_by_ip(ip).run(con).unwrap().is_some());
            },
        ),
        way(
            |_, _| {},
            |con, round| {
                let ip = round * 7919 % (10_000 * 256);
                assert!(book_find_city_by_ip(con, ip).is_some());
            },
        ),
    ));

    // Each round imports 1000 blocks: the book's one ZADD per row against a batch.
    let imported = IpCities::new("bench:import").unwrap();
    rows.push(compare(
        &mut con,
        (rounds / 100).max(2),
        "import 1000 IP blocks",
        way(
            |_, _| {},
            |con, round| {
                let blocks = (0..1000u32).map(|i| {
                    Ok(IpBlock {
                        start: round * 1000 + i,
                        end: None,
                        city_id: "c".into(),
                    })
                });
                assert_eq!(imported.import_blocks(con, blocks).unwrap(), 1000);
            },
        ),
        way(
            |_, _| {},
            |con, round| {
                for i in 0..1000u32 {
                    let start = round * 1000 + i;
                    cmd(
                        con,
                        &[
                            "ZADD",
                            "book:import:",
                            &start.to_string(),
                            &format!("c_{start}"),
                        ],
                    );
                }
            },
        ),
    ));

    println!(
        "Redis in Action, the crate's way against the book's: mean per operation over the \
         rounds (loopback, one connection; read the ratios)"
    );
    println!(
        "  {:<40} {:>13} {:>10} {:>10} {:>11}",
        "operation", "round trips", "crate µs", "book µs", "book/crate"
    );
    for row in rows {
        println!(
            "  {:<40} {:>6} vs {:<4} {:>10.1} {:>10.1} {:>10.2}×",
            row.name,
            trips(row.ours.1),
            trips(row.book.1),
            row.ours.0.as_secs_f64() * 1e6,
            row.book.0.as_secs_f64() * 1e6,
            row.book.0.as_secs_f64() / row.ours.0.as_secs_f64()
        );
    }
}

/// Round trips per operation: whole when they are.
fn trips(mean: f64) -> String {
    if mean.fract() == 0.0 {
        format!("{mean:.0}")
    } else {
        format!("{mean:.1}")
    }
}
