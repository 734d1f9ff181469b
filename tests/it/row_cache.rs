use std::collections::{BTreeMap, BTreeSet};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use redis_patterns::Error;
use redis_patterns::row_cache::{Claimed, RowCache};
use redis_patterns::scripts::row_cache as script;

use crate::harness::{self, InMode, Transcript, assert_code, assert_invalid, assert_snapshot};
use crate::step;

const HOUR: Duration = Duration::from_secs(3600);

/// A claim with its due times shown as "due" (they are the server's clock).
fn claim(t: &mut Transcript, con: &mut dyn redis::ConnectionLike, rows: &RowCache) {
    let claimed = rows.claim(10).run(con).map(|Claimed { rows, dropped }| {
        let rows: Vec<(String, &str)> = rows.into_iter().map(|(row, _)| (row, "due")).collect();
        (rows, dropped)
    });
    t.step("rows.claim(10)", claimed).unwrap();
}

/// The book's flow: a row scheduled, claimed once per due time, its copy stored, a row
/// written without a delay (which crashes the book's workers) dropped, and a row
/// unscheduled while it was being rendered.
fn scenario(con: &mut dyn redis::ConnectionLike) -> Transcript {
    let mut t = Transcript::default();
    let rows = RowCache::new("inv").unwrap();
    let due = rows.schedule_row_cache("item:1", HOUR).in_mode().run(con);
    t.step(
        "rows.schedule_row_cache(\"item:1\", HOUR)",
        due.map(|ms| ms > 1_600_000_000_000),
    )
    .unwrap();
    let _ = step!(t, con, rows.delay("item:1"));
    claim(&mut t, con, &rows);
    t.note("claimed once: the next due time is an hour away");
    claim(&mut t, con, &rows);
    let _ = step!(t, con, rows.store("item:1", r#"{"id":1,"qty":629}"#));
    let _ = step!(t, con, rows.get::<String>("item:1"));
    rows.schedule_row_cache("item:2", HOUR)
        .in_mode()
        .run(con)
        .unwrap();
    t.note("rows.schedule_row_cache(\"item:2\", HOUR)");
    claim(&mut t, con, &rows);
    let _ = step!(t, con, rows.unschedule("item:2"));
    t.note("item:2 was unscheduled while rendered: its copy is not stored");
    let _ = step!(t, con, rows.store("item:2", r#"{"id":2}"#));
    let _ = step!(t, con, rows.get::<String>("item:2"));
    redis::cmd("ZADD")
        .arg("{inv}:schedule")
        .arg(0)
        .arg("item:3")
        .exec(con)
        .unwrap();
    redis::cmd("SET")
        .arg(rows.copy_key("item:3").unwrap())
        .arg("stale")
        .exec(con)
        .unwrap();
    t.note("item:3 written to the schedule with no delay (the book's TypeError)");
    let pass = rows.cache_rows(con, 10, |row| {
        Ok::<_, Error>(Some(format!("copy of {row}")))
    });
    let _ = t.step("rows.cache_rows(con, 10, fetch)", pass);
    let _ = step!(t, con, rows.get::<String>("item:3"));
    let _ = step!(t, con, rows.unschedule("item:1"));
    let _ = step!(t, con, rows.get::<String>("item:1"));
    let _ = step!(t, con, rows.delay("item:1"));
    t
}

#[test]
fn scenario_standalone() {
    let db = harness::fresh_db();
    let recorder = crate::recorder::Recorder::new("row_cache");
    let mut con = db.con();
    assert_snapshot(
        "row_cache__scenario",
        &scenario(&mut recorder.con(&mut con)),
    );
    assert!(harness::dump(&mut con).is_empty(), "a key was left behind");
    recorder.finish();
}

#[test]
fn scenario_cluster() {
    assert_snapshot(
        "row_cache__scenario",
        &scenario(&mut harness::cluster_con()),
    );
}

/// 16 workers claim 20 rows due every 20 ms for 400 ms: no row is claimed twice for one
/// due time, a row's claims are at least its delay apart, and every row was cached.
#[test]
fn each_due_row_is_claimed_by_one_worker() {
    let db = harness::fresh_db();
    let rows = RowCache::new("inv:busy").unwrap();
    let delay = Duration::from_millis(20);
    let ids: Vec<String> = (0..20).map(|i| format!("row{i}")).collect();
    for id in &ids {
        rows.schedule_row_cache(id, delay)
            .run(&mut db.con())
            .unwrap();
    }
    // The workers run until every row was claimed 3 times, however long a loaded
    // machine takes to get there.
    let counts = Mutex::new(BTreeMap::<String, usize>::new());
    let give_up = Instant::now() + Duration::from_secs(60);
    let claims: Vec<Vec<(String, u64)>> = thread::scope(|scope| {
        let handles: Vec<_> = (0..16)
            .map(|_| {
                let (db, rows, counts) = (&db, &rows, &counts);
                scope.spawn(move || {
                    let mut con = db.con();
                    let mut mine = Vec::new();
                    loop {
                        {
                            let counts = counts.lock().unwrap();
                            if counts.len() == 20 && counts.values().all(|&n| n >= 3) {
                                break;
                            }
                        }
                        assert!(Instant::now() < give_up, "rows still unclaimed after 60 s");
                        let claimed = rows.claim(5).run(&mut con).unwrap();
                        assert!(claimed.dropped.is_empty());
                        for (row, due) in claimed.rows {
                            assert!(
                                rows.store(&row, format!("{row}@{due}"))
                                    .run(&mut con)
                                    .unwrap()
                            );
                            *counts.lock().unwrap().entry(row.clone()).or_default() += 1;
                            mine.push((row, due));
                        }
                        thread::sleep(Duration::from_millis(1));
                    }
                    mine
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let mut by_row: BTreeMap<String, Vec<u64>> = BTreeMap::new();
    let mut seen = BTreeSet::new();
    for (row, due) in claims.into_iter().flatten() {
        assert!(
            seen.insert((row.clone(), due)),
            "{row} claimed twice for {due}"
        );
        by_row.entry(row).or_default().push(due);
    }
    assert_eq!(by_row.len(), 20, "a row was never claimed");
    for (row, mut dues) in by_row {
        dues.sort_unstable();
        assert!(dues.len() >= 3, "{row}: only {} claims", dues.len());
        for pair in dues.windows(2) {
            assert!(pair[1] - pair[0] >= 20, "{row}: claimed at {pair:?}");
        }
    }
}

/// `run_worker` stops when told, having cached every row.
#[test]
fn a_worker_runs_until_told_to_quit() {
    let db = harness::fresh_db();
    let rows = RowCache::new("inv:worker").unwrap();
    let mut con = db.con();
    for i in 0..3 {
        rows.schedule_row_cache(&format!("r{i}"), HOUR)
            .run(&mut con)
            .unwrap();
    }
    rows.schedule_row_cache("gone", HOUR).run(&mut con).unwrap();
    let quit = AtomicBool::new(false);
    let total = thread::scope(|scope| {
        let worker = scope.spawn(|| {
            let mut con = db.con();
            rows.run_worker(&mut con, 10, &quit, |row| {
                Ok::<_, Error>((row != "gone").then(|| format!("copy of {row}")))
            })
        });
        // Quit once every row is cached and the row without a copy is gone.
        harness::wait_until("the worker's pass over the rows", 10, || {
            let copies: Vec<Option<String>> = (0..3)
                .map(|i| rows.get(&format!("r{i}")).run(&mut con).unwrap())
                .collect();
            copies.iter().all(Option::is_some)
                && rows.delay("gone").run(&mut con).unwrap().is_none()
        });
        quit.store(true, Ordering::Relaxed);
        worker.join().unwrap().unwrap()
    });
    assert_eq!((total.cached, total.removed, total.dropped), (3, 1, 0));
    for i in 0..3 {
        let copy: Option<String> = rows.get(&format!("r{i}")).run(&mut con).unwrap();
        assert_eq!(copy, Some(format!("copy of r{i}")));
    }
    assert_eq!(rows.delay("gone").run(&mut con).unwrap(), None);
}

#[test]
fn bad_input_is_refused_and_writes_nothing() {
    let db = harness::fresh_db();
    let mut con = db.con();
    assert_invalid(RowCache::new(""), "namespace");
    let rows = RowCache::new("inv:bad").unwrap();
    rows.schedule_row_cache("r", HOUR).run(&mut con).unwrap();
    let before = harness::dump(&mut con);
    assert_invalid(rows.schedule_row_cache("", HOUR).run(&mut con), "row");
    assert_invalid(
        rows.schedule_row_cache("r", Duration::from_micros(999))
            .run(&mut con),
        "delay",
    );
    assert_invalid(rows.claim(0).run(&mut con), "limit");
    assert_invalid(rows.claim(501).run(&mut con), "limit");
    assert_invalid(rows.store("", "x").run(&mut con), "row");
    assert_invalid(rows.get::<String>("").run(&mut con), "row");
    assert_eq!(harness::dump(&mut con), before);
    // Raw calls, as from another language: a copy key of the wrong type is found before
    // the row is unscheduled or stored.
    harness::cmd(&mut con, &["HSET", "{inv:bad}:inv:r", "f", "v"]);
    let before = harness::dump(&mut con);
    let keys = ["{inv:bad}:delays", "{inv:bad}:schedule", "{inv:bad}:inv:r"];
    assert_code(
        harness::eval(&mut con, &script::SCHEDULE, &keys, &["r", "0"]),
        "WRONGTYPE",
    );
    assert_code(
        harness::eval(&mut con, &script::STORE, &[keys[0], keys[2]], &["r", "x"]),
        "WRONGTYPE",
    );
    assert_code(
        harness::eval(&mut con, &script::SCHEDULE, &keys, &["r", "1.5"]),
        "BAD_DELAY",
    );
    assert_eq!(harness::dump(&mut con), before);
}

/// Copies are bytes: a non-UTF-8 copy rendered by a worker, and one stored directly, are
/// kept and read back byte for byte, and reading one as `String` fails and changes
/// nothing. Row ids are text, any UTF-8: one with a NUL, a CR LF and non-ASCII letters
/// names its copy and is claimed as it is.
#[test]
fn binary_copies_round_trip() {
    let db = harness::fresh_db();
    let mut con = db.con();
    let rows = RowCache::new("inv:bin").unwrap();
    let row = "行\u{0}\r\n:1";
    let copy: &[u8] = b"\xff\x00row\r\n\x80";
    rows.schedule_row_cache(row, HOUR).run(&mut con).unwrap();
    let mut fetched = Vec::new();
    let pass = rows
        .cache_rows(&mut con, 10, |id| {
            fetched.push(id.to_owned());
            Ok::<_, Error>(Some(copy))
        })
        .unwrap();
    assert_eq!(fetched, [row]);
    assert_eq!(pass.cached, 1);
    let got: Option<Vec<u8>> = rows.get(row).run(&mut con).unwrap();
    assert_eq!(got.as_deref(), Some(copy));
    let stored: Vec<u8> = redis::cmd("GET")
        .arg(rows.copy_key(row).unwrap())
        .query(&mut con)
        .unwrap();
    assert_eq!(stored, copy);
    assert_eq!(rows.copy_key(row).unwrap(), "{inv:bin}:inv:行\u{0}\r\n:1");
    harness::assert_undecodable_changes_nothing(&mut con, |c| rows.get::<String>(row).run(c));

    // Stored directly, as a worker of its own would.
    let other: Vec<u8> = vec![0, 255, 254, 0];
    assert!(rows.store(row, other.clone()).run(&mut con).unwrap());
    let got: Option<Vec<u8>> = rows.get(row).run(&mut con).unwrap();
    assert_eq!(got, Some(other));
    let schedule: Vec<Vec<u8>> = redis::cmd("ZRANGE")
        .arg("{inv:bin}:schedule")
        .arg(0)
        .arg(-1)
        .query(&mut con)
        .unwrap();
    assert_eq!(schedule, [row.as_bytes()]);

    // Unscheduling deletes the copy: nothing of the row is left.
    rows.unschedule(row).run(&mut con).unwrap();
    assert!(harness::dump(&mut con).is_empty());
}
