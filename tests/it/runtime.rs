//! The machinery every family shares: loading, NOSCRIPT recovery, batches, async
//! connections, the catalogue and the generated code.

use std::time::Duration;

use redis_patterns::counter::{Counter, HashCounter};
use redis_patterns::identity_lock::IdentityLock;
use redis_patterns::{Batch, Error, catalog, scripts};

use crate::harness::{self, assert_code, assert_invalid};

fn script_flush(con: &mut dyn redis::ConnectionLike) {
    harness::cmd(con, &["SCRIPT", "FLUSH"]);
}

fn loaded(con: &mut dyn redis::ConnectionLike, script: &redis_patterns::Script) -> bool {
    // On a cluster, SCRIPT EXISTS asks every primary and answers for all of them.
    let found: Vec<bool> = redis::cmd("SCRIPT")
        .arg("EXISTS")
        .arg(script.sha1)
        .query(con)
        .unwrap();
    found == [true]
}

#[test]
fn load_all_loads_every_script_with_its_build_time_sha1() {
    let servers = harness::script_cache_servers();
    let mut con = servers.db().con();
    script_flush(&mut con);
    redis_patterns::load_all(&mut con).unwrap();
    for script in catalog::scripts() {
        assert!(loaded(&mut con, script), "{} not loaded", script.name);
    }
}

#[test]
fn load_all_reaches_every_cluster_node() {
    let servers = harness::script_cache_servers();
    let mut con = servers.cluster_con();
    script_flush(&mut con);
    redis_patterns::load_all(&mut con).unwrap();
    for node in &servers.cluster().nodes {
        let mut node = node.connection();
        for script in catalog::scripts() {
            assert!(
                loaded(&mut node, script),
                "{} not on every node",
                script.name
            );
        }
    }
}

#[test]
fn a_flushed_script_is_loaded_again_and_run_once() {
    let servers = harness::script_cache_servers();
    let mut con = servers.db().con();
    let lock = IdentityLock::new("lock").unwrap();
    assert!(lock.acquire("t", None).run(&mut con).unwrap());
    script_flush(&mut con);
    assert!(!loaded(&mut con, &scripts::identity_lock::RELEASE));
    assert!(lock.release("t").run(&mut con).unwrap());
    assert!(loaded(&mut con, &scripts::identity_lock::RELEASE));
}

/// A sync test driving its own runtime, so that it holds its turn on the script-cache
/// servers outside the async code.
#[test]
fn async_connections_run_and_recover_from_noscript() {
    let servers = harness::script_cache_servers();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async {
        let db = servers.db();
        let lock = IdentityLock::new("lock").unwrap();

        let mut multiplexed = db.multiplexed().await;
        script_flush(&mut db.con());
        assert!(
            lock.acquire("t", None)
                .run_async(&mut multiplexed)
                .await
                .unwrap()
        );
        assert!(lock.release("t").run_async(&mut multiplexed).await.unwrap());

        let mut manager = redis::aio::ConnectionManager::new(db.client.clone())
            .await
            .unwrap();
        script_flush(&mut db.con());
        assert!(
            lock.acquire("t", None)
                .run_async(&mut manager)
                .await
                .unwrap()
        );
        assert!(lock.release("t").run_async(&mut manager).await.unwrap());
        assert_invalid(lock.release("").run_async(&mut manager).await, "token");

        let mut cluster = servers
            .cluster_client()
            .get_async_connection()
            .await
            .unwrap();
        let lock = IdentityLock::new("runtime:async:lock").unwrap();
        script_flush(&mut servers.cluster_con());
        assert!(
            lock.acquire("t", None)
                .run_async(&mut cluster)
                .await
                .unwrap()
        );
        assert_eq!(
            lock.lease("t").run_async(&mut cluster).await.unwrap(),
            redis_patterns::identity_lock::Holding::Forever
        );
        assert!(lock.release("t").run_async(&mut cluster).await.unwrap());
    });
}

#[test]
fn read_only_scripts_run_with_evalsha_ro() {
    let op = IdentityLock::new("lock").unwrap().lease("t");
    let script = op.script().unwrap();
    assert!(script.is_read_only());
    let packed = String::from_utf8_lossy(&op.cmd().unwrap().get_packed_command()).into_owned();
    assert!(packed.contains("EVALSHA_RO"), "{packed}");
    let packed = IdentityLock::new("lock")
        .unwrap()
        .release("t")
        .cmd()
        .unwrap()
        .get_packed_command();
    assert!(!String::from_utf8_lossy(&packed).contains("EVALSHA_RO"));
}

#[test]
fn a_batch_loads_its_scripts_and_decodes_each_reply() {
    let servers = harness::script_cache_servers();
    let db = servers.db();
    let mut con = db.con();
    harness::cmd(&mut con, &["HSET", "a:hash", "f", "v"]);
    script_flush(&mut con);

    let lock = IdentityLock::new("lock").unwrap();
    let mut batch = Batch::new();
    let acquired = batch.add(lock.acquire("t", Some(Duration::from_secs(10))));
    let count = batch.add(Counter::new("n").unwrap().increase(5));
    let wrong = batch.add(Counter::new("a:hash").unwrap().increase(1));
    let reset = batch.add(HashCounter::new("h", "f").unwrap().reset(3));
    let released = batch.add(lock.release("t"));
    assert_eq!(batch.len(), 5);
    let mut replies = batch.run(&mut con).unwrap();
    assert!(acquired.take(&mut replies).unwrap());
    assert_eq!(count.take(&mut replies).unwrap(), 5);
    assert_code(wrong.take(&mut replies), "WRONGTYPE");
    assert_eq!(reset.take(&mut replies).unwrap(), 0);
    assert!(released.take(&mut replies).unwrap());
}

/// A sync test driving its own runtime, so that it holds its turn on the script-cache
/// servers outside the async code.
#[test]
fn a_transaction_runs_async_and_maps_script_errors() {
    let servers = harness::script_cache_servers();
    let db = servers.db();
    tokio::runtime::Runtime::new().unwrap().block_on(async {
        let mut con = db.multiplexed().await;
        harness::cmd(&mut db.con(), &["HSET", "h", "text", "abc"]);
        script_flush(&mut db.con());

        let mut batch = Batch::transaction();
        let refused = batch.add(HashCounter::new("h", "text").unwrap().reset(1));
        let count = batch.add(Counter::new("n").unwrap().increase(2));
        let mut replies = batch.run_async(&mut con).await.unwrap();
        match refused.take(&mut replies) {
            Err(Error::Script { script, code, .. }) => {
                assert_eq!(
                    (script, code.as_str()),
                    ("counter/hash_reset", "NOT_INTEGER")
                )
            }
            other => panic!("expected NOT_INTEGER, got {other:?}"),
        }
        assert_eq!(count.take(&mut replies).unwrap(), 2);
    });
}

#[test]
fn a_batch_with_bad_input_sends_nothing() {
    let db = harness::fresh_db();
    let mut con = db.con();
    let mut batch = Batch::transaction();
    let _ = batch.add(Counter::new("n").unwrap().increase(1));
    let _ = batch.add(IdentityLock::new("lock").unwrap().release(""));
    assert_invalid(batch.run(&mut con), "token");
    assert!(harness::dump(&mut con).is_empty());
}

#[test]
fn the_catalogue_lists_every_script_with_its_embedded_source() {
    let names: Vec<&str> = catalog::scripts().iter().map(|s| s.name).collect();
    let mut sorted = names.clone();
    sorted.sort_unstable();
    assert_eq!(names, sorted);
    assert!(names.len() >= 5, "{names:?}");
    for script in catalog::scripts() {
        assert_eq!(catalog::find(script.name), Some(*script));
        assert_eq!(script.path, format!("scripts/{}.lua", script.name));
        let file = catalog::SCRIPTS_DIR
            .get_file(format!("{}.lua", script.name))
            .unwrap_or_else(|| panic!("{} is not in SCRIPTS_DIR", script.name));
        assert_eq!(
            file.contents_utf8(),
            Some(script.source),
            "{} drifted",
            script.name
        );
    }
    assert_eq!(catalog::find("no/such"), None);

    let release = catalog::find("identity_lock/release").unwrap();
    assert_eq!((release.keys.len(), release.args.len()), (1, 1));
    assert_eq!(
        (
            release.keys[0].name,
            release.args[0].name,
            release.args[0].ty
        ),
        ("lock", "token", "string")
    );
    assert_eq!(release.returns.ty, "bool");
    assert_eq!(
        release.errors.iter().map(|e| e.code).collect::<Vec<_>>(),
        ["BAD_ARGS", "BAD_TOKEN", "BAD_KEYS"]
    );
    assert!(!release.is_read_only());
}

/// `SCRIPTS_DIR` is built by build.rs on the generated sources; it holds what
/// `include_dir!` on `scripts/` would: the same files, paths, order and contents.
#[test]
fn scripts_dir_is_the_scripts_folder() {
    let folder = include_dir::include_dir!("$CARGO_MANIFEST_DIR/scripts");
    assert!(catalog::SCRIPTS_DIR == folder);
    let shared = catalog::SCRIPTS_DIR.get_file("_shared.lua").unwrap();
    assert_eq!(
        shared.contents(),
        std::fs::read(concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/_shared.lua")).unwrap()
    );
}

#[test]
fn export_writes_every_script() {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("export-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    catalog::export(&dir).unwrap();
    for script in catalog::scripts() {
        let written = std::fs::read_to_string(dir.join(format!("{}.lua", script.name))).unwrap();
        assert_eq!(written, script.source);
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// An op is a value: it runs as often as asked, a clone runs the same command, and its
/// `Debug` shows the command (a script's by its SHA1 and name) or why it was refused.
#[test]
fn an_op_runs_again_and_shows_what_it_sends() {
    let db = harness::fresh_db();
    let mut con = db.con();
    let visits = Counter::new("visits").unwrap();
    let op = visits.increase(2);
    assert_eq!(op.run(&mut con).unwrap(), 2);
    assert_eq!(op.run(&mut con).unwrap(), 4);
    assert_eq!(op.clone().run(&mut con).unwrap(), 6);

    let lock = IdentityLock::new("lock").unwrap();
    let release = lock.release("t\u{0}k");
    assert_eq!(
        format!("{release:?}"),
        format!(
            r#"Op {{ cmd: "EVALSHA {} 1 lock t\\x00k", script: Some("identity_lock/release") }}"#,
            scripts::identity_lock::RELEASE.sha1
        )
    );
    let refused = lock.release("");
    assert!(
        format!("{refused:?}").starts_with("Op { rejected: InvalidInput"),
        "{refused:?}"
    );
    assert_invalid(refused.run(&mut con), "token");
    assert_invalid(refused.run(&mut con), "token");
}

/// The manifest describes exactly the scripts that run: for each script of the catalogue,
/// the same name, path, SHA1, flags, keys and arguments (types, counts, rules), return
/// type, error codes and clock; and nothing else.
#[test]
fn the_manifest_describes_every_script_as_the_catalogue_does() {
    use redis_patterns::{Rule, catalog};
    use serde_json::Value as Json;

    let manifest: Json = serde_json::from_str(catalog::MANIFEST).unwrap();
    assert_eq!(manifest["format"], 1);
    assert_eq!(manifest["version"], env!("CARGO_PKG_VERSION"));
    assert_eq!(manifest["library"], catalog::functions_library());
    let entries = manifest["scripts"].as_array().unwrap();
    assert_eq!(entries.len(), catalog::scripts().len());
    let count = |c: redis_patterns::Count| serde_json::json!({ "min": c.min, "max": c.max });
    let rule = |r: Rule| match r {
        Rule::Any => serde_json::json!({ "kind": "any" }),
        Rule::NonEmpty => serde_json::json!({ "kind": "non_empty" }),
        Rule::Range { min, max } => serde_json::json!({ "kind": "range", "min": min, "max": max }),
        Rule::OneOf(options) => serde_json::json!({ "kind": "one_of", "options": options }),
        Rule::Length { min, max } => {
            serde_json::json!({ "kind": "length", "min": min, "max": max })
        }
        Rule::Hex { digits } => serde_json::json!({ "kind": "hex", "digits": digits }),
    };
    for (entry, script) in entries.iter().zip(catalog::scripts()) {
        let name = script.name;
        assert_eq!(entry["name"], name);
        assert_eq!(entry["path"], script.path, "{name}");
        assert_eq!(entry["sha1"], script.sha1, "{name}");
        assert_eq!(entry["flags"], serde_json::json!(script.flags), "{name}");
        assert_eq!(entry["read_only"], script.is_read_only(), "{name}");
        assert_eq!(entry["summary"], script.summary, "{name}");
        assert_eq!(entry["returns"]["type"], script.returns.ty, "{name}");
        assert_eq!(entry["complexity"], script.complexity, "{name}");
        assert_eq!(entry["function"], catalog::function_name(script), "{name}");
        let clock = script.clock.map(|c| format!("{c:?}").to_ascii_lowercase());
        assert_eq!(entry["clock"], serde_json::json!(clock), "{name}");
        let codes: Vec<&str> = script.errors.iter().map(|e| e.code).collect();
        let listed: Vec<&str> = entry["errors"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["code"].as_str().unwrap())
            .collect();
        assert_eq!(listed, codes, "{name}");
        for (kind, params) in [("keys", script.keys), ("args", script.args)] {
            let listed = entry[kind].as_array().unwrap();
            assert_eq!(listed.len(), params.len(), "{name} {kind}");
            for (p, param) in listed.iter().zip(params) {
                assert_eq!(p["name"], param.name, "{name}");
                assert_eq!(p["type"], param.ty, "{name} {}", param.name);
                assert_eq!(p["variadic"], param.variadic, "{name} {}", param.name);
                assert_eq!(p["count"], count(param.count), "{name} {}", param.name);
                if kind == "args" {
                    assert_eq!(p["optional"], param.optional, "{name} {}", param.name);
                    assert_eq!(p["rule"], rule(param.rule), "{name} {}", param.name);
                }
            }
        }
    }
    assert_eq!(
        serde_json::from_str::<Json>(catalog::MANIFEST_SCHEMA).unwrap()["properties"]["format"]["const"],
        manifest["format"]
    );
}
