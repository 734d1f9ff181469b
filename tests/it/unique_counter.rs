use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread;

use redis_patterns::Batch;
use redis_patterns::scripts::unique_counter as script;
use redis_patterns::unique_counter::{HllUniqueCounter, UniqueCounter};

use crate::harness::{self, Transcript, assert_code, assert_invalid, assert_snapshot};
use crate::step;

/// The book's examples (chapter 7: `VisitCounter` and `HllVisitCounter` with Peter, Jack
/// and Tom), the static set operations and the unlisted merger.
fn scenario(con: &mut dyn redis::ConnectionLike) -> Transcript {
    let mut t = Transcript::default();
    let counter = UniqueCounter::new("unique_counter:VisitCounter").unwrap();
    let _ = step!(t, con, counter.include("Peter"));
    let _ = step!(t, con, counter.include("Jack"));
    let _ = step!(t, con, counter.include("Tom"));
    let _ = step!(t, con, counter.include("Tom"));
    let _ = step!(t, con, counter.count());
    let _ = step!(t, con, counter.exclude("Peter"));
    let _ = step!(t, con, counter.exclude("Peter"));
    let _ = step!(t, con, counter.count());

    let hll = HllUniqueCounter::new("unique_counter:HllVisitCounter").unwrap();
    let _ = step!(t, con, hll.include("Peter"));
    let _ = step!(t, con, hll.include("Jack"));
    let _ = step!(t, con, hll.include("Tom"));
    let _ = step!(t, con, hll.include("Tom"));
    let _ = step!(t, con, hll.count());

    t.note("set operations: the counters share the hash tag {unique_counter:visits}");
    let monday = UniqueCounter::new("{unique_counter:visits}:monday").unwrap();
    let tuesday = UniqueCounter::new("{unique_counter:visits}:tuesday").unwrap();
    let nobody = UniqueCounter::new("{unique_counter:visits}:nobody").unwrap();
    let _ = step!(t, con, monday.include("Peter"));
    let _ = step!(t, con, monday.include("Jack"));
    let _ = step!(t, con, monday.include("Tom"));
    let _ = step!(t, con, tuesday.include("Jack"));
    let _ = step!(t, con, tuesday.include("Tom"));
    let _ = step!(t, con, tuesday.include("Mary"));
    let _ = step!(t, con, tuesday.include("David"));
    let _ = step!(t, con, UniqueCounter::inter(&[&monday, &tuesday]));
    let _ = step!(t, con, UniqueCounter::union(&[&monday, &tuesday]));
    let _ = step!(t, con, UniqueCounter::diff(&monday, &tuesday));
    let _ = step!(t, con, UniqueCounter::diff(&tuesday, &monday));
    let _ = step!(t, con, UniqueCounter::inter(&[&monday, &tuesday, &nobody]));
    let _ = step!(t, con, UniqueCounter::union(&[&monday, &tuesday, &nobody]));
    let _ = step!(t, con, UniqueCounter::diff(&nobody, &monday));
    let _ = step!(t, con, UniqueCounter::union(&[&nobody]));
    t.step("monday.scratch_key()", Ok(monday.scratch_key()))
        .unwrap();
    let _ = step!(t, con, UniqueCounter::inter(&[&counter, &monday]));

    t.note("HllUniqueCounterMerger: merge into a result counter");
    let web = HllUniqueCounter::new("{unique_counter:hll}:web").unwrap();
    let app = HllUniqueCounter::new("{unique_counter:hll}:app").unwrap();
    let all = HllUniqueCounter::new("{unique_counter:hll}:all").unwrap();
    let _ = step!(t, con, web.include("Peter"));
    let _ = step!(t, con, web.include("Jack"));
    let _ = step!(t, con, app.include("Jack"));
    let _ = step!(t, con, app.include("Tom"));
    let _ = step!(t, con, HllUniqueCounter::union(&[&web, &app]));
    let _ = step!(t, con, all.count());
    let _ = step!(t, con, all.merge(&[&web, &app]));
    let _ = step!(t, con, all.count());
    let none = HllUniqueCounter::new("{unique_counter:hll}:none").unwrap();
    let _ = step!(t, con, all.merge(&[&none]));
    let _ = step!(t, con, all.count());

    redis::cmd("DEL")
        .arg("unique_counter:VisitCounter")
        .arg("unique_counter:HllVisitCounter")
        .exec(con)
        .unwrap();
    redis::cmd("DEL")
        .arg(monday.key())
        .arg(tuesday.key())
        .exec(con)
        .unwrap();
    redis::cmd("DEL")
        .arg(web.key())
        .arg(app.key())
        .arg(all.key())
        .exec(con)
        .unwrap();
    t
}

#[test]
fn scenario_standalone() {
    let db = harness::fresh_db();
    let recorder = crate::recorder::Recorder::new("unique_counter");
    let mut con = db.con();
    assert_snapshot(
        "unique_counter__scenario",
        &scenario(&mut recorder.con(&mut con)),
    );
    assert!(harness::dump(&mut con).is_empty(), "a key was left behind");
    recorder.finish();
}

#[test]
fn scenario_cluster() {
    assert_snapshot(
        "unique_counter__scenario",
        &scenario(&mut harness::cluster_con()),
    );
}

/// The slot check made in Rust before any I/O agrees with the cluster's `CLUSTER KEYSLOT`,
/// and the union's scratch key shares the first counter's slot.
#[test]
fn slot_check_agrees_with_the_cluster() {
    let mut con = harness::cluster_con();
    let mut slot = |key: &str| -> i64 {
        redis::cmd("CLUSTER")
            .arg("KEYSLOT")
            .arg(key)
            .query(&mut con)
            .unwrap()
    };
    let names = [
        "a",
        "b",
        "foo",
        "{user1000}.following",
        "user1000",
        "{}x",
        "x{}",
        "{a}{b}",
        "{b}",
        "a{b}c",
        "访问",
        "{访问}:x",
        "{",
        "}",
        "{{a}}",
        "{a",
        "{a}",
    ];
    let (mut same, mut different, mut refused) = (0, 0, 0);
    for x in names {
        for y in names {
            let (cx, cy) = (
                HllUniqueCounter::new(x).unwrap(),
                HllUniqueCounter::new(y).unwrap(),
            );
            let result = HllUniqueCounter::union(&[&cx, &cy]).cmd().is_some();
            assert_eq!(result, slot(x) == slot(y), "{x} and {y}");
            if result { same += 1 } else { different += 1 }
        }
        // A set counter needs a scratch key in its own slot; a name that holds a `}` but
        // no hash tag has none, and is refused when the counter is built.
        match UniqueCounter::new(x) {
            Ok(counter) => assert_eq!(slot(counter.scratch_key()), slot(x), "{x}"),
            Err(err) => {
                assert_invalid(Err::<(), _>(err), "key");
                assert!(x.contains('}'), "{x}");
                refused += 1;
            }
        }
    }
    assert!(same > names.len() && different > 0);
    assert!(refused > 0 && refused < names.len());
}

/// A tiny deterministic generator, so the threads need no dependency.
fn next(state: &mut u64) -> u64 {
    *state = state
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    *state >> 33
}

/// 8 clients move 200 items between two sets with SMOVE (each item is always in exactly
/// one), 4 clients × 300 unions see exactly 200 every time, sharing one scratch key
/// without ever colliding, and a watcher never sees the scratch key. The moves and the
/// watcher's looks begin before the unions, and go on amid them.
#[test]
fn union_counts_in_one_step() {
    const ITEMS: u64 = 200;
    let db = Arc::new(harness::fresh_db());
    let x = UniqueCounter::new("{u}:x").unwrap();
    let y = UniqueCounter::new("{u}:y").unwrap();
    {
        let mut con = db.con();
        for i in 0..ITEMS {
            x.include(i).run(&mut con).unwrap();
        }
    }
    let done = Arc::new(AtomicBool::new(false));
    let (moves, looks) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
    let movers: Vec<_> = (0..8u64)
        .map(|seed| {
            let (db, done, moves) = (db.clone(), done.clone(), moves.clone());
            thread::spawn(move || {
                let mut con = db.con();
                let mut state = seed;
                while !done.load(Ordering::SeqCst) {
                    let item = (next(&mut state) % ITEMS).to_string();
                    let (from, to) = if next(&mut state).is_multiple_of(2) {
                        ("{u}:x", "{u}:y")
                    } else {
                        ("{u}:y", "{u}:x")
                    };
                    let moved: bool = redis::cmd("SMOVE")
                        .arg(from)
                        .arg(to)
                        .arg(&item)
                        .query(&mut con)
                        .unwrap();
                    moves.fetch_add(u64::from(moved), Ordering::SeqCst);
                }
            })
        })
        .collect();
    let watcher = {
        let (db, done, looks) = (db.clone(), done.clone(), looks.clone());
        let scratch = x.scratch_key().to_owned();
        thread::spawn(move || {
            let mut con = db.con();
            while !done.load(Ordering::SeqCst) {
                let seen: bool = redis::cmd("EXISTS").arg(&scratch).query(&mut con).unwrap();
                assert!(!seen, "the scratch key was visible");
                looks.fetch_add(1, Ordering::SeqCst);
            }
        })
    };
    let counters: Vec<_> = (0..4)
        .map(|_| {
            let (db, x, y) = (db.clone(), x.clone(), y.clone());
            let (moves, looks) = (moves.clone(), looks.clone());
            thread::spawn(move || {
                let mut con = db.con();
                harness::wait_for_count(&moves, 1, "the first move");
                harness::wait_for_count(&looks, 1, "the watcher's first look");
                for round in 0..300 {
                    if round == 150 {
                        let now = moves.load(Ordering::SeqCst);
                        harness::wait_for_count(&moves, now + 1, "a move amid the unions");
                        harness::wait_for_a_whole_turn(&looks, 1, "a look amid the unions");
                    }
                    assert_eq!(
                        UniqueCounter::union(&[&x, &y]).run(&mut con).unwrap(),
                        ITEMS
                    );
                }
            })
        })
        .collect();
    for counter in counters {
        counter.join().unwrap();
    }
    done.store(true, Ordering::SeqCst);
    for mover in movers {
        mover.join().unwrap();
    }
    watcher.join().unwrap();
    let mut con = db.con();
    let (in_x, in_y) = (
        x.count().run(&mut con).unwrap(),
        y.count().run(&mut con).unwrap(),
    );
    assert_eq!(in_x + in_y, ITEMS);
    assert_eq!(harness::dump(&mut con).len(), 2, "only x and y remain");
}

/// 8 clients add and remove items of `all` (200 items) to and from `some`, so `some` is
/// always a subset of `all`: 4 clients × 300 reads of `diff(some, all)` are always 0 (a
/// SCARD and SINTERCARD taken at two moments would disagree), and `diff(all, some)` plus
/// `some.count()` in one transaction is always 200.
#[test]
fn diff_counts_in_one_step() {
    const ITEMS: u64 = 200;
    let db = Arc::new(harness::fresh_db());
    let all = UniqueCounter::new("{d}:all").unwrap();
    let some = UniqueCounter::new("{d}:some").unwrap();
    {
        let mut con = db.con();
        for i in 0..ITEMS {
            all.include(i).run(&mut con).unwrap();
        }
    }
    let done = Arc::new(AtomicBool::new(false));
    let changes = Arc::new(AtomicU64::new(0));
    let writers: Vec<_> = (0..8u64)
        .map(|seed| {
            let (db, done, some, changes) =
                (db.clone(), done.clone(), some.clone(), changes.clone());
            thread::spawn(move || {
                let mut con = db.con();
                let mut state = seed + 100;
                while !done.load(Ordering::SeqCst) {
                    let item = (next(&mut state) % ITEMS).to_string();
                    let changed = if next(&mut state).is_multiple_of(2) {
                        some.include(&item).run(&mut con).unwrap()
                    } else {
                        some.exclude(&item).run(&mut con).unwrap()
                    };
                    changes.fetch_add(u64::from(changed), Ordering::SeqCst);
                }
            })
        })
        .collect();
    let readers: Vec<_> = (0..4)
        .map(|_| {
            let (db, all, some, changes) = (db.clone(), all.clone(), some.clone(), changes.clone());
            thread::spawn(move || {
                let mut con = db.con();
                // `some` changes before the reads, and again amid them.
                harness::wait_for_count(&changes, 1, "the first change");
                for round in 0..300 {
                    if round == 150 {
                        let now = changes.load(Ordering::SeqCst);
                        harness::wait_for_count(&changes, now + 1, "a change amid the reads");
                    }
                    assert_eq!(UniqueCounter::diff(&some, &all).run(&mut con).unwrap(), 0);
                    let mut batch = Batch::transaction();
                    let missing = batch.add(UniqueCounter::diff(&all, &some));
                    let size = batch.add(some.count());
                    let mut replies = batch.run(&mut con).unwrap();
                    let (missing, size) = (
                        missing.take(&mut replies).unwrap(),
                        size.take(&mut replies).unwrap(),
                    );
                    assert_eq!(missing + size, ITEMS);
                }
            })
        })
        .collect();
    for reader in readers {
        reader.join().unwrap();
    }
    done.store(true, Ordering::SeqCst);
    for writer in writers {
        writer.join().unwrap();
    }
}

/// Keys are checked where the counters are built, and named.
#[test]
fn constructors_refuse_bad_keys() {
    assert_invalid(UniqueCounter::new(""), "key");
    assert_invalid(HllUniqueCounter::new(""), "key");
    // No scratch key in the set's own slot can be derived from these.
    for name in ["a}b", "}", "x{}", "{}x"] {
        assert_invalid(UniqueCounter::new(name), "key");
        assert!(HllUniqueCounter::new(name).is_ok(), "{name}");
    }
    let tagged = UniqueCounter::new("{a}b}").unwrap();
    assert_eq!(tagged.scratch_key(), "{a}b}:union_scratch");
    assert_eq!(
        UniqueCounter::new("visits").unwrap().scratch_key(),
        "{visits}:union_scratch"
    );
}

/// Members are bytes: non-UTF-8 ones are counted, once, by their exact bytes, through
/// every operation that takes or counts them.
#[test]
fn binary_members_are_counted_by_their_bytes() {
    let db = harness::fresh_db();
    let mut con = db.con();
    let bin = harness::NOT_UTF8;
    let shorter = &bin[..bin.len() - 1];

    let set = UniqueCounter::new("{bin}:set").unwrap();
    let other = UniqueCounter::new("{bin}:other").unwrap();
    assert!(set.include(bin).run(&mut con).unwrap());
    assert!(
        !set.include(bin.to_vec()).run(&mut con).unwrap(),
        "the same bytes"
    );
    assert!(set.include(shorter).run(&mut con).unwrap(), "other bytes");
    assert!(set.include(7).run(&mut con).unwrap());
    assert!(
        !set.include("7").run(&mut con).unwrap(),
        "7 is sent as \"7\""
    );
    assert_eq!(set.count().run(&mut con).unwrap(), 3);
    let stored: bool = redis::cmd("SISMEMBER")
        .arg(set.key())
        .arg(bin)
        .query(&mut con)
        .unwrap();
    assert!(stored, "the member is stored as the very bytes");
    assert!(other.include(bin).run(&mut con).unwrap());
    assert!(other.include("bin").run(&mut con).unwrap());
    assert_eq!(
        UniqueCounter::inter(&[&set, &other]).run(&mut con).unwrap(),
        1
    );
    assert_eq!(
        UniqueCounter::union(&[&set, &other]).run(&mut con).unwrap(),
        4
    );
    assert_eq!(UniqueCounter::diff(&set, &other).run(&mut con).unwrap(), 2);
    assert!(set.exclude(bin).run(&mut con).unwrap());
    assert!(!set.exclude(bin).run(&mut con).unwrap());
    assert!(set.exclude(shorter.to_vec()).run(&mut con).unwrap());
    assert_eq!(set.count().run(&mut con).unwrap(), 1);

    let hll = HllUniqueCounter::new("{bin}:hll").unwrap();
    let hll_other = HllUniqueCounter::new("{bin}:hll_other").unwrap();
    let all = HllUniqueCounter::new("{bin}:hll_all").unwrap();
    assert!(hll.include(bin).run(&mut con).unwrap());
    assert!(
        !hll.include(bin.to_vec()).run(&mut con).unwrap(),
        "the same bytes"
    );
    assert_eq!(hll.count().run(&mut con).unwrap(), 1);
    assert!(hll.include(shorter).run(&mut con).unwrap());
    assert_eq!(hll.count().run(&mut con).unwrap(), 2);
    hll_other.include(bin).run(&mut con).unwrap();
    assert_eq!(
        HllUniqueCounter::union(&[&hll, &hll_other])
            .run(&mut con)
            .unwrap(),
        2
    );
    all.merge(&[&hll, &hll_other]).run(&mut con).unwrap();
    assert_eq!(all.count().run(&mut con).unwrap(), 2);

    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let mut a = db.multiplexed().await;
        let fresh = UniqueCounter::new("{bin}:async").unwrap();
        assert!(fresh.include(bin).run_async(&mut a).await.unwrap());
        assert!(!fresh.include(bin).run_async(&mut a).await.unwrap());
        assert!(hll.include(bin).run_async(&mut a).await.is_ok());
        assert_eq!(fresh.count().run_async(&mut a).await.unwrap(), 1);
        assert_eq!(hll.count().run_async(&mut a).await.unwrap(), 2);
    });
}

#[test]
fn bad_input_is_refused_and_writes_nothing() {
    let db = harness::fresh_db();
    let mut con = db.con();
    harness::cmd(&mut con, &["SADD", "{s}:a", "1", "2"]);
    harness::cmd(&mut con, &["SADD", "{s}:b", "2", "3"]);
    harness::cmd(&mut con, &["SET", "{s}:string", "abc"]);
    harness::cmd(&mut con, &["SET", "{s}:a:union_scratch", "precious"]);
    harness::cmd(&mut con, &["PFADD", "{h}:hll", "x"]);
    harness::cmd(&mut con, &["SADD", "{h}:set", "x"]);
    let before = harness::dump(&mut con);

    let a = UniqueCounter::new("{s}:a").unwrap();
    let b = UniqueCounter::new("{s}:b").unwrap();
    let string = UniqueCounter::new("{s}:string").unwrap();
    let elsewhere = UniqueCounter::new("elsewhere").unwrap();

    // An item is one value: a slice of several, or none, is refused.
    assert_invalid(a.include(["x", "y"].as_slice()).run(&mut con), "item");
    assert_invalid(a.exclude(Vec::<String>::new()).run(&mut con), "item");
    assert_invalid(UniqueCounter::inter(&[]).run(&mut con), "counters");
    assert_invalid(UniqueCounter::union(&[]).run(&mut con), "counters");
    assert_invalid(
        UniqueCounter::inter(&[&a, &elsewhere]).run(&mut con),
        "counters",
    );
    assert_invalid(
        UniqueCounter::union(&[&a, &elsewhere]).run(&mut con),
        "counters",
    );
    assert_invalid(
        UniqueCounter::diff(&elsewhere, &a).run(&mut con),
        "counters",
    );
    let many = vec![&a; 1001];
    assert_invalid(UniqueCounter::union(&many).run(&mut con), "counters");
    assert_invalid(UniqueCounter::inter(&many).run(&mut con), "counters");

    let hll = HllUniqueCounter::new("{h}:hll").unwrap();
    assert_invalid(hll.include(["x", "y"].as_slice()).run(&mut con), "item");
    assert_invalid(hll.merge(&[]).run(&mut con), "counters");
    assert_invalid(
        hll.merge(&[&HllUniqueCounter::new("elsewhere").unwrap()])
            .run(&mut con),
        "counters",
    );
    assert_invalid(HllUniqueCounter::union(&[]).run(&mut con), "counters");

    // The scratch key holds data: the union refuses rather than overwrite and delete it.
    assert_code(
        UniqueCounter::union(&[&a, &b]).run(&mut con),
        "SCRATCH_IN_USE",
    );
    // The wrong type of key.
    assert_code(string.include("x").run(&mut con), "WRONGTYPE");
    assert_code(string.count().run(&mut con), "WRONGTYPE");
    assert_code(
        UniqueCounter::inter(&[&a, &string]).run(&mut con),
        "WRONGTYPE",
    );
    assert_code(
        UniqueCounter::union(&[&b, &string]).run(&mut con),
        "WRONGTYPE",
    );
    assert_code(UniqueCounter::diff(&a, &string).run(&mut con), "WRONGTYPE");
    assert_code(UniqueCounter::diff(&string, &a).run(&mut con), "WRONGTYPE");
    let set_as_hll = HllUniqueCounter::new("{h}:set").unwrap();
    assert_code(set_as_hll.include("x").run(&mut con), "WRONGTYPE");
    assert_code(set_as_hll.count().run(&mut con), "WRONGTYPE");
    assert_code(hll.merge(&[&set_as_hll]).run(&mut con), "WRONGTYPE");
    assert_code(
        HllUniqueCounter::new("{s}:string")
            .unwrap()
            .include("x")
            .run(&mut con),
        "WRONGTYPE",
    );

    // Raw calls, as a non-Rust caller would make them.
    assert_code(
        harness::eval(&mut con, &script::UNION_COUNT, &["{s}:union_scratch"], &[]),
        "BAD_ARGS",
    );
    let mut too_many = vec!["{s}:union_scratch"];
    too_many.extend(std::iter::repeat_n("{s}:a", 1001));
    assert_code(
        harness::eval(&mut con, &script::UNION_COUNT, &too_many, &[]),
        "BAD_ARGS",
    );
    assert_code(
        harness::eval(
            &mut con,
            &script::UNION_COUNT,
            &["{s}:a:union_scratch", "{s}:a"],
            &[],
        ),
        "SCRATCH_IN_USE",
    );
    assert_code(
        harness::eval(
            &mut con,
            &script::UNION_COUNT,
            &["{s}:union_scratch", "{s}:a", "{s}:string"],
            &[],
        ),
        "WRONGTYPE",
    );
    assert_code(
        harness::eval(&mut con, &script::DIFF_COUNT, &["{s}:string", "{s}:a"], &[]),
        "WRONGTYPE",
    );

    assert_eq!(harness::dump(&mut con), before);

    // The raw scripts give the same answers as the typed calls.
    let raw = harness::eval(
        &mut con,
        &script::UNION_COUNT,
        &["{s}:union_scratch", "{s}:a", "{s}:b"],
        &[],
    )
    .unwrap();
    assert_eq!(raw, redis::Value::Int(3));
    let raw = harness::eval(&mut con, &script::DIFF_COUNT, &["{s}:a", "{s}:b"], &[]).unwrap();
    assert_eq!(raw, redis::Value::Int(1));
    assert_eq!(harness::dump(&mut con), before);
}

/// Exact union and difference counts stop at 10,000 members, so that one call stays
/// short; past that they answer `TOO_BIG` and write nothing.
#[test]
fn exact_counts_are_capped_at_10000_members() {
    let db = harness::fresh_db();
    let mut con = db.con();
    let x = UniqueCounter::new("{big}:x").unwrap();
    let y = UniqueCounter::new("{big}:y").unwrap();
    let sadd = |con: &mut redis::Connection, key: &str, members: &[String]| {
        for chunk in members.chunks(1000) {
            let _: i64 = redis::cmd("SADD").arg(key).arg(chunk).query(con).unwrap();
        }
    };
    let members: Vec<String> = (0..9_998).map(|i| format!("m{i}")).collect();
    sadd(&mut con, "{big}:x", &members);
    harness::cmd(&mut con, &["SADD", "{big}:y", "m1", "other"]);
    // 10,000 members together: the most a union counts.
    assert_eq!(
        UniqueCounter::union(&[&x, &y]).run(&mut con).unwrap(),
        9_999
    );
    harness::cmd(&mut con, &["SADD", "{big}:x", "one more"]);
    let before = harness::dump(&mut con);
    assert_code(UniqueCounter::union(&[&x, &y]).run(&mut con), "TOO_BIG");
    assert_eq!(harness::dump(&mut con), before);
    // A difference walks the smaller set: refused only when both pass 10,000.
    assert_eq!(UniqueCounter::diff(&x, &y).run(&mut con).unwrap(), 9_998);
    let more: Vec<String> = (0..10_001).map(|i| format!("n{i}")).collect();
    sadd(&mut con, "{big}:x", &more);
    sadd(&mut con, "{big}:y", &more);
    let before = harness::dump(&mut con);
    assert_code(UniqueCounter::diff(&x, &y).run(&mut con), "TOO_BIG");
    assert_eq!(harness::dump(&mut con), before);
}
