//! Invoices with their items, and the per-organization invoice counter:
//! `billing_model::invoice::InvoiceTx`.

use crate::deferred::{replace_or_push, Pending, Stage};
use crate::prefetch::{Original, ReadAhead};
use crate::priced_line::{line_rows, line_table, LineTable};
use crate::support::*;
use billing_model::error::StoreError;
use billing_model::ids::*;
use billing_model::invoice::*;
use billing_model::list::{Direction, ListQuery, Page};
use billing_model::money::Money;
use billing_model::pricing::totals::{lines_from_stored, lines_to_stored};
use billing_model::store::StoreResult;
use diesel::dsl::sql;
use diesel::pg::Pg;
use diesel::prelude::*;
use diesel::sql_types::{Array, Bool, Text};
use serde_json::Value;
use std::collections::{HashMap, HashSet};

diesel::table! {
    invoices (id) {
        id -> Uuid,
        org_id -> Uuid,
        branch_id -> Uuid,
        user_id -> Uuid,
        consumer_id -> Uuid,
        org_invoice_number -> Int8,
        description -> Nullable<Text>,
        currency -> Text,
        status -> Text,
        payment_methods -> Jsonb,
        coupon_ids -> Jsonb,
        exclude_coupons_if_installments -> Bool,
        notify_consumer -> Bool,
        scheduled_on -> Timestamptz,
        original_amount -> Int8,
        item_level_discounted_amount -> Int8,
        total_vat_amount -> Int8,
        total_price_excluding_vat -> Int8,
        total_amount -> Int8,
        paid_amount -> Int8,
        coupons -> Jsonb,
        installments -> Nullable<Int4>,
        payment_link_id -> Nullable<Uuid>,
        subscription_id -> Nullable<Uuid>,
        created_at -> Timestamptz,
        updated_at -> Nullable<Timestamptz>,
    }
}

line_table! {
    /// An invoice's items (see `crate::priced_line`): no columns of their own.
    invoice_items (invoice_id) as InvoiceItems, rows ItemRow, own ItemOwn {}
}

#[derive(Queryable, Selectable, Insertable, AsChangeset, Debug, serde::Serialize)]
#[diesel(table_name = invoices, treat_none_as_null = true, treat_none_as_default_value = false)]
pub struct InvoiceRow {
    pub id: Uuid,
    pub org_id: Uuid,
    pub branch_id: Uuid,
    pub user_id: Uuid,
    pub consumer_id: Uuid,
    pub org_invoice_number: i64,
    pub description: Option<String>,
    pub currency: String,
    pub status: String,
    pub payment_methods: Value,
    pub coupon_ids: Value,
    pub exclude_coupons_if_installments: bool,
    pub notify_consumer: bool,
    pub scheduled_on: Ts,
    pub original_amount: i64,
    pub item_level_discounted_amount: i64,
    pub total_vat_amount: i64,
    pub total_price_excluding_vat: i64,
    pub total_amount: i64,
    pub paid_amount: i64,
    pub coupons: Value,
    pub installments: Option<i32>,
    pub payment_link_id: Option<Uuid>,
    pub subscription_id: Option<Uuid>,
    pub created_at: Ts,
    pub updated_at: Option<Ts>,
}

impl InvoiceRow {
    pub fn new(v: &Invoice) -> StoreResult<Self> {
        Ok(InvoiceRow {
            id: v.id.0,
            org_id: v.org_id.0,
            branch_id: v.branch_id.0,
            user_id: v.user_id.0,
            consumer_id: v.consumer_id.0,
            org_invoice_number: v.org_invoice_number,
            description: v.description.clone(),
            currency: v.currency.code().into(),
            status: v.status.as_str().into(),
            payment_methods: to_json("payment_methods", &v.payment_methods),
            coupon_ids: to_json("coupon_ids", &v.coupon_ids),
            exclude_coupons_if_installments: v.exclude_coupons_if_installments,
            notify_consumer: v.notify_consumer,
            scheduled_on: v.scheduled_on,
            original_amount: m(v.original_amount)?,
            item_level_discounted_amount: m(v.item_level_discounted_amount)?,
            total_vat_amount: m(v.total_vat_amount)?,
            total_price_excluding_vat: m(v.total_price_excluding_vat)?,
            total_amount: m(v.total_amount)?,
            paid_amount: m(v.paid_amount)?,
            coupons: lines_to_stored(&v.coupons)?,
            installments: v.installments.map(i32::from),
            payment_link_id: v.payment_link_id,
            subscription_id: v.subscription_id,
            created_at: v.created_at,
            updated_at: v.updated_at,
        })
    }

    pub fn into_domain(self, items: Vec<InvoiceItem>) -> StoreResult<Invoice> {
        let c = currency(&self.currency)?;
        let mo = |x: i64| Money::from_stored(x, c);
        Ok(Invoice {
            id: self.id.into(),
            org_id: self.org_id.into(),
            branch_id: self.branch_id.into(),
            user_id: self.user_id.into(),
            consumer_id: self.consumer_id.into(),
            org_invoice_number: self.org_invoice_number,
            description: self.description,
            currency: c,
            status: parsed("invoice status", &self.status, InvoiceStatus::parse)?,
            payment_methods: from_json("payment methods", self.payment_methods)?,
            coupon_ids: from_json("coupon ids", self.coupon_ids)?,
            exclude_coupons_if_installments: self.exclude_coupons_if_installments,
            notify_consumer: self.notify_consumer,
            scheduled_on: self.scheduled_on,
            original_amount: mo(self.original_amount),
            item_level_discounted_amount: mo(self.item_level_discounted_amount),
            total_vat_amount: mo(self.total_vat_amount),
            total_price_excluding_vat: mo(self.total_price_excluding_vat),
            total_amount: mo(self.total_amount),
            paid_amount: mo(self.paid_amount),
            coupons: lines_from_stored(&self.coupons, c),
            installments: self.installments.map(|n| n as u8),
            payment_link_id: self.payment_link_id,
            subscription_id: self.subscription_id,
            items,
            created_at: self.created_at,
            updated_at: self.updated_at,
        })
    }
}

fn invoices_matching<'a>(branch: uuid::Uuid, q: &'a ListQuery<InvoiceSort>, f: &'a InvoiceFilter, coll: &'static str) -> invoices::BoxedQuery<'a, Pg> {
    use invoices::dsl as i;
    let mut query = i::invoices.filter(i::branch_id.eq(branch)).into_boxed();
    if let Some(term) = &q.search {
        let pattern = contains_pattern(term);
        let number = term.trim().parse::<i64>().unwrap_or(-1);
        let like = |col: &str| folded(col, coll);
        let end = close(coll);
        query = query.filter(
            sql::<Bool>(&format!("({}", like("invoices.description")))
                .bind::<Text, _>(pattern.clone())
                .sql(&format!(
                    "{} OR EXISTS (SELECT 1 FROM consumers c WHERE c.id = invoices.consumer_id AND {}",
                    end,
                    like("c.name")
                ))
                .bind::<Text, _>(pattern)
                .sql(&format!("{}) OR invoices.org_invoice_number = ", end))
                .bind::<diesel::sql_types::Int8, _>(number)
                .sql(")"),
        );
    }
    if !f.statuses.is_empty() {
        query = query.filter(i::status.eq_any(f.statuses.iter().map(|s| s.as_str().to_string()).collect::<Vec<_>>()));
    }
    for m in &f.has_payments {
        // An empty list matches every value (`cardinality(...) = 0`).
        let statuses: Vec<String> = m.statuses.iter().map(|s| s.as_str().to_string()).collect();
        let methods: Vec<String> = m.methods.iter().map(|s| s.as_str().to_string()).collect();
        query = query.filter(
            sql::<Bool>("EXISTS (SELECT 1 FROM payments p WHERE p.invoice_id = invoices.id AND (cardinality(")
                .bind::<Array<Text>, _>(statuses.clone())
                .sql(") = 0 OR p.status = ANY(")
                .bind::<Array<Text>, _>(statuses)
                .sql(")) AND (cardinality(")
                .bind::<Array<Text>, _>(methods.clone())
                .sql(") = 0 OR p.method = ANY(")
                .bind::<Array<Text>, _>(methods)
                .sql(")))"),
        );
    }
    if let Some(x) = f.payment_link_id {
        query = query.filter(i::payment_link_id.eq(x));
    }
    if let Some(x) = f.subscription_id {
        query = query.filter(i::subscription_id.eq(x));
    }
    if let Some(x) = f.consumer_id {
        query = query.filter(i::consumer_id.eq(x.0));
    }
    if let Some(x) = f.from_date {
        query = query.filter(i::created_at.ge(x));
    }
    if let Some(x) = f.to_date {
        query = query.filter(i::created_at.le(x));
    }
    if let Some(x) = f.due_date_from {
        query = query.filter(i::scheduled_on.ge(x));
    }
    if let Some(x) = f.due_date_to {
        query = query.filter(i::scheduled_on.le(x));
    }
    if let Some(x) = f.from_price {
        query = query.filter(i::total_amount.ge(billing_model::money::stored_bound(x, true)));
    }
    if let Some(x) = f.to_price {
        query = query.filter(i::total_amount.le(billing_model::money::stored_bound(x, false)));
    }
    if !f.currencies.is_empty() {
        query = query.filter(i::currency.eq_any(f.currencies.iter().map(|c| c.code().to_string()).collect::<Vec<_>>()));
    }
    query
}

impl PgTx<'_> {
    pub(crate) fn items_of(&mut self, rows: Vec<InvoiceRow>) -> StoreResult<Vec<Invoice>> {
        let ids: Vec<Uuid> = rows.iter().map(|r| r.id).collect();
        let mut lines = self.lines_of::<InvoiceItems>(&ids)?;
        let mut out = Vec::with_capacity(rows.len());
        for r in rows {
            let c = currency(&r.currency)?;
            let items = lines.of(r.id, c)?.into_iter().map(|(line, ItemOwn {})| line).collect();
            out.push(r.into_domain(items)?);
        }
        Ok(out)
    }

    /// Writes the invoice's lines: replaces them, or for a `new` invoice (which has none yet)
    /// only inserts them.
    fn write_items(&mut self, inv: &Invoice, new: bool) -> StoreResult<()> {
        self.write_lines::<InvoiceItems>(inv.id.0, !new, item_lines(inv))
    }
}

/// The invoice's lines, as [`crate::priced_line::line_rows`] takes them.
fn item_lines(inv: &Invoice) -> impl Iterator<Item = (Uuid, &InvoiceItem, ItemOwn)> {
    inv.items.iter().map(|it| (it.id.0, it, ItemOwn {}))
}

/// The rows of `inv`'s lines.
pub(crate) fn item_rows(inv: &Invoice) -> StoreResult<Vec<ItemRow>> {
    line_rows::<InvoiceItems>(inv.id.0, item_lines(inv))
}

/// What a batch's first pass defers of invoices (see `deferred`): new invoices with their lines,
/// and updates of invoices' rows written before.
#[derive(Default)]
pub(crate) struct Deferred {
    invoices: Vec<InvoiceRow>,
    items: Vec<ItemRow>,
    /// The newest row of each updated invoice, with the row as the database holds it when this
    /// pass read it ahead (see `prefetch`): then only the columns that differ are sent.
    updates: Vec<(InvoiceRow, Option<Original>)>,
    /// The ids of the updated invoices.
    updated: HashSet<Uuid>,
}

impl Pending<PgKind> for Deferred {
    fn is_empty(&self) -> bool {
        self.invoices.is_empty() && self.updates.is_empty()
    }

    fn updates(&self, id: Uuid) -> bool {
        self.updated.contains(&id)
    }

    fn send(&mut self, tx: &mut PgTx<'_>, stage: Stage) -> StoreResult<()> {
        match stage {
            Stage::Deletes => Ok(()),
            Stage::Updates => {
                self.updated.clear();
                tx.send_updates("invoices", "invoice", &std::mem::take(&mut self.updates))
            }
            Stage::Inserts => {
                // A row of a chunk is about 30 parameters at most (an invoice): 200 rows stay
                // well under PostgreSQL's 65,535.
                for chunk in std::mem::take(&mut self.invoices).chunks(200) {
                    tx.change_apart(|c| diesel::insert_into(invoices::table).values(chunk).execute(c))?;
                }
                for chunk in std::mem::take(&mut self.items).chunks(200) {
                    tx.change_apart(|c| InvoiceItems::insert(c, chunk))?;
                }
                Ok(())
            }
        }
    }
}

/// What an outcome batch read ahead of invoices: the invoices, with their lines.
#[derive(Default)]
pub(crate) struct Ahead {
    invoices: HashMap<Uuid, Invoice>,
}

impl ReadAhead for Ahead {
    fn is_empty(&self) -> bool {
        self.invoices.is_empty()
    }

    fn forget(&mut self, id: Uuid) {
        self.invoices.remove(&id);
    }
}

impl PgTx<'_> {
    /// An outcome batch's reads (`InvoiceTx::prefetch_invoices`): the invoices with their lines,
    /// their payments and consumers, and what marking their subscriptions paid looks at, in
    /// five statements.
    fn read_invoices_ahead(&mut self, ids: &[InvoiceId]) -> StoreResult<()> {
        // Its reads see what the transaction has written, sent or not (at a batch's start,
        // nothing is pending).
        self.flush()?;
        let ids: Vec<Uuid> = ids.iter().map(|x| x.0).collect();
        let rows: Vec<InvoiceRow> = self.read_apart(|c| {
            use invoices::dsl as i;
            i::invoices.filter(i::id.eq_any(&ids)).select(InvoiceRow::as_select()).load(c)
        })?;
        let invoices = self.items_of(rows)?;
        let found: Vec<Uuid> = invoices.iter().map(|i| i.id.0).collect();
        let payments = self.payments_ahead(&ids, &found)?;
        let consumer_ids: Vec<Uuid> = invoices.iter().map(|i| i.consumer_id.0).collect();
        let consumers = self.consumers_ahead(&consumer_ids)?;
        let subscription_ids: Vec<Uuid> = invoices.iter().filter_map(|i| i.subscription_id).collect();
        let marks = self.marks_ahead(&subscription_ids)?;
        let invoices = Ahead {
            invoices: invoices.into_iter().map(|i| (i.id.0, i)).collect(),
        };
        self.read_ahead(vec![Box::new(invoices), Box::new(payments), Box::new(consumers), Box::new(marks)]);
        Ok(())
    }

    /// The invoice as read ahead, once, when it is of `branch` (any, for `None`).
    fn take_prefetched_invoice(&mut self, branch: Option<BranchId>, id: InvoiceId) -> Option<Invoice> {
        let ahead = self.ahead::<Ahead>()?;
        match ahead.invoices.get(&id.0) {
            Some(i) if branch.is_none_or(|b| i.branch_id == b) => {
                let inv = ahead.invoices.remove(&id.0)?;
                self.keep_original(inv.id.0, InvoiceRow::new(&inv));
                Some(inv)
            }
            _ => None,
        }
    }

    /// Sends what is pending when invoice `id` (new or updated) is among it.
    fn flush_if_invoice_pending(&mut self, id: Uuid) -> StoreResult<()> {
        let new = self.deferred_ref::<Deferred>().is_some_and(|d| d.invoices.iter().any(|i| i.id == id));
        match new || self.update_pending(id) {
            true => self.flush(),
            false => Ok(()),
        }
    }

    /// An update of an invoice's row: changes the pending row when the invoice is still
    /// pending, else records the update for the end of the batch (where an invoice that is
    /// missing fails the pass); gives `row` back to be written when this transaction does not
    /// defer. `original`: the row as read ahead and not written since (see `prefetch`).
    fn defer_invoice_update(&mut self, row: InvoiceRow, original: Option<Original>) -> Option<InvoiceRow> {
        let Some(d) = self.deferred::<Deferred>() else { return Some(row) };
        if let Some(p) = d.invoices.iter_mut().find(|p| p.id == row.id) {
            *p = row;
            return None;
        }
        replace_or_push(&mut d.updates, &mut d.updated, (row, original), |r| r.0.id);
        None
    }
}

impl billing_model::invoice::InvoiceTx for PgTx<'_> {
    fn next_invoice_number(&mut self, org: OrgId) -> StoreResult<i64> {
        self.next_number(org)
    }

    fn insert_invoice(&mut self, inv: &Invoice) -> StoreResult<()> {
        let row = InvoiceRow::new(inv)?;
        if self.deferring() {
            let items = item_rows(inv)?;
            if let Some(d) = self.deferred::<Deferred>() {
                d.invoices.push(row);
                d.items.extend(items);
                return Ok(());
            }
        }
        self.write(|c| diesel::insert_into(invoices::table).values(&row).execute(c))?;
        self.write_items(inv, true)
    }

    fn invoice(&mut self, branch: BranchId, id: InvoiceId) -> StoreResult<Option<Invoice>> {
        use invoices::dsl as i;
        self.flush_if_invoice_pending(id.0)?;
        if let Some(inv) = self.take_prefetched_invoice(Some(branch), id) {
            return Ok(Some(inv));
        }
        let row = self.read_apart(|c| {
            i::invoices
                .filter(i::id.eq(id.0))
                .filter(i::branch_id.eq(branch.0))
                .select(InvoiceRow::as_select())
                .first(c)
                .optional()
        })?;
        match row {
            Some(r) => Ok(self.items_of(vec![r])?.pop()),
            None => Ok(None),
        }
    }

    fn invoice_by_id(&mut self, id: InvoiceId) -> StoreResult<Option<Invoice>> {
        use invoices::dsl as i;
        self.flush_if_invoice_pending(id.0)?;
        if let Some(inv) = self.take_prefetched_invoice(None, id) {
            return Ok(Some(inv));
        }
        let row = self.read_apart(|c| i::invoices.filter(i::id.eq(id.0)).select(InvoiceRow::as_select()).first(c).optional())?;
        match row {
            Some(r) => Ok(self.items_of(vec![r])?.pop()),
            None => Ok(None),
        }
    }

    fn prefetch_invoices(&mut self, ids: &[InvoiceId]) -> StoreResult<()> {
        self.read_invoices_ahead(ids)
    }

    fn update_invoice(&mut self, inv: &Invoice) -> StoreResult<()> {
        self.update_invoice_row(inv)?;
        self.write_items(inv, false)
    }

    fn update_invoice_row(&mut self, inv: &Invoice) -> StoreResult<()> {
        use invoices::dsl as i;
        let original = self.take_original(inv.id.0);
        self.forget_prefetched(Some(inv.id.0));
        let Some(row) = self.defer_invoice_update(InvoiceRow::new(inv)?, original) else {
            return Ok(());
        };
        let n = self.write_apart(|c| diesel::update(i::invoices.filter(i::id.eq(row.id))).set(&row).execute(c))?;
        if n == 0 {
            return Err(StoreError::NotFound("invoice".into()));
        }
        Ok(())
    }

    fn list_invoices(&mut self, branch: BranchId, q: &ListQuery<InvoiceSort>, f: &InvoiceFilter) -> StoreResult<Page<Invoice>> {
        use invoices::dsl as i;
        let coll = self.search_collation;
        let (rows, total) = self.read(|c| {
            let total = invoices_matching(branch.0, q, f, coll).count().get_result::<i64>(c)?;
            let query = invoices_matching(branch.0, q, f, coll).select(InvoiceRow::as_select());
            let query = match q.sort {
                InvoiceSort::CreatedAt => order!(query, q.direction, i::created_at, i::id),
                InvoiceSort::UpdatedAt => order!(query, q.direction, nulls i::updated_at, i::id),
                InvoiceSort::TotalAmount => order!(query, q.direction, i::total_amount, i::id),
                InvoiceSort::OrgInvoiceNumber => order!(query, q.direction, i::org_invoice_number, i::id),
                InvoiceSort::ScheduledOn => order!(query, q.direction, i::scheduled_on, i::id),
                InvoiceSort::Status => order!(query, q.direction, i::status, i::id),
            };
            let rows = query.limit(i64::from(q.limit)).offset(i64::try_from(q.offset()).unwrap_or(i64::MAX)).load(c)?;
            Ok((rows, total))
        })?;
        let items = self.items_of(rows)?;
        Ok(page_of(q.page, q.limit, items, total))
    }

    fn consumer_has_invoices_in(&mut self, branch: BranchId, consumer: ConsumerId, statuses: &[InvoiceStatus]) -> StoreResult<bool> {
        use invoices::dsl as i;
        let names: Vec<String> = statuses.iter().map(|s| s.as_str().to_string()).collect();
        let n: i64 = self.read(|c| {
            i::invoices
                .filter(i::branch_id.eq(branch.0))
                .filter(i::consumer_id.eq(consumer.0))
                .filter(i::status.eq_any(&names))
                .count()
                .get_result(c)
        })?;
        Ok(n > 0)
    }
}
