//! `billing_core::invoice::InvoiceTx` for this store.

use crate::lists::contains_pattern;
use crate::rows_invoice::*;
use crate::schema_invoice::*;
use crate::tx::PgTx;
use billing_core::error::StoreError;
use billing_core::ids::*;
use billing_core::invoice::*;
use billing_core::list::{Direction, ListQuery, Page};
use billing_core::payment::*;
use billing_core::store::StoreResult;
use diesel::dsl::sql;
use diesel::pg::Pg;
use diesel::prelude::*;
use diesel::sql_types::{Array, Bool, Text};

fn page_of<T>(q_page: u32, limit: u32, items: Vec<T>, total: i64) -> Page<T> {
    Page {
        items,
        total: u64::try_from(total).unwrap_or(0),
        page: q_page,
        limit,
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
        query = query.filter(i::total_amount.ge(billing_core::money::stored_bound(x, true)));
    }
    if let Some(x) = f.to_price {
        query = query.filter(i::total_amount.le(billing_core::money::stored_bound(x, false)));
    }
    if !f.currencies.is_empty() {
        query = query.filter(i::currency.eq_any(f.currencies.iter().map(|c| c.code().to_string()).collect::<Vec<_>>()));
    }
    query
}

fn payments_matching<'a>(branch: uuid::Uuid, q: &'a ListQuery<PaymentSort>, f: &'a PaymentFilter, coll: &'static str) -> payments::BoxedQuery<'a, Pg> {
    use payments::dsl as p;
    let mut query = p::payments.filter(p::branch_id.eq(branch)).into_boxed();
    if let Some(term) = &q.search {
        let pattern = contains_pattern(term);
        let like = |col: &str| folded(col, coll);
        let end = close(coll);
        query = query.filter(
            sql::<Bool>(&format!("({}", like("payments.note")))
                .bind::<Text, _>(pattern.clone())
                .sql(&format!("{} OR {}", end, like("payments.refund_note")))
                .bind::<Text, _>(pattern.clone())
                .sql(&format!(
                    "{} OR EXISTS (SELECT 1 FROM invoices v WHERE v.id = payments.invoice_id AND {}",
                    end,
                    like("v.description")
                ))
                .bind::<Text, _>(pattern)
                .sql(&format!("{}))", end)),
        );
    }
    if !f.invoice_ids.is_empty() {
        query = query.filter(p::invoice_id.eq_any(f.invoice_ids.iter().map(|x| x.0).collect::<Vec<_>>()));
    }
    if !f.statuses.is_empty() {
        query = query.filter(p::status.eq_any(f.statuses.iter().map(|s| s.as_str().to_string()).collect::<Vec<_>>()));
    }
    if let Some(x) = f.from_date {
        query = query.filter(p::created_at.ge(x));
    }
    if let Some(x) = f.to_date {
        query = query.filter(p::created_at.le(x));
    }
    query
}

macro_rules! ordered {
    ($query:expr, $dir:expr, $col:expr, $id:expr) => {
        match $dir {
            Direction::Asc => $query.order_by($col.asc()).then_order_by($id.asc()),
            Direction::Desc => $query.order_by($col.desc()).then_order_by($id.desc()),
        }
    };
    ($query:expr, $dir:expr, nulls $col:expr, $id:expr) => {
        match $dir {
            Direction::Asc => $query.order_by($col.asc().nulls_first()).then_order_by($id.asc()),
            Direction::Desc => $query.order_by($col.desc().nulls_last()).then_order_by($id.desc()),
        }
    };
}

/// `lower((col COLLATE "c")) LIKE lower((` … the pattern bind … then [`close`]: a
/// case-insensitive match folding case under the search collation (Unicode-wide with ICU), as
/// the other lists search. The collation name comes from a fixed set, never from a request.
fn folded(col: &str, coll: &'static str) -> String {
    format!("lower(({col} COLLATE \"{coll}\")) LIKE lower((")
}

fn close(coll: &'static str) -> String {
    format!(" COLLATE \"{coll}\"))")
}

/// The search collation of the server, looked up once per process.
static COLLATION: std::sync::OnceLock<&'static str> = std::sync::OnceLock::new();

impl PgTx<'_> {
    fn collation(&mut self) -> StoreResult<&'static str> {
        if let Some(c) = COLLATION.get() {
            return Ok(c);
        }
        let c = crate::search_collation(self.conn)?;
        Ok(COLLATION.get_or_init(|| c))
    }

    fn items_of(&mut self, rows: Vec<InvoiceRow>) -> StoreResult<Vec<Invoice>> {
        use invoice_items::dsl as it;
        let ids: Vec<uuid::Uuid> = rows.iter().map(|r| r.id).collect();
        let items: Vec<ItemRow> = self.read(|c| {
            it::invoice_items
                .filter(it::invoice_id.eq_any(&ids))
                .order_by((it::invoice_id, it::position))
                .select(ItemRow::as_select())
                .load(c)
        })?;
        let mut out = Vec::with_capacity(rows.len());
        for r in rows {
            let c = r
                .currency
                .parse()
                .map_err(|_| StoreError::backend(format!("unreadable stored currency: {}", r.currency)))?;
            let mine = items.iter().filter(|x| x.invoice_id == r.id);
            let mut list = vec![];
            for x in mine {
                let row = ItemRow {
                    coupon_ids: x.coupon_ids.clone(),
                    coupons: x.coupons.clone(),
                    vat_mode: x.vat_mode.clone(),
                    ..*x
                };
                list.push(row.into_domain(c)?);
            }
            out.push(r.into_domain(list)?);
        }
        Ok(out)
    }

    fn write_items(&mut self, inv: &Invoice) -> StoreResult<()> {
        use invoice_items::dsl as it;
        let rows = inv
            .items
            .iter()
            .enumerate()
            .map(|(k, x)| ItemRow::new(inv, k, x))
            .collect::<StoreResult<Vec<_>>>()?;
        let id = inv.id.0;
        self.write(|c| {
            diesel::delete(it::invoice_items.filter(it::invoice_id.eq(id))).execute(c)?;
            diesel::insert_into(it::invoice_items).values(&rows).execute(c)
        })
        .map(drop)
    }
}

impl billing_core::invoice::InvoiceTx for PgTx<'_> {
    fn next_invoice_number(&mut self, org: OrgId) -> StoreResult<i64> {
        use invoice_counters::dsl as ic;
        self.write(|c| {
            diesel::insert_into(ic::invoice_counters)
                .values((ic::org_id.eq(org.0), ic::last_number.eq(1i64)))
                .on_conflict(ic::org_id)
                .do_update()
                .set(ic::last_number.eq(ic::last_number + 1i64))
                .returning(ic::last_number)
                .get_result::<i64>(c)
        })
    }

    fn insert_invoice(&mut self, inv: &Invoice) -> StoreResult<()> {
        let row = InvoiceRow::new(inv)?;
        self.write(|c| diesel::insert_into(invoices::table).values(&row).execute(c))?;
        self.write_items(inv)
    }

    fn invoice(&mut self, branch: BranchId, id: InvoiceId) -> StoreResult<Option<Invoice>> {
        use invoices::dsl as i;
        let row = self.read(|c| {
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

    fn update_invoice(&mut self, inv: &Invoice) -> StoreResult<()> {
        use invoices::dsl as i;
        let row = InvoiceRow::new(inv)?;
        let n = self.write(|c| diesel::update(i::invoices.filter(i::id.eq(row.id))).set(&row).execute(c))?;
        if n == 0 {
            return Err(StoreError::NotFound("invoice".into()));
        }
        self.write_items(inv)
    }

    fn list_invoices(&mut self, branch: BranchId, q: &ListQuery<InvoiceSort>, f: &InvoiceFilter) -> StoreResult<Page<Invoice>> {
        use invoices::dsl as i;
        let coll = self.collation()?;
        let (rows, total) = self.read(|c| {
            let total = invoices_matching(branch.0, q, f, coll).count().get_result::<i64>(c)?;
            let query = invoices_matching(branch.0, q, f, coll).select(InvoiceRow::as_select());
            let query = match q.sort {
                InvoiceSort::CreatedAt => ordered!(query, q.direction, i::created_at, i::id),
                InvoiceSort::UpdatedAt => ordered!(query, q.direction, nulls i::updated_at, i::id),
                InvoiceSort::TotalAmount => ordered!(query, q.direction, i::total_amount, i::id),
                InvoiceSort::OrgInvoiceNumber => ordered!(query, q.direction, i::org_invoice_number, i::id),
                InvoiceSort::ScheduledOn => ordered!(query, q.direction, i::scheduled_on, i::id),
                InvoiceSort::Status => ordered!(query, q.direction, i::status, i::id),
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

impl billing_core::payment::PaymentTx for PgTx<'_> {
    fn insert_payment(&mut self, p: &Payment) -> StoreResult<()> {
        let row = PaymentRow::new(p)?;
        self.write(|c| diesel::insert_into(payments::table).values(&row).execute(c)).map(drop)
    }

    fn payment(&mut self, branch: BranchId, id: PaymentId) -> StoreResult<Option<Payment>> {
        use payments::dsl as p;
        let row = self.read(|c| {
            p::payments
                .filter(p::id.eq(id.0))
                .filter(p::branch_id.eq(branch.0))
                .select(PaymentRow::as_select())
                .first(c)
                .optional()
        })?;
        row.map(PaymentRow::into_domain).transpose()
    }

    fn update_payment(&mut self, pay: &Payment) -> StoreResult<()> {
        use payments::dsl as p;
        let row = PaymentRow::new(pay)?;
        let n = self.write(|c| diesel::update(p::payments.filter(p::id.eq(row.id))).set(&row).execute(c))?;
        if n == 0 {
            return Err(StoreError::NotFound("payment".into()));
        }
        Ok(())
    }

    fn delete_payment(&mut self, id: PaymentId) -> StoreResult<()> {
        use payments::dsl as p;
        self.write(|c| diesel::delete(p::payments.filter(p::id.eq(id.0))).execute(c)).map(drop)
    }

    fn invoice_payments(&mut self, invoice: InvoiceId) -> StoreResult<Vec<Payment>> {
        use payments::dsl as p;
        let rows = self.read(|c| {
            p::payments
                .filter(p::invoice_id.eq(invoice.0))
                .order_by((p::number, p::id))
                .select(PaymentRow::as_select())
                .load(c)
        })?;
        rows.into_iter().map(PaymentRow::into_domain).collect()
    }

    fn list_payments(&mut self, branch: BranchId, q: &ListQuery<PaymentSort>, f: &PaymentFilter) -> StoreResult<Page<Payment>> {
        use payments::dsl as p;
        let coll = self.collation()?;
        let (rows, total) = self.read(|c| {
            let total = payments_matching(branch.0, q, f, coll).count().get_result::<i64>(c)?;
            let query = payments_matching(branch.0, q, f, coll).select(PaymentRow::as_select());
            let query = match q.sort {
                PaymentSort::CreatedAt => ordered!(query, q.direction, p::created_at, p::id),
                PaymentSort::Amount => ordered!(query, q.direction, p::amount, p::id),
                PaymentSort::ScheduledOn => ordered!(query, q.direction, p::scheduled_on, p::id),
                PaymentSort::PayedAt => ordered!(query, q.direction, nulls p::payed_at, p::id),
            };
            let rows: Vec<PaymentRow> = query.limit(i64::from(q.limit)).offset(i64::try_from(q.offset()).unwrap_or(i64::MAX)).load(c)?;
            Ok((rows, total))
        })?;
        let items = rows.into_iter().map(PaymentRow::into_domain).collect::<StoreResult<Vec<_>>>()?;
        Ok(page_of(q.page, q.limit, items, total))
    }

    fn insert_card(&mut self, card: &TokenizedCard) -> StoreResult<()> {
        let row = CardRow::new(card);
        self.write(|c| diesel::insert_into(tokenized_cards::table).values(&row).execute(c)).map(drop)
    }

    fn latest_active_card(&mut self, consumer: ConsumerId) -> StoreResult<Option<TokenizedCard>> {
        use tokenized_cards::dsl as t;
        let row = self.read(|c| {
            t::tokenized_cards
                .filter(t::consumer_id.eq(consumer.0))
                .filter(t::is_active.eq(true))
                .order_by((t::created_at.desc(), t::id.desc()))
                .select(CardRow::as_select())
                .first(c)
                .optional()
        })?;
        Ok(row.map(CardRow::into_domain))
    }
}
