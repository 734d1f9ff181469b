//! Login sessions: 《Redis 应用实例》 chapter 19 (`Session`), and beyond it a store of
//! several sessions per user that cleans itself, caps them, slides their expiry and keeps
//! their data.
//!
//! ```no_run
//! # fn demo() -> redis_patterns::Result<()> {
//! use redis_patterns::session::{SessionStore, TokenStatus};
//!
//! let mut con = redis::Client::open("redis://127.0.0.1/")?.get_connection()?;
//! let store = SessionStore::new("sessions")?.with_cap(5)?;
//! let login = store.create("peter").run(&mut con)?;
//! let token = login.token.as_str(); // the cookie's value
//! store.set("peter", token, &[("theme", "dark")]).run(&mut con)?;
//!
//! // On each request: one round trip checks the token, slides its expiry, loads the data.
//! if let Some(session) = store.load("peter", token).run(&mut con)? {
//!     let theme: Option<String> = session.get("theme")?;
//! }
//! assert_eq!(store.validate("peter", "forged").run(&mut con)?, TokenStatus::Incorrect);
//! store.end_all("peter").run(&mut con)?; // log out everywhere
//! # Ok(()) }
//! ```
//!
//! ## The book: one session per user
//!
//! A [`Session`] keeps one user's token at the key `User:<uid>:token`, as the book does.
//!
//! | Book | Here | Wire |
//! |---|---|---|
//! | `Session(client, uid)` | [`Session::new(uid)`](Session::new) → `Result` | none |
//! | `create(timeout=2592000)` → token | [`create()`](Session::create), [`create_for(ttl)`](Session::create_for) → [`SessionToken`] | `SET User:<uid>:token <token> PX <ttl>` |
//! | `validate(token)` → `"TOKEN_NOT_EXISTS"` / `"TOKEN_CORRECT"` / `"TOKEN_INCORRECT"` | [`validate(token)`](Session::validate) → [`TokenStatus`] (its [`as_str`](TokenStatus::as_str) is the book's string) | `GET`, then a constant-time compare |
//! | `destroy()` | [`destroy()`](Session::destroy) → `bool` | `DEL` |
//!
//! What differs from the book, and why:
//!
//! - **The compare takes the same time however much of a guess is right.** The book
//!   compares with Python's `==`, which stops at the first differing character, so timing
//!   tells an attacker how much of a token they have guessed. The compare runs in the
//!   app, after the `GET`.
//! - **A token is 256 random bits** (64 hex digits) from the operating system; the book's
//!   `secrets.token_hex(64)` gives 512 bits, more than any attacker needs to be denied.
//!   The token's [`Debug`](SessionToken) shows its id, never the token.
//! - As in the book, each [`create`](Session::create) replaces the user's token: a new
//!   login ends the old one. [`SessionStore`] keeps several.
//!
//! ## Beyond the book: [`SessionStore`]
//!
//! What Spring Session's users keep asking for, in one step per call:
//!
//! - **Several sessions per user** (a phone, a laptop), each with its own token and ttl,
//!   listed with [`list`](SessionStore::list) (a "your devices" page) and ended one by one
//!   with [`end`](SessionStore::end), or all at once with
//!   [`end_all`](SessionStore::end_all) ("log out everywhere").
//! - **An index that cleans itself.** Spring Session indexes a user's sessions in a set
//!   that only a keyspace notification cleans, so a missed notification leaks the entry
//!   for ever (spring-session#1715). Here the index is a sorted set of deadlines: every
//!   write forgets the user's expired sessions first, every read ignores them, and the
//!   user's keys expire with the last session, so nothing is left behind and no
//!   notification is needed.
//! - **A cap** of sessions per user ([`with_cap`](SessionStore::with_cap), 10 by
//!   default, at most 1000): a new session beyond it ends the ones that would expire
//!   soonest (with one ttl, the least recently used). The cap holds at every instant,
//!   since the check and the insert are one script.
//! - **Sliding expiry**: a correct [`validate`](SessionStore::validate) restarts the
//!   session's ttl (turn it off with [`with_sliding(false)`](SessionStore::with_sliding)).
//! - **Session data** ([`set`](SessionStore::set), [`unset`](SessionStore::unset),
//!   [`load`](SessionStore::load)) that ends with its session, whether it expires, is
//!   evicted by the cap or is ended: up to 256 fields and 64 KiB of names and values per
//!   session.
//! - **Redis keeps no token.** A session's id is the SHA-1 of its token
//!   ([`session_id`]); the store keeps ids and looks a token up by its id. That is what
//!   the hash is for: a copy of the data (an RDB file, a replica, a client that reads the
//!   keys) lets no one log in. Timing tells nothing either: a lookup compares digests,
//!   which [`list`](SessionStore::list) shows anyway, and no digest gives back its token
//!   (the lock and lease tokens, compared with Lua's `==`, need no hash against timing
//!   for other reasons: see [Tokens and timing](crate#tokens-and-timing)). A token does
//!   travel as a script argument, so `MONITOR`, `SLOWLOG` and Lua's string table (until
//!   its next garbage collection) can hold it, as they hold any command's arguments.
//!
//! A user `uid` of the store `namespace` is two keys in one hash slot:
//!
//! | Key | Type | Holds |
//! |---|---|---|
//! | `{namespace:uid}:sessions` | zset | session id → deadline (ms, server clock) |
//! | `{namespace:uid}:records` | hash | `t:<id>` → the session's ttl (ms); `d:<id>` → its data, a MessagePack map |
//!
//! Every call is about one user, so every call works on a cluster, and users spread over
//! the slots. A `namespace` with a hash tag (`{app}`) puts all its users in one slot.

use std::collections::BTreeMap;
use std::fmt;
use std::time::Duration;

use redis::{FromRedisValue, ToRedisArgs};

use crate::runtime::error::{Error, Result};
use crate::runtime::input;
use crate::runtime::op::Op;
use crate::runtime::token;
use crate::scripts::session as script;

/// How long a session lasts unless told otherwise: 30 days, the book's default.
pub const DEFAULT_TTL: Duration = Duration::from_secs(30 * 24 * 3600);

/// How many sessions a user of a [`SessionStore`] may have unless set with
/// [`with_cap`](SessionStore::with_cap).
pub const DEFAULT_CAP: u64 = 10;

/// The book's three answers to "is this the user's token?".
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TokenStatus {
    /// The user has no (live) session: `TOKEN_NOT_EXISTS`.
    NotExists,
    /// The token is the user's (one of its sessions'): `TOKEN_CORRECT`.
    Correct,
    /// The user has a session, but this token is not its: `TOKEN_INCORRECT`.
    Incorrect,
}

impl TokenStatus {
    /// The book's string: `TOKEN_NOT_EXISTS`, `TOKEN_CORRECT` or `TOKEN_INCORRECT`.
    pub fn as_str(self) -> &'static str {
        match self {
            TokenStatus::NotExists => "TOKEN_NOT_EXISTS",
            TokenStatus::Correct => "TOKEN_CORRECT",
            TokenStatus::Incorrect => "TOKEN_INCORRECT",
        }
    }

    /// Whether the token is correct.
    pub fn is_correct(self) -> bool {
        self == TokenStatus::Correct
    }

    fn parse(reply: &[u8]) -> Result<Self> {
        [
            TokenStatus::NotExists,
            TokenStatus::Correct,
            TokenStatus::Incorrect,
        ]
        .into_iter()
        .find(|status| status.as_str().as_bytes() == reply)
        .ok_or_else(|| {
            Error::unexpected_reply(
                "session token status",
                String::from_utf8_lossy(reply).into_owned(),
            )
        })
    }
}

impl fmt::Display for TokenStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A new session's token: 256 random bits from the operating system, as 64 hex digits.
/// Give it to the client (a cookie); it is the only proof of the session.
///
/// Its `Debug` shows the session's [id](SessionToken::id), never the token, so that a
/// logged value does not leak it.
#[derive(Clone, PartialEq, Eq)]
pub struct SessionToken(String);

impl SessionToken {
    fn random() -> Self {
        SessionToken(format!("{}{}", token::random(), token::random()))
    }

    /// The token.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The token, as an owned string.
    pub fn into_string(self) -> String {
        self.0
    }

    /// The session's id: [`session_id`] of the token.
    pub fn id(&self) -> String {
        session_id(&self.0)
    }
}

impl fmt::Debug for SessionToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SessionToken")
            .field("id", &self.id())
            .finish_non_exhaustive()
    }
}

/// A session's id in a [`SessionStore`]: the SHA-1 of its token, as 40 hex digits (what
/// the scripts compute with `redis.sha1hex`). An id names a session without giving the
/// power to use it: list and end sessions by id, keep the token secret.
pub fn session_id(token: &str) -> String {
    sha1_smol::Sha1::from(token).digest().to_string()
}

/// One user's session, the book's way: one token at `User:<uid>:token`. See the
/// [module docs](self).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Session {
    uid: String,
    key: String,
}

impl Session {
    /// The session of user `uid`, at the key `User:<uid>:token`. An empty `uid` is
    /// [`Error::InvalidInput`].
    pub fn new(uid: impl Into<String>) -> Result<Self> {
        let uid = uid.into();
        checked_uid(&uid)?;
        Ok(Session {
            key: format!("User:{uid}:token"),
            uid,
        })
    }

    /// The user's id.
    pub fn uid(&self) -> &str {
        &self.uid
    }

    /// The key, `User:<uid>:token`.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// Starts a session that lasts [`DEFAULT_TTL`] (30 days) and returns its new token.
    /// It replaces the user's earlier token, if any: one session per user.
    pub fn create(&self) -> Op<SessionToken> {
        self.create_for(DEFAULT_TTL)
    }

    /// [`create`](Self::create), lasting `ttl` (whole milliseconds, at least 1): `SET
    /// User:<uid>:token <token> PX <ttl>`. Each run of the returned [`Op`] sets the same
    /// token; build another for a new one.
    pub fn create_for(&self, ttl: Duration) -> Op<SessionToken> {
        Op::try_build(|| {
            let ttl = input::ttl_ms(ttl)?;
            let token = SessionToken::random();
            let mut cmd = redis::cmd("SET");
            cmd.arg(&self.key).arg(token.as_str()).arg("PX").arg(ttl);
            Ok(Op::<()>::native(cmd).map(move |()| Ok(token.clone())))
        })
    }

    /// Checks `token` against the user's: `GET`, then a compare whose time does not
    /// depend on where the two differ.
    pub fn validate(&self, token: &str) -> Op<TokenStatus> {
        let token = token.as_bytes().to_vec();
        let mut cmd = redis::cmd("GET");
        cmd.arg(&self.key);
        Op::<Option<Vec<u8>>>::native(cmd).map(move |stored| {
            Ok(match stored {
                None => TokenStatus::NotExists,
                Some(stored) if token::same(&stored, &token) => TokenStatus::Correct,
                Some(_) => TokenStatus::Incorrect,
            })
        })
    }

    /// Ends the session: `DEL`. True if there was one.
    pub fn destroy(&self) -> Op<bool> {
        let mut cmd = redis::cmd("DEL");
        cmd.arg(&self.key);
        Op::native(cmd)
    }
}

/// A session just started by [`SessionStore::create`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewSession {
    /// Its token, for the client.
    pub token: SessionToken,
    /// The ids of the user's sessions ended to keep within the cap, soonest to expire
    /// first; usually none.
    pub evicted: Vec<String>,
}

/// A live session, as [`SessionStore::list`] shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionInfo {
    /// Its id: [`session_id`] of its token.
    pub id: String,
    /// How long it has left (to the millisecond).
    pub expires_in: Duration,
}

/// A session checked and loaded by [`SessionStore::load`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionData {
    /// How long the session has left, after this load's slide.
    pub expires_in: Duration,
    /// Its data: each field's name and value, as [`set`](SessionStore::set) stored it.
    pub fields: BTreeMap<String, Vec<u8>>,
}

impl SessionData {
    /// The field `name`, decoded as any redis-rs type (`String`, a number, `Vec<u8>`…);
    /// `None` when the session has no such field.
    pub fn get<V: FromRedisValue>(&self, name: &str) -> Result<Option<V>> {
        self.fields
            .get(name)
            .map(|value| {
                Ok(V::from_redis_value(redis::Value::BulkString(
                    value.clone(),
                ))?)
            })
            .transpose()
    }
}

/// Several sessions per user, capped, sliding, with data, in an index that cleans
/// itself. See the [module docs](self).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionStore {
    namespace: String,
    ttl: u64,
    cap: u64,
    sliding: bool,
}

impl SessionStore {
    /// The store `namespace`: sessions last [`DEFAULT_TTL`] (30 days) from their last
    /// validation, and a user has at most [`DEFAULT_CAP`] (10) of them.
    ///
    /// An empty `namespace`, or one with a `}` but no hash tag, is
    /// [`Error::InvalidInput`].
    pub fn new(namespace: impl Into<String>) -> Result<Self> {
        let namespace = namespace.into();
        input::aux_key_of("namespace", &namespace, "sessions")?;
        Ok(SessionStore {
            namespace,
            ttl: input::ttl_ms(DEFAULT_TTL)?,
            cap: DEFAULT_CAP,
            sliding: true,
        })
    }

    /// How long a session lasts (again from each validation, if sliding) unless
    /// [`create_for`](Self::create_for) says otherwise: whole milliseconds, at least 1.
    pub fn with_ttl(mut self, ttl: Duration) -> Result<Self> {
        self.ttl = input::ttl_ms(ttl)?;
        Ok(self)
    }

    /// The most sessions a user may have, from 1 to 1000 ([`DEFAULT_CAP`] unless set).
    pub fn with_cap(mut self, cap: u64) -> Result<Self> {
        input::check_param(&script::CREATE.args[2], cap)?;
        self.cap = cap;
        Ok(self)
    }

    /// Whether a correct [`validate`](Self::validate) or [`load`](Self::load) restarts the
    /// session's ttl (true unless set).
    pub fn with_sliding(mut self, sliding: bool) -> Self {
        self.sliding = sliding;
        self
    }

    /// The store's namespace.
    pub fn namespace(&self) -> &str {
        &self.namespace
    }

    /// User `uid`'s keys: `{namespace:uid}:sessions` and `{namespace:uid}:records`.
    pub fn keys(&self, uid: &str) -> Result<[String; 2]> {
        let uid = checked_uid(uid)?;
        Ok([
            script::keys::sessions(&self.namespace, uid)?,
            script::keys::records(&self.namespace, uid)?,
        ])
    }

    /// Starts a session of `uid` with the store's ttl, and returns its new token; if the
    /// user already has the cap's number of sessions, those that would expire soonest
    /// end (their ids are in [`NewSession::evicted`]). One script (`session/create`).
    ///
    /// Each run of the returned [`Op`] tries the same token, so a second run fails with
    /// `TOKEN_TAKEN`; build another for a new session.
    pub fn create(&self, uid: &str) -> Op<NewSession> {
        self.start(uid, Ok(self.ttl))
    }

    /// [`create`](Self::create), with this session's own `ttl` (a "remember me" box), kept
    /// by its slides too.
    pub fn create_for(&self, uid: &str, ttl: Duration) -> Op<NewSession> {
        self.start(uid, input::ttl_ms(ttl))
    }

    fn start(&self, uid: &str, ttl: Result<u64>) -> Op<NewSession> {
        Op::try_build(|| {
            let [sessions, records] = self.keys(uid)?;
            let ttl = Duration::from_millis(ttl?);
            let token = SessionToken::random();
            Ok(
                script::create(&sessions, &records, token.as_str(), ttl, self.cap).map(
                    move |evicted| {
                        Ok(NewSession {
                            token: token.clone(),
                            evicted,
                        })
                    },
                ),
            )
        })
    }

    /// Checks `token` against `uid`'s sessions, with the book's three answers; a correct
    /// one's session lasts its ttl again from now, if the store slides. One script
    /// (`session/validate`), which also forgets the user's expired sessions.
    pub fn validate(&self, uid: &str, token: &str) -> Op<TokenStatus> {
        self.check(uid, token, false)
            .map(|(status, _, _)| TokenStatus::parse(status.as_bytes()))
    }

    /// [`validate`](Self::validate), and the session's data with it: `None` unless the
    /// token is correct. One round trip for what a request needs.
    pub fn load(&self, uid: &str, token: &str) -> Op<Option<SessionData>> {
        self.check(uid, token, true).map(|(status, left, fields)| {
            if !TokenStatus::parse(status.as_bytes())?.is_correct() {
                return Ok(None);
            }
            Ok(Some(SessionData {
                expires_in: Duration::from_millis(left),
                fields: fields.into_iter().collect(),
            }))
        })
    }

    /// `session/validate`: the answer, the ms left and the data's fields.
    fn check(&self, uid: &str, token: &str, data: bool) -> Op<ValidateReply> {
        Op::try_build(|| {
            let [sessions, records] = self.keys(uid)?;
            Ok(script::validate(
                &sessions,
                &records,
                token,
                self.sliding,
                data,
            ))
        })
    }

    /// Sets fields of the session's data (from 1 to 100 per call), if `token` is one of
    /// `uid`'s sessions: [`TokenStatus::Correct`]; otherwise nothing is set and the answer
    /// says why. The data may hold up to 256 fields and 64 KiB of names and values
    /// (`DATA_TOO_BIG` beyond, and nothing is set). Setting does not slide the expiry.
    /// One script (`session/set`).
    pub fn set<V: ToRedisArgs>(
        &self,
        uid: &str,
        token: &str,
        fields: &[(&str, V)],
    ) -> Op<TokenStatus> {
        Op::try_build(|| {
            let [sessions, records] = self.keys(uid)?;
            let mut flat = Vec::with_capacity(fields.len() * 2);
            for (name, value) in fields {
                flat.push(name.as_bytes().to_vec());
                flat.push(input::value("value", value)?);
            }
            Ok(
                script::set(&sessions, &records, token, &input::slices(&flat))
                    .map(|status| TokenStatus::parse(status.as_bytes())),
            )
        })
    }

    /// Removes fields from the session's data (from 1 to 100 names per call; names it
    /// does not hold are ignored), if `token` is one of `uid`'s sessions. One script
    /// (`session/unset`).
    pub fn unset(&self, uid: &str, token: &str, names: &[&str]) -> Op<TokenStatus> {
        Op::try_build(|| {
            let [sessions, records] = self.keys(uid)?;
            let names: Vec<&[u8]> = names.iter().map(|n| n.as_bytes()).collect();
            Ok(script::unset(&sessions, &records, token, &names)
                .map(|status| TokenStatus::parse(status.as_bytes())))
        })
    }

    /// `uid`'s live sessions, soonest to expire first (at most 1000, the largest cap).
    /// Read-only (`session/list`).
    pub fn list(&self, uid: &str) -> Op<Vec<SessionInfo>> {
        Op::try_build(|| {
            let [sessions, _] = self.keys(uid)?;
            Ok(script::list(&sessions).map(|rows| {
                Ok(rows
                    .into_iter()
                    .map(|(id, left)| SessionInfo {
                        id,
                        expires_in: Duration::from_millis(left),
                    })
                    .collect())
            }))
        })
    }

    /// Ends `uid`'s session with the id `id` (from [`list`](Self::list) or
    /// [`SessionToken::id`]), data and all: true if it was live. One script
    /// (`session/end`).
    pub fn end(&self, uid: &str, id: &str) -> Op<bool> {
        Op::try_build(|| {
            let [sessions, records] = self.keys(uid)?;
            Ok(script::end(&sessions, &records, &[id]).map(|ended| Ok(ended > 0)))
        })
    }

    /// Logs out: ends the session whose token is `token`, as [`end`](Self::end) does with
    /// its id.
    pub fn end_token(&self, uid: &str, token: &str) -> Op<bool> {
        self.end(uid, &session_id(token))
    }

    /// Logs `uid` out everywhere: all its sessions and their data end at once (`DEL` of
    /// its two keys). True if it had any state.
    pub fn end_all(&self, uid: &str) -> Op<bool> {
        Op::try_build(|| {
            let mut cmd = redis::cmd("DEL");
            cmd.arg(&self.keys(uid)?);
            Ok(Op::<u64>::native(cmd).map(|deleted| Ok(deleted > 0)))
        })
    }
}

/// `session/validate`'s reply: the answer, the ms the session has left, and its data's
/// fields.
type ValidateReply = (String, u64, Vec<(String, Vec<u8>)>);

/// A user id is never empty.
fn checked_uid(uid: &str) -> Result<&str> {
    if uid.is_empty() {
        return Err(Error::invalid("uid", "must not be empty"));
    }
    Ok(uid)
}
