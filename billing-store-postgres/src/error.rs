//! Diesel's errors as billing-core's [`StoreError`]s.

use billing_model::error::StoreError;
use diesel::result::{DatabaseErrorKind, Error as DieselError};

/// Unique violations name the constraint (for a unique index, PostgreSQL reports the index's
/// name); serialization failures and deadlocks are conflicts worth retrying; anything else is a
/// backend failure.
pub fn store_error(e: DieselError) -> StoreError {
    if let DieselError::DatabaseError(kind, info) = &e {
        match kind {
            DatabaseErrorKind::UniqueViolation => {
                let name = info.constraint_name().map(str::to_string).unwrap_or_else(|| info.message().to_string());
                return StoreError::UniqueViolation(name);
            }
            DatabaseErrorKind::SerializationFailure => return StoreError::Conflict(info.message().to_string()),
            _ if is_deadlock_message(info.message()) => return StoreError::Conflict(info.message().to_string()),
            _ => {}
        }
    }
    if let Some(inner) = conflict_inside(&e) {
        return StoreError::Conflict(inner);
    }
    StoreError::backend(e.to_string())
}

/// Whether the whole transaction may succeed if tried again: a serialization failure (40001) or
/// a deadlock (40P01), possibly reported by a failed `COMMIT`.
pub fn is_retryable(e: &DieselError) -> bool {
    match e {
        DieselError::DatabaseError(DatabaseErrorKind::SerializationFailure, _) => true,
        DieselError::DatabaseError(_, info) => is_deadlock_message(info.message()),
        DieselError::RollbackErrorOnCommit { commit_error, .. } => is_retryable(commit_error),
        _ => false,
    }
}

/// Whether a statement gave up waiting for a lock (`lock_timeout`, 55P03), recognised by the
/// server's message like a deadlock (see [`is_deadlock_message`]).
pub fn is_lock_timeout(e: &DieselError) -> bool {
    matches!(e, DieselError::DatabaseError(_, info) if info.message().starts_with("canceling statement due to lock timeout"))
}

fn conflict_inside(e: &DieselError) -> Option<String> {
    match e {
        DieselError::RollbackErrorOnCommit { commit_error, .. } if is_retryable(commit_error) => Some(commit_error.to_string()),
        _ => None,
    }
}

/// Diesel reports 40P01 as `DatabaseErrorKind::Unknown` and does not expose the SQLSTATE, so a
/// deadlock is recognised by the server's message. Servers run with `lc_messages` in English
/// (the default of every packaged PostgreSQL) say exactly this; with translated messages a
/// deadlock is reported as a backend failure instead of being retried.
fn is_deadlock_message(msg: &str) -> bool {
    msg.starts_with("deadlock detected")
}

/// Whether the error left the statement's effects undone but the transaction usable: the
/// constraint violations a caller may catch and carry on after (inside a savepoint).
pub fn is_statement_level(e: &DieselError) -> bool {
    matches!(
        e,
        DieselError::DatabaseError(
            DatabaseErrorKind::UniqueViolation
                | DatabaseErrorKind::ForeignKeyViolation
                | DatabaseErrorKind::NotNullViolation
                | DatabaseErrorKind::CheckViolation
                | DatabaseErrorKind::RestrictViolation
                | DatabaseErrorKind::ExclusionViolation,
            _
        )
    )
}
