use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use redis_patterns::fixed_length_queue::{Enqueued, FadedQueue, FixedLengthQueue};
use redis_patterns::scripts::fixed_length_queue as script;

use crate::harness::{self, Traffic, Transcript, assert_code, assert_invalid, assert_snapshot};
use crate::step;

/// Records the whole list, as the book's examples show it after each push.
fn contents(t: &mut Transcript, con: &mut dyn redis::ConnectionLike, key: &str) {
    let items: redis::RedisResult<Vec<String>> =
        redis::cmd("LRANGE").arg(key).arg(0).arg(-1).query(con);
    t.step(&format!("LRANGE {key} 0 -1"), items.map_err(Into::into))
        .unwrap();
}

/// The book's example (chapter 27): `max_length` 3, `a, b` then `c, d, e`.
fn scenario(con: &mut dyn redis::ConnectionLike) -> Transcript {
    let mut t = Transcript::default();
    for key in ["fixed_length_queue:oldest", "fixed_length_queue:newest"] {
        harness::cmd(con, &["DEL", key]);
    }
    let q = FixedLengthQueue::new("fixed_length_queue:oldest", 3).unwrap();
    let _ = step!(t, con, q.enqueue(&["a", "b"]));
    let _ = step!(t, con, q.enqueue(&["c", "d", "e"]));
    contents(&mut t, con, q.key());
    let _ = step!(t, con, q.enqueue(&["f"]));
    let _ = step!(t, con, q.length());
    let _ = step!(t, con, q.dequeue::<String>());
    let _ = step!(t, con, q.enqueue_counted(&["f", "g"]));
    contents(&mut t, con, q.key());
    t.note("a smaller max_length over the same list trims its newest items first");
    let smaller = FixedLengthQueue::new("fixed_length_queue:oldest", 1).unwrap();
    let _ = step!(t, con, smaller.enqueue_counted(&["h"]));
    contents(&mut t, con, q.key());

    t.note("FadedQueue keeps the newest items");
    let f = FadedQueue::new("fixed_length_queue:newest", 3).unwrap();
    let _ = step!(t, con, f.enqueue(&["a", "b"]));
    let _ = step!(t, con, f.enqueue(&["c", "d", "e"]));
    contents(&mut t, con, f.key());
    let _ = step!(t, con, f.enqueue_counted(&["f"]));
    let _ = step!(t, con, f.enqueue_counted(&["g", "h", "i", "j", "k"]));
    contents(&mut t, con, f.key());
    let _ = step!(t, con, f.dequeue::<String>());
    let _ = step!(
        t,
        con,
        f.dequeue_blocking::<String>(Some(Duration::from_millis(100)))
    );
    let _ = step!(t, con, f.length());
    t
}

#[test]
fn scenario_standalone() {
    let db = harness::fresh_db();
    let recorder = crate::recorder::Recorder::new("fixed_length_queue");
    assert_snapshot(
        "fixed_length_queue__scenario",
        &scenario(&mut recorder.con(db.con())),
    );
    recorder.finish();
}

#[test]
fn scenario_cluster() {
    assert_snapshot(
        "fixed_length_queue__scenario",
        &scenario(&mut harness::cluster_con()),
    );
}

const MAX: u64 = 5;

/// 8 producers × 40 batches of 1–4 items and 8 consumers on a queue of at most 5, while a
/// watcher checks `LLEN` never exceeds 5. The consumers start once 6 batches are in, so
/// the queue overflows at least once however the threads are scheduled; the watcher
/// samples before the first push, and again while the traffic runs.
fn bounded_traffic(
    db: &harness::Db,
    key: &str,
    push: impl Fn(&mut redis::Connection, &[String]) -> Enqueued + Sync,
) -> Traffic<Enqueued> {
    let done = AtomicBool::new(false);
    let samples = AtomicU64::new(0);
    let pushed = AtomicU64::new(0);
    std::thread::scope(|s| {
        s.spawn(|| {
            let mut con = db.con();
            while !done.load(Ordering::SeqCst) {
                let length: u64 = redis::cmd("LLEN").arg(key).query(&mut con).unwrap();
                assert!(length <= MAX, "the queue held {length} items");
                samples.fetch_add(1, Ordering::SeqCst);
            }
        });
        let traffic = harness::produce_and_consume(
            db,
            8,
            8,
            |p| harness::numbered_batches(p, 40, 4),
            |con, batch| {
                harness::wait_for_count(&samples, 1, "the watcher's first sample");
                let reply = push(con, batch);
                if pushed.fetch_add(1, Ordering::SeqCst) + 1 == 160 {
                    harness::wait_for_a_whole_turn(&samples, 1, "a sample amid the traffic");
                }
                reply
            },
            |con, _| {
                if pushed.load(Ordering::SeqCst) < MAX + 1 {
                    return None;
                }
                redis::cmd("LPOP")
                    .arg(key)
                    .query::<Option<String>>(con)
                    .unwrap()
            },
        );
        done.store(true, Ordering::SeqCst);
        traffic
    })
}

/// Every kept item (the first `kept` of its batch) is dequeued exactly once, no other item
/// is, and the list never exceeds `max_length`.
#[test]
fn fixed_length_queue_keeps_exactly_what_it_reports() {
    let db = harness::fresh_db();
    let q = FixedLengthQueue::new("q", MAX).unwrap();
    let traffic = bounded_traffic(&db, q.key(), |con, batch| {
        q.enqueue_counted(batch).run(con).unwrap()
    });
    let mut kept = Vec::new();
    let mut dropped = 0;
    for (batch, done) in &traffic.pushes {
        assert_eq!(done.evicted, 0);
        assert!(done.kept <= batch.len() as u64);
        kept.extend(batch[..done.kept as usize].iter().cloned());
        dropped += batch.len() - done.kept as usize;
    }
    kept.sort();
    assert!(dropped > 0, "the queue never filled up");
    assert_eq!(kept.len() + dropped, traffic.all_pushed().len());
    assert_eq!(traffic.all_popped(), kept);
    harness::assert_fifo_per_consumer(&traffic.popped);
}

/// Every item dequeued was among the kept ones (the last `kept` of its batch), none
/// twice, and the kept ones not dequeued are exactly as many as the reported evictions.
#[test]
fn faded_queue_keeps_exactly_what_it_reports() {
    let db = harness::fresh_db();
    let q = FadedQueue::new("q", MAX).unwrap();
    let traffic = bounded_traffic(&db, q.key(), |con, batch| {
        q.enqueue_counted(batch).run(con).unwrap()
    });
    let mut kept = HashSet::new();
    let mut evicted = 0;
    for (batch, done) in &traffic.pushes {
        assert_eq!(done.kept, batch.len().min(MAX as usize) as u64);
        kept.extend(batch[batch.len() - done.kept as usize..].iter().cloned());
        evicted += done.evicted;
    }
    let popped = traffic.all_popped();
    let unique: HashSet<_> = popped.iter().cloned().collect();
    assert_eq!(unique.len(), popped.len(), "an item was dequeued twice");
    assert!(unique.is_subset(&kept), "a dropped item was dequeued");
    assert!(evicted > 0, "nothing was ever evicted");
    assert_eq!(kept.len() - popped.len(), evicted as usize);
    harness::assert_fifo_per_consumer(&traffic.popped);
}

#[test]
fn bad_input_is_refused_and_writes_nothing() {
    let db = harness::fresh_db();
    let mut con = db.con();
    harness::cmd(&mut con, &["RPUSH", "q", "a", "b"]);
    harness::cmd(&mut con, &["SET", "a:string", "x"]);
    let before = harness::dump(&mut con);

    let none: [&str; 0] = [];
    for max in [0, 1_000_000_000_000_000, u64::MAX] {
        assert_invalid(FixedLengthQueue::new("q", max), "max_length");
        assert_invalid(FadedQueue::new("q", max), "max_length");
    }
    assert_invalid(
        FixedLengthQueue::new("q", 3)
            .unwrap()
            .enqueue(&none)
            .run(&mut con),
        "items",
    );
    assert_invalid(
        FadedQueue::new("q", 3)
            .unwrap()
            .enqueue(&none)
            .run(&mut con),
        "items",
    );
    assert_invalid(FixedLengthQueue::new("", 3), "key");
    assert_invalid(FadedQueue::new("", 3), "key");
    assert_invalid(
        FixedLengthQueue::new("q", 3)
            .unwrap()
            .dequeue_blocking::<String>(Some(Duration::ZERO))
            .run(&mut con),
        "timeout",
    );

    assert_code(
        FixedLengthQueue::new("a:string", 3)
            .unwrap()
            .enqueue(&["c"])
            .run(&mut con),
        "WRONGTYPE",
    );
    assert_code(
        FadedQueue::new("a:string", 3)
            .unwrap()
            .enqueue(&["c"])
            .run(&mut con),
        "WRONGTYPE",
    );
    assert_code(
        FadedQueue::new("a:string", 3)
            .unwrap()
            .dequeue::<String>()
            .run(&mut con),
        "WRONGTYPE",
    );

    for script in [&script::ENQUEUE, &script::FADED_ENQUEUE] {
        for max in [
            "0",
            "-1",
            "1.5",
            "1e3",
            "0x10",
            "abc",
            "",
            "1000000000000000",
        ] {
            let reply = harness::eval(&mut con, script, &["q"], &[max, "c"]);
            assert_code(reply, "BAD_MAX_LENGTH");
        }
        assert_code(harness::eval(&mut con, script, &["q"], &[]), "BAD_ARGS");
        assert_code(harness::eval(&mut con, script, &["q"], &["3"]), "BAD_ARGS");
        assert_code(
            harness::eval(&mut con, script, &["a:string"], &["3", "c"]),
            "WRONGTYPE",
        );
    }

    assert_eq!(harness::dump(&mut con), before);
}

/// More items than Lua's `unpack()` takes at once go in batches.
#[test]
fn long_pushes_are_batched() {
    let db = harness::fresh_db();
    let mut con = db.con();
    let items: Vec<String> = (0..5000).map(|i| i.to_string()).collect();
    let q = FixedLengthQueue::new("oldest", 4500).unwrap();
    assert_eq!(q.enqueue(&items).run(&mut con).unwrap(), 4500);
    let f = FadedQueue::new("newest", 4500).unwrap();
    assert_eq!(f.enqueue(&items).run(&mut con).unwrap(), 4500);
    let first: Vec<String> = redis::cmd("LRANGE")
        .arg("oldest")
        .arg(0)
        .arg(0)
        .query(&mut con)
        .unwrap();
    let last: Vec<String> = redis::cmd("LRANGE")
        .arg("oldest")
        .arg(-1)
        .arg(-1)
        .query(&mut con)
        .unwrap();
    assert_eq!(
        (first, last),
        (vec!["0".to_owned()], vec!["4499".to_owned()])
    );
    let first: Vec<String> = redis::cmd("LRANGE")
        .arg("newest")
        .arg(0)
        .arg(0)
        .query(&mut con)
        .unwrap();
    let last: Vec<String> = redis::cmd("LRANGE")
        .arg("newest")
        .arg(-1)
        .arg(-1)
        .query(&mut con)
        .unwrap();
    assert_eq!(
        (first, last),
        (vec!["500".to_owned()], vec!["4999".to_owned()])
    );
    assert_eq!(f.length().run(&mut con).unwrap(), 4500);
}

/// A queue that other writers filled far past `max_length` is trimmed 5,000 items per
/// call, so that one call stays short: new items wait until it fits again.
#[test]
fn an_overfull_queue_is_trimmed_in_bounded_steps() {
    let db = harness::fresh_db();
    let mut con = db.con();
    for chunk in 0..12 {
        let items: Vec<String> = (0..1000).map(|i| format!("o{chunk}:{i}")).collect();
        let mut rpush = redis::cmd("RPUSH");
        rpush.arg("overfull").arg(&items);
        let _: i64 = rpush.query(&mut con).unwrap();
    }
    let q = FixedLengthQueue::new("overfull", 1000).unwrap();
    let steps: Vec<Enqueued> = (0..3)
        .map(|_| q.enqueue_counted(&["new"]).run(&mut con).unwrap())
        .collect();
    assert_eq!(
        steps,
        [
            Enqueued {
                kept: 0,
                evicted: 5000
            },
            Enqueued {
                kept: 0,
                evicted: 5000
            },
            Enqueued {
                kept: 0,
                evicted: 1000
            },
        ]
    );
    assert_eq!(q.length().run(&mut con).unwrap(), 1000);
    // The oldest were kept, as the book's LTRIM keeps them.
    let front: Option<String> = redis::cmd("LINDEX")
        .arg("overfull")
        .arg(0)
        .query(&mut con)
        .unwrap();
    assert_eq!(front.as_deref(), Some("o0:0"));

    let faded = FadedQueue::new("overfull", 10).unwrap();
    let done = faded.enqueue_counted(&["a", "b"]).run(&mut con).unwrap();
    assert_eq!(
        done,
        Enqueued {
            kept: 2,
            evicted: 992
        }
    );
    assert_eq!(faded.length().run(&mut con).unwrap(), 10);
}

/// Items are bytes: non-UTF-8 ones go through both queues' scripts unchanged, and one
/// that cannot decode as the type asked for stays queued.
#[test]
fn binary_items_round_trip_and_undecodable_ones_stay_queued() {
    let db = harness::fresh_db();
    let mut con = db.con();
    let bin = harness::NOT_UTF8;
    let fixed = FixedLengthQueue::new("fixed_length_queue:bin", 2).unwrap();
    let faded = FadedQueue::new("faded_queue:bin", 2).unwrap();
    assert_eq!(fixed.enqueue(&[bin, b"b", b"c"]).run(&mut con).unwrap(), 2);
    assert_eq!(faded.enqueue(&[b"a", bin, b"c"]).run(&mut con).unwrap(), 2);
    for q in [
        Box::new(|c: &mut redis::Connection| fixed.dequeue::<String>().run(c))
            as Box<dyn Fn(&mut redis::Connection) -> Result<Option<String>, _>>,
        Box::new(|c| faded.dequeue::<String>().run(c)),
        Box::new(|c| fixed.dequeue_blocking::<String>(None).run(c)),
        Box::new(|c| faded.dequeue_blocking::<String>(None).run(c)),
    ] {
        harness::assert_undecodable_changes_nothing(&mut con, q);
    }
    assert_eq!(
        fixed.dequeue::<Vec<u8>>().run(&mut con).unwrap().as_deref(),
        Some(bin)
    );
    assert_eq!(
        faded.dequeue::<Vec<u8>>().run(&mut con).unwrap().as_deref(),
        Some(bin)
    );
    assert_eq!(
        faded.dequeue::<String>().run(&mut con).unwrap().as_deref(),
        Some("c")
    );
}
