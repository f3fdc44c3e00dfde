//! The organization's settings' operations (organization admins only). The patch and its
//! rules are [`billing_model::org::settings`]'s.

pub use billing_model::org::settings::*;

use super::OrgSettings;
use crate::auth::Scope;
use crate::error::{Error, FieldError, Result};
use crate::ids::OrgId;
use crate::lane::Lane;
use crate::store::Store;

pub mod lane {
    use super::Lane;
    pub const GET: Lane = Lane::Read;
    pub const UPDATE: Lane = Lane::Write;
}

fn require_admin(scope: &Scope) -> Result<()> {
    if scope.actor.is_org_admin() {
        Ok(())
    } else {
        Err(Error::forbidden("only organization admins may see or change the organization's settings"))
    }
}

impl<S: Store> super::ops::Organizations<'_, S> {
    /// The organization's settings (organization admins only), as stored now.
    pub fn settings(&self, scope: &Scope) -> Result<OrgSettings> {
        require_admin(scope)?;
        self.settings_of(scope.org_id())
    }

    /// Applies an admin's patch in one transaction and returns the settings now in force.
    /// Nothing is written when the patch is refused; no event is emitted.
    pub fn update_settings(&self, scope: &Scope, patch: &SettingsPatch) -> Result<OrgSettings> {
        require_admin(scope)?;
        self.store.write(|tx| {
            let mut org = tx.org(scope.org_id())?.ok_or_else(|| Error::not_found("Organization", scope.org_id()))?;
            let next = patch.apply(&org.settings)?;
            if next != org.settings {
                org.settings = next;
                tx.update_org(&org)?;
            }
            Ok(org.settings)
        })
    }

    /// An organization's settings, for support (the CLI).
    pub fn settings_of(&self, org_id: OrgId) -> Result<OrgSettings> {
        self.store
            .read(|tx| Ok(tx.org(org_id)?))?
            .map(|o| o.settings)
            .ok_or_else(|| Error::not_found("Organization", org_id))
    }

    /// Applies a support-level change (the CLI) in one transaction; a refused change writes
    /// nothing and is a 422-class error carrying one sentence.
    pub fn support_update_settings(&self, org_id: OrgId, patch: &SupportSettingsPatch) -> Result<OrgSettings> {
        self.store.write(|tx| {
            let mut org = tx.org(org_id)?.ok_or_else(|| Error::not_found("Organization", org_id))?;
            let next = patch
                .apply(&org.settings)
                .map_err(|m| Error::invalid(FieldError::new("value_error", vec![], m)))?;
            if next != org.settings {
                org.settings = next;
                tx.update_org(&org)?;
            }
            Ok(org.settings)
        })
    }
}
