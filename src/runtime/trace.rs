//! What the crate does, as `tracing` spans (feature `tracing`; nothing at all without it).
//!
//! Each run of an [`Op`](crate::Op) is a `redis_patterns.op` span, and each run of a
//! [`Batch`](crate::Batch) a `redis_patterns.batch` span, at the `DEBUG` level, with these
//! fields:
//!
//! | Field | Op | Batch |
//! |---|---|---|
//! | `script` | the script, `family/op` (`work_queue/take`), or `native`, or `rejected` for input refused before any I/O | |
//! | `mode` | `EVALSHA`, `FCALL`, `native` (`none` for rejected input) | |
//! | `keys` | how many keys the call names | |
//! | `ops`, `transaction` | | how many operations; a MULTI/EXEC transaction or a pipeline |
//! | `recoveries` | times the call was sent again behind a load (`NOSCRIPT` after a restart or `SCRIPT FLUSH`; the Functions library missing) | the same, for the batch |
//! | `error` | the error's code when it failed: a script's (`BAD_TTL`, `LEASE_LOST`), the server's (`WRONGTYPE`, `NOPERM`), or `INVALID_INPUT`, `TIMEOUT`, `RESPONSE_TIMEOUT`, `OVERFLOW`, `RAN_OUTSIDE_TRANSACTION`; `error` for one without a code (a lost connection) | the same |
//! | `elapsed_us` | the time the run took, client side, in microseconds | the same |
//!
//! Each recovery is also an event inside the span (`recovery = "NOSCRIPT"` or `"missing
//! library"`, with its `attempt`). Ops that a pattern runs for you (a
//! [`Worker`](crate::work_queue::Worker)'s takes and renewals, `get_or_compute`'s calls)
//! are spans like any other.
//!
//! ```toml
//! redis-patterns = { git = "https://github.com/redis-patterns/redis-patterns", features = ["tracing"] }
//! ```
//!
//! **Metrics from the spans.** A `tracing-subscriber` layer sees every span close; read
//! the fields when they are recorded (`on_record`) and count at `on_close`: a counter of
//! calls per `script` and `error`, a histogram of `elapsed_us` per `script`, a counter of
//! `recoveries` (a rising one means scripts keep leaving the server: restarts, failovers,
//! flushes, or Redis 7.4+ evicting them). `tracing-opentelemetry` turns the same spans into
//! OpenTelemetry spans, whose collectors derive these metrics themselves.
//!
//! **Spans in tests.** A test that records the spans with a scoped subscriber
//! (`tracing::subscriber::with_default`) can miss some while other tests run in the same
//! process: tracing caches each callsite's interest when the callsite is first reached,
//! and while only one subscriber exists it asks the subscriber of the thread that reached
//! it, so a thread with none caches `never` for every thread
//! ([tokio-rs/tracing#3611](https://github.com/tokio-rs/tracing/issues/3611)). Record
//! them through a global subscriber whose `register_callsite` answers
//! `Interest::sometimes()` and whose `enabled` tells the recording threads apart.

use crate::runtime::error::Result;

/// The span of one [`Op`](crate::Op) or [`Batch`](crate::Batch) run, open until
/// [`finish`](Self::finish).
#[derive(Debug)]
pub(crate) struct Trace {
    #[cfg(feature = "tracing")]
    span: tracing::Span,
    #[cfg(feature = "tracing")]
    start: std::time::Instant,
    #[cfg(feature = "tracing")]
    recoveries: std::sync::atomic::AtomicU64,
}

impl Trace {
    /// The span of an operation: `script` is the script's name (`family/op`) or `native`,
    /// `mode` how it is sent (`EVALSHA`, `FCALL`, `native`), `keys` how many keys it names.
    #[cfg_attr(not(feature = "tracing"), allow(unused_variables))]
    pub(crate) fn op(script: &str, mode: &str, keys: usize) -> Self {
        #[cfg(feature = "tracing")]
        return Self::of(tracing::debug_span!(
            "redis_patterns.op",
            script,
            mode,
            keys,
            recoveries = 0u64,
            error = tracing::field::Empty,
            elapsed_us = tracing::field::Empty,
        ));
        #[cfg(not(feature = "tracing"))]
        Trace {}
    }

    /// The span of a batch of `ops` operations, a transaction or a pipeline.
    #[cfg_attr(not(feature = "tracing"), allow(unused_variables))]
    pub(crate) fn batch(ops: usize, transaction: bool) -> Self {
        #[cfg(feature = "tracing")]
        return Self::of(tracing::debug_span!(
            "redis_patterns.batch",
            ops,
            transaction,
            recoveries = 0u64,
            error = tracing::field::Empty,
            elapsed_us = tracing::field::Empty,
        ));
        #[cfg(not(feature = "tracing"))]
        Trace {}
    }

    /// `span`, begun now.
    #[cfg(feature = "tracing")]
    fn of(span: tracing::Span) -> Self {
        Trace {
            span,
            start: std::time::Instant::now(),
            recoveries: std::sync::atomic::AtomicU64::new(0),
        }
    }

    /// A recovery: `what` the server lacked (`NOSCRIPT`, `missing library`), after which
    /// the call is sent again behind a load. An event in the span, counted in its
    /// `recoveries`.
    #[cfg_attr(not(feature = "tracing"), allow(unused_variables))]
    pub(crate) fn recovered(&self, what: &'static str) {
        #[cfg(feature = "tracing")]
        {
            // Atomic only so that a `Trace` can be held across an await of a `Send` future.
            let attempt = self
                .recoveries
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed)
                + 1;
            self.span.record("recoveries", attempt);
            tracing::debug!(parent: &self.span, recovery = what, attempt, "loaded and sent again");
        }
    }

    /// Ends the span with the result: the error's code (a script's `BAD_TTL`, the
    /// server's `WRONGTYPE`, …; `INVALID_INPUT`, `TIMEOUT`, `RESPONSE_TIMEOUT`,
    /// `OVERFLOW`, `RAN_OUTSIDE_TRANSACTION` for the crate's own; `error` for an error
    /// without a code, a lost connection) and the time since the span began.
    #[cfg_attr(not(feature = "tracing"), allow(unused_variables))]
    pub(crate) fn finish<T>(&self, result: &Result<T>) {
        #[cfg(feature = "tracing")]
        {
            use crate::runtime::error::Error;
            if let Err(err) = result {
                let code = err.code().unwrap_or(match err {
                    Error::InvalidInput { .. } => "INVALID_INPUT",
                    Error::Timeout { .. } => "TIMEOUT",
                    Error::ResponseTimeout { .. } => "RESPONSE_TIMEOUT",
                    Error::Overflow { .. } => "OVERFLOW",
                    Error::RanOutsideTransaction { .. } => "RAN_OUTSIDE_TRANSACTION",
                    _ => "error",
                });
                self.span.record("error", code);
            }
            let elapsed = u64::try_from(self.start.elapsed().as_micros()).unwrap_or(u64::MAX);
            self.span.record("elapsed_us", elapsed);
        }
    }

    /// Runs `f` inside the span.
    pub(crate) fn in_scope<R>(&self, f: impl FnOnce() -> R) -> R {
        #[cfg(feature = "tracing")]
        return self.span.in_scope(f);
        #[cfg(not(feature = "tracing"))]
        f()
    }

    /// `future`, run inside the span.
    #[cfg(feature = "aio")]
    pub(crate) fn instrument<F: std::future::Future>(
        &self,
        future: F,
    ) -> impl std::future::Future<Output = F::Output> {
        #[cfg(feature = "tracing")]
        return tracing::Instrument::instrument(future, self.span.clone());
        #[cfg(not(feature = "tracing"))]
        future
    }
}
