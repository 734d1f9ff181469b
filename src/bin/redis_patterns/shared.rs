//! What the subcommands share: the scripts' rule for numbers, how a command fails, and
//! how it finds a script and reaches a server.

use redis_patterns::{Script, catalog, integer_from_text};

/// What the numbers of each type must be, as a usage error says it: the scripts' one rule.
pub(crate) const WHOLE: &str = "a whole number (digits, an optional leading -, no leading zero)";
pub(crate) const WHOLE_0: &str = "a whole number, 0 or more (digits, no leading zero)";
pub(crate) const FLOAT: &str = "a finite decimal number (such as 1.5, -2, 1e+20, 1e-07 or 1.0E16)";

/// A `uint` or `ms` value by the one rule for integers.
pub(crate) fn uint_from_text(text: &str) -> Option<u64> {
    integer_from_text(text).and_then(|n| u64::try_from(n).ok())
}

/// How a command failed: what to print, and the exit code.
pub(crate) struct Failure {
    pub(crate) message: String,
    pub(crate) code: u8,
}

impl Failure {
    pub(crate) fn usage(message: impl Into<String>) -> Self {
        Failure {
            message: message.into(),
            code: 2,
        }
    }

    pub(crate) fn failed(message: impl Into<String>) -> Self {
        Failure {
            message: message.into(),
            code: 1,
        }
    }
}

impl From<redis_patterns::Error> for Failure {
    fn from(err: redis_patterns::Error) -> Self {
        match err {
            redis_patterns::Error::InvalidInput { .. } => Failure::usage(err.to_string()),
            err => Failure::failed(err.to_string()),
        }
    }
}

impl From<redis::RedisError> for Failure {
    fn from(err: redis::RedisError) -> Self {
        Failure::failed(err.to_string())
    }
}

impl From<std::io::Error> for Failure {
    fn from(err: std::io::Error) -> Self {
        Failure::failed(err.to_string())
    }
}

pub(crate) fn find(name: &str) -> Result<&'static Script, Failure> {
    catalog::find(name).ok_or_else(|| {
        let family = name.split('/').next().unwrap_or(name);
        let near: Vec<&str> = catalog::scripts()
            .iter()
            .map(|s| s.name)
            .filter(|n| n.starts_with(family))
            .collect();
        let hint = if near.is_empty() {
            "`redis-patterns list` shows them all".to_owned()
        } else {
            format!("did you mean one of {}?", near.join(", "))
        };
        Failure::usage(format!("no script `{name}`; {hint}"))
    })
}

/// A connection to the server at `url`, or to the cluster one of whose nodes it is; `Send`,
/// so that the dashboard's pages run it on a blocking thread.
pub(crate) fn connect(
    url: &str,
    cluster: bool,
) -> Result<Box<dyn redis::ConnectionLike + Send>, Failure> {
    let failed =
        |err: redis::RedisError| Failure::failed(format!("cannot connect to {url}: {err}"));
    if cluster {
        let client = redis::cluster::ClusterClient::new(vec![url]).map_err(failed)?;
        Ok(Box::new(client.get_connection().map_err(failed)?))
    } else {
        let client = redis::Client::open(url).map_err(failed)?;
        Ok(Box::new(client.get_connection().map_err(failed)?))
    }
}
