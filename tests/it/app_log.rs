use std::collections::BTreeMap;
use std::thread;

use redis_patterns::Error;
use redis_patterns::app_log::{AppLog, Severity};
use redis_patterns::scripts::app_log as script;

use crate::harness::{self, InMode, Transcript, assert_code, assert_invalid, assert_snapshot};
use crate::step;

/// The server's current hour (Unix s of its start).
fn server_hour(con: &mut dyn redis::ConnectionLike) -> u64 {
    harness::server_ms(con) / 1000 / 3600 * 3600
}

/// The book's flow: messages logged to the recent and the common logs, read back; an
/// hour rotated (its start set an hour back, as if the last message came then).
fn scenario(con: &mut dyn redis::ConnectionLike) -> Transcript {
    let mut t = Transcript::default();
    let log = AppLog::new("test").unwrap().with_recent_kept(3).unwrap();
    let before = harness::server_ms(con);
    let _ = t.step(
        "log.log_recent(\"started\", Severity::Info)",
        log.log_recent("started", Severity::Info)
            .in_mode()
            .run(con)
            .map(|ms| ms >= before),
    );
    for message in ["disk full", "disk full", "timeout", "disk full"] {
        let _ = t.step(
            &format!("log.log_common({message:?}, Severity::Error)"),
            log.log_common(message, Severity::Error).in_mode().run(con),
        );
    }
    let entries = log.recent(Severity::Error).in_mode().run(con).unwrap();
    let after = harness::server_ms(con);
    assert!(
        entries
            .iter()
            .all(|e| (before..=after).contains(&e.time_ms)),
        "{entries:?}"
    );
    let messages: Vec<&str> = entries.iter().map(|e| e.message.as_str()).collect();
    t.step(
        "log.recent(Severity::Error): messages, newest first",
        Ok::<_, Error>(messages),
    )
    .unwrap();
    t.note("3 kept (the book's 100)");
    let _ = step!(t, con, log.common(Severity::Error, 10));
    let _ = step!(t, con, log.recent(Severity::Warning));
    let [_, _, start, _, pstart] = log.key_names(Severity::Error);
    let hour = server_hour(con);
    harness::cmd(con, &["SET", &start, &(hour - 3600).to_string()]);
    t.note("the counts' hour set an hour back: the next message rotates them");
    let _ = step!(t, con, log.log_common("timeout", Severity::Error));
    let _ = step!(t, con, log.common(Severity::Error, 10));
    let _ = step!(t, con, log.common_last_hour(Severity::Error, 10));
    let get = |con: &mut dyn redis::ConnectionLike, key: &str| -> u64 {
        redis::cmd("GET").arg(key).query(con).unwrap()
    };
    let held = (get(con, &start), get(con, &pstart));
    t.step(
        "GET start, pstart: the current hour and the one before",
        Ok::<_, Error>(held == (hour, hour - 3600)),
    )
    .unwrap();
    let mut keys = log.key_names(Severity::Error).to_vec();
    keys.extend(log.key_names(Severity::Info));
    for key in keys {
        harness::cmd(con, &["DEL", &key]);
    }
    t
}

#[test]
fn scenario_standalone() {
    let db = harness::fresh_db();
    let recorder = crate::recorder::Recorder::new("app_log");
    let mut con = db.con();
    assert_snapshot("app_log__scenario", &scenario(&mut recorder.con(&mut con)));
    assert!(harness::dump(&mut con).is_empty(), "a key was left behind");
    recorder.finish();
}

#[test]
fn scenario_cluster() {
    assert_snapshot("app_log__scenario", &scenario(&mut harness::cluster_con()));
}

/// The hour of the counts is an hour back, with 7 messages counted then: 16 clients log
/// 50 messages each at once. The first to log rotates, and no one else does: the last
/// hour's counts are exactly the 7, and this hour's count every new message once; the
/// recent log holds its last 100 entries.
#[test]
fn common_logs_rotate_once_and_lose_no_message_under_16_clients() {
    let db = harness::fresh_db();
    let mut con = db.con();
    let log = AppLog::new("race").unwrap();
    let [recent, common, start, _, _] = log.key_names(Severity::Info);
    harness::cmd(&mut con, &["ZADD", &common, "7", "old"]);
    let hour = server_hour(&mut con);
    harness::cmd(&mut con, &["SET", &start, &(hour - 3600).to_string()]);
    let barrier = std::sync::Barrier::new(16);
    thread::scope(|scope| {
        for c in 0..16 {
            let (db, log, barrier) = (&db, &log, &barrier);
            scope.spawn(move || {
                let mut con = db.con();
                barrier.wait();
                for i in 0..50 {
                    log.log_common(&format!("m{}", (c + i) % 5), Severity::Info)
                        .run(&mut con)
                        .unwrap();
                }
            });
        }
    });
    // The test started within an hour of its end (a boundary in between would rotate a
    // second time, rightly): skip the check then.
    if server_hour(&mut con) != hour {
        return;
    }
    assert_eq!(
        log.common_last_hour(Severity::Info, 10)
            .run(&mut con)
            .unwrap(),
        [("old".to_owned(), 7)]
    );
    let counts: BTreeMap<String, u64> = log
        .common(Severity::Info, 10)
        .run(&mut con)
        .unwrap()
        .into_iter()
        .collect();
    let expected: BTreeMap<String, u64> = (0..5).map(|m| (format!("m{m}"), 160)).collect();
    assert_eq!(counts, expected);
    let entries: u64 = redis::cmd("LLEN").arg(&recent).query(&mut con).unwrap();
    assert_eq!(entries, 100);
}

#[test]
fn bad_input_is_refused_and_writes_nothing() {
    let db = harness::fresh_db();
    let mut con = db.con();
    assert_invalid(AppLog::new(""), "name");
    assert_invalid(AppLog::new("a{b"), "name");
    assert_invalid(AppLog::new("a").unwrap().with_recent_kept(0), "keep");
    assert_invalid(AppLog::new("a").unwrap().with_recent_kept(10_001), "keep");
    let log = AppLog::new("bad").unwrap();
    log.log_common("x", Severity::Info).run(&mut con).unwrap();
    assert_invalid(log.common(Severity::Info, 0).run(&mut con), "n");
    // Raw calls: a start that is not an hour is found before anything is written.
    let keys = log.key_names(Severity::Info);
    let [recent, common, start, last, pstart] = keys.each_ref().map(String::as_str);
    for held in ["x", "-1", "1.5", ""] {
        harness::cmd(&mut con, &["SET", start, held]);
        let before = harness::dump(&mut con);
        assert_code(
            harness::eval(
                &mut con,
                &script::COMMON,
                &[common, start, last, pstart, recent],
                &["m", "100"],
            ),
            "BAD_START",
        );
        assert_eq!(harness::dump(&mut con), before);
    }
}
