//! Integration tests against real `redis-server` processes, in one binary so that its
//! tests share one server and one cluster.

mod harness;
mod recorder;
mod server;

mod acl;
mod app_config;
mod app_log;
mod autocomplete;
mod barrier;
mod batch;
mod binary_recorder;
mod bloom;
mod cache;
mod circular_queue;
mod cluster_faults;
mod compact_string;
mod contract;
mod counter;
mod damaged_data;
mod defaults;
mod docs;
mod durability;
mod fair_lock;
mod fenced_lock;
mod fenced_write;
mod fifo_queue;
mod fixed_length_queue;
mod functions;
mod geo;
mod id_generator;
mod identity_lock;
mod ip_city;
mod key_check;
mod key_templates;
mod keyspace;
mod latch;
mod leaderboard;
mod lock;
mod log;
mod logical_matrix;
mod lottery;
mod matrix;
mod message_queue;
mod online_friends;
mod otel;
mod page_cache;
mod pagination;
mod priority_queue;
mod probe;
mod python_sharing;
mod rate_limiter;
mod redlock;
mod relation;
mod reliable_topic;
mod resource_pool;
mod row_cache;
mod runtime;
mod rw_lock;
mod semaphore;
mod sentinel;
mod session;
mod sharing;
mod short_url;
mod stack;
mod stats;
mod stream_iterator;
mod tag;
mod time_series;
mod timeline;
mod trace;
mod typescript_sharing;
mod unique_counter;
mod user_login;
mod vote;
mod web_session;
mod work_queue;
mod work_queue_events;
mod work_queue_faults;
mod work_queue_flow;
mod work_queue_history;
mod work_queue_operate;
mod work_queue_options;
mod work_queue_schedule;
mod work_queue_turns;

/// Runs an operation on a connection, in the scenarios' script mode
/// ([`harness::script_mode`]), and records it in a transcript, the call written as in the
/// code.
#[macro_export]
macro_rules! step {
    ($transcript:expr, $con:expr, $op:expr) => {
        $transcript.step(
            stringify!($op),
            $crate::harness::InMode::in_mode($op).run($con),
        )
    };
}
