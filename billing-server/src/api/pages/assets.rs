//! The checkout pages' script and style (`/pay/assets/…`) and the embedding script
//! (`/embed.js`), compiled into the binary from `billing-server/assets/`.

use crate::api::{Page, Reply, Request};
use crate::backend::Backend;
use billing_core::error::Result;
use billing_core::Billing;

const CHECKOUT_JS: &str = include_str!("../../../assets/checkout.js");
const CHECKOUT_CSS: &str = include_str!("../../../assets/checkout.css");
const EMBED_JS: &str = include_str!("../../../assets/embed.js");

pub(super) fn checkout_js(_: &Billing<Backend>, _: Request) -> Result<Reply> {
    Ok(Reply::Page(Page::asset("text/javascript; charset=utf-8", CHECKOUT_JS)))
}

/// The embedding script: `window.BillingCheckout.mount(opts)` (see docs/api.md and the file).
pub(super) fn embed_js(_: &Billing<Backend>, _: Request) -> Result<Reply> {
    Ok(Reply::Page(Page::asset("text/javascript; charset=utf-8", EMBED_JS)))
}

pub(super) fn checkout_css(_: &Billing<Backend>, _: Request) -> Result<Reply> {
    Ok(Reply::Page(Page::asset("text/css; charset=utf-8", CHECKOUT_CSS)))
}
