//! Notifications: recorded with the change that causes them (row and due-work item in one
//! transaction), sent by the queue with no transaction open, once, on each of the consumer's
//! channels and in its language; retried on the schedule, refused ones failed at once, lost
//! leases sent again (at least once); the switches; the list; invitations accepted once.

use super::invoices::{create, invoice_body, product};
use super::link_payments::{card, PAID_CARD};
use super::{expect_code, ts, unique_email, Harness, World};
use crate::auth::{Credential, Scope};
use crate::consumer::{Consumer, ConsumerFields};
use crate::error::Code;
use crate::fields::Language;
use crate::list::QueryParams;
use crate::notification::parse_notification_list;
use crate::notification::reminder::REMINDER_KIND;
use crate::notification::send::{EMAIL_KIND, SMS_KIND};
use crate::notification::{Channel, Delivery, Kind, Message, Notification, NotificationSender, Status, RETRY_DELAYS_MINUTES};
use crate::org::accept::AcceptRequest;
use crate::org::settings::{SettingsPatch, SupportSettingsPatch};
use crate::org::{InviteRequest, Role};
use crate::payment_link::checkout::PayRequest;
use crate::store::Store;
use crate::work::DueWork;
use chrono::Duration;
use serde_json::json;
use std::sync::{Arc, Mutex};

/// What the test sender answers next.
#[derive(Debug, Clone, PartialEq)]
pub enum Answer {
    Sent,
    Retry,
    Refused,
    /// Takes the message, then the process "dies" before recording the attempt.
    SentThenCrash,
}

/// A sender that keeps what it was given and answers as told.
pub struct Recorder {
    pub messages: Mutex<Vec<Message>>,
    pub answer: Mutex<Answer>,
}

impl Recorder {
    pub fn new() -> Arc<Recorder> {
        Arc::new(Recorder {
            messages: Mutex::new(vec![]),
            answer: Mutex::new(Answer::Sent),
        })
    }

    pub fn answer(&self, a: Answer) {
        *self.answer.lock().unwrap() = a;
    }

    pub fn taken(&self) -> Vec<Message> {
        self.messages.lock().unwrap().clone()
    }
}

impl NotificationSender for Recorder {
    fn send(&self, m: &Message) -> Delivery {
        assert!(!crate::store::transaction_open(), "a notification is sent with no transaction open");
        let answer = self.answer.lock().unwrap().clone();
        match answer {
            Answer::Sent => {
                self.messages.lock().unwrap().push(m.clone());
                Delivery::Sent {
                    provider_id: Some(format!("msg-{}", self.messages.lock().unwrap().len())),
                }
            }
            Answer::Retry => Delivery::Retry("421 try again later".into()),
            Answer::Refused => Delivery::Refused("550 no such mailbox".into()),
            Answer::SentThenCrash => {
                self.messages.lock().unwrap().push(m.clone());
                panic!("the process dies after the provider took the message");
            }
        }
    }
}

fn customer<S: Store>(w: &World<S>, s: &Scope, methods: &[&str], lang: &str) -> Consumer {
    let v = json!({
        "name": "Sara Al-Harbi",
        "email": unique_email("sara").as_str(),
        "phone_number": format!("+96655{:07}", rand::random::<u32>() % 10_000_000),
        "communication_methods": methods,
        "preferred_language": lang,
    });
    w.billing.consumers().create(s, ConsumerFields::parse(&v, true).unwrap()).unwrap()
}

fn sent_invoice<S: Store>(w: &World<S>, s: &Scope, c: &Consumer) -> crate::invoice::Invoice {
    let p = product(w, s, "115.00", json!({}));
    let mut body = invoice_body(c.id, &[(p.id, 1)], &[]);
    body["notify_consumer"] = json!(true);
    create(w, s, body)
}

fn items<S: Store>(w: &World<S>, n: &Notification) -> Option<DueWork> {
    w.read(|tx| tx.work(crate::ids::WorkId(n.id.0)))
}

fn of_kind<S: Store>(w: &World<S>, kind: Kind) -> Vec<Notification> {
    w.notifications().into_iter().filter(|n| n.kind == kind).collect()
}

/// An invoice sent to a consumer who wants e-mail and SMS: two notifications, each with its
/// due-work item, recorded with the invoice; nothing is claimed while no sender is set; once
/// senders are, each is sent once, in the consumer's language, with the pay link, and never
/// again.
pub fn queued_with_the_change_and_sent_once<H: Harness>() {
    let w = World::new(H::store());
    let s = &w.admin;
    let c = customer(&w, s, &["EMAIL", "SMS"], "EN");
    let inv = sent_invoice(&w, s, &c);
    let ns = w.notifications();
    assert_eq!(ns.iter().map(|n| n.channel).collect::<Vec<_>>(), [Channel::Email, Channel::Sms]);
    for n in &ns {
        assert_eq!(
            (n.kind, n.status, n.language, n.consumer_id),
            (Kind::InvoiceSent, Status::Pending, Language::En, Some(c.id))
        );
        assert_eq!(n.branch_id, Some(s.branch_id()));
        assert_eq!(n.payload["url"], json!(inv.url(w.billing.engine().public_url())));
        assert!(n.attempts.is_empty() && n.sent_at.is_none());
        let item = items(&w, n).expect("queued in the same transaction");
        assert_eq!(item.kind, if n.channel == Channel::Email { EMAIL_KIND } else { SMS_KIND });
    }
    assert_eq!(ns[0].recipient, c.email.as_ref().unwrap().as_str());
    assert_eq!(ns[1].recipient, c.phone_number.as_ref().unwrap().as_str());
    // No sender: not claimed, still pending.
    assert_eq!(w.billing.engine().run_due_work(None, 100).unwrap().claimed, 0);
    let email = Recorder::new();
    w.billing.engine().set_notification_sender(Channel::Email, email.clone());
    let r = w.billing.engine().run_due_work(None, 100).unwrap();
    assert_eq!(r.count(crate::notification::send::SENT), 1, "only the e-mail: no SMS sender yet");
    let sms = Recorder::new();
    w.billing.engine().set_notification_sender(Channel::Sms, sms.clone());
    w.tick(5);
    w.billing.engine().run_due_work(None, 100).unwrap();
    w.billing.engine().run_due_work(None, 100).unwrap();
    let (mails, texts) = (email.taken(), sms.taken());
    assert_eq!((mails.len(), texts.len()), (1, 1), "each sent once");
    let link = inv.url(w.billing.engine().public_url());
    assert_eq!(mails[0].to, c.email.as_ref().unwrap().as_str());
    assert_eq!(mails[0].language, Language::En);
    assert_eq!(mails[0].organization, "Testkit Org");
    assert!(
        mails[0]
            .texts
            .subject
            .starts_with(&format!("Invoice {} from Testkit Org", inv.org_invoice_number)),
        "{:?}",
        mails[0].texts.subject
    );
    assert!(mails[0].texts.text.contains(&link) && mails[0].texts.html.contains(&link));
    assert!(texts[0].texts.short.contains(&link));
    for n in w.notifications() {
        assert_eq!(n.status, Status::Sent, "{n:?}");
        assert_eq!(n.attempts.len(), 1);
        assert_eq!((n.attempts[0].result.as_str(), n.attempts[0].error.as_deref()), ("sent", None));
        assert!(n.attempts[0].provider_id.is_some());
        assert!(n.sent_at.is_some() && n.next_attempt_at.is_none());
        assert!(items(&w, &n).is_none(), "its item is done");
    }
    // An Arabic consumer gets Arabic.
    let ar = customer(&w, s, &["EMAIL"], "AR");
    sent_invoice(&w, s, &ar);
    w.billing.engine().run_due_work(None, 100).unwrap();
    let last = email.taken().pop().unwrap();
    assert_eq!((last.language, last.to.as_str()), (Language::Ar, ar.email.as_ref().unwrap().as_str()));
    assert!(last.texts.subject.contains("فاتورة") && last.texts.html.contains("dir=\"rtl\""));
}

/// A failing provider: retried 1, 5, 15, 60, 240 and 720 minutes after each attempt (in the
/// organization's time), then `failed`; a refusal the provider calls final fails at once.
pub fn failed_attempts_are_retried_then_fail<H: Harness>() {
    let w = World::new(H::store());
    let s = &w.admin;
    let sender = Recorder::new();
    sender.answer(Answer::Retry);
    w.billing.engine().set_notification_sender(Channel::Email, sender.clone());
    let c = customer(&w, s, &["EMAIL"], "AR");
    sent_invoice(&w, s, &c);
    let first_at = w.now();
    w.billing.engine().run_due_work(None, 10).unwrap();
    let n = &w.notifications()[0];
    assert_eq!((n.status, n.attempts.len()), (Status::Retrying, 1));
    assert_eq!(n.attempts[0].result, "retry");
    assert_eq!(n.attempts[0].error.as_deref(), Some("421 try again later"));
    assert_eq!(n.next_attempt_at, Some(first_at + Duration::minutes(1)));
    assert_eq!(items(&w, n).unwrap().due_at, first_at + Duration::minutes(1));
    // Not before its time.
    w.tick(59);
    assert_eq!(w.billing.engine().run_due_work(None, 10).unwrap().claimed, 0);
    for (k, delay) in RETRY_DELAYS_MINUTES.iter().enumerate() {
        let n = &w.notifications()[0];
        w.clock.advance(n.next_attempt_at.unwrap() - w.now());
        w.billing.engine().run_due_work(None, 10).unwrap();
        let n = &w.notifications()[0];
        assert_eq!(n.attempts.len(), k + 2, "attempt {} after {delay} minutes", k + 2);
    }
    let n = &w.notifications()[0];
    assert_eq!((n.status, n.attempts.len()), (Status::Failed, 7));
    assert_eq!(n.attempts.last().unwrap().result, "failed");
    assert!(n.next_attempt_at.is_none() && items(&w, n).is_none());
    w.tick(86_400);
    assert_eq!(w.billing.engine().run_due_work(None, 10).unwrap().claimed, 0, "given up");
    assert!(sender.taken().is_empty());

    // Refused for good: failed at the first attempt.
    sender.answer(Answer::Refused);
    let c2 = customer(&w, s, &["EMAIL"], "EN");
    sent_invoice(&w, s, &c2);
    w.billing.engine().run_due_work(None, 10).unwrap();
    let n = w.notifications().into_iter().find(|n| n.consumer_id == Some(c2.id)).unwrap();
    assert_eq!((n.status, n.attempts.len()), (Status::Failed, 1));
    assert_eq!(n.attempts[0].error.as_deref(), Some("550 no such mailbox"));
    assert!(items(&w, &n).is_none());
}

/// The process dies after the provider took the message and before the attempt was recorded:
/// nothing is lost, the item is claimed again when its lease runs out and the message goes
/// again (at least once); an item whose lease is still held is not.
pub fn a_send_lost_in_a_crash_is_sent_again<H: Harness>() {
    let w = World::new(H::store());
    let s = &w.admin;
    let sender = Recorder::new();
    sender.answer(Answer::SentThenCrash);
    w.billing.engine().set_notification_sender(Channel::Email, sender.clone());
    let c = customer(&w, s, &["EMAIL"], "EN");
    sent_invoice(&w, s, &c);
    let died = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| w.billing.engine().run_due_work(None, 10)));
    assert!(died.is_err(), "the sender died");
    let n = &w.notifications()[0];
    assert_eq!((n.status, n.attempts.len()), (Status::Pending, 0), "nothing recorded");
    assert!(items(&w, n).unwrap().leased_until.is_some());
    sender.answer(Answer::Sent);
    assert_eq!(w.billing.engine().run_due_work(None, 10).unwrap().claimed, 0, "still held by the dead claim");
    w.clock.advance(w.billing.engine().work_lease() + Duration::seconds(1));
    w.billing.engine().run_due_work(None, 10).unwrap();
    let n = &w.notifications()[0];
    assert_eq!((n.status, n.attempts.len()), (Status::Sent, 1));
    assert_eq!(sender.taken().len(), 2, "sent again: at least once");
}

/// The switches: support's master switch and an admin's per-kind switch stop notifications
/// from being recorded (the invoice is still SENT: the organization sends its own, driven by the
/// INVOICE_SENT webhook); one switched off after it was recorded is `canceled`, not sent;
/// `notify_consumer: false` records no INVOICE_SENT.
pub fn switches_stop_recording_and_sending<H: Harness>() {
    let w = World::new(H::store());
    let org = w.boot.org.id;
    let s = &w.admin;
    let sender = Recorder::new();
    let c = customer(&w, s, &["EMAIL"], "EN");
    // notify_consumer: false.
    let p = product(&w, s, "10.00", json!({}));
    create(&w, s, invoice_body(c.id, &[(p.id, 1)], &[]));
    assert!(w.notifications().is_empty());
    // Recorded, then support switches notifications off before it is sent.
    sent_invoice(&w, s, &c);
    assert_eq!(w.notifications().len(), 1);
    let off = SupportSettingsPatch {
        consumer_notifications: Some(false),
        ..Default::default()
    };
    w.billing.org().support_update_settings(org, &off).unwrap();
    w.billing.engine().set_notification_sender(Channel::Email, sender.clone());
    w.billing.engine().run_due_work(None, 10).unwrap();
    let n = &w.notifications()[0];
    assert_eq!(n.status, Status::Canceled);
    assert_eq!(n.attempts.last().map(|a| a.result.as_str()), Some("canceled"));
    assert!(sender.taken().is_empty() && items(&w, n).is_none());
    // Off: nothing recorded, the invoice is still SENT.
    let s = w.fresh_admin();
    let inv = sent_invoice(&w, &s, &c);
    assert_eq!(inv.status, crate::invoice::InvoiceStatus::Sent);
    assert_eq!(w.notifications().len(), 1);
    // On again, but an admin switches invoice e-mails off: still nothing for invoices.
    let on = SupportSettingsPatch {
        consumer_notifications: Some(true),
        ..Default::default()
    };
    w.billing.org().support_update_settings(org, &on).unwrap();
    let patch = SettingsPatch::parse(&json!({"notifications": {"invoice_sent": false}})).unwrap();
    let settings = w.billing.org().update_settings(&w.fresh_admin(), &patch).unwrap();
    assert!(!settings.notifications.invoice_sent && settings.notifications.payment_receipt && settings.consumer_notifications);
    let s = w.fresh_admin();
    sent_invoice(&w, &s, &c);
    assert_eq!(w.notifications().len(), 1);
    // Receipts are still on: a payment marked paid sends one.
    let inv = sent_invoice(&w, &s, &c);
    let (_, pays) = w.billing.invoices().get(&s, inv.id).unwrap().into_parts();
    let req = crate::payment::MarkPaid {
        method: crate::payment::PaymentMethod::Cash,
        note: None,
    };
    w.billing.payments().mark_paid(&s, pays[0].id, req).unwrap();
    let receipts = of_kind(&w, Kind::PaymentReceipt);
    assert_eq!(receipts.len(), 1);
    assert_eq!(receipts[0].payload["payment_id"], json!(pays[0].id));
    assert_eq!(receipts[0].payload["amount"], json!("115.00"));
    // Admins cannot turn the master switch: that is support's.
    expect_code(SettingsPatch::parse(&json!({"consumer_notifications": true})), Code::PERMISSION_FORBIDDEN);
}

/// `GET /notifications`: the branch's notifications (organization admins also see the
/// organization's invitations), filtered by status, channel, kind, consumer and creation
/// time, paged and sorted; another branch's are not seen.
pub fn list_filters_and_scopes<H: Harness>() {
    let w = World::new(H::store());
    let s = &w.admin;
    let both = customer(&w, s, &["EMAIL", "WHATSAPP"], "AR");
    sent_invoice(&w, s, &both);
    w.tick(10);
    let mid = w.now();
    let mail = customer(&w, s, &["EMAIL"], "EN");
    sent_invoice(&w, s, &mail);
    let other = w.new_branch("Bravo");
    let bs = w.in_branch(other.id);
    let far = customer(&w, &bs, &["EMAIL"], "EN");
    sent_invoice(&w, &bs, &far);
    w.billing
        .org()
        .invite(
            s,
            InviteRequest {
                email: unique_email("new"),
                role: Role::BranchUser,
                branches: vec![s.branch_id()],
            },
            Language::En,
        )
        .unwrap();
    let sender = Recorder::new();
    w.billing.engine().set_notification_sender(Channel::Email, sender.clone());
    w.tick(1);
    w.billing.engine().run_due_work(None, 100).unwrap();
    let list = |scope: &Scope, q: &str| {
        let (f, lq) = parse_notification_list(&QueryParams::parse(q)).unwrap();
        let page = w.billing.notifications().list(scope, &f, &lq).unwrap();
        page.map(|d| serde_json::to_value(d.view()).unwrap())
    };
    let all = list(s, "limit=100");
    assert_eq!(all.total, 4, "three consumer notifications of the branch and the invitation");
    assert_eq!(all.items[0]["kind"], json!("ORGANIZATION_INVITE"), "newest first");
    assert_eq!(list(s, "channel=WHATSAPP").items.len(), 1);
    assert_eq!(list(s, "channels=EMAIL&channels=WHATSAPP&kind=INVOICE_SENT").total, 3);
    assert_eq!(list(s, "status=sent").total, 3);
    assert_eq!(list(s, "statuses=pending").items[0]["channel"], json!("WHATSAPP"));
    assert_eq!(list(s, "kinds=ORGANIZATION_INVITE").items[0]["branch_id"], json!(null));
    assert_eq!(list(s, &format!("consumer_id={}", both.id)).total, 2);
    let since = list(s, &format!("created_from={}", crate::clock::format_rfc3339(&mid)));
    assert_eq!(since.total, 2);
    let before = list(s, &format!("created_to={}&sort_direction=asc", crate::clock::format_rfc3339(&mid)));
    assert_eq!(before.total, 2);
    assert_eq!(before.items[0]["consumer_id"], json!(both.id));
    let paged = list(s, "limit=1&page=3&sort_field=created_at&sort_direction=asc");
    assert_eq!((paged.total, paged.items.len(), paged.items[0]["consumer_id"].clone()), (4, 1, json!(mail.id)));
    assert_eq!(list(s, "sort_field=status&sort_direction=asc").items[0]["status"], json!("pending"));
    let view = &list(s, "status=sent&channel=EMAIL&limit=1&sort_direction=asc").items[0];
    assert_eq!(view["attempt_count"], json!(1));
    assert_eq!(view["attempts"][0]["result"], json!("sent"));
    assert!(view["subject"].as_str().unwrap().contains("فاتورة"), "{view}");
    // Branch Bravo sees its own and, as an admin, the invitation.
    assert_eq!(list(&bs, "limit=100").total, 2);
    // A branch admin of the default branch: its branch's, without the invitation.
    let (_, key) = w.scoped_key(&[s.branch_id()]);
    let ba = w.auth(&key, None);
    assert_eq!(list(&ba, "limit=100").total, 3);
    let id: crate::ids::NotificationId = serde_json::from_value(all.items[0]["id"].clone()).unwrap();
    expect_code(w.billing.notifications().get(&ba, id), Code::NOT_FOUND);
    let got = w.billing.notifications().get(s, id).unwrap();
    assert_eq!(serde_json::to_value(got.view()).unwrap()["kind"], json!("ORGANIZATION_INVITE"));
    // Bad filters are 422s.
    for bad in [
        "status=lost",
        "channel=FAX",
        "kind=HELLO",
        "consumer_id=x",
        "created_from=yesterday",
        "sort_field=recipient",
    ] {
        assert!(parse_notification_list(&QueryParams::parse(bad)).is_err(), "{bad}");
    }
}

fn accept<S: Store>(w: &World<S>, token: &str) -> crate::error::Result<serde_json::Value> {
    w.billing
        .org()
        .accept(&AcceptRequest::parse(&json!({"token": token, "first_name": "Nora"})).unwrap())
        .map(|a| serde_json::to_value(a.response()).expect("serializable"))
}

/// An invitation's e-mail carries a signed link; accepting it creates the user (its role and
/// branches) and answers a bearer token that works; it works once, not after it expires, not
/// forged, and not for an e-mail that is already a user. Refusals write nothing.
pub fn invitations_are_accepted_once<H: Harness>() {
    let w = World::new(H::store());
    let s = &w.admin;
    let b = w.new_branch("Bravo");
    let sender = Recorder::new();
    w.billing.engine().set_notification_sender(Channel::Email, sender.clone());
    let email = unique_email("nora");
    let inv = w
        .billing
        .org()
        .invite(
            s,
            InviteRequest {
                email: email.clone(),
                role: Role::BranchAdmin,
                branches: vec![b.id],
            },
            Language::Ar,
        )
        .unwrap();
    w.billing.engine().run_due_work(None, 10).unwrap();
    let m = sender.taken().pop().expect("the invitation was sent");
    assert_eq!((m.to.as_str(), m.kind, m.language), (email.as_str(), Kind::OrganizationInvite, Language::Ar));
    let link = w.billing.org().invite_link(inv.id).unwrap();
    assert!(link.starts_with(&format!("{}/invite/accept?token=", w.billing.engine().public_url())));
    assert!(m.texts.text.contains(&link) && m.texts.html.contains(&link), "{}", m.texts.text);
    let token = link.split_once("token=").unwrap().1.to_string();
    // The stored notification holds no token.
    assert!(!format!("{:?}", w.notifications()).contains(&token));
    // Forged and altered tokens.
    let users_before = w.read(|tx| tx.user_by_email(w.boot.org.id, email.as_str()));
    assert!(users_before.is_none());
    let (id, sig) = token.split_once('.').unwrap();
    for bad in [format!("{id}.AAAA"), format!("{}.{sig}", uuid::Uuid::now_v7().simple()), "nonsense".into()] {
        expect_code(accept(&w, &bad), Code::NOT_FOUND);
    }
    let out = accept(&w, &token).unwrap();
    assert_eq!(out["token_type"], json!("bearer"));
    assert_eq!(out["role"], json!("branch_admin"));
    assert_eq!(out["branches"], json!([b.id]));
    assert_eq!(out["user"]["email"], json!(email.as_str()));
    assert_eq!(out["user"]["first_name"], json!("Nora"));
    let bearer = Credential::Bearer(out["access_token"].as_str().unwrap().to_string());
    let scope = w.auth(&bearer, Some(b.id));
    assert_eq!((scope.actor.role, scope.branch_id()), (Role::BranchAdmin, b.id));
    // Once only.
    expect_code(accept(&w, &token), Code::INVITATION_EXPIRED);
    // An e-mail that is a user already; an expired invitation.
    let again = w
        .billing
        .org()
        .invite(
            s,
            InviteRequest {
                email: email.clone(),
                role: Role::BranchUser,
                branches: vec![b.id],
            },
            Language::En,
        )
        .unwrap();
    expect_code(accept(&w, &w.billing.org().invite_token(again.id).unwrap()), Code::USER_ALREADY_REGISTERED);
    let late = w
        .billing
        .org()
        .invite(
            s,
            InviteRequest {
                email: unique_email("late"),
                role: Role::OrganizationAdmin,
                branches: vec![],
            },
            Language::En,
        )
        .unwrap();
    w.billing
        .sandbox()
        .advance(&w.fresh_admin(), crate::sandbox::Advance::By(Duration::days(8)))
        .unwrap();
    let users = w.read(|tx| tx.user_by_email(w.boot.org.id, late.email.as_str()));
    expect_code(accept(&w, &w.billing.org().invite_token(late.id).unwrap()), Code::INVITATION_EXPIRED);
    assert_eq!(users, None);
    assert_eq!(w.read(|tx| tx.user_by_email(w.boot.org.id, late.email.as_str())), None, "nothing written");
    assert!(w.read(|tx| tx.invitation(late.id)).unwrap().accepted_at.is_none());
    assert!(AcceptRequest::parse(&json!({})).is_err() && AcceptRequest::parse(&json!({"token": ""})).is_err());
}

/// A later installment: its reminder is queued with its charge, due the organization's
/// `installment_reminder_days` before it; when it comes due the consumer's INSTALLMENT_REMINDER
/// is recorded (with the amount and date); the first payment got a receipt. An installment
/// paid before its reminder is due gets none.
pub fn installment_reminders_and_receipts<H: Harness>() {
    let w = World::new(H::store());
    let s = &w.admin;
    let c = customer(&w, s, &["EMAIL"], "EN");
    let p = product(&w, s, "400.00", json!({}));
    let inv = create(&w, s, invoice_body(c.id, &[(p.id, 1)], &[]));
    let pay = |n: u8| {
        let mut r = PayRequest::parse(&json!({"method": card(PAID_CARD), "installments": n})).unwrap();
        r.client = "10.0.0.9".into();
        r
    };
    w.billing.invoices().pay(inv.id, &pay(2)).unwrap();
    let (_, pays) = w.billing.invoices().get(s, inv.id).unwrap().into_parts();
    let receipts = of_kind(&w, Kind::PaymentReceipt);
    assert_eq!(receipts.len(), 1);
    assert_eq!(receipts[0].payload["installment"], json!(1));
    let org = w.boot.org.id;
    let due = w.read(|tx| tx.work_due_times(org, &[REMINDER_KIND], w.now())).next_free;
    assert_eq!(due, Some(pays[1].scheduled_on - Duration::days(3)));
    // A day before the reminder is due: nothing; at its time: the reminder.
    let s = w.fresh_admin();
    w.billing
        .sandbox()
        .advance(&s, crate::sandbox::Advance::To(pays[1].scheduled_on - Duration::days(4)))
        .unwrap();
    assert!(of_kind(&w, Kind::InstallmentReminder).is_empty());
    w.billing
        .sandbox()
        .advance(&w.fresh_admin(), crate::sandbox::Advance::To(pays[1].scheduled_on - Duration::days(2)))
        .unwrap();
    let r = of_kind(&w, Kind::InstallmentReminder);
    assert_eq!(r.len(), 1);
    assert_eq!(r[0].payload["installment"], json!(2));
    assert_eq!(r[0].payload["amount"], json!(pays[1].amount));
    assert_eq!(r[0].payload["due_on"], json!(crate::clock::format_rfc3339(&pays[1].scheduled_on)));
    // Charged on its date: a second receipt.
    w.billing
        .sandbox()
        .advance(&w.fresh_admin(), crate::sandbox::Advance::To(pays[1].scheduled_on + Duration::hours(1)))
        .unwrap();
    assert_eq!(of_kind(&w, Kind::PaymentReceipt).len(), 2);

    // Paid in full early: the reminder finds nothing to remind of.
    let s = w.fresh_admin();
    let inv = create(&w, &s, invoice_body(c.id, &[(p.id, 1)], &[]));
    w.billing.invoices().pay(inv.id, &pay(2)).unwrap();
    w.billing.invoices().pay(inv.id, &pay(1)).unwrap();
    w.billing
        .sandbox()
        .advance(&w.fresh_admin(), crate::sandbox::Advance::By(Duration::days(40)))
        .unwrap();
    assert_eq!(of_kind(&w, Kind::InstallmentReminder).len(), 1);
}

/// A declined renewal charge records the consumer's SUBSCRIPTION_RENEWAL_FAILED, with the
/// unpaid invoice's page.
pub fn failed_renewals_are_told<H: Harness>() {
    let w = World::new(H::store());
    let s = &w.admin;
    let c = customer(&w, s, &["SMS"], "AR");
    let gym = product(&w, s, "100.00", json!({"type": "RECURRING", "recurring_interval": "MONTH"}));
    w.billing.payments().save_card(s, c.id, "4123120001090000", 12, 2035, true).unwrap();
    let sub = super::subscriptions::create(&w, s, super::subscriptions::sub_body(c.id, &[(gym.id, 1)], "2026-01-15T09:00:00Z"));
    let (_, pays) = w.billing.invoices().get(s, sub.latest_invoice_id.unwrap()).unwrap().into_parts();
    let req = crate::payment::MarkPaid {
        method: crate::payment::PaymentMethod::Cash,
        note: None,
    };
    w.billing.payments().mark_paid(s, pays[0].id, req).unwrap();
    w.billing
        .sandbox()
        .advance(&w.fresh_admin(), crate::sandbox::Advance::To(ts("2026-02-15T09:00:01Z")))
        .unwrap();
    let failed = of_kind(&w, Kind::SubscriptionRenewalFailed);
    assert_eq!(failed.len(), 1, "{:?}", w.notifications());
    let latest = w.billing.subscriptions().get(s, sub.id).unwrap().subscription.latest_invoice_id.unwrap();
    assert_eq!((failed[0].channel, failed[0].language), (Channel::Sms, Language::Ar));
    assert_eq!(failed[0].payload["invoice_id"], json!(latest));
    assert_eq!(failed[0].payload["subscription_id"], json!(sub.id));
    assert!(failed[0].payload["url"].as_str().unwrap().ends_with(&format!("/pay/invoices/{latest}")));
}
