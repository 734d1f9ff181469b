use std::sync::Barrier;
use std::thread;

use redis_patterns::Error;
use redis_patterns::scripts::stats as script;
use redis_patterns::stats::{Stats, Summary};

use crate::harness::{self, InMode, Transcript, assert_code, assert_invalid, assert_snapshot};
use crate::step;

/// 2023-11-14 22:00:00 UTC, in ms: the start of an hour.
const H0: u64 = 1_699_999_200_000;
const HOUR: u64 = 3_600_000;

/// The book's flow: a page's access times over two hours, the rotation, a late writer,
/// an unknown page, and the ranking of the slowest.
fn scenario(con: &mut dyn redis::ConnectionLike) -> Transcript {
    let mut t = Transcript::default();
    let stats = Stats::new()
        .with_prefix("test:stats")
        .unwrap()
        .with_slowest("test:slowest", 2)
        .unwrap()
        .via(harness::script_mode());
    let _ = step!(t, con, stats.update_stats("Home", "AccessTime", 0.5, H0));
    let _ = step!(
        t,
        con,
        stats.update_stats("Home", "AccessTime", 1.5, H0 + 60_000)
    );
    let _ = step!(
        t,
        con,
        stats.update_stats("Home", "AccessTime", 1.0, H0 + HOUR - 1)
    );
    let _ = step!(t, con, stats.get_stats("Home", "AccessTime"));
    let _ = step!(t, con, stats.get_stats("Nowhere", "AccessTime"));
    t.note("no data is None (the book raises KeyError)");
    let _ = step!(
        t,
        con,
        stats.update_stats("Home", "AccessTime", 4.0, H0 + HOUR)
    );
    t.note("a new hour: the last one rotated out");
    let _ = step!(t, con, stats.last_hour_stats("Home", "AccessTime"));
    let _ = step!(
        t,
        con,
        stats.update_stats("Home", "AccessTime", 2.0, H0 + 10)
    );
    t.note("a late writer, still in the earlier hour, counts into the current one");
    let _ = step!(t, con, stats.get_stats("Home", "AccessTime"));
    let _ = step!(t, con, stats.record_slowest("Home", 3.0));
    let _ = step!(t, con, stats.record_slowest("About", 0.1));
    let _ = step!(t, con, stats.record_slowest("Search", 7.0));
    t.note("the ranking keeps its 2 slowest");
    let _ = step!(t, con, stats.slowest(10));
    let page: Result<&str, Error> = stats.access_time(con, "Contact", || Ok("<html>"));
    let _ = t.step("stats.access_time(con, \"Contact\", render)", page);
    let contact = stats
        .get_stats("Contact", "AccessTime")
        .in_mode()
        .run(con)
        .unwrap()
        .unwrap();
    t.step(
        "stats.get_stats(\"Contact\", \"AccessTime\"): its count",
        Ok::<_, Error>(contact.count),
    )
    .unwrap();
    let mut keys: Vec<String> = Vec::new();
    for context in ["Home", "Contact"] {
        let kind = "AccessTime";
        keys.extend(stats.keys(context, kind).unwrap());
    }
    keys.push("test:slowest".into());
    redis::cmd("DEL").arg(keys).exec(con).unwrap();
    t
}

#[test]
fn scenario_standalone() {
    let db = harness::fresh_db();
    // Contact's access time is measured: no replay could send it again.
    let recorder = crate::recorder::Recorder::new("stats").until_key(
        "{test:stats:Contact:AccessTime}",
        "the access time sent next is measured",
    );
    let mut con = db.con();
    assert_snapshot("stats__scenario", &scenario(&mut recorder.con(&mut con)));
    assert!(harness::dump(&mut con).is_empty(), "a key was left behind");
    recorder.finish();
}

#[test]
fn scenario_cluster() {
    assert_snapshot("stats__scenario", &scenario(&mut harness::cluster_con()));
}

/// 16 writers add 50 values each in each of three hours, waiting for one another at
/// each hour boundary, so that all of them race to write first in the new hour. After
/// each hour, the previous hour's statistics are exactly its 800 values: no update lost,
/// and one rotation per boundary (a second one would leave a part of the new hour there).
#[test]
fn stats_lose_no_update_and_rotate_once_per_hour_under_16_writers() {
    let db = harness::fresh_db();
    let stats = Stats::new().with_prefix("race").unwrap();
    let barrier = Barrier::new(17);
    let value = |w: u64, i: u64, hour: u64| ((w * 50 + i) % 97 + hour * 1000) as f64;
    let expected = |hour: u64| {
        let values: Vec<f64> = (0..16)
            .flat_map(|w| (0..50).map(move |i| value(w, i, hour)))
            .collect();
        let sum: f64 = values.iter().sum();
        let sumsq: f64 = values.iter().map(|v| v * v).sum();
        let min = values.iter().copied().fold(f64::MAX, f64::min);
        let max = values.iter().copied().fold(f64::MIN, f64::max);
        (800u64, sum, sumsq, min, max)
    };
    let of = |s: Summary| (s.count, s.sum, s.sumsq, s.min, s.max);
    thread::scope(|scope| {
        for w in 0..16u64 {
            let (db, stats, barrier) = (&db, &stats, &barrier);
            scope.spawn(move || {
                let mut con = db.con();
                for hour in 0..3 {
                    barrier.wait();
                    for i in 0..50 {
                        let now = H0 + hour * HOUR + i * 1000 + w;
                        stats
                            .update_stats("page", "t", value(w, i, hour), now)
                            .run(&mut con)
                            .unwrap();
                    }
                    barrier.wait();
                }
            });
        }
        let mut con = db.con();
        for hour in 0..3 {
            barrier.wait();
            barrier.wait();
            let current = stats.get_stats("page", "t").run(&mut con).unwrap().unwrap();
            assert_eq!(of(current), expected(hour), "hour {hour}");
            if hour > 0 {
                let last = stats
                    .last_hour_stats("page", "t")
                    .run(&mut con)
                    .unwrap()
                    .unwrap();
                assert_eq!(of(last), expected(hour - 1), "the hour before {hour}");
                let pstart: u64 = redis::cmd("GET")
                    .arg("{race:page:t}:pstart")
                    .query(&mut con)
                    .unwrap();
                assert_eq!(pstart, (H0 + (hour - 1) * HOUR) / 1000);
            }
        }
    });
}

/// Three values of 0.1 leave `sumsq - sum²/count` at -3.5e-18 after rounding; the
/// book's `** .5` answers a complex number, the crate 0.0.
#[test]
fn values_all_alike_have_a_deviation_of_zero() {
    let db = harness::fresh_db();
    let mut con = db.con();
    let stats = Stats::new();
    for _ in 0..3 {
        stats
            .update_stats("alike", "t", 0.1, H0)
            .run(&mut con)
            .unwrap();
    }
    let summary = stats
        .get_stats("alike", "t")
        .run(&mut con)
        .unwrap()
        .unwrap();
    assert!(
        summary.sumsq - summary.sum * summary.sum / 3.0 < 0.0,
        "the rounding this test is about did not happen: {summary:?}"
    );
    assert_eq!(summary.stddev, 0.0);
}

#[test]
fn bad_input_is_refused_and_writes_nothing() {
    let db = harness::fresh_db();
    let mut con = db.con();
    let stats = Stats::new();
    assert_invalid(Stats::new().with_prefix(""), "prefix");
    assert_invalid(Stats::new().with_slowest("", 1), "key");
    assert_invalid(Stats::new().with_slowest("s", 0), "keep");
    stats.update_stats("p", "t", 1.0, H0).run(&mut con).unwrap();
    let before = harness::dump(&mut con);
    assert_invalid(
        stats.update_stats("", "t", 1.0, H0).run(&mut con),
        "context",
    );
    assert_invalid(stats.update_stats("p", "", 1.0, H0).run(&mut con), "type");
    assert_invalid(
        stats.update_stats("{p}", "t", 1.0, H0).run(&mut con),
        "context",
    );
    for bad in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
        assert_invalid(stats.update_stats("p", "t", bad, H0).run(&mut con), "value");
    }
    assert_code(
        stats.update_stats("p", "t", 1e101, H0).run(&mut con),
        "BAD_VALUE",
    );
    assert_invalid(
        stats
            .update_stats("p", "t", 1.0, 1_000_000_000_000_000)
            .run(&mut con),
        "now",
    );
    assert_invalid(stats.get_stats("", "t").run(&mut con), "context");
    assert_invalid(stats.record_slowest("", 1.0).run(&mut con), "context");
    assert_invalid(stats.slowest(0).run(&mut con), "n");
    assert_eq!(harness::dump(&mut con), before);

    // Raw calls: a start that is not an hour is found before anything is written.
    let keys = stats.keys("p", "t").unwrap();
    let keys: Vec<&str> = keys.iter().map(String::as_str).collect();
    for held in ["x", "-1", "1.5", ""] {
        harness::cmd(&mut con, &["SET", keys[1], held]);
        let before = harness::dump(&mut con);
        assert_code(
            harness::eval(
                &mut con,
                &script::UPDATE,
                &keys,
                &["1", &(H0 + HOUR).to_string()],
            ),
            "BAD_START",
        );
        assert_eq!(harness::dump(&mut con), before);
    }
}
