//! Rendering: what a checked model becomes. The Lua of the input checks a script starts
//! with ([`contract`], with the key check of [`key_check`]), the Rust of the generated
//! module ([`rust`]), the manifest ([`manifest`]) and the Functions library
//! ([`functions`]).

pub mod contract;
pub mod functions;
pub(crate) mod key_check;
pub(crate) mod lines;
pub(crate) mod manifest;
pub(crate) mod rust;
