//! The target plan of an update, priced: the products and coupons of the request, as
//! invoices price them, with the products already on the plan kept at the price they were
//! subscribed at.

use super::diff::Names;
use super::ops::check_interval;
use super::*;
use crate::auth::Scope;
use crate::clock::Timestamp;
use crate::engine::Engine;
use crate::error::{Error, Result};
use crate::ids::{CouponId, InvoiceItemId, SubscriptionItemId};
use crate::invoice::InvoiceItem;
use crate::pricing::{self, check_coupon, check_product, coupon_loc, ItemRequest, Loaded};
use crate::product::{Product, ProductPrice};
use crate::store::{Store, Tx};
use crate::subscription::ops::interval_of;
use crate::subscription::{Subscription, SubscriptionItem, SubscriptionItemRequest};

/// A product already on the plan keeps the unit price and VAT mode it was subscribed at (and
/// stays usable if it was deactivated since).
fn grandfathered(p: Product, kept: &SubscriptionItem) -> Product {
    let price = ProductPrice {
        id: kept.line.price_id.unwrap_or_default(),
        product_id: p.id,
        amount: kept.line.unit_price,
        vat_mode: kept.line.vat_mode,
        is_active: true,
        created_at: kept.line.created_at,
        updated_at: None,
    };
    Product {
        is_active: true,
        prices: vec![price],
        ..p
    }
}

/// The target plan of an update, priced, with the names the view and the diff show and the
/// coupons new to the plan.
pub(super) struct Priced {
    pub plan: Plan,
    pub names: Names,
    pub new_coupons: Vec<CouponId>,
}

impl<S: Store> Engine<S> {
    /// Prices the plan of an update (see the module).
    pub(super) fn price_target(&self, tx: &mut dyn Tx, scope: &Scope, s: &Subscription, req: &SubscriptionUpdate, now: Timestamp) -> Result<Priced> {
        let branch = s.branch_id;
        let currency = s.currency;
        let on_plan: Vec<CouponId> = s.coupon_ids.iter().chain(s.items.iter().flat_map(|i| &i.line.coupon_ids)).copied().collect();
        let mut names = Names::default();
        let load_coupon = |tx: &mut dyn Tx, id: CouponId, loc: Vec<crate::error::LocPart>, names: &mut Names| -> Result<crate::coupon::Coupon> {
            let mut c = tx.coupon(branch, id)?.ok_or_else(|| Error::not_found("Coupon", id))?;
            if on_plan.contains(&id) {
                c.is_active = true;
            } else {
                check_coupon(&c, currency, loc)?;
            }
            names.coupons.insert(id, c.name.clone());
            Ok(c)
        };
        let mut loaded = Loaded {
            products: Vec::with_capacity(req.items.len()),
            item_coupons: Vec::with_capacity(req.items.len()),
            coupons: Vec::with_capacity(req.coupons.len()),
        };
        for (i, it) in req.items.iter().enumerate() {
            let p = tx.product(branch, it.product_id)?.ok_or_else(|| Error::not_found("Product", it.product_id))?;
            names.products.insert(p.id, p.name.clone());
            let p = match s.items.iter().find(|x| x.line.product_id == p.id) {
                Some(kept) => grandfathered(p, kept),
                None => {
                    check_product(&p, currency, i)?;
                    p
                }
            };
            let mut cs = Vec::with_capacity(it.coupons.len());
            for (k, id) in it.coupons.iter().enumerate() {
                cs.push(load_coupon(tx, *id, coupon_loc(Some(i), k), &mut names)?);
            }
            loaded.products.push(p);
            loaded.item_coupons.push(cs);
        }
        for (k, id) in req.coupons.iter().enumerate() {
            let c = load_coupon(tx, *id, coupon_loc(None, k), &mut names)?;
            loaded.coupons.push(c);
        }
        let (interval, count) = interval_of(&loaded.products)?;
        check_interval(req, interval, count)?;
        let lines: Vec<ItemRequest> = req.items.iter().map(SubscriptionItemRequest::pricing_line).collect();
        let priced = pricing::price(&lines, &loaded, currency, scope.org.settings.vat_rate)?;
        // A line of a product already on the plan keeps its item (id and creation time).
        let mut reused: Vec<SubscriptionItemId> = vec![];
        let items = priced
            .items
            .iter()
            .map(|p| {
                let kept = s.items.iter().find(|x| x.line.product_id == p.product_id && !reused.contains(&x.id));
                let (id, created_at, updated_at) = match kept {
                    Some(k) => {
                        reused.push(k.id);
                        (k.id, k.line.created_at, k.updated_at)
                    }
                    None => (SubscriptionItemId::new(), now, None),
                };
                SubscriptionItem {
                    id,
                    line: InvoiceItem::from_priced(p, InvoiceItemId(id.0), created_at),
                    updated_at,
                }
            })
            .collect();
        // Names of what leaves the plan, for the diff.
        for it in &s.items {
            if let std::collections::btree_map::Entry::Vacant(e) = names.products.entry(it.line.product_id) {
                let name = tx.product(branch, it.line.product_id)?.map(|p| p.name);
                e.insert(name.unwrap_or_else(|| it.line.product_id.to_string()));
            }
            for c in &it.line.coupons {
                names.coupons.entry(c.coupon_id).or_insert_with(|| c.name.clone());
            }
        }
        for c in &s.coupons {
            names.coupons.entry(c.coupon_id).or_insert_with(|| c.name.clone());
        }
        let t = &priced.totals;
        Ok(Priced {
            plan: Plan {
                items,
                coupon_ids: req.coupons.clone(),
                coupons: t.coupons.clone(),
                original_amount: t.original_amount,
                item_level_discounted_amount: t.item_level_discounted_amount,
                total_vat_amount: t.total_vat_amount,
                total_price_excluding_vat: t.total_price_excluding_vat,
                amount: t.total_amount,
                recurring_interval: interval,
                recurring_interval_count: count,
            },
            names,
            new_coupons: priced.redeemed.into_iter().filter(|c| !on_plan.contains(c)).collect(),
        })
    }
}
