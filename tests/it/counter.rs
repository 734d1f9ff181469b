use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread;

use redis_patterns::counter::{CompactCounter, Counter, HashCounter, Overflow, Width};
use redis_patterns::scripts::counter as script;

use crate::harness::{self, Transcript, assert_code, assert_invalid, assert_snapshot};
use crate::step;

/// The book's examples (chapter 6), the unlisted `CompactCounter` with each overflow
/// policy, and the 2011 cookbook's counters through the same types.
fn scenario(con: &mut dyn redis::ConnectionLike) -> Transcript {
    let mut t = Transcript::default();
    let counter = Counter::new("counter:page_view").unwrap();
    let _ = step!(t, con, counter.get());
    let _ = step!(t, con, counter.increase(1));
    let _ = step!(t, con, counter.increase(10));
    let _ = step!(t, con, counter.decrease(1));
    let _ = step!(t, con, counter.decrease(5));
    let _ = step!(t, con, counter.get());
    let _ = step!(t, con, counter.reset(0));
    let _ = step!(t, con, counter.get());
    let _ = step!(t, con, counter.reset(100));

    let likes = HashCounter::new("article:10086:counters", "like").unwrap();
    let _ = step!(t, con, likes.get());
    let _ = step!(t, con, likes.increase(1));
    let _ = step!(t, con, likes.increase(3));
    let _ = step!(t, con, likes.decrease(2));
    let _ = step!(t, con, likes.reset(0));
    let _ = step!(t, con, likes.get());
    let views = HashCounter::new("article:10086:counters", "view").unwrap();
    let _ = step!(t, con, views.reset(9));

    t.note("CompactCounter: the book's u8 counter wraps silently (0 + 300 = 44)");
    let wrap = CompactCounter::new("compact:counters", 0, Width::U8, Overflow::Wrap).unwrap();
    let _ = step!(t, con, wrap.increase(300));
    let sat = CompactCounter::new("compact:counters", 1, Width::U8, Overflow::Sat).unwrap();
    let _ = step!(t, con, sat.increase(300));
    let _ = step!(t, con, sat.decrease(1000));
    let fail = CompactCounter::new("compact:counters", 2, Width::U8, Overflow::Fail).unwrap();
    let _ = step!(t, con, fail.increase(200));
    let _ = step!(t, con, fail.increase(100));
    let _ = step!(t, con, fail.get());
    let _ = step!(t, con, fail.reset(7));
    let _ = step!(t, con, fail.get());
    let signed = CompactCounter::new("compact:counters", 3, Width::I64, Overflow::Fail).unwrap();
    let _ = step!(t, con, signed.decrease(5));
    let _ = step!(t, con, signed.increase(i64::MAX));
    let _ = step!(t, con, wrap.get());

    t.note("2011 cookbook: Counter('hits') incr/decr/set/get/reset, and Counter('hits', key='counter')");
    let hits = Counter::new("hits").unwrap();
    let _ = step!(t, con, hits.increase(2));
    let _ = step!(t, con, hits.decrease(1));
    let _ = step!(t, con, hits.reset(42));
    let _ = step!(t, con, hits.get());
    let _ = step!(t, con, hits.reset(0));
    let hits_field = HashCounter::new("counter", "hits").unwrap();
    let _ = step!(t, con, hits_field.increase(1));
    t
}

#[test]
fn scenario_standalone() {
    let db = harness::fresh_db();
    let recorder = crate::recorder::Recorder::new("counter");
    assert_snapshot("counter__scenario", &scenario(&mut recorder.con(db.con())));
    recorder.finish();
}

#[test]
fn scenario_cluster() {
    assert_snapshot("counter__scenario", &scenario(&mut harness::cluster_con()));
}

/// 8 clients add 1000 each while a ninth resets the counter over and over: the old values
/// the resets return plus the final value account for every increment.
#[test]
fn hash_reset_loses_no_increment() {
    let db = Arc::new(harness::fresh_db());
    let done = Arc::new(AtomicBool::new(false));
    let resets = Arc::new(AtomicU64::new(0));
    let resetter = {
        let (db, done, resets) = (db.clone(), done.clone(), resets.clone());
        thread::spawn(move || {
            let mut con = db.con();
            let counter = HashCounter::new("stats", "hits").unwrap();
            let mut taken = 0;
            while !done.load(Ordering::SeqCst) {
                taken += counter.reset(0).run(&mut con).unwrap();
                resets.fetch_add(1, Ordering::SeqCst);
            }
            taken
        })
    };
    let adders: Vec<_> = (0..8)
        .map(|_| {
            let (db, resets) = (db.clone(), resets.clone());
            thread::spawn(move || {
                let mut con = db.con();
                let counter = HashCounter::new("stats", "hits").unwrap();
                // Resets land before the increments and amid them.
                harness::wait_for_count(&resets, 1, "the first reset");
                for i in 0..1000 {
                    if i == 500 {
                        harness::wait_for_a_whole_turn(&resets, 1, "a reset amid the increments");
                    }
                    counter.increase(1).run(&mut con).unwrap();
                }
            })
        })
        .collect();
    for adder in adders {
        adder.join().unwrap();
    }
    done.store(true, Ordering::SeqCst);
    let taken = resetter.join().unwrap();
    let left = HashCounter::new("stats", "hits")
        .unwrap()
        .get()
        .run(&mut db.con())
        .unwrap();
    assert_eq!(taken + left, 8000);
}

/// Keys, fields and slots are checked where the counters are built, and named.
#[test]
fn constructors_refuse_bad_settings() {
    assert_invalid(Counter::new(""), "key");
    assert_invalid(HashCounter::new("", "f"), "key");
    assert_invalid(HashCounter::new("a:hash", ""), "field");
    assert_invalid(CompactCounter::new("", 0, Width::U8, Overflow::Fail), "key");
    // A string holds 2^32 bits: 2^29 u8 counters, 2^26 i64 ones, 68,174,084 u63 ones.
    for (index, width) in [
        (1 << 29, Width::U8),
        (1 << 26, Width::I64),
        (68_174_084, Width::U63),
        (u64::MAX, Width::U8),
        (u64::MAX / 8 + 1, Width::U8),
    ] {
        assert_invalid(
            CompactCounter::new("compact", index, width, Overflow::Fail),
            "index",
        );
    }
    for (index, width) in [
        ((1 << 29) - 1, Width::U8),
        ((1 << 26) - 1, Width::I64),
        (68_174_083, Width::U63),
    ] {
        assert!(CompactCounter::new("compact", index, width, Overflow::Wrap).is_ok());
    }
}

#[test]
fn bad_input_is_refused_and_writes_nothing() {
    let db = harness::fresh_db();
    let mut con = db.con();
    harness::cmd(&mut con, &["HSET", "a:hash", "text", "abc"]);
    harness::cmd(&mut con, &["HSET", "a:hash", "n", "5"]);
    harness::cmd(&mut con, &["SET", "a:string", "abc"]);
    harness::cmd(&mut con, &["SET", "compact", "\u{1}\u{2}"]);
    let before = harness::dump(&mut con);

    assert_invalid(
        HashCounter::new("a:hash", "n")
            .unwrap()
            .decrease(i64::MIN)
            .run(&mut con),
        "n",
    );
    let compact = CompactCounter::new("compact", 0, Width::U8, Overflow::Fail).unwrap();
    assert_invalid(compact.reset(256).run(&mut con), "n");
    assert_invalid(compact.reset(-1).run(&mut con), "n");
    assert_invalid(compact.decrease(i64::MIN).run(&mut con), "n");

    // The wrong type of key, or a value that is no integer.
    assert_code(
        Counter::new("a:hash").unwrap().increase(1).run(&mut con),
        "WRONGTYPE",
    );
    assert_code(
        Counter::new("a:hash").unwrap().reset(1).run(&mut con),
        "WRONGTYPE",
    );
    assert_code(
        HashCounter::new("a:string", "f")
            .unwrap()
            .reset(1)
            .run(&mut con),
        "WRONGTYPE",
    );
    assert_code(
        CompactCounter::new("a:hash", 0, Width::U8, Overflow::Wrap)
            .unwrap()
            .increase(1)
            .run(&mut con),
        "WRONGTYPE",
    );
    assert_code(
        Counter::new("a:string").unwrap().increase(1).run(&mut con),
        "ERR",
    );
    assert_code(
        HashCounter::new("a:hash", "text")
            .unwrap()
            .increase(1)
            .run(&mut con),
        "ERR",
    );
    assert_code(
        HashCounter::new("a:hash", "text")
            .unwrap()
            .reset(0)
            .run(&mut con),
        "NOT_INTEGER",
    );
    assert_code(
        HashCounter::new("a:hash", "n")
            .unwrap()
            .increase(i64::MAX)
            .run(&mut con),
        "ERR",
    );
    assert!(matches!(
        compact.increase(1000).run(&mut con),
        Err(redis_patterns::Error::Overflow { .. })
    ));

    for value in [
        "abc",
        "1.5",
        "",
        "-0",
        "01",
        "9223372036854775808",
        "-9223372036854775809",
        "1e3",
    ] {
        let reply = harness::eval(&mut con, &script::HASH_RESET, &["a:hash"], &["n", value]);
        assert_code(reply, "BAD_VALUE");
    }

    assert_eq!(harness::dump(&mut con), before);
}

/// The script's own range check agrees with Rust's i64 at both ends.
#[test]
fn hash_reset_round_trips_the_whole_i64_range() {
    let db = harness::fresh_db();
    let mut con = db.con();
    let counter = HashCounter::new("h", "f").unwrap();
    for n in [i64::MIN, -1, 0, 1, 1 << 53, (1 << 53) + 1, i64::MAX] {
        counter.reset(n).run(&mut con).unwrap();
        assert_eq!(counter.reset(0).run(&mut con).unwrap(), n);
    }
}
