//! Configuration in Redis, read through a local cache: Redis in Action chapter 5
//! (`is_under_maintenance`, `set_config`, `get_config`).
//!
//! | Book | Here | Wire |
//! |---|---|---|
//! | `is_under_maintenance(conn)`: `GET is-under-maintenance`, at most once a second | [`Maintenance::is_under_maintenance(con)`](Maintenance::is_under_maintenance) | `GET`, at most once per [`max_age`](Maintenance::with_max_age) |
//! | `conn.set('is-under-maintenance', 'yes')` | [`Maintenance::set(con, true/false)`](Maintenance::set) | `SET` / `DEL` |
//! | `set_config(conn, type, component, config)` | [`Configs::set_config(con, type, component, &config)`](Configs::set_config) | `SET config:<type>:<component> <json>` |
//! | `get_config(conn, type, component, wait=1)` | [`Configs::get_config(con, type, component)`](Configs::get_config) → `Option<T>` | `GET`, at most once per [`max_age`](Configs::with_max_age) |
//! | `redis_connection(component)` decorator | not ported: a Rust app passes its connections; a connection's settings are a `get_config` of your own type | |
//!
//! What differs from the book, and why:
//!
//! - **The cache belongs to a value, not to the process.** The book keeps it in module
//!   globals, shared unsafely between threads, and its first check compares `None` with a
//!   float, which Python 3 refuses (`TypeError`). Here a [`Maintenance`] or [`Configs`]
//!   holds its cache behind a lock: share one (`Arc`, a `static`) between threads, and
//!   each key is read from Redis at most once per `max_age` (1 s by default, as the book).
//! - **A missing config is `None`**, where the book answers `{}`; a config that does not
//!   decode into the type asked for is an error, not a silently different dict.
//! - A failed read is returned as the error it is and not cached, so the next call tries
//!   again.
//!
//! These are single native commands on keys of their own, so on a cluster each key lives
//! where its name hashes; there is nothing to keep atomic across keys.
//!
//! ```no_run
//! # fn demo() -> redis_patterns::Result<()> {
//! use redis_patterns::app_config::{Configs, Maintenance};
//!
//! let mut con = redis::Client::open("redis://127.0.0.1/")?.get_connection()?;
//! let maintenance = Maintenance::new();
//! if maintenance.is_under_maintenance(&mut con)? {
//!     // Serve the "back soon" page.
//! }
//! let configs = Configs::new();
//! configs.set_config(&mut con, "redis", "statistics", &serde_json::json!({"db": 15}))?;
//! let settings: Option<serde_json::Value> = configs.get_config(&mut con, "redis", "statistics")?;
//! # Ok(()) }
//! ```

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::runtime::error::{Error, Result};
use crate::runtime::input;
use crate::runtime::op::Op;

/// How long a value read from Redis is trusted: the book's 1 s.
pub const DEFAULT_MAX_AGE: Duration = Duration::from_secs(1);

/// The maintenance flag: a key that holds any value while the site is under maintenance,
/// read at most once per `max_age`. See the [module docs](self).
#[derive(Debug)]
pub struct Maintenance {
    key: String,
    max_age: Duration,
    /// When the flag was last read, and what it said.
    cached: Mutex<Option<(Instant, bool)>>,
}

impl Default for Maintenance {
    fn default() -> Self {
        Maintenance::new()
    }
}

impl Maintenance {
    /// The book's flag: the key `is-under-maintenance`, read at most once a second.
    pub fn new() -> Self {
        Maintenance {
            key: "is-under-maintenance".to_owned(),
            max_age: DEFAULT_MAX_AGE,
            cached: Mutex::new(None),
        }
    }

    /// The flag at `key` instead. An empty key is [`Error::InvalidInput`].
    pub fn with_key(mut self, key: impl Into<String>) -> Result<Self> {
        let key = key.into();
        input::key("key", &key)?;
        self.key = key;
        Ok(self)
    }

    /// Trusts a read for `max_age` (`Duration::ZERO`: read every time).
    pub fn with_max_age(mut self, max_age: Duration) -> Self {
        self.max_age = max_age;
        self
    }

    /// Whether the site is under maintenance: the key holds a non-empty value. Reads it
    /// (`GET`) when the last read is older than `max_age`; otherwise answers from that read.
    ///
    /// The read happens under the cache's lock, so however many threads share this value,
    /// one of them reads per `max_age` while the others wait for its answer.
    pub fn is_under_maintenance(&self, con: &mut dyn redis::ConnectionLike) -> Result<bool> {
        let mut cached = self.lock();
        if let Some((at, on)) = *cached
            && at.elapsed() < self.max_age
        {
            return Ok(on);
        }
        let mut cmd = redis::cmd("GET");
        cmd.arg(&self.key);
        let value: Option<Vec<u8>> = Op::native(cmd).run(con)?;
        let on = value.is_some_and(|v| !v.is_empty());
        *cached = Some((Instant::now(), on));
        Ok(on)
    }

    /// Puts the site under maintenance (`SET key yes`) or takes it out (`DEL key`). Every
    /// app server sees it within its `max_age`; this one at once.
    pub fn set(&self, con: &mut dyn redis::ConnectionLike, on: bool) -> Result<()> {
        let mut cmd = redis::cmd(if on { "SET" } else { "DEL" });
        cmd.arg(&self.key);
        if on {
            cmd.arg("yes");
        }
        Op::<redis::Value>::native(cmd).run(con)?;
        *self.lock() = Some((Instant::now(), on));
        Ok(())
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Option<(Instant, bool)>> {
        // A panic elsewhere while the lock was held leaves a value that is still whole.
        self.cached
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// Configurations as JSON under `config:<type>:<component>`, each read at most once per
/// `max_age`. See the [module docs](self).
#[derive(Debug)]
pub struct Configs {
    prefix: String,
    max_age: Duration,
    /// Each key's last read: when, and the JSON it held (`None`: no such key).
    cached: Mutex<HashMap<String, (Instant, Option<String>)>>,
}

impl Default for Configs {
    fn default() -> Self {
        Configs::new()
    }
}

impl Configs {
    /// The book's keys, `config:<type>:<component>`, read at most once a second each.
    pub fn new() -> Self {
        Configs {
            prefix: "config:".to_owned(),
            max_age: DEFAULT_MAX_AGE,
            cached: Mutex::new(HashMap::new()),
        }
    }

    /// Starts every key with `prefix` instead of `config:` (it may be empty).
    pub fn with_prefix(mut self, prefix: impl Into<String>) -> Self {
        self.prefix = prefix.into();
        self
    }

    /// Trusts a read for `max_age` (`Duration::ZERO`: read every time).
    pub fn with_max_age(mut self, max_age: Duration) -> Self {
        self.max_age = max_age;
        self
    }

    /// The key of a configuration: `<prefix><type>:<component>`. An empty type or
    /// component is [`Error::InvalidInput`].
    pub fn key(&self, kind: &str, component: &str) -> Result<String> {
        input::key("type", kind)?;
        input::key("component", component)?;
        Ok(format!("{}{kind}:{component}", self.prefix))
    }

    /// Stores `config` as JSON (`SET`); this value sees it at once, others within their
    /// `max_age`.
    pub fn set_config<T: Serialize + ?Sized>(
        &self,
        con: &mut dyn redis::ConnectionLike,
        kind: &str,
        component: &str,
        config: &T,
    ) -> Result<()> {
        let key = self.key(kind, component)?;
        let json = serde_json::to_string(config).map_err(|err| {
            Error::invalid("config", format!("does not serialize to JSON: {err}"))
        })?;
        let mut cmd = redis::cmd("SET");
        cmd.arg(&key).arg(&json);
        Op::<()>::native(cmd).run(con)?;
        self.lock().insert(key, (Instant::now(), Some(json)));
        Ok(())
    }

    /// The configuration, decoded from its JSON, or `None` when there is none. Reads it
    /// (`GET`) when the last read of this key is older than `max_age`.
    pub fn get_config<T: DeserializeOwned>(
        &self,
        con: &mut dyn redis::ConnectionLike,
        kind: &str,
        component: &str,
    ) -> Result<Option<T>> {
        let key = self.key(kind, component)?;
        let json = {
            // Read under the lock: one thread reads a stale key, the others wait for it.
            let mut cached = self.lock();
            match cached
                .get(&key)
                .filter(|(at, _)| at.elapsed() < self.max_age)
            {
                Some((_, json)) => json.clone(),
                None => {
                    let mut cmd = redis::cmd("GET");
                    cmd.arg(&key);
                    let json: Option<String> = Op::native(cmd).run(con)?;
                    cached.insert(key.clone(), (Instant::now(), json.clone()));
                    json
                }
            }
        };
        json.map(|json| {
            serde_json::from_str(&json).map_err(|err| {
                Error::unexpected_reply("config", format!("{key} does not decode: {err}"))
            })
        })
        .transpose()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, (Instant, Option<String>)>> {
        self.cached
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}
