use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::thread;
use std::time::Duration;

use redis_patterns::identity_lock::{Holding, IdentityLock};
use redis_patterns::scripts::identity_lock as script;
use redis_patterns::server::{Capability, Server};

use crate::harness::{self, InMode, Transcript, assert_code, assert_invalid, assert_snapshot};
use crate::step;

/// The book's example (chapter 4), then what the book cannot do: leases, extend, and a
/// stale holder that cannot free its successor's lock.
fn scenario(con: &mut dyn redis::ConnectionLike, native: Option<&Server>) -> Transcript {
    let mut t = Transcript::default();
    let lock = lock_on("IdentityLock:10086", native);
    let _ = step!(t, con, lock.acquire("top_secret", None));
    let _ = step!(t, con, lock.acquire("wrong_password", None));
    let _ = step!(t, con, lock.release("wrong_password"));
    let _ = step!(t, con, lock.lease("top_secret"));
    let _ = step!(t, con, lock.release("top_secret"));
    let _ = step!(t, con, lock.release("top_secret"));

    let _ = step!(
        t,
        con,
        lock.acquire("alice", Some(Duration::from_millis(1000)))
    );
    let _ = step!(t, con, lock.extend("bob", Duration::from_secs(60)));
    let _ = step!(t, con, lock.extend("alice", Duration::from_secs(60)));
    match lock.lease("alice").in_mode().run(con) {
        Ok(Holding::Expires(left)) if left > Duration::from_secs(59) => {
            t.note("lease(\"alice\") is about 60 s")
        }
        other => panic!("extend did not set the lease: {other:?}"),
    }
    let _ = step!(t, con, lock.extend("alice", Duration::from_millis(50)));
    harness::wait_until_gone(con, "IdentityLock:10086");
    t.note("wait until alice's lease runs out");
    let _ = step!(t, con, lock.lease("alice"));
    let _ = step!(t, con, lock.acquire("bob", None));
    let _ = step!(t, con, lock.release("alice"));
    let _ = step!(t, con, lock.extend("alice", Duration::from_secs(1)));
    let _ = step!(t, con, lock.release("bob"));
    t
}

/// The lock at `key`, with the native commands of `server` when given.
fn lock_on(key: &str, server: Option<&Server>) -> IdentityLock {
    let lock = IdentityLock::new(key).unwrap();
    match server {
        Some(server) => lock.with_server(server),
        None => lock,
    }
}

fn probed() -> Server {
    Server::probe(&mut harness::fresh_db().con()).unwrap()
}

#[test]
fn scenario_standalone() {
    let db = harness::fresh_db();
    let recorder = crate::recorder::Recorder::new("identity_lock");
    assert_snapshot(
        "identity_lock__scenario",
        &scenario(&mut recorder.con(db.con()), None),
    );
    recorder.finish();
}

#[test]
fn scenario_cluster() {
    assert_snapshot(
        "identity_lock__scenario",
        &scenario(&mut harness::cluster_con(), None),
    );
}

/// The same transcript where the server's own compare-and-delete and compare-and-set
/// replace the scripts (Valkey 8.1 and 9): the answers are the same.
#[test]
fn scenario_with_server_standalone() {
    let db = harness::fresh_db();
    let server = probed();
    assert_snapshot(
        "identity_lock__scenario",
        &scenario(&mut db.con(), Some(&server)),
    );
}

#[test]
fn scenario_with_server_cluster() {
    let server = Server::probe(&mut harness::cluster_con()).unwrap();
    assert_snapshot(
        "identity_lock__scenario",
        &scenario(&mut harness::cluster_con(), Some(&server)),
    );
}

/// A lock built with the server sends `DELIFEQ` and `SET … IFEQ` where the server has
/// them, and its scripts elsewhere.
#[test]
fn with_server_sends_native_commands_where_the_server_has_them() {
    let db = harness::fresh_db();
    let (mut con, mut observer) = (db.con(), db.con());
    let id = harness::client_id(&mut con);
    let server = Server::probe(&mut con).unwrap();
    let lock = lock_on("native", Some(&server));
    assert!(lock.acquire("t", None).run(&mut con).unwrap());
    assert!(
        lock.extend("t", Duration::from_secs(60))
            .run(&mut con)
            .unwrap()
    );
    // What the last call sent: `native` where the server can, else the script.
    let mut assert_sent = |capability, native| {
        let expected = if server.supports(capability) {
            native
        } else {
            "evalsha"
        };
        assert_eq!(
            harness::last_command(&mut observer, id),
            expected,
            "{server}"
        );
    };
    assert_sent(Capability::SetIfEqual, "set");
    assert!(lock.release("t").run(&mut con).unwrap());
    assert_sent(Capability::DeleteIfEqual, "delifeq");
    // Without the server, always the scripts.
    let scripted = lock_on("native", None);
    assert!(scripted.acquire("t", None).run(&mut con).unwrap());
    assert!(scripted.release("t").run(&mut con).unwrap());
    assert_eq!(harness::last_command(&mut observer, id), "evalsha");
}

/// A user whose ACL denies `@scripting` holds and frees a lock where the server has the
/// native commands; the scripts are refused to it (`NOPERM`).
#[test]
fn with_server_needs_no_scripting_permission() {
    let db = harness::fresh_db();
    let mut admin = db.con();
    harness::cmd(
        &mut admin,
        &[
            "ACL",
            "SETUSER",
            "no_scripts",
            "on",
            ">pw",
            "~*",
            "+@all",
            "-@scripting",
        ],
    );
    let mut con = db.con();
    harness::cmd(&mut con, &["AUTH", "no_scripts", "pw"]);
    let server = Server::probe(&mut con).unwrap();
    let native = lock_on("acl:lock", Some(&server));
    let scripted = lock_on("acl:lock", None);

    assert!(native.acquire("t", None).run(&mut con).unwrap());
    assert_code(scripted.release("t").run(&mut con), "NOPERM");
    assert_code(
        scripted.extend("t", Duration::from_secs(1)).run(&mut con),
        "NOPERM",
    );
    let extended = native.extend("t", Duration::from_secs(60)).run(&mut con);
    if server.supports(Capability::SetIfEqual) {
        assert!(extended.unwrap(), "{server}");
    } else {
        assert_code(extended, "NOPERM");
    }
    let released = native.release("t").run(&mut con);
    if server.supports(Capability::DeleteIfEqual) {
        assert!(released.unwrap(), "{server}");
    } else {
        assert_code(released, "NOPERM");
    }
    harness::cmd(&mut admin, &["ACL", "DELUSER", "no_scripts"]);
}

#[test]
fn random_tokens_are_fresh_hex() {
    let (a, b) = (IdentityLock::random_token(), IdentityLock::random_token());
    assert_eq!(a.len(), 32);
    assert!(a.chars().all(|c| c.is_ascii_hexdigit()));
    assert_ne!(a, b);
}

/// 16 clients × 500 acquire attempts; whoever gets the lock extends it, reads its lease
/// and releases it, and everyone else tries the same with their own token. Never two
/// holders, never a release, extend or lease by a non-holder.
#[test]
fn never_two_holders() {
    never_two_holders_on(None);
}

#[test]
fn never_two_holders_with_server() {
    never_two_holders_on(Some(probed()));
}

fn never_two_holders_on(server: Option<Server>) {
    let db = Arc::new(harness::fresh_db());
    let holders = Arc::new(AtomicUsize::new(0));
    let acquired = Arc::new(AtomicUsize::new(0));
    let clients: Vec<_> = (0..16)
        .map(|_| {
            let (db, holders, acquired) = (db.clone(), holders.clone(), acquired.clone());
            let server = server.clone();
            thread::spawn(move || {
                let mut con = db.con();
                let lock = lock_on("contended", server.as_ref());
                let token = IdentityLock::random_token();
                for _ in 0..500 {
                    if lock
                        .acquire(&token, Some(Duration::from_secs(60)))
                        .run(&mut con)
                        .unwrap()
                    {
                        assert_eq!(
                            holders.fetch_add(1, Ordering::SeqCst),
                            0,
                            "two holders at once"
                        );
                        acquired.fetch_add(1, Ordering::Relaxed);
                        assert!(
                            lock.extend(&token, Duration::from_secs(60))
                                .run(&mut con)
                                .unwrap()
                        );
                        holders.fetch_sub(1, Ordering::SeqCst);
                        assert!(
                            lock.release(&token).run(&mut con).unwrap(),
                            "the holder's release failed"
                        );
                    } else {
                        assert!(
                            !lock.release(&token).run(&mut con).unwrap(),
                            "a non-holder released the lock"
                        );
                        assert!(
                            !lock
                                .extend(&token, Duration::from_secs(1))
                                .run(&mut con)
                                .unwrap()
                        );
                    }
                }
            })
        })
        .collect();
    for client in clients {
        client.join().unwrap();
    }
    assert!(acquired.load(Ordering::Relaxed) > 0);
    assert!(
        !redis::cmd("EXISTS")
            .arg("contended")
            .query::<bool>(&mut db.con())
            .unwrap()
    );
}

#[test]
fn bad_input_is_refused_and_writes_nothing() {
    let db = harness::fresh_db();
    let mut con = db.con();
    harness::cmd(&mut con, &["HSET", "a:hash", "f", "v"]);
    let held = IdentityLock::new("held").unwrap();
    assert!(
        held.acquire("secret", Some(Duration::from_secs(100)))
            .run(&mut con)
            .unwrap()
    );
    let before = harness::dump(&mut con);

    assert_invalid(IdentityLock::new(""), "key");
    let server = Server::probe(&mut con).unwrap();
    for native in [None, Some(&server)] {
        let held = lock_on("held", native);
        assert_invalid(held.release("").run(&mut con), "token");
        assert_invalid(held.extend("secret", Duration::ZERO).run(&mut con), "ttl");
        assert_invalid(
            held.extend("secret", Duration::from_micros(999))
                .run(&mut con),
            "ttl",
        );
        assert_invalid(held.extend("secret", Duration::MAX).run(&mut con), "ttl");
        assert_invalid(
            held.extend("", Duration::from_secs(1)).run(&mut con),
            "token",
        );
        // The server's WRONGTYPE either way, from the script's GET or the native command.
        let wrong_type = lock_on("a:hash", native);
        assert_code(wrong_type.release("t").run(&mut con), "WRONGTYPE");
        assert_code(
            wrong_type.extend("t", Duration::from_secs(1)).run(&mut con),
            "WRONGTYPE",
        );
    }
    assert_invalid(held.acquire("", None).run(&mut con), "token");
    assert_invalid(held.acquire("t", Some(Duration::ZERO)).run(&mut con), "ttl");
    assert_invalid(
        held.acquire("t", Some(Duration::from_micros(999)))
            .run(&mut con),
        "ttl",
    );
    assert_invalid(held.acquire("t", Some(Duration::MAX)).run(&mut con), "ttl");
    assert_invalid(held.lease("").run(&mut con), "token");
    let wrong_type = IdentityLock::new("a:hash").unwrap();
    assert_code(wrong_type.lease("t").run(&mut con), "WRONGTYPE");

    // What a non-Rust caller can send: the scripts check it themselves.
    assert_invalid(script::release("held", "").run(&mut con), "token");
    assert_code(
        harness::eval(&mut con, &script::RELEASE, &["held"], &[""]),
        "BAD_TOKEN",
    );
    assert_code(
        harness::eval(&mut con, &script::LEASE, &["held"], &[""]),
        "BAD_TOKEN",
    );
    for ttl in [
        "-5",
        "0",
        "000",
        "1e3",
        "0x10",
        "1.5",
        "abc",
        "",
        "1000000000000000",
    ] {
        let reply = harness::eval(&mut con, &script::EXTEND, &["held"], &["secret", ttl]);
        assert_code(reply, "BAD_TTL");
    }
    assert_code(
        harness::eval(&mut con, &script::EXTEND, &["held"], &["", "100"]),
        "BAD_TOKEN",
    );

    assert_eq!(harness::dump(&mut con), before);
}
