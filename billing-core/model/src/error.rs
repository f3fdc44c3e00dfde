//! One error type for every operation. Handled errors carry a stable [`Code`] whose
//! [`ErrorClass`] decides the HTTP status at the edge; validation errors carry the spec's
//! `detail` entries (type, loc, msg).

use serde::Serialize;
use std::fmt;

/// The spec's exception classes; each maps to one HTTP status.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorClass {
    BadRequest,
    Unauthorized,
    Forbidden,
    PermissionForbidden,
    NotFound,
    Gone,
    UnprocessableEntity,
    DuplicateValue,
    /// The request collides with another one in progress (idempotency keys).
    Conflict,
    MethodNotAllowed,
    PayloadTooLarge,
    RequestTimeout,
    TooManyRequests,
    Internal,
    Unavailable,
}

impl ErrorClass {
    pub fn status(self) -> u16 {
        match self {
            ErrorClass::BadRequest => 400,
            ErrorClass::Unauthorized => 401,
            ErrorClass::Forbidden | ErrorClass::PermissionForbidden => 403,
            ErrorClass::NotFound => 404,
            ErrorClass::MethodNotAllowed => 405,
            ErrorClass::Conflict => 409,
            ErrorClass::Gone => 410,
            ErrorClass::RequestTimeout => 408,
            ErrorClass::PayloadTooLarge => 413,
            ErrorClass::UnprocessableEntity | ErrorClass::DuplicateValue => 422,
            ErrorClass::TooManyRequests => 429,
            ErrorClass::Internal => 500,
            ErrorClass::Unavailable => 503,
        }
    }
}

macro_rules! codes {
    ($($code:ident => $class:ident, $msg:expr;)*) => {
        /// Stable error codes of the public API.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
        #[allow(non_camel_case_types)]
        pub enum Code { $($code),* }

        impl Code {
            pub fn as_str(self) -> &'static str {
                match self { $(Code::$code => stringify!($code)),* }
            }
            pub fn class(self) -> ErrorClass {
                match self { $(Code::$code => ErrorClass::$class),* }
            }
            /// The user-facing text of the code.
            pub fn message(self) -> &'static str {
                match self { $(Code::$code => $msg),* }
            }
        }
    };
}

codes! {
    SERVICE_ERROR => Internal, "Something went wrong, please contact support";
    SERVICE_UNKNOWN_ERROR => Internal, "An unknown error occurred";
    UNAUTHORIZED => Unauthorized, "Missing, malformed or invalid credentials";
    PERMISSION_FORBIDDEN => PermissionForbidden, "Permission forbidden";
    NOT_FOUND => NotFound, "Resource not found";
    METHOD_NOT_ALLOWED => MethodNotAllowed, "Method not allowed";
    PAYLOAD_TOO_LARGE => PayloadTooLarge, "Request body too large";
    RATE_LIMITED => TooManyRequests, "Too many requests";
    REQUEST_TIMEOUT => RequestTimeout, "The request was not received in time";
    SERVICE_UNAVAILABLE => Unavailable, "The service is busy, try again shortly";
    INVALID_PARAMETERS => BadRequest, "Request input not valid";
    PHONE_ALREADY_REGISTERED => DuplicateValue, "Phone already registered";
    DUPLICATE_CONSUMER => DuplicateValue, "Consumer with same phone number or e-mail exists";
    DUPLICATE_PAYMENT => DuplicateValue, "A payment with the given information exists";
    RESOURCE_ALREADY_EXISTS => DuplicateValue, "A resource with the same name exists";
    PRODUCT_USED_IN_FINALIZED_INVOICE => BadRequest, "Product cannot be updated, it is used by a finalized invoice";
    COUPON_USED_IN_FINALIZED_INVOICE => BadRequest, "Coupon cannot be updated, it is used by a finalized invoice";
    INVOICE_FINALISED => BadRequest, "Invoice is finalised and cannot undergo this action";
    INVOICE_INVALID_STATUS => BadRequest, "Invoice status does not allow this action";
    PAYMENT_FINALIZED => BadRequest, "Payment is already finalized";
    PAYMENT_FLOW_NOT_ALLOWED => BadRequest, "Payment flow not allowed";
    PAYMENT_REFUNDED_ALREADY => BadRequest, "Payment already refunded";
    PAYMENT_REFUNDED_FAILED => BadRequest, "Refund failed at the processor";
    INVALID_STATUS => BadRequest, "The entity's status does not allow this action";
    FREEZE_OVERLAP => BadRequest, "The freeze period overlaps another freeze period of the subscription";
    BRANCH_IN_USE => BadRequest, "Branch cannot be deleted";
    CONSUMER_HAS_ONGOING_INVOICES => BadRequest, "Consumer has ongoing invoices";
    CONSUMER_HAS_ONGOING_SUBSCRIPTIONS => BadRequest, "Consumer has ongoing subscriptions";
    CONSUMER_HAS_ACTIVE_PAYMENT_LINKS => BadRequest, "Consumer has active payment links";
    FEATURE_DISABLED => Unauthorized, "Feature is not enabled for this organization";
    SANDBOX_ONLY => Forbidden, "Only sandbox organizations have a test clock";
    INVITATION_EXPIRED => Gone, "The invitation has expired or was already used";
    USER_ALREADY_REGISTERED => DuplicateValue, "User already registered";
    IDEMPOTENCY_KEY_MISMATCH => UnprocessableEntity, "The idempotency key was already used with a different request";
    IDEMPOTENCY_KEY_IN_USE => Conflict, "A request with the same idempotency key is still in progress";
    IDEMPOTENCY_OUTCOME_UNKNOWN => Conflict, "The request with this idempotency key was carried out but its response was not kept";
}

/// One field-level validation failure, as in the spec's `detail` list.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FieldError {
    #[serde(rename = "type")]
    pub kind: String,
    pub loc: Vec<LocPart>,
    pub msg: String,
}

impl fmt::Display for FieldError {
    /// `body.items.0.quantity: must be at least 1` (`loc` without its `body`/`query` head).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let skip = matches!(self.loc.first(), Some(LocPart::Key(k)) if k == "body" || k == "query") && self.loc.len() > 1;
        let path: Vec<String> = self
            .loc
            .iter()
            .skip(usize::from(skip))
            .map(|p| match p {
                LocPart::Key(k) => k.clone(),
                LocPart::Index(i) => i.to_string(),
            })
            .collect();
        match path.is_empty() {
            true => write!(f, "{}", self.msg),
            false => write!(f, "{}: {}", path.join("."), self.msg),
        }
    }
}

impl FieldError {
    /// The failures as one line: `a: …; b: …`.
    pub fn list(errors: &[FieldError]) -> String {
        errors.iter().map(ToString::to_string).collect::<Vec<_>>().join("; ")
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum LocPart {
    Key(String),
    Index(usize),
}

impl From<&str> for LocPart {
    fn from(s: &str) -> Self {
        LocPart::Key(s.to_string())
    }
}
impl From<String> for LocPart {
    fn from(s: String) -> Self {
        LocPart::Key(s)
    }
}
impl From<usize> for LocPart {
    fn from(i: usize) -> Self {
        LocPart::Index(i)
    }
}

impl FieldError {
    pub fn new(kind: &str, loc: Vec<LocPart>, msg: impl Into<String>) -> Self {
        Self {
            kind: kind.to_string(),
            loc,
            msg: msg.into(),
        }
    }
    /// A failure of a body field: `loc` is `["body", field]`.
    pub fn body(kind: &str, field: &str, msg: impl Into<String>) -> Self {
        Self::new(kind, vec!["body".into(), field.into()], msg)
    }
    pub fn query(kind: &str, field: &str, msg: impl Into<String>) -> Self {
        Self::new(kind, vec!["query".into(), field.into()], msg)
    }
}

/// The names of the unique constraints that the core and the conformance suite tell apart in a
/// [`StoreError::UniqueViolation`]. Every store reports a violation by these names (PostgreSQL's
/// own constraint and index names; the SQLite store maps its errors to the same), and their
/// schemas keep them: renaming one is a change of this contract.
pub mod constraint {
    /// An organization's id (its primary key).
    pub const ORGANIZATIONS_PKEY: &str = "organizations_pkey";
    /// A live branch's name within its organization.
    pub const BRANCHES_ORG_NAME: &str = "branches_org_name_key";
    /// A live consumer's phone number within its branch.
    pub const CONSUMERS_BRANCH_PHONE: &str = "consumers_branch_phone_key";
    /// A live consumer's e-mail (folded) within its branch.
    pub const CONSUMERS_BRANCH_EMAIL: &str = "consumers_branch_email_key";
    /// A payment link's short id.
    pub const PAYMENT_LINKS_SHORT_ID: &str = "payment_links_short_id_key";
    /// A payer's session within a payment link (one attempt in progress per session).
    pub const PAYMENT_LINK_ATTEMPTS_SESSION: &str = "payment_link_attempts_session_key";
    /// A subscription's cycle (issued once).
    pub const SUBSCRIPTION_CYCLES: &str = "subscription_cycles_key";
    /// A subscription's scheduled plan change (at most one).
    pub const SUBSCRIPTION_PLAN_CHANGES_SCHEDULED: &str = "subscription_plan_changes_scheduled_key";
    /// An event's delivery to a webhook endpoint (once per endpoint and event).
    pub const WEBHOOK_DELIVERIES_ENDPOINT_EVENT: &str = "webhook_deliveries_endpoint_event_key";
    /// A due-work item's id (its primary key).
    pub const DUE_WORK_PKEY: &str = "due_work_pkey";
    /// An idempotency key within its organization and scope (its primary key).
    pub const IDEMPOTENCY_KEYS_PKEY: &str = "idempotency_keys_pkey";

    /// Every name above.
    pub const ALL: &[&str] = &[
        ORGANIZATIONS_PKEY,
        BRANCHES_ORG_NAME,
        CONSUMERS_BRANCH_PHONE,
        CONSUMERS_BRANCH_EMAIL,
        PAYMENT_LINKS_SHORT_ID,
        PAYMENT_LINK_ATTEMPTS_SESSION,
        SUBSCRIPTION_CYCLES,
        SUBSCRIPTION_PLAN_CHANGES_SCHEDULED,
        WEBHOOK_DELIVERIES_ENDPOINT_EVENT,
        DUE_WORK_PKEY,
        IDEMPOTENCY_KEYS_PKEY,
    ];
}

/// What a store's reads and writes answer ([`StoreError`] on failure).
pub type StoreResult<T> = std::result::Result<T, StoreError>;

/// Failures reported by a store.
#[derive(Debug, Clone, thiserror::Error)]
pub enum StoreError {
    /// A named unique constraint refused the write; the core turns the name into a client error
    /// (the names it tells apart are in [`constraint`]).
    #[error("unique constraint {0} violated")]
    UniqueViolation(String),
    /// A serialization failure or deadlock: the operation may be retried as a whole.
    #[error("transaction conflict: {0}")]
    Conflict(String),
    /// The row an update names does not exist (`"invoice 0190…"`).
    #[error("{0} does not exist")]
    NotFound(String),
    /// A claim of due work expired and another process took the item over: the caller's
    /// transaction must not keep what it did (the core rolls it back and moves on).
    #[error("the lease on work item {0} was lost")]
    LeaseLost(crate::ids::WorkId),
    /// Anything else the backend reported, with its error kept as the source.
    #[error("store failure: {message}")]
    Backend {
        message: String,
        #[source]
        source: Option<std::sync::Arc<dyn std::error::Error + Send + Sync>>,
    },
}

impl StoreError {
    pub fn backend(message: impl Into<String>) -> Self {
        StoreError::Backend {
            message: message.into(),
            source: None,
        }
    }

    /// A backend failure that keeps the backend's own error as its source.
    pub fn backend_from(e: impl std::error::Error + Send + Sync + 'static) -> Self {
        StoreError::Backend {
            message: e.to_string(),
            source: Some(std::sync::Arc::new(e)),
        }
    }
}

/// Equal when of the same kind with the same text (a backend error's source is not compared).
impl PartialEq for StoreError {
    fn eq(&self, other: &Self) -> bool {
        use StoreError::*;
        match (self, other) {
            (UniqueViolation(a), UniqueViolation(b)) | (Conflict(a), Conflict(b)) | (NotFound(a), NotFound(b)) => a == b,
            (LeaseLost(a), LeaseLost(b)) => a == b,
            (Backend { message: a, .. }, Backend { message: b, .. }) => a == b,
            _ => false,
        }
    }
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum Error {
    #[error("invalid input: {}", FieldError::list(.0))]
    Validation(Vec<FieldError>),
    #[error("{}: {}", code.as_str(), info.as_deref().unwrap_or(code.message()))]
    Rule { code: Code, info: Option<String> },
    /// A refund that would touch payments made in one transaction with others (spec: Payments).
    #[error("multiple payments in one transaction")]
    MultiplePayments { payment_ids: Vec<String>, total_amount: String },
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl Error {
    pub fn rule(code: Code, info: impl Into<String>) -> Self {
        Error::Rule { code, info: Some(info.into()) }
    }
    pub fn code(code: Code) -> Self {
        Error::Rule { code, info: None }
    }
    pub fn not_found(what: &str, id: impl fmt::Display) -> Self {
        Error::rule(Code::NOT_FOUND, format!("{what} '{id}' not found"))
    }
    pub fn forbidden(info: impl Into<String>) -> Self {
        Error::rule(Code::PERMISSION_FORBIDDEN, info)
    }
    pub fn unauthorized(info: impl Into<String>) -> Self {
        Error::rule(Code::UNAUTHORIZED, info)
    }
    pub fn invalid(e: FieldError) -> Self {
        Error::Validation(vec![e])
    }
    /// The stable code of a handled error (validation errors have none).
    pub fn rule_code(&self) -> Option<Code> {
        match self {
            Error::Rule { code, .. } => Some(*code),
            Error::MultiplePayments { .. } => Some(Code::INVALID_PARAMETERS),
            Error::Store(_) => Some(Code::SERVICE_UNKNOWN_ERROR),
            Error::Validation(_) => None,
        }
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Collects field errors so that a request reports all of its problems at once.
#[derive(Debug, Default)]
pub struct Problems(pub Vec<FieldError>);

impl Problems {
    pub fn push(&mut self, e: FieldError) {
        self.0.push(e);
    }
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
    pub fn into_result(self) -> Result<()> {
        if self.0.is_empty() {
            Ok(())
        } else {
            Err(Error::Validation(self.0))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn validation_errors_read_as_sentences() {
        let e = Error::Validation(vec![
            FieldError::body("missing", "name", "Field required"),
            FieldError::new(
                "value_error",
                vec!["body".into(), "items".into(), 0.into(), "quantity".into()],
                "must be at least 1",
            ),
            FieldError::new("missing", vec!["default_branch_id".into()], "a key needs a default branch"),
        ]);
        assert_eq!(
            e.to_string(),
            "invalid input: name: Field required; items.0.quantity: must be at least 1; default_branch_id: a key needs a default branch"
        );
    }
}
