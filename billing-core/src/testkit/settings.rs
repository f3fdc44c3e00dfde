//! Organization settings: admins read and patch the admin-level ones, nobody else may; the
//! support-level ones are refused in a patch and changed only by the support operation; a
//! refused change writes nothing, and no change emits an event or a notification.

use super::{expect_code, expect_invalid, Harness, World};
use crate::error::{Code, Error};
use crate::ids::PaymentId;
use crate::money::Currency;
use crate::org::settings::{SettingsPatch, SupportSettingsPatch};
use crate::org::{OrgSettings, Role};
use crate::store::Store;
use rust_decimal::Decimal;
use serde_json::json;
use std::str::FromStr;

fn stored<S: Store>(w: &World<S>) -> OrgSettings {
    w.read(|tx| tx.org(w.boot.org.id)).expect("org").settings
}

fn nothing_emitted<S: Store>(w: &World<S>) {
    assert!(w.read(|tx| tx.list_events(w.boot.org.id)).is_empty(), "no event");
    assert!(w.notifications().is_empty(), "no notification");
}

fn dec(s: &str) -> Decimal {
    Decimal::from_str(s).unwrap()
}

pub fn admin_reads_and_patches<H: Harness>() {
    let w = World::new(H::store());
    let s = w.billing.org().settings(&w.admin).unwrap();
    assert_eq!(s, OrgSettings::default());
    let v = serde_json::to_value(s.view(w.boot.org.id)).unwrap();
    assert_eq!(v["vat_rate"], json!("15"));
    assert_eq!(v["installment_minimums"], json!({"SAR": "100.00"}));
    assert_eq!(v["auto_charge_on_demand"], json!(false));

    let patch = SettingsPatch::parse(&json!({
        "default_currency": "USD",
        "enabled_currencies": ["SAR", "USD", "SAR"],
        "vat_rate": "5.5",
        "default_payment_methods": {"bank_transfer": true, "amex": false},
    }))
    .unwrap();
    let after = w.billing.org().update_settings(&w.admin, &patch).unwrap();
    assert_eq!(after.default_currency, Currency::USD);
    assert_eq!(after.enabled_currencies, vec![Currency::SAR, Currency::USD]);
    assert_eq!(after.vat_rate, dec("0.055"));
    assert!(after.default_payment_methods.bank_transfer);
    assert!(!after.default_payment_methods.amex);
    assert!(after.default_payment_methods.mada, "methods not named keep their value");
    assert_eq!(after.home_currency, Currency::SAR);
    assert_eq!(after.installment_minimums, OrgSettings::default().installment_minimums);
    assert_eq!(stored(&w), after, "written");
    assert_eq!(w.billing.org().settings(&w.fresh_admin()).unwrap(), after);
    assert_eq!(serde_json::to_value(after.view(w.boot.org.id)).unwrap()["vat_rate"], json!("5.5"));

    // An empty patch changes nothing.
    let same = w.billing.org().update_settings(&w.admin, &SettingsPatch::parse(&json!({})).unwrap()).unwrap();
    assert_eq!(same, after);
    nothing_emitted(&w);
}

pub fn non_admins_are_forbidden<H: Harness>() {
    let w = World::new(H::store());
    let main = w.boot.branch.id;
    let patch = SettingsPatch::parse(&json!({"vat_rate": "0"})).unwrap();
    for role in [Role::BranchAdmin, Role::BranchUser] {
        let u = w.user(role, &[main]);
        let s = w.auth(&w.bearer(&u), Some(main));
        expect_code(w.billing.org().settings(&s), Code::PERMISSION_FORBIDDEN);
        expect_code(w.billing.org().update_settings(&s, &patch), Code::PERMISSION_FORBIDDEN);
    }
    assert_eq!(stored(&w), OrgSettings::default(), "nothing changed");
    nothing_emitted(&w);
}

pub fn support_fields_are_refused_in_a_patch<H: Harness>() {
    for (field, value) in [
        ("auto_charge_on_demand", json!(true)),
        ("installment_minimums", json!({"SAR": "50"})),
        ("installment_split_months", json!(2)),
    ] {
        let r = SettingsPatch::parse(&json!({"vat_rate": "10", field: value}));
        let e = expect_code(r, Code::PERMISSION_FORBIDDEN);
        let Error::Rule { info: Some(info), .. } = e else { panic!("no message") };
        assert!(info.contains(field) && info.contains("billing-server org settings set"), "{info}");
    }
}

pub fn bad_patches_change_nothing<H: Harness>() {
    let w = World::new(H::store());
    for (body, field) in [
        (json!({"colour": "red"}), "colour"),
        (json!({"vat_rate": "100.01"}), "vat_rate"),
        (json!({"vat_rate": "-1"}), "vat_rate"),
        (json!({"vat_rate": "abc"}), "vat_rate"),
        (json!({"vat_rate": "1.00001"}), "vat_rate"),
        (json!({"default_currency": "XYZ"}), "default_currency"),
        (json!({"default_currency": 5}), "default_currency"),
        (json!({"enabled_currencies": []}), "enabled_currencies"),
        (json!({"enabled_currencies": "SAR"}), "enabled_currencies"),
        (json!({"default_payment_methods": {"visa": "maybe"}}), "visa"),
        (json!({"default_payment_methods": {"cash": true}}), "cash"),
        (json!({"default_payment_methods": 3}), "default_payment_methods"),
    ] {
        expect_invalid(SettingsPatch::parse(&body), field);
    }
    match SettingsPatch::parse(&json!({"enabled_currencies": ["SAR", "NOPE"]})) {
        Err(Error::Validation(d)) => assert_eq!(d[0].loc, vec!["body".into(), "enabled_currencies".into(), 1usize.into()]),
        other => panic!("{other:?}"),
    }
    // Well-formed, but the result would not hold together: written nothing.
    for (body, field) in [
        (json!({"default_currency": "USD"}), "default_currency"),
        (json!({"enabled_currencies": ["USD"], "default_currency": "USD"}), "enabled_currencies"),
        (
            json!({"enabled_currencies": ["SAR", "USD"], "default_currency": "EUR", "vat_rate": "1"}),
            "enabled_currencies",
        ),
    ] {
        let patch = SettingsPatch::parse(&body).unwrap();
        expect_invalid(w.billing.org().update_settings(&w.admin, &patch), field);
    }
    assert_eq!(stored(&w), OrgSettings::default(), "nothing changed");
    nothing_emitted(&w);
}

pub fn support_changes_auto_charge_and_installments<H: Harness>() {
    let w = World::new(H::store());
    let org = w.boot.org.id;
    expect_code(w.billing.payments().auto_charge(&w.admin, PaymentId::new()), Code::FEATURE_DISABLED);
    let after = w
        .billing
        .org()
        .support_update_settings(
            org,
            &SupportSettingsPatch {
                auto_charge_on_demand: Some(true),
                installment_minimums: vec![(Currency::USD, Some(dec("25.50"))), (Currency::SAR, None)],
                installment_split_months: Some(3),
                consumer_notifications: None,
            },
        )
        .unwrap();
    assert!(after.auto_charge_on_demand);
    assert_eq!(after.installment_split_months, 3);
    assert_eq!(after.installment_minimums.len(), 1);
    assert_eq!(after.installment_minimums.get("USD"), Some(&dec("25.50")));
    assert_eq!(stored(&w), after);
    assert_eq!(w.billing.org().settings_of(org).unwrap(), after);
    // The next authentication sees the feature on: the unknown payment is now the answer.
    expect_code(w.billing.payments().auto_charge(&w.fresh_admin(), PaymentId::new()), Code::NOT_FOUND);

    // Refused support changes write nothing.
    for bad in [
        SupportSettingsPatch {
            installment_split_months: Some(0),
            ..Default::default()
        },
        SupportSettingsPatch {
            installment_split_months: Some(13),
            ..Default::default()
        },
        SupportSettingsPatch {
            installment_minimums: vec![(Currency::SAR, Some(dec("0")))],
            ..Default::default()
        },
        SupportSettingsPatch {
            installment_minimums: vec![(Currency::KWD, Some(dec("1.0001")))],
            ..Default::default()
        },
        SupportSettingsPatch {
            auto_charge_on_demand: Some(false),
            installment_split_months: Some(99),
            ..Default::default()
        },
    ] {
        assert!(
            matches!(w.billing.org().support_update_settings(org, &bad), Err(Error::Validation(_))),
            "{bad:?}"
        );
    }
    assert_eq!(stored(&w), after, "nothing changed");
    // An admin's patch keeps the support-level settings.
    let patch = SettingsPatch::parse(&json!({"vat_rate": "0"})).unwrap();
    let next = w.billing.org().update_settings(&w.admin, &patch).unwrap();
    assert!(next.auto_charge_on_demand);
    assert_eq!(next.vat_rate, Decimal::ZERO);
    nothing_emitted(&w);
}
