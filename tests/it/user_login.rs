use std::collections::HashMap;
use std::thread;

use redis_patterns::Error;
use redis_patterns::scripts::user_login as script;
use redis_patterns::user_login::UserLogin;

use crate::harness::{self, InMode, Transcript, assert_code, assert_invalid, assert_snapshot};
use crate::step;

/// The cookbook's flow: register names, log in, then the queries.
fn scenario(con: &mut dyn redis::ConnectionLike) -> Transcript {
    let mut t = Transcript::default();
    let logins = UserLogin::new("user_login:site")
        .unwrap()
        .with_recent(3)
        .unwrap();
    t.step("logins.keys()", Ok::<_, Error>(logins.keys()))
        .unwrap();
    let _ = step!(t, con, logins.register("peter", "10086"));
    let _ = step!(t, con, logins.register("jack", "10087"));
    let _ = step!(t, con, logins.register("peter", "99999"));
    let _ = step!(t, con, logins.id_of::<String>("peter"));
    let _ = step!(t, con, logins.id_of::<String>("nobody"));
    let _ = step!(t, con, logins.login::<String>("peter"));
    let _ = step!(t, con, logins.login::<String>("jack"));
    let _ = step!(t, con, logins.login::<String>("peter"));
    let _ = step!(t, con, logins.login::<String>("peter"));
    let _ = step!(t, con, logins.login::<String>("nobody"));
    let _ = step!(t, con, logins.login_count("10086"));
    let _ = step!(t, con, logins.login_count("10087"));
    let _ = step!(t, con, logins.login_count("404"));
    let before = harness::server_ms(con);
    let _ = step!(t, con, logins.login::<String>("jack"));
    let last = logins
        .last_login_ms("10087")
        .in_mode()
        .run(con)
        .unwrap()
        .unwrap();
    t.step(
        "logins.last_login_ms(\"10087\") is the server's time of that login",
        Ok::<_, Error>(last >= before && last <= harness::server_ms(con)),
    )
    .unwrap();
    let _ = step!(t, con, logins.last_login_ms("404"));
    let _ = step!(t, con, logins.recent::<String>(10));
    let _ = step!(t, con, logins.recent::<String>(1));
    let _ = step!(t, con, logins.most_frequent::<String>(10));
    let _ = step!(t, con, logins.most_frequent::<String>(1));
    redis::cmd("DEL").arg(&logins.keys()).exec(con).unwrap();
    t
}

#[test]
fn scenario_standalone() {
    let db = harness::fresh_db();
    let recorder = crate::recorder::Recorder::new("user_login");
    let mut con = db.con();
    assert_snapshot(
        "user_login__scenario",
        &scenario(&mut recorder.con(&mut con)),
    );
    assert!(harness::dump(&mut con).is_empty(), "a key was left behind");
    recorder.finish();
}

#[test]
fn scenario_cluster() {
    assert_snapshot(
        "user_login__scenario",
        &scenario(&mut harness::cluster_con()),
    );
}

/// 16 clients log 5 users in 50 times each, at once: every login is counted, each count
/// is its user's score in the ranking, and the recent list holds the latest 100 (each a
/// registered id).
#[test]
fn no_login_is_lost_under_contention() {
    let db = harness::fresh_db();
    let logins = UserLogin::new("busy").unwrap();
    let mut con = db.con();
    for u in 0..5 {
        assert!(
            logins
                .register(format!("user{u}"), format!("id{u}"))
                .run(&mut con)
                .unwrap()
        );
    }
    let counted: Vec<(String, u64)> = thread::scope(|scope| {
        let clients: Vec<_> = (0..16)
            .map(|c| {
                let (db, logins) = (&db, &logins);
                scope.spawn(move || {
                    let mut con = db.con();
                    (0..50)
                        .map(|i| {
                            let login = logins
                                .login::<String>(&format!("user{}", (c + i) % 5))
                                .run(&mut con)
                                .unwrap()
                                .unwrap();
                            (login.id, login.count)
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        clients
            .into_iter()
            .flat_map(|c| c.join().unwrap())
            .collect()
    });
    // Each user's counts, as the logins saw them, are 1..=its total with none twice.
    let mut seen: HashMap<String, Vec<u64>> = HashMap::new();
    for (id, count) in counted {
        seen.entry(id).or_default().push(count);
    }
    for (id, mut counts) in seen {
        counts.sort_unstable();
        assert_eq!(counts, (1..=160).collect::<Vec<_>>(), "{id}");
        assert_eq!(logins.login_count(&id).run(&mut con).unwrap(), 160);
    }
    let ranking = logins.most_frequent::<String>(10).run(&mut con).unwrap();
    assert_eq!(ranking.len(), 5);
    assert!(ranking.iter().all(|(_, n)| *n == 160));
    let recent = logins.recent::<String>(1000).run(&mut con).unwrap();
    assert_eq!(recent.len(), 100);
    assert!(recent.iter().all(|id| id.starts_with("id")));
}

/// Bad input is refused before any I/O, or by the script with its declared code; either
/// way nothing changes.
#[test]
fn bad_input_is_refused_and_writes_nothing() {
    let db = harness::fresh_db();
    let mut con = db.con();
    let logins = UserLogin::new("bad").unwrap();
    logins.register("peter", "1").run(&mut con).unwrap();
    logins.login::<String>("peter").run(&mut con).unwrap();
    let broken = UserLogin::new("broken").unwrap();
    broken.register("peter", "1").run(&mut con).unwrap();
    harness::cmd(&mut con, &["SET", broken.keys()[3], "not a list"]);
    let before = harness::dump(&mut con);

    for name in ["", "a}b"] {
        assert_invalid(UserLogin::new(name), "name");
    }
    for keep in [0, 10_001] {
        assert_invalid(logins.clone().with_recent(keep), "keep");
    }
    assert_invalid(logins.register("", "1").run(&mut con), "name");
    assert_invalid(logins.register("x", "").run(&mut con), "id");
    assert_invalid(logins.login::<String>("").run(&mut con), "name");
    assert_invalid(logins.id_of::<String>("").run(&mut con), "name");
    assert_invalid(logins.recent::<String>(0).run(&mut con), "n");
    assert_invalid(logins.most_frequent::<String>(0).run(&mut con), "n");
    assert_code(broken.login::<String>("peter").run(&mut con), "WRONGTYPE");
    let keys = logins.keys();
    for keep in ["0", "10001", "1e3", "+5", ""] {
        assert_code(
            harness::eval(&mut con, &script::LOGIN, &keys, &["peter", keep]),
            "BAD_KEEP",
        );
    }
    assert_code(
        harness::eval(&mut con, &script::LOGIN, &keys, &["", "10"]),
        "BAD_USER",
    );
    assert_eq!(harness::dump(&mut con), before);
}

/// Names and ids are bytes: a non-UTF-8 name registered with a non-UTF-8 id logs in and
/// is found by every query byte for byte, and Redis holds the exact bytes. Reading the
/// id as `String` fails: for the read-only queries, with nothing changed.
#[test]
fn binary_names_and_ids_round_trip() {
    let db = harness::fresh_db();
    let mut con = db.con();
    let name: &[u8] = b"\xff\x00name";
    let id: &[u8] = b"\xfe\x00id\r\n";
    let logins = UserLogin::new("user_login:bin").unwrap();
    let [ids, counts, last, recent] = logins.keys().map(str::to_owned);
    assert!(logins.register(name, id).run(&mut con).unwrap());
    assert!(!logins.register(name, "other").run(&mut con).unwrap());
    let got: Option<Vec<u8>> = logins.id_of(name).run(&mut con).unwrap();
    assert_eq!(got.as_deref(), Some(id));
    for n in 1..=2 {
        let login = logins.login::<Vec<u8>>(name).run(&mut con).unwrap();
        let login = login.expect("a registered name");
        assert_eq!((login.id.as_slice(), login.count), (id, n));
    }
    assert!(
        logins
            .login::<Vec<u8>>(b"\xff\x00")
            .run(&mut con)
            .unwrap()
            .is_none()
    );
    assert_eq!(logins.login_count(id).run(&mut con).unwrap(), 2);
    assert_eq!(logins.login_count(b"\xfe\x00").run(&mut con).unwrap(), 0);
    assert!(logins.last_login_ms(id).run(&mut con).unwrap().is_some());
    let latest: Vec<Vec<u8>> = logins.recent(10).run(&mut con).unwrap();
    assert_eq!(latest, [id, id]);
    let ranking: Vec<(Vec<u8>, u64)> = logins.most_frequent(10).run(&mut con).unwrap();
    assert_eq!(ranking, [(id.to_vec(), 2)]);

    // The keyspace holds the exact bytes.
    let in_ids: Vec<(Vec<u8>, Vec<u8>)> = redis::cmd("HGETALL").arg(&ids).query(&mut con).unwrap();
    assert_eq!(in_ids, [(name.to_vec(), id.to_vec())]);
    let in_counts: Vec<(Vec<u8>, u64)> = harness::zset_with_scores(&mut con, &counts);
    assert_eq!(in_counts, [(id.to_vec(), 2)]);
    let in_last: Vec<Vec<u8>> = redis::cmd("HKEYS").arg(&last).query(&mut con).unwrap();
    assert_eq!(in_last, [id]);
    let in_recent: Vec<Vec<u8>> = redis::cmd("LRANGE")
        .arg(&recent)
        .arg(0)
        .arg(-1)
        .query(&mut con)
        .unwrap();
    assert_eq!(in_recent, [id, id]);

    harness::assert_undecodable_changes_nothing(&mut con, |c| logins.id_of::<String>(name).run(c));
    harness::assert_undecodable_changes_nothing(&mut con, |c| logins.recent::<String>(10).run(c));
    harness::assert_undecodable_changes_nothing(&mut con, |c| {
        logins.most_frequent::<String>(10).run(c)
    });
    // A login is recorded before its reply decodes (see `UserLogin::login`): counted,
    // then the `String` fails.
    assert!(logins.login::<String>(name).run(&mut con).is_err());
    assert_eq!(logins.login_count(id).run(&mut con).unwrap(), 3);
}
