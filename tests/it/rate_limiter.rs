use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use redis_patterns::rate_limiter::{
    Decision, GcraLimiter, Limiter, RateLimiter, SlidingWindowLimiter,
};
use redis_patterns::scripts::rate_limiter as script;

use crate::harness::{self, InMode, Transcript, assert_code, assert_invalid, assert_snapshot};
use crate::step;

/// The parts of a decision that do not depend on timing: allowed, remaining, and whether
/// a retry-after came with it. The durations are checked against bounds instead.
fn shape(d: Decision) -> (bool, u64, bool) {
    (d.allowed, d.remaining, d.retry_after.is_some())
}

#[track_caller]
fn within(what: &str, d: Duration, low: Duration, high: Duration) {
    assert!(
        low < d && d <= high,
        "{what}: {d:?} not in ({low:?}, {high:?}]"
    );
}

fn scenario(con: &mut dyn redis::ConnectionLike) -> Transcript {
    let mut t = Transcript::default();

    // The book: Peter may try to log in 3 times per hour.
    let login = RateLimiter::new("login", 3, Duration::from_secs(3600)).unwrap();
    t.step("login.key(\"Peter\")", login.key("Peter")).unwrap();
    step!(t, con, login.reset("Peter")).unwrap();
    step!(t, con, login.remaining("Peter")).unwrap();
    step!(t, con, login.duration("Peter")).unwrap();
    for _ in 0..3 {
        step!(t, con, login.is_permitted("Peter")).unwrap();
        step!(t, con, login.remaining("Peter")).unwrap();
    }
    step!(t, con, login.is_permitted("Peter")).unwrap();
    step!(t, con, login.remaining("Peter")).unwrap();
    let left = login.duration("Peter").in_mode().run(con).unwrap().unwrap();
    within(
        "duration",
        left,
        Duration::from_secs(3590),
        Duration::from_secs(3600),
    );
    t.note("login.duration(\"Peter\") is Some, within (3590 s, 3600 s]");
    step!(t, con, login.is_permitted("Tom")).unwrap();
    step!(t, con, login.reset("Peter")).unwrap();
    step!(t, con, login.is_permitted("Peter")).unwrap();
    // The same limiter through the trait, with a cost.
    let d = login.attempt("Peter", 3).in_mode().run(con).unwrap();
    t.step("shape(login.attempt(\"Peter\", 3))", Ok(shape(d)))
        .unwrap();
    within(
        "fixed retry_after",
        d.retry_after.unwrap(),
        Duration::from_secs(3590),
        Duration::from_secs(3600),
    );
    let d = login.attempt("Peter", 2).in_mode().run(con).unwrap();
    t.step("shape(login.attempt(\"Peter\", 2))", Ok(shape(d)))
        .unwrap();
    step!(t, con, login.reset("Peter")).unwrap();
    step!(t, con, login.reset("Tom")).unwrap();

    // A sliding window: 3 messages in any 1.5 s.
    let window = Duration::from_millis(1500);
    let messages = SlidingWindowLimiter::new("message", 3, window).unwrap();
    step!(t, con, messages.reset("Peter")).unwrap();
    let first = harness::server_ms(con);
    for _ in 0..3 {
        let d = messages.attempt("Peter", 1).in_mode().run(con).unwrap();
        t.step("shape(messages.attempt(\"Peter\", 1))", Ok(shape(d)))
            .unwrap();
        assert_eq!(d.reset_after, window);
    }
    let d = messages.attempt("Peter", 1).in_mode().run(con).unwrap();
    t.step("shape(messages.attempt(\"Peter\", 1))", Ok(shape(d)))
        .unwrap();
    // The oldest message leaves the window `window` after it was sent, which was at
    // most this long ago on the server's clock.
    let since_first = Duration::from_millis(harness::server_ms(con) - first);
    within(
        "sliding retry_after",
        d.retry_after.unwrap(),
        window - since_first - Duration::from_millis(1),
        window,
    );
    assert!(d.reset_after >= d.retry_after.unwrap());
    harness::wait_server(con, window);
    t.note("wait 1.5 s on the server's clock: the window is empty again");
    let d = messages.attempt("Peter", 2).in_mode().run(con).unwrap();
    t.step("shape(messages.attempt(\"Peter\", 2))", Ok(shape(d)))
        .unwrap();
    let d = messages.attempt("Peter", 2).in_mode().run(con).unwrap();
    t.step("shape(messages.attempt(\"Peter\", 2))", Ok(shape(d)))
        .unwrap();
    step!(t, con, messages.reset("Peter")).unwrap();

    // GCRA: a burst of 3, then 2 per second (one every 500 ms).
    let api = GcraLimiter::new("api", 2, Duration::from_secs(1))
        .unwrap()
        .with_burst(3)
        .unwrap();
    let interval = Duration::from_millis(500);
    t.step("api.emission_interval()", Ok(api.emission_interval()))
        .unwrap();
    step!(t, con, api.reset("Peter")).unwrap();
    let first = harness::server_ms(con);
    for _ in 0..3 {
        let d = api.attempt("Peter", 1).in_mode().run(con).unwrap();
        t.step("shape(api.attempt(\"Peter\", 1))", Ok(shape(d)))
            .unwrap();
    }
    let d = api.attempt("Peter", 1).in_mode().run(con).unwrap();
    t.step("shape(api.attempt(\"Peter\", 1))", Ok(shape(d)))
        .unwrap();
    let since_first = Duration::from_millis(harness::server_ms(con) - first + 1);
    within(
        "gcra retry_after",
        d.retry_after.unwrap(),
        interval - since_first,
        interval,
    );
    within(
        "gcra reset_after",
        d.reset_after,
        3 * interval - since_first,
        3 * interval,
    );
    let d = api.attempt("Peter", 3).in_mode().run(con).unwrap();
    t.step("shape(api.attempt(\"Peter\", 3))", Ok(shape(d)))
        .unwrap();
    let since_first = Duration::from_millis(harness::server_ms(con) - first + 1);
    within(
        "gcra retry_after for 3",
        d.retry_after.unwrap(),
        3 * interval - since_first,
        3 * interval,
    );
    // One interval and a half later one request is back, and the next one is not yet
    // (another half interval of slack).
    harness::wait_server(con, Duration::from_millis(750));
    t.note("wait 750 ms on the server's clock: one request regained");
    let d = api.attempt("Peter", 1).in_mode().run(con).unwrap();
    t.step("shape(api.attempt(\"Peter\", 1))", Ok(shape(d)))
        .unwrap();
    let d = api.attempt("Peter", 1).in_mode().run(con).unwrap();
    t.step("shape(api.attempt(\"Peter\", 1))", Ok(shape(d)))
        .unwrap();
    step!(t, con, api.reset("Peter")).unwrap();
    step!(t, con, api.reset("Peter")).unwrap();
    t
}

#[test]
fn scenario_standalone() {
    let db = harness::fresh_db();
    let recorder = crate::recorder::Recorder::new("rate_limiter");
    assert_snapshot(
        "rate_limiter__scenario",
        &scenario(&mut recorder.con(db.con())),
    );
    recorder.finish();
}

#[test]
fn scenario_cluster() {
    assert_snapshot(
        "rate_limiter__scenario",
        &scenario(&mut harness::cluster_con()),
    );
}

/// Idle clients cost nothing: each key expires when its limiter is full again.
#[test]
fn keys_expire_when_full_again() {
    let db = harness::fresh_db();
    let mut con = db.con();
    let pttl = |con: &mut redis::Connection, key: &str| -> i64 {
        redis::cmd("PTTL").arg(key).query(con).unwrap()
    };
    let fixed = RateLimiter::new("a", 5, Duration::from_secs(10)).unwrap();
    assert!(fixed.is_permitted("u").run(&mut con).unwrap());
    let ttl = pttl(&mut con, &fixed.key("u").unwrap());
    assert!((9_900..=10_000).contains(&ttl), "{ttl}");

    let sliding = SlidingWindowLimiter::new("a", 5, Duration::from_secs(10)).unwrap();
    assert!(sliding.attempt("u", 3).run(&mut con).unwrap().allowed);
    let key = sliding.key("u").unwrap();
    let ttl = pttl(&mut con, &key);
    assert!((9_900..=10_000).contains(&ttl), "{ttl}");
    // One entry for the call, whatever its cost: `<units before it>:<cost>`.
    let entries: Vec<String> = redis::cmd("ZRANGE")
        .arg(&key)
        .arg(0)
        .arg(-1)
        .query(&mut con)
        .unwrap();
    assert_eq!(entries, ["0000000000000000:3"]);

    // 4 of a bucket of 10 that regains 1 per second: full again in 4 s.
    let gcra = GcraLimiter::new("a", 1, Duration::from_secs(1))
        .unwrap()
        .with_burst(10)
        .unwrap();
    let d = gcra.attempt("u", 4).run(&mut con).unwrap();
    assert_eq!(shape(d), (true, 6, false));
    within(
        "gcra reset_after",
        d.reset_after,
        Duration::from_millis(3_990),
        Duration::from_secs(4),
    );
    let ttl = pttl(&mut con, &gcra.key("u").unwrap());
    assert!((3_900..=4_000).contains(&ttl), "{ttl}");
}

const CLIENTS: usize = 16;

/// A limiter script's raw reply: allowed, remaining, retry-after µs, reset-after µs.
type Reply = (bool, i64, i64, i64);

/// Runs `attempt` on `CLIENTS` threads, each with its own connection, until `run` has
/// passed and some result satisfied `until` (a refusal, say: a test that needs one waits
/// for it rather than hoping its threads got enough turns), and gathers what they return.
fn hammer<T: Send + 'static>(
    db: &Arc<harness::Db>,
    run: Duration,
    until: impl Fn(&T) -> bool + Send + Sync + 'static,
    attempt: impl Fn(&mut redis::Connection) -> Option<T> + Send + Sync + 'static,
) -> (Vec<T>, usize) {
    let results = Arc::new(Mutex::new(Vec::new()));
    let attempts = Arc::new(Mutex::new(0usize));
    let (attempt, until) = (Arc::new(attempt), Arc::new(until));
    let seen = Arc::new(AtomicBool::new(false));
    let mut con = db.con();
    redis_patterns::load_all(&mut con).unwrap();
    let started = Instant::now();
    let clients: Vec<_> = (0..CLIENTS)
        .map(|_| {
            let (db, results, attempts, attempt) = (
                db.clone(),
                results.clone(),
                attempts.clone(),
                attempt.clone(),
            );
            let (until, seen) = (until.clone(), seen.clone());
            thread::spawn(move || {
                let mut con = db.con();
                let (mut mine, mut n) = (Vec::new(), 0);
                while started.elapsed() < run || !seen.load(Ordering::SeqCst) {
                    assert!(
                        started.elapsed() < Duration::from_secs(60),
                        "`until` never held"
                    );
                    n += 1;
                    if let Some(r) = attempt(&mut con) {
                        if until(&r) {
                            seen.store(true, Ordering::SeqCst);
                        }
                        mine.push(r);
                    }
                }
                results.lock().unwrap().extend(mine);
                *attempts.lock().unwrap() += n;
            })
        })
        .collect();
    for client in clients {
        client.join().unwrap();
    }
    let results = std::mem::take(&mut *results.lock().unwrap());
    let attempts = *attempts.lock().unwrap();
    (results, attempts)
}

/// Runs a transaction that calls a script. A transaction cannot recover from NOSCRIPT:
/// `hammer` loads the scripts before the clients start.
fn transaction<T: redis::FromRedisValue>(con: &mut redis::Connection, pipe: &redis::Pipeline) -> T {
    pipe.query(con).unwrap()
}

fn micros((secs, micros): (u64, u64)) -> u64 {
    secs * 1_000_000 + micros
}

/// 16 clients for 0.6 s against 20 per 100 ms: every window admits exactly 20 (the last
/// at most 20), counted 1..=20 with none lost or doubled, and windows are at least
/// 100 ms apart.
#[test]
fn fixed_window_never_admits_more_than_maximum() {
    let db = Arc::new(harness::fresh_db());
    let (maximum, interval) = (20u64, Duration::from_millis(100));
    let limiter = RateLimiter::new("hammer", maximum, interval).unwrap();
    let key = limiter.key("u").unwrap();
    // Each attempt: the server's time just after it, whether it was admitted, and the
    // count it left. The clients go on until one was refused.
    let refused = |a: &(u64, bool, u64)| !a.1;
    let (all, attempts) = hammer(&db, Duration::from_millis(600), refused, move |con| {
        let op = limiter.attempt("u", 1);
        let (reply, count, time): (Reply, u64, (u64, u64)) = transaction(
            con,
            redis::pipe()
                .atomic()
                .add_command(op.cmd().unwrap().clone())
                .cmd("GET")
                .arg(&key)
                .cmd("TIME"),
        );
        Some((micros(time), reply.0, count))
    });
    let mut admitted: Vec<(u64, u64)> = all
        .iter()
        .filter(|a| a.1)
        .map(|&(at, _, count)| (at, count))
        .collect();
    admitted.sort_unstable();
    let mut windows: Vec<(u64, u64)> = Vec::new(); // (start µs, admitted)
    for &(at, count) in &admitted {
        if count == 1 {
            windows.push((at, 0));
        }
        let window = windows.last_mut().expect("a window starts at count 1");
        window.1 += 1;
        assert_eq!(count, window.1, "count {count} out of order at {at}");
        assert!(count <= maximum);
    }
    for pair in windows.windows(2) {
        assert!(
            pair[1].0 - pair[0].0 >= 99_000,
            "windows {pair:?} closer than the interval"
        );
    }
    // A refusal comes only from a full window: the one that started last before it.
    for &(at, _, _) in all.iter().filter(|a| !a.1) {
        let window = windows.iter().rev().find(|w| w.0 <= at).unwrap();
        assert_eq!(
            window.1, maximum,
            "refused at {at} in a window of {}",
            window.1
        );
    }
    eprintln!(
        "fixed window: {CLIENTS} clients, {attempts} attempts, {} admitted in {} windows of {interval:?} (maximum {maximum}), per window {:?}",
        admitted.len(),
        windows.len(),
        windows.iter().map(|w| w.1).collect::<Vec<_>>()
    );
}

/// 16 clients for 0.6 s against 10 per 100 ms: no span of 100 ms, at any alignment,
/// holds more than 10 admitted requests (checked from the scores the script logged),
/// every entry is distinct, and the limit is reached.
#[test]
fn sliding_window_never_admits_more_than_limit_in_any_window() {
    let db = Arc::new(harness::fresh_db());
    let (limit, period) = (10usize, Duration::from_millis(100));
    let limiter = SlidingWindowLimiter::new("hammer", limit as u64, period).unwrap();
    let key = limiter.key("u").unwrap();
    // Each admitted request: the entry it logged (the newest, in the same transaction).
    // The clients go on until one was refused; a refusal is its server time, after it.
    let refused = |a: &Result<(String, u64), u64>| a.is_err();
    let (all, attempts) = hammer(&db, Duration::from_millis(600), refused, move |con| {
        let op = limiter.attempt("u", 1);
        let (reply, newest, time): (Reply, Vec<(String, u64)>, (u64, u64)) = transaction(
            con,
            redis::pipe()
                .atomic()
                .add_command(op.cmd().unwrap().clone())
                .cmd("ZRANGE")
                .arg(&key)
                .arg(0)
                .arg(0)
                .arg("REV")
                .arg("WITHSCORES")
                .cmd("TIME"),
        );
        Some(if reply.0 {
            Ok(newest.into_iter().next().unwrap())
        } else {
            Err(micros(time))
        })
    });
    let admitted: Vec<(String, u64)> = all.iter().filter_map(|a| a.clone().ok()).collect();
    // An entry is its member and its score: after the key expired (no admission for a
    // whole period), the count in the members starts again from 0.
    let members: HashSet<&(String, u64)> = admitted.iter().collect();
    assert_eq!(members.len(), admitted.len(), "an entry was logged twice");
    let mut stamps: Vec<u64> = admitted.iter().map(|&(_, s)| s).collect();
    stamps.sort_unstable();
    let span = period.as_micros() as u64;
    let mut busiest = 0;
    for (i, &end) in stamps.iter().enumerate() {
        // The window (end - span, end]: the densest ones end at an admission.
        let start = stamps.partition_point(|&s| s + span <= end);
        let inside = i + 1 - start;
        assert!(
            inside <= limit,
            "{inside} admitted in the 100 ms ending at {end}"
        );
        busiest = busiest.max(inside);
    }
    assert_eq!(busiest, limit, "the limit was never reached");
    // A refusal comes only from a full window: the entries in the span before it (with
    // a millisecond for the script's run before the TIME that followed it) fill it.
    for &at in all.iter().filter_map(|a| a.as_ref().err()) {
        let inside = stamps
            .iter()
            .filter(|&&s| s + span + 1000 > at && s <= at)
            .count();
        assert!(
            inside >= limit,
            "refused at {at} with {inside} in the window"
        );
    }
    let elapsed = stamps.last().unwrap() - stamps[0];
    eprintln!(
        "sliding window: {CLIENTS} clients, {attempts} attempts, {} admitted over {elapsed} µs (limit {limit} per {period:?}), busiest window {busiest}",
        stamps.len()
    );
}

/// 16 clients for 1 s against a bucket of 10 refilled at 50 per second: the admitted
/// count is burst + rate × elapsed, within one request, elapsed measured on the server
/// from the first admission to the last attempt.
#[test]
fn gcra_admits_burst_plus_rate_times_elapsed() {
    let db = Arc::new(harness::fresh_db());
    let (burst, count, period) = (10u64, 50u64, Duration::from_secs(1));
    let limiter = GcraLimiter::new("hammer", count, period)
        .unwrap()
        .with_burst(burst)
        .unwrap();
    let emission = limiter.emission_interval().as_micros() as u64;
    let (attempts, _) = hammer(
        &db,
        Duration::from_secs(1),
        |_| true,
        move |con| {
            let op = limiter.attempt("u", 1);
            let (reply, time): (Reply, (u64, u64)) = transaction(
                con,
                redis::pipe()
                    .atomic()
                    .add_command(op.cmd().unwrap().clone())
                    .cmd("TIME"),
            );
            Some((micros(time), reply.0))
        },
    );
    let first = attempts.iter().filter(|a| a.1).map(|a| a.0).min().unwrap();
    let last = attempts.iter().map(|a| a.0).max().unwrap();
    let admitted = attempts.iter().filter(|a| a.1).count() as u64;
    let expected = burst + (last - first) / emission;
    assert!(
        admitted.abs_diff(expected) <= 1,
        "admitted {admitted}, expected {expected} = {burst} + {} µs / {emission} µs",
        last - first
    );
    eprintln!(
        "gcra: {CLIENTS} clients, {} attempts, {admitted} admitted over {} µs; burst {burst} + {count}/{period:?} × elapsed = {expected}",
        attempts.len(),
        last - first
    );
}

/// Every setting is checked where the limiter is built, and named: by the ranges of the
/// script it is sent to, under the name the constructor gives it (`limit` and `period`
/// for all three limiters, though the fixed window's script says `maximum` and
/// `interval`, as the book does).
#[test]
fn constructors_refuse_bad_settings() {
    let sec = Duration::from_secs(1);
    let huge = Duration::from_secs(u64::MAX);
    let longest = Duration::from_millis(10_000_000_000);
    let most = 999_999_999_999_999;

    assert_invalid(RateLimiter::new("", 3, sec), "action");
    assert_invalid(
        RateLimiter::new("a", 3, sec).unwrap().with_prefix(""),
        "prefix",
    );
    for limit in [0, most + 1, u64::MAX] {
        assert_invalid(RateLimiter::new("a", limit, sec), "limit");
    }
    for period in [
        Duration::ZERO,
        Duration::from_micros(999),
        longest + Duration::from_millis(1),
        huge,
    ] {
        assert_invalid(RateLimiter::new("a", 3, period), "period");
    }
    assert!(RateLimiter::new("a", most, longest).is_ok());
    assert!(RateLimiter::new("a", 1, Duration::from_millis(1)).is_ok());

    assert_invalid(SlidingWindowLimiter::new("", 3, sec), "action");
    assert_invalid(
        SlidingWindowLimiter::new("a", 3, sec)
            .unwrap()
            .with_prefix(""),
        "prefix",
    );
    for limit in [0, 1_000_001, u64::MAX] {
        assert_invalid(SlidingWindowLimiter::new("a", limit, sec), "limit");
    }
    for period in [
        Duration::ZERO,
        Duration::from_micros(999),
        longest + Duration::from_millis(1),
        huge,
    ] {
        assert_invalid(SlidingWindowLimiter::new("a", 3, period), "period");
    }
    assert!(SlidingWindowLimiter::new("a", 1_000_000, longest).is_ok());

    assert_invalid(GcraLimiter::new("", 3, sec), "action");
    assert_invalid(
        GcraLimiter::new("a", 3, sec).unwrap().with_prefix(""),
        "prefix",
    );
    // A limit of 0 fails once, here, not on every request.
    for limit in [0, most + 1, u64::MAX] {
        assert_invalid(GcraLimiter::new("api", limit, sec), "limit");
    }
    for period in [
        Duration::ZERO,
        Duration::from_micros(999),
        longest + Duration::from_millis(1),
        huge,
    ] {
        assert_invalid(GcraLimiter::new("a", 3, period), "period");
    }
    let gcra = GcraLimiter::new("a", 3, sec).unwrap();
    assert_eq!(gcra.burst(), 3, "the burst defaults to the limit");
    for burst in [0, most + 1, u64::MAX] {
        assert_invalid(gcra.clone().with_burst(burst), "burst");
    }
    // A bucket of 10^6 refilled once a day would take 10^6 days to fill.
    let daily = GcraLimiter::new("a", 1, Duration::from_secs(86_400)).unwrap();
    assert_invalid(daily.clone().with_burst(1_000_000), "burst");
    // 10^10 ms hold 115 days of 86,400,000 ms: the largest bucket it refills in time.
    assert_invalid(daily.clone().with_burst(116), "burst");
    assert_eq!(daily.with_burst(115).unwrap().burst(), 115);
    assert!(GcraLimiter::new("a", most, longest).is_ok());
    // The settings a limiter was built with survive the builders, in either order.
    let built = GcraLimiter::new("a", 3, sec)
        .unwrap()
        .with_prefix("app")
        .unwrap()
        .with_burst(7)
        .unwrap();
    assert_eq!(
        built,
        GcraLimiter::new("a", 3, sec)
            .unwrap()
            .with_burst(7)
            .unwrap()
            .with_prefix("app")
            .unwrap()
    );
    assert_eq!(built.key("u").unwrap(), "app:u:a");
    assert_eq!(built.burst(), 7);
}

#[test]
fn bad_input_is_refused_and_writes_nothing() {
    let db = harness::fresh_db();
    let mut con = db.con();
    harness::cmd(&mut con, &["SET", "RateLimiter:garbled:login", "abc"]);
    harness::cmd(&mut con, &["HSET", "RateLimiter:hashed:login", "f", "v"]);
    harness::cmd(&mut con, &["SET", "SlidingWindowLimiter:string:a", "x"]);
    harness::cmd(&mut con, &["SET", "GcraLimiter:garbled:a", "soon"]);
    harness::cmd(&mut con, &["SET", "GcraLimiter:huge:a", "1e400"]);
    harness::cmd(&mut con, &["LPUSH", "GcraLimiter:listed:a", "x"]);
    let login = RateLimiter::new("login", 3, Duration::from_secs(60)).unwrap();
    assert!(login.is_permitted("Peter").run(&mut con).unwrap());
    let before = harness::dump(&mut con);

    let sec = Duration::from_secs(1);
    // Rust refuses before any I/O: per-call input when the call is made.
    assert_invalid(login.is_permitted("").run(&mut con), "uid");
    assert_invalid(login.remaining("").run(&mut con), "uid");
    assert_invalid(login.duration("").run(&mut con), "uid");
    assert_invalid(login.reset("").run(&mut con), "uid");
    assert_invalid(login.key(""), "uid");
    assert_invalid(login.attempt("Peter", 0).run(&mut con), "cost");
    assert_invalid(login.attempt("Peter", 4).run(&mut con), "cost");

    let sliding = SlidingWindowLimiter::new("a", 5, sec).unwrap();
    assert_invalid(sliding.attempt("", 1).run(&mut con), "uid");
    assert_invalid(sliding.attempt("u", 0).run(&mut con), "cost");
    assert_invalid(sliding.attempt("u", 6).run(&mut con), "cost");

    let gcra = GcraLimiter::new("a", 10, sec)
        .unwrap()
        .with_burst(5)
        .unwrap();
    assert_invalid(gcra.attempt("", 1).run(&mut con), "uid");
    assert_invalid(gcra.attempt("u", 0).run(&mut con), "cost");
    assert_invalid(gcra.attempt("u", 6).run(&mut con), "cost");

    // Damaged or foreign keys fail before anything is written.
    // Damaged or foreign keys fail before anything is written.
    assert_code(login.is_permitted("garbled").run(&mut con), "BAD_COUNTER");
    assert_code(login.duration("garbled").run(&mut con), "BAD_COUNTER");
    assert!(matches!(
        login.remaining("garbled").run(&mut con),
        Err(redis_patterns::Error::Redis(_))
    ));
    assert_code(login.is_permitted("hashed").run(&mut con), "WRONGTYPE");
    assert_code(login.duration("hashed").run(&mut con), "WRONGTYPE");
    assert_code(sliding.attempt("string", 1).run(&mut con), "WRONGTYPE");
    assert_code(gcra.attempt("garbled", 1).run(&mut con), "BAD_TAT");
    assert_code(gcra.attempt("huge", 1).run(&mut con), "BAD_TAT");
    assert_code(gcra.attempt("listed", 1).run(&mut con), "WRONGTYPE");

    // Raw arguments, as a caller in another language would send them.
    let bad_counts = [
        "0",
        "-1",
        "1e3",
        "0x10",
        "abc",
        "",
        "1.5",
        "1000000000000000",
    ];
    let bad_periods = ["0", "-1", "1e3", "abc", "", "10000000001"];
    let k = "RateLimiter:raw:login";
    for m in bad_counts {
        assert_code(
            harness::eval(&mut con, &script::IS_PERMITTED, &[k], &[m, "1000", "1"]),
            "BAD_MAXIMUM",
        );
        assert_code(
            harness::eval(&mut con, &script::DURATION, &[k], &[m]),
            "BAD_MAXIMUM",
        );
    }
    for p in bad_periods {
        assert_code(
            harness::eval(&mut con, &script::IS_PERMITTED, &[k], &["3", p, "1"]),
            "BAD_INTERVAL",
        );
    }
    for c in ["0", "4", "abc", ""] {
        assert_code(
            harness::eval(&mut con, &script::IS_PERMITTED, &[k], &["3", "1000", c]),
            "BAD_COST",
        );
    }
    let k = "SlidingWindowLimiter:raw:a";
    for l in bad_counts.iter().copied().chain(["1000001"]) {
        assert_code(
            harness::eval(&mut con, &script::SLIDING_WINDOW, &[k], &[l, "1000", "1"]),
            "BAD_LIMIT",
        );
    }
    for p in bad_periods {
        assert_code(
            harness::eval(&mut con, &script::SLIDING_WINDOW, &[k], &["5", p, "1"]),
            "BAD_PERIOD",
        );
    }
    for c in ["0", "6", "abc"] {
        assert_code(
            harness::eval(&mut con, &script::SLIDING_WINDOW, &[k], &["5", "1000", c]),
            "BAD_COST",
        );
    }
    let k = "GcraLimiter:raw:a";
    for b in bad_counts {
        assert_code(
            harness::eval(&mut con, &script::GCRA, &[k], &[b, "10", "1000", "1"]),
            "BAD_BURST",
        );
        assert_code(
            harness::eval(&mut con, &script::GCRA, &[k], &["5", b, "1000", "1"]),
            "BAD_COUNT",
        );
    }
    for p in bad_periods {
        assert_code(
            harness::eval(&mut con, &script::GCRA, &[k], &["5", "10", p, "1"]),
            "BAD_PERIOD",
        );
    }
    assert_code(
        harness::eval(
            &mut con,
            &script::GCRA,
            &[k],
            &["1000000", "1", "86400000", "1"],
        ),
        "BAD_PERIOD",
    );
    for c in ["0", "6", "abc"] {
        assert_code(
            harness::eval(&mut con, &script::GCRA, &[k], &["5", "10", "1000", c]),
            "BAD_COST",
        );
    }

    assert_eq!(harness::dump(&mut con), before);
}
