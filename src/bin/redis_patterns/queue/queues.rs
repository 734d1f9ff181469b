//! `redis-patterns queues`: the queues of a server, with their counts.

use std::collections::BTreeSet;

use redis_patterns::Batch;
use redis_patterns::keyspace::{DbIterator, KeyType, cluster_masters};
use redis_patterns::scripts::work_queue::keys as queue_keys;
use redis_patterns::work_queue::WorkQueue;
use serde_json::{Value as Json, json};

use super::QueuesArgs;
use super::output::{counts_json, print_json, print_table, text_cell, yes_no};
use crate::shared::{Failure, connect};

/// `redis-patterns queues`: every queue of the server (every primary of a cluster),
/// found by its `{<name>}:jobs` hash in SCAN steps of 1,000 keys, with its counts.
pub fn list_queues(args: QueuesArgs) -> Result<(), Failure> {
    let QueuesArgs { url, cluster, json } = args;
    let mut con = connect(&url, cluster)?;
    let names = queue_names(&url, cluster, &mut *con)?;
    let mut rows = Vec::new();
    for name in &names {
        let queue = WorkQueue::new(name.as_str())?;
        let mut batch = Batch::new();
        let counts = batch.add(queue.counts());
        let paused = batch.add(queue.is_paused());
        let mut replies = batch.run(&mut *con)?;
        rows.push((name, counts.take(&mut replies)?, paused.take(&mut replies)?));
    }
    if json {
        let all = rows
            .iter()
            .map(|(name, counts, paused)| {
                let mut row = json!({ "queue": name });
                for (k, v) in counts_json(counts).as_object().expect("an object") {
                    row[k] = v.clone();
                }
                row["paused"] = json!(paused);
                row
            })
            .collect();
        print_json(&Json::Array(all));
    } else if rows.is_empty() {
        println!("no queue on this server");
    } else {
        let table: Vec<Vec<String>> = rows
            .iter()
            .map(|(name, c, paused)| {
                vec![
                    text_cell(name.as_bytes()),
                    c.waiting.to_string(),
                    c.parked.to_string(),
                    c.delayed.to_string(),
                    c.leased.to_string(),
                    c.dead.to_string(),
                    c.completed.to_string(),
                    c.blocked.to_string(),
                    yes_no(*paused).to_owned(),
                ]
            })
            .collect();
        print_table(
            &[
                "queue",
                "waiting",
                "parked",
                "delayed",
                "leased",
                "dead",
                "completed",
                "blocked",
                "paused",
            ],
            &table,
        );
    }
    Ok(())
}

/// The names of the queues of the server at `url` (of every primary of the cluster with
/// `cluster`, reached through `con`'s view of it), sorted: every `{<name>}:jobs` hash,
/// found in SCAN steps of 1,000 keys.
pub(crate) fn queue_names(
    url: &str,
    cluster: bool,
    con: &mut dyn redis::ConnectionLike,
) -> Result<BTreeSet<String>, Failure> {
    let mut names = BTreeSet::new();
    if cluster {
        let info = redis::IntoConnectionInfo::into_connection_info(url)?;
        for node in cluster_masters().run(con)? {
            let addr = match info.addr() {
                redis::ConnectionAddr::TcpTls {
                    insecure,
                    tls_params,
                    ..
                } => redis::ConnectionAddr::TcpTls {
                    host: node.host.clone(),
                    port: node.port,
                    insecure: *insecure,
                    tls_params: tls_params.clone(),
                },
                _ => redis::ConnectionAddr::Tcp(node.host.clone(), node.port),
            };
            let client = redis::Client::open(info.clone().set_addr(addr))?;
            let mut node_con = client.get_connection().map_err(|err| {
                Failure::failed(format!("cannot connect to the primary {node}: {err}"))
            })?;
            scan_queues(&mut node_con, &mut names)?;
        }
    } else {
        scan_queues(con, &mut names)?;
    }
    Ok(names)
}

/// The names of the queues whose `jobs` hash one server holds, added to `names`: a
/// key `X:jobs` is a queue's when `WorkQueue` names the queue's `jobs` so (keys of
/// other patterns, or not named by the template, are left out).
fn scan_queues(
    con: &mut dyn redis::ConnectionLike,
    names: &mut BTreeSet<String>,
) -> Result<(), Failure> {
    let mut walk = DbIterator::new(1000)
        .matching("*:jobs")
        .of_type(KeyType::Hash);
    while let Some(batch) = walk.next(con)? {
        for key in batch {
            let Some(stem) = key.to_str().and_then(|k| k.strip_suffix(":jobs")) else {
                continue;
            };
            // `{emails}:jobs` is the queue `emails`; `{tenant:7}:emails:jobs`, whose
            // name holds its hash tag, the queue `{tenant:7}:emails`.
            let wrapped = stem
                .strip_prefix('{')
                .and_then(|s| s.strip_suffix('}'))
                .filter(|inner| !inner.is_empty() && !inner.contains(['{', '}']));
            let name = wrapped.unwrap_or(stem);
            if queue_keys::jobs(name).is_ok_and(|jobs| key == jobs.as_str()) {
                names.insert(name.to_owned());
            }
        }
    }
    Ok(())
}
