//! Payment link operations ([`PaymentLinks`]): create, get, list, change status, change coupons.
//! Amounts come from [`crate::pricing`], as invoices' do.

use super::*;
use crate::auth::Scope;
use crate::error::{Code, Error, Result};
use crate::error::{FieldError, LocPart, StoreError};
use crate::ids::InvoiceItemId;
use crate::ids::{CouponId, PaymentLinkId, PaymentLinkItemId, ProductId};
use crate::invoice::InvoiceItem;
use crate::lane::Lane;
use crate::list::Page;
use crate::money::{Currency, Money};
use crate::pricing::{self, ItemRequest, Priced};
use crate::product::RecurringInterval;
use crate::product::{Product, ProductType};
use crate::store::{Store, Tx};

/// Where each operation of this module runs.
pub mod lane {
    use super::Lane;
    pub const CREATE: Lane = Lane::Write;
    pub const GET: Lane = Lane::Read;
    pub const LIST: Lane = Lane::Read;
    pub const UPDATE_STATUS: Lane = Lane::Write;
    pub const UPDATE_COUPONS: Lane = Lane::Write;
    /// [`super::page::Checkout::pay`] (in `pay.rs`): the gateway is called between its transactions.
    pub const PAY: Lane = Lane::Io;
    /// [`super::page::Checkout::page`] (in `page.rs`): the hosted checkout page, a read.
    pub const PAGE: Lane = Lane::Read;
}

fn items_problem(msg: impl Into<String>) -> Error {
    Error::invalid(FieldError::new("value_error", vec!["body".into(), "items".into()], msg))
}

/// What the products make of the link: `None` for one-time products; the one interval of
/// recurring products. One-time and recurring products never mix, and recurring products of
/// one link share their interval.
pub(crate) fn recurrence(products: &[Product]) -> Result<Option<(RecurringInterval, u32)>> {
    let recurring = products.iter().filter(|p| p.product_type == ProductType::Recurring).count();
    if recurring == 0 {
        return Ok(None);
    }
    if recurring < products.len() {
        return Err(items_problem(
            "Value error, one-time and recurring products cannot be mixed in one payment link",
        ));
    }
    let first = (products[0].recurring_interval, products[0].recurring_interval_count);
    if products.iter().any(|p| (p.recurring_interval, p.recurring_interval_count) != first) {
        return Err(items_problem(
            "Value error, the recurring products of one payment link must share their interval",
        ));
    }
    match first {
        (Some(interval), count) => Ok(Some((interval, count.max(1)))),
        (None, _) => Err(items_problem("Value error, a recurring product has no interval")),
    }
}

/// Prices the lines in the link's currency; returns them with the products read.
fn price(tx: &mut dyn Tx, scope: &Scope, lines: &[ItemRequest], coupons: &[CouponId], currency: Currency) -> Result<(Priced, Vec<Product>)> {
    let loaded = pricing::load(tx, scope.branch_id(), lines, coupons, currency)?;
    let priced = pricing::price(lines, &loaded, currency, scope.org.settings.vat_rate)?;
    Ok((priced, loaded.products))
}

/// Sets the link's totals from a pricing of its lines.
fn set_amounts(l: &mut PaymentLink, priced: &Priced) {
    let t = &priced.totals;
    l.original_amount = t.original_amount;
    l.item_level_discounted_amount = t.item_level_discounted_amount;
    l.total_vat_amount = t.total_vat_amount;
    l.total_price_excluding_vat = t.total_price_excluding_vat;
    l.amount = t.total_amount;
    l.coupons = t.coupons.clone();
}

/// Moves a pricing problem of the link's `i`-th item to where the request named that item.
fn relocate(e: Error, at: impl Fn(usize) -> Option<usize>) -> Error {
    match e {
        Error::Validation(mut d) => {
            for f in &mut d {
                if let [body, items, LocPart::Index(i), ..] = f.loc.as_mut_slice() {
                    if *body == LocPart::Key("body".into()) && *items == LocPart::Key("items".into()) {
                        if let Some(k) = at(*i) {
                            *i = k;
                        }
                    }
                }
            }
            Error::Validation(d)
        }
        e => e,
    }
}

crate::service!(
    /// Payment links: create, get, list, change status, change coupons. Each is one
    /// transaction and answers the link with its products and coupons read in it.
    PaymentLinks
);

/// The links with their products and link-level coupons as stored now: one read of the
/// products and one of the coupons, however many links.
fn details_of(tx: &mut dyn Tx, links: Vec<PaymentLink>) -> Result<Vec<PaymentLinkDetail>> {
    let Some(branch) = links.first().map(|l| l.branch_id) else {
        return Ok(vec![]);
    };
    let mut product_ids: Vec<ProductId> = links.iter().flat_map(|l| l.items.iter().map(|it| it.line.product_id)).collect();
    product_ids.sort();
    product_ids.dedup();
    let mut coupon_ids: Vec<CouponId> = links.iter().flat_map(|l| l.coupon_ids.iter().copied()).collect();
    coupon_ids.sort();
    coupon_ids.dedup();
    let products = tx.link_products(branch, &product_ids)?;
    let coupons = tx.link_coupons(branch, &coupon_ids)?;
    Ok(links
        .into_iter()
        .map(|l| {
            let mut mine: Vec<Product> = vec![];
            for it in &l.items {
                if !mine.iter().any(|p| p.id == it.line.product_id) {
                    if let Some(p) = products.iter().find(|p| p.id == it.line.product_id) {
                        mine.push(p.clone());
                    }
                }
            }
            let link_coupons = l.coupon_ids.iter().filter_map(|id| coupons.iter().find(|c| c.id == *id).cloned()).collect();
            PaymentLinkDetail {
                link: l,
                products: mine,
                coupons: link_coupons,
            }
        })
        .collect())
}

/// The link with its products and link-level coupons as stored now.
fn detail_of(tx: &mut dyn Tx, l: PaymentLink) -> Result<PaymentLinkDetail> {
    Ok(details_of(tx, vec![l])?.pop().expect("one link"))
}

fn load_link(tx: &mut dyn Tx, scope: &Scope, id: PaymentLinkId) -> Result<PaymentLink> {
    tx.payment_link(scope.branch_id(), id)?.ok_or_else(|| Error::not_found("Payment link", id))
}

impl<S: Store> PaymentLinks<'_, S> {
    /// Creates a link, ACTIVE, priced now. Refused (422) when its products mix one-time and
    /// recurring ones, when a product has no active price in the link's currency, when
    /// `valid_until` is not in the future; 404 when a product, coupon or the consumer is not one
    /// of the branch's.
    pub fn create(&self, scope: &Scope, req: PaymentLinkCreate) -> Result<PaymentLinkDetail> {
        self.with_short_id(|short_id| {
            self.store.write(|tx| {
                let l = self.create_in(tx, scope, &req, short_id)?;
                detail_of(tx, l)
            })
        })
    }

    /// Runs `create` with a new short id, and again with another should it ever meet one in
    /// use (a 1 in 2^128 event per pair).
    fn with_short_id<R>(&self, mut create: impl FnMut(&str) -> Result<R>) -> Result<R> {
        let mut tries = 0;
        loop {
            match create(&new_short_id()) {
                Err(Error::Store(StoreError::UniqueViolation(name))) if name == crate::error::constraint::PAYMENT_LINKS_SHORT_ID && tries < 3 => tries += 1,
                r => return r,
            }
        }
    }

    fn create_in(&self, tx: &mut dyn Tx, scope: &Scope, req: &PaymentLinkCreate, short_id: &str) -> Result<PaymentLink> {
        let now = self.now(scope);
        if req.valid_until.is_some_and(|v| v <= now) {
            return Err(Error::invalid(FieldError::body(
                "value_error",
                "valid_until",
                "Value error, valid_until should be in the future",
            )));
        }
        if let Some(c) = req.consumer_id {
            tx.consumer(scope.branch_id(), c)?
                .filter(|c| !c.is_deleted)
                .ok_or_else(|| Error::not_found("Consumer", c))?;
        }
        let lines: Vec<ItemRequest> = req
            .items
            .iter()
            .map(|i| ItemRequest {
                product_id: i.product_id,
                quantity: i.quantity,
                coupons: i.coupons.clone(),
            })
            .collect();
        let (priced, products) = price(tx, scope, &lines, &req.coupons, req.currency)?;
        let recurring = recurrence(&products)?;
        let mut payment_methods = req.payment_methods.unwrap_or(scope.org.settings.default_payment_methods);
        if recurring.is_some() {
            // Installments are for one-time products only.
            payment_methods.installment = false;
        }
        let items = req
            .items
            .iter()
            .zip(&priced.items)
            .map(|(r, p)| {
                let id = PaymentLinkItemId::new();
                PaymentLinkItem {
                    id,
                    line: InvoiceItem::from_priced(p, InvoiceItemId(id.0), now),
                    allow_custom_quantity: r.allow_custom_quantity,
                    min_quantity: r.min_quantity,
                    max_quantity: r.max_quantity,
                    updated_at: None,
                }
            })
            .collect();
        let zero = Money::zero(req.currency);
        let mut l = PaymentLink {
            id: PaymentLinkId::new(),
            org_id: scope.org_id(),
            branch_id: scope.branch_id(),
            user_id: scope.actor.user_id,
            short_id: short_id.to_string(),
            name: req.name.clone(),
            description: req.description.clone(),
            currency: req.currency,
            status: PaymentLinkStatus::Active,
            deactivate_message: None,
            consumer_id: req.consumer_id,
            contact_information_type: req.contact_information_type,
            max_number_of_payments: req.max_number_of_payments,
            payments_count: 0,
            amount_collected: zero,
            valid_until: req.valid_until,
            checkout: req.checkout.clone(),
            custom_metadata: req.custom_metadata.clone(),
            payment_methods,
            recurring_interval: recurring.map(|r| r.0),
            recurring_interval_count: recurring.map(|r| r.1),
            coupon_ids: req.coupons.clone(),
            coupons: vec![],
            original_amount: zero,
            item_level_discounted_amount: zero,
            total_vat_amount: zero,
            total_price_excluding_vat: zero,
            amount: zero,
            items,
            created_at: now,
            updated_at: None,
        };
        set_amounts(&mut l, &priced);
        tx.insert_payment_link(&l)?;
        Ok(l)
    }

    /// A link of the request's branch.
    pub fn get(&self, scope: &Scope, id: PaymentLinkId) -> Result<PaymentLinkDetail> {
        self.store.read(|tx| {
            let l = load_link(tx, scope, id)?;
            detail_of(tx, l)
        })
    }

    /// A page of the branch's links.
    pub fn list(&self, scope: &Scope, req: &PaymentLinkListRequest) -> Result<Page<PaymentLinkDetail>> {
        self.store.read(|tx| {
            let page = tx.list_payment_links(scope.branch_id(), &req.query, &req.filter)?;
            Ok(Page {
                items: details_of(tx, page.items)?,
                total: page.total,
                page: page.page,
                limit: page.limit,
            })
        })
    }

    /// Deactivates (INACTIVE, with the message) or reactivates (ACTIVE, message cleared) a
    /// link; asking for the status it has changes only the message. A COMPLETED link is
    /// refused (400 INVALID_STATUS). An expired link keeps its status either way.
    pub fn update_status(&self, scope: &Scope, id: PaymentLinkId, ch: StatusChange) -> Result<PaymentLinkDetail> {
        self.store.write(|tx| {
            let l = self.update_status_in(tx, scope, id, &ch)?;
            detail_of(tx, l)
        })
    }

    fn update_status_in(&self, tx: &mut dyn Tx, scope: &Scope, id: PaymentLinkId, ch: &StatusChange) -> Result<PaymentLink> {
        let now = self.now(scope);
        let mut l = load_link(tx, scope, id)?;
        if l.status == PaymentLinkStatus::Completed {
            return Err(Error::rule(
                Code::INVALID_STATUS,
                format!("Payment link '{id}' is completed: it can be neither deactivated nor reactivated"),
            ));
        }
        match ch.status {
            PaymentLinkStatus::Inactive => {
                l.status = PaymentLinkStatus::Inactive;
                l.deactivate_message = ch.deactivate_message.clone();
            }
            _ => {
                l.status = PaymentLinkStatus::Active;
                l.deactivate_message = None;
            }
        }
        l.updated_at = Some(now);
        tx.update_payment_link_row(&l)?;
        Ok(l)
    }

    /// Changes the link's coupons (`coupons`) and its items' (`items`, by
    /// `payment_link_item_id`), and prices the link again with the products' current prices.
    /// A COMPLETED link, or one with a payment in progress, is refused (400 INVALID_STATUS).
    pub fn update_coupons(&self, scope: &Scope, id: PaymentLinkId, ch: CouponsChange) -> Result<PaymentLinkDetail> {
        self.store.write(|tx| {
            let l = self.update_coupons_in(tx, scope, id, &ch)?;
            detail_of(tx, l)
        })
    }

    fn update_coupons_in(&self, tx: &mut dyn Tx, scope: &Scope, id: PaymentLinkId, ch: &CouponsChange) -> Result<PaymentLink> {
        let now = self.now(scope);
        let mut l = load_link(tx, scope, id)?;
        if l.status == PaymentLinkStatus::Completed {
            return Err(Error::rule(Code::INVALID_STATUS, format!("Payment link '{id}' is completed")));
        }
        if tx.count_link_attempts(l.id)? > 0 {
            return Err(Error::rule(Code::INVALID_STATUS, format!("A payment of payment link '{id}' is in progress")));
        }
        let mut problems = crate::error::Problems::default();
        for (k, (item, _)) in ch.items.iter().enumerate() {
            if !l.items.iter().any(|i| i.id == *item) {
                problems.push(FieldError::new(
                    "value_error",
                    vec!["body".into(), "items".into(), k.into(), "payment_link_item_id".into()],
                    format!("Value error, the payment link has no item '{item}'"),
                ));
            }
        }
        problems.into_result()?;
        let asked = |i: &PaymentLinkItem| ch.items.iter().position(|(id, _)| *id == i.id);
        let lines: Vec<ItemRequest> = l
            .items
            .iter()
            .map(|i| ItemRequest {
                product_id: i.line.product_id,
                quantity: i.line.quantity,
                coupons: asked(i).map(|k| ch.items[k].1.clone()).unwrap_or_else(|| i.line.coupon_ids.clone()),
            })
            .collect();
        let coupons = ch.coupons.clone().unwrap_or_else(|| l.coupon_ids.clone());
        let (priced, _) = price(tx, scope, &lines, &coupons, l.currency).map_err(|e| relocate(e, |i| asked(&l.items[i])))?;
        for (item, p) in l.items.iter_mut().zip(&priced.items) {
            let line = InvoiceItem::from_priced(p, item.line.id, item.line.created_at);
            if line != item.line || ch.items.iter().any(|(id, _)| *id == item.id) {
                item.updated_at = Some(now);
            }
            item.line = line;
        }
        l.coupon_ids = coupons;
        set_amounts(&mut l, &priced);
        l.updated_at = Some(now);
        tx.update_payment_link(&l)?;
        Ok(l)
    }
}

/// The link as the payer buys it: `chosen` quantities (item id, quantity) for items that allow
/// a custom quantity, each within the item's `min_quantity` and `max_quantity` (1 and a million
/// when unset), priced again as the link is (same products, coupons and VAT). Refused (422 at
/// `["body", "items", k, …]`) for an unknown item, an item whose quantity is fixed, or a
/// quantity out of bounds. Nothing is written: the stored link keeps its quantities.
pub(crate) fn with_quantities(tx: &mut dyn Tx, scope: &Scope, l: &PaymentLink, chosen: &[(PaymentLinkItemId, u32)]) -> Result<PaymentLink> {
    let mut problems = crate::error::Problems::default();
    let at = |k: usize, field: &str| vec![LocPart::from("body"), "items".into(), k.into(), field.into()];
    for (k, (id, q)) in chosen.iter().enumerate() {
        match l.items.iter().find(|i| i.id == *id) {
            None => problems.push(FieldError::new(
                "value_error",
                at(k, "payment_link_item_id"),
                format!("Value error, the payment link has no item '{id}'"),
            )),
            Some(i) if !i.allow_custom_quantity => problems.push(FieldError::new(
                "value_error",
                at(k, "quantity"),
                "Value error, the quantity of this item is fixed",
            )),
            Some(i) => {
                let (min, max) = (i.min_quantity.unwrap_or(1).max(1), i.max_quantity.unwrap_or(super::wire::MAX_QUANTITY as u32));
                if *q < min || *q > max {
                    problems.push(FieldError::new(
                        "value_error",
                        at(k, "quantity"),
                        format!("Value error, the quantity should be from {min} to {max}"),
                    ));
                }
            }
        }
    }
    problems.into_result()?;
    let lines: Vec<ItemRequest> = l
        .items
        .iter()
        .map(|i| ItemRequest {
            product_id: i.line.product_id,
            quantity: chosen.iter().find(|(id, _)| *id == i.id).map_or(i.line.quantity, |(_, q)| *q),
            coupons: i.line.coupon_ids.clone(),
        })
        .collect();
    let (priced, _) = price(tx, scope, &lines, &l.coupon_ids, l.currency)?;
    let mut out = l.clone();
    for (item, p) in out.items.iter_mut().zip(&priced.items) {
        item.line = InvoiceItem::from_priced(p, item.line.id, item.line.created_at);
    }
    set_amounts(&mut out, &priced);
    Ok(out)
}
