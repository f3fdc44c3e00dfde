//! Diesel's view of the webhook and due-work tables (`migrations/0004_webhooks`).

diesel::table! {
    due_work (id) {
        id -> Uuid,
        org_id -> Uuid,
        kind -> Text,
        due_at -> Timestamptz,
        payload -> Jsonb,
        attempts -> Int4,
        leased_until -> Nullable<Timestamptz>,
    }
}

diesel::table! {
    webhook_endpoints (id) {
        id -> Uuid,
        org_id -> Uuid,
        branch_id -> Uuid,
        url -> Text,
        event_types -> Nullable<Array<Text>>,
        description -> Nullable<Text>,
        enabled -> Bool,
        secret_key -> Text,
        created_at -> Timestamptz,
        updated_at -> Nullable<Timestamptz>,
        deleted_at -> Nullable<Timestamptz>,
    }
}

diesel::table! {
    webhook_deliveries (id) {
        id -> Uuid,
        org_id -> Uuid,
        branch_id -> Uuid,
        endpoint_id -> Uuid,
        event_id -> Uuid,
        event_type -> Text,
        status -> Text,
        next_attempt_at -> Nullable<Timestamptz>,
        attempts -> Jsonb,
        created_at -> Timestamptz,
        updated_at -> Timestamptz,
    }
}
