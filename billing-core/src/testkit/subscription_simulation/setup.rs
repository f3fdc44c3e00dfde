//! The simulation's organizations: three sandbox organizations in one store, each with its own
//! subscription settings (invoice lead time, renewal retry schedule), and the same catalog —
//! recurring products in groups of one interval (weekly, fortnightly, monthly, every two months,
//! quarterly, half-yearly, yearly; with VAT inclusive, exclusive and exempt prices) and coupons
//! (percentages and fixed amounts).

use super::{Sim, World};
use crate::auth::{Credential, Scope};
use crate::ids::{CouponId, ProductId};
use crate::money::Currency;
use crate::org::settings::SettingsPatch;
use crate::org::BootstrapRequest;
use crate::product::ProductFields;
use crate::store::Store;
use serde_json::{json, Value};

/// Products sharing one interval: a subscription's items come from one group.
#[derive(Debug, Clone)]
pub struct Group {
    pub interval: &'static str,
    pub count: u32,
    pub products: Vec<ProductId>,
}

#[derive(Debug, Clone)]
pub struct SimOrg {
    pub name: String,
    pub key: Credential,
    pub lead_days: u32,
    pub retry_days: Vec<u32>,
    pub groups: Vec<Group>,
    pub coupons: Vec<CouponId>,
}

impl SimOrg {
    /// The organization admin's scope, authenticated now (it sees the test clock as it is now).
    pub fn scope<S: Store>(&self, w: &World<S>) -> Scope {
        w.billing.auth().authenticate(&self.key, None).expect("organization scope")
    }
}

/// (lead days, retry days) of each organization: the defaults, a long lead with a short
/// schedule, a short lead with a long schedule.
const SETTINGS: [(u32, &[u32]); 3] = [(0, &[1, 3, 7]), (7, &[2]), (2, &[1, 2, 4, 10])];

const GROUPS: [(&str, u32); 7] = [
    ("WEEK", 1),
    ("WEEK", 2),
    ("MONTH", 1),
    ("MONTH", 2),
    ("QUARTER", 1),
    ("SEMESTER", 1),
    ("YEAR", 1),
];

const PRICES: [(&str, &str); 3] = [("115.00", "INCLUSIVE"), ("99.99", "EXCLUSIVE"), ("33.33", "EXEMPT")];

pub fn organizations<S: Store>(sim: &mut Sim<S>) {
    for (k, (lead, retries)) in SETTINGS.iter().enumerate() {
        let name = format!("Simulated Org {k}");
        let key = if k == 0 {
            sim.w.admin_key()
        } else {
            let boot = sim
                .w
                .billing
                .org()
                .bootstrap(&BootstrapRequest {
                    org_name: name.clone(),
                    admin_email: super::super::unique_email("sim-admin"),
                    sandbox: true,
                })
                .expect("bootstrap");
            World::<S>::key_of(&boot)
        };
        let mut org = SimOrg {
            name,
            key,
            lead_days: *lead,
            retry_days: retries.to_vec(),
            groups: vec![],
            coupons: vec![],
        };
        let scope = org.scope(&sim.w);
        let patch = json!({"subscription_invoice_lead_days": lead, "subscription_renewal_retry_days": retries});
        sim.w
            .billing
            .org()
            .update_settings(&scope, &SettingsPatch::parse(&patch).expect("settings"))
            .expect("update settings");
        for (interval, count) in GROUPS {
            let mut products = vec![];
            for (i, (price, vat)) in PRICES.iter().enumerate() {
                let body = json!({
                    "name": format!("{interval} x{count} #{i}"),
                    "type": "RECURRING",
                    "recurring_interval": interval,
                    "recurring_interval_count": count,
                    "price": price,
                    "is_price_inclusive_of_vat": *vat == "INCLUSIVE",
                    "is_price_exempt_from_vat": *vat == "EXEMPT",
                });
                products.push(product(sim, &scope, body));
            }
            org.groups.push(Group { interval, count, products });
        }
        for body in [
            json!({"name": "TEN", "discount_value": 10, "is_percentage": true}),
            json!({"name": "SEVEN-HALF", "discount_value": "7.5", "is_percentage": true}),
            json!({"name": "FIVE", "discount_value": "5", "currency": "SAR"}),
            json!({"name": "ODD", "discount_value": "12.34", "currency": "SAR"}),
        ] {
            let c = sim
                .w
                .billing
                .coupons()
                .create(&scope, crate::coupon::CouponFields::parse(&body, true).expect("coupon"))
                .expect("create coupon");
            org.coupons.push(c.id);
        }
        sim.orgs.push(org);
    }
}

fn product<S: Store>(sim: &Sim<S>, scope: &Scope, body: Value) -> ProductId {
    let fields = ProductFields::parse(&body, true, Currency::SAR).expect("product");
    sim.w.billing.products().create(scope, fields).expect("create product").id
}
