//! What the API answers of a payment link: PaymentLinkDetailed (list entries are the same
//! document) with its PaymentLinkItemDto items, borrowed from a [`PaymentLinkDetail`], and
//! what the checkout's attempts endpoint answers ([`PayAttemptResponse`]).

use super::{ContactInformationType, PaymentLink, PaymentLinkDetail, PaymentLinkItem, PaymentLinkStatus};
use crate::clock::Timestamp;
use crate::coupon::view::CouponView;
use crate::coupon::Coupon;
use crate::ids::{BranchId, ConsumerId, OrgId, PaymentLinkId, PaymentLinkItemId, PriceId, ProductId, UserId};
use crate::invoice::PaymentMethods;
use crate::money::{Currency, Money};
use crate::org::OrgSettings;
use crate::pricing::view::{coupon_calculation, CouponCalculation};
use crate::product::view::ProductView;
use crate::product::RecurringInterval;
use crate::schema::{Integer, JsonObject};
use schemars::JsonSchema;
use serde::Serialize;
use serde_json::{Map, Value};

/// PaymentLinkDetailed: a payment link (a shareable hosted checkout for a priced set of
/// products), with its items, coupons and totals.
#[derive(Debug, Serialize, JsonSchema)]
#[schemars(rename = "PaymentLinkDetailed")]
pub struct PaymentLinkResponse<'a> {
    /// When the link was created.
    #[serde(with = "crate::clock::wire_time")]
    #[schemars(with = "Timestamp")]
    pub created_at: Timestamp,
    /// When the link was last changed (status, coupons, a payment counted); `null` if never.
    #[serde(with = "crate::clock::wire_time::option")]
    #[schemars(with = "Option<Timestamp>")]
    pub updated_at: Option<Timestamp>,
    /// The link's id.
    pub id: PaymentLinkId,
    /// The unguessable part of the checkout address (`url` ends with it).
    pub short_id: &'a str,
    /// The link's name, shown to the payer on the checkout page.
    pub name: &'a str,
    /// The link's description, shown to the payer; `null` if none.
    pub description: Option<&'a str>,
    /// What the payer pays: the total after coupons, VAT included (a decimal string in
    /// `currency`).
    #[schemars(with = "String")]
    pub amount: Money,
    /// `amount` in the currency's smallest unit (halalas for SAR).
    #[schemars(with = "Integer")]
    pub amount_in_smallest_unit: i64,
    /// The items' prices times their quantities, before any coupon (a decimal string).
    #[schemars(with = "String")]
    pub original_amount: Money,
    /// What is left after the items' own coupons, before the link's coupons (a decimal string).
    #[schemars(with = "String")]
    pub item_level_discounted_amount: Money,
    /// The VAT included in `amount` (a decimal string).
    #[schemars(with = "String")]
    pub total_vat_amount: Money,
    /// `amount` without its VAT (a decimal string).
    #[schemars(with = "String")]
    pub total_price_excluding_vat: Money,
    /// The link-level coupons applied to the items' total, in order.
    #[schemars(with = "Option<CouponCalculation>")]
    pub coupon_calculation_metadata: CouponCalculation<'a>,
    /// The currency of every amount of the link.
    #[schemars(with = "Option<Currency>")]
    pub currency: Currency,
    /// The amount in the organization's home currency; not tracked, always `null`.
    #[schemars(with = "Option<String>")]
    pub home_currency_amount: Option<Value>,
    /// The exchange rate to the home currency when the link was made; not tracked, always
    /// `null`.
    #[schemars(with = "Option<String>")]
    pub exchange_rate_at_creation: Option<Value>,
    /// How many payments the link accepts (it becomes COMPLETED after the last); `null`:
    /// unlimited.
    #[schemars(with = "Option<Integer>")]
    pub max_number_of_payments: Option<u32>,
    /// Payments taken through the link so far.
    #[schemars(with = "Integer")]
    pub number_of_payments: u32,
    /// After this time the link takes no payment (its status stays); `null`: no limit.
    #[serde(with = "crate::clock::wire_time::option")]
    #[schemars(with = "Option<Timestamp>")]
    pub valid_until: Option<Timestamp>,
    /// The message the payer sees after paying; `null` if none.
    pub confirmation_message: Option<&'a str>,
    /// For a link of recurring products, how often the subscription it makes renews (its
    /// products' interval); `null` for one-time products.
    pub recurring_interval: Option<RecurringInterval>,
    /// How many `recurring_interval`s one subscription period lasts; `null` for one-time
    /// products.
    #[schemars(with = "Option<Integer>")]
    pub recurring_interval_count: Option<u32>,
    /// Days of free trial before the first charge of a recurring link; `null` if none.
    #[schemars(with = "Option<Integer>")]
    pub trial_period_days: Option<u32>,
    /// ACTIVE (takes payments), INACTIVE (deactivated) or COMPLETED (took all the payments it
    /// accepts).
    pub status: PaymentLinkStatus,
    /// The organization's id.
    pub organization_id: OrgId,
    /// The branch the link belongs to.
    pub branch_id: BranchId,
    /// The user who made the link (for an API key, the key's user).
    pub user_id: UserId,
    /// The consumer who pays (the checkout then asks for no details); `null`: the checkout
    /// collects the payer's name and contact.
    pub organization_consumer_id: Option<ConsumerId>,
    /// The message the payer sees on an INACTIVE link; `null` otherwise.
    pub deactivate_message: Option<&'a str>,
    /// Free fields the merchant gave for the checkout, as given; `null` if none.
    #[schemars(with = "Option<JsonObject>")]
    pub custom_fields: Option<&'a Map<String, Value>>,
    /// Where the payer is sent after a successful payment (with the outcome in the query);
    /// `null`: the hosted result page.
    pub success_redirect_url: Option<&'a str>,
    /// Where the payer is sent after a failed payment; `null`: the hosted result page.
    pub failure_redirect_url: Option<&'a str>,
    /// Free key/value pairs kept with the link (sent as `metadata` in its webhook events).
    #[schemars(with = "JsonObject")]
    pub custom_metadata: &'a Map<String, Value>,
    /// What the checkout asks of a payer besides the name (PHONE or EMAIL), and how it finds
    /// the payer among the branch's consumers.
    #[schemars(with = "Option<ContactInformationType>")]
    pub contact_information_type: ContactInformationType,
    /// The link's items, in order.
    pub items: Vec<PaymentLinkItemResponse<'a>>,
    /// The link-level coupons, in order; a coupon deleted since is left out.
    pub coupons: Vec<CouponView<'a>>,
    /// The payment methods the checkout offers.
    #[schemars(with = "Option<PaymentMethodDto>")]
    pub override_payment_methods: PaymentMethodDto,
    /// The hosted checkout address to send the payer to (`{public URL}/pay/{short_id}`).
    pub url: String,
    /// What the invoices paid through the link have collected so far (a decimal string).
    #[schemars(with = "String")]
    pub amount_collected: Money,
}

/// PaymentLinkItemDto: one line of a link, priced.
#[derive(Debug, Serialize, JsonSchema)]
#[schemars(rename = "PaymentLinkItemDto")]
pub struct PaymentLinkItemResponse<'a> {
    /// When the item was created (with the link).
    #[serde(with = "crate::clock::wire_time")]
    #[schemars(with = "Timestamp")]
    pub created_at: Timestamp,
    /// When the item was last priced again (its coupons changed); `null` if never.
    #[serde(with = "crate::clock::wire_time::option")]
    #[schemars(with = "Option<Timestamp>")]
    pub updated_at: Option<Timestamp>,
    /// The item's id (`payment_link_item_id` in the coupons and checkout requests).
    pub id: PaymentLinkItemId,
    /// The product sold.
    pub product_id: ProductId,
    /// How many units (the payer may change it when `allow_custom_quantity`).
    #[schemars(with = "Integer")]
    pub quantity: u32,
    /// The product's unit price in the link's currency (a decimal string).
    #[schemars(with = "String")]
    pub unit_price: Money,
    /// `unit_price` × `quantity`, before coupons (a decimal string).
    #[schemars(with = "String")]
    pub original_amount: Money,
    /// What is left after the item's coupons (a decimal string).
    #[schemars(with = "String")]
    pub discounted_amount: Money,
    /// The VAT of the line (a decimal string).
    #[schemars(with = "String")]
    pub vat_amount: Money,
    /// The line's amount without its VAT (a decimal string).
    #[schemars(with = "String")]
    pub price_excluding_vat: Money,
    /// The item's own coupons applied to `original_amount`, in order.
    #[schemars(with = "Option<CouponCalculation>")]
    pub coupon_calculation_metadata: CouponCalculation<'a>,
    /// The product as it is now; `null` if it was deleted since.
    pub product: Option<ProductView<'a>>,
    /// Whether the payer may choose the quantity, within `min_quantity` and `max_quantity`.
    pub allow_custom_quantity: bool,
    /// The least quantity the payer may choose; `null`: 1.
    #[schemars(with = "Option<Integer>")]
    pub min_quantity: Option<u32>,
    /// The most quantity the payer may choose; `null`: a million.
    #[schemars(with = "Option<Integer>")]
    pub max_quantity: Option<u32>,
    /// The link's currency.
    #[schemars(with = "Option<Currency>")]
    pub currency: Currency,
    /// The product price the line was priced with; `null` if unknown.
    pub product_price_id: Option<PriceId>,
}

/// PaymentMethodDto: which payment methods a checkout offers. In a request a flag left out is
/// false (`mada` follows `visa`); a response gives every flag but `mada`.
#[derive(Debug, Serialize, JsonSchema)]
#[schemars(rename = "PaymentMethodDto")]
pub struct PaymentMethodDto {
    /// mada debit cards (requests only: a response shows them under `visa`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mada: Option<bool>,
    /// Visa cards (and mada cards, unless `mada` says otherwise).
    #[schemars(with = "Option<bool>")]
    pub visa: bool,
    /// Mastercard cards.
    #[schemars(with = "Option<bool>")]
    pub mastercard: bool,
    /// American Express cards.
    #[schemars(with = "Option<bool>")]
    pub amex: bool,
    /// Bank transfer.
    #[schemars(with = "Option<bool>")]
    pub bank_transfer: bool,
    /// Paying in installments (offered only for one-time products and amounts the
    /// organization's installment settings allow).
    #[schemars(with = "Option<bool>")]
    pub installment: bool,
}

impl PaymentMethodDto {
    /// The flags a response shows of `pm`.
    pub fn of(pm: &PaymentMethods) -> Self {
        PaymentMethodDto {
            mada: None,
            visa: pm.visa,
            mastercard: pm.mastercard,
            amex: pm.amex,
            bank_transfer: pm.bank_transfer,
            installment: pm.installment,
        }
    }
}

impl PaymentLinkDetail {
    /// PaymentLinkDetailed, borrowed from the link: `public_url` makes its checkout address,
    /// `settings` (the organization's) its products' views.
    pub fn response<'a>(&'a self, public_url: &str, settings: &OrgSettings) -> PaymentLinkResponse<'a> {
        let l: &'a PaymentLink = &self.link;
        PaymentLinkResponse {
            created_at: l.created_at,
            updated_at: l.updated_at,
            id: l.id,
            short_id: &l.short_id,
            name: &l.name,
            description: l.description.as_deref(),
            amount: l.amount,
            amount_in_smallest_unit: l.amount.minor_units(),
            original_amount: l.original_amount,
            item_level_discounted_amount: l.item_level_discounted_amount,
            total_vat_amount: l.total_vat_amount,
            total_price_excluding_vat: l.total_price_excluding_vat,
            coupon_calculation_metadata: coupon_calculation(&l.coupons),
            currency: l.currency,
            home_currency_amount: None,
            exchange_rate_at_creation: None,
            max_number_of_payments: l.max_number_of_payments,
            number_of_payments: l.payments_count,
            valid_until: l.valid_until,
            confirmation_message: l.checkout.confirmation_message.as_deref(),
            recurring_interval: l.recurring_interval,
            recurring_interval_count: l.recurring_interval_count,
            trial_period_days: l.checkout.trial_period_days,
            status: l.status,
            organization_id: l.org_id,
            branch_id: l.branch_id,
            user_id: l.user_id,
            organization_consumer_id: l.consumer_id,
            deactivate_message: l.deactivate_message.as_deref(),
            custom_fields: l.checkout.custom_fields.as_ref(),
            success_redirect_url: l.checkout.success_redirect_url.as_deref(),
            failure_redirect_url: l.checkout.failure_redirect_url.as_deref(),
            custom_metadata: &l.custom_metadata,
            contact_information_type: l.contact_information_type,
            items: l.items.iter().map(|it| self.item(it, settings)).collect(),
            coupons: self.coupons.iter().map(Coupon::view).collect(),
            override_payment_methods: PaymentMethodDto::of(&l.payment_methods),
            url: l.url(public_url),
            amount_collected: l.amount_collected,
        }
    }

    /// PaymentLinkItemDto of one of the link's items.
    fn item<'a>(&'a self, it: &'a PaymentLinkItem, settings: &OrgSettings) -> PaymentLinkItemResponse<'a> {
        let line = &it.line;
        PaymentLinkItemResponse {
            created_at: line.created_at,
            updated_at: it.updated_at,
            id: it.id,
            product_id: line.product_id,
            quantity: line.quantity,
            unit_price: line.unit_price,
            original_amount: line.original_amount,
            discounted_amount: line.discounted_amount,
            vat_amount: line.vat_amount,
            price_excluding_vat: line.excluding_vat,
            coupon_calculation_metadata: coupon_calculation(&line.coupons),
            product: self.products.iter().find(|p| p.id == line.product_id).map(|p| p.view(settings)),
            allow_custom_quantity: it.allow_custom_quantity,
            min_quantity: it.min_quantity,
            max_quantity: it.max_quantity,
            currency: self.link.currency,
            product_price_id: line.price_id,
        }
    }
}

/// What `POST /pay/{short_id}/attempts` (and an invoice's attempts endpoint) answers: the
/// outcome and where to send the payer.
#[derive(Debug, Serialize)]
pub struct PayAttemptResponse<'a> {
    /// The gateway's status message (`APPROVED`, `INSUFFICIENT FUNDS`, …).
    pub message: &'a str,
    /// Where the payer goes now: the link's success or failure URL, or the hosted result page,
    /// with the outcome in the query.
    pub redirect_url: &'a str,
    /// `paid`, `pending`, `failed` or `failed_internal_error`.
    pub status: super::PayStatus,
}
