//! Where an operation runs. Every operation declares its lane next to its definition (the
//! `lane` module of each resource's `ops`), and a host picks its executor by it: the server
//! routes each request by the lane in its route table.

/// How an operation uses the store and the world outside the process.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Lane {
    /// Reads only, in read transactions; never waits for a writer. May run anywhere, on SQLite
    /// on a pooled read connection.
    Read,
    /// Writes in store transactions and calls nothing outside the process, so it may run inside
    /// a shared write batch (SQLite's group-commit writer thread runs many together).
    Write,
    /// Calls a service outside the process (a payment gateway, a webhook receiver) between its
    /// transactions: record the attempt, call with no transaction open, record the result. It
    /// runs on a thread of its own and never inside a store transaction or a write batch, so a
    /// slow gateway holds up only its own request.
    Io,
}
