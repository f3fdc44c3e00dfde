//! Payments and saved cards: `billing_model::payment::PaymentTx`.

use crate::deferred::{replace_or_push, Pending, Stage};
use crate::prefetch::{Original, ReadAhead};
use crate::support::*;
use billing_model::clock::Timestamp;
use billing_model::ids::*;
use billing_model::list::{Direction, ListQuery, Page};
use billing_model::money::Money;
use billing_model::payment::*;
use billing_model::store::StoreResult;
use diesel::dsl::sql;
use diesel::pg::Pg;
use diesel::prelude::*;
use diesel::sql_types::{Bool, Text};
use std::collections::{HashMap, HashSet};

diesel::table! {
    payments (id) {
        id -> Uuid,
        org_id -> Uuid,
        branch_id -> Uuid,
        invoice_id -> Uuid,
        number -> Int4,
        amount -> Int8,
        currency -> Text,
        payment_type -> Text,
        method -> Nullable<Text>,
        status -> Text,
        scheduled_on -> Timestamptz,
        payed_at -> Nullable<Timestamptz>,
        refunded_at -> Nullable<Timestamptz>,
        refund_reason -> Nullable<Text>,
        refund_note -> Nullable<Text>,
        note -> Nullable<Text>,
        transaction_id -> Nullable<Uuid>,
        latest_pgw_message -> Nullable<Text>,
        created_at -> Timestamptz,
        updated_at -> Nullable<Timestamptz>,
    }
}

diesel::table! {
    tokenized_cards (id) {
        id -> Uuid,
        org_id -> Uuid,
        consumer_id -> Uuid,
        network -> Text,
        last_four -> Text,
        expiry_month -> Int4,
        expiry_year -> Int4,
        gateway_token -> Text,
        is_active -> Bool,
        consent -> Bool,
        created_at -> Timestamptz,
    }
}

#[derive(Queryable, Selectable, Insertable, AsChangeset, Debug, serde::Serialize)]
#[diesel(table_name = payments, treat_none_as_null = true, treat_none_as_default_value = false)]
pub struct PaymentRow {
    pub id: Uuid,
    pub org_id: Uuid,
    pub branch_id: Uuid,
    pub invoice_id: Uuid,
    pub number: i32,
    pub amount: i64,
    pub currency: String,
    pub payment_type: String,
    pub method: Option<String>,
    pub status: String,
    pub scheduled_on: Ts,
    pub payed_at: Option<Ts>,
    pub refunded_at: Option<Ts>,
    pub refund_reason: Option<String>,
    pub refund_note: Option<String>,
    pub note: Option<String>,
    pub transaction_id: Option<Uuid>,
    pub latest_pgw_message: Option<String>,
    pub created_at: Ts,
    pub updated_at: Option<Ts>,
}

impl PaymentRow {
    pub fn new(p: &Payment) -> StoreResult<Self> {
        Ok(PaymentRow {
            id: p.id.0,
            org_id: p.org_id.0,
            branch_id: p.branch_id.0,
            invoice_id: p.invoice_id.0,
            number: p.number as i32,
            amount: m(p.amount)?,
            currency: p.amount.currency().code().into(),
            payment_type: p.payment_type.as_str().into(),
            method: p.method.map(|x| x.as_str().into()),
            status: p.status.as_str().into(),
            scheduled_on: p.scheduled_on,
            payed_at: p.payed_at,
            refunded_at: p.refunded_at,
            refund_reason: p.refund_reason.map(|x| x.as_str().into()),
            refund_note: p.refund_note.clone(),
            note: p.note.clone(),
            transaction_id: p.transaction_id,
            latest_pgw_message: p.latest_pgw_message.clone(),
            created_at: p.created_at,
            updated_at: p.updated_at,
        })
    }

    pub fn into_domain(self) -> StoreResult<Payment> {
        let c = currency(&self.currency)?;
        Ok(Payment {
            id: self.id.into(),
            org_id: self.org_id.into(),
            branch_id: self.branch_id.into(),
            invoice_id: self.invoice_id.into(),
            number: u32::try_from(self.number).map_err(|_| unreadable("payment number", self.number))?,
            amount: Money::from_stored(self.amount, c),
            payment_type: parsed("payment type", &self.payment_type, PaymentType::parse)?,
            method: self.method.as_deref().map(|x| parsed("payment method", x, PaymentMethod::parse)).transpose()?,
            status: parsed("payment status", &self.status, PaymentStatus::parse)?,
            scheduled_on: self.scheduled_on,
            payed_at: self.payed_at,
            refunded_at: self.refunded_at,
            refund_reason: self
                .refund_reason
                .as_deref()
                .map(|x| parsed("refund reason", x, RefundReason::parse))
                .transpose()?,
            refund_note: self.refund_note,
            note: self.note,
            transaction_id: self.transaction_id,
            latest_pgw_message: self.latest_pgw_message,
            created_at: self.created_at,
            updated_at: self.updated_at,
        })
    }
}

#[derive(Queryable, Selectable, Insertable, Debug)]
#[diesel(table_name = tokenized_cards)]
pub struct CardRow {
    pub id: Uuid,
    pub org_id: Uuid,
    pub consumer_id: Uuid,
    pub network: String,
    pub last_four: String,
    pub expiry_month: i32,
    pub expiry_year: i32,
    pub gateway_token: String,
    pub is_active: bool,
    pub consent: bool,
    pub created_at: Ts,
}

impl CardRow {
    pub fn new(c: &TokenizedCard) -> Self {
        CardRow {
            id: c.id,
            org_id: c.org_id.0,
            consumer_id: c.consumer_id.0,
            network: c.network.clone(),
            last_four: c.last_four.clone(),
            expiry_month: c.expiry_month as i32,
            expiry_year: c.expiry_year as i32,
            gateway_token: c.gateway_token.clone(),
            is_active: c.is_active,
            consent: c.consent,
            created_at: c.created_at,
        }
    }

    pub fn into_domain(self) -> TokenizedCard {
        TokenizedCard {
            id: self.id,
            org_id: self.org_id.into(),
            consumer_id: self.consumer_id.into(),
            network: self.network,
            last_four: self.last_four,
            expiry_month: self.expiry_month as u32,
            expiry_year: self.expiry_year as u32,
            gateway_token: self.gateway_token,
            is_active: self.is_active,
            consent: self.consent,
            created_at: self.created_at,
        }
    }
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

/// What a batch's first pass defers of payments (see `deferred`): new payments, and updates
/// of payments written before.
#[derive(Default)]
pub(crate) struct Deferred {
    payments: Vec<PaymentRow>,
    /// The newest row of each updated payment, with the row as the database holds it when this
    /// pass read it ahead (see `prefetch`): then only the columns that differ are sent.
    updates: Vec<(PaymentRow, Option<Original>)>,
    /// The ids of the updated payments, and their invoices'.
    updated: HashSet<Uuid>,
}

impl Pending<PgKind> for Deferred {
    fn is_empty(&self) -> bool {
        self.payments.is_empty() && self.updates.is_empty()
    }

    fn updates(&self, id: Uuid) -> bool {
        self.updated.contains(&id)
    }

    fn send(&mut self, tx: &mut PgTx<'_>, stage: Stage) -> StoreResult<()> {
        match stage {
            Stage::Deletes => Ok(()),
            Stage::Updates => {
                self.updated.clear();
                tx.send_updates("payments", "payment", &std::mem::take(&mut self.updates))
            }
            Stage::Inserts => {
                // A row is 20 parameters: 200 rows stay well under PostgreSQL's 65,535.
                for chunk in std::mem::take(&mut self.payments).chunks(200) {
                    tx.change_apart(|c| diesel::insert_into(payments::table).values(chunk).execute(c))?;
                }
                Ok(())
            }
        }
    }
}

/// What a batch read ahead of payments: an outcome batch's invoices' payments (by invoice), a
/// renewal batch's consumers' latest active cards (by consumer).
#[derive(Default)]
pub(crate) struct Ahead {
    payments: HashMap<Uuid, Vec<Payment>>,
    cards: HashMap<Uuid, Option<TokenizedCard>>,
}

impl ReadAhead for Ahead {
    fn is_empty(&self) -> bool {
        self.payments.is_empty() && self.cards.is_empty()
    }

    /// An invoice's payments (a card stays: no write of a batch changes one).
    fn forget(&mut self, id: Uuid) {
        self.payments.remove(&id);
    }
}

impl PgTx<'_> {
    /// Reads ahead the payments of the `invoices` (asked for by `ids`), in one statement.
    pub(crate) fn payments_ahead(&mut self, ids: &[Uuid], invoices: &[Uuid]) -> StoreResult<Ahead> {
        let rows: Vec<PaymentRow> = self.read_apart(|c| {
            use payments::dsl as p;
            p::payments
                .filter(p::invoice_id.eq_any(ids))
                .order_by((p::invoice_id, p::number, p::id))
                .select(PaymentRow::as_select())
                .load(c)
        })?;
        let mut ahead = Ahead::default();
        for invoice in invoices {
            ahead.payments.insert(*invoice, vec![]);
        }
        for row in rows {
            let x = row.into_domain()?;
            if let Some(list) = ahead.payments.get_mut(&x.invoice_id.0) {
                list.push(x);
            }
        }
        Ok(ahead)
    }

    /// Reads ahead the latest active card of each of `consumers`, in one statement.
    pub(crate) fn cards_ahead(&mut self, consumers: &[Uuid]) -> StoreResult<Ahead> {
        let rows: Vec<CardRow> = self.read_apart(|c| {
            use tokenized_cards::dsl as t;
            t::tokenized_cards
                .filter(t::consumer_id.eq_any(consumers))
                .filter(t::is_active.eq(true))
                .distinct_on(t::consumer_id)
                .order_by((t::consumer_id, t::created_at.desc(), t::id.desc()))
                .select(CardRow::as_select())
                .load(c)
        })?;
        let mut ahead = Ahead::default();
        for consumer in consumers {
            ahead.cards.insert(*consumer, None);
        }
        for c in rows {
            let c = c.into_domain();
            ahead.cards.insert(c.consumer_id.0, Some(c));
        }
        Ok(ahead)
    }

    /// Sends what is pending when a new payment, or an update of a payment of `invoice`, is
    /// among it.
    fn flush_if_payments_pending(&mut self, invoice: Uuid) -> StoreResult<()> {
        let new = self.deferred_ref::<Deferred>().is_some_and(|d| !d.payments.is_empty());
        match new || self.update_pending(invoice) {
            true => self.flush(),
            false => Ok(()),
        }
    }

    /// An update of a payment: changes the pending row when the payment is still pending, else
    /// records the update for the end of the batch (where a payment that is missing fails the
    /// pass); gives `row` back to be written when this transaction does not defer.
    /// `original`: the row as read ahead and not written since (see `prefetch`).
    fn defer_payment_update(&mut self, row: PaymentRow, original: Option<Original>) -> Option<PaymentRow> {
        let Some(d) = self.deferred::<Deferred>() else { return Some(row) };
        if let Some(p) = d.payments.iter_mut().find(|p| p.id == row.id) {
            *p = row;
            return None;
        }
        d.updated.insert(row.invoice_id);
        replace_or_push(&mut d.updates, &mut d.updated, (row, original), |r| r.0.id);
        None
    }

    /// An invoice's payments as read ahead, once.
    fn take_prefetched_payments(&mut self, invoice: InvoiceId) -> Option<Vec<Payment>> {
        let found = self.ahead::<Ahead>()?.payments.remove(&invoice.0)?;
        for p in &found {
            self.keep_original(p.id.0, PaymentRow::new(p));
        }
        Some(found)
    }
}

impl billing_model::payment::PaymentTx for PgTx<'_> {
    fn insert_payment(&mut self, p: &Payment) -> StoreResult<()> {
        let row = PaymentRow::new(p)?;
        if let Some(d) = self.deferred::<Deferred>() {
            d.payments.push(row);
            return Ok(());
        }
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
        // A payment this batch has not sent yet is changed where it waits; an update in a
        // batch's first pass goes out with the others at its end; any other, by id, now.
        let original = self.take_original(pay.id.0);
        self.forget_prefetched(Some(pay.invoice_id.0));
        let Some(row) = self.defer_payment_update(PaymentRow::new(pay)?, original) else {
            return Ok(());
        };
        let n = self.write_apart(|c| diesel::update(p::payments.filter(p::id.eq(row.id))).set(&row).execute(c))?;
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
        self.flush_if_payments_pending(invoice.0)?;
        if let Some(found) = self.take_prefetched_payments(invoice) {
            return Ok(found);
        }
        let rows = self.read_apart(|c| {
            p::payments
                .filter(p::invoice_id.eq(invoice.0))
                .order_by((p::number, p::id))
                .select(PaymentRow::as_select())
                .load(c)
        })?;
        rows.into_iter().map(PaymentRow::into_domain).collect()
    }

    fn payments_of_invoices(&mut self, invoices: &[InvoiceId]) -> StoreResult<Vec<Payment>> {
        use payments::dsl as p;
        if invoices.is_empty() {
            return Ok(vec![]);
        }
        let ids: Vec<Uuid> = invoices.iter().map(|i| i.0).collect();
        // Whatever a batch deferred is sent first, so the read sees it.
        let rows = self.read(|c| {
            p::payments
                .filter(p::invoice_id.eq_any(&ids))
                .order_by((p::invoice_id, p::number, p::id))
                .select(PaymentRow::as_select())
                .load(c)
        })?;
        rows.into_iter().map(PaymentRow::into_domain).collect()
    }

    fn list_payments(&mut self, branch: BranchId, q: &ListQuery<PaymentSort>, f: &PaymentFilter) -> StoreResult<Page<Payment>> {
        use payments::dsl as p;
        let coll = self.search_collation;
        let (rows, total) = self.read(|c| {
            let total = payments_matching(branch.0, q, f, coll).count().get_result::<i64>(c)?;
            let query = payments_matching(branch.0, q, f, coll).select(PaymentRow::as_select());
            let query = match q.sort {
                PaymentSort::CreatedAt => order!(query, q.direction, p::created_at, p::id),
                PaymentSort::Amount => order!(query, q.direction, p::amount, p::id),
                PaymentSort::ScheduledOn => order!(query, q.direction, p::scheduled_on, p::id),
                PaymentSort::PayedAt => order!(query, q.direction, nulls p::payed_at, p::id),
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
        if let Some(found) = self.ahead_ref::<Ahead>().and_then(|a| a.cards.get(&consumer.0)) {
            return Ok(found.clone());
        }
        use tokenized_cards::dsl as t;
        let row = self.read_apart(|c| {
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

    fn record_failed_pay_attempt(&mut self, target: &str, client: &str, at: Timestamp, forget_before: Timestamp) -> StoreResult<()> {
        use diesel::sql_types::{Timestamptz, Uuid as SqlUuid};
        self.write(|c| {
            diesel::sql_query("DELETE FROM pay_attempt_failures WHERE target = $1 AND client = $2 AND at < $3")
                .bind::<Text, _>(target)
                .bind::<Text, _>(client)
                .bind::<Timestamptz, _>(forget_before)
                .execute(c)?;
            diesel::sql_query("INSERT INTO pay_attempt_failures (id, target, client, at) VALUES ($1, $2, $3, $4)")
                .bind::<SqlUuid, _>(uuid::Uuid::now_v7())
                .bind::<Text, _>(target)
                .bind::<Text, _>(client)
                .bind::<Timestamptz, _>(at)
                .execute(c)
        })
        .map(drop)
    }

    fn count_failed_pay_attempts(&mut self, target: &str, client: &str, since: Timestamp) -> StoreResult<u64> {
        use diesel::sql_types::Timestamptz;
        let row: FailedCount = self.read(|c| {
            diesel::sql_query("SELECT COUNT(*) AS n FROM pay_attempt_failures WHERE target = $1 AND client = $2 AND at >= $3")
                .bind::<Text, _>(target)
                .bind::<Text, _>(client)
                .bind::<Timestamptz, _>(since)
                .get_result(c)
        })?;
        Ok(u64::try_from(row.n).unwrap_or(0))
    }
}

#[derive(QueryableByName)]
struct FailedCount {
    #[diesel(sql_type = diesel::sql_types::BigInt)]
    n: i64,
}
