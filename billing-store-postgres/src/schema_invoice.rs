//! Diesel's view of `migrations/0003_invoices`, written by hand (keep it in step with the SQL).

use crate::schema::consumers;

diesel::table! {
    invoice_counters (org_id) {
        org_id -> Uuid,
        last_number -> Int8,
    }
}

diesel::table! {
    invoices (id) {
        id -> Uuid,
        org_id -> Uuid,
        branch_id -> Uuid,
        user_id -> Uuid,
        consumer_id -> Uuid,
        org_invoice_number -> Int8,
        description -> Nullable<Text>,
        currency -> Text,
        status -> Text,
        payment_methods -> Jsonb,
        coupon_ids -> Jsonb,
        exclude_coupons_if_installments -> Bool,
        notify_consumer -> Bool,
        scheduled_on -> Timestamptz,
        original_amount -> Int8,
        item_level_discounted_amount -> Int8,
        total_vat_amount -> Int8,
        total_price_excluding_vat -> Int8,
        total_amount -> Int8,
        paid_amount -> Int8,
        coupons -> Jsonb,
        installments -> Nullable<Int4>,
        payment_link_id -> Nullable<Uuid>,
        subscription_id -> Nullable<Uuid>,
        created_at -> Timestamptz,
        updated_at -> Nullable<Timestamptz>,
    }
}

diesel::table! {
    invoice_items (id) {
        id -> Uuid,
        invoice_id -> Uuid,
        position -> Int4,
        product_id -> Uuid,
        price_id -> Nullable<Uuid>,
        quantity -> Int8,
        unit_price -> Int8,
        vat_mode -> Text,
        one_time -> Bool,
        coupon_ids -> Jsonb,
        original_amount -> Int8,
        discounted_amount -> Int8,
        coupons -> Jsonb,
        vat_amount -> Int8,
        excluding_vat -> Int8,
        created_at -> Timestamptz,
    }
}

diesel::table! {
    payments (id) {
        id -> Uuid,
        org_id -> Uuid,
        branch_id -> Uuid,
        invoice_id -> Uuid,
        number -> Int4,
        amount -> Int8,
        currency -> Text,
        payment_type -> Text,
        method -> Nullable<Text>,
        status -> Text,
        scheduled_on -> Timestamptz,
        payed_at -> Nullable<Timestamptz>,
        refunded_at -> Nullable<Timestamptz>,
        refund_reason -> Nullable<Text>,
        refund_note -> Nullable<Text>,
        note -> Nullable<Text>,
        transaction_id -> Nullable<Uuid>,
        latest_pgw_message -> Nullable<Text>,
        created_at -> Timestamptz,
        updated_at -> Nullable<Timestamptz>,
    }
}

diesel::table! {
    tokenized_cards (id) {
        id -> Uuid,
        org_id -> Uuid,
        consumer_id -> Uuid,
        network -> Text,
        last_four -> Text,
        expiry_month -> Int4,
        expiry_year -> Int4,
        gateway_token -> Text,
        is_active -> Bool,
        consent -> Bool,
        created_at -> Timestamptz,
    }
}

diesel::allow_tables_to_appear_in_same_query!(invoices, invoice_items, payments, consumers);
