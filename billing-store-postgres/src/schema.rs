//! Diesel's view of `migrations/`, written by hand (keep it in step with the SQL).

diesel::table! {
    organizations (id) {
        id -> Uuid,
        name -> Text,
        name_en -> Nullable<Text>,
        sandbox -> Bool,
        settings -> Jsonb,
        clock_offset_us -> Int8,
        created_at -> Timestamptz,
        clock_advancing_to -> Nullable<Timestamptz>,
    }
}

diesel::table! {
    branches (id) {
        id -> Uuid,
        org_id -> Uuid,
        name -> Text,
        name_key -> Text,
        created_at -> Timestamptz,
        deleted_at -> Nullable<Timestamptz>,
    }
}

diesel::table! {
    users (id) {
        id -> Uuid,
        org_id -> Uuid,
        email -> Text,
        first_name -> Text,
        last_name -> Text,
        en_first_name -> Nullable<Text>,
        en_last_name -> Nullable<Text>,
        role -> Text,
        created_at -> Timestamptz,
    }
}

diesel::table! {
    user_branches (user_id, branch_id) {
        user_id -> Uuid,
        branch_id -> Uuid,
        position -> Int4,
    }
}

diesel::table! {
    api_keys (id) {
        id -> Uuid,
        org_id -> Uuid,
        user_id -> Uuid,
        name -> Text,
        key -> Text,
        secret_hash -> Text,
        branch_ids -> Array<Uuid>,
        default_branch_id -> Uuid,
        is_all_branches -> Bool,
        created_at -> Timestamptz,
        revoked_at -> Nullable<Timestamptz>,
    }
}

diesel::table! {
    invitations (id) {
        id -> Uuid,
        org_id -> Uuid,
        email -> Text,
        role -> Text,
        branch_ids -> Array<Uuid>,
        created_by -> Uuid,
        language -> Text,
        expire_at -> Timestamptz,
        created_at -> Timestamptz,
    }
}

diesel::table! {
    notifications (id) {
        id -> Uuid,
        org_id -> Uuid,
        branch_id -> Nullable<Uuid>,
        channel -> Text,
        recipient -> Text,
        template -> Text,
        language -> Text,
        payload -> Jsonb,
        created_at -> Timestamptz,
        sent_at -> Nullable<Timestamptz>,
    }
}

diesel::table! {
    consumers (id) {
        id -> Uuid,
        org_id -> Uuid,
        branch_id -> Uuid,
        name -> Text,
        phone_number -> Nullable<Text>,
        email -> Nullable<Text>,
        email_lower -> Nullable<Text>,
        external_id -> Nullable<Text>,
        iban -> Nullable<Text>,
        alias -> Nullable<Text>,
        comment -> Nullable<Text>,
        preferred_language -> Text,
        communication_methods -> Array<Text>,
        consumer_type -> Text,
        address -> Nullable<Jsonb>,
        vat_number -> Nullable<Text>,
        commercial_registration -> Nullable<Text>,
        external_metadata -> Jsonb,
        is_deleted -> Bool,
        created_at -> Timestamptz,
        updated_at -> Nullable<Timestamptz>,
    }
}

diesel::table! {
    products (id) {
        id -> Uuid,
        org_id -> Uuid,
        branch_id -> Uuid,
        name -> Text,
        description -> Nullable<Text>,
        product_type -> Text,
        recurring_interval -> Nullable<Text>,
        recurring_interval_count -> Int4,
        is_active -> Bool,
        external_metadata -> Jsonb,
        sort_price -> Nullable<Int8>,
        used_in_finalized_invoice -> Bool,
        is_deleted -> Bool,
        created_at -> Timestamptz,
        updated_at -> Nullable<Timestamptz>,
    }
}

diesel::table! {
    product_prices (id) {
        id -> Uuid,
        product_id -> Uuid,
        currency -> Text,
        amount -> Int8,
        vat_mode -> Text,
        is_active -> Bool,
        created_at -> Timestamptz,
        updated_at -> Nullable<Timestamptz>,
    }
}

diesel::table! {
    coupons (id) {
        id -> Uuid,
        org_id -> Uuid,
        branch_id -> Uuid,
        name -> Text,
        is_percentage -> Bool,
        discount_value -> Int8,
        currency -> Nullable<Text>,
        is_active -> Bool,
        used_in_finalized_invoice -> Bool,
        redemptions -> Int8,
        is_deleted -> Bool,
        created_at -> Timestamptz,
        updated_at -> Nullable<Timestamptz>,
    }
}

diesel::table! {
    events (seq) {
        seq -> Int8,
        id -> Uuid,
        org_id -> Uuid,
        branch_id -> Uuid,
        event_type -> Text,
        entity_type -> Text,
        entity_id -> Uuid,
        payload -> Jsonb,
        created_at -> Timestamptz,
    }
}

diesel::joinable!(branches -> organizations (org_id));
diesel::joinable!(users -> organizations (org_id));
diesel::joinable!(user_branches -> users (user_id));
diesel::joinable!(user_branches -> branches (branch_id));
diesel::joinable!(consumers -> branches (branch_id));
diesel::joinable!(products -> branches (branch_id));
diesel::joinable!(product_prices -> products (product_id));
diesel::joinable!(coupons -> branches (branch_id));

diesel::allow_tables_to_appear_in_same_query!(
    organizations,
    branches,
    users,
    user_branches,
    api_keys,
    invitations,
    notifications,
    consumers,
    products,
    product_prices,
    coupons,
    events,
);
