use std::time::Duration;

use redis_patterns::stack::{LifoQueue, Stack};

use crate::harness::{self, Transcript, assert_code, assert_invalid, assert_snapshot};
use crate::step;

/// The book's example (chapter 28) with the added methods, then the unlisted `LifoQueue`
/// on the same list.
fn scenario(con: &mut dyn redis::ConnectionLike) -> Transcript {
    let mut t = Transcript::default();
    harness::cmd(con, &["DEL", "stack:numbers"]);
    let s = Stack::new("stack:numbers").unwrap();
    let _ = step!(t, con, s.push("1"));
    let _ = step!(t, con, s.push("2"));
    let _ = step!(t, con, s.push("3"));
    let _ = step!(t, con, s.top::<String>());
    let _ = step!(t, con, s.size());
    let _ = step!(t, con, s.pop::<String>());
    let _ = step!(t, con, s.top::<String>());
    let _ = step!(t, con, s.push("4"));
    let _ = step!(t, con, s.push("5"));
    let _ = step!(t, con, s.push("6"));
    let _ = step!(t, con, s.push("7"));
    let _ = step!(t, con, s.trim(3));
    let _ = step!(t, con, s.size());
    let _ = step!(t, con, s.pop::<String>());
    let _ = step!(t, con, s.top::<String>());
    let _ = step!(t, con, s.trim(10));
    let _ = step!(t, con, s.size());

    t.note("LifoQueue: the same list with queue names");
    let q = s.as_lifo_queue();
    let _ = step!(t, con, q.enqueue(&["a", "b"]));
    let _ = step!(t, con, q.dequeue::<String>());
    let _ = step!(
        t,
        con,
        q.dequeue_blocking::<String>(Some(Duration::from_millis(100)))
    );
    let _ = step!(t, con, q.length());
    let _ = step!(t, con, s.trim(0));
    let _ = step!(t, con, s.size());
    let _ = step!(t, con, s.pop::<String>());
    let _ = step!(t, con, s.top::<String>());
    let _ = step!(
        t,
        con,
        q.dequeue_blocking::<String>(Some(Duration::from_millis(100)))
    );
    t
}

#[test]
fn scenario_standalone() {
    let db = harness::fresh_db();
    let recorder = crate::recorder::Recorder::new("stack");
    assert_snapshot("stack__scenario", &scenario(&mut recorder.con(db.con())));
    recorder.finish();
}

#[test]
fn scenario_cluster() {
    assert_snapshot("stack__scenario", &scenario(&mut harness::cluster_con()));
}

/// 8 producers (half pushing one item at a time, half enqueueing batches of 1–4) × 40
/// calls, 8 consumers (pop, dequeue, blocking dequeue): every item comes out exactly once.
#[test]
fn no_item_lost_or_doubled() {
    let db = harness::fresh_db();
    let (s, q) = (Stack::new("s").unwrap(), LifoQueue::new("s").unwrap());
    let traffic = harness::produce_and_consume(
        &db,
        8,
        8,
        |p| harness::numbered_batches(p, 40, if p % 2 == 0 { 1 } else { 4 }),
        |con, batch| {
            if batch.len() == 1 {
                s.push(&batch[0]).run(con).unwrap()
            } else {
                q.enqueue(batch).run(con).unwrap()
            }
        },
        |con, c| match c % 3 {
            0 => s.pop().run(con).unwrap(),
            1 => q.dequeue().run(con).unwrap(),
            _ => q
                .dequeue_blocking(Some(Duration::from_millis(5)))
                .run(con)
                .unwrap(),
        },
    );
    assert_eq!(traffic.all_popped(), traffic.all_pushed());
    assert_eq!(s.size().run(&mut db.con()).unwrap(), 0);
}

#[test]
fn bad_input_is_refused_and_writes_nothing() {
    let db = harness::fresh_db();
    let mut con = db.con();
    harness::cmd(&mut con, &["RPUSH", "s", "a", "b"]);
    harness::cmd(&mut con, &["SET", "a:string", "x"]);
    let before = harness::dump(&mut con);

    let none: [&str; 0] = [];
    assert_invalid(
        LifoQueue::new("s").unwrap().enqueue(&none).run(&mut con),
        "items",
    );
    assert_invalid(Stack::new("s").unwrap().trim(u64::MAX).run(&mut con), "n");
    assert_invalid(Stack::new(""), "key");
    assert_invalid(LifoQueue::new(""), "key");
    assert_invalid(
        LifoQueue::new("s")
            .unwrap()
            .dequeue_blocking::<String>(Some(Duration::ZERO))
            .run(&mut con),
        "timeout",
    );

    let wrong = Stack::new("a:string").unwrap();
    assert_code(wrong.push("a").run(&mut con), "WRONGTYPE");
    assert_code(wrong.pop::<String>().run(&mut con), "WRONGTYPE");
    assert_code(wrong.top::<String>().run(&mut con), "WRONGTYPE");
    assert_code(wrong.size().run(&mut con), "WRONGTYPE");
    assert_code(wrong.trim(1).run(&mut con), "WRONGTYPE");
    assert_code(
        wrong.as_lifo_queue().enqueue(&["a"]).run(&mut con),
        "WRONGTYPE",
    );

    assert_eq!(harness::dump(&mut con), before);
}

/// Items are bytes: a non-UTF-8 one goes through the stack and the LIFO queue unchanged,
/// and popping it as a `String` fails and leaves it on top.
#[test]
fn binary_items_round_trip_and_undecodable_ones_stay_on_top() {
    let db = harness::fresh_db();
    let mut con = db.con();
    let bin = harness::NOT_UTF8;
    let s = Stack::new("stack:bin").unwrap();
    let q = s.as_lifo_queue();
    s.push(b"below".as_slice()).run(&mut con).unwrap();
    q.enqueue(&[bin]).run(&mut con).unwrap();
    assert_eq!(
        s.top::<Vec<u8>>().run(&mut con).unwrap().as_deref(),
        Some(bin)
    );
    harness::assert_undecodable_changes_nothing(&mut con, |c| s.pop::<String>().run(c));
    harness::assert_undecodable_changes_nothing(&mut con, |c| q.dequeue::<String>().run(c));
    harness::assert_undecodable_changes_nothing(&mut con, |c| {
        q.dequeue_blocking::<String>(Some(Duration::from_millis(100)))
            .run(c)
    });
    assert_eq!(
        s.pop::<Vec<u8>>().run(&mut con).unwrap().as_deref(),
        Some(bin)
    );
    s.push(bin).run(&mut con).unwrap();
    let popped = q.dequeue_blocking::<Vec<u8>>(None).run(&mut con).unwrap();
    assert_eq!(popped.as_deref(), Some(bin));
    assert_eq!(
        q.dequeue::<String>().run(&mut con).unwrap().as_deref(),
        Some("below")
    );
}
