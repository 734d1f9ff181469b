//! `redis-patterns dashboard`: a web page of the work queues of a server or a cluster,
//! with the actions of `redis-patterns queue`, each through the same Rust API (one
//! `work_queue` script, never a raw command that writes).
//!
//! Pages are rendered on the server from the templates of `templates/dashboard/`, every
//! value escaped by handlebars' `{{ }}`; there is no JavaScript. Each request runs its
//! Redis calls on a blocking thread, on a connection of its own.
//!
//! Safe by default: it listens on 127.0.0.1; it answers only to IP addresses,
//! `localhost` and the names given (so another site that points its own name here
//! cannot read a page); actions are POSTs that need the token printed at start (which the
//! URL printed hands to the browser as a `SameSite=Strict` cookie, and the pages then put
//! in their forms), and are refused when the browser says another site sent them; every
//! response forbids scripts, frames and outside resources.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;

use axum::Router;
use axum::extract::{Query, Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{Html, IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use clap::Args;
use handlebars::Handlebars;
use serde_json::{Value as Json, json};

use crate::queue::DEFAULT_URL;
use crate::shared::{Failure, connect};

mod chart;
mod guard;
mod pages;

use guard::{Guard, cross_site};
pub(crate) use pages::PageError;

/// `redis-patterns dashboard`: serves the web page of the queues.
#[derive(Args)]
pub struct DashboardArgs {
    /// The server: `redis://host:port` (`rediss://` for TLS).
    #[arg(long, env = "REDIS_URL", hide_env_values = true, default_value = DEFAULT_URL)]
    url: String,
    /// The URL is a node of a cluster: every primary is searched for queues.
    #[arg(long)]
    cluster: bool,
    /// The address and port to listen on (port 0 picks a free one). Anyone who reaches
    /// it can read the queues' jobs: keep it on a loopback address unless the network
    /// in between is yours.
    #[arg(long, default_value = "127.0.0.1:7766")]
    listen: SocketAddr,
    /// Shows the queues and jobs, with no action and no token.
    #[arg(long)]
    read_only: bool,
    /// A host name the pages answer to, besides `localhost` and IP addresses (repeat for
    /// each): the name of this machine when it listens on another address.
    #[arg(long = "host-name", value_name = "NAME")]
    host_names: Vec<String>,
}

/// What every request shares.
pub(crate) struct App {
    url: String,
    cluster: bool,
    guard: Guard,
    templates: Handlebars<'static>,
}

pub fn run(args: DashboardArgs) -> Result<(), Failure> {
    let DashboardArgs {
        url,
        cluster,
        listen,
        read_only,
        host_names,
    } = args;
    // A server that cannot be reached is said at once, not on the first page.
    connect(&url, cluster)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_io()
        .build()?;
    runtime.block_on(async move {
        let listener = tokio::net::TcpListener::bind(listen)
            .await
            .map_err(|err| Failure::failed(format!("cannot listen on {listen}: {err}")))?;
        let addr = listener.local_addr()?;
        if !addr.ip().is_loopback() {
            eprintln!(
                "redis-patterns dashboard: note: listening on {addr}, not a loopback address: \
                 whoever reaches it reads the queues' jobs (actions still need the token)"
            );
        }
        let app = Arc::new(App {
            url,
            cluster,
            guard: Guard::new(read_only, addr.port(), host_names),
            templates: templates(),
        });
        match app.guard.token() {
            Some(token) => println!(
                "redis-patterns dashboard: http://{addr}/?token={token}\n\
                 (open this URL to act on the queues: the token is new at each start; \
                 without it the pages are read-only)"
            ),
            None => println!("redis-patterns dashboard (read-only): http://{addr}/"),
        }
        axum::serve(listener, router(app)).await?;
        Ok(())
    })
}

fn router(app: Arc<App>) -> Router {
    Router::new()
        .route("/", get(pages::queues))
        .route("/queues/{name}", get(pages::queue))
        .route(
            "/queues/{name}/{what}",
            get(pages::jobs).post(pages::queue_action),
        )
        .route("/queues/{name}/jobs/{id}", get(pages::job))
        .route("/queues/{name}/jobs/{id}/{action}", post(pages::job_action))
        .fallback(|State(app): State<Arc<App>>| async move {
            app.error(&PageError::NotFound("no such page".into()))
        })
        .layer(middleware::from_fn_with_state(app.clone(), guard))
        .with_state(app)
}

/// Every request: the host it names is checked; a GET with the token in its query sets
/// the cookie and leaves the token out of the address bar; a POST is refused in
/// read-only mode and when another site sent it (its token is checked by the action);
/// every response forbids scripts, frames, outside resources and caching.
async fn guard(State(app): State<Arc<App>>, request: Request, next: Next) -> Response {
    let headers = request.headers();
    let mut response = if !app.guard.host_allowed(headers) {
        app.error(&PageError::Forbidden(
            "this dashboard answers to IP addresses and localhost (and the names given with \
             --host-name), not to the host name this request names"
                .into(),
        ))
    } else if request.method() == Method::GET
        && let Ok(Query(query)) = Query::<HashMap<String, String>>::try_from_uri(request.uri())
        && let Some(given) = query.get("token")
    {
        match app.guard.set_cookie() {
            Some(cookie) if app.guard.is_token(given) => {
                let mut to = Redirect::to(request.uri().path()).into_response();
                if let Ok(cookie) = HeaderValue::from_str(&cookie) {
                    to.headers_mut().insert(header::SET_COOKIE, cookie);
                }
                to
            }
            Some(_) => app.error(&PageError::Forbidden(
                "not this dashboard's token (it is new at each start: use the URL it printed)"
                    .into(),
            )),
            None => Redirect::to(request.uri().path()).into_response(),
        }
    } else if request.method() == Method::POST && app.guard.token().is_none() {
        app.error(&PageError::Forbidden(
            "read-only: this dashboard takes no action".into(),
        ))
    } else if request.method() == Method::POST
        && let Some(why) = cross_site(headers)
    {
        app.error(&PageError::Forbidden(format!("refused {why}")))
    } else {
        next.run(request).await
    };
    let out = response.headers_mut();
    for (name, value) in [
        (
            header::CONTENT_SECURITY_POLICY,
            "default-src 'none'; style-src 'unsafe-inline'; img-src 'self' data:; \
             form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
        ),
        (header::X_FRAME_OPTIONS, "DENY"),
        (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        (header::REFERRER_POLICY, "same-origin"),
        (header::CACHE_CONTROL, "no-store"),
    ] {
        out.insert(name, HeaderValue::from_static(value));
    }
    response
}

/// The pages' templates, embedded in the binary.
fn templates() -> Handlebars<'static> {
    let mut hb = Handlebars::new();
    hb.set_strict_mode(true);
    for (name, text) in [
        (
            "head",
            include_str!("../../../../templates/dashboard/head.hbs"),
        ),
        (
            "foot",
            include_str!("../../../../templates/dashboard/foot.hbs"),
        ),
        (
            "chart",
            include_str!("../../../../templates/dashboard/chart.hbs"),
        ),
        (
            "counts",
            include_str!("../../../../templates/dashboard/counts.hbs"),
        ),
        (
            "queues",
            include_str!("../../../../templates/dashboard/queues.hbs"),
        ),
        (
            "queue",
            include_str!("../../../../templates/dashboard/queue.hbs"),
        ),
        (
            "jobs",
            include_str!("../../../../templates/dashboard/jobs.hbs"),
        ),
        (
            "job",
            include_str!("../../../../templates/dashboard/job.hbs"),
        ),
        (
            "error",
            include_str!("../../../../templates/dashboard/error.hbs"),
        ),
    ] {
        hb.register_template_string(name, text)
            .unwrap_or_else(|err| panic!("the dashboard's template {name}: {err}"));
    }
    hb
}

impl App {
    /// A page: `template` rendered with `data`, and what every page shows (the token
    /// for its forms when this browser holds it).
    fn page(&self, headers: &HeaderMap, template: &str, mut data: Json) -> Response {
        let can_act = self.guard.has_cookie(headers);
        data["can_act"] = json!(can_act);
        data["token"] = json!(if can_act { self.guard.token() } else { None });
        data["read_only"] = json!(self.guard.token().is_none());
        data["server"] = json!(if self.cluster { "cluster" } else { "server" });
        data["error_page"] = json!(false);
        self.render(StatusCode::OK, template, &data)
    }

    fn error(&self, err: &PageError) -> Response {
        let (status, message) = err.status_and_message();
        let data = json!({
            "title": status.canonical_reason().unwrap_or("error"),
            "status": status.as_u16(),
            "message": message,
            "can_act": false,
            "token": null,
            "note": null,
            "error_page": true,
            "read_only": self.guard.token().is_none(),
            "server": if self.cluster { "cluster" } else { "server" },
        });
        self.render(status, "error", &data)
    }

    fn render(&self, status: StatusCode, template: &str, data: &Json) -> Response {
        match self.templates.render(template, data) {
            Ok(html) => (status, Html(html)).into_response(),
            Err(err) => (
                StatusCode::INTERNAL_SERVER_ERROR,
                format!("the page {template} failed to render: {err}"),
            )
                .into_response(),
        }
    }
}

/// A queue name or a job id as one segment of a URL: every byte but the unreserved
/// characters of RFC 3986 percent-encoded (`/`, `?`, `#`, `%`, spaces, braces…).
pub(crate) fn encode(segment: &str) -> String {
    segment
        .bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// Runs the Redis half of a request on a blocking thread, on a connection of its own.
async fn blocking<T: Send + 'static>(
    app: &Arc<App>,
    work: impl FnOnce(&App, &mut dyn redis::ConnectionLike) -> Result<T, PageError> + Send + 'static,
) -> Result<T, PageError> {
    let app = app.clone();
    tokio::task::spawn_blocking(move || {
        let mut con = connect(&app.url, app.cluster).map_err(PageError::from)?;
        work(&app, &mut *con)
    })
    .await
    .map_err(|err| PageError::Redis(format!("the request's task ended: {err}")))?
}

/// The form of an action, checked: the token it carries.
fn check_token(app: &App, form: &HashMap<String, String>) -> Result<(), PageError> {
    match form.get("token") {
        Some(token) if app.guard.is_token(token) => Ok(()),
        _ => Err(PageError::Forbidden(
            "an action needs the token this dashboard printed at start (open the URL it \
             printed, then act from its pages)"
                .into(),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn segments_are_percent_encoded() {
        assert_eq!(encode("emails"), "emails");
        assert_eq!(
            encode("{tenant:7}:a b/c?d#e%"),
            "%7Btenant%3A7%7D%3Aa%20b%2Fc%3Fd%23e%25"
        );
        assert_eq!(encode("é"), "%C3%A9");
    }

    #[test]
    fn data_is_escaped_in_every_template() {
        let hb = templates();
        let script = "<script>alert(1)</script>";
        let data = json!({
            "title": script, "status": 502, "message": script,
            "can_act": false, "token": null, "read_only": true, "server": "server",
            "note": null, "error_page": true,
        });
        let html = hb.render("error", &data).expect("the error page renders");
        assert!(!html.contains(script), "{html}");
        assert!(
            html.contains("&lt;script&gt;alert(1)&lt;/script&gt;"),
            "{html}"
        );
    }
}
