// The README, with its links to files and to `cargo doc`'s pages made intra-doc links
// (see build.rs).
#![doc = include_str!(concat!(env!("OUT_DIR"), "/README.md"))]
#![warn(missing_docs, missing_debug_implementations)]
#![cfg_attr(not(test), forbid(clippy::print_stdout))]

mod runtime;

#[cfg(feature = "json")]
pub mod app_config;
pub mod app_log;
pub mod autocomplete;
pub mod barrier;
pub mod binary_recorder;
pub mod bloom;
pub mod cache;
pub mod circular_queue;
pub mod compact_string;
pub mod counter;
pub mod fair_lock;
pub mod fenced_lock;
pub mod fenced_write;
pub mod fifo_queue;
pub mod fixed_length_queue;
pub mod geo;
pub mod guide;
pub mod id_generator;
pub mod identity_lock;
#[cfg(feature = "json")]
pub mod ip_city;
pub mod keyspace;
pub mod latch;
pub mod leaderboard;
pub mod lock;
pub mod log;
pub mod logical_matrix;
pub mod lottery;
pub mod matrix;
pub mod message_queue;
pub mod online_friends;
pub mod page_cache;
pub mod pagination;
pub mod priority_queue;
pub mod rate_limiter;
pub mod redlock;
pub mod relation;
pub mod reliable_topic;
pub mod resource_pool;
pub mod row_cache;
pub mod rw_lock;
pub mod semaphore;
#[cfg(all(feature = "sentinel", feature = "aio"))]
pub mod sentinel;
pub mod session;
pub mod short_url;
pub mod stack;
pub mod stats;
pub mod stream_iterator;
pub mod tag;
pub mod time_series;
pub mod timeline;
pub mod unique_counter;
pub mod user_login;
pub mod vote;
pub mod web_session;
pub mod work_queue;

/// The typed call of every script, generated from the script headers (`generated/scripts.rs`).
///
/// Each family is a module with, for each script, a `static` [`Script`] (its metadata,
/// source and SHA1) and a function whose parameters are the header's keys and arguments,
/// in order. The pattern types are built on these; call them directly to run a script
/// without the pattern layer.
pub mod scripts {
    include!(concat!(env!("CARGO_MANIFEST_DIR"), "/generated/scripts.rs"));
}

/// redis-rs, which the crate is built on: its connection and client types are the ones
/// every [`Op`] runs on, whatever version of redis-rs the app itself names.
pub use redis;

pub use runtime::batch::{Batch, Replies, Slot};
pub use runtime::call::ScriptCall;
pub use runtime::catalog;
pub use runtime::catalog::{load, load_all};
#[cfg(feature = "aio")]
pub use runtime::catalog::{load_all_async, load_async};
pub use runtime::durability::{Acks, Aof, Durability, Durable};
pub use runtime::error::{Error, Result};
pub use runtime::input::{ScriptArg, float_from_text, integer_from_text};
pub use runtime::op::{Op, ScriptMode};
pub use runtime::script::{
    Clock, Count, ErrorDoc, GENERATED_CODE_FORMAT, KeyForm, KeyPart, KeyTemplate, Param, Preset,
    PresetValue, Returns, Rule, Script, check_generated_code_format,
};
pub use runtime::server;
pub use runtime::token;
pub use runtime::trace;
pub use runtime::wait;
