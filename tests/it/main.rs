//! Integration tests against real `redis-server` processes, in one binary so that its
//! tests share one server and one cluster.

mod harness;
mod server;

mod counter;
mod fenced_lock;
mod id_generator;
mod identity_lock;
mod lock;
mod logical_matrix;
mod matrix;
mod runtime;

/// Runs an operation on a connection and records it in a transcript, the call written as
/// in the code.
#[macro_export]
macro_rules! step {
    ($transcript:expr, $con:expr, $op:expr) => {
        $transcript.step(stringify!($op), $op.run($con))
    };
}
