use std::collections::HashSet;

use redis_patterns::log::Log;

use crate::harness::{self, Transcript, assert_code, assert_invalid, assert_snapshot};
use crate::step;

/// The 2011 cookbook's recipe: append, read, length, keep, clear; and `keep(0)`, which
/// the cookbook gets wrong.
fn scenario(con: &mut dyn redis::ConnectionLike) -> Transcript {
    let mut t = Transcript::default();
    harness::cmd(con, &["DEL", "log:app"]);
    let log = Log::new("log:app").unwrap();
    let _ = step!(t, con, log.append("start"));
    let _ = step!(t, con, log.append("login peter"));
    let _ = step!(t, con, log.append("logout peter"));
    let _ = step!(t, con, log.append("stop"));
    let _ = step!(t, con, log.read::<String>(0, -1));
    let _ = step!(t, con, log.read::<String>(0, 1));
    let _ = step!(t, con, log.read::<String>(-1, -1));
    let _ = step!(t, con, log.length());
    let _ = step!(t, con, log.keep(10));
    let _ = step!(t, con, log.length());
    let _ = step!(t, con, log.keep(2));
    let _ = step!(t, con, log.read::<String>(0, -1));
    let _ = step!(t, con, log.keep(0));
    let _ = step!(t, con, log.length());
    let _ = step!(t, con, log.append("again"));
    let _ = step!(t, con, log.clear());
    let _ = step!(t, con, log.clear());
    let _ = step!(t, con, log.read::<String>(0, -1));
    t
}

#[test]
fn scenario_standalone() {
    let db = harness::fresh_db();
    let recorder = crate::recorder::Recorder::new("log");
    assert_snapshot("log__scenario", &scenario(&mut recorder.con(db.con())));
    recorder.finish();
}

#[test]
fn scenario_cluster() {
    assert_snapshot("log__scenario", &scenario(&mut harness::cluster_con()));
}

/// 8 writers × 100 appends: the lengths they get back are 1 to 800, each once, and the
/// log holds every entry once, each writer's newest first.
#[test]
fn appends_are_neither_lost_nor_doubled() {
    let db = harness::fresh_db();
    let log = Log::new("log").unwrap();
    let lengths: Vec<u64> = std::thread::scope(|s| {
        let writers: Vec<_> = (0..8)
            .map(|w| {
                let (log, db) = (&log, &db);
                s.spawn(move || {
                    let mut con = db.con();
                    (0..100)
                        .map(|i| log.append(format!("w{w}:{i:03}")).run(&mut con).unwrap())
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        writers
            .into_iter()
            .flat_map(|w| w.join().unwrap())
            .collect()
    });
    let unique: HashSet<u64> = lengths.iter().copied().collect();
    assert_eq!(unique, (1..=800).collect());
    let entries: Vec<String> = log.read(0, -1).run(&mut db.con()).unwrap();
    assert_eq!(entries.len(), 800);
    assert_eq!(entries.iter().collect::<HashSet<_>>().len(), 800);
    for w in 0..8 {
        let mine: Vec<&String> = entries
            .iter()
            .filter(|e| e.starts_with(&format!("w{w}:")))
            .collect();
        assert_eq!(mine.len(), 100);
        assert!(mine.windows(2).all(|pair| pair[0] > pair[1]), "writer {w}");
    }
}

#[test]
fn bad_input_is_refused_and_writes_nothing() {
    let db = harness::fresh_db();
    let mut con = db.con();
    harness::cmd(&mut con, &["LPUSH", "log", "a", "b"]);
    harness::cmd(&mut con, &["SET", "a:string", "x"]);
    let before = harness::dump(&mut con);

    assert_invalid(Log::new(""), "name");
    assert_invalid(Log::new("log").unwrap().keep(u64::MAX).run(&mut con), "n");

    let wrong = Log::new("a:string").unwrap();
    assert_code(wrong.append("a").run(&mut con), "WRONGTYPE");
    assert_code(wrong.read::<String>(0, -1).run(&mut con), "WRONGTYPE");
    assert_code(wrong.length().run(&mut con), "WRONGTYPE");
    assert_code(wrong.keep(1).run(&mut con), "WRONGTYPE");

    assert_eq!(harness::dump(&mut con), before);
}

/// Entries are bytes: a non-UTF-8 one is appended and read back unchanged; reading the
/// log as `String`s fails and changes nothing.
#[test]
fn binary_entries_round_trip() {
    let db = harness::fresh_db();
    let mut con = db.con();
    let bin = harness::NOT_UTF8;
    let log = Log::new("log:bin").unwrap();
    log.append("text").run(&mut con).unwrap();
    assert_eq!(log.append(bin).run(&mut con).unwrap(), 2);
    let entries: Vec<Vec<u8>> = log.read(0, -1).run(&mut con).unwrap();
    assert_eq!(entries, [bin.to_vec(), b"text".to_vec()]);
    harness::assert_undecodable_changes_nothing(&mut con, |c| log.read::<String>(0, -1).run(c));
}
