use std::time::Duration;

use redis_patterns::priority_queue::PriorityQueue;

use crate::harness::{self, Transcript, assert_code, assert_invalid, assert_snapshot};
use crate::step;

const WAIT: Option<Duration> = Some(Duration::from_millis(100));

/// The book's example (chapter 29): insert, update a priority, peek and pop at both ends,
/// remove, the blocking pops, and ties broken by the item's bytes.
fn scenario(con: &mut dyn redis::ConnectionLike) -> Transcript {
    let mut t = Transcript::default();
    harness::cmd(con, &["DEL", "priority_queue:jobs"]);
    let q = PriorityQueue::new("priority_queue:jobs").unwrap();
    let _ = step!(t, con, q.insert("job:A", 5.0));
    let _ = step!(t, con, q.insert("job:B", 1.0));
    let _ = step!(t, con, q.insert("job:C", 3.0));
    let _ = step!(t, con, q.insert("job:D", 3.0));
    let _ = step!(t, con, q.insert("job:A", 0.5));
    let _ = step!(t, con, q.length());
    let _ = step!(t, con, q.min::<String>());
    let _ = step!(t, con, q.max::<String>());
    let _ = step!(t, con, q.pop_max::<String>());
    let _ = step!(t, con, q.pop_min::<String>());
    let _ = step!(t, con, q.remove("job:B"));
    let _ = step!(t, con, q.remove("job:B"));
    let _ = step!(t, con, q.blocking_pop_min::<String>(WAIT));
    let _ = step!(t, con, q.blocking_pop_max::<String>(WAIT));
    let _ = step!(t, con, q.min::<String>());
    let _ = step!(t, con, q.pop_min::<String>());
    let _ = step!(t, con, q.insert("someday", f64::INFINITY));
    let _ = step!(t, con, q.insert("now", f64::NEG_INFINITY));
    let _ = step!(t, con, q.insert("soon", -2.25e-3));
    let _ = step!(t, con, q.max::<String>());
    let _ = step!(t, con, q.blocking_pop_min::<String>(None));
    let _ = step!(t, con, q.blocking_pop_max::<String>(None));
    let _ = step!(t, con, q.pop_max::<String>());
    let _ = step!(t, con, q.length());
    t
}

#[test]
fn scenario_standalone() {
    let db = harness::fresh_db();
    let recorder = crate::recorder::Recorder::new("priority_queue");
    assert_snapshot(
        "priority_queue__scenario",
        &scenario(&mut recorder.con(db.con())),
    );
    recorder.finish();
}

#[test]
fn scenario_cluster() {
    assert_snapshot(
        "priority_queue__scenario",
        &scenario(&mut harness::cluster_con()),
    );
}

/// The priority each test item is inserted with, so a consumer can check what it got.
fn priority(item: &str) -> f64 {
    let n: u64 = item.rsplit(':').next().unwrap().parse().unwrap();
    (n * 7919 % 101) as f64 - 50.5
}

/// 8 producers × 60 inserts, 8 consumers (pop and blocking pop, min and max): every item
/// comes out exactly once, with the priority it went in with.
#[test]
fn no_item_lost_or_doubled() {
    let db = harness::fresh_db();
    let q = PriorityQueue::new("pq").unwrap();
    let traffic = harness::produce_and_consume(
        &db,
        8,
        8,
        |p| harness::numbered_batches(p, 60, 1),
        |con, batch| {
            let item = &batch[0];
            assert!(q.insert(item, priority(item)).run(con).unwrap());
        },
        |con, c| {
            let op = match c % 4 {
                0 => q.pop_min::<String>(),
                1 => q.pop_max(),
                2 => q.blocking_pop_min(Some(Duration::from_millis(5))),
                _ => q.blocking_pop_max(Some(Duration::from_millis(5))),
            };
            let (item, got) = op.run(con).unwrap()?;
            assert_eq!(got, priority(&item), "{item}");
            Some(item)
        },
    );
    assert_eq!(traffic.all_popped(), traffic.all_pushed());
    assert_eq!(q.length().run(&mut db.con()).unwrap(), 0);
}

#[test]
fn bad_input_is_refused_and_writes_nothing() {
    let db = harness::fresh_db();
    let mut con = db.con();
    harness::cmd(&mut con, &["ZADD", "pq", "1", "a"]);
    harness::cmd(&mut con, &["SET", "a:string", "x"]);
    let before = harness::dump(&mut con);

    let q = PriorityQueue::new("pq").unwrap();
    assert_invalid(q.insert("a", f64::NAN).run(&mut con), "priority");
    assert_invalid(q.insert("b", -f64::NAN).run(&mut con), "priority");
    assert_invalid(PriorityQueue::new(""), "key");
    assert_invalid(
        q.blocking_pop_min::<String>(Some(Duration::ZERO))
            .run(&mut con),
        "timeout",
    );
    assert_invalid(
        q.blocking_pop_max::<String>(Some(Duration::MAX))
            .run(&mut con),
        "timeout",
    );

    let wrong = PriorityQueue::new("a:string").unwrap();
    assert_code(wrong.insert("a", 1.0).run(&mut con), "WRONGTYPE");
    assert_code(wrong.remove("a").run(&mut con), "WRONGTYPE");
    assert_code(wrong.min::<String>().run(&mut con), "WRONGTYPE");
    assert_code(wrong.pop_min::<String>().run(&mut con), "WRONGTYPE");
    assert_code(wrong.length().run(&mut con), "WRONGTYPE");
    assert_code(
        wrong.blocking_pop_max::<String>(WAIT).run(&mut con),
        "WRONGTYPE",
    );

    assert_eq!(harness::dump(&mut con), before);
}

/// Items are bytes: a non-UTF-8 one is inserted, peeked and popped unchanged; popping it
/// as a `String` fails and puts it back with its priority.
#[test]
fn binary_items_round_trip_and_undecodable_pops_are_undone() {
    let db = harness::fresh_db();
    let mut con = db.con();
    let bin = harness::NOT_UTF8;
    let q = PriorityQueue::new("priority_queue:bin").unwrap();
    assert!(q.insert(bin, 2.5).run(&mut con).unwrap());
    assert!(q.insert("low", -1.0).run(&mut con).unwrap());
    assert_eq!(
        q.max::<Vec<u8>>().run(&mut con).unwrap(),
        Some((bin.to_vec(), 2.5))
    );
    for pop in [
        Box::new(|c: &mut redis::Connection| q.pop_max::<String>().run(c))
            as Box<dyn Fn(&mut redis::Connection) -> Result<Option<(String, f64)>, _>>,
        Box::new(|c| q.blocking_pop_max::<String>(None).run(c)),
    ] {
        harness::assert_undecodable_changes_nothing(&mut con, pop);
    }
    assert_eq!(
        q.pop_max::<Vec<u8>>().run(&mut con).unwrap(),
        Some((bin.to_vec(), 2.5))
    );
    assert!(q.insert(bin, 0.5).run(&mut con).unwrap());
    assert_eq!(
        q.blocking_pop_max::<Vec<u8>>(None).run(&mut con).unwrap(),
        Some((bin.to_vec(), 0.5))
    );
    assert!(q.remove("low").run(&mut con).unwrap());
}
