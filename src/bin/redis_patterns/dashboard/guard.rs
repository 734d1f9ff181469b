//! What keeps the dashboard's actions to whoever started it: the token it printed, the
//! names it answers to, and refusing requests that another site's page sent.

use axum::http::{HeaderMap, header};
use redis_patterns::token;

pub(super) struct Guard {
    /// The token actions need; `None` in read-only mode, where none is accepted.
    token: Option<String>,
    /// The cookie that holds it, named by the port (a browser sends the cookies of a host
    /// to all its ports, so two dashboards of one machine keep theirs apart).
    cookie: String,
    /// The host names the pages answer to besides `localhost` and IP addresses.
    hosts: Vec<String>,
}

impl Guard {
    pub(super) fn new(read_only: bool, port: u16, hosts: Vec<String>) -> Guard {
        Guard {
            token: (!read_only).then(token::random),
            cookie: format!("redis_patterns_dashboard_{port}"),
            hosts: hosts.into_iter().map(|h| h.to_ascii_lowercase()).collect(),
        }
    }

    pub(super) fn token(&self) -> Option<&str> {
        self.token.as_deref()
    }

    /// Whether `given` is the token, compared in constant time.
    pub(super) fn is_token(&self, given: &str) -> bool {
        self.token
            .as_deref()
            .is_some_and(|t| token::same(t.as_bytes(), given.as_bytes()))
    }

    /// The `Set-Cookie` value that keeps the token in the browser that opened the URL
    /// printed at start: never sent by another site's page (`SameSite=Strict`), never
    /// read by a script (`HttpOnly`).
    pub(super) fn set_cookie(&self) -> Option<String> {
        let token = self.token.as_deref()?;
        Some(format!(
            "{}={token}; Path=/; HttpOnly; SameSite=Strict",
            self.cookie
        ))
    }

    /// Whether the request's browser holds the token: then its pages carry the token in
    /// their action forms.
    pub(super) fn has_cookie(&self, headers: &HeaderMap) -> bool {
        headers
            .get_all(header::COOKIE)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(';'))
            .filter_map(|pair| pair.trim().split_once('='))
            .any(|(name, value)| name == self.cookie && self.is_token(value))
    }

    /// Whether the `Host` the request names is one the pages answer to: an IP address,
    /// `localhost`, or a name given with `--host-name`. A page of another site that makes
    /// its own name point at this machine (DNS rebinding) names its own host, and is
    /// refused before it reads a page and the token in its forms.
    pub(super) fn host_allowed(&self, headers: &HeaderMap) -> bool {
        let Some(host) = headers.get(header::HOST).and_then(|h| h.to_str().ok()) else {
            return false;
        };
        let name = match host.strip_prefix('[') {
            // An IPv6 address, as `[::1]:8080`.
            Some(rest) => {
                return rest
                    .split_once(']')
                    .is_some_and(|(ip, _)| ip.parse::<std::net::Ipv6Addr>().is_ok());
            }
            None => host.rsplit_once(':').map_or(host, |(name, _)| name),
        };
        let name = name.to_ascii_lowercase();
        name.parse::<std::net::Ipv4Addr>().is_ok()
            || name == "localhost"
            || self.hosts.contains(&name)
    }
}

/// Why a POST is refused as sent by another site's page, if it is: its `Sec-Fetch-Site`
/// says it came from elsewhere, or its `Origin` is not this server as the request's
/// `Host` names it. (The token is checked as well: these catch what a browser tells.)
pub(super) fn cross_site(headers: &HeaderMap) -> Option<String> {
    let text = |name| headers.get(name).map(|v| v.to_str().unwrap_or("?"));
    if let Some(site) = text(header::HeaderName::from_static("sec-fetch-site"))
        && site != "same-origin"
    {
        return Some(format!(
            "a request from another site (Sec-Fetch-Site: {site})"
        ));
    }
    if let Some(origin) = text(header::ORIGIN) {
        let host = text(header::HOST).unwrap_or_default();
        if !origin.eq_ignore_ascii_case(&format!("http://{host}")) {
            return Some(format!("a request from another origin ({origin})"));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use axum::http::HeaderValue;

    use super::*;

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.append(*name, HeaderValue::from_static(value));
        }
        map
    }

    #[test]
    fn the_token_is_128_bits_and_only_itself_passes() {
        let guard = Guard::new(false, 7070, vec![]);
        let token = guard.token().expect("a token").to_owned();
        assert_eq!(token.len(), 32);
        assert!(guard.is_token(&token));
        assert!(!guard.is_token(&token[..31]));
        assert!(!guard.is_token(""));
        let read_only = Guard::new(true, 7070, vec![]);
        assert!(read_only.token().is_none() && !read_only.is_token(""));
        let cookie = format!("a=b; redis_patterns_dashboard_7070={token}");
        let mut with = HeaderMap::new();
        with.insert(header::COOKIE, HeaderValue::from_str(&cookie).unwrap());
        assert!(guard.has_cookie(&with));
        // Another port's dashboard, or another value, is not this one's.
        let other = format!("redis_patterns_dashboard_7071={token}");
        with.insert(header::COOKIE, HeaderValue::from_str(&other).unwrap());
        assert!(!guard.has_cookie(&with));
    }

    #[test]
    fn hosts_are_addresses_localhost_or_named() {
        let guard = Guard::new(false, 7070, vec!["Queues.internal".into()]);
        for host in [
            "127.0.0.1:7070",
            "localhost:7070",
            "[::1]:7070",
            "10.0.0.5",
            "queues.internal:80",
        ] {
            assert!(guard.host_allowed(&headers(&[("host", host)])), "{host}");
        }
        for host in ["evil.example:7070", "127.0.0.1.nip.io:7070", "[evil]:1"] {
            assert!(!guard.host_allowed(&headers(&[("host", host)])), "{host}");
        }
        assert!(!guard.host_allowed(&HeaderMap::new()));
    }

    #[test]
    fn another_sites_posts_are_refused() {
        let host = ("host", "127.0.0.1:7070");
        assert_eq!(cross_site(&headers(&[host])), None);
        let same = headers(&[
            host,
            ("origin", "http://127.0.0.1:7070"),
            ("sec-fetch-site", "same-origin"),
        ]);
        assert_eq!(cross_site(&same), None);
        for refused in [
            headers(&[host, ("origin", "http://evil.example")]),
            headers(&[host, ("origin", "null")]),
            headers(&[host, ("sec-fetch-site", "cross-site")]),
            headers(&[host, ("sec-fetch-site", "same-site")]),
        ] {
            assert!(cross_site(&refused).is_some(), "{refused:?}");
        }
    }
}
