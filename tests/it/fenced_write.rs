use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread;
use std::time::Duration;

use redis_patterns::Error;
use redis_patterns::fenced_lock::FencedLock;
use redis_patterns::fenced_write::{self, FencedResource};

use crate::harness::{self, Rng, Transcript, assert_code, assert_invalid, assert_snapshot};
use crate::step;

fn scenario(con: &mut dyn redis::ConnectionLike) -> Transcript {
    let mut t = Transcript::default();
    let invoice = FencedResource::new("FencedResource:invoice:42").unwrap();
    t.step(
        "invoice.max_token_key()",
        Ok::<_, Error>(invoice.max_token_key()),
    )
    .unwrap();
    let _ = step!(t, con, invoice.highest());
    let _ = step!(t, con, invoice.set(3, "draft", None));
    let _ = step!(t, con, invoice.set(3, "open", None));
    let _ = step!(t, con, invoice.set(2, "stale", None));
    let _ = step!(
        t,
        con,
        invoice.set(5, "paid", Some(Duration::from_secs(3600)))
    );
    let _ = step!(t, con, invoice.set(5, "paid again", None));
    let _ = step!(t, con, invoice.delete(4));
    let _ = step!(t, con, invoice.fence(7));
    let _ = step!(t, con, invoice.set(6, "late", None));
    let _ = step!(t, con, invoice.fence(6));
    let _ = step!(t, con, invoice.delete(7));
    let _ = step!(
        t,
        con,
        invoice.hset(7, &[("total", "12.50"), ("state", "new")])
    );
    let _ = step!(t, con, invoice.hset(6, &[("state", "old")]));
    let _ = step!(t, con, invoice.highest());
    t
}

#[test]
fn scenario_standalone() {
    let db = harness::fresh_db();
    let recorder = crate::recorder::Recorder::new("fenced_write");
    assert_snapshot(
        "fenced_write__scenario",
        &scenario(&mut recorder.con(db.con())),
    );
    recorder.finish();
}

#[test]
fn scenario_cluster() {
    assert_snapshot(
        "fenced_write__scenario",
        &scenario(&mut harness::cluster_con()),
    );
}

/// The holder of a `FencedLock` is paused past its lease; the next holder fences the
/// resource and writes; the first wakes and writes what it computed before: refused, and
/// the resource stays byte for byte as the second holder left it.
#[test]
fn a_paused_holder_cannot_write_after_the_next_holder_fenced() {
    let db = harness::fresh_db();
    let mut con = db.con();
    let lock = FencedLock::new("report:lock").unwrap();
    let report = FencedResource::new("report").unwrap();
    let a = lock
        .acquire(Duration::from_millis(50))
        .run(&mut con)
        .unwrap()
        .unwrap();
    report.set(a, "a's draft", None).run(&mut con).unwrap();
    harness::wait_until_gone(&mut con, lock.key());
    let b = lock
        .acquire(Duration::from_secs(60))
        .run(&mut con)
        .unwrap()
        .unwrap();
    assert!(b > a);
    assert_eq!(report.fence(b).run(&mut con).unwrap(), a);
    report.set(b, "b's report", None).run(&mut con).unwrap();
    let before = harness::dump(&mut con);
    for refused in [
        report.set(a, "a's late write", None).run(&mut con),
        report.delete(a).run(&mut con),
        report.fence(a).run(&mut con),
    ] {
        let err = refused.unwrap_err();
        assert_eq!(err.code(), Some("STALE_TOKEN"), "{err}");
        assert_eq!(fenced_write::stale(&err), Some(b));
    }
    assert_code(
        FencedResource::new("report")
            .unwrap()
            .hset(a, &[("f", "v")])
            .run(&mut con),
        "STALE_TOKEN",
    );
    assert_eq!(harness::dump(&mut con), before);
}

/// 8 writers draw increasing tokens from one counter (as `fenced_lock` does) and write
/// them in whatever order the threads run; a reader checks throughout that the value is
/// always the highest token seen: no lower token ever wrote after a higher one.
#[test]
fn a_lower_token_never_writes_after_a_higher_one() {
    let db = Arc::new(harness::fresh_db());
    let done = Arc::new(AtomicBool::new(false));
    let reads = Arc::new(AtomicU64::new(0));
    let res = FencedResource::new("contended").unwrap();
    let reader = {
        let (db, done, reads, res) = (db.clone(), done.clone(), reads.clone(), res.clone());
        thread::spawn(move || {
            let mut con = db.con();
            while !done.load(Ordering::SeqCst) {
                let (value, highest): (Option<u64>, Option<u64>) = redis::cmd("MGET")
                    .arg(res.key())
                    .arg(res.max_token_key())
                    .query(&mut con)
                    .unwrap();
                assert_eq!(value, highest, "a write below the highest token");
                reads.fetch_add(1, Ordering::SeqCst);
            }
        })
    };
    let writers: Vec<_> = (0..8)
        .map(|i| {
            let (db, res) = (db.clone(), res.clone());
            thread::spawn(move || {
                let mut con = db.con();
                let mut rng = Rng::new(i);
                let (mut applied, mut refused) = (0, 0);
                for _ in 0..200 {
                    let token: u64 = redis::cmd("INCR")
                        .arg("{contended}:counter")
                        .query(&mut con)
                        .unwrap();
                    if rng.below(4) == 0 {
                        thread::yield_now();
                    }
                    let token_text = token.to_string();
                    match res.set(token, &token_text, None).run(&mut con) {
                        Ok(previous) => {
                            assert!(previous <= token);
                            applied += 1;
                        }
                        Err(err) => {
                            let highest = fenced_write::stale(&err).expect("STALE_TOKEN");
                            assert!(highest > token);
                            refused += 1;
                        }
                    }
                }
                (applied, refused)
            })
        })
        .collect();
    let mut applied = 0;
    for w in writers {
        applied += w.join().unwrap().0;
    }
    harness::wait_for_count(&reads, 1, "a read");
    done.store(true, Ordering::SeqCst);
    reader.join().unwrap();
    assert!(applied > 0);
    let mut con = db.con();
    assert_eq!(res.highest().run(&mut con).unwrap(), 1600);
}

#[test]
fn bad_input_is_refused_and_writes_nothing() {
    let db = harness::fresh_db();
    let mut con = db.con();
    let res = FencedResource::new("doc").unwrap();
    res.set(5, "v", None).run(&mut con).unwrap();
    harness::cmd(&mut con, &["SET", "{damaged}:max_token", "abc"]);
    harness::cmd(&mut con, &["HSET", "hashed", "f", "v"]);
    let before = harness::dump(&mut con);
    assert_invalid(FencedResource::new(""), "key");
    assert_invalid(FencedResource::new("a}b"), "key");
    assert_invalid(res.set(0, "v", None).run(&mut con), "token");
    assert_invalid(res.set(1 << 53, "v", None).run(&mut con), "token");
    assert_invalid(res.set(6, "v", Some(Duration::ZERO)).run(&mut con), "ttl");
    assert_invalid(res.hset::<&str, &str>(6, &[]).run(&mut con), "fields");
    assert_code(
        FencedResource::new("damaged")
            .unwrap()
            .set(9, "v", None)
            .run(&mut con),
        "BAD_MAX_TOKEN",
    );
    // A resource of another type: WRONGTYPE before anything is written.
    assert_code(
        FencedResource::new("hashed")
            .unwrap()
            .set(9, "v", None)
            .run(&mut con),
        "WRONGTYPE",
    );
    assert_code(
        FencedResource::new("doc")
            .unwrap()
            .hset(9, &[("f", "v")])
            .run(&mut con),
        "WRONGTYPE",
    );
    assert_eq!(harness::dump(&mut con), before);
    assert_eq!(
        fenced_write::stale(&Error::Timeout {
            what: "x".into(),
            waited: Duration::ZERO
        }),
        None
    );
}
