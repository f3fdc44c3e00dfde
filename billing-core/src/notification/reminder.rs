//! Installment reminders: when a later installment is scheduled to be charged on its date
//! ([`crate::payment::installment`]), a due-work item is queued in the same transaction for
//! the organization's `installment_reminder_days` (default 3) before that date. When it comes
//! due and the installment is still unpaid on an accepted invoice, the consumer's
//! INSTALLMENT_REMINDER notifications are recorded (switches read then); otherwise nothing.

use super::Kind;
use crate::engine::Engine;
use crate::error::{Error, Result, StoreError};
use crate::ids::{BranchId, PaymentId, WorkId};
use crate::invoice::InvoiceStatus;
use crate::payment::Payment;
use crate::store::{Store, StoreResult, Tx};
use crate::work::ops::is_lease_lost;
use crate::work::{DueWork, Handler};
use chrono::Duration;
use serde::Deserialize;
use serde_json::json;

/// A reminder of one installment (payload: the payment and its branch).
pub const REMINDER_KIND: &str = "notification.reminder";
/// Report key: reminders that recorded notifications.
pub const REMINDED: &str = "notification.reminded";

#[derive(Deserialize)]
struct Payload {
    payment_id: PaymentId,
    branch_id: BranchId,
}

/// Queues the reminder of a later installment, in the transaction that schedules its charge.
pub(crate) fn schedule(tx: &mut dyn Tx, p: &Payment) -> StoreResult<()> {
    let days = tx
        .org(p.org_id)?
        .map(|o| o.settings.installment_reminder_days)
        .unwrap_or(super::DEFAULT_REMINDER_DAYS);
    let due = p.scheduled_on - Duration::days(i64::from(days));
    let payload = json!({"payment_id": p.id, "branch_id": p.branch_id});
    tx.insert_work(&DueWork::new(WorkId::new(), p.org_id, REMINDER_KIND, due, payload))
}

pub(crate) fn work_handler<S: Store>() -> Handler<Engine<S>> {
    Handler {
        kind: REMINDER_KIND,
        batched: false,
        ready: |_| true,
        run: |b, items, report| {
            for item in items {
                match b.remind(item) {
                    Ok(true) => report.add(REMINDED, 1),
                    Ok(false) => {}
                    Err(e) if is_lease_lost(&e) => {}
                    Err(_) => report.errors += 1,
                }
            }
        },
    }
}

impl<S: Store> Engine<S> {
    /// Runs one reminder item: records the notifications when the installment is still to be
    /// charged, and ends the item in the same transaction.
    fn remind(&self, item: &DueWork) -> Result<bool> {
        let p: Option<Payload> = serde_json::from_value(item.payload.clone()).ok();
        self.store.write_leased(|tx| {
            if !tx.complete_work(item.id, item.leased_until)? {
                return Err(Error::Store(StoreError::LeaseLost(item.id)));
            }
            let Some(p) = &p else { return Ok(false) };
            let Some(org) = tx.org(item.org_id)? else { return Ok(false) };
            let Some(pay) = tx.payment(p.branch_id, p.payment_id)? else {
                return Ok(false);
            };
            let Some(inv) = tx.invoice(p.branch_id, pay.invoice_id)? else {
                return Ok(false);
            };
            let now = org.now(self.clock());
            if inv.status != InvoiceStatus::Accepted || !pay.status.is_payable() || pay.scheduled_on <= now {
                return Ok(false);
            }
            let extra = json!({
                "payment_id": pay.id,
                "installment": pay.number,
                "amount": pay.amount,
                "due_on": crate::clock::format_rfc3339(&pay.scheduled_on),
            });
            Ok(super::queue::about_invoice(tx, &org, self.public_url(), &inv, Kind::InstallmentReminder, extra, now)? > 0)
        })
    }
}
