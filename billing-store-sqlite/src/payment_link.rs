//! Payment links with their items: `billing_model::payment_link::PaymentLinkTx`. Money is kept
//! in thousandths beside the link's currency; an item's amounts are in its link's currency.

use crate::priced_line::LineTable;
use crate::sql::*;
use billing_model::coupon::Coupon;
use billing_model::ids::{BranchId, ConsumerId, CouponId, PaymentLinkId, ProductId};
use billing_model::invoice::InvoiceItem;
use billing_model::list::{ListQuery, Page};
use billing_model::money::Money;
use billing_model::payment_link::*;
use billing_model::pricing::totals::{lines_from_stored, lines_to_stored};
use billing_model::product::{Product, RecurringInterval};
use billing_model::store::StoreResult;
use rusqlite::types::Value as SqlValue;
use serde_json::{Map, Value};
use uuid::Uuid;

/// An optional count.
fn n_opt(v: Option<u32>) -> SqlValue {
    v.map(|n| i(i64::from(n))).unwrap_or(SqlValue::Null)
}

fn get_n_opt(r: &rusqlite::Row, at: usize) -> rusqlite::Result<Option<u32>> {
    r.get::<_, Option<i64>>(at)?
        .map(|n| u32::try_from(n).map_err(|_| bad(at, format!("count {n} out of range"))))
        .transpose()
}

table! {
    pub Links in "payment_links" for PaymentLink |l, r, at| {
        id: u(l.id) => get_id(r, at)?,
        org_id: u(l.org_id) => get_id(r, at)?,
        branch_id: u(l.branch_id) => get_id(r, at)?,
        user_id: u(l.user_id) => get_id(r, at)?,
        short_id: s(&l.short_id) => r.get(at)?,
        name: s(&l.name) => r.get(at)?,
        description: s_opt(l.description.as_deref()) => r.get(at)?,
        currency: s(l.currency.code()) => get_currency(r, at)?,
        status: s(l.status.as_str()) => get_parsed(r, at, PaymentLinkStatus::parse)?,
        deactivate_message: s_opt(l.deactivate_message.as_deref()) => r.get(at)?,
        consumer_id: u_opt(l.consumer_id) => get_id_opt(r, at)?,
        contact_information_type: s(l.contact_information_type.as_str()) => get_parsed(r, at, ContactInformationType::parse)?,
        max_number_of_payments: n_opt(l.max_number_of_payments) => get_n_opt(r, at)?,
        payments_count: i(i64::from(l.payments_count)) => get_count(r, at)?,
        amount_collected: m(&l.amount_collected)? => r.get::<_, i64>(at)?,
        valid_until: t_opt(&l.valid_until) => get_ts_opt(r, at)?,
        checkout: j(&l.checkout) => get_json(r, at)?,
        custom_metadata: j(&l.custom_metadata) => get_json::<Map<String, Value>>(r, at)?,
        payment_methods: j(&l.payment_methods) => get_json(r, at)?,
        recurring_interval: s_opt(l.recurring_interval.map(|x| x.as_str())) => get_parsed_opt(r, at, RecurringInterval::parse)?,
        recurring_interval_count: n_opt(l.recurring_interval_count) => get_n_opt(r, at)?,
        coupon_ids: j(&l.coupon_ids) => get_json(r, at)?,
        coupons: j(&lines_to_stored(&l.coupons)?) => get_json::<Value>(r, at)?,
        original_amount: m(&l.original_amount)? => r.get::<_, i64>(at)?,
        item_level_discounted_amount: m(&l.item_level_discounted_amount)? => r.get::<_, i64>(at)?,
        total_vat_amount: m(&l.total_vat_amount)? => r.get::<_, i64>(at)?,
        total_price_excluding_vat: m(&l.total_price_excluding_vat)? => r.get::<_, i64>(at)?,
        amount: m(&l.amount)? => r.get::<_, i64>(at)?,
        created_at: t(&l.created_at) => get_ts(r, at)?,
        updated_at: t_opt(&l.updated_at) => get_ts_opt(r, at)?,
    } => PaymentLink {
        id, org_id, branch_id, user_id, short_id, name, description, currency, status, deactivate_message, consumer_id,
        contact_information_type, max_number_of_payments, payments_count,
        amount_collected: Money::from_stored(amount_collected, currency),
        valid_until, checkout, custom_metadata, payment_methods, recurring_interval, recurring_interval_count, coupon_ids,
        coupons: lines_from_stored(&coupons, currency),
        original_amount: Money::from_stored(original_amount, currency),
        item_level_discounted_amount: Money::from_stored(item_level_discounted_amount, currency),
        total_vat_amount: Money::from_stored(total_vat_amount, currency),
        total_price_excluding_vat: Money::from_stored(total_price_excluding_vat, currency),
        amount: Money::from_stored(amount, currency),
        items: vec![], created_at, updated_at,
    }
}

/// A link's items (see `crate::priced_line`), with the quantities a payer may choose and when
/// each was last changed.
static ITEMS: LineTable = LineTable::new(
    "payment_link_items",
    "link_id",
    "payment_links",
    &["allow_custom_quantity", "min_quantity", "max_quantity", "updated_at"],
);

table! {
    pub Attempts in "payment_link_attempts" for LinkAttempt |a, r, at| {
        id: u(a.id) => r.get::<_, Uuid>(at)?,
        org_id: u(a.org_id) => get_id(r, at)?,
        branch_id: u(a.branch_id) => get_id(r, at)?,
        link_id: u(a.link_id) => get_id(r, at)?,
        session_key: s(&a.session_key) => r.get(at)?,
        amount: m(&a.amount)? => r.get::<_, i64>(at)?,
        currency: s(a.amount.currency().code()) => get_currency(r, at)?,
        created_at: t(&a.created_at) => get_ts(r, at)?,
    } => LinkAttempt { id, org_id, branch_id, link_id, session_key, amount: Money::from_stored(amount, currency), created_at }
}

/// A link item of its line and the table's own columns (from `at` on).
fn link_item(line: InvoiceItem, r: &rusqlite::Row, at: usize) -> rusqlite::Result<PaymentLinkItem> {
    Ok(PaymentLinkItem {
        id: line.id.0.into(),
        line,
        allow_custom_quantity: r.get(at)?,
        min_quantity: get_n_opt(r, at + 1)?,
        max_quantity: get_n_opt(r, at + 2)?,
        updated_at: get_ts_opt(r, at + 3)?,
    })
}

impl SqliteTx<'_> {
    fn with_link_items(&self, mut l: PaymentLink) -> StoreResult<PaymentLink> {
        l.items = self.lines(&ITEMS, l.id, link_item)?;
        Ok(l)
    }

    /// The links with their items, read in one statement.
    fn with_links_items(&self, mut links: Vec<PaymentLink>) -> StoreResult<Vec<PaymentLink>> {
        let ids: Vec<Uuid> = links.iter().map(|l| l.id.0).collect();
        for (owner, item) in self.lines_of_many(&ITEMS, &ids, link_item)? {
            if let Some(l) = links.iter_mut().find(|l| l.id.0 == owner) {
                l.items.push(item);
            }
        }
        Ok(links)
    }

    fn write_link_items(&self, l: &PaymentLink) -> StoreResult<()> {
        let own = |it: &PaymentLinkItem| {
            vec![
                b(it.allow_custom_quantity),
                n_opt(it.min_quantity),
                n_opt(it.max_quantity),
                t_opt(&it.updated_at),
            ]
        };
        self.write_lines(&ITEMS, l.id, true, l.items.iter().map(|it| (it.id.0, &it.line, own(it))))
    }
}

impl PaymentLinkTx for SqliteTx<'_> {
    fn insert_payment_link(&mut self, l: &PaymentLink) -> StoreResult<()> {
        self.exec(&Links::sql().insert, Links::params(l)?)?;
        self.write_link_items(l)
    }

    fn payment_link(&mut self, branch: BranchId, id: PaymentLinkId) -> StoreResult<Option<PaymentLink>> {
        let found = self.one(
            sql!("SELECT {} FROM payment_links WHERE id = ?1 AND branch_id = ?2", Links::sql().select),
            vec![u(id), u(branch)],
            Links::row,
        )?;
        found.map(|l| self.with_link_items(l)).transpose()
    }

    fn payment_link_by_short_id(&mut self, short_id: &str) -> StoreResult<Option<PaymentLink>> {
        let found = self.one(
            sql!("SELECT {} FROM payment_links WHERE short_id = ?1", Links::sql().select),
            vec![s(short_id)],
            Links::row,
        )?;
        found.map(|l| self.with_link_items(l)).transpose()
    }

    fn update_payment_link(&mut self, l: &PaymentLink) -> StoreResult<()> {
        self.update_payment_link_row(l)?;
        self.write_link_items(l)
    }

    fn update_payment_link_row(&mut self, l: &PaymentLink) -> StoreResult<()> {
        self.update_one(&Links::sql().update, Links::params(l)?, "payment link")
    }

    fn payment_link_metadata(&mut self, branch: BranchId, id: PaymentLinkId) -> StoreResult<Option<Map<String, Value>>> {
        self.one(
            "SELECT custom_metadata FROM payment_links WHERE id = ?1 AND branch_id = ?2",
            vec![u(id), u(branch)],
            |r| get_json::<Map<String, Value>>(r, 0),
        )
    }

    fn add_payment_link_collected(&mut self, branch: BranchId, id: PaymentLinkId, amount: Money) -> StoreResult<()> {
        self.update_one(
            "UPDATE payment_links SET amount_collected = amount_collected + ?3 WHERE id = ?1 AND branch_id = ?2",
            vec![u(id), u(branch), m(&amount)?],
            "payment link",
        )
    }

    fn list_payment_links(&mut self, branch: BranchId, q: &ListQuery<PaymentLinkSort>, f: &PaymentLinkFilter) -> StoreResult<Page<PaymentLink>> {
        let mut w = Filter::new("FROM payment_links WHERE branch_id = ?1", vec![u(branch)]);
        if let Some(term) = &q.search {
            w.folded(&["name", "description"], term, "");
        }
        if !f.statuses.is_empty() {
            w.any("status", f.statuses.iter().map(|x| s(x.as_str())).collect());
        }
        if let Some(x) = &f.from_date {
            w.cmp("created_at >=", t(x));
        }
        if let Some(x) = &f.to_date {
            w.cmp("created_at <=", t(x));
        }
        if let Some(x) = f.from_price {
            w.cmp("amount >=", i(billing_model::money::stored_bound(x, true)));
        }
        if let Some(x) = f.to_price {
            w.cmp("amount <=", i(billing_model::money::stored_bound(x, false)));
        }
        if let Some(x) = f.consumer_id {
            w.cmp("consumer_id =", u(x));
        }
        if !f.product_ids.is_empty() {
            let mut inner = Filter::new("", std::mem::take(&mut w.params));
            inner.any("i.product_id", f.product_ids.iter().map(|p| u(*p)).collect());
            w.sql.push_str(&format!(
                " AND EXISTS (SELECT 1 FROM payment_link_items i WHERE i.link_id = payment_links.id{})",
                inner.sql
            ));
            w.params = inner.params;
        }
        let order = match q.sort {
            PaymentLinkSort::CreatedAt => "created_at",
            PaymentLinkSort::UpdatedAt => "updated_at",
            PaymentLinkSort::Name => "name",
            PaymentLinkSort::Amount => "amount",
        };
        let paging = Paging {
            order,
            dir: q.direction,
            page: q.page,
            limit: q.limit,
        };
        let Page { items, total, page, limit } = self.page(sql!("SELECT {}", Links::sql().select), &w, paging, Links::row)?;
        let items = self.with_links_items(items)?;
        Ok(Page { items, total, page, limit })
    }

    fn link_products(&mut self, branch: BranchId, ids: &[ProductId]) -> StoreResult<Vec<Product>> {
        use crate::product::{Prices, Products};
        if ids.is_empty() {
            return Ok(vec![]);
        }
        let mut w = Filter::new("FROM products WHERE branch_id = ?1 AND is_deleted = 0", vec![u(branch)]);
        w.any("id", ids.iter().map(|x| u(*x)).collect());
        let mut products = self.all(&format!("SELECT {} {}", Products::sql().select, w.sql), w.params, Products::row)?;
        if products.is_empty() {
            return Ok(products);
        }
        let mut p = Filter::new("FROM product_prices WHERE 1 = 1", vec![]);
        p.any("product_id", products.iter().map(|x| u(x.id)).collect());
        let prices = self.all(
            &format!("SELECT {} {} ORDER BY created_at, id", Prices::sql().select, p.sql),
            p.params,
            Prices::row,
        )?;
        for price in prices {
            if let Some(product) = products.iter_mut().find(|x| x.id == price.product_id) {
                product.prices.push(price);
            }
        }
        Ok(products)
    }

    fn link_coupons(&mut self, branch: BranchId, ids: &[CouponId]) -> StoreResult<Vec<Coupon>> {
        use crate::coupon::Coupons;
        if ids.is_empty() {
            return Ok(vec![]);
        }
        let mut w = Filter::new("FROM coupons WHERE branch_id = ?1 AND is_deleted = 0", vec![u(branch)]);
        w.any("id", ids.iter().map(|x| u(*x)).collect());
        self.all(&format!("SELECT {} {}", Coupons::sql().select, w.sql), w.params, Coupons::row)
    }

    fn consumer_has_payment_links_in(&mut self, branch: BranchId, consumer: ConsumerId, statuses: &[PaymentLinkStatus]) -> StoreResult<bool> {
        let mut w = Filter::new("FROM payment_links WHERE branch_id = ?1 AND consumer_id = ?2", vec![u(branch), u(consumer)]);
        w.any("status", statuses.iter().map(|x| s(x.as_str())).collect());
        Ok(self.count(&format!("SELECT COUNT(*) {}", w.sql), w.params)? > 0)
    }

    fn insert_link_attempt(&mut self, a: &LinkAttempt) -> StoreResult<()> {
        self.exec(&Attempts::sql().insert, Attempts::params(a)?).map(drop)
    }

    fn link_attempt(&mut self, id: Uuid) -> StoreResult<Option<LinkAttempt>> {
        self.one(
            sql!("SELECT {} FROM payment_link_attempts WHERE id = ?1", Attempts::sql().select),
            vec![u(id)],
            Attempts::row,
        )
    }

    fn delete_link_attempt(&mut self, id: Uuid) -> StoreResult<bool> {
        Ok(self.exec("DELETE FROM payment_link_attempts WHERE id = ?1", vec![u(id)])? > 0)
    }

    fn count_link_attempts(&mut self, link: PaymentLinkId) -> StoreResult<u64> {
        self.count("SELECT COUNT(*) FROM payment_link_attempts WHERE link_id = ?1", vec![u(link)])
    }
}
