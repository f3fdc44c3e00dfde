//! Invoices with their items, and the per-organization invoice counter:
//! `billing_model::invoice::InvoiceTx`. Money is kept in thousandths beside the invoice's
//! currency; an item's amounts are in its invoice's currency.

use crate::priced_line::LineTable;
use crate::sql::*;
use billing_model::ids::{BranchId, ConsumerId, InvoiceId, OrgId};
use billing_model::invoice::{Invoice, InvoiceFilter, InvoiceSort, InvoiceStatus, InvoiceTx};
use billing_model::list::{ListQuery, Page};
use billing_model::money::Money;
use billing_model::pricing::totals::{lines_from_stored, lines_to_stored};
use billing_model::store::StoreResult;
use serde_json::Value;

table! {
    pub Invoices in "invoices" for Invoice |v, r, at| {
        id: u(v.id) => get_id(r, at)?,
        org_id: u(v.org_id) => get_id(r, at)?,
        branch_id: u(v.branch_id) => get_id(r, at)?,
        user_id: u(v.user_id) => get_id(r, at)?,
        consumer_id: u(v.consumer_id) => get_id(r, at)?,
        org_invoice_number: i(v.org_invoice_number) => r.get(at)?,
        description: s_opt(v.description.as_deref()) => r.get(at)?,
        currency: s(v.currency.code()) => get_currency(r, at)?,
        status: s(v.status.as_str()) => get_parsed(r, at, InvoiceStatus::parse)?,
        payment_methods: j(&v.payment_methods) => get_json(r, at)?,
        coupon_ids: j(&v.coupon_ids) => get_json(r, at)?,
        exclude_coupons_if_installments: b(v.exclude_coupons_if_installments) => r.get(at)?,
        notify_consumer: b(v.notify_consumer) => r.get(at)?,
        scheduled_on: t(&v.scheduled_on) => get_ts(r, at)?,
        original_amount: m(&v.original_amount)? => r.get::<_, i64>(at)?,
        item_level_discounted_amount: m(&v.item_level_discounted_amount)? => r.get::<_, i64>(at)?,
        total_vat_amount: m(&v.total_vat_amount)? => r.get::<_, i64>(at)?,
        total_price_excluding_vat: m(&v.total_price_excluding_vat)? => r.get::<_, i64>(at)?,
        total_amount: m(&v.total_amount)? => r.get::<_, i64>(at)?,
        paid_amount: m(&v.paid_amount)? => r.get::<_, i64>(at)?,
        coupons: j(&lines_to_stored(&v.coupons)?) => get_json::<Value>(r, at)?,
        installments: v.installments.map(|n| i(i64::from(n))).unwrap_or(rusqlite::types::Value::Null) => r.get::<_, Option<i64>>(at)?.map(|n| n as u8),
        payment_link_id: u_opt(v.payment_link_id) => r.get(at)?,
        subscription_id: u_opt(v.subscription_id) => r.get(at)?,
        created_at: t(&v.created_at) => get_ts(r, at)?,
        updated_at: t_opt(&v.updated_at) => get_ts_opt(r, at)?,
    } => Invoice {
        id, org_id, branch_id, user_id, consumer_id, org_invoice_number, description, currency, status, payment_methods,
        coupon_ids, exclude_coupons_if_installments, notify_consumer, scheduled_on,
        original_amount: Money::from_stored(original_amount, currency),
        item_level_discounted_amount: Money::from_stored(item_level_discounted_amount, currency),
        total_vat_amount: Money::from_stored(total_vat_amount, currency),
        total_price_excluding_vat: Money::from_stored(total_price_excluding_vat, currency),
        total_amount: Money::from_stored(total_amount, currency),
        paid_amount: Money::from_stored(paid_amount, currency),
        coupons: lines_from_stored(&coupons, currency),
        installments, payment_link_id, subscription_id, items: vec![], created_at, updated_at,
    }
}

/// An invoice's items (see `crate::priced_line`).
static ITEMS: LineTable = LineTable::new("invoice_items", "invoice_id", "invoices", &[]);

impl SqliteTx<'_> {
    fn with_items(&self, mut inv: Invoice) -> StoreResult<Invoice> {
        inv.items = self.lines(&ITEMS, inv.id, |line, _, _| Ok(line))?;
        Ok(inv)
    }

    /// Writes the invoice's lines: replaces them, or for a `new` invoice (which has none yet)
    /// only inserts them.
    fn write_items(&self, inv: &Invoice, new: bool) -> StoreResult<()> {
        self.write_lines(&ITEMS, inv.id, !new, inv.items.iter().map(|it| (it.id.0, it, vec![])))
    }
}

impl SqliteTx<'_> {
    /// Gives back the invoice numbers this batch took ahead and did not hand out (see
    /// `crate::numbers`), before it commits.
    pub fn give_back_numbers(&self) -> StoreResult<()> {
        crate::numbers::give_back(self.conn(), |org, left| {
            self.update_one(
                "UPDATE invoice_counters SET last_number = last_number - ?2 WHERE org_id = ?1",
                vec![u(org), i(left)],
                "invoice counter",
            )
        })
    }
}

impl InvoiceTx for SqliteTx<'_> {
    fn next_invoice_number(&mut self, org: OrgId) -> StoreResult<i64> {
        // One number, or a batch's worth taken ahead (see `crate::numbers`).
        crate::numbers::next(self.conn(), org, |take| {
            // The counter exists after the organization's first invoice: a keyed UPDATE, about a
            // third of the upsert's work (which tries the insert, with its foreign key, every time).
            let last = self.one(
                "UPDATE invoice_counters SET last_number = last_number + ?2 WHERE org_id = ?1 RETURNING last_number",
                vec![u(org), i(take)],
                |r| r.get::<_, i64>(0),
            )?;
            match last {
                Some(n) => Ok(n),
                None => self
                    .one(
                        "INSERT INTO invoice_counters (org_id, last_number) VALUES (?1, ?2)
                         ON CONFLICT(org_id) DO UPDATE SET last_number = last_number + ?2 RETURNING last_number",
                        vec![u(org), i(take)],
                        |r| r.get::<_, i64>(0),
                    )?
                    .ok_or_else(|| billing_model::error::StoreError::backend("invoice counter returned no row")),
            }
        })
    }

    fn insert_invoice(&mut self, inv: &Invoice) -> StoreResult<()> {
        self.exec(&Invoices::sql().insert, Invoices::params(inv)?)?;
        self.write_items(inv, true)
    }

    fn invoice(&mut self, branch: BranchId, id: InvoiceId) -> StoreResult<Option<Invoice>> {
        let found = self.one(
            sql!("SELECT {} FROM invoices WHERE id = ?1 AND branch_id = ?2", Invoices::sql().select),
            vec![u(id), u(branch)],
            Invoices::row,
        )?;
        found.map(|inv| self.with_items(inv)).transpose()
    }

    fn invoice_by_id(&mut self, id: InvoiceId) -> StoreResult<Option<Invoice>> {
        let found = self.one(
            sql!("SELECT {} FROM invoices WHERE id = ?1", Invoices::sql().select),
            vec![u(id)],
            Invoices::row,
        )?;
        found.map(|inv| self.with_items(inv)).transpose()
    }

    fn update_invoice(&mut self, inv: &Invoice) -> StoreResult<()> {
        self.update_invoice_row(inv)?;
        self.write_items(inv, false)
    }

    fn update_invoice_row(&mut self, inv: &Invoice) -> StoreResult<()> {
        self.update_one(&Invoices::sql().update, Invoices::params(inv)?, "invoice")
    }

    fn list_invoices(&mut self, branch: BranchId, q: &ListQuery<InvoiceSort>, f: &InvoiceFilter) -> StoreResult<Page<Invoice>> {
        let mut w = Filter::new("FROM invoices WHERE branch_id = ?1", vec![u(branch)]);
        if let Some(term) = &q.search {
            let n = w.next();
            let number = term.trim().parse::<i64>().ok();
            w.sql.push_str(&format!(
                " AND (contains_folded(description, ?{n}) OR EXISTS (SELECT 1 FROM consumers c WHERE c.id = invoices.consumer_id AND contains_folded(c.name, ?{n})){})",
                if number.is_some() { format!(" OR org_invoice_number = ?{}", n + 1) } else { String::new() }
            ));
            w.params.push(s(term.to_lowercase()));
            if let Some(num) = number {
                w.params.push(i(num));
            }
        }
        if !f.statuses.is_empty() {
            w.any("status", f.statuses.iter().map(|x| s(x.as_str())).collect());
        }
        for pm in &f.has_payments {
            let mut inner = Filter::new("", std::mem::take(&mut w.params));
            if !pm.statuses.is_empty() {
                inner.any("p.status", pm.statuses.iter().map(|x| s(x.as_str())).collect());
            }
            if !pm.methods.is_empty() {
                inner.any("p.method", pm.methods.iter().map(|x| s(x.as_str())).collect());
            }
            w.sql
                .push_str(&format!(" AND EXISTS (SELECT 1 FROM payments p WHERE p.invoice_id = invoices.id{})", inner.sql));
            w.params = inner.params;
        }
        if let Some(x) = f.payment_link_id {
            w.cmp("payment_link_id =", u(x));
        }
        if let Some(x) = f.subscription_id {
            w.cmp("subscription_id =", u(x));
        }
        if let Some(x) = f.consumer_id {
            w.cmp("consumer_id =", u(x));
        }
        if let Some(x) = &f.from_date {
            w.cmp("created_at >=", t(x));
        }
        if let Some(x) = &f.to_date {
            w.cmp("created_at <=", t(x));
        }
        if let Some(x) = &f.due_date_from {
            w.cmp("scheduled_on >=", t(x));
        }
        if let Some(x) = &f.due_date_to {
            w.cmp("scheduled_on <=", t(x));
        }
        if let Some(x) = f.from_price {
            w.cmp("total_amount >=", i(billing_model::money::stored_bound(x, true)));
        }
        if let Some(x) = f.to_price {
            w.cmp("total_amount <=", i(billing_model::money::stored_bound(x, false)));
        }
        if !f.currencies.is_empty() {
            w.any("currency", f.currencies.iter().map(|c| s(c.code())).collect());
        }
        let order = match q.sort {
            InvoiceSort::CreatedAt => "created_at",
            InvoiceSort::UpdatedAt => "updated_at",
            InvoiceSort::TotalAmount => "total_amount",
            InvoiceSort::OrgInvoiceNumber => "org_invoice_number",
            InvoiceSort::ScheduledOn => "scheduled_on",
            InvoiceSort::Status => "status",
        };
        let paging = Paging {
            order,
            dir: q.direction,
            page: q.page,
            limit: q.limit,
        };
        let Page { items, total, page, limit } = self.page(sql!("SELECT {}", Invoices::sql().select), &w, paging, Invoices::row)?;
        let items = items.into_iter().map(|inv| self.with_items(inv)).collect::<StoreResult<_>>()?;
        Ok(Page { items, total, page, limit })
    }

    fn consumer_has_invoices_in(&mut self, branch: BranchId, consumer: ConsumerId, statuses: &[InvoiceStatus]) -> StoreResult<bool> {
        let mut w = Filter::new("FROM invoices WHERE branch_id = ?1 AND consumer_id = ?2", vec![u(branch), u(consumer)]);
        w.any("status", statuses.iter().map(|x| s(x.as_str())).collect());
        Ok(self.count(&format!("SELECT COUNT(*) {}", w.sql), w.params)? > 0)
    }
}
