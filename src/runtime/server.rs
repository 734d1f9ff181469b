//! What the server is and what it can do: its product (Redis or Valkey), its version and
//! its commands, read once per client, so that a pattern can send a native command where
//! the server has one and run its script elsewhere.
//!
//! ```no_run
//! # fn demo() -> redis_patterns::Result<()> {
//! use redis_patterns::server::{Capability, Server};
//!
//! let client = redis::Client::open("redis://127.0.0.1/")?;
//! let mut con = client.get_connection()?;
//! // Probe once per client and keep the answer: it is cheap to clone and share.
//! let server = Server::probe(&mut con)?;
//! println!("{server}"); // "valkey 8.1.1"
//! if server.supports(Capability::SetIfEqual) {
//!     // IdentityLock::with_server(&server) extends its lease with SET … IFEQ here.
//! }
//! # Ok(()) }
//! ```
//!
//! The answer is a snapshot: a server upgraded in place (or a failover to a replica of
//! another version) is seen by probing again. A fast path chosen from a stale answer
//! fails with the server's own error (`ERR syntax error`, `ERR unknown command`), never
//! by doing something else.

use std::collections::BTreeSet;
use std::fmt;
use std::sync::Arc;

use redis::Value;

use crate::runtime::error::{Error, Result};

/// The server an app talks to, as [`Server::probe`] found it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Server {
    inner: Arc<Probed>,
}

#[derive(Debug, PartialEq, Eq)]
struct Probed {
    product: Product,
    version: Version,
    /// Lowercase names, as `COMMAND LIST` gives them.
    commands: BTreeSet<String>,
    set_if_equal: bool,
    /// The cluster's primaries report different products or versions.
    mixed: bool,
}

/// Which server it is, from `server_name` in `INFO server` (Redis leaves it out).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Product {
    /// Redis, which reports no `server_name`.
    Redis,
    /// Valkey, which reports `server_name:valkey`.
    Valkey,
    /// Another server that speaks the protocol, by the name it reports.
    Other(String),
}

impl fmt::Display for Product {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Product::Redis => f.write_str("redis"),
            Product::Valkey => f.write_str("valkey"),
            Product::Other(name) => f.write_str(name),
        }
    }
}

/// A server's own version: Valkey's `valkey_version`, not the `redis_version:7.2.4` it
/// also reports for old clients.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Version {
    /// `8` in 8.1.1.
    pub major: u32,
    /// `1` in 8.1.1.
    pub minor: u32,
    /// The last `1` in 8.1.1.
    pub patch: u32,
}

impl Version {
    /// The version `major.minor.patch`.
    pub const fn new(major: u32, minor: u32, patch: u32) -> Self {
        Version {
            major,
            minor,
            patch,
        }
    }

    /// `8.1.1` (or `8.1`, which reads as `8.1.0`); `None` for anything else.
    pub fn parse(text: &str) -> Option<Version> {
        let mut parts = text.trim().splitn(3, '.');
        let mut next = |required: bool| match parts.next() {
            Some(part) => part.parse::<u32>().ok(),
            None if required => None,
            None => Some(0),
        };
        Some(Version::new(next(true)?, next(true)?, next(false)?))
    }
}

impl fmt::Display for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}.{}", self.major, self.minor, self.patch)
    }
}

/// What a pattern may do natively on some servers and with a script on the others.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Capability {
    /// `EVALSHA` and `SCRIPT LOAD`: every script of the crate. Valkey can be built without
    /// Lua, and an ACL can deny `@scripting`.
    Scripting,
    /// `SET key value IFEQ expected`: set (and set the expiry) only while the key holds
    /// `expected`. Valkey 8.1 and later, Redis 8.4 and later.
    SetIfEqual,
    /// `DELIFEQ key expected`: delete only while the key holds `expected`. Valkey 9.0 and
    /// later (Redis 8.4 names its own `DELEX key IFEQ expected`, which this is not).
    DeleteIfEqual,
    /// A time to live per hash field, set with the field (`HSETEX`, `HPTTL`). Redis 8.0
    /// and later, Valkey 9.0 and later.
    HashFieldExpiry,
}

impl Server {
    /// Asks the server what it is: `INFO server` for its name and version, `COMMAND LIST`
    /// for its commands and `COMMAND DOCS SET` for the options `SET` takes. Three round
    /// trips, once per client (a cluster connection takes no pipelines).
    ///
    /// On a cluster, redis-rs sends `INFO` to every primary and the other two commands to
    /// one node. When the primaries report different versions (an upgrade under way), the
    /// answer is the lowest version, and no capability but [`Capability::Scripting`]:
    /// the one node's commands may not be every node's. Probe again once every node runs
    /// the same version.
    ///
    /// The client's user needs `INFO` and `COMMAND` (in the ACL categories `@dangerous`
    /// and `@connection`); a refusal is the server's `NOPERM`.
    pub fn probe(con: &mut dyn redis::ConnectionLike) -> Result<Server> {
        let [info, commands, set_docs] = probe_commands();
        Self::from_replies(info.query(con)?, commands.query(con)?, set_docs.query(con)?)
    }

    /// [`probe`](Self::probe) on an async connection.
    #[cfg(feature = "aio")]
    pub async fn probe_async<C: redis::aio::ConnectionLike>(con: &mut C) -> Result<Server> {
        let [info, commands, set_docs] = probe_commands();
        Self::from_replies(
            info.query_async(con).await?,
            commands.query_async(con).await?,
            set_docs.query_async(con).await?,
        )
    }

    fn from_replies(info: Value, commands: Value, set_docs: Value) -> Result<Server> {
        let mut nodes = Vec::new();
        for node_info in per_node(&info, text) {
            nodes.push(parse_info(&node_info)?);
        }
        let mixed = nodes.windows(2).any(|pair| pair[0] != pair[1]);
        let (product, version) = nodes
            .into_iter()
            .min_by_key(|(_, version)| *version)
            .ok_or_else(|| Error::unexpected_reply("INFO server returned nothing", ""))?;
        let mut common: Option<BTreeSet<String>> = None;
        for node in per_node(&commands, names) {
            let names: BTreeSet<String> = node.iter().map(|n| n.to_ascii_lowercase()).collect();
            common = Some(match common {
                None => names,
                Some(seen) => seen.intersection(&names).cloned().collect(),
            });
        }
        let commands = common.unwrap_or_default();
        let set_if_equal = names_token(&set_docs, "IFEQ");
        Ok(Server {
            inner: Arc::new(Probed {
                product,
                version,
                commands,
                set_if_equal,
                mixed,
            }),
        })
    }

    /// Redis, Valkey, or another server.
    pub fn product(&self) -> &Product {
        &self.inner.product
    }

    /// The server's own version.
    pub fn version(&self) -> Version {
        self.inner.version
    }

    /// Whether the server has the command `name` (any case), as `COMMAND LIST` listed it.
    pub fn has_command(&self, name: &str) -> bool {
        self.inner.commands.contains(&name.to_ascii_lowercase())
    }

    /// The server's commands, lowercase and sorted.
    pub fn commands(&self) -> impl Iterator<Item = &str> {
        self.inner.commands.iter().map(String::as_str)
    }

    /// Whether the server can do `capability`, from the commands and options it lists
    /// (not from its version number, which forks and managed services bend).
    pub fn supports(&self, capability: Capability) -> bool {
        if self.inner.mixed && capability != Capability::Scripting {
            return false;
        }
        match capability {
            Capability::Scripting => self.has_command("evalsha") && self.has_command("script"),
            Capability::SetIfEqual => self.inner.set_if_equal,
            Capability::DeleteIfEqual => self.has_command("delifeq"),
            Capability::HashFieldExpiry => self.has_command("hsetex") && self.has_command("hpttl"),
        }
    }
}

impl fmt::Display for Server {
    /// `valkey 8.1.1`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.inner.product, self.inner.version)
    }
}

fn probe_commands() -> [redis::Cmd; 3] {
    let mut info = redis::cmd("INFO");
    info.arg("server");
    let mut commands = redis::cmd("COMMAND");
    commands.arg("LIST");
    let mut set_docs = redis::cmd("COMMAND");
    set_docs.arg("DOCS").arg("SET");
    [info, commands, set_docs]
}

/// What `read` finds in a reply that is one node's, or in each node's of a cluster's map
/// of them.
fn per_node<T>(reply: &Value, read: impl Fn(&Value) -> Option<T>) -> Vec<T> {
    match reply {
        Value::Map(nodes) => nodes.iter().filter_map(|(_, v)| read(v)).collect(),
        other => read(other).into_iter().collect(),
    }
}

/// The names in an array reply (`COMMAND LIST`).
fn names(reply: &Value) -> Option<Vec<String>> {
    match reply {
        Value::Array(items) | Value::Set(items) => Some(items.iter().filter_map(text).collect()),
        _ => None,
    }
}

fn text(value: &Value) -> Option<String> {
    match value {
        Value::BulkString(bytes) => Some(String::from_utf8_lossy(bytes).into_owned()),
        Value::SimpleString(s) => Some(s.clone()),
        Value::VerbatimString { text, .. } => Some(text.clone()),
        _ => None,
    }
}

/// The product and version in one node's `INFO server`.
fn parse_info(info: &str) -> Result<(Product, Version)> {
    let fields = redis::InfoDict::new(info);
    let field = |name: &str| fields.get::<String>(name);
    let product = match field("server_name").as_deref() {
        None | Some("redis") => Product::Redis,
        Some("valkey") => Product::Valkey,
        Some(other) => Product::Other(other.to_owned()),
    };
    let version_field = match product {
        Product::Valkey => field("valkey_version"),
        _ => None,
    };
    let version = version_field
        .or_else(|| field("redis_version"))
        .as_deref()
        .and_then(Version::parse)
        .ok_or_else(|| {
            Error::unexpected_reply("INFO server has no version that reads as x.y.z", info)
        })?;
    Ok((product, version))
}

/// Whether `token` appears as a whole string anywhere in `reply`: `COMMAND DOCS` lists
/// each option of a command as a `token` in its nested arguments.
fn names_token(reply: &Value, token: &str) -> bool {
    match reply {
        Value::Array(items) | Value::Set(items) => items.iter().any(|v| names_token(v, token)),
        Value::Map(pairs) => pairs
            .iter()
            .any(|(k, v)| names_token(k, token) || names_token(v, token)),
        other => text(other).is_some_and(|t| t.eq_ignore_ascii_case(token)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_read_as_servers_write_them() {
        assert_eq!(Version::parse("8.1.1"), Some(Version::new(8, 1, 1)));
        assert_eq!(Version::parse("7.2"), Some(Version::new(7, 2, 0)));
        assert_eq!(
            Version::parse("255.255.255"),
            Some(Version::new(255, 255, 255))
        );
        assert_eq!(Version::parse("8"), None);
        assert_eq!(Version::parse("8.x.1"), None);
        assert!(Version::new(7, 10, 0) > Version::new(7, 9, 9));
    }

    #[test]
    fn valkey_is_known_by_its_own_version() {
        let info =
            "# Server\r\nredis_version:7.2.4\r\nserver_name:valkey\r\nvalkey_version:8.1.1\r\n";
        assert_eq!(
            parse_info(info).unwrap(),
            (Product::Valkey, Version::new(8, 1, 1))
        );
        let info = "# Server\r\nredis_version:8.0.2\r\nredis_git_sha1:00000000\r\n";
        assert_eq!(
            parse_info(info).unwrap(),
            (Product::Redis, Version::new(8, 0, 2))
        );
        assert!(parse_info("# Server\r\n").is_err());
    }

    /// A cluster mid-upgrade: one node on Valkey 8.0, one on 8.1. The probe answers the
    /// lowest version and no native capability; once both nodes agree, it answers theirs.
    #[test]
    fn a_mixed_cluster_is_what_every_node_can_do() {
        let bulk = |s: &str| Value::BulkString(s.as_bytes().to_vec());
        let node = |name: &str| bulk(name);
        let info = |version: &str| {
            bulk(&format!(
                "# Server\r\nredis_version:7.2.4\r\nserver_name:valkey\r\nvalkey_version:{version}\r\n"
            ))
        };
        let names = |names: &[&str]| Value::Array(names.iter().map(|n| bulk(n)).collect());
        let probe = |second: &str| {
            Server::from_replies(
                Value::Map(vec![
                    (node("a:1"), info("8.1.1")),
                    (node("b:2"), info(second)),
                ]),
                Value::Map(vec![
                    (
                        node("a:1"),
                        names(&["get", "set", "evalsha", "script", "newcmd"]),
                    ),
                    (node("b:2"), names(&["GET", "SET", "EVALSHA", "SCRIPT"])),
                ]),
                names(&["set", "IFEQ"]),
            )
            .unwrap()
        };
        let mixed = probe("8.0.1");
        assert_eq!(mixed.to_string(), "valkey 8.0.1");
        assert_eq!(
            mixed.commands().collect::<Vec<_>>(),
            ["evalsha", "get", "script", "set"]
        );
        assert!(mixed.has_command("Get"));
        assert!(!mixed.has_command("newcmd"));
        assert!(mixed.supports(Capability::Scripting));
        assert!(!mixed.supports(Capability::SetIfEqual));

        let upgraded = probe("8.1.1");
        assert_eq!(upgraded.to_string(), "valkey 8.1.1");
        assert!(upgraded.supports(Capability::SetIfEqual));
    }
}
