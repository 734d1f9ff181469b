use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread;

use redis_patterns::scripts::vote as script;
use redis_patterns::vote::{Vote, Votes};

use crate::harness::{self, InMode, Rng, Transcript, assert_code, assert_invalid, assert_snapshot};
use crate::step;

/// 2023-11-14 22:13:20 UTC.
const T0: u64 = 1_700_000_000_000;

/// Ranks to 9 decimals: the server's `log10` and `sqrt` come from its own C library.
fn rounded(
    ranks: redis_patterns::Result<Vec<(String, f64)>>,
) -> redis_patterns::Result<Vec<(String, String)>> {
    ranks.map(|r| r.into_iter().map(|(s, x)| (s, format!("{x:.9}"))).collect())
}

fn scenario(con: &mut dyn redis::ConnectionLike) -> Transcript {
    let mut t = Transcript::default();
    let votes = Votes::new("news").unwrap();
    let _ = step!(t, con, votes.post("post:1", Some(T0)));
    let _ = step!(t, con, votes.post("post:2", Some(T0 + 45_000_000)));
    let _ = step!(t, con, votes.up("post:1", "peter"));
    let _ = step!(t, con, votes.up("post:1", "peter"));
    let _ = step!(t, con, votes.up("post:1", "jack"));
    let _ = step!(t, con, votes.down("post:1", "tom"));
    let _ = step!(t, con, votes.is_voted("post:1", "peter"));
    let _ = step!(t, con, votes.is_voted("post:1", "tom"));
    let _ = step!(t, con, votes.is_voted("post:1", "mary"));
    let _ = step!(t, con, votes.down("post:1", "peter"));
    t.note("peter switched from up to down");
    let _ = step!(t, con, votes.up_count("post:1"));
    let _ = step!(t, con, votes.down_count("post:1"));
    let _ = step!(t, con, votes.total("post:1"));
    let _ = step!(t, con, votes.tally("post:1", "peter"));
    let _ = step!(t, con, votes.unvote("post:1", "peter"));
    let _ = step!(t, con, votes.unvote("post:1", "peter"));
    let _ = step!(t, con, votes.up("post:2", "peter"));
    t.step("votes.hot(10)", rounded(votes.hot(10).in_mode().run(con)))
        .unwrap();
    t.step("votes.best(10)", rounded(votes.best(10).in_mode().run(con)))
        .unwrap();
    for user in 0..9 {
        votes
            .up("post:1", format!("fan{user}"))
            .in_mode()
            .run(con)
            .unwrap();
    }
    t.note("9 more up votes on post:1: 10 up, 1 down");
    t.step("votes.hot(10)", rounded(votes.hot(10).in_mode().run(con)))
        .unwrap();
    t.step("votes.best(10)", rounded(votes.best(10).in_mode().run(con)))
        .unwrap();
    let _ = step!(t, con, votes.forget("post:1"));
    let _ = step!(t, con, votes.forget("post:1"));
    t.step("votes.hot(10)", rounded(votes.hot(10).in_mode().run(con)))
        .unwrap();
    let _ = step!(t, con, votes.forget("post:2"));
    t
}

#[test]
fn scenario_standalone() {
    let db = harness::fresh_db();
    let recorder = crate::recorder::Recorder::new("vote");
    let mut con = db.con();
    assert_snapshot("vote__scenario", &scenario(&mut recorder.con(&mut con)));
    assert!(harness::dump(&mut con).is_empty(), "a key was left behind");
    recorder.finish();
}

#[test]
fn scenario_cluster() {
    assert_snapshot("vote__scenario", &scenario(&mut harness::cluster_con()));
}

/// The rankings as the module docs define them.
fn hot(up: u64, down: u64, posted_ms: u64) -> f64 {
    let net = up as f64 - down as f64;
    net.signum() * net.abs().max(1.0).log10() * if net == 0.0 { 0.0 } else { 1.0 }
        + (posted_ms as f64 / 1000.0 - 1_134_028_003.0) / 45_000.0
}

fn wilson(up: u64, down: u64) -> f64 {
    let n = (up + down) as f64;
    if n == 0.0 {
        return 0.0;
    }
    let (p, z) = (up as f64 / n, 1.96_f64);
    (p + z * z / (2.0 * n) - z * ((p * (1.0 - p) + z * z / (4.0 * n)) / n).sqrt())
        / (1.0 + z * z / n)
}

/// 8 clients, each with its own 10 users, vote up, down and back at random on 5
/// subjects, at once, while a watcher checks that no user is ever on both sides: each
/// user's vote is its last one, and both rankings match the final counts.
#[test]
fn votes_never_count_a_user_twice_or_both_ways() {
    let db = harness::fresh_db();
    let votes = Votes::new("storm").unwrap();
    let subjects: Vec<String> = (0..5).map(|s| format!("s{s}")).collect();
    let mut con = db.con();
    for subject in &subjects {
        votes.post(subject, Some(T0)).run(&mut con).unwrap();
    }
    let done = AtomicBool::new(false);
    let rounds = AtomicU64::new(0);
    let expected: BTreeMap<(String, String), Option<Vote>> = thread::scope(|scope| {
        let watcher = scope.spawn(|| {
            let mut con = db.con();
            while !done.load(Ordering::Relaxed) {
                for subject in &subjects {
                    let [up, down] = votes.vote_keys(subject).unwrap();
                    let both: Vec<String> = redis::cmd("SINTER")
                        .arg(&up)
                        .arg(&down)
                        .query(&mut con)
                        .unwrap();
                    assert!(both.is_empty(), "{both:?} voted {subject} both ways");
                }
                rounds.fetch_add(1, Ordering::SeqCst);
            }
        });
        let clients: Vec<_> = (0..8)
            .map(|c| {
                let (db, votes, subjects, rounds) = (&db, &votes, &subjects, &rounds);
                scope.spawn(move || {
                    let mut con = db.con();
                    let mut rng = Rng::new(c);
                    let mut last = BTreeMap::new();
                    // The watcher looks before the votes, and again amid them.
                    harness::wait_for_count(rounds, 1, "the watcher's first round");
                    for n in 0..300 {
                        if n == 150 {
                            harness::wait_for_a_whole_turn(rounds, 1, "a round amid the votes");
                        }
                        let user = format!("c{c}u{}", rng.below(10));
                        let subject = &subjects[rng.below(5) as usize];
                        let vote = match rng.below(3) {
                            0 => {
                                votes.up(subject, &user).run(&mut con).unwrap();
                                Some(Vote::Up)
                            }
                            1 => {
                                votes.down(subject, &user).run(&mut con).unwrap();
                                Some(Vote::Down)
                            }
                            _ => {
                                votes.unvote(subject, &user).run(&mut con).unwrap();
                                None
                            }
                        };
                        last.insert((subject.clone(), user), vote);
                    }
                    last
                })
            })
            .collect();
        let mut expected = BTreeMap::new();
        for client in clients {
            expected.extend(client.join().unwrap());
        }
        done.store(true, Ordering::Relaxed);
        watcher.join().unwrap();
        expected
    });
    for ((subject, user), vote) in &expected {
        assert_eq!(votes.is_voted(subject, user).run(&mut con).unwrap(), *vote);
    }
    let hot_ranks: BTreeMap<String, f64> =
        votes.hot(5).run(&mut con).unwrap().into_iter().collect();
    let best_ranks: BTreeMap<String, f64> =
        votes.best(5).run(&mut con).unwrap().into_iter().collect();
    for subject in &subjects {
        let up = expected
            .iter()
            .filter(|((s, _), v)| s == subject && **v == Some(Vote::Up))
            .count() as u64;
        let down = expected
            .iter()
            .filter(|((s, _), v)| s == subject && **v == Some(Vote::Down))
            .count() as u64;
        let tally = votes.tally(subject, "").run(&mut con).unwrap();
        assert_eq!((tally.up, tally.down), (up, down), "{subject}");
        assert!(
            (hot_ranks[subject] - hot(up, down, T0)).abs() < 1e-9,
            "{subject}"
        );
        assert!(
            (best_ranks[subject] - wilson(up, down)).abs() < 1e-12,
            "{subject}"
        );
    }
}

#[test]
fn bad_input_is_refused_and_writes_nothing() {
    let db = harness::fresh_db();
    let mut con = db.con();
    for namespace in ["", "a}b"] {
        assert_invalid(Votes::new(namespace), "namespace");
    }
    let votes = Votes::new("bad").unwrap();
    votes.up("post:1", "peter").run(&mut con).unwrap();
    let before = harness::dump(&mut con);
    assert_invalid(votes.up("", "peter").run(&mut con), "subject");
    assert_invalid(votes.down("post:1", "").run(&mut con), "user");
    assert_invalid(votes.unvote("post:1", "").run(&mut con), "user");
    assert_invalid(votes.is_voted("post:1", "").run(&mut con), "user");
    assert_invalid(votes.total("").run(&mut con), "subject");
    assert_invalid(
        votes
            .post("post:1", Some(1_000_000_000_000_000))
            .run(&mut con),
        "at",
    );
    assert_invalid(votes.hot(0).run(&mut con), "n");
    assert_invalid(votes.best(0).run(&mut con), "n");
    // Raw calls, as another language makes them.
    let [up, down] = votes.vote_keys("post:1").unwrap();
    let [hot, best] = votes.ranking_keys();
    let keys = [up.as_str(), down.as_str(), "{bad}:posted", hot, best];
    assert_code(
        harness::eval(
            &mut con,
            &script::CAST,
            &keys,
            &["post:1", "peter", "sideways"],
        ),
        "BAD_DIRECTION",
    );
    for at in ["-1", "1e3", "007", "now"] {
        assert_code(
            harness::eval(&mut con, &script::POST, &keys, &["post:1", at]),
            "BAD_AT",
        );
    }
    assert_eq!(harness::dump(&mut con), before);
}

/// Users are bytes: a non-UTF-8 user votes up, switches down, is read back and takes its
/// vote back, and the sets hold its exact bytes; a user that differs in one byte is
/// another user.
#[test]
fn binary_users_round_trip() {
    let db = harness::fresh_db();
    let mut con = db.con();
    let user: &[u8] = b"\xff\x00user";
    let votes = Votes::new("votes:bin").unwrap();
    let [up, down] = votes.vote_keys("s").unwrap();
    let members = |con: &mut redis::Connection, key: &str| -> Vec<Vec<u8>> {
        redis::cmd("SMEMBERS").arg(key).query(con).unwrap()
    };
    votes.post("s", Some(T0)).run(&mut con).unwrap();
    assert!(votes.up("s", user).run(&mut con).unwrap());
    assert!(!votes.up("s", user.to_vec()).run(&mut con).unwrap());
    assert_eq!(members(&mut con, &up), [user]);
    assert_eq!(
        votes.is_voted("s", user).run(&mut con).unwrap(),
        Some(Vote::Up)
    );
    assert_eq!(
        votes.is_voted("s", b"\xfe\x00user").run(&mut con).unwrap(),
        None
    );
    assert!(votes.down("s", user).run(&mut con).unwrap());
    assert!(members(&mut con, &up).is_empty());
    assert_eq!(members(&mut con, &down), [user]);
    let tally = votes.tally("s", user).run(&mut con).unwrap();
    assert_eq!((tally.up, tally.down, tally.mine), (0, 1, Some(Vote::Down)));
    assert!(votes.unvote("s", user).run(&mut con).unwrap());
    assert_eq!(votes.is_voted("s", user).run(&mut con).unwrap(), None);
    assert_eq!(votes.total("s").run(&mut con).unwrap(), 0);
    assert!(votes.forget("s").run(&mut con).unwrap());
    assert!(harness::dump(&mut con).is_empty());
}
