//! What every family is built on: running operations and batches, script metadata and
//! the catalogue, the input rules, the error type, native-command helpers, tokens, and
//! the probe of what the server can do.
//! The families (one module each beside this folder) hold patterns only.
//!
//! Imports run one way, from the bottom up: `error`, `show`, `token`, `reply`, `server`;
//! `keys`; `script`; `input`; `library` (which also reads the generated table of every
//! script, `crate::scripts::ALL`); `trace`, `durability`, `wire`; `request` (a request
//! and the loop that runs it alone); `op`; `call`, `native`, `grid` (which build ops);
//! `batch`; `catalog`; `wait` (waiting on a wake stream). No module here names a family.

pub(crate) mod batch;
pub(crate) mod call;
pub mod catalog;
pub(crate) mod durability;
pub(crate) mod error;
pub(crate) mod grid;
pub(crate) mod input;
pub(crate) mod keys;
pub(crate) mod library;
pub(crate) mod machine;
pub(crate) mod native;
pub(crate) mod op;
pub(crate) mod reply;
pub(crate) mod request;
pub(crate) mod script;
pub mod server;
pub(crate) mod show;
pub mod token;
pub mod trace;
pub mod wait;
pub(crate) mod wire;
