//! The patterns on pooled connections: a `deadpool-redis` pool hands out async
//! connections, and an [`Op`](redis_patterns::Op) runs on one like on any other.
//!
//! ```sh
//! cargo run --example pool                     # the Redis at 127.0.0.1:6379
//! REDIS_URL=redis://127.0.0.1:6379/15 cargo run --example pool
//! ```
//!
//! With no Redis running, `redis-server --daemonize yes` starts one (Debian: `apt-get install redis-server`).
//!
//! It writes keys named `pool:…` and deletes them at the end.

use deadpool_redis::{Config, Runtime};
use redis_patterns::Batch;
use redis_patterns::cache::Cache;
use redis_patterns::log::Log;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let url = std::env::var("REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379/".into());
    let pool = Config::from_url(url.as_str()).create_pool(Some(Runtime::Tokio1))?;
    // The pool connects on first use: ask for one connection now, to say what to do when
    // nothing answers.
    drop(
        pool.get()
            .await
            .map_err(|err| format!("no Redis answers at {url} ({err}): start one with `redis-server --daemonize yes`, or set REDIS_URL"))?,
    );

    // Patterns are plain values, built once and shared by every request handler.
    let audit = Log::new("pool:audit")?;
    let cache = Cache::new();

    let handlers: Vec<_> = (0..8)
        .map(|request| {
            let (pool, audit, cache) = (pool.clone(), audit.clone(), cache.clone());
            tokio::spawn(async move {
                // Each handler borrows a connection for as long as it needs one.
                let mut con = pool.get().await?;
                let user: String = cache
                    .get_or_compute_async(&mut con, "pool:user:7", None, || async {
                        Ok::<_, redis_patterns::Error>("peter".to_owned())
                    })
                    .await?;
                audit
                    .append(format!("request {request} served {user}"))
                    .run_async(&mut con)
                    .await?;
                Ok::<_, Box<dyn std::error::Error + Send + Sync>>(())
            })
        })
        .collect();
    for handler in handlers {
        handler.await?.map_err(|err| err.to_string())?;
    }

    // A batch runs on a pooled connection too: one round trip.
    let mut con = pool.get().await?;
    let mut batch = Batch::new();
    let length = batch.add(audit.length());
    let newest = batch.add(audit.read::<String>(0, 2));
    let mut replies = batch.run_async(&mut con).await?;
    println!(
        "{} entries; newest: {:?}",
        length.take(&mut replies)?,
        newest.take(&mut replies)?
    );

    let _: () = redis::cmd("DEL")
        .arg(&["pool:audit", "pool:user:7"])
        .query_async(&mut con)
        .await?;
    Ok(())
}
