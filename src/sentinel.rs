//! Redis Sentinel for the async loops (feature `sentinel`, with `tokio` or `smol`): a
//! connection to the primary the sentinels name, which asks them again after a failover.
//!
//! The sync loops connect through [`Connect`](crate::work_queue::Connect), which a
//! `Mutex<redis::sentinel::SentinelClient>` implements. The async loops take a connection
//! and send their calls again when one fails with an error that passes
//! ([`is_transient`](crate::work_queue::is_transient)); redis-rs's `ConnectionManager`
//! reconnects to the address it started with, which after a failover is a replica or
//! nothing. [`SentinelConnection`] drops its connection when a call fails so (a lost
//! connection, a demoted server's `READONLY` or `UNBLOCKED`), and the next call asks the
//! sentinels for the primary.
//!
//! The same goes for the other loops: a [`Scheduler`](crate::work_queue::schedule::Scheduler)
//! runs on the `Mutex<SentinelClient>` (sync) or on a `SentinelConnection` (async), and an
//! event reader ([`Events`](crate::work_queue::Events)) goes on from its last id on a
//! `SentinelConnection`, or, sync, on a new connection its app opens with
//! [`Connect::connect`](crate::work_queue::Connect::connect) after an error. While the
//! sentinels name no primary that answers as one (a failover under way), a loop's
//! connection fails with an error that passes, and the loop tries again after a pause.

use std::sync::Arc;

use futures_util::lock::Mutex;
use redis::aio::{ConnectionLike, MultiplexedConnection};
use redis::sentinel::SentinelClient;
use redis::{Cmd, Pipeline, RedisError, RedisFuture, RedisResult, Value};

/// A multiplexed connection to the primary a [`SentinelClient`] names: clones share it,
/// and after a call failed as a failover makes calls fail, the next call asks the
/// sentinels again and connects to the primary they name then.
///
/// ```no_run
/// # async fn demo() -> redis_patterns::Result<()> {
/// use redis::sentinel::{SentinelClient, SentinelServerType};
/// use redis_patterns::sentinel::SentinelConnection;
/// use redis_patterns::work_queue::{Job, Stop, WorkQueue};
///
/// let sentinels = vec!["redis://10.0.0.1:26379", "redis://10.0.0.2:26379", "redis://10.0.0.3:26379"];
/// let client = SentinelClient::build(sentinels, "jobs".into(), None, SentinelServerType::Master)?;
/// let mut con = SentinelConnection::new(client).await?;
/// let queue = WorkQueue::new("webhooks")?;
/// let report = queue
///     .worker()
///     .run_async(&mut con, &Stop::new(), |job: Job| async move { deliver(&job.payload).await })
///     .await?;
/// # Ok(()) }
/// # async fn deliver(_: &[u8]) -> Result<(), String> { Ok(()) }
/// ```
#[derive(Clone)]
pub struct SentinelConnection {
    shared: Arc<Mutex<Shared>>,
    db: i64,
}

struct Shared {
    client: SentinelClient,
    /// The connection to the primary, until a call on it fails as a failover makes calls
    /// fail.
    primary: Option<MultiplexedConnection>,
}

impl std::fmt::Debug for SentinelConnection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SentinelConnection")
            .field("db", &self.db)
            .finish_non_exhaustive()
    }
}

impl SentinelConnection {
    /// Asks the sentinels of `client` for the primary and connects to it.
    pub async fn new(client: SentinelClient) -> RedisResult<Self> {
        let mut shared = Shared {
            client,
            primary: None,
        };
        let primary = shared.client.get_async_connection().await?;
        let db = primary.get_db();
        shared.primary = Some(primary);
        Ok(SentinelConnection {
            shared: Arc::new(Mutex::new(shared)),
            db,
        })
    }

    /// The connection to the primary, asking the sentinels for it when there is none.
    async fn primary(&self) -> RedisResult<MultiplexedConnection> {
        let mut shared = self.shared.lock().await;
        if let Some(primary) = &shared.primary {
            return Ok(primary.clone());
        }
        let primary = shared.client.get_async_connection().await?;
        shared.primary = Some(primary.clone());
        Ok(primary)
    }

    /// After `err` on a call: forgets the connection when the error says it leads nowhere
    /// useful now (lost, or to a server that is no primary any more).
    async fn after(&self, err: &RedisError) {
        let lost = err.is_io_error()
            || err.is_connection_dropped()
            || err.is_connection_refusal()
            || err.is_timeout();
        let demoted = err
            .code()
            .is_some_and(|code| ["READONLY", "UNBLOCKED", "MASTERDOWN", "LOADING"].contains(&code));
        if lost || demoted {
            self.shared.lock().await.primary = None;
        }
    }
}

impl ConnectionLike for SentinelConnection {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        Box::pin(async move {
            let mut primary = self.primary().await?;
            let answer = primary.req_packed_command(cmd).await;
            if let Err(err) = &answer {
                self.after(err).await;
            }
            answer
        })
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        cmd: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        Box::pin(async move {
            let mut primary = self.primary().await?;
            let answer = primary.req_packed_commands(cmd, offset, count).await;
            if let Err(err) = &answer {
                self.after(err).await;
            }
            answer
        })
    }

    fn get_db(&self) -> i64 {
        self.db
    }
}
