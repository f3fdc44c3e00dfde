//! What the hosted checkout page (`GET /pay/{short id}`) shows: [`CheckoutPage`], read by
//! [`Checkout::page`](super::checkout::Checkout::page) with no credentials (the short id is the
//! capability). The server only renders it: every amount, whether the payer's details are
//! asked, whether the link takes a payment now and which installment plans are offered are
//! decided here.

use super::{ContactInformationType, PaymentLink, PaymentLinkStatus, Unpayable};
use crate::error::{Error, Result};
use crate::invoice::installments::{self, InstallmentOption};
use crate::money::{Currency, Money};
use crate::store::Store;

/// One line as the payer sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct PageItem {
    /// The product's name (empty when the product was deleted since).
    pub name: String,
    pub quantity: u32,
    /// Unit price × quantity, before coupons.
    pub amount: Money,
    /// The payer may choose the quantity (a link item with `allow_custom_quantity`): the item's
    /// id and the bounds.
    pub custom: Option<CustomQuantity>,
}

/// A quantity the payer chooses: the link item and its bounds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CustomQuantity {
    pub item_id: crate::ids::PaymentLinkItemId,
    pub min: u32,
    pub max: u32,
}

/// One coupon's discount (item-level coupons first, then the link's, in order).
#[derive(Debug, Clone, PartialEq)]
pub struct PageCoupon {
    pub name: String,
    pub discount: Money,
}

/// Whether the page takes a payment, and if not why.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PageState {
    Payable,
    Unpayable(Unpayable),
    /// A link of recurring products with a trial period, which cannot be paid yet.
    Recurring,
    /// An invoice that takes no payment, by its status: COMPLETED (paid), CANCELED (voided),
    /// REJECTED (declined), DRAFT or EXPIRED.
    Invoice(crate::invoice::InvoiceStatus),
    /// The organization takes no card or wallet payments: live, with no gateway configured.
    NoGateway,
}

/// The hosted checkout page of one link, or the pay page of one invoice (same page, same
/// components: [`crate::invoice::ops::Invoices::pay_page`] fills the invoice's parts).
#[derive(Debug, Clone, PartialEq)]
pub struct CheckoutPage {
    /// The page's path: `/pay/{short id}` or `/pay/invoices/{id}` (its attempts endpoint is
    /// `{path}/attempts`, its result page `{path}/result`).
    pub path: String,
    pub name: String,
    pub description: Option<String>,
    pub currency: Currency,
    pub items: Vec<PageItem>,
    pub coupons: Vec<PageCoupon>,
    /// Sum of the items' amounts before coupons.
    pub subtotal: Money,
    pub vat: Money,
    /// Whether the VAT is part of the prices (every item's is inclusive or exempt): the page
    /// shows it as included rather than added.
    pub vat_included: bool,
    pub total: Money,
    /// What the payer has paid already (an invoice paid in part; zero for a link).
    pub paid: Money,
    /// What the pay button charges: the total, or an accepted invoice's next payable payment.
    pub pay_now: Money,
    /// The invoice's number in its organization (the invoice page only).
    pub invoice_number: Option<i64>,
    /// Whether the payer may decline it (an invoice not accepted or paid yet).
    pub declinable: bool,
    pub state: PageState,
    /// The deactivation message of an inactive link.
    pub deactivate_message: Option<String>,
    /// What the page asks besides the name when the link has no consumer; `None`: asks nothing.
    pub collect_contact: Option<ContactInformationType>,
    /// Installment plans the payer may choose (empty: pays in full).
    pub installments: Vec<InstallmentOption>,
    /// Whether the payer may pay by mobile wallet (not for a subscription: its renewals are
    /// charged to the card).
    pub wallet: bool,
    /// A subscription's payment (a link of recurring products, or a subscription's invoice):
    /// the card is kept and charged again at each renewal.
    pub renews: Option<Renewal>,
    pub confirmation_message: Option<String>,
}

/// What a subscription's payer agrees to: `amount` charged to the card every `count`
/// `interval`s until they cancel.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Renewal {
    pub interval: crate::product::RecurringInterval,
    pub count: u32,
    pub amount: Money,
}

impl CheckoutPage {
    pub fn payable(&self) -> bool {
        self.state == PageState::Payable
    }
}

/// How the hosted result page (`/pay/{short id}/result?status=…`) reads the redirect's
/// `status`: `Some(true)` for paid or pending, `Some(false)` for a failure, `None` otherwise.
pub fn result_is_success(status: &str) -> Option<bool> {
    match status {
        "paid" | "pending" => Some(true),
        "failed" | "failed_internal_error" => Some(false),
        _ => None,
    }
}

/// The summary's lines and coupons of priced lines (item-level coupons first, then the
/// whole's), naming each product from `names`.
pub(crate) fn summary_of(
    lines: &[&crate::invoice::InvoiceItem],
    coupons: &[crate::pricing::CouponLine],
    names: &[(crate::ids::ProductId, String)],
) -> (Vec<PageItem>, Vec<PageCoupon>) {
    let items = lines
        .iter()
        .map(|line| PageItem {
            name: names.iter().find(|(id, _)| *id == line.product_id).map(|(_, n)| n.clone()).unwrap_or_default(),
            quantity: line.quantity,
            amount: line.original_amount,
            custom: None,
        })
        .collect();
    let coupons = lines
        .iter()
        .flat_map(|line| line.coupons.iter())
        .chain(coupons.iter())
        .filter(|c| !c.discount.is_zero())
        .map(|c| PageCoupon {
            name: c.name.clone(),
            discount: c.discount,
        })
        .collect();
    (items, coupons)
}

/// The names of the products of `lines` (deleted ones are left out), read in one go.
pub(crate) fn product_names(
    tx: &mut dyn crate::store::Tx,
    branch: crate::ids::BranchId,
    lines: &[&crate::invoice::InvoiceItem],
) -> Result<Vec<(crate::ids::ProductId, String)>> {
    let mut ids: Vec<crate::ids::ProductId> = lines.iter().map(|line| line.product_id).collect();
    ids.sort();
    ids.dedup();
    Ok(tx.link_products(branch, &ids)?.into_iter().map(|p| (p.id, p.name)).collect())
}

fn page_of(l: &PaymentLink, names: &[(crate::ids::ProductId, String)], state: PageState, settings: &crate::org::OrgSettings) -> CheckoutPage {
    let lines: Vec<_> = l.items.iter().map(|it| &it.line).collect();
    let (mut items, coupons) = summary_of(&lines, &l.coupons, names);
    for (shown, it) in items.iter_mut().zip(&l.items) {
        shown.custom = it.allow_custom_quantity.then(|| CustomQuantity {
            item_id: it.id,
            min: it.min_quantity.unwrap_or(1).max(1),
            max: it.max_quantity.unwrap_or(super::wire::MAX_QUANTITY as u32),
        });
    }
    let payable = state == PageState::Payable;
    CheckoutPage {
        path: format!("/pay/{}", l.short_id),
        name: l.name.clone(),
        description: l.description.clone(),
        currency: l.currency,
        items,
        coupons,
        subtotal: l.original_amount,
        vat: l.total_vat_amount,
        vat_included: l.items.iter().all(|it| it.line.vat_mode != crate::product::VatMode::Exclusive),
        total: l.amount,
        paid: Money::zero(l.currency),
        pay_now: l.amount,
        invoice_number: None,
        declinable: false,
        state,
        deactivate_message: (l.status == PaymentLinkStatus::Inactive).then(|| l.deactivate_message.clone()).flatten(),
        collect_contact: l.consumer_id.is_none().then_some(l.contact_information_type),
        installments: installments::options(settings, l.amount, payable && l.offers_installments()),
        wallet: !l.is_recurring(),
        renews: l.recurring_interval.map(|interval| Renewal {
            interval,
            count: l.recurring_interval_count.unwrap_or(1).max(1),
            amount: l.amount,
        }),
        confirmation_message: l.checkout.confirmation_message.clone(),
    }
}

impl<S: Store> super::checkout::Checkout<'_, S> {
    /// The checkout page of the link with short id `short_id` (no credentials): 404 for an
    /// unknown one. An inactive, expired or completed link is a page too (its state says why it
    /// takes no payment).
    pub fn page(&self, short_id: &str) -> Result<CheckoutPage> {
        self.page_with(short_id, &[])
    }

    /// [`Self::page`] priced with the quantities the payer chose (item id, quantity)
    /// for items that allow it; quantities the link does not allow are ignored (the link's own
    /// are shown).
    pub fn page_with(&self, short_id: &str, quantities: &[(crate::ids::PaymentLinkItemId, u32)]) -> Result<CheckoutPage> {
        let well_formed = (1..=64).contains(&short_id.len()) && short_id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
        if !well_formed {
            return Err(Error::not_found("Payment link", "?"));
        }
        self.store.read(|tx| {
            let missing = || Error::not_found("Payment link", short_id);
            let mut l = tx.payment_link_by_short_id(short_id)?.ok_or_else(missing)?;
            let org = tx.org(l.org_id)?.ok_or_else(missing)?;
            if !quantities.is_empty() {
                let branch = tx.branch(l.org_id, l.branch_id)?.ok_or_else(missing)?;
                let scope = crate::auth::Scope {
                    org: org.clone(),
                    branch,
                    actor: crate::auth::Actor {
                        user_id: l.user_id,
                        role: crate::org::Role::BranchUser,
                        access: crate::auth::BranchAccess::Only(vec![l.branch_id]),
                        api_key_id: None,
                    },
                };
                match super::ops::with_quantities(tx, &scope, &l, quantities) {
                    Ok(chosen) => l = chosen,
                    Err(crate::error::Error::Store(e)) => return Err(e.into()),
                    Err(_) => {}
                }
            }
            let lines: Vec<_> = l.items.iter().map(|it| &it.line).collect();
            let names = product_names(tx, l.branch_id, &lines)?;
            let now = org.now(self.clock());
            let state = match l.payable(now) {
                Err(why) => PageState::Unpayable(why),
                Ok(()) if l.is_recurring() && l.checkout.trial_period_days.is_some_and(|d| d > 0) => PageState::Recurring,
                Ok(()) if !self.takes_payments(&org) => PageState::NoGateway,
                Ok(()) => PageState::Payable,
            };
            Ok(page_of(&l, &names, state, &org.settings))
        })
    }
}
