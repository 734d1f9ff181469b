use std::thread;
use std::time::Duration;

use redis_patterns::autocomplete::Autocomplete;
use redis_patterns::scripts::autocomplete as script;

use crate::harness::{self, InMode, Transcript, assert_code, assert_invalid, assert_snapshot};
use crate::step;

fn scenario(con: &mut dyn redis::ConnectionLike) -> Transcript {
    let mut t = Transcript::default();
    let complete = Autocomplete::new("AutoComplete:search").unwrap();
    let _ = step!(t, con, complete.feed("redis", 1.0));
    let _ = step!(t, con, complete.feed("redis cluster", 1.0));
    let _ = step!(t, con, complete.feed("redis", 1.0));
    let _ = step!(t, con, complete.feed("ruby", 1.0));
    let _ = step!(t, con, complete.hint("r", 10));
    let _ = step!(t, con, complete.hint("re", 1));
    let _ = step!(t, con, complete.hint("redis c", 10));
    let _ = step!(t, con, complete.hint("x", 10));
    let _ = step!(t, con, complete.set("ruby", 5.0));
    let _ = step!(t, con, complete.hint("r", 10));
    let _ = step!(t, con, complete.feed("红茶", 1.0));
    let _ = step!(t, con, complete.feed("红酒", 2.0));
    let _ = step!(t, con, complete.hint("红", 10));
    t.step("complete.table_keys(\"红茶\")", complete.table_keys("红茶"))
        .unwrap();
    let _ = step!(t, con, complete.remove("redis"));
    let _ = step!(t, con, complete.remove("redis"));
    let _ = step!(t, con, complete.hint("re", 10));
    let capped = Autocomplete::new("AutoComplete:capped")
        .unwrap()
        .with_cap(2)
        .unwrap();
    let _ = step!(t, con, capped.feed("aa", 3.0));
    let _ = step!(t, con, capped.feed("ab", 2.0));
    let _ = step!(t, con, capped.feed("ac", 1.0));
    t.note("the lightest entry beyond the cap of 2 is dropped");
    let _ = step!(t, con, capped.hint("a", 10));
    let _ = step!(t, con, capped.feed("ac", 5.0));
    let _ = step!(t, con, capped.hint("a", 10));
    for content in ["redis cluster", "ruby", "红茶", "红酒", "aa", "ab", "ac"] {
        for complete in [&complete, &capped] {
            complete.remove(content).in_mode().run(con).unwrap();
        }
    }
    t
}

#[test]
fn scenario_standalone() {
    let db = harness::fresh_db();
    let recorder = crate::recorder::Recorder::new("autocomplete");
    let mut con = db.con();
    assert_snapshot(
        "autocomplete__scenario",
        &scenario(&mut recorder.con(&mut con)),
    );
    assert!(harness::dump(&mut con).is_empty(), "a key was left behind");
    recorder.finish();
}

#[test]
fn scenario_cluster() {
    assert_snapshot(
        "autocomplete__scenario",
        &scenario(&mut harness::cluster_con()),
    );
}

/// 16 clients feed the same 5 contents 50 times each, at once: every prefix table ends
/// with each content's weight at exactly 16 × 50.
#[test]
fn concurrent_feeds_lose_no_weight() {
    let db = harness::fresh_db();
    let complete = Autocomplete::new("feeds").unwrap();
    let contents = ["apple", "apricot", "banana", "band", "bandana"];
    thread::scope(|scope| {
        for _ in 0..16 {
            let (db, complete) = (&db, &complete);
            scope.spawn(move || {
                let mut con = db.con();
                for _ in 0..50 {
                    for content in contents {
                        complete.feed(content, 1.0).run(&mut con).unwrap();
                    }
                }
            });
        }
    });
    let mut con = db.con();
    for content in contents {
        for key in complete.table_keys(content).unwrap() {
            let weight: f64 = redis::cmd("ZSCORE")
                .arg(&key)
                .arg(content)
                .query(&mut con)
                .unwrap();
            assert_eq!(weight, 800.0, "{content} in {key}");
        }
    }
}

#[test]
fn feedex_tables_expire_when_nobody_feeds_them() {
    let db = harness::fresh_db();
    let mut con = db.con();
    let complete = Autocomplete::new("cold").unwrap();
    complete
        .feedex("tea", 1.0, Duration::from_millis(300))
        .run(&mut con)
        .unwrap();
    complete
        .feedex("to", 1.0, Duration::from_secs(60))
        .run(&mut con)
        .unwrap();
    for key in complete.table_keys("tea").unwrap().iter().skip(1) {
        harness::wait_until_gone(&mut con, key);
    }
    assert_eq!(complete.hint("t", 10).run(&mut con).unwrap(), ["to", "tea"]);
}

#[test]
fn bad_input_is_refused_and_writes_nothing() {
    let db = harness::fresh_db();
    let mut con = db.con();
    for subject in ["", "a}b"] {
        assert_invalid(Autocomplete::new(subject), "subject");
    }
    let complete = Autocomplete::new("bad").unwrap();
    assert_invalid(complete.clone().with_cap(0), "cap");
    assert_invalid(complete.clone().with_cap(1_000_001), "cap");
    complete.feed("kept", 1.0).run(&mut con).unwrap();
    let before = harness::dump(&mut con);
    assert_invalid(complete.feed("", 1.0).run(&mut con), "content");
    assert_invalid(complete.feed(&"x".repeat(65), 1.0).run(&mut con), "content");
    assert_invalid(complete.remove("").run(&mut con), "content");
    for weight in [f64::NAN, f64::INFINITY] {
        assert_invalid(complete.feed("x", weight).run(&mut con), "weight");
        assert_invalid(complete.set("x", weight).run(&mut con), "weight");
    }
    assert_invalid(
        complete.feedex("x", 1.0, Duration::ZERO).run(&mut con),
        "ttl",
    );
    assert_invalid(complete.hint("k", 0).run(&mut con), "n");
    assert_invalid(complete.hint("", 10).run(&mut con), "segment");
    // 64 characters of four bytes each are 64 tables: accepted, then taken back.
    let long = "😀".repeat(64);
    complete.feed(&long, 1.0).run(&mut con).unwrap();
    assert_eq!(complete.remove(&long).run(&mut con).unwrap(), 64);
    // Raw calls, as another language makes them.
    let key = complete.table_key("k").unwrap();
    assert_code(
        harness::eval(
            &mut con,
            &script::FEED,
            &[&key],
            &["kept", "1", "decr", "", ""],
        ),
        "BAD_MODE",
    );
    assert_code(
        harness::eval(
            &mut con,
            &script::FEED,
            &[&key],
            &["kept", "1", "incr", "", "0"],
        ),
        "BAD_CAP",
    );
    assert_eq!(harness::dump(&mut con), before);
}
