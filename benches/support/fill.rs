//! Filling a keyspace fast for a benchmark: shared by the benches that include it with
//! `#[path = "support/fill.rs"] mod fill;`.

use redis::Value;

/// Runs `body` (Lua over KEYS/ARGV) with EVAL: for building big keyspaces fast.
pub fn lua(con: &mut redis::Connection, body: &str, keys: &[&str], args: &[&str]) {
    let _: Value = redis::cmd("EVAL")
        .arg(body)
        .arg(keys.len())
        .arg(keys)
        .arg(args)
        .query(con)
        .unwrap();
}
