//! Lanes: an operation that calls outside the process (here the payment gateway) runs off the
//! write executor and with no transaction open, so while it waits for the other side every
//! other write of the process goes on.

use crate::common::fixtures::*;
use crate::common::invoice_fixtures::*;
use crate::common::TestServer;
use billing_core::money::Money;
use billing_core::payment::gateway::{CardDetails, GatewayOutcome, PaymentGateway, SandboxGateway};
use serde_json::json;
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// A gateway whose charges wait, once entered, until the test lets them go.
struct HeldGateway {
    entered: Mutex<Sender<()>>,
    go: Mutex<Receiver<()>>,
}

impl HeldGateway {
    fn hold(&self) {
        self.entered.lock().unwrap().send(()).unwrap();
        // Never forever: a test that fails elsewhere must not hang the suite.
        let _ = self.go.lock().unwrap().recv_timeout(Duration::from_secs(30));
    }
}

impl PaymentGateway for HeldGateway {
    fn charge_card(&self, reference: &str, card: &CardDetails, amount: Money) -> GatewayOutcome {
        self.hold();
        SandboxGateway.charge_card(reference, card, amount)
    }
    fn charge_token(&self, reference: &str, token: &str, amount: Money) -> GatewayOutcome {
        self.hold();
        SandboxGateway.charge_token(reference, token, amount)
    }
    fn refund(&self, reference: &str, transaction: &str, amount: Money) -> GatewayOutcome {
        SandboxGateway.refund(reference, transaction, amount)
    }
    fn void(&self, reference: &str) -> GatewayOutcome {
        SandboxGateway.void(reference)
    }
}

fn a_held_gateway_call_holds_up_no_write(srv: &TestServer) {
    let inv = simple_invoice(srv, "115.00");
    let pay = first_payment(&inv);
    set_auto_charge(srv, true);
    let consumer: billing_core::ids::ConsumerId = inv["organization_consumer_id"].as_str().unwrap().parse().unwrap();
    srv.app
        .billing
        .payments()
        .save_card(&admin_scope(srv), consumer, "4111111111111111", 12, 2030, true)
        .unwrap();
    let (entered_tx, entered) = channel();
    let (go, go_rx) = channel();
    srv.app.billing.engine().set_sandbox_gateway(Arc::new(HeldGateway {
        entered: Mutex::new(entered_tx),
        go: Mutex::new(go_rx),
    }));
    std::thread::scope(|t| {
        let charge = t.spawn(|| srv.post(&format!("/api/v2/payments/auto-charge-on-demand/{pay}"), json!({})));
        entered
            .recv_timeout(Duration::from_secs(20))
            .expect("the charge reaches the gateway (an Io operation on the write executor is refused before)");
        // The charge is now waiting at the gateway: durable writes of the process go on.
        let (done_tx, done) = channel();
        t.spawn(move || {
            for n in 0..5 {
                let r = srv.post("/api/v2/consumers", json!({"name": format!("While waiting {n}")}));
                done_tx.send(r.status).unwrap();
            }
        });
        for _ in 0..5 {
            let status = done.recv_timeout(Duration::from_secs(20)).unwrap_or_else(|_| {
                go.send(()).ok();
                panic!("a write waited for the gateway call")
            });
            assert_eq!(status, 200);
        }
        // Meanwhile the payment is on record as being processed, and refuses a second attempt.
        assert_eq!(ok(srv.get(&payment_path(&pay)))["current_status"], "PROCESSING");
        let again = srv.post(&format!("/api/v2/payments/auto-charge-on-demand/{pay}"), json!({}));
        assert_error(&again, 400, "INVALID_STATUS");
        go.send(()).unwrap();
        let r = charge.join().unwrap();
        assert_eq!(ok(r), json!({"payment_id": pay, "invoice_id": id_of(&inv)}));
    });
    assert_eq!(ok(srv.get(&payment_path(&pay)))["current_status"], "SUCCEEDED");
    assert_eq!(
        ok(srv.get("/api/v2/consumers?search_term=While%20waiting"))["data"].as_array().unwrap().len(),
        5
    );
}

http_tests!(a_held_gateway_call_holds_up_no_write);
postgres_smoke!(a_held_gateway_call_holds_up_no_write);
