//! Subscriptions with their items and billed cycles: `billing_model::subscription::SubscriptionTx`.
//! Money is kept in thousandths beside the subscription's currency; an item's amounts are in its
//! subscription's currency.

use crate::priced_line::LineTable;
use crate::sql::*;
use billing_model::ids::{BranchId, ConsumerId, InvoiceId, SubscriptionId};
use billing_model::list::{ListQuery, Page};
use billing_model::money::Money;
use billing_model::pricing::totals::{lines_from_stored, lines_to_stored};
use billing_model::product::RecurringInterval;
use billing_model::store::StoreResult;
use billing_model::subscription::*;
use rusqlite::types::Value as SqlValue;
use serde_json::Value;

fn n_opt(v: Option<u32>) -> SqlValue {
    v.map(|n| i(i64::from(n))).unwrap_or(SqlValue::Null)
}

fn get_n_opt(r: &rusqlite::Row, at: usize) -> rusqlite::Result<Option<u32>> {
    r.get::<_, Option<i64>>(at)?
        .map(|n| u32::try_from(n).map_err(|_| bad(at, format!("count {n} out of range"))))
        .transpose()
}

table! {
    pub Subs in "subscriptions" for Subscription |v, r, at| {
        id: u(v.id) => get_id(r, at)?,
        org_id: u(v.org_id) => get_id(r, at)?,
        branch_id: u(v.branch_id) => get_id(r, at)?,
        user_id: u(v.user_id) => get_id(r, at)?,
        consumer_id: u(v.consumer_id) => get_id(r, at)?,
        description: s_opt(v.description.as_deref()) => r.get(at)?,
        currency: s(v.currency.code()) => get_currency(r, at)?,
        status: s(v.status.as_str()) => get_parsed(r, at, SubscriptionStatus::parse)?,
        recurring_interval: s(v.recurring_interval.as_str()) => get_parsed(r, at, RecurringInterval::parse)?,
        recurring_interval_count: i(i64::from(v.recurring_interval_count)) => get_count(r, at)?,
        period_anchor: t(&v.period_anchor) => get_ts(r, at)?,
        anchor_cycle: i(i64::from(v.anchor_cycle)) => get_count(r, at)?,
        current_cycle_number: i(i64::from(v.current_cycle_number)) => get_count(r, at)?,
        current_period_start: t(&v.current_period_start) => get_ts(r, at)?,
        current_period_end: t(&v.current_period_end) => get_ts(r, at)?,
        cancel_at_period_end: b(v.cancel_at_period_end) => r.get(at)?,
        until_cycle_number: n_opt(v.until_cycle_number) => get_n_opt(r, at)?,
        started_at: t_opt(&v.started_at) => get_ts_opt(r, at)?,
        ended_at: t_opt(&v.ended_at) => get_ts_opt(r, at)?,
        latest_invoice_id: u_opt(v.latest_invoice_id) => get_id_opt(r, at)?,
        latest_invoice_paid: b(v.latest_invoice_paid) => r.get(at)?,
        renewal_failures: i(i64::from(v.renewal_failures)) => get_count(r, at)?,
        notify_consumer: b(v.notify_consumer) => r.get(at)?,
        exclude_coupons_if_installments: b(v.exclude_coupons_if_installments) => r.get(at)?,
        payment_methods: j(&v.payment_methods) => get_json(r, at)?,
        coupon_ids: j(&v.coupon_ids) => get_json(r, at)?,
        coupons: j(&lines_to_stored(&v.coupons)?) => get_json::<Value>(r, at)?,
        original_amount: m(&v.original_amount)? => r.get::<_, i64>(at)?,
        item_level_discounted_amount: m(&v.item_level_discounted_amount)? => r.get::<_, i64>(at)?,
        total_vat_amount: m(&v.total_vat_amount)? => r.get::<_, i64>(at)?,
        total_price_excluding_vat: m(&v.total_price_excluding_vat)? => r.get::<_, i64>(at)?,
        amount: m(&v.amount)? => r.get::<_, i64>(at)?,
        created_at: t(&v.created_at) => get_ts(r, at)?,
        updated_at: t_opt(&v.updated_at) => get_ts_opt(r, at)?,
    } => Subscription {
        id, org_id, branch_id, user_id, consumer_id, description, currency, status, recurring_interval,
        recurring_interval_count, period_anchor, anchor_cycle, current_cycle_number, current_period_start, current_period_end,
        cancel_at_period_end, until_cycle_number, started_at, ended_at, latest_invoice_id, latest_invoice_paid,
        renewal_failures, notify_consumer, exclude_coupons_if_installments, payment_methods, coupon_ids,
        coupons: lines_from_stored(&coupons, currency),
        original_amount: Money::from_stored(original_amount, currency),
        item_level_discounted_amount: Money::from_stored(item_level_discounted_amount, currency),
        total_vat_amount: Money::from_stored(total_vat_amount, currency),
        total_price_excluding_vat: Money::from_stored(total_price_excluding_vat, currency),
        amount: Money::from_stored(amount, currency),
        items: vec![], created_at, updated_at,
    }
}

/// A subscription's items (see `crate::priced_line`), with when each was last changed.
static ITEMS: LineTable = LineTable::new("subscription_items", "subscription_id", "subscriptions", &["updated_at"]);

impl SqliteTx<'_> {
    fn with_sub_items(&self, mut v: Subscription) -> StoreResult<Subscription> {
        v.items = self.lines(&ITEMS, v.id, |line, r, at| {
            Ok(SubscriptionItem {
                id: line.id.0.into(),
                line,
                updated_at: get_ts_opt(r, at)?,
            })
        })?;
        Ok(v)
    }

    fn write_sub_items(&self, v: &Subscription) -> StoreResult<()> {
        self.write_lines(&ITEMS, v.id, true, v.items.iter().map(|it| (it.id.0, &it.line, vec![t_opt(&it.updated_at)])))
    }
}

impl SubscriptionTx for SqliteTx<'_> {
    fn insert_subscription(&mut self, v: &Subscription) -> StoreResult<()> {
        self.exec(&Subs::sql().insert, Subs::params(v)?)?;
        self.write_sub_items(v)
    }

    fn subscription(&mut self, branch: BranchId, id: SubscriptionId) -> StoreResult<Option<Subscription>> {
        let found = self.one(
            sql!("SELECT {} FROM subscriptions WHERE id = ?1 AND branch_id = ?2", Subs::sql().select),
            vec![u(id), u(branch)],
            Subs::row,
        )?;
        found.map(|v| self.with_sub_items(v)).transpose()
    }

    fn subscription_row(&mut self, branch: BranchId, id: SubscriptionId) -> StoreResult<Option<Subscription>> {
        self.one(
            sql!("SELECT {} FROM subscriptions WHERE id = ?1 AND branch_id = ?2", Subs::sql().select),
            vec![u(id), u(branch)],
            Subs::row,
        )
    }

    fn update_subscription(&mut self, v: &Subscription) -> StoreResult<()> {
        self.update_one(&Subs::sql().update, Subs::params(v)?, "subscription")?;
        self.write_sub_items(v)
    }

    fn update_subscription_row(&mut self, v: &Subscription) -> StoreResult<()> {
        self.update_one(&Subs::sql().update, Subs::params(v)?, "subscription")
    }

    /// One UPDATE: a paid renewal neither reads nor rewrites the row.
    fn mark_latest_invoice_paid(
        &mut self,
        branch: BranchId,
        id: SubscriptionId,
        invoice: InvoiceId,
        statuses: &[SubscriptionStatus],
        at: billing_model::clock::Timestamp,
    ) -> StoreResult<bool> {
        if statuses.is_empty() {
            return Ok(false);
        }
        // The statuses as one text (",ACTIVE,INACTIVE,") matched with instr: an IN list of
        // parameters builds a temporary index at every execution, which made this one-row
        // UPDATE, run by every paid renewal, cost twice a full rewrite of the row. The commas on
        // both sides make it an exact match (",ACTIVE," is not in ",INACTIVE,").
        let listed: String = statuses.iter().fold(String::from(","), |acc, x| acc + x.as_str() + ",");
        let n = self.exec(
            "UPDATE subscriptions SET latest_invoice_paid = 1, updated_at = ?1 \
             WHERE id = ?2 AND branch_id = ?3 AND latest_invoice_id = ?4 AND latest_invoice_paid = 0 \
             AND instr(?5, ',' || status || ',') > 0",
            vec![t(&at), u(id), u(branch), u(invoice), s(listed)],
        )?;
        Ok(n == 1)
    }

    fn list_subscriptions(&mut self, branch: BranchId, q: &ListQuery<SubscriptionSort>, f: &SubscriptionFilter) -> StoreResult<Page<Subscription>> {
        let mut w = Filter::new("FROM subscriptions WHERE branch_id = ?1", vec![u(branch)]);
        if let Some(term) = &q.search {
            let n = w.next();
            w.folded(
                &["description"],
                term,
                &format!(
                    " OR EXISTS (SELECT 1 FROM subscription_items i JOIN products p ON p.id = i.product_id \
                     WHERE i.subscription_id = subscriptions.id AND contains_folded(p.name, ?{n}))"
                ),
            );
        }
        if !f.statuses.is_empty() {
            w.any("status", f.statuses.iter().map(|x| s(x.as_str())).collect());
        }
        if let Some(x) = f.latest_invoice_is_paid {
            w.cmp("latest_invoice_paid =", b(x));
        }
        for (col, x) in [
            ("created_at >=", &f.from_date),
            ("created_at <=", &f.to_date),
            ("current_period_start >=", &f.current_period_start_from),
            ("current_period_start <=", &f.current_period_start_to),
            ("current_period_end >=", &f.current_period_end_from),
            ("current_period_end <=", &f.current_period_end_to),
        ] {
            if let Some(x) = x {
                w.cmp(col, t(x));
            }
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
        if !f.currencies.is_empty() {
            w.any("currency", f.currencies.iter().map(|c| s(c.code())).collect());
        }
        if !f.product_ids.is_empty() {
            let mut inner = Filter::new("", std::mem::take(&mut w.params));
            inner.any("i.product_id", f.product_ids.iter().map(|p| u(*p)).collect());
            w.sql.push_str(&format!(
                " AND EXISTS (SELECT 1 FROM subscription_items i WHERE i.subscription_id = subscriptions.id{})",
                inner.sql
            ));
            w.params = inner.params;
        }
        let order = match q.sort {
            SubscriptionSort::CreatedAt => "created_at",
            SubscriptionSort::UpdatedAt => "updated_at",
            SubscriptionSort::Amount => "amount",
            SubscriptionSort::CurrentPeriodStart => "current_period_start",
            SubscriptionSort::CurrentPeriodEnd => "current_period_end",
            SubscriptionSort::Status => "status",
        };
        let paging = Paging {
            order,
            dir: q.direction,
            page: q.page,
            limit: q.limit,
        };
        let Page { items, total, page, limit } = self.page(sql!("SELECT {}", Subs::sql().select), &w, paging, Subs::row)?;
        let items = items.into_iter().map(|v| self.with_sub_items(v)).collect::<StoreResult<_>>()?;
        Ok(Page { items, total, page, limit })
    }

    fn consumer_has_subscriptions_in(&mut self, branch: BranchId, consumer: ConsumerId, statuses: &[SubscriptionStatus]) -> StoreResult<bool> {
        let mut w = Filter::new("FROM subscriptions WHERE branch_id = ?1 AND consumer_id = ?2", vec![u(branch), u(consumer)]);
        w.any("status", statuses.iter().map(|x| s(x.as_str())).collect());
        Ok(self.count(&format!("SELECT COUNT(*) {}", w.sql), w.params)? > 0)
    }

    fn insert_subscription_cycle(&mut self, subscription: SubscriptionId, cycle: u32, invoice: InvoiceId) -> StoreResult<()> {
        self.exec(
            "INSERT INTO subscription_cycles (subscription_id, cycle_number, invoice_id) VALUES (?1, ?2, ?3)",
            vec![u(subscription), i(i64::from(cycle)), u(invoice)],
        )
        .map(drop)
    }

    fn subscription_cycles(&mut self, subscription: SubscriptionId) -> StoreResult<Vec<(u32, InvoiceId)>> {
        self.all(
            "SELECT cycle_number, invoice_id FROM subscription_cycles WHERE subscription_id = ?1 ORDER BY cycle_number",
            vec![u(subscription)],
            |r| Ok((get_count(r, 0)?, get_id(r, 1)?)),
        )
    }
}
