use std::time::Duration;

use redis_patterns::lock::{AutoReleaseLock, Lock};

use crate::harness::{self, Transcript, assert_invalid, assert_snapshot};
use crate::step;

/// The book's examples (chapter 3), including the race it warns about: a holder whose
/// lease ran out releases the lock another client took since.
fn scenario(con: &mut dyn redis::ConnectionLike) -> Transcript {
    let mut t = Transcript::default();
    let lock = Lock::new("Lock:10086").unwrap();
    let _ = step!(t, con, lock.acquire());
    let _ = step!(t, con, lock.acquire());
    let _ = step!(t, con, lock.release());
    let _ = step!(t, con, lock.release());
    let _ = step!(t, con, lock.acquire());

    let auto = AutoReleaseLock::new("AutoReleaseLock:10086").unwrap();
    let _ = step!(t, con, auto.acquire(Duration::from_millis(1000)));
    let _ = step!(t, con, auto.acquire(Duration::from_secs(10)));
    harness::wait_until_gone(con, "AutoReleaseLock:10086");
    t.note("wait until the lease runs out");
    let _ = step!(t, con, auto.acquire(Duration::from_secs(10)));
    t.note("the first holder, unaware, releases: it frees the second holder's lock");
    let _ = step!(t, con, auto.release());
    let _ = step!(t, con, auto.release());
    t
}

#[test]
fn scenario_standalone() {
    let db = harness::fresh_db();
    let recorder = crate::recorder::Recorder::new("lock");
    assert_snapshot("lock__scenario", &scenario(&mut recorder.con(db.con())));
    recorder.finish();
}

#[test]
fn scenario_cluster() {
    assert_snapshot("lock__scenario", &scenario(&mut harness::cluster_con()));
}

#[test]
fn bad_input_is_refused_and_writes_nothing() {
    let db = harness::fresh_db();
    let mut con = db.con();
    assert!(Lock::new("held").unwrap().acquire().run(&mut con).unwrap());
    let before = harness::dump(&mut con);

    assert_invalid(Lock::new(""), "key");
    assert_invalid(AutoReleaseLock::new(""), "key");
    let free = AutoReleaseLock::new("free").unwrap();
    assert_invalid(free.acquire(Duration::ZERO).run(&mut con), "ttl");
    assert_invalid(
        free.acquire(Duration::from_micros(999)).run(&mut con),
        "ttl",
    );
    assert_invalid(free.acquire(Duration::MAX).run(&mut con), "ttl");

    assert_eq!(harness::dump(&mut con), before);
}
