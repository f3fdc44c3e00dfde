//! What diesel must know about several tables at once (joins and subqueries across them);
//! each table itself is declared in its resource's file.

use crate::api_key::api_keys;
use crate::branch::branches;
use crate::consumer::consumers;
use crate::coupon::coupons;
use crate::event::events;
use crate::invoice::{invoice_items, invoices};
use crate::invoice_number::invoice_counters;
use crate::notification::notifications;
use crate::org::{invitations, organizations, user_branches, users};
use crate::payment::{payments, tokenized_cards};
use crate::product::{product_prices, products};
use crate::webhook::{webhook_deliveries, webhook_endpoints};

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
    invoice_counters,
    invoices,
    invoice_items,
    payments,
    tokenized_cards,
    webhook_endpoints,
    webhook_deliveries,
);
