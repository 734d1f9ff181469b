//! The Redis Functions library generated from the scripts: every script answers through
//! `FCALL` as through `EVAL`, two versions of the library serve side by side on one
//! server, and the library loads on every primary of a cluster.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread;

use redis::Value;
use redis_patterns::Script;
use redis_patterns::catalog::{self, FUNCTIONS};

use crate::contract::valid_call;
use crate::harness;
use crate::server::RedisProcess;

fn eval(
    con: &mut redis::Connection,
    script: &Script,
    keys: &[String],
    args: &[String],
) -> Result<Value, String> {
    redis::cmd("EVAL")
        .arg(script.source)
        .arg(keys.len())
        .arg(keys)
        .arg(args)
        .query(con)
        .map_err(|err| err.to_string())
}

fn fcall(
    con: &mut dyn redis::ConnectionLike,
    function: &str,
    read_only: bool,
    keys: &[String],
    args: &[String],
) -> Result<Value, String> {
    redis::cmd(if read_only { "FCALL_RO" } else { "FCALL" })
        .arg(function)
        .arg(keys.len())
        .arg(keys)
        .arg(args)
        .query(con)
        .map_err(|err| err.to_string())
}

/// For every script, the contract test's valid call and the same call with an argument
/// (or a key) too few answer the same through `FCALL` as through `EVAL`, and leave the
/// same keyspace: byte for byte, or, for scripts that read the server's clock, the same
/// keys.
#[test]
fn every_script_answers_through_fcall_as_through_eval() {
    let db = harness::fresh_db();
    let mut con = db.con();
    catalog::load_functions(&mut con).unwrap();
    for script in catalog::scripts() {
        let (keys, args) = valid_call(script);
        let mut calls = vec![(keys.clone(), args.clone())];
        if !args.is_empty() {
            calls.push((keys.clone(), args[..args.len() - 1].to_vec()));
        } else if !keys.is_empty() {
            calls.push((keys[..keys.len() - 1].to_vec(), args.clone()));
        }
        // A script that reads the server's clock, or adds a stream entry (a wake-up, a
        // message) whose id `XADD *` takes from it, answers and writes differently from
        // one call to the next.
        let timed =
            script.clock == Some(redis_patterns::Clock::Server) || script.source.contains("'XADD'");
        for (keys, args) in calls {
            harness::cmd(&mut con, &["FLUSHDB"]);
            let by_eval = eval(&mut con, script, &keys, &args);
            let after_eval = harness::dump(&mut con);
            harness::cmd(&mut con, &["FLUSHDB"]);
            let function = catalog::function_name(script);
            let by_fcall = fcall(&mut con, &function, script.is_read_only(), &keys, &args);
            let after_fcall = harness::dump(&mut con);
            let case = format!(
                "{} with {} keys and {} arguments",
                script.name,
                keys.len(),
                args.len()
            );
            match (&by_eval, &by_fcall) {
                (Err(a), Err(b)) => assert_eq!(a, b, "{case}"),
                (Ok(a), Ok(b)) if !timed => assert_eq!(a, b, "{case}"),
                (Ok(_), Ok(_)) => {}
                _ => panic!("{case}: EVAL {by_eval:?}, FCALL {by_fcall:?}"),
            }
            if timed {
                let names = |dump: &std::collections::BTreeMap<Vec<u8>, (Vec<u8>, bool)>| {
                    dump.keys().cloned().collect::<Vec<_>>()
                };
                assert_eq!(names(&after_eval), names(&after_fcall), "{case}");
            } else {
                assert_eq!(after_eval, after_fcall, "{case}");
            }
        }
    }
}

/// The library with the crate's version renamed to another one: an older app's.
fn older_library() -> (String, String) {
    let library = catalog::functions_library();
    let prefix = catalog::function_name(catalog::find("identity_lock/release").unwrap())
        .trim_end_matches("identity_lock__release")
        .to_owned();
    let older = FUNCTIONS
        .replace(
            &format!("name={library}"),
            "name=redis_patterns_v0_0_0_older",
        )
        .replace(&prefix, "rp_v0_0_0_older__");
    (older, "rp_v0_0_0_older__identity_lock__release".to_owned())
}

/// Two versions of the library on one server, as during a rolling deploy: 8 clients
/// call both while the older one is loaded again and again (`FUNCTION LOAD REPLACE`),
/// and no call fails; the version probe tells which one a server has.
#[test]
fn two_versions_serve_side_by_side() {
    let server = RedisProcess::start(&[]);
    let mut con = server.connection();
    assert_eq!(catalog::functions_version(&mut con).unwrap(), None);
    catalog::load_functions(&mut con).unwrap();
    let (older, older_release) = older_library();
    redis::cmd("FUNCTION")
        .arg("LOAD")
        .arg(&older)
        .exec(&mut con)
        .unwrap();
    assert_eq!(
        catalog::functions_version(&mut con).unwrap().as_deref(),
        Some(env!("CARGO_PKG_VERSION"))
    );
    let newer_release = catalog::function_name(catalog::find("identity_lock/release").unwrap());
    let done = AtomicBool::new(false);
    let loads = AtomicU64::new(0);
    thread::scope(|scope| {
        let (server, done, older, loads) = (&server, &done, &older, &loads);
        let deployer = scope.spawn(move || {
            let mut con = server.connection();
            while !done.load(Ordering::Relaxed) {
                redis::cmd("FUNCTION")
                    .arg("LOAD")
                    .arg("REPLACE")
                    .arg(older)
                    .exec(&mut con)
                    .unwrap();
                loads.fetch_add(1, Ordering::SeqCst);
            }
        });
        let clients: Vec<_> = (0..8)
            .map(|c| {
                let (older_release, newer_release) = (&older_release, &newer_release);
                scope.spawn(move || {
                    let mut con = server.connection();
                    // A reload lands before the calls, and again while they run.
                    harness::wait_for_count(loads, 1, "the first reload");
                    for i in 0..200 {
                        if i == 100 {
                            harness::wait_for_a_whole_turn(loads, 1, "a reload amid the calls");
                        }
                        let function = if i % 2 == 0 {
                            older_release
                        } else {
                            newer_release
                        };
                        let key = format!("lock:{c}");
                        redis::cmd("SET").arg(&key).arg("t").exec(&mut con).unwrap();
                        let released = fcall(&mut con, function, false, &[key], &["t".into()]);
                        assert_eq!(released, Ok(Value::Int(1)), "{function}");
                    }
                })
            })
            .collect();
        for client in clients {
            client.join().unwrap();
        }
        done.store(true, Ordering::Relaxed);
        deployer.join().unwrap();
    });
}

/// On a cluster, the library loads on every primary, and `FCALL` reaches the node of its
/// first key.
#[test]
fn the_library_loads_on_every_primary_of_a_cluster() {
    let mut con = harness::cluster_con();
    catalog::load_functions(&mut con).unwrap();
    for url in harness::cluster().urls() {
        let mut node = redis::Client::open(url).unwrap().get_connection().unwrap();
        assert_eq!(
            catalog::functions_version(&mut node).unwrap().as_deref(),
            Some(env!("CARGO_PKG_VERSION"))
        );
    }
    let release = catalog::function_name(catalog::find("identity_lock/release").unwrap());
    for key in ["fn:a", "fn:b", "fn:c", "fn:d", "fn:e", "fn:f"] {
        redis::cmd("SET").arg(key).arg("t").exec(&mut con).unwrap();
        let released = fcall(&mut con, &release, false, &[key.to_owned()], &["t".into()]);
        assert_eq!(released, Ok(Value::Int(1)), "{key}");
    }
}

/// `rounds` rounds of three single operations through `FCALL` (take a lock, push, let
/// the lock go) while another connection runs `FUNCTION FLUSH` every millisecond: no
/// operation fails, and none runs twice. Returns how many flushes ran.
///
/// The flushes are `SYNC` (the default of Redis): Valkey 8.0 and 8.1 before 8.1.5 flush
/// asynchronously by default, and crash when a `FUNCTION LOAD` follows such a flush
/// (valkey#1826), which is the server's bug, not what this test is about.
fn function_flush_hammer(
    rounds: usize,
    tag: &str,
    mut con: impl redis::ConnectionLike,
    mut flusher: impl redis::ConnectionLike + Send,
) -> u64 {
    use redis_patterns::ScriptMode::Functions;
    use redis_patterns::fixed_length_queue::FixedLengthQueue;
    use redis_patterns::identity_lock::IdentityLock;

    let stop = AtomicBool::new(false);
    let flushes = AtomicU64::new(0);
    let queue = FixedLengthQueue::new(format!("{{{tag}}}:queue"), 1_000_000).unwrap();
    let lock = IdentityLock::new(format!("{{{tag}}}:lock")).unwrap();
    thread::scope(|scope| {
        let (stop, flushes) = (&stop, &flushes);
        scope.spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                harness::cmd(&mut flusher, &["FUNCTION", "FLUSH", "SYNC"]);
                flushes.fetch_add(1, Ordering::SeqCst);
                thread::sleep(std::time::Duration::from_millis(1));
            }
        });
        struct Stop<'a>(&'a AtomicBool);
        impl Drop for Stop<'_> {
            fn drop(&mut self) {
                self.0.store(true, Ordering::Relaxed);
            }
        }
        let _stop = Stop(stop);
        for round in 0..rounds {
            // Every 4 rounds wait for a flush of their own: flushes land amid the rounds
            // however the threads are scheduled.
            let due = (round / 4) as u64 + 1;
            harness::wait_for_count(flushes, due, "a flush amid the rounds");
            assert!(
                lock.acquire("t", None)
                    .via(Functions)
                    .run(&mut con)
                    .unwrap()
            );
            queue
                .enqueue(&[format!("i{round}")])
                .via(Functions)
                .run(&mut con)
                .unwrap();
            assert!(lock.release("t").via(Functions).run(&mut con).unwrap());
        }
    });
    let items: Vec<String> = redis::cmd("LRANGE")
        .arg(format!("{{{tag}}}:queue"))
        .arg(0)
        .arg(-1)
        .query(&mut con)
        .unwrap();
    let expected: Vec<String> = (0..rounds).map(|r| format!("i{r}")).collect();
    assert_eq!(items, expected, "an operation was lost or ran twice");
    flushes.load(Ordering::SeqCst)
}

#[test]
fn under_function_flushes_no_error_surfaces() {
    let servers = harness::script_cache_servers();
    let db = servers.db();
    let flushes = function_flush_hammer(200, "fn:hammer", db.con(), db.con());
    assert!(flushes > 20, "{flushes} flushes");
}

#[test]
fn under_function_flushes_on_a_cluster_no_error_surfaces() {
    let servers = harness::script_cache_servers();
    harness::cmd(&mut servers.cluster_con(), &["FLUSHALL"]);
    let flushes = function_flush_hammer(
        300,
        "fn:cluster",
        servers.cluster_con(),
        servers.cluster_con(),
    );
    assert!(flushes > 10, "{flushes} flushes");
}

/// On an async connection, an operation through `FCALL` loads the library when the
/// server has none, and answers as through `EVALSHA`.
#[tokio::test]
async fn an_async_call_loads_the_library_when_it_is_missing() {
    use redis_patterns::ScriptMode;
    use redis_patterns::fixed_length_queue::FixedLengthQueue;

    let servers = harness::script_cache_servers();
    let db = servers.db();
    let mut con = db.multiplexed().await;
    let via_fcall = FixedLengthQueue::new("fn:async:a", 100).unwrap();
    let via_eval = FixedLengthQueue::new("fn:async:b", 100).unwrap();
    for round in 1..=3 {
        // SYNC: see function_flush_hammer.
        redis::cmd("FUNCTION")
            .arg("FLUSH")
            .arg("SYNC")
            .exec_async(&mut con)
            .await
            .unwrap();
        let a = via_fcall
            .enqueue(&[round])
            .via(ScriptMode::Functions)
            .run_async(&mut con)
            .await;
        let b = via_eval
            .enqueue(&[round])
            .via(ScriptMode::Eval)
            .run_async(&mut con)
            .await;
        assert_eq!(format!("{a:?}"), format!("{b:?}"), "round {round}");
        assert!(a.is_ok(), "{a:?}");
    }
    let a: Vec<u32> = redis::cmd("LRANGE")
        .arg("fn:async:a")
        .arg(0)
        .arg(-1)
        .query_async(&mut con)
        .await
        .unwrap();
    assert_eq!(a, [1, 2, 3]);
}

/// `IT_SCRIPT_MODE` reaches every operation a scenario runs through `step!`, with no
/// process-wide setting in the library.
#[test]
fn the_scenarios_run_in_the_mode_it_script_mode_names() {
    use crate::harness::InMode;
    let op = redis_patterns::counter::Counter::new("mode")
        .unwrap()
        .increase(1);
    assert_eq!(op.mode(), redis_patterns::ScriptMode::Eval);
    assert_eq!((&op).in_mode().mode(), harness::script_mode());
    assert_eq!(op.in_mode().mode(), harness::script_mode());
}
