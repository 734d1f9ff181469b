//! Waiting for replicas and the AOF in the same round trip as a write
//! (`Op::wait_for`, `Batch::wait_for`): the acknowledgements come back beside the value,
//! never as an error, in both script modes and through their recoveries; and a write
//! that a replica acknowledged survives that replica's promotion. Every test runs on
//! servers of its own (replication, flushed script caches, AOF settings).

use std::collections::BTreeSet;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread;
use std::time::Duration;

use redis_patterns::counter::Counter;
use redis_patterns::work_queue::WorkQueue;
use redis_patterns::{Aof, Batch, Durability, ScriptMode};

use crate::harness;
use crate::server::RedisProcess;

/// Whether the server has `WAITAOF` (Redis 7.2+, Valkey): `COMMAND INFO` answers nil for a
/// command it does not know.
fn has_waitaof(con: &mut redis::Connection) -> bool {
    let info: Vec<redis::Value> = redis::cmd("COMMAND")
        .arg("INFO")
        .arg("WAITAOF")
        .query(con)
        .unwrap();
    !matches!(info.as_slice(), [redis::Value::Nil] | [])
}

/// On a server without replicas: the value comes back with 0 replicas acknowledged, and
/// the demand is not met; asking for 0 replicas is met at once. The AOF demand on a
/// server without AOF is reported (unsupported, or WAITAOF's refusal), not raised.
#[test]
fn without_replicas_the_value_comes_back_with_none_acknowledged() {
    let server = RedisProcess::start(&[]);
    let mut con = server.connection();
    let queue = WorkQueue::new("dq:alone").unwrap();
    let short = Duration::from_millis(20);

    let added = queue
        .add("a", "x")
        .wait_for(Durability::replicas(1).timeout(short))
        .run(&mut con)
        .unwrap();
    assert!(added.value.is_new());
    assert_eq!(added.replicas(), 0);
    assert!(!added.is_met());
    assert!(matches!(added.acks.aof, Aof::NotRequested));

    let added = queue
        .add("b", "x")
        .wait_for(Durability::replicas(0))
        .run(&mut con)
        .unwrap();
    assert!(added.value.is_new() && added.is_met());

    let added = queue
        .add("c", "x")
        .wait_for(Durability::replicas(0).aof_local().timeout(short))
        .run(&mut con)
        .unwrap();
    assert!(added.value.is_new());
    assert!(!added.is_met());
    if has_waitaof(&mut con) {
        // appendonly is off: WAITAOF refuses a local fsync.
        assert!(matches!(added.acks.aof, Aof::Failed(_)), "{added:?}");
    } else {
        assert!(matches!(added.acks.aof, Aof::Unsupported), "{added:?}");
    }

    // An error reply is the operation's error, as without the wait.
    harness::cmd(&mut con, &["SET", "{dq:wrong}:jobs", "not a hash"]);
    let err = WorkQueue::new("dq:wrong")
        .unwrap()
        .add("a", "x")
        .wait_for(Durability::replicas(0))
        .run(&mut con)
        .unwrap_err();
    assert_eq!(err.code(), Some("WRONGTYPE"), "{err:?}");
    let zero = queue
        .add("d", "x")
        .wait_for(Durability::replicas(1).timeout(Duration::ZERO))
        .run(&mut con);
    harness::assert_invalid(zero, "timeout");
    let twice = queue
        .add("d", "x")
        .wait_for(Durability::replicas(0))
        .wait_for(Durability::replicas(0))
        .run(&mut con);
    harness::assert_invalid(twice, "durability");
    // An op that waits cannot join a batch: the batch waits instead.
    let mut batch = Batch::new();
    let _ = batch.add(queue.add("d", "x").wait_for(Durability::replicas(0)));
    harness::assert_invalid(batch.run(&mut con), "op");
}

/// With `--appendonly yes --appendfsync always`, `WAITAOF` reports the local fsync where
/// the server has it; a server without it (Redis 7.0) reports it unsupported.
#[test]
fn the_aof_fsync_is_reported_where_the_server_has_waitaof() {
    let server = RedisProcess::start(&["--appendonly", "yes", "--appendfsync", "always"]);
    let mut con = server.connection();
    let counter = Counter::new("dq:aof").unwrap();
    let wanted = Durability::replicas(0)
        .aof_local()
        .timeout(Duration::from_secs(5));
    let increased = counter.increase(1).wait_for(wanted).run(&mut con).unwrap();
    assert_eq!(increased.value, 1);
    if has_waitaof(&mut con) {
        assert!(
            matches!(
                increased.acks.aof,
                Aof::Fsynced {
                    local: 1,
                    replicas: 0
                }
            ),
            "{increased:?}"
        );
        assert!(increased.is_met());
    } else {
        println!("this server has no WAITAOF: the fsync is reported unsupported");
        assert!(
            matches!(increased.acks.aof, Aof::Unsupported),
            "{increased:?}"
        );
        assert!(!increased.is_met());
    }
}

/// A primary and a replica: the wait counts the replica, in both script modes, right
/// after the script cache or the library was flushed (the wait follows the call that
/// ran, behind its load), on sync and async connections, and after a batch (a pipeline
/// and a transaction, whose wait follows EXEC).
#[tokio::test]
async fn the_wait_follows_the_write_through_every_recovery() {
    let primary = RedisProcess::start(&[]);
    let _replica = RedisProcess::start_replica_of(&primary, &[]);
    let mut admin = primary.connection();
    let mut con = primary.connection();
    let mut async_con = redis::Client::open(primary.url(0))
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .unwrap();
    let queue = WorkQueue::new("dq:modes").unwrap();
    let one = Durability::replicas(1).timeout(Duration::from_secs(5));
    for (i, mode) in [ScriptMode::Eval, ScriptMode::Functions]
        .into_iter()
        .enumerate()
    {
        harness::cmd(&mut admin, &["SCRIPT", "FLUSH"]);
        harness::cmd(&mut admin, &["FUNCTION", "FLUSH", "SYNC"]);
        let added = queue
            .add(&format!("sync{i}"), "x")
            .via(mode)
            .wait_for(one)
            .run(&mut con)
            .unwrap();
        assert!(
            added.value.is_new() && added.is_met(),
            "{mode:?}: {added:?}"
        );
        assert_eq!(added.replicas(), 1);

        harness::cmd(&mut admin, &["SCRIPT", "FLUSH"]);
        harness::cmd(&mut admin, &["FUNCTION", "FLUSH", "SYNC"]);
        let added = queue
            .add(&format!("async{i}"), "x")
            .via(mode)
            .wait_for(one)
            .run_async(&mut async_con)
            .await
            .unwrap();
        assert!(
            added.value.is_new() && added.is_met(),
            "{mode:?}: {added:?}"
        );
    }
    for transaction in [false, true] {
        harness::cmd(&mut admin, &["SCRIPT", "FLUSH"]);
        let mut batch = if transaction {
            Batch::transaction()
        } else {
            Batch::new()
        };
        let a = batch.add(queue.add(&format!("batch{transaction}a"), "x"));
        let acks = batch.wait_for(one);
        let b = batch.add(queue.add(&format!("batch{transaction}b"), "x"));
        let mut replies = batch.run(&mut con).unwrap();
        assert!(a.take(&mut replies).unwrap().is_new());
        assert!(b.take(&mut replies).unwrap().is_new());
        let acks = acks.take(&mut replies).unwrap();
        assert_eq!(acks.replicas, 1, "transaction: {transaction}");
        assert!(acks.is_met());
    }
    let mut batch = Batch::transaction();
    let _ = batch.add(queue.add("batch-async", "x"));
    let acks = batch.wait_for(one);
    let mut replies = batch.run_async(&mut async_con).await.unwrap();
    assert_eq!(acks.take(&mut replies).unwrap().replicas, 1);
}

/// What one adder saw: the job ids whose add reported success, and of those, the ones a
/// replica acknowledged.
#[derive(Default)]
struct Seen {
    reported: Vec<String>,
    acknowledged: Vec<String>,
}

/// A numeric field of `INFO` (`master_repl_offset`).
fn field_of(info: &str, field: &str) -> Option<u64> {
    info.lines().find_map(|line| {
        line.strip_prefix(field)?
            .strip_prefix(':')?
            .trim()
            .parse()
            .ok()
    })
}

/// A numeric field of `INFO replication`.
fn replication_field(server: &RedisProcess, field: &str) -> Option<u64> {
    field_of(&server.info("replication"), field)
}

/// A replica that lags for real: it runs `DEBUG SLEEP 0.05` again and again, catching up
/// with the primary between two sleeps, so the replication stream piles up for 50 ms at a
/// time. Adders run with and without `wait_for(replicas(1))`, and the replica is promoted
/// (`REPLICAOF NO ONE`) mid-run: every add that the replica acknowledged is on the
/// promoted replica. Prints how many adds the primary alone acknowledged were lost.
#[test]
fn an_acknowledged_add_survives_the_promotion_of_the_replica() {
    let primary = RedisProcess::start(&[]);
    let replica = RedisProcess::start_replica_of(&primary, &["--enable-debug-command", "yes"]);
    let queue = WorkQueue::new("dq:failover").unwrap();
    let wanted = Durability::replicas(1).timeout(Duration::from_millis(300));
    let stop_adding = AtomicBool::new(false);
    let stop_lagging = AtomicBool::new(false);
    let adds = AtomicU64::new(0);
    let acknowledged = AtomicU64::new(0);
    let with_wait = Mutex::new(Seen::default());
    let without_wait = Mutex::new(Seen::default());
    thread::scope(|scope| {
        let mut lagger = replica.connection();
        let (stop_lagging, primary, replica) = (&stop_lagging, &primary, &replica);
        scope.spawn(move || {
            while !stop_lagging.load(Ordering::Relaxed) {
                harness::cmd(&mut lagger, &["DEBUG", "SLEEP", "0.05"]);
                // Caught up with where the primary is now (a replica reports its own
                // offset as master_repl_offset too), or promoted.
                let target = replication_field(primary, "master_repl_offset").unwrap_or(0);
                harness::wait_until("the replica catching up", 1, || {
                    let info = replica.info("replication");
                    info.contains("role:master")
                        || field_of(&info, "master_repl_offset").is_some_and(|at| at >= target)
                });
            }
        });
        for adder in 0..4 {
            let waits = adder % 2 == 0;
            let mut con = primary.connection();
            let (queue, stop, adds, acknowledged) = (&queue, &stop_adding, &adds, &acknowledged);
            let seen = if waits { &with_wait } else { &without_wait };
            scope.spawn(move || {
                let mut n = 0;
                while !stop.load(Ordering::Relaxed) {
                    let id = format!("{adder}-{n}");
                    n += 1;
                    if waits {
                        let added = queue.add(&id, "x").wait_for(wanted).run(&mut con);
                        let mut seen = seen.lock().unwrap();
                        if let Ok(added) = added {
                            assert!(added.value.is_new());
                            if added.replicas() >= 1 {
                                seen.acknowledged.push(id.clone());
                                acknowledged.fetch_add(1, Ordering::SeqCst);
                            }
                            seen.reported.push(id);
                        }
                    } else if queue.add(&id, "x").run(&mut con).is_ok() {
                        seen.lock().unwrap().reported.push(id);
                    }
                    adds.fetch_add(1, Ordering::SeqCst);
                }
            });
        }
        harness::wait_for_count(&acknowledged, 50, "adds acknowledged before the promotion");
        harness::cmd(&mut replica.connection(), &["REPLICAOF", "NO", "ONE"]);
        let promoted = adds.load(Ordering::SeqCst);
        harness::wait_for_count(&adds, promoted + 100, "adds after the promotion");
        stop_adding.store(true, Ordering::Relaxed);
        stop_lagging.store(true, Ordering::Relaxed);
    });
    assert!(replica.info("replication").contains("role:master"));
    let on_replica: BTreeSet<String> = redis::cmd("ZRANGE")
        .arg("{dq:failover}:waiting")
        .arg(0)
        .arg(-1)
        .query::<Vec<String>>(&mut replica.connection())
        .unwrap()
        .into_iter()
        .collect();
    let with_wait = with_wait.into_inner().unwrap();
    let without_wait = without_wait.into_inner().unwrap();
    let lost = |ids: &[String]| ids.iter().filter(|id| !on_replica.contains(*id)).count();
    let lost_acknowledged = lost(&with_wait.acknowledged);
    println!(
        "with wait_for(replicas(1)): {} adds reported, {} acknowledged by the replica, {} of \
         those lost; {} reported but not acknowledged, {} of those lost",
        with_wait.reported.len(),
        with_wait.acknowledged.len(),
        lost_acknowledged,
        with_wait.reported.len() - with_wait.acknowledged.len(),
        lost(&with_wait.reported) - lost_acknowledged,
    );
    println!(
        "without it: {} adds acknowledged by the primary, {} lost on the promoted replica",
        without_wait.reported.len(),
        lost(&without_wait.reported),
    );
    assert!(!with_wait.acknowledged.is_empty());
    assert_eq!(lost_acknowledged, 0);
}

/// How many `WAIT`s each node of `cluster` ran (`INFO commandstats`).
fn waits_per_node(cluster: &crate::server::RedisCluster) -> Vec<u64> {
    cluster
        .nodes
        .iter()
        .map(|node| {
            node.info("commandstats")
                .lines()
                .find_map(|line| {
                    let stats = line.strip_prefix("cmdstat_wait:")?;
                    stats
                        .strip_prefix("calls=")?
                        .split(',')
                        .next()?
                        .parse()
                        .ok()
                })
                .unwrap_or(0)
        })
        .collect()
}

/// On a cluster, the wait goes to the node that took the write, on sync and async cluster
/// connections, in both modes, right after the scripts and the library were flushed, and
/// after a batch: the node of the key's slot runs every `WAIT`, the others none.
#[tokio::test]
async fn on_a_cluster_the_wait_goes_to_the_node_of_the_write() {
    let servers = harness::script_cache_servers();
    let cluster = servers.cluster();
    let mut con = servers.cluster_con();
    let mut async_con = servers
        .cluster_client()
        .get_async_connection()
        .await
        .unwrap();
    // The node that holds the queue's slot (the cluster's nodes share the slots in order).
    let queue = WorkQueue::new("dq:cluster").unwrap();
    let slot: u64 = redis::cmd("CLUSTER")
        .arg("KEYSLOT")
        .arg("{dq:cluster}:waiting")
        .query(&mut con)
        .unwrap();
    let owner = [5460, 10922, 16383]
        .iter()
        .position(|&last| slot <= last)
        .unwrap();
    let before = waits_per_node(cluster);
    let none = Durability::replicas(0);
    let mut sent = 0;
    for (i, mode) in [ScriptMode::Eval, ScriptMode::Functions]
        .into_iter()
        .enumerate()
    {
        harness::cmd(&mut con, &["SCRIPT", "FLUSH"]);
        harness::cmd(&mut con, &["FUNCTION", "FLUSH", "SYNC"]);
        let refused = queue
            .add(&format!("sync{i}"), "x")
            .via(mode)
            .wait_for(none)
            .run(&mut con);
        harness::assert_invalid(refused, "durability");
        let added = queue
            .add(&format!("sync{i}"), "x")
            .via(mode)
            .run(&mut con)
            .unwrap();
        assert!(added.is_new(), "{mode:?}");
        harness::cmd(&mut con, &["SCRIPT", "FLUSH"]);
        harness::cmd(&mut con, &["FUNCTION", "FLUSH", "SYNC"]);
        let added = queue
            .add(&format!("async{i}"), "x")
            .via(mode)
            .wait_for(none)
            .run_async(&mut async_con)
            .await
            .unwrap();
        assert!(
            added.value.is_new() && added.is_met(),
            "{mode:?}: {added:?}"
        );
        // The first WAIT followed a call that found no script (or function); the second
        // follows the call that ran, behind its load.
        sent += 2;
    }
    for transaction in [false, true] {
        let batch = || {
            let mut batch = if transaction {
                Batch::transaction()
            } else {
                Batch::new()
            };
            let _ = batch.add(queue.add(&format!("batch{transaction}"), "x"));
            let acks = batch.wait_for(none);
            (batch, acks)
        };
        let (sync_batch, _) = batch();
        harness::assert_invalid(sync_batch.run(&mut con), "durability");
        let (async_batch, acks) = batch();
        let mut replies = async_batch.run_async(&mut async_con).await.unwrap();
        assert!(acks.take(&mut replies).unwrap().is_met());
        sent += 1;
    }
    let after = waits_per_node(cluster);
    let ran: Vec<u64> = after.iter().zip(&before).map(|(a, b)| a - b).collect();
    let mut expected = vec![0; ran.len()];
    expected[owner] = sent;
    assert_eq!(ran, expected, "WAITs per node; the write's node is {owner}");
}
