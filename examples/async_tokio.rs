//! The async API on tokio, with redis-rs's `ConnectionManager` (one multiplexed
//! connection that reconnects by itself), as a small service would use it.
//!
//! ```sh
//! cargo run --example async_tokio                     # the Redis at 127.0.0.1:6379
//! REDIS_URL=redis://127.0.0.1:6379/15 cargo run --example async_tokio
//! ```
//!
//! With no Redis running, `redis-server --daemonize yes` starts one (Debian: `apt-get install redis-server`).
//!
//! It writes keys named `async:…` and deletes them at the end.

use std::time::Duration;

use redis::AsyncConnectionConfig;
use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use redis_patterns::Batch;
use redis_patterns::cache::Cache;
use redis_patterns::fifo_queue::FifoQueue;
use redis_patterns::stack::Stack;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let url = std::env::var("REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379/".into());
    let client = redis::Client::open(url.as_str())?;

    // Most operations share one ConnectionManager: it is cheap to clone, and every clone
    // sends down the same connection.
    let mut con = ConnectionManager::new_with_config(
        client.clone(),
        ConnectionManagerConfig::new().set_response_timeout(Some(Duration::from_secs(2))),
    )
    .await
    .map_err(|err| format!("no Redis answers at {url} ({err}): start one with `redis-server --daemonize yes`, or set REDIS_URL"))?;

    // Cache-aside without a stampede: a hit is one GET; a miss computes once, however
    // many tasks miss at the same moment.
    let cache = Cache::new();
    let tasks: Vec<_> = (0..4)
        .map(|task| {
            let (cache, mut con) = (cache.clone(), con.clone());
            tokio::spawn(async move {
                cache
                    .get_or_compute_async(&mut con, "async:page", None, || async move {
                        println!("task {task} renders the page (only one task does)");
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        Ok::<_, redis_patterns::Error>("<html>…</html>".to_owned())
                    })
                    .await
            })
        })
        .collect();
    for task in tasks {
        let page: String = task.await??;
        assert_eq!(page, "<html>…</html>");
    }

    // A queue: producers push on the shared connection; a consumer that blocks gets a
    // connection of its own with no response timeout (a blocking pop longer than the
    // timeout would fail with Error::ResponseTimeout, and lose what it pops later).
    let jobs = FifoQueue::new("async:jobs")?;
    let config = AsyncConnectionConfig::new().set_response_timeout(None);
    let mut blocking = client
        .get_multiplexed_async_connection_with_config(&config)
        .await?;
    let consumer = {
        let jobs = jobs.clone();
        tokio::spawn(async move {
            let mut done = Vec::new();
            while let Some(job) = jobs
                .dequeue_blocking::<String>(Some(Duration::from_millis(500)))
                .run_async(&mut blocking)
                .await?
            {
                done.push(job);
            }
            Ok::<_, redis_patterns::Error>(done)
        })
    };
    for n in 0..3 {
        jobs.enqueue(&[format!("job:{n}")])
            .run_async(&mut con)
            .await?;
    }
    println!("the consumer took {:?}", consumer.await??);

    // Several operations in one round trip, applied together.
    let undo = Stack::new("async:undo")?;
    let mut batch = Batch::transaction();
    let size = batch.add(undo.push("typed 'a'"));
    let _ = batch.add(undo.push("typed 'b'"));
    let top = batch.add(undo.top::<String>());
    let mut replies = batch.run_async(&mut con).await?;
    println!(
        "undo stack: {} entries, the last {:?}",
        size.take(&mut replies)? + 1,
        top.take(&mut replies)?
    );

    let _: () = redis::cmd("DEL")
        .arg(&["async:page", "async:jobs", "async:undo"])
        .query_async(&mut con)
        .await?;
    Ok(())
}
