//! A least-privilege ACL user, created with exactly the permissions the README lists
//! ("ACL permissions"): every mode works with them, and a call that reports an error has
//! not run, even where a recovery path (a missing script or library) meets a command the
//! user may not send. Each test runs on a server of its own: it changes ACL users and
//! flushes the script cache and the functions.

use std::collections::BTreeSet;

use redis_patterns::work_queue::WorkQueue;
use redis_patterns::{Batch, Error, Script, ScriptMode, catalog};

use crate::harness;
use crate::server::RedisProcess;

const README: &str = include_str!("../../README.md");

/// The README's rules, one list per mode; `KEYS` and the scripts' own commands are added
/// by [`user`].
const EVAL_RULES: &str = "+evalsha +evalsha_ro +script|load";
const FUNCTION_RULES: &str = "+fcall +fcall_ro +function|load";
const TRANSACTION_RULES: &str = "+multi +exec";
const CLUSTER_RULES: &str = "+exists +ping +cluster|slots";

/// The commands a script's source calls (`redis.call('HSET', …)`), as ACL rules: the
/// server checks each command a script sends against the caller's permissions.
fn commands_of(script: &Script) -> BTreeSet<String> {
    let mut commands = BTreeSet::new();
    for opener in [
        "redis.call('",
        "redis.pcall('",
        "redis.call(\"",
        "redis.pcall(\"",
    ] {
        for (at, _) in script.source.match_indices(opener) {
            let rest = &script.source[at + opener.len()..];
            let name: String = rest
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            commands.insert(format!("+{}", name.to_ascii_lowercase()));
        }
    }
    commands
}

/// Creates `name` (password `pw`) with access to the keys `app:*` and `{app:*`, the
/// commands `scripts` call, and `rules`, each of which the README lists; returns a client
/// that connects as that user.
fn user(
    admin: &mut redis::Connection,
    server: &RedisProcess,
    name: &str,
    scripts: &[&str],
    rules: &[&str],
) -> redis::Client {
    for rule in rules {
        assert!(
            README.contains(&format!("`{rule}`")),
            "the README's \"ACL permissions\" lists `{rule}`"
        );
    }
    less_than_listed(admin, server, name, scripts, rules)
}

/// [`user`] with `rules` the README does not list: fewer permissions than it asks for.
fn less_than_listed(
    admin: &mut redis::Connection,
    server: &RedisProcess,
    name: &str,
    scripts: &[&str],
    rules: &[&str],
) -> redis::Client {
    let mut setuser = redis::cmd("ACL");
    setuser
        .arg("SETUSER")
        .arg(name)
        .arg("reset")
        .arg("on")
        .arg(">pw")
        .arg("~app:*")
        .arg("~{app:*");
    for script in scripts {
        let script = catalog::find(script).expect("a script of the crate");
        for command in commands_of(script) {
            setuser.arg(command);
        }
    }
    for rule in rules {
        setuser.arg(rule.split_whitespace().collect::<Vec<_>>());
    }
    let _: () = setuser.query(admin).expect("ACL SETUSER");
    redis::Client::open(format!("redis://{name}:pw@127.0.0.1:{}/0", server.port()))
        .expect("a valid url")
}

fn waiting(admin: &mut redis::Connection, queue: &str) -> u64 {
    redis::cmd("ZCARD")
        .arg(format!("{{{queue}}}:waiting"))
        .query(admin)
        .unwrap()
}

/// What each of the `n` adds reported, and what is stored: an add that reported an error
/// must not be in the queue, and every add that reported success must be.
fn assert_honest(
    admin: &mut redis::Connection,
    queue: &str,
    reported: &[Result<bool, Error>],
) -> (usize, usize) {
    let stored: BTreeSet<String> = redis::cmd("ZRANGE")
        .arg(format!("{{{queue}}}:waiting"))
        .arg(0)
        .arg(-1)
        .query::<Vec<String>>(admin)
        .unwrap()
        .into_iter()
        .collect();
    let mut applied_and_failed = 0;
    let mut reported_ok = 0;
    for (i, result) in reported.iter().enumerate() {
        let present = stored.contains(&format!("job{i}"));
        match result {
            Ok(_) => {
                reported_ok += 1;
                assert!(
                    present,
                    "{queue}: add {i} reported success but is not stored"
                );
            }
            Err(_) if present => applied_and_failed += 1,
            Err(_) => {}
        }
    }
    println!(
        "{queue}: {} adds, {reported_ok} reported success, {} stored, {applied_and_failed} \
         applied but reported failed: {reported:?}",
        reported.len(),
        stored.len()
    );
    (reported_ok, applied_and_failed)
}

/// Functions mode, a user without `multi`, a server without the library: each add finds
/// no function and recovers by loading the library; no add is both applied and reported
/// failed, and all of them apply.
#[test]
fn functions_mode_recovers_without_multi() {
    let server = RedisProcess::start(&[]);
    let mut admin = server.connection();
    let client = user(
        &mut admin,
        &server,
        "fn_user",
        &["work_queue/add"],
        &[FUNCTION_RULES],
    );
    let mut con = client.get_connection().unwrap();
    let queue = WorkQueue::new("app:fq").unwrap();
    let mut reported = Vec::new();
    for i in 0..5 {
        harness::cmd(&mut admin, &["FUNCTION", "FLUSH", "SYNC"]);
        reported.push(
            queue
                .add(&format!("job{i}"), "x")
                .via(ScriptMode::Functions)
                .run(&mut con)
                .map(|added| added.is_new()),
        );
    }
    let (ok, applied_and_failed) = assert_honest(&mut admin, "app:fq", &reported);
    assert_eq!(applied_and_failed, 0);
    assert_eq!(ok, 5);
    assert_eq!(waiting(&mut admin, "app:fq"), 5);
}

/// The same on an async connection.
#[tokio::test]
async fn functions_mode_recovers_without_multi_async() {
    let server = RedisProcess::start(&[]);
    let mut admin = server.connection();
    let client = user(
        &mut admin,
        &server,
        "fn_user",
        &["work_queue/add"],
        &[FUNCTION_RULES],
    );
    let mut con = client.get_multiplexed_async_connection().await.unwrap();
    let queue = WorkQueue::new("app:fqa").unwrap();
    let mut reported = Vec::new();
    for i in 0..5 {
        harness::cmd(&mut admin, &["FUNCTION", "FLUSH", "SYNC"]);
        reported.push(
            queue
                .add(&format!("job{i}"), "x")
                .via(ScriptMode::Functions)
                .run_async(&mut con)
                .await
                .map(|added| added.is_new()),
        );
    }
    let (ok, applied_and_failed) = assert_honest(&mut admin, "app:fqa", &reported);
    assert_eq!(applied_and_failed, 0);
    assert_eq!(ok, 5);
}

/// EVALSHA mode, a user without `multi`, a script cache flushed before each add: each
/// add gets `NOSCRIPT` and recovers behind `SCRIPT LOAD`; all apply, none is reported
/// failed. A pipeline recovers the same way.
#[test]
fn eval_mode_recovers_without_multi() {
    let server = RedisProcess::start(&[]);
    let mut admin = server.connection();
    let client = user(
        &mut admin,
        &server,
        "eval_user",
        &["work_queue/add"],
        &[EVAL_RULES],
    );
    let mut con = client.get_connection().unwrap();
    let queue = WorkQueue::new("app:eq").unwrap();
    let mut reported = Vec::new();
    for i in 0..5 {
        harness::cmd(&mut admin, &["SCRIPT", "FLUSH"]);
        reported.push(
            queue
                .add(&format!("job{i}"), "x")
                .via(ScriptMode::Eval)
                .run(&mut con)
                .map(|added| added.is_new()),
        );
    }
    let (ok, applied_and_failed) = assert_honest(&mut admin, "app:eq", &reported);
    assert_eq!((ok, applied_and_failed), (5, 0));

    harness::cmd(&mut admin, &["SCRIPT", "FLUSH"]);
    let queue = WorkQueue::new("app:eb").unwrap();
    let mut batch = Batch::new();
    let slots: Vec<_> = (0..5)
        .map(|i| batch.add(queue.add(&format!("job{i}"), "x")))
        .collect();
    let mut replies = batch.run(&mut con).unwrap();
    let reported: Vec<_> = slots
        .into_iter()
        .map(|slot| slot.take(&mut replies).map(|added| added.is_new()))
        .collect();
    let (ok, applied_and_failed) = assert_honest(&mut admin, "app:eb", &reported);
    assert_eq!((ok, applied_and_failed), (5, 0));
}

/// A user that may call the functions but not load them, on a server without the
/// library, gets the load's `NOPERM`, and nothing is written; the same for a user that
/// may not `SCRIPT LOAD` after a flush.
#[test]
fn a_refused_load_is_the_error_and_nothing_runs() {
    let server = RedisProcess::start(&[]);
    let mut admin = server.connection();
    let client = less_than_listed(
        &mut admin,
        &server,
        "no_load",
        &["work_queue/add"],
        &["+fcall +fcall_ro", "+evalsha +evalsha_ro"],
    );
    let mut con = client.get_connection().unwrap();
    let queue = WorkQueue::new("app:nl").unwrap();
    let mut reported = Vec::new();
    for (i, mode) in [ScriptMode::Functions, ScriptMode::Eval]
        .into_iter()
        .enumerate()
    {
        let result = queue.add(&format!("job{i}"), "x").via(mode).run(&mut con);
        let err = result.as_ref().expect_err("the load is refused");
        assert_eq!(err.code(), Some("NOPERM"), "{mode:?}: {err}");
        let load = if mode == ScriptMode::Functions {
            "function|load"
        } else {
            "script|load"
        };
        assert!(err.to_string().contains(load), "{mode:?}: {err}");
        reported.push(result.map(|added| added.is_new()));
    }
    let (ok, applied_and_failed) = assert_honest(&mut admin, "app:nl", &reported);
    assert_eq!((ok, applied_and_failed), (0, 0));
}

/// `Batch::transaction` with a user without `multi`: the server refuses MULTI and runs
/// the commands one by one; the batch says so with `Error::RanOutsideTransaction`
/// (here the adds were applied). With `+multi +exec` the same transaction runs whole,
/// loading its script inside it after a flush.
#[tokio::test]
async fn a_transaction_without_multi_says_it_ran_outside_one() {
    let server = RedisProcess::start(&[]);
    let mut admin = server.connection();
    harness::cmd(&mut admin, &["SCRIPT", "FLUSH"]);
    let no_multi = user(
        &mut admin,
        &server,
        "no_multi",
        &["work_queue/add"],
        &[EVAL_RULES],
    );
    let queue = WorkQueue::new("app:tx").unwrap();
    let transaction = || {
        let mut batch = Batch::transaction();
        for i in 0..3 {
            let _ = batch.add(queue.add(&format!("job{i}"), "x"));
        }
        batch
    };
    let mut con = no_multi.get_connection().unwrap();
    match transaction().run(&mut con) {
        Err(Error::RanOutsideTransaction { refused, commands }) => {
            assert_eq!(refused.code(), Some("NOPERM"));
            // Three adds and the load of their script.
            assert_eq!(commands, 4);
        }
        other => panic!("expected RanOutsideTransaction, got {other:?}"),
    }
    let mut con = no_multi.get_multiplexed_async_connection().await.unwrap();
    let err = transaction().run_async(&mut con).await.unwrap_err();
    assert!(
        matches!(err, Error::RanOutsideTransaction { .. }),
        "{err:?}"
    );
    assert!(err.to_string().contains("outside a transaction"), "{err}");
    assert_eq!(waiting(&mut admin, "app:tx"), 3);

    harness::cmd(&mut admin, &["DEL", "{app:tx}:waiting", "{app:tx}:jobs"]);
    harness::cmd(&mut admin, &["SCRIPT", "FLUSH"]);
    let with_multi = user(
        &mut admin,
        &server,
        "with_multi",
        &["work_queue/add"],
        &[EVAL_RULES, TRANSACTION_RULES],
    );
    let mut con = with_multi.get_connection().unwrap();
    let mut replies = {
        let mut batch = transaction();
        let last = batch.add(queue.add("job3", "x"));
        let mut replies = batch.run(&mut con).unwrap();
        assert!(last.take(&mut replies).unwrap().is_new());
        replies
    };
    let _ = &mut replies;
    assert_eq!(waiting(&mut admin, "app:tx"), 4);
}

/// The same on a cluster of its own, with the rules the README adds for cluster
/// connections: Functions mode recovers on every node without `multi`, on sync and async
/// cluster connections, with no add both applied and reported failed; a transaction on
/// the sync cluster connection without `multi` says it ran outside one.
#[tokio::test]
async fn on_a_cluster_without_multi() {
    let cluster = crate::server::RedisCluster::start();
    let mut clients = Vec::new();
    for node in &cluster.nodes {
        let mut admin = node.connection();
        clients.push(user(
            &mut admin,
            node,
            "cluster_user",
            &["work_queue/add"],
            &[FUNCTION_RULES, EVAL_RULES, CLUSTER_RULES],
        ));
    }
    let urls: Vec<String> = cluster
        .nodes
        .iter()
        .map(|node| format!("redis://cluster_user:pw@127.0.0.1:{}/", node.port()))
        .collect();
    let client = redis::cluster::ClusterClient::new(urls).unwrap();
    let mut con = client.get_connection().unwrap();
    let mut async_con = client.get_async_connection().await.unwrap();
    let flush_functions = || {
        for node in &cluster.nodes {
            harness::cmd(&mut node.connection(), &["FUNCTION", "FLUSH", "SYNC"]);
        }
    };
    for (name, sync) in [("app:cq", true), ("app:cqa", false)] {
        let queue = WorkQueue::new(name).unwrap();
        let mut reported = Vec::new();
        for i in 0..5 {
            flush_functions();
            let op = queue
                .add(&format!("job{i}"), "x")
                .via(ScriptMode::Functions);
            let result = if sync {
                op.run(&mut con)
            } else {
                op.run_async(&mut async_con).await
            };
            reported.push(result.map(|added| added.is_new()));
        }
        // Read each queue on the node that holds it.
        let mut holder = redis::cluster::ClusterClient::new(cluster.urls())
            .unwrap()
            .get_connection()
            .unwrap();
        let stored: Vec<String> = redis::cmd("ZRANGE")
            .arg(format!("{{{name}}}:waiting"))
            .arg(0)
            .arg(-1)
            .query(&mut holder)
            .unwrap();
        println!("{name}: reported {reported:?}, stored {stored:?}");
        for (i, result) in reported.iter().enumerate() {
            let present = stored.contains(&format!("job{i}"));
            assert_eq!(result.is_ok(), present, "{name} add {i}: {result:?}");
        }
        assert_eq!(stored.len(), 5, "{name}");
    }

    let queue = WorkQueue::new("app:ctx").unwrap();
    let mut batch = Batch::transaction();
    let _ = batch.add(queue.add("a", "x"));
    match batch.run(&mut con) {
        Err(Error::RanOutsideTransaction { refused, .. }) => {
            assert_eq!(refused.code(), Some("NOPERM"))
        }
        other => panic!("expected RanOutsideTransaction, got {other:?}"),
    }
    let mut batch = Batch::transaction();
    let _ = batch.add(queue.add("b", "x"));
    let err = batch.run_async(&mut async_con).await.unwrap_err();
    assert!(
        matches!(err, Error::RanOutsideTransaction { .. }),
        "{err:?}"
    );
}

/// Waiting for replicas with the README's rules (`+wait`, and `+waitaof` where the server
/// has it): the acknowledgements come back. Without `+wait`, the write still comes back as
/// applied, with the refusal in its acknowledgements rather than as an error.
#[test]
fn a_wait_needs_its_permission_and_never_fails_the_write() {
    use redis_patterns::{Aof, Durability};
    use std::time::Duration;

    let server = RedisProcess::start(&["--appendonly", "yes"]);
    let mut admin = server.connection();
    let has_waitaof = !matches!(
        redis::cmd("COMMAND")
            .arg("INFO")
            .arg("WAITAOF")
            .query::<Vec<redis::Value>>(&mut admin)
            .unwrap()
            .as_slice(),
        [redis::Value::Nil] | []
    );
    let mut rules = vec![EVAL_RULES, "+wait"];
    if has_waitaof {
        rules.push("+waitaof");
    }
    let client = user(&mut admin, &server, "waiter", &["work_queue/add"], &rules);
    let mut con = client.get_connection().unwrap();
    let queue = WorkQueue::new("app:wq").unwrap();
    let wanted = Durability::replicas(0)
        .aof_local()
        .timeout(Duration::from_secs(5));
    let added = queue.add("a", "x").wait_for(wanted).run(&mut con).unwrap();
    assert!(added.value.is_new());
    assert!(added.acks.wait_error.is_none(), "{added:?}");
    if has_waitaof {
        assert!(added.is_met(), "{added:?}");
    } else {
        println!("this server has no WAITAOF: the fsync is reported unsupported");
        assert!(matches!(added.acks.aof, Aof::Unsupported), "{added:?}");
    }

    let client = less_than_listed(
        &mut admin,
        &server,
        "no_wait",
        &["work_queue/add"],
        &[EVAL_RULES],
    );
    let mut con = client.get_connection().unwrap();
    let added = queue
        .add("b", "x")
        .wait_for(Durability::replicas(0))
        .run(&mut con)
        .unwrap();
    assert!(added.value.is_new());
    let refused = added.acks.wait_error.as_ref().expect("WAIT is refused");
    assert_eq!(refused.code(), Some("NOPERM"));
    assert!(!added.is_met());
    assert_eq!(waiting(&mut admin, "app:wq"), 2);
}

/// A batch whose pop will not decode and cannot be put back (the user may pop but not
/// push) still answers: that slot's error says the put-back failed, and the batch's
/// other operation, which ran, has its reply.
#[test]
fn a_failed_put_back_is_its_slots_error_not_the_batchs() {
    use redis_patterns::counter::Counter;
    use redis_patterns::stack::Stack;

    let server = RedisProcess::start(&[]);
    let mut admin = server.connection();
    let _: () = redis::cmd("RPUSH")
        .arg("app:stack")
        .arg(&b"\xff"[..])
        .query(&mut admin)
        .unwrap();
    let client = less_than_listed(&mut admin, &server, "popper", &[], &["+rpop +incrby"]);
    let mut con = client.get_connection().unwrap();
    let mut batch = Batch::new();
    let popped = batch.add(Stack::new("app:stack").unwrap().pop::<String>());
    let counted = batch.add(Counter::new("app:n").unwrap().increase(1));
    let mut replies = batch.run(&mut con).unwrap();
    let err = popped.take(&mut replies).unwrap_err();
    assert!(err.to_string().contains("putting it back failed"), "{err}");
    assert_eq!(counted.take(&mut replies).unwrap(), 1);
}
