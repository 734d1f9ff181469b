//! Rendering: what a checked model becomes. The Lua of the input checks a script starts
//! with ([`contract`], with the key check of [`key_check`]), the Rust of the generated
//! module ([`rust`]), the manifest ([`manifest`]), the Functions library ([`functions`]),
//! and the generated parts of the Python client ([`python`]) and of the TypeScript client
//! ([`typescript`]), with what both share ([`client`]).

pub(crate) mod client;
pub mod contract;
pub mod functions;
pub(crate) mod key_check;
pub(crate) mod lines;
pub(crate) mod manifest;
pub(crate) mod python;
pub(crate) mod rust;
pub(crate) mod typescript;
