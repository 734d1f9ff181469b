use std::collections::HashSet;
use std::sync::Arc;
use std::thread;

use redis_patterns::counter::Counter;
use redis_patterns::id_generator::{HashIdGenerator, IdGenerator};

use crate::harness::{self, Transcript, assert_code, assert_invalid, assert_snapshot};
use crate::step;

/// The book's examples (chapter 5), and the 2011 cookbook's `Auid` through the same types.
fn scenario(con: &mut dyn redis::ConnectionLike) -> Transcript {
    let mut t = Transcript::default();
    let ids = IdGenerator::new("UserID").unwrap();
    let _ = step!(t, con, ids.produce());
    let _ = step!(t, con, ids.produce());
    let _ = step!(t, con, ids.reserve(1000));

    let fresh = IdGenerator::new("ArticleID").unwrap();
    let _ = step!(t, con, fresh.reserve(1000));
    let _ = step!(t, con, fresh.reserve(2000));
    let _ = step!(t, con, fresh.produce());
    let _ = step!(t, con, fresh.produce());

    let hashed = HashIdGenerator::new("generators").unwrap();
    let _ = step!(t, con, hashed.produce("user"));
    let _ = step!(t, con, hashed.reserve("article", 10000));
    let _ = step!(t, con, hashed.produce("article"));
    let _ = step!(t, con, hashed.reserve("user", 5));

    t.note("2011 cookbook: Auid('auid:post').incr(), then get()");
    let auid = IdGenerator::new("auid:post").unwrap();
    let _ = step!(t, con, auid.produce());
    let auid_last = Counter::new("auid:post").unwrap();
    let _ = step!(t, con, auid_last.get());
    t
}

#[test]
fn scenario_standalone() {
    let db = harness::fresh_db();
    let recorder = crate::recorder::Recorder::new("id_generator");
    assert_snapshot(
        "id_generator__scenario",
        &scenario(&mut recorder.con(db.con())),
    );
    recorder.finish();
}

#[test]
fn scenario_cluster() {
    assert_snapshot(
        "id_generator__scenario",
        &scenario(&mut harness::cluster_con()),
    );
}

/// 16 clients × 500 ids from each generator: exactly 1..=8000, none twice.
#[test]
fn ids_never_repeat() {
    let db = Arc::new(harness::fresh_db());
    let clients: Vec<_> = (0..16)
        .map(|_| {
            let db = db.clone();
            thread::spawn(move || {
                let mut con = db.con();
                let (ids, hashed) = (
                    IdGenerator::new("ids").unwrap(),
                    HashIdGenerator::new("generators").unwrap(),
                );
                (0..500)
                    .map(|_| {
                        let id = ids.produce().run(&mut con).unwrap();
                        (id, hashed.produce("post").run(&mut con).unwrap())
                    })
                    .collect::<Vec<_>>()
            })
        })
        .collect();
    let produced: Vec<(i64, i64)> = clients
        .into_iter()
        .flat_map(|c| c.join().unwrap())
        .collect();
    for ids in [
        produced.iter().map(|p| p.0).collect::<Vec<_>>(),
        produced.iter().map(|p| p.1).collect(),
    ] {
        assert_eq!(
            ids.iter().collect::<HashSet<_>>().len(),
            8000,
            "an id repeated"
        );
        let mut sorted = ids;
        sorted.sort_unstable();
        assert_eq!(sorted, (1..=8000).collect::<Vec<_>>());
    }
}

/// Keys are checked where the generators are built, and named.
#[test]
fn constructors_refuse_bad_keys() {
    assert_invalid(IdGenerator::new(""), "name");
    assert_invalid(HashIdGenerator::new(""), "key");
}

#[test]
fn bad_input_is_refused_and_writes_nothing() {
    let db = harness::fresh_db();
    let mut con = db.con();
    harness::cmd(&mut con, &["RPUSH", "a:list", "x"]);
    harness::cmd(&mut con, &["SET", "not:number", "abc"]);
    harness::cmd(&mut con, &["HSET", "gens", "bad", "abc"]);
    let before = harness::dump(&mut con);

    assert_invalid(
        IdGenerator::new("ids")
            .unwrap()
            .reserve(u64::MAX)
            .run(&mut con),
        "n",
    );
    assert_invalid(
        HashIdGenerator::new("gens")
            .unwrap()
            .produce("")
            .run(&mut con),
        "name",
    );
    assert_invalid(
        HashIdGenerator::new("gens")
            .unwrap()
            .reserve("a", 1 << 63)
            .run(&mut con),
        "n",
    );

    assert_code(
        IdGenerator::new("a:list").unwrap().produce().run(&mut con),
        "WRONGTYPE",
    );
    assert_code(
        HashIdGenerator::new("a:list")
            .unwrap()
            .produce("a")
            .run(&mut con),
        "WRONGTYPE",
    );
    assert_code(
        IdGenerator::new("not:number")
            .unwrap()
            .produce()
            .run(&mut con),
        "ERR",
    );
    assert_code(
        HashIdGenerator::new("gens")
            .unwrap()
            .produce("bad")
            .run(&mut con),
        "ERR",
    );
    assert!(
        !IdGenerator::new("not:number")
            .unwrap()
            .reserve(7)
            .run(&mut con)
            .unwrap()
    );

    assert_eq!(harness::dump(&mut con), before);
}
