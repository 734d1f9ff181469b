use std::time::{Duration, Instant};

use redis::AsyncConnectionConfig;
use redis_patterns::fifo_queue::{FifoQueue, ReversedFifoQueue};

use crate::harness::{self, Transcript, assert_code, assert_invalid, assert_snapshot};
use crate::step;

const WAIT: Option<Duration> = Some(Duration::from_millis(100));

/// The book's example (chapter 26): jobs in, jobs out in order, then the blocking form
/// timing out on an empty queue; the same for `FifoQueueR`.
fn scenario(con: &mut dyn redis::ConnectionLike) -> Transcript {
    let mut t = Transcript::default();
    for key in ["fifo_queue:jobs", "fifo_queue:jobs:r"] {
        harness::cmd(con, &["DEL", key]);
    }
    let q = FifoQueue::new("fifo_queue:jobs").unwrap();
    let _ = step!(t, con, q.enqueue(&["job:1", "job:2", "job:3"]));
    let _ = step!(t, con, q.enqueue(&["job:4"]));
    let _ = step!(t, con, q.length());
    let _ = step!(t, con, q.dequeue::<String>());
    let _ = step!(t, con, q.dequeue_blocking::<String>(WAIT));
    let _ = step!(t, con, q.dequeue::<String>());
    let _ = step!(t, con, q.dequeue_blocking::<String>(None));
    let _ = step!(t, con, q.dequeue::<String>());
    let _ = step!(t, con, q.dequeue_blocking::<String>(WAIT));
    let _ = step!(t, con, q.length());

    t.note("FifoQueueR: LPUSH in, RPOP/BRPOP out: the same order");
    let r = ReversedFifoQueue::new("fifo_queue:jobs:r").unwrap();
    let _ = step!(t, con, r.enqueue(&["job:1", "job:2", "job:3"]));
    let _ = step!(t, con, r.dequeue::<String>());
    let _ = step!(t, con, r.dequeue_blocking::<String>(WAIT));
    let _ = step!(t, con, r.length());
    let _ = step!(t, con, r.dequeue_blocking::<String>(None));
    let _ = step!(t, con, r.dequeue::<String>());
    let _ = step!(t, con, r.dequeue_blocking::<String>(WAIT));
    t
}

#[test]
fn scenario_standalone() {
    let db = harness::fresh_db();
    let recorder = crate::recorder::Recorder::new("fifo_queue");
    assert_snapshot(
        "fifo_queue__scenario",
        &scenario(&mut recorder.con(db.con())),
    );
    recorder.finish();
}

#[test]
fn scenario_cluster() {
    assert_snapshot(
        "fifo_queue__scenario",
        &scenario(&mut harness::cluster_con()),
    );
}

/// 8 producers × 40 batches of 1–4 items, 8 consumers (half popping, half blocking):
/// every item comes out exactly once, and each consumer sees each producer's items in
/// order.
#[test]
fn no_item_lost_or_doubled() {
    let db = harness::fresh_db();
    let q = FifoQueue::new("q").unwrap();
    let traffic = harness::produce_and_consume(
        &db,
        8,
        8,
        |p| harness::numbered_batches(p, 40, 4),
        |con, batch| q.enqueue(batch).run(con).unwrap(),
        |con, c| {
            if c % 2 == 0 {
                q.dequeue().run(con).unwrap()
            } else {
                q.dequeue_blocking(Some(Duration::from_millis(5)))
                    .run(con)
                    .unwrap()
            }
        },
    );
    for (batch, length) in &traffic.pushes {
        assert!(*length >= batch.len() as u64);
    }
    assert_eq!(traffic.all_popped(), traffic.all_pushed());
    harness::assert_fifo_per_consumer(&traffic.popped);
    assert_eq!(q.length().run(&mut db.con()).unwrap(), 0);
}

#[test]
fn reversed_no_item_lost_or_doubled() {
    let db = harness::fresh_db();
    let q = ReversedFifoQueue::new("q").unwrap();
    let traffic = harness::produce_and_consume(
        &db,
        8,
        8,
        |p| harness::numbered_batches(p, 40, 4),
        |con, batch| q.enqueue(batch).run(con).unwrap(),
        |con, c| {
            if c % 2 == 0 {
                q.dequeue().run(con).unwrap()
            } else {
                q.dequeue_blocking(Some(Duration::from_millis(5)))
                    .run(con)
                    .unwrap()
            }
        },
    );
    assert_eq!(traffic.all_popped(), traffic.all_pushed());
    harness::assert_fifo_per_consumer(&traffic.popped);
}

/// A sync connection has no read timeout: a pop that waits forever gets the item pushed
/// later, and a timed pop on an empty queue waits its time and answers `None`.
#[test]
fn blocking_pop_on_a_sync_connection() {
    let db = harness::fresh_db();
    let q = FifoQueue::new("q").unwrap();
    let started = Instant::now();
    assert_eq!(
        q.dequeue_blocking::<String>(WAIT)
            .run(&mut db.con())
            .unwrap(),
        None
    );
    assert!(started.elapsed() >= Duration::from_millis(100));

    std::thread::scope(|s| {
        let mut con = db.con();
        let id = harness::client_id(&mut con);
        let q = &q;
        let waiter = s.spawn(move || q.dequeue_blocking::<String>(None).run(&mut con).unwrap());
        // The push comes while the pop waits, however late its thread got a turn.
        harness::wait_until_sent(&mut db.con(), id, "blpop");
        q.enqueue(&["late"]).run(&mut db.con()).unwrap();
        assert_eq!(waiter.join().unwrap().as_deref(), Some("late"));
    });
}

/// An async connection made without a response timeout waits as long as the pop does;
/// one with the default 500 ms response timeout gives up on a longer pop. (Two workers:
/// the test watches the pop from a sync connection while another worker runs it.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn blocking_pop_on_an_async_connection() {
    let db = harness::fresh_db();
    let q = ReversedFifoQueue::new("q").unwrap();

    // Short pops are fine on a default connection.
    let mut default = db.multiplexed().await;
    assert_eq!(
        q.dequeue_blocking::<String>(WAIT)
            .run_async(&mut default)
            .await
            .unwrap(),
        None
    );

    let config = AsyncConnectionConfig::new().set_response_timeout(None);
    let mut waiting = db
        .client
        .get_multiplexed_async_connection_with_config(&config)
        .await
        .unwrap();
    let id = harness::client_id_async(&mut waiting).await;
    let pop = q.dequeue_blocking::<String>(None);
    let waiter = tokio::spawn(async move { pop.run_async(&mut waiting).await });
    // The pop waits past the 500 ms a default connection would allow, then gets the push.
    harness::wait_until_sent(&mut db.con(), id, "brpop");
    tokio::time::sleep(Duration::from_millis(700)).await;
    q.enqueue(&["late"]).run_async(&mut default).await.unwrap();
    assert_eq!(waiter.await.unwrap().unwrap().as_deref(), Some("late"));

    // The pitfall the module docs warn about: the client stops waiting at 500 ms.
    // The server would answer after 5 s; the client gives up at 500 ms.
    let started = Instant::now();
    let err = q
        .dequeue_blocking::<String>(Some(Duration::from_secs(5)))
        .run_async(&mut db.multiplexed().await)
        .await
        .unwrap_err();
    assert!(
        matches!(&err, redis_patterns::Error::ResponseTimeout { command, source }
            if command == "BRPOP" && source.is_timeout()),
        "{err:?}"
    );
    // The message says what went wrong and where the docs explain it.
    assert!(
        err.to_string()
            .contains("Blocking pops and connection timeouts"),
        "{err}"
    );
    assert!(started.elapsed() < Duration::from_secs(5));
}

#[test]
fn bad_input_is_refused_and_writes_nothing() {
    let db = harness::fresh_db();
    let mut con = db.con();
    harness::cmd(&mut con, &["RPUSH", "q", "a", "b"]);
    harness::cmd(&mut con, &["SET", "a:string", "x"]);
    let before = harness::dump(&mut con);

    let q = FifoQueue::new("q").unwrap();
    let r = ReversedFifoQueue::new("q").unwrap();
    let none: [&str; 0] = [];
    assert_invalid(q.enqueue(&none).run(&mut con), "items");
    assert_invalid(r.enqueue(&none).run(&mut con), "items");
    assert_invalid(FifoQueue::new(""), "key");
    assert_invalid(ReversedFifoQueue::new(""), "key");
    for timeout in [
        Duration::ZERO,
        Duration::from_micros(999),
        Duration::from_secs(10u64.pow(13)),
        Duration::MAX,
    ] {
        assert_invalid(
            q.dequeue_blocking::<String>(Some(timeout)).run(&mut con),
            "timeout",
        );
        assert_invalid(
            r.dequeue_blocking::<String>(Some(timeout)).run(&mut con),
            "timeout",
        );
    }

    let wrong = FifoQueue::new("a:string").unwrap();
    assert_code(wrong.enqueue(&["a"]).run(&mut con), "WRONGTYPE");
    assert_code(wrong.dequeue::<String>().run(&mut con), "WRONGTYPE");
    assert_code(
        wrong.dequeue_blocking::<String>(WAIT).run(&mut con),
        "WRONGTYPE",
    );
    assert_code(wrong.length().run(&mut con), "WRONGTYPE");
    let wrong = ReversedFifoQueue::new("a:string").unwrap();
    assert_code(wrong.enqueue(&["a"]).run(&mut con), "WRONGTYPE");
    assert_code(wrong.dequeue::<String>().run(&mut con), "WRONGTYPE");
    assert_code(
        wrong.dequeue_blocking::<String>(None).run(&mut con),
        "WRONGTYPE",
    );

    assert_eq!(harness::dump(&mut con), before);
}

/// Items are bytes: non-UTF-8 ones go through both queues unchanged, and one that cannot
/// decode as the type asked for stays queued, in place, whether popped alone, blocking,
/// inside a batch or on an async connection.
#[test]
fn binary_items_round_trip_and_undecodable_ones_stay_queued() {
    let db = harness::fresh_db();
    let mut con = db.con();
    let bin = harness::NOT_UTF8;
    {
        let q = FifoQueue::new("fifo_queue:bin").unwrap();
        let r = ReversedFifoQueue::new("fifo_queue:bin:r").unwrap();
        q.enqueue(&[bin, b"next"]).run(&mut con).unwrap();
        r.enqueue(&[bin, b"next"]).run(&mut con).unwrap();
        harness::assert_undecodable_changes_nothing(&mut con, |c| q.dequeue::<String>().run(c));
        harness::assert_undecodable_changes_nothing(&mut con, |c| r.dequeue::<String>().run(c));
        harness::assert_undecodable_changes_nothing(&mut con, |c| {
            q.dequeue_blocking::<String>(WAIT).run(c)
        });
        harness::assert_undecodable_changes_nothing(&mut con, |c| {
            r.dequeue_blocking::<String>(None).run(c)
        });
        // In a batch the reply decodes when its slot is read: the item is back by then.
        harness::assert_undecodable_changes_nothing(&mut con, |c| {
            let mut batch = redis_patterns::Batch::new();
            let popped = batch.add(q.dequeue::<String>());
            let mut replies = batch.run(c)?;
            popped.take(&mut replies)
        });
        assert_eq!(
            q.dequeue::<Vec<u8>>().run(&mut con).unwrap().as_deref(),
            Some(bin)
        );
        assert_eq!(
            r.dequeue_blocking::<Vec<u8>>(WAIT)
                .run(&mut con)
                .unwrap()
                .as_deref(),
            Some(bin)
        );
        assert_eq!(
            q.dequeue::<String>().run(&mut con).unwrap().as_deref(),
            Some("next")
        );
    }

    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let q = FifoQueue::new("fifo_queue:bin:async").unwrap();
        let mut a = db.multiplexed().await;
        q.enqueue(&[bin]).run_async(&mut a).await.unwrap();
        assert!(q.dequeue::<String>().run_async(&mut a).await.is_err());
        assert_eq!(q.length().run_async(&mut a).await.unwrap(), 1);
        let item = q.dequeue::<Vec<u8>>().run_async(&mut a).await.unwrap();
        assert_eq!(item.as_deref(), Some(bin));
    });
}
