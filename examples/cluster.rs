//! The patterns on a Redis Cluster, sync and async.
//!
//! ```sh
//! cargo run --example cluster        # the cluster at 127.0.0.1:7000 to 7002
//! REDIS_CLUSTER_URLS=redis://10.0.0.5:6379/,redis://10.0.0.6:6379/ cargo run --example cluster
//! ```
//!
//! With no cluster running, three empty nodes make one:
//!
//! ```sh
//! for port in 7000 7001 7002; do
//!   redis-server --port $port --cluster-enabled yes --cluster-config-file nodes-$port.conf \
//!     --save '' --daemonize yes
//! done
//! redis-cli --cluster create 127.0.0.1:7000 127.0.0.1:7001 127.0.0.1:7002 --cluster-yes
//! ```
//!
//! Every key a pattern keeps for one call shares a hash slot (auxiliary keys are named
//! `{name}:suffix`), so single operations work on a cluster as they are. A [`Batch`] runs
//! on one node, so its keys must share a slot: give them one hash tag, as below; a batch
//! over several slots is refused before anything is sent. It writes keys tagged
//! `{cart:7}` and `{cluster}` and deletes them at the end.

use redis::cluster::ClusterClient;
use redis_patterns::Batch;
use redis_patterns::cache::HashCache;
use redis_patterns::fifo_queue::FifoQueue;
use redis_patterns::keyspace::{DbIterator, cluster_masters};
use redis_patterns::stack::Stack;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let urls = std::env::var("REDIS_CLUSTER_URLS").unwrap_or_else(|_| {
        "redis://127.0.0.1:7000/,redis://127.0.0.1:7001/,redis://127.0.0.1:7002/".into()
    });
    // redis-rs retries a call while a node restarts, doubling its wait up to minutes by
    // default (a refused connection counts as a retry): bound the wait, so that a call
    // across a master's restart answers, or fails, within seconds.
    let client = ClusterClient::builder(urls.split(','))
        .max_retry_wait(1_000)
        .build()?;

    // Sync: a ClusterConnection routes each operation to the node of its key.
    let mut con = client.get_connection().map_err(|err| {
        format!("no Redis Cluster answers at {urls} ({err}): see the top of examples/cluster.rs to start one, or set REDIS_CLUSTER_URLS")
    })?;
    let cart = HashCache::new();
    cart.set("{cart:7}:items", [("book", "1"), ("pen", "3")], None)
        .run(&mut con)?;

    // One hash tag, one slot: the two operations can share a transaction.
    let history = Stack::new("{cart:7}:history")?;
    let mut batch = Batch::transaction();
    let pushed = batch.add(history.push("added pen"));
    let items = batch.add(cart.get::<Vec<(String, String)>>("{cart:7}:items"));
    let mut replies = batch.run(&mut con)?;
    println!(
        "history of {} change(s); cart {:?}",
        pushed.take(&mut replies)?,
        items.take(&mut replies)?
    );

    // Keys in different slots cannot share a batch: refused before any I/O.
    let mut mixed = Batch::new();
    let _ = mixed.add(history.size());
    let _ = mixed.add(Stack::new("{cart:8}:history")?.size());
    if let Err(err) = mixed.run(&mut con) {
        println!("refused: {err}");
    }

    // Async: the same operations, awaited on the async cluster connection.
    let mut async_con = client.get_async_connection().await?;
    let jobs = FifoQueue::new("{cluster}:jobs")?;
    jobs.enqueue(&["a", "b"]).run_async(&mut async_con).await?;
    let first = jobs.dequeue::<String>().run_async(&mut async_con).await?;
    println!("first job: {first:?}");

    // SCAN walks one node: list the masters, then walk each.
    for node in cluster_masters().run(&mut con)? {
        let mut node_con = redis::Client::open(format!("redis://{node}/"))?.get_connection()?;
        let keys: Vec<_> = DbIterator::new(100)
            .keys(&mut node_con)
            .collect::<Result<_, _>>()?;
        println!("{node}: {keys:?}");
    }

    for key in ["{cart:7}:items", "{cart:7}:history", "{cluster}:jobs"] {
        let _: () = redis::cmd("DEL").arg(key).query(&mut con)?;
    }
    Ok(())
}
