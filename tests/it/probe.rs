//! The capability probe, and how each server keeps scripts: on every server kind the suite
//! runs on (`REDIS_SERVER_BIN`), what the probe says is checked against what the binary
//! says of itself and against what the server really does.

use redis_patterns::Batch;
use redis_patterns::identity_lock::{Holding, IdentityLock};
use redis_patterns::server::{Capability, Product, Server, Version};

use crate::harness;
use crate::server::{RedisProcess, server_bin};

/// What the binary under test says it is (`redis-server --version`), read apart from the
/// probe: `Redis server v=8.0.2 …` or `Valkey server v=8.1.1 …`.
fn binary_under_test() -> (Product, Version) {
    let out = std::process::Command::new(server_bin())
        .arg("--version")
        .output()
        .expect("the server binary runs");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let product = if text.starts_with("Valkey server") {
        Product::Valkey
    } else if text.starts_with("Redis server") {
        Product::Redis
    } else {
        panic!("an unknown server: {text}");
    };
    let version = text
        .split_whitespace()
        .find_map(|word| word.strip_prefix("v="))
        .and_then(Version::parse)
        .unwrap_or_else(|| panic!("no version in {text}"));
    (product, version)
}

/// Which server first had each capability: the release notes, written down apart from how
/// the probe finds out (from the commands and options the server lists).
fn expected(product: &Product, version: Version, capability: Capability) -> bool {
    let at_least = |major, minor| version >= Version::new(major, minor, 0);
    match (capability, product) {
        (Capability::Scripting, _) => true,
        (Capability::SetIfEqual, Product::Valkey) => at_least(8, 1),
        (Capability::SetIfEqual, _) => at_least(8, 4),
        (Capability::DeleteIfEqual, Product::Valkey) => at_least(9, 0),
        (Capability::DeleteIfEqual, _) => false,
        (Capability::HashFieldExpiry, Product::Valkey) => at_least(9, 0),
        (Capability::HashFieldExpiry, _) => at_least(8, 0),
        (capability, _) => panic!("no expectation written for {capability:?}"),
    }
}

const CAPABILITIES: [Capability; 4] = [
    Capability::Scripting,
    Capability::SetIfEqual,
    Capability::DeleteIfEqual,
    Capability::HashFieldExpiry,
];

fn assert_probe_matches_binary(server: &Server) {
    let (product, version) = binary_under_test();
    assert_eq!(server.product(), &product, "{server}");
    assert_eq!(server.version(), version, "{server}");
    assert_eq!(server.to_string(), format!("{product} {version}"));
    for capability in CAPABILITIES {
        assert_eq!(
            server.supports(capability),
            expected(&product, version, capability),
            "{server}: {capability:?}"
        );
    }
    assert!(server.has_command("GET") && server.has_command("evalsha"));
    assert!(!server.has_command("no-such-command"));
    assert!(server.commands().count() > 200, "{server}");
}

#[test]
fn the_probe_says_what_the_binary_is() {
    let db = harness::fresh_db();
    assert_probe_matches_binary(&Server::probe(&mut db.con()).unwrap());
}

#[tokio::test]
async fn the_probe_says_the_same_on_an_async_connection() {
    let db = harness::fresh_db();
    let mut con = db.multiplexed().await;
    let server = Server::probe_async(&mut con).await.unwrap();
    assert_eq!(server, Server::probe(&mut db.con()).unwrap());
}

/// A cluster answers `INFO` from every primary: the probe takes what all of them can do,
/// which for nodes of one binary is what one of them says.
#[tokio::test]
async fn the_probe_says_the_same_on_the_cluster() {
    let standalone = Server::probe(&mut harness::fresh_db().con()).unwrap();
    let cluster = Server::probe(&mut harness::cluster_con()).unwrap();
    assert_eq!(cluster, standalone);
    let mut con = harness::cluster_client()
        .get_async_connection()
        .await
        .unwrap();
    assert_eq!(Server::probe_async(&mut con).await.unwrap(), standalone);
}

/// Each capability the probe reports works, and each it does not report is refused: the
/// probe's answer is what the server does, not only what it lists.
#[test]
fn what_the_probe_reports_is_what_the_server_does() {
    let db = harness::fresh_db();
    let mut con = db.con();
    let server = Server::probe(&mut con).unwrap();
    let run = |con: &mut redis::Connection, args: &[&str]| -> redis::RedisResult<redis::Value> {
        redis::cmd(args[0]).arg(&args[1..]).query(con)
    };
    run(&mut con, &["SET", "probe:k", "v"]).unwrap();

    let set_if_equal = run(
        &mut con,
        &["SET", "probe:k", "w", "IFEQ", "v", "PX", "60000"],
    );
    assert_eq!(
        set_if_equal.is_ok(),
        server.supports(Capability::SetIfEqual),
        "{server}: {set_if_equal:?}"
    );
    if let Ok(reply) = set_if_equal {
        assert_eq!(reply, redis::Value::Okay);
        let ifeq_missed = run(&mut con, &["SET", "probe:k", "x", "IFEQ", "v"]).unwrap();
        assert_eq!(ifeq_missed, redis::Value::Nil);
    }

    let delete_if_equal = run(&mut con, &["DELIFEQ", "probe:k", "w"]);
    assert_eq!(
        delete_if_equal.is_ok(),
        server.supports(Capability::DeleteIfEqual),
        "{server}: {delete_if_equal:?}"
    );

    let set_at = harness::server_ms(&mut con);
    let field_expiry = run(
        &mut con,
        &["HSETEX", "probe:h", "PX", "60000", "FIELDS", "1", "f", "v"],
    );
    assert_eq!(
        field_expiry.is_ok(),
        server.supports(Capability::HashFieldExpiry),
        "{server}: {field_expiry:?}"
    );
    if field_expiry.is_ok() {
        let ttl: Vec<i64> = redis::cmd("HPTTL")
            .arg("probe:h")
            .arg("FIELDS")
            .arg(1)
            .arg("f")
            .query(&mut con)
            .unwrap();
        // What has passed on the server's clock since the set, however long that was.
        let passed = (harness::server_ms(&mut con) - set_at) as i64;
        assert!(
            ttl[0] >= 60_000 - passed - 1 && ttl[0] <= 60_000,
            "{ttl:?} after {passed} ms"
        );
    }
}

/// Redis 7.4 and Valkey 8.0 keep at most 500 scripts that came in through `EVAL`, and
/// evict the oldest beyond that; scripts loaded with `SCRIPT LOAD` are never evicted.
/// Redis 7.0 keeps every script. The crate sends only `SCRIPT LOAD` and `EVALSHA`, so its
/// scripts stay however many an app `EVAL`s beside them.
#[test]
fn scripts_loaded_with_script_load_survive_where_eval_ones_are_evicted() {
    // A server of its own: this test fills and counts the script cache.
    let process = RedisProcess::start(&[]);
    let mut con = process.connection();
    let server = Server::probe(&mut con).unwrap();
    let evicts = match server.product() {
        Product::Redis => server.version() >= Version::new(7, 4, 0),
        _ => true,
    };

    let lock = IdentityLock::new("evict:lock").unwrap();
    assert!(lock.acquire("t", None).run(&mut con).unwrap());
    assert!(lock.release("t").run(&mut con).unwrap()); // NOSCRIPT, then SCRIPT LOAD
    let loaded = &redis_patterns::scripts::identity_lock::RELEASE;

    let eval = |con: &mut redis::Connection, i: usize| {
        let _: String = redis::cmd("EVAL")
            .arg(format!("return 'app script {i}'"))
            .arg(0)
            .query(con)
            .unwrap();
    };
    let exists = |con: &mut redis::Connection, sha1: &str| -> bool {
        let found: Vec<bool> = redis::cmd("SCRIPT")
            .arg("EXISTS")
            .arg(sha1)
            .query(con)
            .unwrap();
        found[0]
    };
    eval(&mut con, 0);
    let first_eval = sha1_hex("return 'app script 0'");
    for i in 1..=600 {
        eval(&mut con, i);
    }

    assert_eq!(exists(&mut con, &first_eval), !evicts, "{server}");
    assert!(exists(&mut con, loaded.sha1), "{server}");
    let evicted = info_field(&mut con, "stats", "evicted_scripts");
    assert_eq!(
        evicted,
        if evicts { Some(101) } else { None },
        "{server}: 601 EVAL scripts"
    );

    // The crate's release still runs by SHA1, with no second load.
    assert!(lock.acquire("t", None).run(&mut con).unwrap());
    assert!(lock.release("t").run(&mut con).unwrap());
    assert_eq!(
        info_field(&mut con, "commandstats", "cmdstat_script|load"),
        Some(1)
    );
}

/// Neither an operation nor a [`Batch`] ever sends `EVAL` or `EVAL_RO`, even when the
/// server lost its scripts: they recover with `SCRIPT LOAD` and `EVALSHA`, which is all
/// the crate runs scripts with.
#[test]
fn the_crate_never_sends_eval() {
    // A server of its own: this test flushes the script cache.
    let process = RedisProcess::start(&[]);
    let mut con = process.connection();
    let lock = IdentityLock::new("eval:lock").unwrap();
    assert!(lock.acquire("t", None).run(&mut con).unwrap());
    assert_eq!(lock.lease("t").run(&mut con).unwrap(), Holding::Forever); // EVALSHA_RO
    assert!(lock.release("t").run(&mut con).unwrap());
    let _: () = redis::cmd("SCRIPT").arg("FLUSH").query(&mut con).unwrap();
    let mut batch = Batch::new();
    let acquired = batch.add(lock.acquire("u", None));
    let lease = batch.add(lock.lease("u"));
    let released = batch.add(lock.release("u"));
    let mut replies = batch.run(&mut con).unwrap();
    assert!(acquired.take(&mut replies).unwrap());
    assert_eq!(lease.take(&mut replies).unwrap(), Holding::Forever);
    assert!(released.take(&mut replies).unwrap());

    assert!(info_field(&mut con, "commandstats", "cmdstat_evalsha").unwrap() >= 2);
    assert!(info_field(&mut con, "commandstats", "cmdstat_evalsha_ro").unwrap() >= 2);
    assert_eq!(info_field(&mut con, "commandstats", "cmdstat_eval"), None);
    assert_eq!(
        info_field(&mut con, "commandstats", "cmdstat_eval_ro"),
        None
    );
}

/// `field` of `INFO section`, as a number: `calls=` for a `cmdstat_` line.
fn info_field(con: &mut redis::Connection, section: &str, field: &str) -> Option<u64> {
    let info: String = redis::cmd("INFO").arg(section).query(con).unwrap();
    let value = info
        .lines()
        .find_map(|line| line.strip_prefix(field)?.strip_prefix(':'))?;
    let number = match value.strip_prefix("calls=") {
        Some(rest) => rest.split(',').next()?,
        None => value,
    };
    number.trim().parse().ok()
}

fn sha1_hex(source: &str) -> String {
    redis::Script::new(source).get_hash().to_owned()
}
