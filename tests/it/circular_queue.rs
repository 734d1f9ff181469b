use std::collections::HashSet;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use redis_patterns::circular_queue::{CircularQueue, UniqueCircularQueue};
use redis_patterns::scripts::circular_queue as script;

use crate::harness::{self, Rng, Transcript, assert_code, assert_invalid, assert_snapshot};
use crate::step;

const WAIT: Option<Duration> = Some(Duration::from_millis(100));

fn lrange(con: &mut dyn redis::ConnectionLike, key: &str) -> Vec<String> {
    redis::cmd("LRANGE")
        .arg(key)
        .arg(0)
        .arg(-1)
        .query(con)
        .unwrap()
}

/// Records the whole list.
fn contents(t: &mut Transcript, con: &mut dyn redis::ConnectionLike, key: &str) {
    t.step::<Vec<String>>(&format!("LRANGE {key} 0 -1"), Ok(lrange(con, key)))
        .unwrap();
}

/// The book's examples (chapter 30): rotation, LREM's count at 0, + and -, then the
/// unique queue moving a re-inserted item to the rear and refusing duplicates.
fn scenario(con: &mut dyn redis::ConnectionLike) -> Transcript {
    let mut t = Transcript::default();
    for key in ["circular_queue:numbers", "circular_queue:unique"] {
        harness::cmd(con, &["DEL", key]);
    }
    let q = CircularQueue::new("circular_queue:numbers").unwrap();
    let _ = step!(t, con, q.insert(&["1", "2", "3", "4", "5"]));
    let _ = step!(t, con, q.front::<String>());
    let _ = step!(t, con, q.rear::<String>());
    let _ = step!(t, con, q.rotate::<String>());
    let _ = step!(t, con, q.rotate::<String>());
    let _ = step!(t, con, q.rotate_blocking::<String>(WAIT));
    let _ = step!(t, con, q.front::<String>());
    let _ = step!(t, con, q.rear::<String>());
    contents(&mut t, con, q.key());
    let _ = step!(t, con, q.insert(&["x", "1", "x", "x"]));
    contents(&mut t, con, q.key());
    let _ = step!(t, con, q.remove("x", 1));
    contents(&mut t, con, q.key());
    let _ = step!(t, con, q.remove("x", -1));
    contents(&mut t, con, q.key());
    let _ = step!(t, con, q.remove("1", 0));
    let _ = step!(t, con, q.remove("nope", 0));
    let _ = step!(t, con, q.length());
    contents(&mut t, con, q.key());

    t.note("UniqueCircularQueue: each item at most once");
    let u = UniqueCircularQueue::new("circular_queue:unique").unwrap();
    let _ = step!(t, con, u.rotate::<String>());
    let _ = step!(t, con, u.rotate_blocking::<String>(WAIT));
    let _ = step!(t, con, u.insert(&["a", "b", "c"]));
    let _ = step!(t, con, u.insert(&["a", "d"]));
    contents(&mut t, con, u.key());
    let _ = step!(t, con, u.insert(&["e", "b", "e"]));
    let _ = step!(t, con, u.rotate::<String>());
    let _ = step!(t, con, u.front::<String>());
    let _ = step!(t, con, u.rear::<String>());
    let _ = step!(t, con, u.remove("d"));
    let _ = step!(t, con, u.remove("d"));
    let _ = step!(t, con, u.length());
    contents(&mut t, con, u.key());
    t
}

#[test]
fn scenario_standalone() {
    let db = harness::fresh_db();
    let recorder = crate::recorder::Recorder::new("circular_queue");
    assert_snapshot(
        "circular_queue__scenario",
        &scenario(&mut recorder.con(db.con())),
    );
    recorder.finish();
}

#[test]
fn scenario_cluster() {
    assert_snapshot(
        "circular_queue__scenario",
        &scenario(&mut harness::cluster_con()),
    );
}

/// 8 clients × 100 rotations (half blocking) of 23 items while a watcher reads the whole
/// list: it always holds the 23 items, each once; in the end the list is the original
/// turned by 800 places, and each item was handed out ⌊800/23⌋ or one more times, by
/// its position.
#[test]
fn rotation_never_loses_or_doubles_items() {
    const N: usize = 23;
    const ROUNDS: usize = 100;
    let db = harness::fresh_db();
    let q = CircularQueue::new("ring").unwrap();
    let original: Vec<String> = (0..N).map(|i| format!("item:{i:02}")).collect();
    q.insert(&original).run(&mut db.con()).unwrap();
    let mut sorted = original.clone();
    sorted.sort();

    let done = AtomicBool::new(false);
    let reads = AtomicU64::new(0);
    let handed = Mutex::new(Vec::<String>::new());
    std::thread::scope(|s| {
        s.spawn(|| {
            let mut con = db.con();
            while !done.load(Ordering::SeqCst) {
                let mut now = lrange(&mut con, "ring");
                now.sort();
                assert_eq!(now, sorted);
                reads.fetch_add(1, Ordering::SeqCst);
            }
        });
        let rotators: Vec<_> = (0..8)
            .map(|c| {
                let (q, handed, db) = (&q, &handed, &db);
                let reads = &reads;
                s.spawn(move || {
                    let mut con = db.con();
                    let mut mine = Vec::with_capacity(ROUNDS);
                    // The reader reads before the rotations, and again while they run.
                    harness::wait_for_count(reads, 1, "the reader's first read");
                    for round in 0..ROUNDS {
                        if round == ROUNDS / 2 {
                            harness::wait_for_a_whole_turn(reads, 1, "a read among the rotations");
                        }
                        let op = if c % 2 == 0 {
                            q.rotate()
                        } else {
                            q.rotate_blocking(WAIT)
                        };
                        mine.push(op.run(&mut con).unwrap().expect("the ring is never empty"));
                    }
                    handed.lock().unwrap().extend(mine);
                })
            })
            .collect();
        for rotator in rotators {
            rotator.join().unwrap();
        }
        done.store(true, Ordering::SeqCst);
    });

    let total = 8 * ROUNDS;
    let mut expected = original.clone();
    expected.rotate_left(total % N);
    assert_eq!(lrange(&mut db.con(), "ring"), expected);
    let handed = handed.into_inner().unwrap();
    for (position, item) in original.iter().enumerate() {
        let times = handed.iter().filter(|h| *h == item).count();
        assert_eq!(
            times,
            total / N + usize::from(position < total % N),
            "{item}"
        );
    }
}

/// 8 clients × 60 unique inserts of 1–4 distinct items out of 12 (overlapping), mixed
/// with rotations, while a watcher reads the list: it never holds an item twice, and in
/// the end it holds every item inserted exactly once.
#[test]
fn unique_inserts_never_leave_a_duplicate() {
    let db = harness::fresh_db();
    let q = UniqueCircularQueue::new("unique").unwrap();
    let pool: Vec<String> = (0..12).map(|i| format!("u{i}")).collect();
    let done = AtomicBool::new(false);
    let reads = AtomicU64::new(0);
    let inserted = Mutex::new(HashSet::new());
    std::thread::scope(|s| {
        s.spawn(|| {
            let mut con = db.con();
            while !done.load(Ordering::SeqCst) {
                let now = lrange(&mut con, "unique");
                let distinct: HashSet<_> = now.iter().collect();
                assert_eq!(distinct.len(), now.len(), "a duplicate in {now:?}");
                reads.fetch_add(1, Ordering::SeqCst);
            }
        });
        let clients: Vec<_> = (0..8)
            .map(|c| {
                let (q, pool, inserted, db) = (&q, &pool, &inserted, &db);
                let reads = &reads;
                s.spawn(move || {
                    let mut con = db.con();
                    let mut rng = Rng::new(100 + c);
                    // The watcher reads before the inserts, and again while they run.
                    harness::wait_for_count(reads, 1, "the watcher's first read");
                    for round in 0..60 {
                        if round == 30 {
                            harness::wait_for_a_whole_turn(reads, 1, "a read among the inserts");
                        }
                        let want = 1 + rng.below(4) as usize;
                        let mut items: Vec<&str> = Vec::new();
                        while items.len() < want {
                            let item = pool[rng.below(pool.len() as u64) as usize].as_str();
                            if !items.contains(&item) {
                                items.push(item);
                            }
                        }
                        let length = q.insert(&items).run(&mut con).unwrap();
                        assert!(length >= items.len() as u64 && length <= 12);
                        inserted
                            .lock()
                            .unwrap()
                            .extend(items.iter().map(|i| i.to_string()));
                        if rng.below(3) == 0 {
                            q.rotate::<String>().run(&mut con).unwrap();
                        }
                    }
                })
            })
            .collect();
        for client in clients {
            client.join().unwrap();
        }
        done.store(true, Ordering::SeqCst);
    });
    let mut now = lrange(&mut db.con(), "unique");
    now.sort();
    let mut inserted: Vec<String> = inserted.into_inner().unwrap().into_iter().collect();
    inserted.sort();
    assert_eq!(now, inserted);
}

#[test]
fn bad_input_is_refused_and_writes_nothing() {
    let db = harness::fresh_db();
    let mut con = db.con();
    harness::cmd(&mut con, &["RPUSH", "ring", "a", "b", "c"]);
    harness::cmd(&mut con, &["SET", "a:string", "x"]);
    let before = harness::dump(&mut con);

    let none: [&str; 0] = [];
    let q = CircularQueue::new("ring").unwrap();
    let u = UniqueCircularQueue::new("ring").unwrap();
    assert_invalid(q.insert(&none).run(&mut con), "items");
    assert_invalid(u.insert(&none).run(&mut con), "items");
    assert_invalid(u.insert(&["d", "e", "d"]).run(&mut con), "items");
    assert_invalid(u.insert(&["", ""]).run(&mut con), "items");
    assert_invalid(CircularQueue::new(""), "key");
    assert_invalid(UniqueCircularQueue::new(""), "key");
    assert_invalid(UniqueCircularQueue::new(""), "key");
    assert_invalid(
        q.rotate_blocking::<String>(Some(Duration::ZERO))
            .run(&mut con),
        "timeout",
    );
    assert_invalid(
        u.rotate_blocking::<String>(Some(Duration::MAX))
            .run(&mut con),
        "timeout",
    );

    assert_code(
        harness::eval(&mut con, &script::UNIQUE_INSERT, &["ring"], &[]),
        "BAD_ARGS",
    );
    for items in [&["d", "d"][..], &["a", "e", "a"], &["", "x", ""]] {
        let reply = harness::eval(&mut con, &script::UNIQUE_INSERT, &["ring"], items);
        assert_code(reply, "DUPLICATE_ITEMS");
    }
    assert_code(
        harness::eval(&mut con, &script::UNIQUE_INSERT, &["a:string"], &["a"]),
        "WRONGTYPE",
    );

    let wrong = CircularQueue::new("a:string").unwrap();
    assert_code(wrong.insert(&["a"]).run(&mut con), "WRONGTYPE");
    assert_code(wrong.remove("a", 0).run(&mut con), "WRONGTYPE");
    assert_code(wrong.rotate::<String>().run(&mut con), "WRONGTYPE");
    assert_code(
        wrong.rotate_blocking::<String>(WAIT).run(&mut con),
        "WRONGTYPE",
    );
    assert_code(wrong.front::<String>().run(&mut con), "WRONGTYPE");
    let wrong = UniqueCircularQueue::new("a:string").unwrap();
    assert_code(wrong.insert(&["a"]).run(&mut con), "WRONGTYPE");
    assert_code(wrong.remove("a").run(&mut con), "WRONGTYPE");

    assert_eq!(harness::dump(&mut con), before);
}

/// The unique queue holds at most 5,000 items: an insert that would pass that is refused
/// whole, one that moves queued items within it is not, and duplicates written by other
/// clients are removed with the items moved.
#[test]
fn a_unique_queue_is_capped_at_5000_items() {
    let db = harness::fresh_db();
    let mut con = db.con();
    let q = UniqueCircularQueue::new("capped").unwrap();
    let items: Vec<String> = (0..5000).map(|i| format!("i{i}")).collect();
    for chunk in items.chunks(1000) {
        q.insert(chunk).run(&mut con).unwrap();
    }
    let before = harness::dump(&mut con);
    assert_code(q.insert(&["new"]).run(&mut con), "QUEUE_FULL");
    assert_eq!(harness::dump(&mut con), before);
    // Moving queued items keeps the length, so it is allowed.
    assert_eq!(q.insert(&["i0", "i1"]).run(&mut con).unwrap(), 5000);
    assert_eq!(
        q.rear::<String>().run(&mut con).unwrap().as_deref(),
        Some("i1")
    );
    // A copy pushed by another client goes with the move.
    harness::cmd(&mut con, &["LREM", "capped", "0", "i4999"]);
    harness::cmd(&mut con, &["LPUSH", "capped", "i7"]);
    assert_eq!(q.insert(&["i7"]).run(&mut con).unwrap(), 4999);
    let all = lrange(&mut con, "capped");
    assert_eq!(all.iter().filter(|i| *i == "i7").count(), 1);
    assert_eq!(all.last().map(String::as_str), Some("i7"));
    // A queue that other writers filled past the cap is refused, even for a move.
    harness::cmd(&mut con, &["RPUSH", "capped", "x1", "x2"]);
    let before = harness::dump(&mut con);
    assert_code(q.insert(&["i7"]).run(&mut con), "QUEUE_FULL");
    assert_eq!(harness::dump(&mut con), before);
}

/// Items are bytes: non-UTF-8 ones are inserted (by both queues, one through a script),
/// rotated, read and removed unchanged; a rotation whose item cannot decode as the type
/// asked for is moved back, so the queue is as it was.
#[test]
fn binary_items_round_trip_and_undecodable_rotations_are_undone() {
    let db = harness::fresh_db();
    let mut con = db.con();
    let bin = harness::NOT_UTF8;
    let q = CircularQueue::new("circular_queue:bin").unwrap();
    let u = UniqueCircularQueue::new("circular_queue:bin:u").unwrap();
    q.insert(&[bin, b"b"]).run(&mut con).unwrap();
    u.insert(&[bin, b"b"]).run(&mut con).unwrap();
    assert_eq!(u.insert(&[bin]).run(&mut con).unwrap(), 2); // moved to the rear
    assert_eq!(
        u.rear::<Vec<u8>>().run(&mut con).unwrap().as_deref(),
        Some(bin)
    );
    assert_eq!(
        q.front::<Vec<u8>>().run(&mut con).unwrap().as_deref(),
        Some(bin)
    );
    harness::assert_undecodable_changes_nothing(&mut con, |c| q.rotate::<String>().run(c));
    harness::assert_undecodable_changes_nothing(&mut con, |c| {
        q.rotate_blocking::<String>(None).run(c)
    });
    assert_eq!(
        q.rotate::<Vec<u8>>().run(&mut con).unwrap().as_deref(),
        Some(bin)
    );
    assert_eq!(
        q.rear::<Vec<u8>>().run(&mut con).unwrap().as_deref(),
        Some(bin)
    );
    assert_eq!(q.remove(bin, 0).run(&mut con).unwrap(), 1);
    assert!(u.remove(bin).run(&mut con).unwrap());
    assert_eq!(
        u.rotate::<String>().run(&mut con).unwrap().as_deref(),
        Some("b")
    );
}
