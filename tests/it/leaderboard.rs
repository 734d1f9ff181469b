use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread;

use redis_patterns::leaderboard::{ADOPT_STEP, Leaderboard, RankPolicy};
use redis_patterns::scripts::leaderboard as script;

use crate::harness::{self, InMode, Rng, Transcript, assert_code, assert_invalid, assert_snapshot};
use crate::step;

const POLICIES: [RankPolicy; 4] = [
    RankPolicy::Standard,
    RankPolicy::Dense,
    RankPolicy::Modified,
    RankPolicy::Ordinal,
];

fn scenario(con: &mut dyn redis::ConnectionLike) -> Transcript {
    let mut t = Transcript::default();
    let board = Leaderboard::new("{game}:all-time").unwrap();
    let _ = step!(t, con, board.set_weight("ann", 100.0));
    let _ = step!(t, con, board.set_weight("bob", 7.9));
    let _ = step!(t, con, board.get_weight("bob"));
    let _ = step!(t, con, board.update_weight("bob", 82.1));
    let _ = step!(t, con, board.set_weight("cat", 90.0));
    let _ = step!(t, con, board.set_weight("dan", 80.0));
    let _ = step!(t, con, board.set_weight("ann", 100.0));
    let _ = step!(t, con, board.length());
    let _ = step!(t, con, board.top::<String>(3));
    let _ = step!(t, con, board.bottom::<String>(2));
    let _ = step!(t, con, board.get_weight("nobody"));
    for item in ["ann", "bob", "cat", "dan"] {
        for policy in POLICIES {
            t.step(
                &format!("board.rank({item:?}, {policy:?})"),
                board.rank(item, policy).in_mode().run(con),
            )
            .unwrap();
        }
    }
    let _ = step!(t, con, board.standing("bob"));
    let _ = step!(t, con, board.standing("nobody"));
    let _ = step!(
        t,
        con,
        board.around::<String>("cat", 1, RankPolicy::Standard)
    );
    let _ = step!(
        t,
        con,
        board.around::<String>("dan", 1, RankPolicy::Modified)
    );
    let _ = step!(
        t,
        con,
        board.around::<String>("nobody", 1, RankPolicy::Dense)
    );

    let weekly = Leaderboard::new("{game}:weekly").unwrap();
    let _ = step!(t, con, weekly.set_weight("bob", 3.0));
    let _ = step!(t, con, weekly.set_weight("eve", 5.0));
    let _ = step!(t, con, Leaderboard::standings(&[&board, &weekly], "bob"));
    let _ = step!(t, con, Leaderboard::standings(&[&board, &weekly], "eve"));

    let _ = step!(t, con, board.remove("cat"));
    let _ = step!(t, con, board.remove("cat"));
    let _ = step!(t, con, board.rank("dan", RankPolicy::Dense));
    let _ = step!(t, con, board.update_weight("dan", -80.0));
    let _ = step!(t, con, board.update_weight("dan", -0.0));
    let _ = step!(t, con, board.set_weight("eve", -0.0));
    let _ = step!(t, con, board.standing("eve"));
    let levels: Vec<(String, f64)> = redis::cmd("ZRANGE")
        .arg(board.levels_key())
        .arg(0)
        .arg(-1)
        .arg("WITHSCORES")
        .query(con)
        .unwrap();
    t.step(
        "ZRANGE {game}:all-time:levels 0 -1 WITHSCORES",
        Ok::<_, redis_patterns::Error>(levels),
    )
    .unwrap();
    redis::cmd("DEL")
        .arg(&[
            board.key(),
            board.levels_key(),
            weekly.key(),
            weekly.levels_key(),
        ])
        .exec(con)
        .unwrap();
    t
}

#[test]
fn scenario_standalone() {
    let db = harness::fresh_db();
    let recorder = crate::recorder::Recorder::new("leaderboard");
    let mut con = db.con();
    assert_snapshot(
        "leaderboard__scenario",
        &scenario(&mut recorder.con(&mut con)),
    );
    assert!(harness::dump(&mut con).is_empty(), "a key was left behind");
    recorder.finish();
}

#[test]
fn scenario_cluster() {
    assert_snapshot(
        "leaderboard__scenario",
        &scenario(&mut harness::cluster_con()),
    );
}

/// A sorted set another app wrote with ZADD, adopted: dense reads are refused until its
/// levels are built, partly built levels answer at and above the cursor, a write through
/// the crate between two steps is kept, and a second adoption adds nothing.
fn adopt_scenario(con: &mut dyn redis::ConnectionLike) -> Transcript {
    let mut t = Transcript::default();
    let board = Leaderboard::new("{game}:imported").unwrap();
    redis::cmd("ZADD")
        .arg(board.key())
        .arg(&[
            "100", "ann", "90", "bob", "90", "cat", "80", "dan", "70", "eve",
        ])
        .exec(con)
        .unwrap();
    t.note("ZADD {game}:imported 100 ann 90 bob 90 cat 80 dan 70 eve (another app's board)");
    let _ = step!(
        t,
        con,
        board.around::<String>("cat", 1, RankPolicy::Standard)
    );
    let _ = step!(t, con, board.around::<String>("cat", 1, RankPolicy::Dense));
    let _ = step!(t, con, board.rank("dan", RankPolicy::Standard));
    let first = step!(t, con, board.adopt_step(None, 2)).unwrap();
    let _ = step!(t, con, board.rank("bob", RankPolicy::Dense));
    let _ = step!(t, con, board.rank("dan", RankPolicy::Dense));
    let _ = step!(t, con, board.set_weight("fay", 85.0));
    let _ = step!(t, con, board.adopt_step(first.next.as_ref(), 2));
    t.step("board.adopt(con)", board.adopt(con)).unwrap();
    let _ = step!(t, con, board.around::<String>("dan", 1, RankPolicy::Dense));
    let _ = step!(t, con, board.standing("eve"));
    t.step("board.adopt(con)", board.adopt(con)).unwrap();
    let levels: Vec<(String, f64)> = harness::zset_with_scores(con, board.levels_key())
        .into_iter()
        .map(|(member, score)| (String::from_utf8(member).unwrap(), score))
        .collect();
    t.step(
        "ZRANGE {game}:imported:levels 0 -1 WITHSCORES",
        Ok::<_, redis_patterns::Error>(levels),
    )
    .unwrap();
    redis::cmd("DEL")
        .arg(&[board.key(), board.levels_key()])
        .exec(con)
        .unwrap();
    t
}

#[test]
fn adopt_scenario_standalone() {
    let db = harness::fresh_db();
    let recorder = crate::recorder::Recorder::new("leaderboard_adopt");
    let mut con = db.con();
    assert_snapshot(
        "leaderboard__adopt",
        &adopt_scenario(&mut recorder.con(&mut con)),
    );
    assert!(harness::dump(&mut con).is_empty(), "a key was left behind");
    recorder.finish();
}

#[test]
fn adopt_scenario_cluster() {
    assert_snapshot(
        "leaderboard__adopt",
        &adopt_scenario(&mut harness::cluster_con()),
    );
}

/// The board's distinct scores, and its `levels`, read in one transaction, as text.
fn scores_and_levels(
    con: &mut redis::Connection,
    board: &Leaderboard,
) -> (BTreeSet<String>, BTreeSet<String>) {
    let (scores, levels) = distinct_scores(con, board);
    let text = |scores: Vec<f64>| scores.iter().map(|s| format!("{s}")).collect();
    (text(scores), text(levels))
}

/// 8 writers set, update and remove 60 items' scores at random (from a few values, so
/// ties abound) while readers ask for the whole board around an item: every answer's
/// ranks are those of the scores in it, by each policy (one moment, not a mix), and the
/// distinct scores never disagree with the board. The board starts with all 60 items, and
/// the readers answer before the writes and again while they run.
#[test]
fn ranks_under_concurrent_updates_are_of_one_moment() {
    let db = harness::fresh_db();
    let board = Leaderboard::new("{race}:board").unwrap();
    for i in 0..60 {
        board
            .set_weight(format!("i{i}"), (i % 8 * 5) as f64)
            .run(&mut db.con())
            .unwrap();
    }
    let done = AtomicBool::new(false);
    let checked = AtomicU64::new(0);
    thread::scope(|scope| {
        let writers: Vec<_> = (0..8)
            .map(|w| {
                let (db, board, checked) = (&db, &board, &checked);
                scope.spawn(move || {
                    let mut con = db.con();
                    let mut rng = Rng::new(w);
                    harness::wait_for_count(checked, 1, "the readers' first answer");
                    for op in 0..400 {
                        if op == 200 {
                            let readers = POLICIES.len() as u64;
                            harness::wait_for_a_whole_turn(
                                checked,
                                readers,
                                "an answer amid the writes",
                            );
                        }
                        let item = format!("i{}", rng.below(60));
                        match rng.below(4) {
                            0 => drop(board.remove(&item).run(&mut con).unwrap()),
                            1 => drop(
                                board
                                    .update_weight(&item, rng.below(3) as f64 - 1.0)
                                    .run(&mut con)
                                    .unwrap(),
                            ),
                            _ => drop(
                                board
                                    .set_weight(&item, (rng.below(8) * 5) as f64)
                                    .run(&mut con)
                                    .unwrap(),
                            ),
                        }
                    }
                })
            })
            .collect();
        let readers: Vec<_> = POLICIES
            .into_iter()
            .map(|policy| {
                let (db, board, done, checked) = (&db, &board, &done, &checked);
                scope.spawn(move || {
                    let mut con = db.con();
                    while !done.load(Ordering::Relaxed) {
                        let (scores, levels) = scores_and_levels(&mut con, board);
                        assert_eq!(scores, levels, "levels disagree with the board");
                        // Around the item ranked 30th, with 100 on each side: the board.
                        let Some(Ok(Some(middle))) = board
                            .top::<String>(30)
                            .run(&mut con)
                            .ok()
                            .and_then(|top| top.last().cloned())
                            .map(|(item, _)| {
                                board.around::<String>(&item, 100, policy).run(&mut con)
                            })
                        else {
                            continue;
                        };
                        let all: Vec<f64> = middle.iter().map(|r| r.score).collect();
                        let mut distinct: Vec<f64> = all.clone();
                        distinct.dedup();
                        for (place, entry) in middle.iter().enumerate() {
                            let higher = all.iter().filter(|s| **s > entry.score).count() as u64;
                            let same = all.iter().filter(|s| **s == entry.score).count() as u64;
                            let expected = match policy {
                                RankPolicy::Standard => higher + 1,
                                RankPolicy::Modified => higher + same,
                                RankPolicy::Dense => {
                                    distinct.iter().filter(|s| **s > entry.score).count() as u64 + 1
                                }
                                RankPolicy::Ordinal => place as u64 + 1,
                            };
                            assert_eq!(entry.rank, expected, "{policy:?}: {middle:?}");
                        }
                        checked.fetch_add(1, Ordering::SeqCst);
                    }
                })
            })
            .collect();
        for w in writers {
            w.join().unwrap();
        }
        done.store(true, Ordering::Relaxed);
        for reader in readers {
            reader.join().unwrap();
        }
    });
    let mut con = db.con();
    let (scores, levels) = scores_and_levels(&mut con, &board);
    assert_eq!(scores, levels);
}

/// The distinct scores of the board and of its levels, read in one transaction.
fn distinct_scores(con: &mut redis::Connection, board: &Leaderboard) -> (Vec<f64>, Vec<f64>) {
    type Scored = Vec<(Vec<u8>, f64)>;
    let (scored, levels): (Scored, Scored) = redis::pipe()
        .atomic()
        .cmd("ZRANGE")
        .arg(board.key())
        .arg(0)
        .arg(-1)
        .arg("WITHSCORES")
        .cmd("ZRANGE")
        .arg(board.levels_key())
        .arg(0)
        .arg(-1)
        .arg("WITHSCORES")
        .query(con)
        .unwrap();
    let mut scores: Vec<f64> = scored.into_iter().map(|(_, s)| s).collect();
    scores.dedup();
    (scores, levels.into_iter().map(|(_, s)| s).collect())
}

/// A board of 400 items another app wrote (50 scores, so ties abound) is adopted in
/// steps of 7 items while 4 writers set, update and remove items through the crate, a
/// whole turn of them between every two steps. After every step the levels at and above
/// the cursor are the board's scores there, and every level is a score the board holds;
/// when the adoption is done, and again when the writers have stopped, the levels are
/// the board's distinct scores.
#[test]
fn adopt_while_others_update() {
    let db = harness::fresh_db();
    let board = Leaderboard::new("{adopt}:board").unwrap();
    let mut zadd = redis::cmd("ZADD");
    zadd.arg(board.key());
    for i in 0..400 {
        zadd.arg((i % 50) * 2).arg(format!("i{i}"));
    }
    zadd.exec(&mut db.con()).unwrap();
    let done = AtomicBool::new(false);
    let writes = AtomicU64::new(0);
    thread::scope(|scope| {
        for w in 0..4 {
            let (db, board, done, writes) = (&db, &board, &done, &writes);
            scope.spawn(move || {
                let mut con = db.con();
                let mut rng = Rng::new(w);
                while !done.load(Ordering::SeqCst) {
                    let item = format!("i{}", rng.below(400));
                    match rng.below(3) {
                        0 => drop(board.remove(&item).run(&mut con).unwrap()),
                        1 => drop(
                            board
                                .update_weight(&item, rng.below(3) as f64 - 1.0)
                                .run(&mut con)
                                .unwrap(),
                        ),
                        _ => drop(
                            board
                                .set_weight(&item, rng.below(120) as f64)
                                .run(&mut con)
                                .unwrap(),
                        ),
                    }
                    writes.fetch_add(1, Ordering::SeqCst);
                }
            });
        }
        let mut con = db.con();
        let mut from = None;
        let mut steps = 0;
        loop {
            let step = board.adopt_step(from.as_ref(), 7).run(&mut con).unwrap();
            steps += 1;
            let Some(next) = step.next else { break };
            harness::wait_for_a_whole_turn(&writes, 4, "writes between two steps");
            let (scores, levels) = distinct_scores(&mut con, &board);
            let cursor = next.score();
            let above = |all: &[f64]| {
                all.iter()
                    .filter(|s| **s >= cursor)
                    .copied()
                    .collect::<Vec<_>>()
            };
            assert_eq!(above(&levels), above(&scores), "at and above {cursor}");
            assert!(
                levels.iter().all(|l| scores.contains(l)),
                "a level of no score: {levels:?} against {scores:?}"
            );
            from = Some(next);
        }
        assert!(steps > 10, "{steps} steps");
        let (scores, levels) = distinct_scores(&mut con, &board);
        assert_eq!(levels, scores, "once adopted");
        done.store(true, Ordering::SeqCst);
    });
    let (scores, levels) = distinct_scores(&mut db.con(), &board);
    assert_eq!(levels, scores, "after the writes");
    assert!(writes.load(Ordering::SeqCst) > 40);
}

#[test]
fn bad_input_is_refused_and_writes_nothing() {
    let db = harness::fresh_db();
    let mut con = db.con();
    for key in ["", "a}b"] {
        assert_invalid(Leaderboard::new(key), "key");
    }
    let board = Leaderboard::new("{bad}:board").unwrap();
    board.set_weight("ann", 1.5).run(&mut con).unwrap();
    let before = harness::dump(&mut con);
    for weight in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
        assert_invalid(board.set_weight("x", weight).run(&mut con), "weight");
        assert_invalid(board.update_weight("ann", weight).run(&mut con), "change");
    }
    assert_invalid(board.top::<String>(0).run(&mut con), "n");
    assert_invalid(board.bottom::<String>(0).run(&mut con), "n");
    for n in [0, 101] {
        assert_invalid(
            board
                .around::<String>("ann", n, RankPolicy::Dense)
                .run(&mut con),
            "n",
        );
    }
    let elsewhere = Leaderboard::new("{other}:board").unwrap();
    assert_invalid(
        Leaderboard::standings(&[&board, &elsewhere], "ann").run(&mut con),
        "boards",
    );
    assert_invalid(Leaderboard::standings(&[], "ann").run(&mut con), "boards");
    let many: Vec<Leaderboard> = (0..11)
        .map(|i| Leaderboard::new(format!("{{bad}}:{i}")).unwrap())
        .collect();
    let many: Vec<&Leaderboard> = many.iter().collect();
    assert_invalid(Leaderboard::standings(&many, "ann").run(&mut con), "boards");

    // Raw calls, as another language makes them.
    let keys = [board.key(), board.levels_key()];
    for weight in ["1e999", "nan", "0x10", " 5", "inf"] {
        assert_code(
            harness::eval(&mut con, &script::SET, &keys, &["x", weight]),
            "BAD_WEIGHT",
        );
    }
    assert_code(
        harness::eval(
            &mut con,
            &script::STANDING,
            &[board.key(), board.levels_key(), "{bad}:x"],
            &["ann"],
        ),
        "BAD_ARGS",
    );
    assert_code(
        harness::eval(&mut con, &script::AROUND, &keys, &["ann", "5", "olympic"]),
        "BAD_POLICY",
    );
    for count in [0, ADOPT_STEP + 1] {
        assert_invalid(board.adopt_step(None, count).run(&mut con), "count");
    }
    // ADOPT_STEP is the header's bound (a header that changes it fails here until the
    // constant follows).
    let count = script::ADOPT
        .args
        .iter()
        .find(|a| a.name == "count")
        .unwrap();
    assert!(
        matches!(count.rule, redis_patterns::Rule::Range { max, .. } if max as u64 == ADOPT_STEP)
    );
    for cursor in ["x", "+5", "nan", "Infinity", " 1", "0x10", "1e+"] {
        assert_code(
            harness::eval(&mut con, &script::ADOPT, &keys, &[cursor, "10"]),
            "BAD_CURSOR",
        );
    }
    assert_eq!(harness::dump(&mut con), before);

    // Another app's score, which the levels lack: dense reads are refused, and write
    // nothing either.
    redis::cmd("ZADD")
        .arg(board.key())
        .arg(7)
        .arg("foreign")
        .exec(&mut con)
        .unwrap();
    let before = harness::dump(&mut con);
    assert_code(
        board
            .around::<String>("foreign", 1, RankPolicy::Dense)
            .run(&mut con),
        "NOT_ADOPTED",
    );
    assert_code(board.standing("foreign").run(&mut con), "NOT_ADOPTED");
    assert_eq!(harness::dump(&mut con), before);
}

/// Items are bytes: a non-UTF-8 item is scored, updated, ranked, read around and removed
/// byte for byte, the board and its levels hold its exact bytes, and reading it as
/// `String` fails and changes nothing.
#[test]
fn binary_items_round_trip() {
    let db = harness::fresh_db();
    let mut con = db.con();
    let item: &[u8] = b"\xff\x00item";
    let board = Leaderboard::new("leaderboard:bin").unwrap();
    assert!(board.set_weight(item, 10.0).run(&mut con).unwrap());
    assert!(board.set_weight("plain", 20.0).run(&mut con).unwrap());
    assert_eq!(board.update_weight(item, 15.0).run(&mut con).unwrap(), 25.0);
    assert_eq!(board.get_weight(item).run(&mut con).unwrap(), Some(25.0));
    assert_eq!(board.get_weight(b"\xff\x00").run(&mut con).unwrap(), None);
    assert_eq!(
        board.rank(item, RankPolicy::Dense).run(&mut con).unwrap(),
        Some(1)
    );
    let standing = board.standing(item).run(&mut con).unwrap().unwrap();
    assert_eq!(
        (standing.score, standing.ordinal, standing.of),
        (25.0, 1, 2)
    );
    let top: Vec<(Vec<u8>, f64)> = board.top(10).run(&mut con).unwrap();
    assert_eq!(top, [(item.to_vec(), 25.0), (b"plain".to_vec(), 20.0)]);
    let bottom: Vec<(Vec<u8>, f64)> = board.bottom(1).run(&mut con).unwrap();
    assert_eq!(bottom, [(b"plain".to_vec(), 20.0)]);
    let around = board
        .around::<Vec<u8>>(item, 1, RankPolicy::Standard)
        .run(&mut con)
        .unwrap()
        .unwrap();
    let around: Vec<(Vec<u8>, u64)> = around.into_iter().map(|r| (r.item, r.rank)).collect();
    assert_eq!(around, [(item.to_vec(), 1), (b"plain".to_vec(), 2)]);
    let in_board: Vec<(Vec<u8>, f64)> = harness::zset_with_scores(&mut con, board.key());
    assert_eq!(in_board, [(b"plain".to_vec(), 20.0), (item.to_vec(), 25.0)]);

    harness::assert_undecodable_changes_nothing(&mut con, |c| board.top::<String>(1).run(c));
    harness::assert_undecodable_changes_nothing(&mut con, |c| {
        board.around::<String>(item, 1, RankPolicy::Dense).run(c)
    });

    assert!(board.remove(item).run(&mut con).unwrap());
    assert!(!board.remove(item).run(&mut con).unwrap());
    assert!(board.remove("plain").run(&mut con).unwrap());
    assert!(harness::dump(&mut con).is_empty());
}
