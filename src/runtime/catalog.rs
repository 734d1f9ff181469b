//! Every script of the crate, with its header metadata and source, for tools, docs and
//! exports; and [`load_all`], which loads them into a server.

use std::path::Path;

use include_dir::{Dir, include_dir};
use redis::Value;

use crate::runtime::error::{Error, Result};
use crate::runtime::op::load_cmd;
use crate::runtime::script::Script;

/// The `scripts/` folder as the crate was built with it, for apps that ship the scripts
/// to non-Rust services.
pub static SCRIPTS_DIR: Dir<'static> = include_dir!("$CARGO_MANIFEST_DIR/scripts");

/// Every script, sorted by name.
///
/// ```
/// for script in redis_patterns::catalog::scripts() {
///     println!("{} ({}): {}", script.name, &script.sha1[..8], script.summary);
/// }
/// ```
pub fn scripts() -> &'static [&'static Script] {
    crate::scripts::ALL
}

/// The script called `name` (`identity_lock/release`), if there is one.
pub fn find(name: &str) -> Option<&'static Script> {
    scripts().iter().copied().find(|s| s.name == name)
}

/// Writes every script to `dir`, as `<dir>/<family>/<op>.lua`, creating folders as needed.
pub fn export(dir: impl AsRef<Path>) -> std::io::Result<()> {
    SCRIPTS_DIR.extract(dir)
}

/// Loads every script into the server with `SCRIPT LOAD` (into every node of a cluster).
///
/// Single operations load their script by themselves when the server lacks it, and a
/// [`Batch`](crate::Batch) loads what it calls in its own round trip. Call this at start-up
/// when the app sends `EVALSHA` in its own pipelines or transactions.
pub fn load_all(con: &mut dyn redis::ConnectionLike) -> Result<()> {
    for script in scripts() {
        check_sha1(script, load_cmd(script).query(con)?)?;
    }
    Ok(())
}

/// [`load_all`] on an async connection.
pub async fn load_all_async<C: redis::aio::ConnectionLike>(con: &mut C) -> Result<()> {
    for script in scripts() {
        check_sha1(script, load_cmd(script).query_async(con).await?)?;
    }
    Ok(())
}

/// The server hashes what it received; a different digest means the script was altered
/// on the way (a proxy rewriting commands, say) and `EVALSHA` would never find it.
fn check_sha1(script: &Script, reply: Value) -> Result<()> {
    // A cluster answers with one digest per node; they must all agree.
    let digests: Vec<String> = match reply {
        Value::Array(items) => items
            .into_iter()
            .map(redis::from_redis_value)
            .collect::<Result<_, _>>()?,
        other => vec![redis::from_redis_value(other)?],
    };
    match digests.iter().find(|d| d.as_str() != script.sha1) {
        None => Ok(()),
        Some(digest) => Err(Error::unexpected_reply(
            "SCRIPT LOAD returned another SHA1 than the one computed at build time",
            format!("{}: expected {}, got {digest}", script.name, script.sha1),
        )),
    }
}
