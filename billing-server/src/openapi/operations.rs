//! What the document says of each routed endpoint: its id (the MCP tool names where the public
//! tool server has one), tag, summary, query, request body with an example, and response. The
//! paths and methods are the route tables' (`api::TABLES`); `openapi::tests` fails when a routed
//! endpoint has no row here or a row names no routed endpoint.

use super::queries::*;
use super::shapes::*;
use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde_json::{json, Value};

pub type SchemaFn = fn(&mut SchemaGenerator) -> Schema;

fn schema<T: JsonSchema>(g: &mut SchemaGenerator) -> Schema {
    g.subschema_for::<T>()
}

/// One documented endpoint.
pub struct Operation {
    pub method: &'static str,
    /// The full path, as routed (`/api/v2/consumers/{consumer_id}`).
    pub path: String,
    pub id: &'static str,
    pub tag: &'static str,
    pub summary: &'static str,
    /// No credential (accepting an invitation).
    pub public: bool,
    pub query: Option<SchemaFn>,
    pub body: Option<SchemaFn>,
    /// A body the reader accepts (checked by the tests against the real reader).
    pub example: Option<Value>,
    pub response: SchemaFn,
}

struct B(Operation);

fn op(method: &'static str, path: &str, id: &'static str, tag: &'static str, summary: &'static str) -> B {
    B(Operation {
        method,
        path: format!("/api/v2{path}"),
        id,
        tag,
        summary,
        public: false,
        query: None,
        body: None,
        example: None,
        response: schema::<Empty>,
    })
}

impl B {
    fn query<T: JsonSchema>(mut self) -> B {
        self.0.query = Some(schema::<T>);
        self
    }
    fn body<T: JsonSchema>(mut self, example: Value) -> B {
        self.0.body = Some(schema::<T>);
        self.0.example = Some(example);
        self
    }
    fn ok<T: JsonSchema>(mut self) -> Operation {
        self.0.response = schema::<T>;
        self.0
    }
    fn public(mut self) -> B {
        self.0.public = true;
        self
    }
}

const ID: &str = "0190a6b2-7c3e-7a01-9d2f-4b5c6d7e8f90";
const ID2: &str = "0190a6b2-7c3e-7a01-9d2f-4b5c6d7e8f91";

/// Every documented endpoint, in the order of the reference.
pub fn all() -> Vec<Operation> {
    vec![
        // The caller and the organization.
        op("GET", "/me", "get_me", "Organization", "The authenticated user and organization").ok::<MeResponse>(),
        op("POST", "/organization/invite", "invite_user", "Organization", "Invite a user by e-mail (header `language`: AR or EN)")
            .body::<OrganizationInviteCreate>(json!({"email": "new.admin@example.com", "role": "branch_admin", "branches": [ID]}))
            .ok::<OrganizationInviteResponse>(),
        op("POST", "/organization/invite/accept", "accept_invite", "Organization", "Accept an invitation (no credential: the token is one)")
            .public()
            .body::<InviteAccept>(json!({"token": "inv_3Jd8sKq0PzY1", "first_name": "Sara", "last_name": "Ali"}))
            .ok::<InviteAccepted>(),
        op("GET", "/organization/settings", "get_organization_settings", "Organization", "The organization's settings (organization admins)")
            .ok::<OrganizationSettings>(),
        op("PATCH", "/organization/settings", "update_organization_settings", "Organization", "Change the organization's settings (organization admins)")
            .body::<OrganizationSettingsUpdate>(json!({"vat_rate": "15", "default_currency": "SAR"}))
            .ok::<OrganizationSettings>(),
        // Keys.
        op("GET", "/api-keys", "list_api_keys", "API keys", "The organization's API keys (never a secret)").ok::<ApiKeyList>(),
        op("POST", "/api-keys", "create_api_key", "API keys", "Create an API key (its secret is shown once)")
            .body::<ApiKeyCreate>(json!({"name": "shop backend", "branch_ids": [ID], "default_branch_id": ID}))
            .ok::<ApiKeyCreated>(),
        op("DELETE", "/api-keys/{api_key_id}", "revoke_api_key", "API keys", "Revoke an API key").ok::<ApiKey>(),
        op("POST", "/api-keys/{api_key_id}/rotate", "rotate_api_key", "API keys", "Replace a key by a new one with the same reach").ok::<ApiKeyCreated>(),
        // Branches.
        op("GET", "/branch", "list_branches", "Branches", "The branches the caller can use").ok::<BranchListResponse>(),
        op("POST", "/branch", "create_branch", "Branches", "Create a branch (an existing name returns that branch)")
            .body::<CreateBranchRequest>(json!({"name": "Jeddah"}))
            .ok::<BranchItem>(),
        op("GET", "/branch/{branch_id}", "get_branch", "Branches", "One branch").ok::<BranchItem>(),
        op("PUT", "/branch/{branch_id}", "update_branch", "Branches", "Rename a branch")
            .body::<UpdateBranchRequest>(json!({"name": "Jeddah North"}))
            .ok::<BranchItem>(),
        op("DELETE", "/branch/{branch_id}", "delete_branch", "Branches", "Delete a branch that nothing holds").ok::<Empty>(),
        // The sandbox clock.
        op("GET", "/sandbox/clock", "get_sandbox_clock", "Sandbox", "The sandbox organization's test-clock time").ok::<SandboxClock>(),
        op("POST", "/sandbox/clock/advance", "advance_sandbox_clock", "Sandbox", "Move the test clock forward, running what falls due")
            .body::<SandboxClockAdvance>(json!({"seconds": 86400}))
            .ok::<SandboxClock>(),
        // Consumers.
        op("GET", "/consumers", "list_customers", "Consumers", "List consumers").query::<ConsumerListQuery>().ok::<ListResourceConsumerResponse>(),
        op("POST", "/consumers", "create_customer", "Consumers", "Create a consumer")
            .body::<ConsumerCreate>(json!({"name": "Sara Ali", "phone_number": "+966501234567", "email": "sara@example.com", "preferred_language": "ar", "communication_methods": ["EMAIL", "SMS"], "external_metadata": {"crm_id": "42"}}))
            .ok::<ConsumerResponse>(),
        op("GET", "/consumers/{consumer_id}", "get_customer", "Consumers", "One consumer").ok::<ConsumerResponse>(),
        op("PUT", "/consumers/{consumer_id}", "update_customer", "Consumers", "Change a consumer's given fields")
            .body::<ConsumerUpdate>(json!({"email": "sara.ali@example.com", "alias": "Sara"}))
            .ok::<ConsumerResponse>(),
        op("DELETE", "/consumers/{consumer_id}", "delete_customer", "Consumers", "Delete a consumer (soft)").ok::<Empty>(),
        // Products.
        op("GET", "/products", "list_products", "Products", "List products").query::<ProductListQuery>().ok::<ListResourceProductDto>(),
        op("POST", "/products", "create_product", "Products", "Create a product")
            .body::<ProductCreate>(json!({"name": "Gym membership", "description": "One month", "type": "ONE_OFF", "prices": [{"currency": "SAR", "amount": "115.00"}]}))
            .ok::<ProductDto>(),
        op("GET", "/products/{product_id}", "get_product", "Products", "One product").ok::<ProductDto>(),
        op("PUT", "/products/{product_id}", "update_product", "Products", "Change a product's given fields")
            .body::<ProductUpdate>(json!({"name": "Gym membership (monthly)", "is_active": true}))
            .ok::<ProductDto>(),
        op("DELETE", "/products/{product_id}", "archive_product", "Products", "Delete (archive) a product").ok::<Empty>(),
        op("POST", "/products/{product_id}/prices", "add_product_price", "Products", "Add a price in a currency")
            .body::<ProductPriceCreate>(json!({"currency": "USD", "amount": "30.00"}))
            .ok::<ProductPriceInlineDto>(),
        op("PUT", "/products/{product_id}/prices/{price_id}", "update_product_price", "Products", "Change a price")
            .body::<ProductPriceUpdate>(json!({"amount": "32.50"}))
            .ok::<ProductPriceInlineDto>(),
        op("DELETE", "/products/{product_id}/prices/{price_id}", "delete_product_price", "Products", "Retire a price").ok::<Empty>(),
        // Coupons.
        op("GET", "/coupons", "list_coupons", "Coupons", "List coupons").query::<CouponListQuery>().ok::<ListResourceCouponDetailed>(),
        op("POST", "/coupons", "create_coupon", "Coupons", "Create a coupon")
            .body::<CouponCreate>(json!({"name": "RAMADAN10", "discount_value": "10", "is_percentage": true}))
            .ok::<CouponDto>(),
        op("GET", "/coupons/{coupon_id}", "get_coupon", "Coupons", "One coupon with its redemptions").ok::<CouponDetailed>(),
        op("PUT", "/coupons/{coupon_id}", "update_coupon", "Coupons", "Change a coupon's given fields")
            .body::<CouponUpdate>(json!({"is_active": false}))
            .ok::<CouponDto>(),
        op("DELETE", "/coupons/{coupon_id}", "delete_coupon", "Coupons", "Delete a coupon").ok::<Empty>(),
        // Webhooks.
        op("GET", "/webhooks", "list_webhooks", "Webhooks", "The branch's webhook endpoints").query::<PageQuery>().ok::<ListResourceWebhook>(),
        op("POST", "/webhooks", "create_webhook", "Webhooks", "Register an endpoint (its secret_key is returned)")
            .body::<WebhookCreate>(json!({"url": "https://shop.example.com/hooks/billing", "event_types": ["PAYMENT_SUCCEEDED", "INVOICE_COMPLETED"], "description": "shop"}))
            .ok::<Webhook>(),
        op("GET", "/webhooks/{webhook_id}", "get_webhook", "Webhooks", "One endpoint").ok::<Webhook>(),
        op("PUT", "/webhooks/{webhook_id}", "update_webhook", "Webhooks", "Change an endpoint's given fields")
            .body::<WebhookUpdate>(json!({"enabled": false}))
            .ok::<Webhook>(),
        op("DELETE", "/webhooks/{webhook_id}", "delete_webhook", "Webhooks", "Delete an endpoint (its pending deliveries stop)").ok::<Empty>(),
        op("POST", "/webhooks/{webhook_id}/rotate-secret", "rotate_webhook_secret", "Webhooks", "A new secret_key").ok::<Webhook>(),
        op("GET", "/webhooks/{webhook_id}/deliveries", "list_webhook_deliveries", "Webhooks", "An endpoint's delivery log")
            .query::<DeliveryListQuery>()
            .ok::<ListResourceWebhookDelivery>(),
        op("GET", "/webhooks/deliveries/{delivery_id}", "get_webhook_delivery", "Webhooks", "One delivery with its event and attempts").ok::<WebhookDelivery>(),
        op("POST", "/webhooks/deliveries/{delivery_id}/retry", "retry_webhook_delivery", "Webhooks", "Send a delivery again now").ok::<WebhookDelivery>(),
        // Invoices.
        op("GET", "/invoices", "list_invoices", "Invoices", "List invoices").query::<InvoiceListQuery>().ok::<ListResourceInvoiceListItem>(),
        op("POST", "/invoices", "create_invoice", "Invoices", "Create an invoice")
            .body::<InvoiceCreate>(json!({
                "organization_consumer_id": ID,
                "items": [{"product_id": ID2, "quantity": 2}],
                "payment_methods": {"card": true, "wallet": true, "bank_transfer": false, "installment": false},
                "scheduled_on": "2026-01-15T09:00:00Z",
                "currency": "SAR",
                "description": "January sessions"
            }))
            .ok::<InvoiceDetailed>(),
        op("GET", "/invoices/{invoice_id}", "get_invoice", "Invoices", "One invoice with its items and payments").ok::<InvoiceDetailed>(),
        op("PATCH", "/invoices/{invoice_id}/inplace", "update_invoice", "Invoices", "Change an invoice's description or scheduled date")
            .body::<InvoiceInPlaceUpdate>(json!({"description": "January and February sessions"}))
            .ok::<InvoiceDetailed>(),
        op("POST", "/invoices/{invoice_id}/void", "void_invoice", "Invoices", "Cancel an invoice (its unpaid payments too)").ok::<InvoiceDetailed>(),
        op("POST", "/invoices/{invoice_id}/send", "send_invoice", "Invoices", "(Re)send an invoice to its consumer").ok::<InvoiceDetailed>(),
        // Payments.
        op("GET", "/payments", "list_payments", "Payments", "List payments").query::<PaymentListQuery>().ok::<ListResourcePaymentResponse>(),
        op("GET", "/payments/{payment_id}", "get_payment", "Payments", "One payment").ok::<PaymentResponse>(),
        op("POST", "/payments/{payment_id}/mark-paid", "mark_payment_as_paid", "Payments", "Record a payment made outside (cash, bank transfer, …)")
            .body::<PaymentMarkPaidRequest>(json!({"payment_method": "CASH", "note": "paid at the front desk"}))
            .ok::<Empty>(),
        op("POST", "/payments/{payment_id}/refund", "refund_payment", "Payments", "Refund a paid payment in full")
            .body::<PaymentRefundRequest>(json!({"refund_reason": "REQUESTED_BY_CUSTOMER", "refund_note": "changed plans"}))
            .ok::<PaymentResponse>(),
        op("POST", "/payments/auto-charge-on-demand/{payment_id}", "auto_charge_payment", "Payments", "Charge an unpaid payment to the consumer's saved card")
            .ok::<AutoChargeOnDemandResponse>(),
        // Payment links.
        op("GET", "/payment_links", "list_payment_links", "Payment links", "List payment links")
            .query::<PaymentLinkListQuery>()
            .ok::<ListResourcePaymentLinkDetailed>(),
        op("POST", "/payment_links", "create_payment_link", "Payment links", "Create a payment link (its url is the hosted checkout)")
            .body::<CreatePaymentLinkDto>(json!({
                "name": "Gym membership",
                "currency": "SAR",
                "items": [{"product_id": ID2, "quantity": 1}],
                "max_number_of_payments": 1,
                "contact_information_type": "PHONE",
                "success_redirect_url": "https://shop.example.com/paid",
                "custom_metadata": {"order": "A-1001"}
            }))
            .ok::<PaymentLinkDetailed>(),
        op("GET", "/payment_links/{payment_link_id}", "get_payment_link", "Payment links", "One payment link").ok::<PaymentLinkDetailed>(),
        op("PATCH", "/payment_links/{payment_link_id}/status", "update_payment_link_status", "Payment links", "Deactivate or reactivate a link")
            .body::<UpdatePaymentLinkStatusDto>(json!({"status": "INACTIVE", "deactivate_message": "Sold out"}))
            .ok::<PaymentLinkDetailed>(),
        op("PATCH", "/payment_links/{payment_link_id}/coupons", "update_payment_link_coupons", "Payment links", "Change a link's coupons")
            .body::<UpdatePaymentLinkCouponsDto>(json!({"coupons": [ID]}))
            .ok::<PaymentLinkDetailed>(),
        // Subscriptions.
        op("GET", "/subscriptions", "list_subscriptions", "Subscriptions", "List subscriptions")
            .query::<SubscriptionListQuery>()
            .ok::<ListResourceSubscriptionDetailed>(),
        op("POST", "/subscriptions", "create_subscription", "Subscriptions", "Create a subscription (its first invoice is issued at once)")
            .body::<SubscriptionCreate>(json!({
                "organization_consumer_id": ID,
                "items": [{"product_id": ID2, "quantity": 1}],
                "period_start": "2026-01-01T00:00:00Z",
                "currency": "SAR",
                "description": "Monthly plan"
            }))
            .ok::<SubscriptionDetailed>(),
        op("GET", "/subscriptions/{subscription_id}", "get_subscription", "Subscriptions", "One subscription").ok::<SubscriptionDetailed>(),
        op("PUT", "/subscriptions/{subscription_id}", "update_subscription", "Subscriptions", "Change a subscription (plan changes apply at the period end)")
            .body::<SubscriptionUpdate>(json!({"description": "Monthly plan (family)", "items": [{"product_id": ID2, "quantity": 2}], "coupons": []}))
            .ok::<SubscriptionDetailed>(),
        op("DELETE", "/subscriptions/{subscription_id}/pending-change", "cancel_subscription_pending_change", "Subscriptions", "Withdraw the pending plan change")
            .ok::<Empty>(),
        op("POST", "/subscriptions/{subscription_id}/cancel", "cancel_subscription", "Subscriptions", "Cancel (ACTIVE: at the period end)")
            .body::<SubscriptionCancel>(json!({"cancel_related_invoices": false}))
            .ok::<SubscriptionDetailed>(),
        op("PUT", "/subscriptions/{subscription_id}/uncancel", "uncancel_subscription", "Subscriptions", "Withdraw a scheduled cancellation").ok::<Empty>(),
        op("POST", "/subscriptions/{subscription_id}/freeze", "freeze_subscription", "Subscriptions", "Freeze a subscription for a period")
            .body::<FreezeSubscriptionCreateRequest>(json!({"freeze_start_datetime": "2026-03-01T00:00:00Z", "freeze_end_datetime": "2026-04-01T00:00:00Z", "notes": "travelling"}))
            .ok::<FreezeSubscriptionBase>(),
        op("GET", "/subscriptions/{subscription_id}/freeze", "list_subscription_freezes", "Subscriptions", "A subscription's freeze periods")
            .query::<FreezeListQuery>()
            .ok::<ListResourceFreezeSubscriptionBase>(),
        op("PUT", "/subscriptions/{subscription_id}/freeze/{freeze_id}", "update_subscription_freeze", "Subscriptions", "New dates for a freeze")
            .body::<FreezeSubscriptionUpdateRequest>(json!({"freeze_start_datetime": "2026-03-01T00:00:00Z", "freeze_end_datetime": null}))
            .ok::<FreezeSubscriptionBase>(),
        op("DELETE", "/subscriptions/{subscription_id}/freeze/{freeze_id}", "delete_subscription_freeze", "Subscriptions", "Drop a freeze (one in force ends now)")
            .ok::<Empty>(),
        // Notifications.
        op("GET", "/notifications", "list_notifications", "Notifications", "The branch's customer notifications")
            .query::<NotificationListQuery>()
            .ok::<ListResourceNotificationView>(),
        op("GET", "/notifications/{notification_id}", "get_notification", "Notifications", "One notification with its attempts").ok::<NotificationView>(),
    ]
}
