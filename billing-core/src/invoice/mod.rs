//! Invoices, their items and payments (including installments), and the events they emit.
//!
//! - [`totals`]: exact amounts (item prices, coupon chains, VAT).
//! - [`installments`]: splitting a total into 2, 3 or 4 payments.
//! - [`ops`]: the operations on [`crate::Billing`] (create, list, accept, send, void, in-place
//!   update, mark-paid, refund, auto-charge).
//! - [`gateway`]: the card/wallet processor ([`gateway::PaymentGateway`]) and its sandbox.
//! - [`events`]: the outbox payloads.

pub mod events;
pub mod gateway;
pub mod installments;
pub mod ops;
mod store;
pub mod totals;

pub use installments::{InstallmentPlan, PaymentPlan};
pub use store::InvoiceTx;
pub use totals::{CouponLine, InvoiceTotals};

use crate::clock::{format_rfc3339, parse_datetime, Timestamp};
use crate::error::{FieldError, LocPart, Problems, Result};
use crate::ids::{BranchId, ConsumerId, CouponId, InvoiceId, InvoiceItemId, OrgId, PaymentId, PriceId, ProductId, UserId};
use crate::list::{ListQuery, Query, QueryParams};
use crate::money::{parse_decimal, Currency, Money};
use crate::product::VatMode;
use crate::wire::{uuid_item, Body};
use crate::wire_enum;
use rust_decimal::Decimal;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use uuid::Uuid;

wire_enum!(InvoiceStatus {
    Draft = "DRAFT",
    Created = "CREATED",
    Sent = "SENT",
    Accepted = "ACCEPTED",
    Rejected = "REJECTED",
    Completed = "COMPLETED",
    Canceled = "CANCELED",
    Expired = "EXPIRED",
});

wire_enum!(PaymentStatus {
    Pending = "PENDING",
    Processing = "PROCESSING",
    FailedInitiation = "FAILED_INITIATION",
    Succeeded = "SUCCEEDED",
    Failed = "FAILED",
    Canceled = "CANCELED",
    UnderReview = "UNDER_REVIEW",
    Expired = "EXPIRED",
    Settled = "SETTLED",
    Refunded = "REFUNDED",
});

wire_enum!(PaymentType { Initial = "INITIAL", Installment = "INSTALLMENT", SplitPrepaid = "SPLIT_PREPAID" });

wire_enum!(PaymentMethod {
    Mada = "MADA",
    Mastercard = "MASTERCARD",
    Visa = "VISA",
    ApplePay = "APPLE_PAY",
    SamsungPay = "SAMSUNG_PAY",
    Amex = "AMEX",
    Cash = "CASH",
    PgwCardUnspecified = "PGW_CARD_UNSPECIFIED",
    BankTransfer = "BANK_TRANSFER",
    Card = "CARD",
    Qurrah = "QURRAH",
});

wire_enum!(RefundReason { RequestedByCustomer = "REQUESTED_BY_CUSTOMER", Duplicate = "DUPLICATE", Fraudulent = "FRAUDULENT", Other = "OTHER" });

wire_enum!(InvoiceSort {
    CreatedAt = "created_at",
    UpdatedAt = "updated_at",
    TotalAmount = "total_amount",
    OrgInvoiceNumber = "org_invoice_number",
    ScheduledOn = "scheduled_on",
    Status = "status",
});

wire_enum!(PaymentSort { CreatedAt = "created_at", Amount = "amount", ScheduledOn = "scheduled_on", PayedAt = "payed_at" });

impl InvoiceStatus {
    pub fn is_terminal(self) -> bool {
        matches!(self, InvoiceStatus::Completed | InvoiceStatus::Canceled)
    }
}

impl PaymentStatus {
    /// Not paid yet and still payable.
    pub fn is_unpaid(self) -> bool {
        matches!(
            self,
            PaymentStatus::Pending | PaymentStatus::Processing | PaymentStatus::UnderReview | PaymentStatus::Failed | PaymentStatus::FailedInitiation
        )
    }
    pub fn is_paid(self) -> bool {
        matches!(self, PaymentStatus::Succeeded | PaymentStatus::Settled | PaymentStatus::Refunded)
    }
}

impl PaymentMethod {
    /// Methods a payment may be marked as paid with (spec: Mark-paid rules).
    pub fn is_manual(self) -> bool {
        matches!(
            self,
            PaymentMethod::Cash | PaymentMethod::BankTransfer | PaymentMethod::Card | PaymentMethod::Qurrah
        )
    }
    /// Card or wallet payments that went through the gateway.
    pub fn is_gateway(self) -> bool {
        matches!(
            self,
            PaymentMethod::Mada
                | PaymentMethod::Mastercard
                | PaymentMethod::Visa
                | PaymentMethod::ApplePay
                | PaymentMethod::SamsungPay
                | PaymentMethod::Amex
                | PaymentMethod::PgwCardUnspecified
        )
    }
}

/// InvoicePaymentMethodDto: which ways of paying the invoice offers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(default)]
pub struct PaymentMethods {
    pub mada: bool,
    pub visa: bool,
    pub mastercard: bool,
    pub amex: bool,
    pub bank_transfer: bool,
    pub installment: bool,
    pub qurrah: bool,
}

#[derive(Debug, Clone, PartialEq)]
pub struct InvoiceItem {
    pub id: InvoiceItemId,
    pub product_id: ProductId,
    pub price_id: Option<PriceId>,
    pub quantity: u32,
    pub unit_price: Money,
    pub vat_mode: VatMode,
    /// Whether the product is one-time (installments are for one-time products only).
    pub one_time: bool,
    pub coupon_ids: Vec<CouponId>,
    pub original_amount: Money,
    pub discounted_amount: Money,
    pub coupons: Vec<CouponLine>,
    pub vat_amount: Money,
    pub excluding_vat: Money,
    pub created_at: Timestamp,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Invoice {
    pub id: InvoiceId,
    pub org_id: OrgId,
    pub branch_id: BranchId,
    pub user_id: UserId,
    pub consumer_id: ConsumerId,
    /// Per organization, from 1, without gaps.
    pub org_invoice_number: i64,
    pub description: Option<String>,
    pub currency: Currency,
    pub status: InvoiceStatus,
    pub payment_methods: PaymentMethods,
    pub coupon_ids: Vec<CouponId>,
    pub exclude_coupons_if_installments: bool,
    pub notify_consumer: bool,
    pub scheduled_on: Timestamp,
    pub original_amount: Money,
    pub item_level_discounted_amount: Money,
    pub total_vat_amount: Money,
    pub total_price_excluding_vat: Money,
    pub total_amount: Money,
    pub paid_amount: Money,
    pub coupons: Vec<CouponLine>,
    /// The number of installments chosen (none until accepted with installments).
    pub installments: Option<u8>,
    pub payment_link_id: Option<Uuid>,
    pub subscription_id: Option<Uuid>,
    pub items: Vec<InvoiceItem>,
    pub created_at: Timestamp,
    pub updated_at: Option<Timestamp>,
}

impl Invoice {
    pub fn remaining_amount(&self) -> Money {
        let r = self.total_amount.amount() - self.paid_amount.amount();
        Money::new(r.max(Decimal::ZERO), self.currency)
    }

    /// The hosted page of the invoice.
    pub fn url(&self, public_url: &str) -> String {
        format!("{public_url}/pay/invoices/{}", self.id)
    }

    pub fn api_url(public_url: &str, id: InvoiceId) -> String {
        format!("{public_url}/api/v2/invoices/{id}")
    }

    /// Finalised: completed, canceled, or any payment succeeded.
    pub fn is_finalised(&self, payments: &[Payment]) -> bool {
        self.status.is_terminal() || payments.iter().any(|p| p.status.is_paid())
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Payment {
    pub id: PaymentId,
    pub org_id: OrgId,
    pub branch_id: BranchId,
    pub invoice_id: InvoiceId,
    /// 1, 2, … within the invoice.
    pub number: u32,
    pub amount: Money,
    pub payment_type: PaymentType,
    pub method: Option<PaymentMethod>,
    pub status: PaymentStatus,
    pub scheduled_on: Timestamp,
    pub payed_at: Option<Timestamp>,
    pub refunded_at: Option<Timestamp>,
    pub refund_reason: Option<RefundReason>,
    pub refund_note: Option<String>,
    pub note: Option<String>,
    /// Payments paid in one gateway transaction share it.
    pub transaction_id: Option<Uuid>,
    pub latest_pgw_message: Option<String>,
    pub created_at: Timestamp,
    pub updated_at: Option<Timestamp>,
}

impl Payment {
    pub fn api_url(public_url: &str, id: PaymentId) -> String {
        format!("{public_url}/api/v2/payments/{id}")
    }

    /// PaymentDto (as embedded in invoices).
    pub fn to_dto(&self) -> Value {
        json!({
            "id": self.id,
            "amount": self.amount,
            "amount_in_smallest_unit": self.amount.minor_units(),
            "currency": self.amount.currency(),
            "scheduled_on": format_rfc3339(&self.scheduled_on),
            "invoice_payment_number": self.number,
            "type": self.payment_type,
            "payment_method": self.method,
            "current_status": self.status,
            "payed_at": self.payed_at.as_ref().map(format_rfc3339),
            "settled_at": Value::Null,
            "refunded_at": self.refunded_at.as_ref().map(format_rfc3339),
            "pdf_link": Value::Null,
            "paid_to_account_id": Value::Null,
        })
    }

    /// PaymentResponse.
    pub fn to_json(&self) -> Value {
        json!({
            "id": self.id,
            "invoice_id": self.invoice_id,
            "amount": self.amount,
            "amount_in_smallest_unit": self.amount.minor_units(),
            "currency": self.amount.currency(),
            "scheduled_on": format_rfc3339(&self.scheduled_on),
            "invoice_payment_number": self.number,
            "type": self.payment_type,
            "payment_method": self.method,
            "current_status": self.status,
            "payed_at": self.payed_at.as_ref().map(format_rfc3339),
            "refunded_at": self.refunded_at.as_ref().map(format_rfc3339),
            "refund_reason": self.refund_reason,
            "refund_note": self.refund_note,
            "latest_pgw_message": self.latest_pgw_message,
            "created_at": format_rfc3339(&self.created_at),
            "updated_at": self.updated_at.as_ref().map(format_rfc3339),
        })
    }
}

/// A consumer's saved card: never the number, only what identifies and charges it.
#[derive(Debug, Clone, PartialEq)]
pub struct TokenizedCard {
    pub id: Uuid,
    pub org_id: OrgId,
    pub consumer_id: ConsumerId,
    pub network: String,
    pub last_four: String,
    pub expiry_month: u32,
    pub expiry_year: u32,
    pub gateway_token: String,
    pub is_active: bool,
    /// The consumer's consent to charge it without them present.
    pub consent: bool,
    pub created_at: Timestamp,
}

/// Everything the response of an invoice needs besides the invoice itself.
pub struct InvoiceView<'a> {
    pub invoice: &'a Invoice,
    pub payments: &'a [Payment],
    pub consumer: Option<&'a crate::consumer::Consumer>,
    pub products: &'a [crate::product::Product],
    pub branch_name: &'a str,
    pub public_url: &'a str,
    pub settings: &'a crate::org::OrgSettings,
}

impl InvoiceView<'_> {
    fn base(&self) -> Value {
        let i = self.invoice;
        let flow = "ALL";
        json!({
            "created_at": format_rfc3339(&i.created_at),
            "updated_at": i.updated_at.as_ref().map(format_rfc3339),
            "id": i.id,
            "payment_link_id": i.payment_link_id,
            "user_id": i.user_id,
            "organization_id": i.org_id,
            "organization_consumer_id": i.consumer_id,
            "account_id": Value::Null,
            "branch_id": i.branch_id,
            "org_invoice_number": i.org_invoice_number,
            "description": i.description,
            "total_amount": i.total_amount,
            "original_amount": i.original_amount,
            "item_level_discounted_amount": i.item_level_discounted_amount,
            "total_vat_amount": i.total_vat_amount,
            "total_price_excluding_vat": i.total_price_excluding_vat,
            "coupon_calculation_metadata": totals::metadata_json(&i.coupons),
            "currency": i.currency,
            "home_currency_amount": Value::Null,
            "home_currency_amount_actual": Value::Null,
            "exchange_rate_at_creation": Value::Null,
            "consumer_message": Value::Null,
            "status": i.status,
            "payment_method": "PAYMENTGATEWAY",
            "allowed_payment_flow": flow,
            "current_payment_flow": flow,
            "period_start": Value::Null,
            "period_end": Value::Null,
            "recurring_interval": Value::Null,
            "recurring_interval_count": Value::Null,
            "type": if i.installments.is_some() { "INSTALLMENTS" } else { "ONE_OFF" },
            "scheduled_on": format_rfc3339(&i.scheduled_on),
            "remaining_amount": i.remaining_amount(),
            "paid_amount": i.paid_amount,
            "organization_consumer": self.consumer.map(|c| {
                let mut v = c.summary();
                v["consumer"] = json!({"id": c.id, "phone_number": c.phone_number, "email": c.email, "preferred_language": c.preferred_language});
                v
            }),
            "subscription_id": i.subscription_id,
            "url": i.url(self.public_url),
        })
    }

    /// InvoiceDetailed.
    pub fn detailed(&self) -> Value {
        let i = self.invoice;
        let mut v = self.base();
        v["invoice_number"] = json!(i.org_invoice_number);
        v["exclude_coupons_if_installments"] = json!(i.exclude_coupons_if_installments);
        v["items"] = Value::Array(
            i.items
                .iter()
                .map(|it| {
                    json!({
                        "created_at": format_rfc3339(&it.created_at),
                        "updated_at": Value::Null,
                        "id": it.id,
                        "product_id": it.product_id,
                        "product": self.products.iter().find(|p| p.id == it.product_id).map(|p| p.to_json(self.settings)),
                        "quantity": it.quantity,
                        "original_amount": it.original_amount,
                        "discounted_amount": it.discounted_amount,
                        "coupon_calculation_metadata": totals::metadata_json(&it.coupons),
                        "currency": i.currency,
                        "unit_price": it.unit_price,
                        "product_price_id": it.price_id,
                        "vat_amount": it.vat_amount,
                        "price_excluding_vat": it.excluding_vat,
                    })
                })
                .collect(),
        );
        v["branch"] = json!({"id": i.branch_id, "name": self.branch_name});
        v["payments"] = Value::Array(self.payments.iter().map(Payment::to_dto).collect());
        v["subscription"] = Value::Null;
        v["payment_methods"] = json!(i.payment_methods);
        v["recurrence_pattern"] = Value::Null;
        v["parent_id"] = Value::Null;
        v["custom_field_answers"] = json!({});
        v
    }

    /// InvoiceListItem; `payments` only when asked for (`include_payments`).
    pub fn list_item(&self, include_payments: bool) -> Value {
        let mut v = self.base();
        let remaining = self.invoice.remaining_amount();
        v["subscription"] = Value::Null;
        v["payments"] = if include_payments {
            Value::Array(self.payments.iter().map(Payment::to_dto).collect())
        } else {
            Value::Null
        };
        v["total_number_of_payments"] = json!(self.payments.len());
        v["last_payment_paid_at"] = json!(self.payments.iter().filter_map(|p| p.payed_at).max().as_ref().map(format_rfc3339));
        v["remaining_amount_in_smallest_unit"] = json!(remaining.minor_units());
        v
    }
}

// --- requests --------------------------------------------------------------------------------

/// InvoiceItemCreateDto.
#[derive(Debug, Clone, PartialEq)]
pub struct ItemRequest {
    pub product_id: ProductId,
    pub quantity: u32,
    pub coupons: Vec<CouponId>,
}

/// InvoiceCreate, parsed.
#[derive(Debug, Clone, PartialEq)]
pub struct InvoiceCreate {
    pub notify_consumer: bool,
    pub description: Option<String>,
    pub items: Vec<ItemRequest>,
    pub payment_methods: PaymentMethods,
    pub coupons: Vec<CouponId>,
    pub consumer_id: ConsumerId,
    pub scheduled_on: Option<Timestamp>,
    pub exclude_coupons_if_installments: bool,
    pub currency: Currency,
}

/// The most items one invoice takes.
pub const MAX_ITEMS: usize = 100;

fn parse_item(v: &Value, loc: Vec<LocPart>, problems: &mut Problems) -> Option<ItemRequest> {
    let mut b = Body::at(v, loc);
    let product_id = b.req_uuid::<ProductId>("product_id");
    let quantity = match b.req_int("quantity") {
        Some(q) if !(1..=1_000_000).contains(&q) => {
            b.fail("greater_than", "quantity", "Input should be an integer between 1 and 1000000");
            None
        }
        q => q.map(|q| q as u32),
    };
    let coupons = b.opt_list("coupons", uuid_item::<CouponId>).unwrap_or_default();
    let ok = b.problems.is_empty();
    problems.0.extend(b.problems.0);
    match (ok, product_id, quantity) {
        (true, Some(product_id), Some(quantity)) => Some(ItemRequest { product_id, quantity, coupons }),
        _ => None,
    }
}

fn parse_payment_methods(b: &mut Body<'_>) -> Option<PaymentMethods> {
    let raw = b.raw("payment_methods")?;
    let mut p = Body::at(raw, b.loc("payment_methods"));
    let m = PaymentMethods {
        mada: p.opt_bool("mada").unwrap_or(false),
        visa: p.opt_bool("visa").unwrap_or(false),
        mastercard: p.opt_bool("mastercard").unwrap_or(false),
        amex: p.opt_bool("amex").unwrap_or(false),
        bank_transfer: p.opt_bool("bank_transfer").unwrap_or(false),
        installment: p.opt_bool("installment").unwrap_or(false),
        qurrah: p.opt_bool("qurrah").unwrap_or(false),
    };
    let ok = p.problems.is_empty();
    b.problems.0.extend(p.problems.0);
    ok.then_some(m)
}

fn dedup<T: PartialEq + Copy>(v: Vec<T>) -> Vec<T> {
    let mut out = Vec::with_capacity(v.len());
    for x in v {
        if !out.contains(&x) {
            out.push(x);
        }
    }
    out
}

impl InvoiceCreate {
    pub fn parse(v: &Value, default_currency: Currency) -> Result<Self> {
        let mut b = Body::new(v);
        let notify_consumer = b.opt_bool("notify_consumer").unwrap_or(true);
        let description = b.opt_str("description");
        let items = b.req_list("items", parse_item);
        if let Some(items) = &items {
            if items.is_empty() {
                b.fail("too_short", "items", "List should have at least 1 item after validation, not 0");
            } else if items.len() > MAX_ITEMS {
                b.fail("too_long", "items", format!("List should have at most {MAX_ITEMS} items"));
            }
        }
        let payment_methods = parse_payment_methods(&mut b).unwrap_or_default();
        let coupons = b.opt_list("coupons", uuid_item::<CouponId>).unwrap_or_default();
        let consumer_id = b.req_uuid::<ConsumerId>("organization_consumer_id");
        let scheduled_on = b.opt_parsed("scheduled_on", |s| parse_datetime(s).ok_or("invalid date-time"));
        let exclude = b.opt_bool("exclude_coupons_if_installments").unwrap_or(false);
        let currency = b.opt_currency("currency").unwrap_or(default_currency);
        b.finish()?;
        Ok(InvoiceCreate {
            notify_consumer,
            description,
            items: items
                .expect("checked")
                .into_iter()
                .map(|mut i| {
                    i.coupons = dedup(i.coupons);
                    i
                })
                .collect(),
            payment_methods,
            coupons: dedup(coupons),
            consumer_id: consumer_id.expect("checked"),
            scheduled_on,
            exclude_coupons_if_installments: exclude,
            currency,
        })
    }
}

/// InvoiceInPlaceUpdate: only the supplied fields change.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct InvoiceInPlaceUpdate {
    pub scheduled_on: Option<Timestamp>,
    pub description: Option<String>,
}

impl InvoiceInPlaceUpdate {
    pub fn parse(v: &Value) -> Result<Self> {
        let mut b = Body::new(v);
        let u = InvoiceInPlaceUpdate {
            scheduled_on: b.opt_parsed("scheduled_on", |s| parse_datetime(s).ok_or("invalid date-time")),
            description: b.opt_str("description"),
        };
        b.finish()?;
        Ok(u)
    }
}

/// PaymentMarkPaidRequest.
#[derive(Debug, Clone, PartialEq)]
pub struct MarkPaid {
    pub method: PaymentMethod,
    pub note: Option<String>,
}

impl MarkPaid {
    pub fn parse(v: &Value) -> Result<Self> {
        let mut b = Body::new(v);
        let method = b.req_enum("payment_method", PaymentMethod::parse, &PaymentMethod::expected());
        let note = b.opt_str("note");
        b.finish()?;
        Ok(MarkPaid {
            method: method.expect("checked"),
            note,
        })
    }
}

/// PaymentRefundRequest.
#[derive(Debug, Clone, PartialEq)]
pub struct RefundRequest {
    pub reason: RefundReason,
    pub note: Option<String>,
    pub allow_multiple: bool,
}

impl RefundRequest {
    pub fn parse(v: &Value) -> Result<Self> {
        let mut b = Body::new(v);
        let reason = b.req_enum("refund_reason", RefundReason::parse, &RefundReason::expected());
        let note = b.opt_str("refund_note");
        let allow_multiple = b.opt_bool("allow_refund_multiple_related_payments").unwrap_or(false);
        b.finish()?;
        Ok(RefundRequest {
            reason: reason.expect("checked"),
            note,
            allow_multiple,
        })
    }
}

// --- list filters ----------------------------------------------------------------------------

#[derive(Debug, Clone, Default, PartialEq)]
pub struct InvoiceFilter {
    pub statuses: Vec<InvoiceStatus>,
    pub payment_statuses: Vec<PaymentStatus>,
    pub payment_link_id: Option<Uuid>,
    pub from_date: Option<Timestamp>,
    pub to_date: Option<Timestamp>,
    pub due_date_from: Option<Timestamp>,
    pub due_date_to: Option<Timestamp>,
    /// Bounds on `total_amount`.
    pub from_price: Option<Decimal>,
    pub to_price: Option<Decimal>,
    pub consumer_id: Option<ConsumerId>,
    pub subscription_id: Option<Uuid>,
    pub currencies: Vec<Currency>,
    /// Only invoices with a SUCCEEDED card or wallet payment.
    pub payments_not_settled: bool,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct PaymentFilter {
    pub invoice_ids: Vec<InvoiceId>,
    pub statuses: Vec<PaymentStatus>,
    pub from_date: Option<Timestamp>,
    pub to_date: Option<Timestamp>,
}

/// Payment methods that go through the gateway, by name (for store filters).
pub fn gateway_method_names() -> Vec<&'static str> {
    PaymentMethod::ALL.iter().filter(|m| m.is_gateway()).map(|m| m.as_str()).collect()
}

fn enum_values<T: Copy>(q: &mut Query<'_>, name: &str, parse: impl Fn(&str) -> Option<T>, expected: &str) -> Vec<T> {
    let mut out = vec![];
    let raw: Vec<String> = q.params.all(name).map(str::to_string).collect();
    for v in raw.iter().flat_map(|v| v.split(',')).map(str::trim).filter(|v| !v.is_empty()) {
        match parse(v) {
            Some(x) => out.push(x),
            None => q.fail("enum", name, format!("Input should be {expected}")),
        }
    }
    out
}

fn date_param(q: &mut Query<'_>, name: &str) -> Option<Timestamp> {
    let v = q.params.get(name)?.trim().to_string();
    if v.is_empty() {
        return None;
    }
    let t = parse_datetime(&v);
    if t.is_none() {
        q.fail("datetime_parsing", name, "Input should be a valid datetime");
    }
    t
}

fn uuid_param<T: std::str::FromStr>(q: &mut Query<'_>, name: &str) -> Option<T> {
    let v = q.params.get(name)?.trim().to_string();
    let t = T::from_str(&v).ok();
    if t.is_none() {
        q.fail("uuid_parsing", name, "Input should be a valid UUID");
    }
    t
}

fn price_param(q: &mut Query<'_>, name: &str) -> Option<Decimal> {
    // A number or a numeric string: `20`, `20.00`, or the JSON-style `"20.00"`.
    let v = q.params.get(name)?.trim().trim_matches('"').to_string();
    let d = parse_decimal(&Value::String(v));
    if d.is_none() {
        q.fail("decimal_parsing", name, "Input should be a valid decimal");
    }
    d
}

pub struct InvoiceListRequest {
    pub query: ListQuery<InvoiceSort>,
    pub filter: InvoiceFilter,
    pub include_payments: bool,
}

pub fn parse_invoice_list(params: &QueryParams) -> Result<InvoiceListRequest> {
    let mut q = Query::new(params);
    let list = q.list(InvoiceSort::CreatedAt, InvoiceSort::parse, &InvoiceSort::expected());
    let include_payments = q.bool("include_payments").unwrap_or(false);
    let statuses = enum_values(&mut q, "statuses", InvoiceStatus::parse, &InvoiceStatus::expected());
    let payment_statuses = enum_values(&mut q, "payment_statuses", PaymentStatus::parse, &PaymentStatus::expected());
    let mut currencies = vec![];
    let raw: Vec<String> = params.all("currencies").map(str::to_string).collect();
    for c in raw.iter().flat_map(|v| v.split(',')).map(str::trim).filter(|v| !v.is_empty()) {
        match c.to_ascii_uppercase().parse::<Currency>() {
            Ok(c) => currencies.push(c),
            Err(()) => q.fail("enum", "currencies", format!("'{c}' is not a supported currency")),
        }
    }
    let filter = InvoiceFilter {
        statuses,
        payment_statuses,
        payment_link_id: uuid_param(&mut q, "payment_link_id"),
        from_date: date_param(&mut q, "from_date"),
        to_date: date_param(&mut q, "to_date"),
        due_date_from: date_param(&mut q, "due_date_from"),
        due_date_to: date_param(&mut q, "due_date_to"),
        from_price: price_param(&mut q, "from_price"),
        to_price: price_param(&mut q, "to_price"),
        consumer_id: uuid_param(&mut q, "organization_consumer_id"),
        subscription_id: uuid_param(&mut q, "subscription_id"),
        currencies,
        payments_not_settled: q.bool("payments_not_settled").unwrap_or(false),
    };
    q.finish()?;
    Ok(InvoiceListRequest {
        query: list,
        filter,
        include_payments,
    })
}

pub fn parse_payment_list(params: &QueryParams) -> Result<(ListQuery<PaymentSort>, PaymentFilter)> {
    let mut q = Query::new(params);
    let list = q.list(PaymentSort::CreatedAt, PaymentSort::parse, &PaymentSort::expected());
    let statuses = enum_values(&mut q, "statuses", PaymentStatus::parse, &PaymentStatus::expected());
    let mut invoice_ids = vec![];
    let raw: Vec<String> = params.all("invoice_id").map(str::to_string).collect();
    for v in raw.iter().flat_map(|v| v.split(',')).map(str::trim).filter(|v| !v.is_empty()) {
        match v.parse::<InvoiceId>() {
            Ok(id) => invoice_ids.push(id),
            Err(_) => q.fail("uuid_parsing", "invoice_id", "Input should be a valid UUID"),
        }
    }
    let filter = PaymentFilter {
        invoice_ids,
        statuses,
        from_date: date_param(&mut q, "from_date"),
        to_date: date_param(&mut q, "to_date"),
    };
    q.finish()?;
    Ok((list, filter))
}

/// A 422 at `["body", field, index, sub]`.
pub(crate) fn item_problem(kind: &str, index: usize, field: &str, msg: impl Into<String>) -> crate::error::Error {
    crate::error::Error::invalid(FieldError::new(kind, vec!["body".into(), "items".into(), index.into(), field.into()], msg))
}
