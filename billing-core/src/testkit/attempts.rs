//! Gateway attempts: a charge or refund is recorded before the gateway is called and finished
//! exactly once, by the request or, when it died, by the attempt's due-work item.

use super::invoices::{consumer, create, invoice_body, product};
use super::{expect_code, Harness, World};
use crate::error::Code;
use crate::event::EventType;
use crate::ids::WorkId;
use crate::money::Money;
use crate::payment::gateway::{CardDetails, GatewayOutcome, PaymentGateway, SandboxGateway};
use crate::payment::{PaymentStatus, RefundReason, RefundRequest, CHARGE_KIND, REFUND_KIND};
use crate::sandbox::Advance;
use crate::store::Store;
use chrono::Duration;
use std::sync::mpsc;
use std::sync::{Arc, Mutex};

/// What a scripted gateway does when called.
enum Act {
    /// Answers like the sandbox.
    Sandbox,
    /// Panics: the process "dies" inside the call, before the outcome is recorded.
    Die,
    /// Runs the hook (the test's stand-in for time passing meanwhile), then answers like the
    /// sandbox.
    Hook(Box<dyn Fn() + Send + Sync>),
    /// Tells the test it was entered, then waits for the test's go.
    Block(mpsc::Sender<()>, Mutex<mpsc::Receiver<()>>),
    /// Answers with a failure (91: the gateway could not be reached).
    Fail,
}

/// A gateway that logs every call (operation, reference) and acts as scripted.
struct Scripted {
    act: Mutex<Act>,
    calls: Mutex<Vec<(&'static str, String)>>,
}

impl Scripted {
    fn new(act: Act) -> Arc<Self> {
        Arc::new(Scripted {
            act: Mutex::new(act),
            calls: Mutex::new(vec![]),
        })
    }
    fn set(&self, act: Act) {
        *self.act.lock().unwrap() = act;
    }
    fn calls(&self) -> Vec<(&'static str, String)> {
        self.calls.lock().unwrap().clone()
    }
    fn run(&self, op: &'static str, reference: &str, sandbox: impl FnOnce() -> GatewayOutcome) -> GatewayOutcome {
        self.calls.lock().unwrap().push((op, reference.to_string()));
        // Not holding the lock while acting: a hook may call the gateway again.
        let act = std::mem::replace(&mut *self.act.lock().unwrap(), Act::Sandbox);
        match &act {
            Act::Sandbox => {}
            Act::Die => panic!("the process died during the gateway call"),
            Act::Hook(h) => h(),
            Act::Block(entered, go) => {
                entered.send(()).unwrap();
                go.lock().unwrap().recv().unwrap();
            }
            Act::Fail => return GatewayOutcome::of("91", "ISSUER OR SWITCH INOPERATIVE"),
        }
        sandbox()
    }
}

impl PaymentGateway for Scripted {
    fn charge_card(&self, reference: &str, card: &CardDetails, amount: Money) -> GatewayOutcome {
        self.run("charge", reference, || SandboxGateway.charge_card(reference, card, amount))
    }
    fn charge_token(&self, reference: &str, token: &str, amount: Money) -> GatewayOutcome {
        self.run("charge", reference, || SandboxGateway.charge_token(reference, token, amount))
    }
    fn refund(&self, reference: &str, transaction: &str, amount: Money) -> GatewayOutcome {
        self.run("refund", reference, || SandboxGateway.refund(reference, transaction, amount))
    }
    fn void(&self, reference: &str) -> GatewayOutcome {
        self.run("void", reference, || SandboxGateway.void(reference))
    }
}

fn card() -> CardDetails {
    CardDetails {
        name: "Sara Harbi".into(),
        number: "4111111111111111".into(),
        expiry_month: 12,
        expiry_year: 2030,
        cvc: "123".into(),
    }
}

/// An invoice of 115.00 with its single payment.
fn unpaid<S: Store>(w: &World<S>) -> (crate::invoice::Invoice, crate::payment::Payment) {
    let s = &w.admin;
    let c = consumer(w, s, false);
    let p = product(w, s, "100.00", serde_json::json!({}));
    let inv = create(w, s, invoice_body(c.id, &[(p.id, 1)], &[]));
    let pay = w.billing.invoices().get(s, inv.id).unwrap().payments.remove(0);
    (inv, pay)
}

fn payment_events<S: Store>(w: &World<S>, id: uuid::Uuid) -> Vec<EventType> {
    let org = w.boot.org.id;
    w.read(|tx| tx.list_events(org))
        .into_iter()
        .filter(|e| e.entity_id == id)
        .map(|e| e.event_type)
        .collect()
}

fn died<R>(f: impl FnOnce() -> R) {
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
    assert!(r.is_err(), "the scripted gateway should have died");
}

/// A charge is on record (PROCESSING, with its item) before the gateway is called; while it is
/// in flight nothing else may pay, mark, void or re-plan the payment; when the process dies in
/// the call, the item marks it FAILED and voids the charge at the gateway; then it can be paid.
pub fn charge_in_flight_is_recorded_and_recovered<H: Harness>() {
    let w = World::new(H::store());
    let s = &w.admin;
    let gw = Scripted::new(Act::Die);
    w.billing.engine().set_sandbox_gateway(gw.clone());
    let (inv, pay) = unpaid(&w);
    died(|| w.billing.payments().pay_by_card(s, inv.id, &[pay.id], &card()));
    let p = w.billing.payments().get(s, pay.id).unwrap();
    assert_eq!(p.status, PaymentStatus::Processing);
    let attempt = p.transaction_id.expect("the attempt's id");
    assert_eq!(gw.calls(), vec![("charge", attempt.to_string())], "the attempt's id is the gateway reference");
    let item = w.read(|tx| tx.work(WorkId(attempt))).expect("the attempt's work item");
    assert_eq!(
        (item.kind.as_str(), item.due_at),
        (CHARGE_KIND, w.billing.engine().now(&w.fresh_admin()) + crate::payment::ATTEMPT_TIMEOUT)
    );
    // In flight: nothing else touches the payment.
    expect_code(w.billing.payments().pay_by_card(s, inv.id, &[pay.id], &card()), Code::INVALID_STATUS);
    let manual = crate::payment::MarkPaid {
        method: crate::payment::PaymentMethod::Cash,
        note: None,
    };
    expect_code(w.billing.payments().mark_paid(s, pay.id, manual.clone()), Code::INVALID_STATUS);
    expect_code(w.billing.invoices().void(s, inv.id), Code::INVOICE_INVALID_STATUS);
    assert_eq!(gw.calls().len(), 1, "refused attempts never reach the gateway");
    assert!(payment_events(&w, pay.id.0).is_empty());
    // Before the time-out nothing happens; after it, the item takes over.
    w.billing.sandbox().advance(s, Advance::By(Duration::minutes(14))).unwrap();
    assert_eq!(w.billing.payments().get(s, pay.id).unwrap().status, PaymentStatus::Processing);
    gone_for_real(&w);
    w.billing.sandbox().advance(s, Advance::By(Duration::minutes(2))).unwrap();
    let p = w.billing.payments().get(s, pay.id).unwrap();
    assert_eq!((p.status, p.transaction_id), (PaymentStatus::Failed, None));
    assert_eq!(gw.calls()[1..], [("void", attempt.to_string())]);
    assert_eq!(payment_events(&w, pay.id.0), vec![EventType::PaymentFailed]);
    assert_eq!(w.read(|tx| tx.work(WorkId(attempt))), None, "done once the void is confirmed");
    // Payable again, once.
    let paid = w.billing.payments().pay_by_card(s, inv.id, &[pay.id], &card()).unwrap();
    assert_eq!(paid[0].status, PaymentStatus::Succeeded);
    assert_eq!(payment_events(&w, pay.id.0), vec![EventType::PaymentFailed, EventType::PaymentSucceeded]);
    w.billing.sandbox().advance(s, Advance::By(Duration::hours(1))).unwrap();
    assert_eq!(gw.calls().iter().filter(|c| c.0 == "void").count(), 1, "a recorded charge is never voided");
}

/// The process that made an attempt is gone for real: the server's clock passes the longest an
/// attempt may stay in flight (the organization's test clock alone says nothing about that).
fn gone_for_real<S: crate::store::Store>(w: &World<S>) {
    w.clock.advance(w.billing.engine().work_lease());
}

/// A sandbox clock advance past an attempt's time-out while the attempt is alive (its gateway
/// call takes a moment of real time) leaves it alone: the advance waits for it, its outcome is
/// recorded, nothing is voided. The time-out is the organization's time, which the test clock
/// jumps; a live attempt is told by the server's time.
pub fn clock_advance_waits_for_a_live_charge<H: Harness>() {
    let w = Arc::new(World::new(H::store()));
    let gw = Scripted::new(Act::Sandbox);
    w.billing.engine().set_sandbox_gateway(gw.clone());
    let (inv, pay) = unpaid(&w);
    let (entered_tx, entered) = mpsc::channel();
    let (go, go_rx) = mpsc::channel::<()>();
    gw.set(Act::Block(entered_tx, Mutex::new(go_rx)));
    let payer = {
        let w = w.clone();
        std::thread::spawn(move || w.billing.payments().pay_by_card(&w.admin, inv.id, &[pay.id], &card()))
    };
    entered.recv().unwrap();
    // The charge is at the gateway: an advance of a day passes its time-out (organization
    // time), then the gateway answers while the advance waits.
    let advance = {
        let w = w.clone();
        std::thread::spawn(move || w.billing.sandbox().advance(&w.admin, Advance::By(Duration::days(1))))
    };
    // Once the advance has reached the time-out and its handler holds the attempt's item
    // (without the rule, it would have voided the charge by now).
    let attempt = w.billing.payments().get(&w.admin, pay.id).unwrap().transaction_id.expect("the attempt's id");
    let started = std::time::Instant::now();
    while started.elapsed() < std::time::Duration::from_secs(10) && w.read(|tx| tx.work(WorkId(attempt))).is_none_or(|i| i.leased_until.is_none()) {
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    go.send(()).unwrap();
    let paid = payer.join().unwrap().expect("the live charge is recorded");
    assert_eq!(paid[0].status, PaymentStatus::Succeeded);
    advance.join().unwrap().unwrap();
    let p = w.billing.payments().get(&w.admin, pay.id).unwrap();
    assert_eq!(p.status, PaymentStatus::Succeeded);
    assert_eq!(payment_events(&w, pay.id.0), vec![EventType::PaymentSucceeded]);
    let ops: Vec<&str> = gw.calls().iter().map(|c| c.0).collect();
    assert_eq!(ops, vec!["charge"], "never voided");
    assert_eq!(w.read(|tx| tx.work(WorkId(attempt))), None, "the attempt's item is done");
}

/// A void the gateway refuses is asked again a few minutes later, by a later run of the same
/// item (which holds the item by its own claim), until the gateway confirms; then the item is
/// done.
pub fn refused_void_is_retried_until_confirmed<H: Harness>() {
    let w = World::new(H::store());
    let s = &w.admin;
    let gw = Scripted::new(Act::Die);
    w.billing.engine().set_sandbox_gateway(gw.clone());
    let (inv, pay) = unpaid(&w);
    died(|| w.billing.payments().pay_by_card(s, inv.id, &[pay.id], &card()));
    gone_for_real(&w);
    let attempt = w.billing.payments().get(s, pay.id).unwrap().transaction_id.expect("the attempt");
    gw.set(Act::Fail);
    w.billing.sandbox().advance(s, Advance::By(Duration::minutes(16))).unwrap();
    assert_eq!(w.billing.payments().get(s, pay.id).unwrap().status, PaymentStatus::Failed);
    assert!(w.read(|tx| tx.work(WorkId(attempt))).is_some(), "kept: the void was refused");
    w.billing.sandbox().advance(s, Advance::By(Duration::minutes(6))).unwrap();
    let voids = gw.calls().iter().filter(|c| c.0 == "void").count();
    assert_eq!(voids, 2, "asked again after VOID_RETRY");
    assert_eq!(w.read(|tx| tx.work(WorkId(attempt))), None, "done once the void is confirmed");
    assert_eq!(payment_events(&w, pay.id.0), vec![EventType::PaymentFailed], "failed once");
}

/// A gateway answer that comes after the item gave the charge up is not recorded: the payment
/// stays FAILED (the charge is voided) and the payer is told, so money is never taken twice or
/// recorded once voided.
pub fn late_charge_outcome_is_not_recorded<H: Harness>() {
    let w = Arc::new(World::new(H::store()));
    let gw = Scripted::new(Act::Sandbox);
    w.billing.engine().set_sandbox_gateway(gw.clone());
    let (inv, pay) = unpaid(&w);
    let later = w.clone();
    gw.set(Act::Hook(Box::new(move || {
        // The answer takes longer than the time-out, in real time too: the item runs
        // meanwhile.
        later.clock.advance(later.billing.engine().work_lease());
        later.billing.sandbox().advance(&later.admin, Advance::By(Duration::minutes(16))).unwrap();
    })));
    expect_code(w.billing.payments().pay_by_card(&w.admin, inv.id, &[pay.id], &card()), Code::INVALID_STATUS);
    let p = w.billing.payments().get(&w.admin, pay.id).unwrap();
    assert_eq!(p.status, PaymentStatus::Failed);
    assert_eq!(payment_events(&w, pay.id.0), vec![EventType::PaymentFailed], "no PAYMENT_SUCCEEDED");
    let ops: Vec<&str> = gw.calls().iter().map(|c| c.0).collect();
    assert_eq!(ops, vec!["charge", "void"]);
    assert_eq!(gw.calls()[0].1, gw.calls()[1].1, "the void names the charge");
}

/// Two payers pressing "pay" at once: the second is refused while the first is at the gateway,
/// and the card is charged once.
pub fn concurrent_payers_charge_once<H: Harness>() {
    let w = World::new(H::store());
    let (entered_tx, entered) = mpsc::channel();
    let (go, go_rx) = mpsc::channel();
    let gw = Scripted::new(Act::Block(entered_tx, Mutex::new(go_rx)));
    w.billing.engine().set_sandbox_gateway(gw.clone());
    let (inv, pay) = unpaid(&w);
    std::thread::scope(|t| {
        let first = t.spawn(|| w.billing.payments().pay_by_card(&w.admin, inv.id, &[pay.id], &card()));
        entered.recv().unwrap();
        expect_code(w.billing.payments().pay_by_card(&w.admin, inv.id, &[pay.id], &card()), Code::INVALID_STATUS);
        go.send(()).unwrap();
        let paid = first.join().unwrap().expect("the first payer pays");
        assert_eq!(paid[0].status, PaymentStatus::Succeeded);
    });
    assert_eq!(gw.calls().len(), 1, "one charge at the gateway");
    assert_eq!(payment_events(&w, pay.id.0), vec![EventType::PaymentSucceeded]);
}

/// A refund through the gateway is on record before the call: a second refund is refused while
/// it is in flight; when the process dies in the call, the item asks the gateway again under the
/// same reference (it refunds at most once) and records the refund, once.
pub fn refund_in_flight_is_recorded_and_finished<H: Harness>() {
    let w = World::new(H::store());
    let s = &w.admin;
    let gw = Scripted::new(Act::Sandbox);
    w.billing.engine().set_sandbox_gateway(gw.clone());
    let (inv, pay) = unpaid(&w);
    w.billing.payments().pay_by_card(s, inv.id, &[pay.id], &card()).unwrap();
    let req = RefundRequest {
        reason: RefundReason::RequestedByCustomer,
        note: Some("changed mind".into()),
        allow_multiple: false,
    };
    gw.set(Act::Die);
    died(|| w.billing.payments().refund(s, pay.id, req.clone()));
    assert_eq!(w.billing.payments().get(s, pay.id).unwrap().status, PaymentStatus::Succeeded);
    let item = w.read(|tx| tx.work(WorkId(pay.id.0))).expect("the refund's work item");
    assert_eq!(item.kind, REFUND_KIND);
    expect_code(w.billing.payments().refund(s, pay.id, req.clone()), Code::INVALID_STATUS);
    assert_eq!(gw.calls().iter().filter(|c| c.0 == "refund").count(), 1);
    w.billing.sandbox().advance(s, Advance::By(Duration::minutes(16))).unwrap();
    let p = w.billing.payments().get(s, pay.id).unwrap();
    assert_eq!(p.status, PaymentStatus::Refunded);
    assert_eq!(
        (p.refund_reason, p.refund_note.as_deref()),
        (Some(RefundReason::RequestedByCustomer), Some("changed mind"))
    );
    let refunds: Vec<String> = gw.calls().into_iter().filter(|c| c.0 == "refund").map(|c| c.1).collect();
    assert_eq!(refunds.len(), 2);
    assert_eq!(refunds[0], refunds[1], "asked again under the same reference");
    assert_eq!(payment_events(&w, pay.id.0), vec![EventType::PaymentSucceeded, EventType::PaymentRefunded]);
    assert_eq!(w.read(|tx| tx.work(WorkId(pay.id.0))), None);
    expect_code(w.billing.payments().refund(s, pay.id, req), Code::PAYMENT_REFUNDED_ALREADY);
}

/// A renewal's charge is recorded with its recovery item and nothing more: approved, it leaves
/// no item of its subscription behind (no next attempt to run days later for nothing); lost in
/// flight (the process dies in the gateway call), its recovery item fails and voids it and
/// queues the next attempt on the retry schedule, which charges it then, once.
pub fn a_lost_renewal_charge_is_retried_by_its_recovery<H: Harness>() {
    use super::subscriptions::{create as create_sub, monthly, pay_first, sub_body};
    use crate::subscription::charge_work_id;
    use crate::subscription::RENEW_CHARGE_KIND;
    let w = World::new(H::store());
    let s = &w.admin;
    let gw = Scripted::new(Act::Sandbox);
    w.billing.engine().set_sandbox_gateway(gw.clone());
    let gym = monthly(&w, s, "100.00");
    let subscribe = |start: &str| {
        let c = consumer(&w, s, false);
        w.billing.payments().save_card(s, c.id, "4111111111111111", 12, 2035, true).unwrap();
        let sub = create_sub(&w, s, sub_body(c.id, &[(gym.id, 1)], start));
        pay_first(&w, s, sub.latest_invoice_id.unwrap());
        sub
    };
    let paid = subscribe("2026-01-15T09:00:00Z");
    let lost = subscribe("2026-01-20T09:00:00Z");
    let cycle_2 = |sub: &crate::subscription::Subscription| {
        let got = w.billing.subscriptions().get(&w.fresh_admin(), sub.id).unwrap().subscription;
        assert_eq!(got.current_cycle_number, 2);
        w.billing.invoices().get(&w.fresh_admin(), got.latest_invoice_id.unwrap()).unwrap().into_parts()
    };
    let attempt_item = |inv: crate::ids::InvoiceId, k: u32| w.read(|tx| tx.work(charge_work_id(inv, k)));

    // Approved at renewal: no attempt item of its invoice is left.
    w.billing.sandbox().advance(s, Advance::To(super::ts("2026-02-15T09:00:01Z"))).unwrap();
    let (inv, pays) = cycle_2(&paid);
    assert_eq!(
        (inv.status, pays[0].status),
        (crate::invoice::InvoiceStatus::Completed, PaymentStatus::Succeeded)
    );
    assert_eq!(attempt_item(inv.id, 1), None, "an approved renewal queues no next attempt");
    assert_eq!(
        w.read(|tx| tx.work(WorkId(pays[0].transaction_id.unwrap()))),
        None,
        "nor keeps its recovery item"
    );

    // Lost in flight: PROCESSING with its recovery item, and no next attempt yet.
    gw.set(Act::Die);
    w.billing.sandbox().advance(s, Advance::To(super::ts("2026-02-20T09:00:01Z"))).unwrap();
    let (inv, pays) = cycle_2(&lost);
    assert_eq!(pays[0].status, PaymentStatus::Processing);
    let attempt = pays[0].transaction_id.expect("the attempt");
    assert_eq!(w.read(|tx| tx.work(WorkId(attempt))).map(|i| i.kind), Some(CHARGE_KIND.to_string()));
    assert_eq!(attempt_item(inv.id, 1), None, "the next attempt waits for this one's failure");
    // Given up: FAILED, voided, and attempt 1 queued a day after attempt 0 was due.
    gone_for_real(&w);
    w.billing.sandbox().advance(s, Advance::By(Duration::minutes(16))).unwrap();
    let (_, pays) = cycle_2(&lost);
    assert_eq!((pays[0].status, pays[0].transaction_id), (PaymentStatus::Failed, None));
    let next = attempt_item(inv.id, 1).expect("the next attempt, queued by the recovery");
    assert_eq!((next.kind.as_str(), next.due_at), (RENEW_CHARGE_KIND, super::ts("2026-02-21T09:00:00Z")));
    assert_eq!(w.read(|tx| tx.work(WorkId(attempt))), None, "done once the void is confirmed");
    // A day later the retry charges it, once.
    w.billing.sandbox().advance(s, Advance::By(Duration::days(1))).unwrap();
    let (inv, pays) = cycle_2(&lost);
    assert_eq!(
        (inv.status, pays.len(), pays[0].status),
        (crate::invoice::InvoiceStatus::Completed, 1, PaymentStatus::Succeeded)
    );
    let ops: Vec<&str> = gw.calls().iter().map(|c| c.0).collect();
    assert_eq!(ops, vec!["charge", "charge", "void", "charge"]);
    assert_eq!((attempt_item(inv.id, 1), attempt_item(inv.id, 2)), (None, None), "nothing left to run");
    assert_eq!(payment_events(&w, pays[0].id.0), vec![EventType::PaymentFailed, EventType::PaymentSucceeded]);
}
