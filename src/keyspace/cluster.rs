//! A Redis Cluster's masters, to walk the keyspace one node at a time.

use std::collections::BTreeMap;
use std::fmt;

use redis::{FromRedisValue, Value};

use crate::runtime::error::{Error, Result};
use crate::runtime::op::Op;

/// One master of a Redis Cluster, as `CLUSTER SHARDS` reports it ([`cluster_masters`]).
///
/// ```
/// use redis_patterns::keyspace::ClusterNode;
///
/// let node = ClusterNode { host: "10.0.0.5".into(), port: 7001 };
/// assert_eq!(node.to_string(), "10.0.0.5:7001");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ClusterNode {
    /// The node's preferred endpoint (its IP unless the cluster announces host names).
    pub host: String,
    /// The node's port.
    pub port: u16,
}

impl fmt::Display for ClusterNode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.host, self.port)
    }
}

/// The masters of a Redis Cluster (`CLUSTER SHARDS`, Redis 7.0), sorted, to walk the
/// keyspace one node at a time. Run it on any node's connection or on a cluster
/// connection.
///
/// ```no_run
/// # fn demo() -> redis_patterns::Result<()> {
/// use redis_patterns::keyspace::{DbIterator, cluster_masters};
///
/// let cluster = redis::cluster::ClusterClient::new(vec!["redis://127.0.0.1:7000/"])?;
/// let masters = cluster_masters().run(&mut cluster.get_connection()?)?;
/// for node in masters {
///     // Open the node's own connection, with your credentials and TLS settings.
///     let client = redis::Client::open(format!("redis://{node}/"))?;
///     let mut con = client.get_connection()?;
///     for key in DbIterator::new(100).matching("user:*").keys(&mut con) {
///         println!("{node}: {}", key?);
///     }
/// }
/// # Ok(()) }
/// ```
pub fn cluster_masters() -> Op<Vec<ClusterNode>> {
    let mut cmd = redis::cmd("CLUSTER");
    cmd.arg("SHARDS");
    Op::<Value>::native(cmd).map(parse_shards)
}

fn parse_shards(reply: Value) -> Result<Vec<ClusterNode>> {
    let bad = |detail: &str| Error::unexpected_reply("CLUSTER SHARDS", detail.to_owned());
    let Value::Array(shards) = reply else {
        return Err(bad("expected an array of shards"));
    };
    let mut masters = Vec::new();
    for shard in shards {
        let nodes = fields(shard)?
            .remove("nodes")
            .ok_or_else(|| bad("a shard without `nodes`"))?;
        let Value::Array(nodes) = nodes else {
            return Err(bad("`nodes` is not an array"));
        };
        for node in nodes {
            let mut node = fields(node)?;
            let text = |node: &mut BTreeMap<String, Value>, name: &str| {
                node.remove(name)
                    .map(String::from_redis_value)
                    .transpose()
                    .map_err(Error::from)
            };
            if text(&mut node, "role")?.as_deref() != Some("master") {
                continue;
            }
            let host = match text(&mut node, "endpoint")? {
                Some(endpoint) if endpoint != "?" && !endpoint.is_empty() => endpoint,
                _ => text(&mut node, "ip")?.ok_or_else(|| bad("a node without `ip`"))?,
            };
            let port = node
                .remove("port")
                .map(u16::from_redis_value)
                .transpose()?
                .ok_or_else(|| bad("a node without `port`"))?;
            masters.push(ClusterNode { host, port });
        }
    }
    masters.sort();
    masters.dedup();
    Ok(masters)
}

/// A RESP2 flat `[name, value, …]` array or a RESP3 map, as a map.
fn fields(value: Value) -> Result<BTreeMap<String, Value>> {
    let pairs: Vec<(Value, Value)> = match value {
        Value::Map(pairs) => pairs,
        Value::Array(items) => {
            let mut items = items.into_iter();
            let mut pairs = Vec::new();
            while let (Some(name), Some(value)) = (items.next(), items.next()) {
                pairs.push((name, value));
            }
            pairs
        }
        _ => {
            return Err(Error::unexpected_reply(
                "CLUSTER SHARDS",
                "expected a map of fields",
            ));
        }
    };
    pairs
        .into_iter()
        .map(|(name, value)| Ok((String::from_redis_value(name)?, value)))
        .collect()
}
