use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, mpsc};
use std::thread;
use std::time::Duration;

use redis_patterns::rw_lock::RwLock;
use redis_patterns::wait::Attempt;
use redis_patterns::{Error, Op};

use crate::harness::{self, Transcript, assert_code, assert_invalid, assert_snapshot};
use crate::step;

const A: &str = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
const B: &str = "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb";
const C: &str = "cccccccccccccccccccccccccccccccc";

/// An attempt as the transcript shows it: the wake id is a time, so only its kind shows.
fn brief(op: Op<Attempt<u64>>) -> Op<String> {
    op.map(|attempt| {
        Ok(match attempt {
            Attempt::Done(n) => format!("Done({n})"),
            Attempt::NotYet(wake) => format!("NotYet(block on {})", wake.key),
        })
    })
}

/// The lock's keys that exist now.
fn keys_left(con: &mut dyn redis::ConnectionLike, lock: &RwLock) -> Vec<String> {
    lock.keys()
        .into_iter()
        .filter(|key| redis::cmd("EXISTS").arg(*key).query::<bool>(con).unwrap())
        .map(str::to_owned)
        .collect()
}

fn scenario(con: &mut dyn redis::ConnectionLike) -> Transcript {
    let mut t = Transcript::default();
    let lock = RwLock::new("RwLock:catalog").unwrap();
    let readers_first = lock.clone().prefer_readers();
    let lease = Duration::from_secs(60);
    t.step("lock.keys()", Ok::<_, Error>(lock.keys())).unwrap();
    t.note("a reads twice (reentrant), b asks to write and waits");
    let _ = step!(t, con, brief(lock.try_read(A, lease)));
    let _ = step!(t, con, brief(lock.try_read(A, lease)));
    let _ = step!(t, con, brief(lock.try_write(B, lease)));
    t.note("b waits: new readers wait behind it, unless they prefer readers");
    let _ = step!(t, con, brief(lock.try_read(C, lease)));
    let _ = step!(t, con, brief(readers_first.try_read(C, lease)));
    let _ = step!(t, con, lock.release_read(C));
    let _ = step!(t, con, lock.release_read(C));
    t.note("a reader that already reads may read again");
    let _ = step!(t, con, brief(lock.try_read(A, lease)));
    let _ = step!(t, con, brief(lock.try_write(A, lease)));
    let _ = step!(t, con, lock.release_read(A));
    let _ = step!(t, con, lock.release_read(A));
    let _ = step!(t, con, lock.release_read(A));
    t.note("the last reader is out: b writes, twice (reentrant), with one fencing token");
    let _ = step!(t, con, brief(lock.try_write(B, lease)));
    let _ = step!(t, con, brief(lock.try_write(B, lease)));
    let _ = step!(t, con, brief(lock.try_read(A, lease)));
    let _ = step!(t, con, brief(lock.try_write(A, lease)));
    t.note("the writer may read, even while a writer waits");
    let _ = step!(t, con, brief(lock.try_read(B, lease)));
    let _ = step!(t, con, lock.release_read(B));
    let _ = step!(t, con, lock.withdraw(A));
    let _ = step!(t, con, lock.extend(B, lease));
    let _ = step!(t, con, lock.release_write(B));
    t.note("b downgrades its write hold to a read hold; a reads beside it");
    let _ = step!(t, con, lock.downgrade(B, lease));
    let _ = step!(t, con, lock.downgrade(B, lease));
    let _ = step!(t, con, brief(lock.try_read(A, lease)));
    let _ = step!(t, con, lock.extend(B, lease));
    let _ = step!(t, con, lock.release_read(B));
    let _ = step!(t, con, lock.release_read(A));
    let _ = step!(t, con, lock.release_write(B));
    t.note("a new write hold gets the next fencing token");
    let _ = step!(t, con, brief(lock.try_write(C, lease)));
    let _ = step!(t, con, lock.release_write(C));
    let _ = step!(t, con, lock.release_read(A));
    t.step("keys left", Ok::<_, Error>(keys_left(con, &lock)))
        .unwrap();
    t
}

#[test]
fn scenario_standalone() {
    let db = harness::fresh_db();
    let recorder = crate::recorder::Recorder::new("rw_lock");
    assert_snapshot("rw_lock__scenario", &scenario(&mut recorder.con(db.con())));
    recorder.finish();
}

#[test]
fn scenario_cluster() {
    assert_snapshot("rw_lock__scenario", &scenario(&mut harness::cluster_con()));
}

/// 12 threads, each taking read and write holds through the waiting forms: never two
/// writers, never a writer beside a reader (each holder checks shared counters while it
/// holds), fencing tokens strictly increasing, and every hold granted in the end.
#[test]
fn never_two_writers_nor_a_writer_with_readers() {
    let db = Arc::new(harness::fresh_db());
    let readers = Arc::new(AtomicI64::new(0));
    let writers = Arc::new(AtomicI64::new(0));
    let last_fence = Arc::new(AtomicU64::new(0));
    let reads_seen_together = Arc::new(AtomicI64::new(0));
    let threads: Vec<_> = (0..12)
        .map(|i| {
            let (db, readers, writers, last_fence, together) = (
                db.clone(),
                readers.clone(),
                writers.clone(),
                last_fence.clone(),
                reads_seen_together.clone(),
            );
            thread::spawn(move || {
                let mut con = db.con();
                let lock = RwLock::new("contended").unwrap();
                let lock = if i % 4 == 0 {
                    lock.prefer_readers()
                } else {
                    lock
                };
                let token = RwLock::random_token();
                let lease = Duration::from_secs(60);
                let wait = Duration::from_secs(60);
                for round in 0..25 {
                    if (i + round) % 3 == 0 {
                        let fence = lock
                            .write_within(&mut con, &token, lease, wait)
                            .unwrap()
                            .expect("the write hold within a minute");
                        assert_eq!(writers.fetch_add(1, Ordering::SeqCst), 0, "two writers");
                        assert_eq!(readers.load(Ordering::SeqCst), 0, "a writer with readers");
                        let before = last_fence.swap(fence, Ordering::SeqCst);
                        assert!(before < fence, "fence {fence} after {before}");
                        thread::yield_now();
                        assert_eq!(readers.load(Ordering::SeqCst), 0, "a writer with readers");
                        writers.fetch_sub(1, Ordering::SeqCst);
                        assert_eq!(lock.release_write(&token).run(&mut con).unwrap(), Some(0));
                    } else {
                        let holds = lock
                            .read_within(&mut con, &token, lease, wait)
                            .unwrap()
                            .expect("a read hold within a minute");
                        assert_eq!(holds, 1);
                        if readers.fetch_add(1, Ordering::SeqCst) > 0 {
                            together.fetch_add(1, Ordering::SeqCst);
                        }
                        assert_eq!(writers.load(Ordering::SeqCst), 0, "a reader with a writer");
                        thread::yield_now();
                        assert_eq!(writers.load(Ordering::SeqCst), 0, "a reader with a writer");
                        readers.fetch_sub(1, Ordering::SeqCst);
                        assert_eq!(lock.release_read(&token).run(&mut con).unwrap(), Some(0));
                    }
                }
            })
        })
        .collect();
    for thread in threads {
        thread.join().unwrap();
    }
    let mut con = db.con();
    let lock = RwLock::new("contended").unwrap();
    // 12 threads × 25 rounds, a third of them writes.
    assert_eq!(last_fence.load(Ordering::SeqCst), 100);
    assert_eq!(
        keys_left(&mut con, &lock),
        [lock.fence_key(), lock.wake_key()],
        "keys other than the fence counter and the wake stream"
    );
}

/// Readers hold; a writer that asks once and dies (no more calls) holds them back only
/// until its place lapses; lapsed read holds are dropped by the next acquire and let a
/// writer in.
#[test]
fn a_dead_writer_and_dead_readers_lose_their_holds_within_a_lease() {
    let db = harness::fresh_db();
    let mut con = db.con();
    let lock = RwLock::new("dead")
        .unwrap()
        .with_place_lease(Duration::from_millis(200))
        .unwrap();
    let long = Duration::from_secs(60);
    assert_eq!(
        lock.try_read(A, long).run(&mut con).unwrap(),
        Attempt::Done(1)
    );
    assert!(matches!(
        lock.try_write(B, long).run(&mut con).unwrap(),
        Attempt::NotYet(_)
    ));
    // b dies. c waits behind its place, then gets in once the place lapsed.
    assert!(matches!(
        lock.try_read(C, long).run(&mut con).unwrap(),
        Attempt::NotYet(_)
    ));
    harness::wait_server(&mut con, Duration::from_millis(200));
    assert_eq!(
        lock.try_read(C, long).run(&mut con).unwrap(),
        Attempt::Done(1)
    );
    assert_eq!(lock.release_read(A).run(&mut con).unwrap(), Some(0));

    // c dies holding a short read hold: a writer gets in once it lapsed.
    let extended = lock
        .extend(C, Duration::from_millis(50))
        .run(&mut con)
        .unwrap();
    assert!(extended.read && !extended.write);
    harness::wait_server(&mut con, Duration::from_millis(50));
    assert!(matches!(
        lock.try_write(B, long).run(&mut con).unwrap(),
        Attempt::Done(1)
    ));
    assert_eq!(lock.release_read(C).run(&mut con).unwrap(), None);
    assert_eq!(lock.release_write(B).run(&mut con).unwrap(), Some(0));
}

/// A waiting reader and a waiting writer, each blocked on the wake stream, wake when the
/// holder releases (the test waits for state, never for time).
#[test]
fn waiting_forms_wake_on_release() {
    let db = Arc::new(harness::fresh_db());
    let mut con = db.con();
    let lock = RwLock::new("wakes").unwrap();
    let long = Duration::from_secs(60);
    assert!(matches!(
        lock.try_write(A, long).run(&mut con).unwrap(),
        Attempt::Done(_)
    ));
    let (ids, id) = mpsc::channel();
    let reader = {
        let (db, lock, ids) = (db.clone(), lock.clone(), ids.clone());
        thread::spawn(move || {
            let mut con = db.con();
            ids.send(harness::client_id(&mut con)).unwrap();
            lock.read_within(&mut con, B, long, long).unwrap()
        })
    };
    harness::wait_until_sent(&mut con, id.recv().unwrap(), "xread");
    assert_eq!(lock.release_write(A).run(&mut con).unwrap(), Some(0));
    assert_eq!(reader.join().unwrap(), Some(1));

    // Now a writer waits for the reader.
    let writer = {
        let (db, lock) = (db.clone(), lock.clone());
        thread::spawn(move || {
            let mut con = db.con();
            ids.send(harness::client_id(&mut con)).unwrap();
            lock.write_within(&mut con, C, long, long).unwrap()
        })
    };
    harness::wait_until_sent(&mut con, id.recv().unwrap(), "xread");
    assert_eq!(lock.release_read(B).run(&mut con).unwrap(), Some(0));
    assert_eq!(writer.join().unwrap(), Some(2));
}

/// The async forms, and a writer that times out gives up its place.
#[tokio::test]
async fn async_forms_and_a_timed_out_writer_withdraws() {
    let db = harness::fresh_db();
    let mut con = db.multiplexed().await;
    let lock = RwLock::new("async").unwrap();
    let long = Duration::from_secs(60);
    assert_eq!(
        lock.read_within_async(&mut con, A, long, long)
            .await
            .unwrap(),
        Some(1)
    );
    assert_eq!(
        lock.write_within_async(&mut con, B, long, Duration::from_millis(20))
            .await
            .unwrap(),
        None
    );
    let place: Option<f64> = redis::cmd("ZSCORE")
        .arg(lock.keys()[3])
        .arg(B)
        .query_async(&mut con)
        .await
        .unwrap();
    assert_eq!(place, None, "the timed-out writer keeps no place");
    // So a new reader is not held back.
    assert_eq!(
        lock.read_within_async(&mut con, C, long, Duration::ZERO)
            .await
            .unwrap(),
        Some(1)
    );
    let mut sync = db.con();
    assert_eq!(
        lock.write_within(&mut sync, B, long, Duration::from_millis(20))
            .unwrap(),
        None
    );
    assert!(!lock.withdraw(B).run(&mut sync).unwrap());
}

#[test]
fn bad_input_is_refused_and_writes_nothing() {
    let db = harness::fresh_db();
    let mut con = db.con();
    let lock = RwLock::new("bad").unwrap();
    let long = Duration::from_secs(60);
    assert_eq!(
        lock.try_read(A, long).run(&mut con).unwrap(),
        Attempt::Done(1)
    );
    harness::cmd(
        &mut con,
        &["HSET", "{damaged}:writer", "t", A, "n", "x", "f", "1"],
    );
    harness::cmd(&mut con, &["HSET", "{damaged}:read_holds", B, "-1"]);
    let before = harness::dump(&mut con);

    assert_invalid(RwLock::new(""), "name");
    assert_invalid(RwLock::new("a}b"), "name");
    assert_invalid(
        lock.clone().with_place_lease(Duration::from_millis(99)),
        "place_lease",
    );
    assert_invalid(lock.try_read("not-hex", long).run(&mut con), "token");
    assert_invalid(lock.try_write(&A[1..], long).run(&mut con), "token");
    assert_invalid(lock.try_read(B, Duration::ZERO).run(&mut con), "lease");
    assert_invalid(lock.downgrade(B, Duration::ZERO).run(&mut con), "lease");
    // Upgrading is refused: two readers upgrading would wait for each other.
    assert_code(lock.try_write(A, long).run(&mut con), "HOLDS_READ");
    let damaged = RwLock::new("damaged").unwrap();
    assert_code(damaged.try_read(B, long).run(&mut con), "BAD_WRITER");
    assert_code(damaged.release_write(A).run(&mut con), "BAD_WRITER");
    assert_code(damaged.release_read(B).run(&mut con), "BAD_READ_HOLDS");
    assert_eq!(harness::dump(&mut con), before);
}
