use std::collections::{BTreeMap, BTreeSet};
use std::thread;
use std::time::Duration;

use redis_patterns::Error;
use redis_patterns::scripts::session as script;
use redis_patterns::session::{
    NewSession, Session, SessionInfo, SessionStore, TokenStatus, session_id,
};

use crate::harness::{self, InMode, Transcript, assert_code, assert_invalid, assert_snapshot};
use crate::step;

const HOUR: Duration = Duration::from_secs(3600);

/// Shows session ids by the names the scenario gave them, and times in whole minutes
/// (rounded up), so the transcript does not depend on random tokens or on how long a
/// step took.
#[derive(Default)]
struct Names(BTreeMap<String, &'static str>);

impl Names {
    fn new_session(&mut self, name: &'static str, created: &NewSession) -> String {
        self.0.insert(created.token.id(), name);
        format!(
            "session {name}: a token of {} hex digits, evicted {:?}",
            created.token.as_str().len(),
            self.ids(&created.evicted)
        )
    }

    fn ids(&self, ids: &[String]) -> Vec<&'static str> {
        ids.iter()
            .map(|id| self.0.get(id).copied().unwrap_or("?"))
            .collect()
    }

    fn list(&self, list: &[SessionInfo]) -> Vec<(&'static str, u64)> {
        list.iter()
            .map(|s| (self.0[&s.id], minutes(s.expires_in)))
            .collect()
    }
}

fn minutes(d: Duration) -> u64 {
    d.as_millis().div_ceil(60_000) as u64
}

fn scenario(con: &mut dyn redis::ConnectionLike) -> Transcript {
    let mut t = Transcript::default();

    // The book: one session per user.
    let book = Session::new("peter").unwrap();
    let _ = step!(t, con, book.validate("anything"));
    let first = book.create().in_mode().run(con).unwrap();
    t.step(
        "book.create()",
        Ok::<_, Error>(format!("a token of {} hex digits", first.as_str().len())),
    )
    .unwrap();
    let ttl: u64 = redis::cmd("PTTL").arg(book.key()).query(con).unwrap();
    t.step(
        "PTTL User:peter:token, in days (rounded up)",
        Ok::<_, Error>(ttl.div_ceil(86_400_000)),
    )
    .unwrap();
    t.step(
        "book.validate(first)",
        book.validate(first.as_str()).in_mode().run(con),
    )
    .unwrap();
    let forged = "0".repeat(64);
    let _ = step!(t, con, book.validate(&forged));
    let second = book.create().in_mode().run(con).unwrap();
    t.note("book.create() again: a second login replaces the first");
    t.step(
        "book.validate(first)",
        book.validate(first.as_str()).in_mode().run(con),
    )
    .unwrap();
    t.step(
        "book.validate(second)",
        book.validate(second.as_str()).in_mode().run(con),
    )
    .unwrap();
    let _ = step!(t, con, book.destroy());
    let _ = step!(t, con, book.validate(second.as_str()));
    let _ = step!(t, con, book.destroy());

    // Beyond the book: several sessions per user.
    let store = SessionStore::new("sessions")
        .unwrap()
        .with_ttl(HOUR)
        .unwrap()
        .with_cap(2)
        .unwrap();
    let mut names = Names::default();
    let a = store.create("peter").in_mode().run(con).unwrap();
    t.step(
        "store.create(\"peter\")",
        Ok::<_, Error>(names.new_session("a", &a)),
    )
    .unwrap();
    let b = store.create("peter").in_mode().run(con).unwrap();
    t.step(
        "store.create(\"peter\")",
        Ok::<_, Error>(names.new_session("b", &b)),
    )
    .unwrap();
    let (a, b) = (a.token.as_str(), b.token.as_str());
    t.step(
        "store.load(\"peter\", b): data",
        store
            .load("peter", b)
            .in_mode()
            .run(con)
            .map(|s| s.map(|s| s.fields)),
    )
    .unwrap();
    // Each deadline below is at least a millisecond after the one before, so the order of
    // sessions (by deadline) does not depend on their random ids.
    harness::wait_server(con, Duration::from_millis(1));
    t.step(
        "store.validate(\"peter\", a)",
        store.validate("peter", a).in_mode().run(con),
    )
    .unwrap();
    let _ = step!(t, con, store.validate("peter", "forged"));
    let _ = step!(t, con, store.validate("jack", "forged"));
    t.step(
        "store.set(\"peter\", a, theme = dark, lang = zh)",
        store
            .set("peter", a, &[("theme", "dark"), ("lang", "zh")])
            .in_mode()
            .run(con),
    )
    .unwrap();
    let _ = step!(t, con, store.set("peter", "forged", &[("theme", "light")]));
    t.step(
        "store.load(\"peter\", a): minutes left, data",
        store
            .load("peter", a)
            .in_mode()
            .run(con)
            .map(|s| s.map(|s| (minutes(s.expires_in), s.fields))),
    )
    .unwrap();
    t.step(
        "store.unset(\"peter\", a, [lang])",
        store.unset("peter", a, &["lang"]).in_mode().run(con),
    )
    .unwrap();
    t.step(
        "store.load(\"peter\", a): theme",
        store
            .load("peter", a)
            .in_mode()
            .run(con)
            .and_then(|s| s.expect("a live session").get::<String>("theme")),
    )
    .unwrap();
    let _ = step!(t, con, store.load("peter", "forged"));
    t.step(
        "store.list(\"peter\"): minutes left",
        store
            .list("peter")
            .in_mode()
            .run(con)
            .map(|l| names.list(&l)),
    )
    .unwrap();
    t.note("a was used after b: b is the least recently used");
    harness::wait_server(con, Duration::from_millis(1));
    let c = store.create("peter").in_mode().run(con).unwrap();
    t.step(
        "store.create(\"peter\")",
        Ok::<_, Error>(names.new_session("c", &c)),
    )
    .unwrap();
    t.step(
        "store.validate(\"peter\", b)",
        store.validate("peter", b).in_mode().run(con),
    )
    .unwrap();
    t.step(
        "store.list(\"peter\")",
        store
            .list("peter")
            .in_mode()
            .run(con)
            .map(|l| names.list(&l)),
    )
    .unwrap();
    t.step(
        "store.end(\"peter\", c's id)",
        store.end("peter", &c.token.id()).in_mode().run(con),
    )
    .unwrap();
    t.step(
        "store.end(\"peter\", c's id)",
        store.end("peter", &c.token.id()).in_mode().run(con),
    )
    .unwrap();
    t.step(
        "store.end_token(\"peter\", a)",
        store.end_token("peter", a).in_mode().run(con),
    )
    .unwrap();
    t.step(
        "store.validate(\"peter\", a)",
        store.validate("peter", a).in_mode().run(con),
    )
    .unwrap();
    let d = store.create("peter").in_mode().run(con).unwrap();
    t.step(
        "store.create(\"peter\")",
        Ok::<_, Error>(names.new_session("d", &d)),
    )
    .unwrap();
    let _ = step!(t, con, store.end_all("peter"));
    t.step(
        "store.validate(\"peter\", d)",
        store.validate("peter", d.token.as_str()).in_mode().run(con),
    )
    .unwrap();
    let _ = step!(t, con, store.end_all("peter"));

    // Expiry: the user's keys go with the last session.
    let short = store
        .create_for("tom", Duration::from_millis(100))
        .in_mode()
        .run(con)
        .unwrap();
    t.note("store.create_for(\"tom\", 100 ms), then the server's clock passes it");
    harness::wait_server(con, Duration::from_millis(100));
    t.step(
        "store.validate(\"tom\", its token)",
        store
            .validate("tom", short.token.as_str())
            .in_mode()
            .run(con),
    )
    .unwrap();
    let [sessions, records] = store.keys("tom").unwrap();
    harness::wait_until_gone(con, &sessions);
    harness::wait_until_gone(con, &records);
    t.note("both of tom's keys have expired");
    t
}

#[test]
fn scenario_standalone() {
    let db = harness::fresh_db();
    let recorder = crate::recorder::Recorder::new("session");
    let mut con = db.con();
    assert_snapshot("session__scenario", &scenario(&mut recorder.con(&mut con)));
    assert!(harness::dump(&mut con).is_empty(), "a key was left behind");
    recorder.finish();
}

#[test]
fn scenario_cluster() {
    assert_snapshot("session__scenario", &scenario(&mut harness::cluster_con()));
}

#[test]
fn a_session_id_is_the_sha1_the_scripts_compute() {
    assert_eq!(
        session_id("abc"),
        "a9993e364706816aba3e25717850c26c9cd0d89d"
    );
    let db = harness::fresh_db();
    let mut con = db.con();
    let store = SessionStore::new("ids").unwrap();
    let created = store.create("peter").run(&mut con).unwrap();
    let listed = store.list("peter").run(&mut con).unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].id, created.token.id());
    assert_eq!(created.token.as_str().len(), 64);
    assert!(
        created
            .token
            .as_str()
            .bytes()
            .all(|b| b.is_ascii_hexdigit())
    );
    // What a log line shows of a token is its id.
    let shown = format!("{:?}", created.token);
    assert!(shown.contains(&created.token.id()) && !shown.contains(created.token.as_str()));
}

/// Data ends with its session, however the session ends: evicted, ended, or expired.
#[test]
fn data_ends_with_its_session() {
    let db = harness::fresh_db();
    let mut con = db.con();
    let store = SessionStore::new("data").unwrap().with_cap(1).unwrap();
    let [_, records] = store.keys("peter").unwrap();
    let fields = |con: &mut redis::Connection| -> BTreeSet<String> {
        redis::cmd("HKEYS").arg(&records).query(con).unwrap()
    };
    let first = store.create("peter").run(&mut con).unwrap();
    let first = first.token.as_str();
    store
        .set("peter", first, &[("cart", "3 books")])
        .run(&mut con)
        .unwrap();
    let id = session_id(first);
    assert_eq!(
        fields(&mut con),
        BTreeSet::from([format!("d:{id}"), format!("t:{id}")])
    );

    // Evicted by the cap.
    let second = store.create("peter").run(&mut con).unwrap();
    assert_eq!(second.evicted, vec![id]);
    let second = second.token.as_str();
    assert_eq!(
        fields(&mut con),
        BTreeSet::from([format!("t:{}", session_id(second))])
    );
    assert_eq!(
        store
            .set("peter", first, &[("cart", "x")])
            .run(&mut con)
            .unwrap(),
        TokenStatus::Incorrect
    );

    // Ended.
    store
        .set("peter", second, &[("cart", "1 pen")])
        .run(&mut con)
        .unwrap();
    assert!(store.end_token("peter", second).run(&mut con).unwrap());
    assert!(harness::dump(&mut con).is_empty());

    // Expired: forgotten by the next write of the user, even before the keys expire.
    let lasting = store.clone().with_cap(2).unwrap();
    let brief = lasting
        .create_for("peter", Duration::from_millis(50))
        .run(&mut con)
        .unwrap();
    lasting
        .set("peter", brief.token.as_str(), &[("cart", "2 cups")])
        .run(&mut con)
        .unwrap();
    harness::wait_server(&mut con, Duration::from_millis(50));
    let next = lasting.create("peter").run(&mut con).unwrap();
    assert!(next.evicted.is_empty(), "an expired session is not evicted");
    assert_eq!(
        fields(&mut con),
        BTreeSet::from([format!("t:{}", next.token.id())])
    );
}

/// Validated every 100 ms: with sliding, each correct validation moves the deadline to
/// the server's now plus the ttl, and the session outlives its first deadline; without,
/// the deadline stays and the session ends there. Each answer is checked against the
/// deadline the server had, with the server's clock read around the call, so a client
/// that waits long for a turn sees an answer the model explains; a sliding session that
/// ran out that way is started again until one outlives its first deadline.
#[test]
fn validation_slides_the_expiry_unless_turned_off() {
    let db = harness::fresh_db();
    let mut con = db.con();
    const TTL: u64 = 400;
    for sliding in [true, false] {
        let store = SessionStore::new("slide")
            .unwrap()
            .with_ttl(Duration::from_millis(TTL))
            .unwrap()
            .with_sliding(sliding);
        let [sessions, _] = store.keys("peter").unwrap();
        for attempt in 0.. {
            assert!(
                attempt < 20,
                "no sliding session outlived its first deadline"
            );
            let token = store.create("peter").run(&mut con).unwrap().token;
            let deadline_of = |con: &mut redis::Connection| -> Option<u64> {
                redis::cmd("ZSCORE")
                    .arg(&sessions)
                    .arg(token.id())
                    .query(con)
                    .unwrap()
            };
            let first = deadline_of(&mut con).unwrap();
            let mut deadline = first;
            let outlived = loop {
                let before = harness::server_ms(&mut con);
                let answer = store
                    .validate("peter", token.as_str())
                    .run(&mut con)
                    .unwrap();
                let after = harness::server_ms(&mut con);
                // The script decides at one instant between `before` and `after`.
                if after < deadline {
                    assert!(answer.is_correct(), "{answer:?} before the deadline");
                } else if before >= deadline {
                    assert_eq!(answer, TokenStatus::NotExists, "after the deadline");
                }
                if !answer.is_correct() {
                    break false;
                }
                let now = deadline_of(&mut con).unwrap();
                if sliding {
                    let range = before + TTL..=after + TTL;
                    assert!(range.contains(&now), "slid to {now}, not within {range:?}");
                    // The key lives as long as the session.
                    let pttl: i64 = redis::cmd("PTTL").arg(&sessions).query(&mut con).unwrap();
                    assert!(pttl <= TTL as i64, "the key outlives the session: {pttl}");
                    if before >= first {
                        break true;
                    }
                } else {
                    assert_eq!(now, first, "the deadline moved without sliding");
                }
                deadline = now;
                thread::sleep(Duration::from_millis(100));
            };
            store.end_all("peter").run(&mut con).unwrap();
            if outlived || !sliding {
                break;
            }
        }
    }
}

/// 8 clients start 40 sessions each for one user whose cap is 5, while others validate,
/// set data and end sessions, and a watcher reads the user's keys in transactions: the
/// index never holds more than 5 sessions, and never disagrees with the records.
#[test]
fn the_cap_holds_at_every_instant_under_contention() {
    const CAP: usize = 5;
    let db = harness::fresh_db();
    let store = SessionStore::new("capped")
        .unwrap()
        .with_cap(CAP as u64)
        .unwrap();
    let done = std::sync::atomic::AtomicBool::new(false);
    let snapshots = std::sync::atomic::AtomicU64::new(0);
    let (created, evicted) = thread::scope(|scope| {
        let watcher = scope.spawn(|| {
            let mut con = db.con();
            while !done.load(std::sync::atomic::Ordering::Relaxed) {
                let sessions = assert_consistent(&mut con, &store);
                assert!(sessions <= CAP, "{sessions} sessions");
                snapshots.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            }
        });
        let clients: Vec<_> = (0..8)
            .map(|c| {
                let (db, store, snapshots) = (&db, &store, &snapshots);
                scope.spawn(move || {
                    let mut con = db.con();
                    let mut created = Vec::new();
                    let mut evicted = Vec::new();
                    // The watcher looks before the sessions start, and again amid them.
                    harness::wait_for_count(snapshots, 1, "the watcher's first look");
                    for i in 0..40 {
                        if i == 20 {
                            harness::wait_for_a_whole_turn(
                                snapshots,
                                1,
                                "a look amid the sessions",
                            );
                        }
                        let new = store.create("peter").run(&mut con).unwrap();
                        let token = new.token.as_str();
                        evicted.extend(new.evicted.clone());
                        let _ = store.validate("peter", token).run(&mut con).unwrap();
                        let _ = store
                            .set("peter", token, &[("client", c)])
                            .run(&mut con)
                            .unwrap();
                        if i % 10 == 9 {
                            // Ended by its own client: not evicted later.
                            if store.end_token("peter", token).run(&mut con).unwrap() {
                                evicted.push(new.token.id());
                            }
                        }
                        created.push(new.token.id());
                    }
                    (created, evicted)
                })
            })
            .collect();
        let mut created = Vec::new();
        let mut evicted = Vec::new();
        for client in clients {
            let (c, e) = client.join().unwrap();
            created.extend(c);
            evicted.extend(e);
        }
        done.store(true, std::sync::atomic::Ordering::Relaxed);
        watcher.join().unwrap();
        (created, evicted)
    });
    let mut con = db.con();
    let live = store.list("peter").run(&mut con).unwrap();
    assert!(live.len() <= CAP);
    // Each session ended once (evicted, or ended by its client), or is still live.
    let ended: BTreeSet<&String> = evicted.iter().collect();
    assert_eq!(ended.len(), evicted.len(), "a session was ended twice");
    assert_eq!(evicted.len() + live.len(), created.len());
    for s in &live {
        assert!(created.contains(&s.id) && !ended.contains(&s.id));
    }
    assert_consistent(&mut con, &store);
}

/// Reads peter's index and records in one transaction: every session in the index has
/// its ttl record, and every record belongs to a session in the index. Returns how many
/// sessions the index holds.
fn assert_consistent(con: &mut redis::Connection, store: &SessionStore) -> usize {
    let [sessions, records] = store.keys("peter").unwrap();
    let (index, fields): (Vec<String>, Vec<String>) = redis::pipe()
        .atomic()
        .cmd("ZRANGE")
        .arg(&sessions)
        .arg(0)
        .arg(-1)
        .cmd("HKEYS")
        .arg(&records)
        .query(con)
        .unwrap();
    let ids: BTreeSet<&str> = index.iter().map(String::as_str).collect();
    let with_ttl: BTreeSet<&str> = fields.iter().filter_map(|f| f.strip_prefix("t:")).collect();
    assert_eq!(with_ttl, ids, "the index and the records disagree");
    for f in fields {
        let id = f.split_once(':').map(|(_, id)| id).unwrap_or("");
        assert!(ids.contains(id), "a record of no session: {f}");
    }
    index.len()
}

/// Bad input is refused before any I/O, or by the script with its declared code; either
/// way nothing changes.
#[test]
fn bad_input_is_refused_and_writes_nothing() {
    let db = harness::fresh_db();
    let mut con = db.con();
    let store = SessionStore::new("bad").unwrap().with_cap(3).unwrap();
    let token = store.create("peter").run(&mut con).unwrap().token;
    let token = token.as_str();
    store
        .set("peter", token, &[("a", "1")])
        .run(&mut con)
        .unwrap();
    let book = Session::new("peter").unwrap();
    book.create().run(&mut con).unwrap();
    let before = harness::dump(&mut con);

    assert_invalid(Session::new(""), "uid");
    for namespace in ["", "a}b"] {
        assert_invalid(SessionStore::new(namespace), "namespace");
    }
    assert_invalid(store.clone().with_cap(0), "cap");
    assert_invalid(store.clone().with_cap(1001), "cap");
    assert_invalid(store.clone().with_ttl(Duration::ZERO), "ttl");
    assert_invalid(
        book.create_for(Duration::from_micros(999)).run(&mut con),
        "ttl",
    );
    assert_invalid(store.create("").run(&mut con), "uid");
    assert_invalid(store.create("a}b").run(&mut con), "uid");
    assert_invalid(
        store.create_for("peter", Duration::ZERO).run(&mut con),
        "ttl",
    );
    assert_invalid(store.validate("peter", "").run(&mut con), "token");
    assert_invalid(store.load("", token).run(&mut con), "uid");
    let many: Vec<(&str, &str)> = vec![("n", "v"); 101];
    assert_invalid(store.set("peter", token, &many).run(&mut con), "fields");
    assert_invalid(
        store.set::<&str>("peter", token, &[]).run(&mut con),
        "fields",
    );
    assert_invalid(store.unset("peter", token, &[]).run(&mut con), "names");
    assert_invalid(
        store.unset("peter", token, &["n"; 101]).run(&mut con),
        "names",
    );

    // Data beyond its bounds: all of a set is refused.
    let big = vec![b'x'; 65_534];
    assert_code(
        store
            .set("peter", token, &[("big", big.as_slice())])
            .run(&mut con),
        "DATA_TOO_BIG",
    );
    assert_eq!(harness::dump(&mut con), before);
    // 65,536 bytes of names and values in all ("a" = "1" and "big" included) is the most.
    let most = vec![b'x'; 65_531];
    assert_eq!(
        store
            .set("peter", token, &[("big", most.as_slice())])
            .run(&mut con)
            .unwrap(),
        TokenStatus::Correct
    );
    store.unset("peter", token, &["big"]).run(&mut con).unwrap();
    let names: Vec<String> = (0..255).map(|i| format!("f{i}")).collect();
    for chunk in names.chunks(100) {
        let fields: Vec<(&str, &str)> = chunk.iter().map(|n| (n.as_str(), "v")).collect();
        store.set("peter", token, &fields).run(&mut con).unwrap();
    }
    let full = harness::dump(&mut con);
    // "a" and f0 to f254 are 256 fields: one more is refused, a new value is not.
    assert_code(
        store.set("peter", token, &[("f255", "v")]).run(&mut con),
        "DATA_TOO_BIG",
    );
    assert_eq!(harness::dump(&mut con), full);
    let reader = store.clone().with_sliding(false);
    let data = reader.load("peter", token).run(&mut con).unwrap().unwrap();
    assert_eq!(data.fields.len(), 256);
    store
        .set("peter", token, &[("f0", "w")])
        .run(&mut con)
        .unwrap();
    for chunk in names.chunks(100) {
        let names: Vec<&str> = chunk.iter().map(String::as_str).collect();
        store.unset("peter", token, &names).run(&mut con).unwrap();
    }
    let data = reader.load("peter", token).run(&mut con).unwrap().unwrap();
    assert_eq!(data.fields, BTreeMap::from([("a".into(), b"1".to_vec())]));
    let before = harness::dump(&mut con);

    // Raw calls, as another language makes them.
    let [sessions, records] = store.keys("peter").unwrap();
    let keys = [sessions.as_str(), records.as_str()];
    assert_code(
        harness::eval(&mut con, &script::SET, &keys, &[token, "a", "1", "b"]),
        "BAD_FIELDS",
    );
    assert_code(
        harness::eval(&mut con, &script::CREATE, &keys, &[token, "1000", "3"]),
        "TOKEN_TAKEN",
    );
    for cap in ["0", "1001", "007", "+5", "1e3"] {
        assert_code(
            harness::eval(
                &mut con,
                &script::CREATE,
                &keys,
                &["0123456789abcdef", "1000", cap],
            ),
            "BAD_CAP",
        );
    }
    // A token too short to hold 128 random bits.
    for short in ["x", "0123456789abcde"] {
        assert_code(
            harness::eval(&mut con, &script::CREATE, &keys, &[short, "1000", "3"]),
            "BAD_TOKEN",
        );
    }
    assert_eq!(harness::dump(&mut con), before);

    // A record that these scripts did not write is refused, and nothing changes.
    let id = session_id(token);
    for (field, value) in [(format!("d:{id}"), "not msgpack"), (format!("t:{id}"), "x")] {
        harness::cmd(&mut con, &["HSET", &records, &field, value]);
        let before = harness::dump(&mut con);
        assert_code(store.load("peter", token).run(&mut con), "BAD_RECORD");
        if field.starts_with("d:") {
            assert_code(
                store.set("peter", token, &[("a", "2")]).run(&mut con),
                "BAD_RECORD",
            );
            assert_code(
                store.unset("peter", token, &["a"]).run(&mut con),
                "BAD_RECORD",
            );
        } else {
            assert_code(store.validate("peter", token).run(&mut con), "BAD_RECORD");
        }
        assert_eq!(harness::dump(&mut con), before);
    }
}
