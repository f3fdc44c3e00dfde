//! The conformance suite: behavioural tests of the core, generic over [`Store`], that every
//! store crate runs from its own tests with one line:
//!
//! ```ignore
//! struct MyHarness;
//! impl billing_core::testkit::Harness for MyHarness {
//!     type S = MyStore;
//!     fn store() -> MyStore { /* a fresh, empty store */ }
//! }
//! billing_core::conformance_suite!(MyHarness);
//! ```
//!
//! The macro expands to one `#[test]` per case, so failures are reported separately.
//!
//! Every case builds its own [`World`] (a fresh store, a [`ManualClock`] and one bootstrapped
//! sandbox organization) and checks outcomes, including what was *not* written: a refused
//! operation leaves lists, rows and the notification outbox as they were.

use crate::auth::NewApiKey;
use crate::auth::{hash_secret, ApiKey, Credential, KeyPair, Scope};
use crate::billing::Billing;
use crate::branch::Branch;
use crate::clock::{Clock, ManualClock, Timestamp};
use crate::error::{Code, Error, Result, StoreError};
use crate::fields::Email;
use crate::ids::{ApiKeyId, BranchId, UserId};
use crate::money::{Currency, Money};
use crate::notification::Notification;
use crate::org::BootstrapRequest;
use crate::org::{Role, User};
use crate::store::{Store, StoreResult, Tx};
use chrono::Duration;
use std::fmt::Debug;
use std::sync::Arc;

pub mod attempts;
pub mod auth;
pub mod batches;
pub mod branches;
pub mod catalog;
pub mod concurrency;
pub mod consumers;
pub mod coupons;
pub mod idempotency;
pub mod invitations;
pub mod invoice_payments;
pub mod invoices;
pub mod link_payments;
pub mod notifications;
pub mod payment_link_reads;
pub mod payment_links;
pub mod plan_changes;
pub mod renewal_day;
pub mod sandbox;
pub mod settings;
pub mod subscription_freezes;
pub mod subscription_simulation;
pub mod subscription_trials;
pub mod subscriptions;
pub mod tx;
pub mod webhooks;

/// Builds fresh stores for the suite.
pub trait Harness {
    type S: Store;
    /// A store with no data in it, not shared with any other call.
    fn store() -> Self::S;
    /// Whether the backend can run here (a database server configured). When it cannot, each
    /// case prints a loud SKIPPED line instead of running.
    fn available() -> bool {
        true
    }
}

/// A store, a manual clock and one bootstrapped sandbox organization, ready to call.
pub struct World<S: Store> {
    pub billing: Billing<S>,
    pub clock: Arc<ManualClock>,
    /// The organization admin's scope in the default branch.
    pub admin: Scope,
    pub boot: crate::org::Bootstrap,
}

pub const JWT_SECRET: &[u8] = b"testkit-secret";

pub fn start() -> Timestamp {
    crate::clock::parse_datetime("2026-01-15T09:00:00Z").unwrap()
}

/// A timestamp from RFC 3339 text (microseconds kept).
pub fn ts(s: &str) -> Timestamp {
    crate::clock::parse_datetime(s).unwrap_or_else(|| panic!("bad timestamp {s}"))
}

/// An exact amount (`"1.250"` KWD); panics when the currency has fewer digits.
pub fn money(amount: &str, c: Currency) -> Money {
    // Not `Money::exact`: stores must keep amounts beyond what the API accepts, too.
    let d: rust_decimal::Decimal = amount.parse().expect("decimal");
    let m = Money::new(d, c);
    assert_eq!(m.amount(), d, "{amount} is not exact in {c}");
    m
}

/// A fresh, valid, unique e-mail address.
pub fn unique_email(prefix: &str) -> Email {
    Email::parse(&format!("{prefix}.{}@example.com", uuid::Uuid::now_v7().simple())).unwrap()
}

/// Asserts that `r` failed with the handled error `code`, and returns the error.
#[track_caller]
pub fn expect_code<T: Debug>(r: Result<T>, code: Code) -> Error {
    match r {
        Err(e @ Error::Rule { code: c, .. }) if c == code => e,
        other => panic!("expected error {}, got {other:?}", code.as_str()),
    }
}

/// Asserts that `r` failed validation with a `detail` entry at `["body"|"query", field]`.
#[track_caller]
pub fn expect_invalid<T: Debug>(r: Result<T>, field: &str) {
    match r {
        Err(Error::Validation(d)) => {
            let at = |e: &crate::error::FieldError| e.loc.last() == Some(&crate::error::LocPart::Key(field.to_string()));
            assert!(d.iter().any(at), "expected a validation error at '{field}', got {d:?}");
        }
        other => panic!("expected a validation error at '{field}', got {other:?}"),
    }
}

/// Asserts that `r` failed with a unique violation, and returns the constraint name reported.
#[track_caller]
pub fn expect_unique<T: Debug>(r: Result<T>) -> String {
    match r {
        Err(Error::Store(StoreError::UniqueViolation(name))) => name,
        other => panic!("expected StoreError::UniqueViolation, got {other:?}"),
    }
}

impl<S: Store> World<S> {
    pub fn new(store: S) -> Self {
        let clock = Arc::new(ManualClock::new(start()));
        let billing = Billing::new(store, clock.clone()).with_jwt_secret(JWT_SECRET);
        let boot = billing
            .org()
            .bootstrap(&BootstrapRequest {
                org_name: "Testkit Org".into(),
                admin_email: Email::parse("admin@example.com").unwrap(),
                sandbox: true,
            })
            .expect("bootstrap");
        let admin = billing
            .auth()
            .authenticate(
                &Credential::ApiKey {
                    key: boot.api_key.key.clone(),
                    secret: boot.api_key.secret.clone(),
                },
                None,
            )
            .expect("admin scope");
        World { billing, clock, admin, boot }
    }

    /// The bootstrap admin's all-branches API key.
    pub fn admin_key(&self) -> Credential {
        Credential::ApiKey {
            key: self.boot.api_key.key.clone(),
            secret: self.boot.api_key.secret.clone(),
        }
    }

    /// The admin's scope in another branch.
    pub fn in_branch(&self, branch: BranchId) -> Scope {
        self.billing.auth().authenticate(&self.admin_key(), Some(branch)).expect("branch scope")
    }

    /// The admin's scope in the default branch, authenticated now: it sees the organization as
    /// stored now (its test-clock offset), as a new request would.
    pub fn fresh_admin(&self) -> Scope {
        self.billing.auth().authenticate(&self.admin_key(), None).expect("admin scope")
    }

    /// The server clock.
    pub fn now(&self) -> Timestamp {
        self.clock.now()
    }

    /// Moves the server clock forward.
    pub fn tick(&self, seconds: i64) {
        self.clock.advance(Duration::seconds(seconds));
    }

    /// A new branch (the clock moves one second first, so branches have distinct ages).
    pub fn new_branch(&self, name: &str) -> Branch {
        self.tick(1);
        self.billing.branches().create(&self.admin, name.to_string()).expect("create branch")
    }

    /// A branch-scoped API key (a branch admin) over `branches`; the first is its default.
    pub fn scoped_key(&self, branches: &[BranchId]) -> (ApiKey, Credential) {
        let req = NewApiKey {
            name: "scoped".into(),
            branch_ids: branches.to_vec(),
            default_branch_id: None,
            is_all_branches: false,
        };
        let (key, pair) = self.billing.api_keys().create_for(self.boot.org.id, &req).expect("create api key");
        (
            key,
            Credential::ApiKey {
                key: pair.key,
                secret: pair.secret,
            },
        )
    }

    /// Inserts a key directly (e.g. a revoked one) and returns its credential.
    pub fn insert_key(&self, default_branch: BranchId, revoked_at: Option<Timestamp>) -> (ApiKey, Credential) {
        let pair = KeyPair::generate();
        let key = ApiKey {
            id: ApiKeyId::new(),
            org_id: self.boot.org.id,
            user_id: self.boot.user.id,
            name: "direct".into(),
            key: pair.key.clone(),
            secret_hash: hash_secret(&pair.secret),
            branch_ids: vec![],
            default_branch_id: default_branch,
            is_all_branches: true,
            created_at: self.now(),
            revoked_at,
        };
        self.write(|tx| tx.insert_api_key(&key));
        (
            key,
            Credential::ApiKey {
                key: pair.key,
                secret: pair.secret,
            },
        )
    }

    /// A user of the organization with this role and these branches.
    pub fn user(&self, role: Role, branches: &[BranchId]) -> User {
        self.billing
            .org()
            .create_user(self.boot.org.id, unique_email(role.as_str()), role, branches.to_vec())
            .expect("create user")
    }

    /// A bearer credential for `user`, valid for an hour of server time.
    pub fn bearer(&self, user: &User) -> Credential {
        Credential::Bearer(self.billing.auth().issue_token(user, Duration::hours(1)))
    }

    pub fn auth(&self, cred: &Credential, branch: Option<BranchId>) -> Scope {
        self.billing.auth().authenticate(cred, branch).expect("authenticate")
    }

    /// Runs `f` in a read transaction; store errors fail the case.
    pub fn read<R>(&self, mut f: impl FnMut(&mut dyn Tx) -> StoreResult<R>) -> R {
        self.billing.engine().store.read(|tx| Ok(f(tx)?)).expect("read")
    }

    /// Runs `f` in a write transaction; store errors fail the case.
    pub fn write<R>(&self, mut f: impl FnMut(&mut dyn Tx) -> StoreResult<R>) -> R {
        self.billing.engine().store.write(|tx| Ok(f(tx)?)).expect("write")
    }

    /// Runs `f` in a write transaction and returns its outcome.
    pub fn try_write<R>(&self, mut f: impl FnMut(&mut dyn Tx) -> StoreResult<R>) -> Result<R> {
        self.billing.engine().store.write(|tx| Ok(f(tx)?))
    }

    /// The organization's notification outbox.
    pub fn notifications(&self) -> Vec<Notification> {
        let org = self.boot.org.id;
        self.read(|tx| tx.list_notifications(org))
    }

    /// Branch names visible to `scope`, in list order.
    pub fn branch_names(&self, scope: &Scope) -> Vec<String> {
        self.billing
            .branches()
            .list(scope)
            .expect("list branches")
            .into_iter()
            .map(|b| b.name)
            .collect()
    }

    /// All live branches of the organization, as stored.
    pub fn all_branches(&self) -> Vec<Branch> {
        let org = self.boot.org.id;
        self.read(|tx| tx.list_branches(org))
    }

    pub fn admin_user_id(&self) -> UserId {
        self.boot.user.id
    }

    /// A second organization in the same store (sandbox unless `live`).
    pub fn other_org(&self, name: &str, live: bool) -> crate::org::Bootstrap {
        let req = BootstrapRequest {
            org_name: name.into(),
            admin_email: unique_email("other-admin"),
            sandbox: !live,
        };
        self.billing.org().bootstrap(&req).expect("bootstrap another organization")
    }

    /// The API-key credential of another bootstrapped organization.
    pub fn key_of(boot: &crate::org::Bootstrap) -> Credential {
        Credential::ApiKey {
            key: boot.api_key.key.clone(),
            secret: boot.api_key.secret.clone(),
        }
    }
}

/// One `#[test]` per conformance case, for the harness `$h`: the test
/// `conformance::<module>::<case>` runs `billing_core::testkit::<module>::<case>::<$h>()`.
#[macro_export]
macro_rules! conformance_suite {
    ($h:ty) => {
        $crate::conformance_cases!($h;
            tx: [
                org_round_trip,
                org_insert_update_and_list,
                missing_rows_are_none,
                user_round_trip_and_first_admin,
                api_key_context_joins_key_org_and_branch,
            api_key_round_trip_and_default_count,
                branch_round_trip_and_retirement,
                branch_user_count_is_derived,
                branch_name_unique_constraint,
                consumer_round_trip,
                consumer_unique_constraints,
                consumer_conflict_lookup,
                product_round_trip,
                coupon_round_trip,
                notification_round_trip_and_order,
                events_in_write_order,
                duplicate_ids_are_unique_violations,
                err_rolls_back_everything,
                store_error_mid_transaction_rolls_back,
                write_each_keeps_each_item_alone,
                write_each_reads_organizations_and_endpoints_as_they_are,
                write_each_reads_its_appends_as_they_are,
                write_each_completes_drops_and_numbers_as_each_would,
                writes_are_visible_inside_their_transaction,
                rows_of_other_scopes_are_missing,
                extreme_values_round_trip,
            ],
            auth: [
                api_key_authenticates,
                bad_api_keys_are_unauthorized,
                inaccessible_branch_is_forbidden,
                scoped_key_acts_as_branch_admin,
                create_api_key_refusals_write_nothing,
                jwt_authenticates,
                bad_and_expired_jwts_are_unauthorized,
                branch_user_jwt_sees_only_its_branches,
                user_without_branches_is_forbidden,
                kept_authentications_follow_changes,
                revoked_and_rotated_keys_are_refused_at_once,
            ],
            branches: [
                bootstrap_creates_default_branch,
                list_visibility_per_role,
                create_existing_name_returns_it,
                rename_rules,
                delete_last_branch_refused,
                delete_default_branch_of_key_refused,
                deleted_branch_disappears,
                branch_user_cannot_change_branches,
                branch_admin_cannot_create_or_delete,
                names_compare_case_insensitively_beyond_ascii,
                branch_with_unfinished_business_is_kept_then_retired_readable,
            ],
            settings: [
                admin_reads_and_patches,
                non_admins_are_forbidden,
                support_fields_are_refused_in_a_patch,
                bad_patches_change_nothing,
                support_changes_auto_charge_and_installments,
            ],
            invitations: [
                org_admin_invites_to_any_branch,
                branch_admin_invites_to_own_branches_only,
                branch_user_cannot_invite,
                invitation_expires_in_seven_days_of_org_time,
                invite_to_unknown_branch_records_nothing,
            ],
            notifications: [
                queued_with_the_change_and_sent_once,
                failed_attempts_are_retried_then_fail,
                a_send_lost_in_a_crash_is_sent_again,
                switches_stop_recording_and_sending,
                list_filters_and_scopes,
                invitations_are_accepted_once,
                installment_reminders_and_receipts,
                failed_renewals_are_told,
            ],
            consumers: [
                create_and_get,
                create_applies_defaults,
                update_changes_only_given_fields,
                duplicate_phone_refused,
                duplicate_email_refused_case_insensitively,
                duplicates_allowed_in_another_branch,
                duplicates_allowed_after_soft_delete,
                update_onto_another_consumers_contact_refused,
                soft_delete_keeps_get_and_leaves_lists,
                list_paging,
                list_sorts_with_id_tie_break,
                list_search,
                search_is_a_literal_substring,
                list_filters,
                metadata_filter_keys_are_literal,
                metadata_filter_matches_scalars_by_json_text,
                search_folds_non_ascii_case,
                accepted_text_round_trips,
                list_sorts_place_missing_values_first_ascending,
                list_sorts_are_byte_order,
                branch_isolation,
            ],
            catalog: [
                product_prices_round_trip,
                create_one_off_and_recurring,
                list_filters,
                list_sorts_and_paging,
                list_search_and_metadata,
                update_replaces_prices,
                price_operations,
                frozen_product_refuses_every_change,
                marking_products_used_changes_only_the_flag,
                marking_products_used_follows_the_transaction,
                deleted_product_is_gone,
                product_branch_isolation,
                accepted_amounts_are_stored_exactly,
                unpriced_products_sort_first_ascending,
                search_folds_non_ascii_case,
                metadata_filter_matches_scalars_by_json_text,
            ],
            coupons: [
                create_percentage_and_fixed,
                invalid_coupons_are_not_created,
                list_filters_and_search,
                list_sorts_with_id_tie_break,
                update_coupon,
                frozen_coupon_refuses_update,
                delete_coupon,
                coupon_branch_isolation,
                accepted_discounts_are_stored_exactly,
                never_updated_coupons_sort_first_ascending,
                search_folds_non_ascii_case,
            ],
            sandbox: [
                advance_by_seconds,
                advance_to_a_date,
                clock_never_goes_back,
                live_organization_has_no_test_clock,
                org_time_follows_the_test_clock,
                only_organization_admins_advance_the_clock,
            ],
            invoices: [
                coupons_count_their_redemptions,
                amounts_after_zero_totals_and_refunds,
                create_computes_exact_totals,
                create_refusals_write_nothing,
                notify_sends_and_records,
                invoice_numbers_are_gapless_under_concurrency,
                amounts_round_trip_through_the_store,
                list_filters_and_sorts,
                mark_paid_completes_with_events,
                refunds_single_and_related,
                installments_replace_the_payment,
                installment_mark_paid_needs_accepted,
                void_send_and_inplace,
                page_reads_payments_and_consumers_in_one_go,
                consumer_with_open_invoices_cannot_be_deleted,
                auto_charge_on_demand,
                several_payments_paid_together,
            ],
            payment_links: [
                create_prices_like_an_invoice,
                create_refusals_write_nothing,
                recurring_links_take_the_interval_and_no_installments,
                payment_link_round_trip,
                list_filters_and_sorts,
                status_changes,
                coupon_changes_reprice,
                active_links_hold_consumer_and_branch,
            ],
            payment_link_reads: [
                link_products_and_coupons_read_together,
                listed_links_are_whole,
            ],
            subscriptions: [
                create_issues_the_first_invoice,
                marking_the_latest_invoice_paid_changes_only_that,
                create_refusals_write_nothing,
                subscription_round_trip,
                one_invoice_per_cycle_is_a_unique_key,
                a_year_of_monthly_renewals,
                renewal_run_twice_issues_once,
                renewals_of_one_claim_run_together,
                a_batch_reads_what_it_issued_and_issues_one_per_cycle,
                prefetched_renewal_reads_follow_the_writes,
                prefetched_outcome_reads_follow_the_writes,
                a_batch_updates_invoices_and_payments_as_each_would,
                a_batch_updates_subscriptions_as_each_would,
                a_batch_marks_latest_invoices_paid_as_each_would,
                rows_read_ahead_are_written_as_each_would,
                cancel_and_uncancel,
                until_cycle_number_ends_it,
                declined_renewals_are_retried_then_inactivate,
                list_filters_and_sorts,
                prefetched_list_views_read_as_alone,
            ],
            subscription_freezes: [
                freeze_extends_the_period_and_reanchors,
                a_period_end_inside_a_freeze_waits_for_its_end,
                update_and_delete_freezes,
                freeze_refusals_write_nothing,
                cancel_ends_the_freezes,
                freeze_transitions_run_once,
                freeze_list_pages_and_sorts,
                freeze_and_trial_round_trip,
                freeze_moves_a_prepared_invoice,
                paying_into_a_freeze_in_force_is_frozen,
                freeze_starting_at_the_period_end_moves_it,
            ],
            subscription_simulation: [random_subscriptions_over_three_years],
            subscription_trials: [
                trial_then_the_first_paid_cycle,
                trial_pending_until_paid,
                trial_cancel_and_refusals,
            ],
            plan_changes: [
                immediate_fields_apply_at_once,
                plan_change_is_scheduled_then_billed_as_previewed,
                second_update_replaces_and_delete_withdraws,
                update_refusals_write_nothing,
                interval_change_reanchors_the_cycles,
                kept_products_keep_their_price,
                lead_time_prepares_the_next_invoice,
                plan_change_reissues_a_prepared_invoice,
                cancellation_withdraws_a_prepared_invoice,
                paid_prepared_invoice_is_kept,
                dunning_follows_the_organization_schedule,
                subscription_settings_are_validated,
                concurrent_preparation_and_renewal_issue_once,
                plan_change_rows_and_cycle_pointers,
                random_plan_changes_bill_as_previewed,
                immediate_cancellation_voids_a_prepared_invoice,
                ending_an_inactive_subscription_withdraws_its_prepared_invoice,
            ],
            link_payments: [
                paid_card_creates_everything_in_one_go,
                every_sandbox_card_outcome,
                wallet_ranges,
                installments_with_exact_amounts,
                max_payments_complete_the_link,
                refusals_write_nothing,
                concurrent_attempts_charge_once,
                unrecorded_attempt_is_voided,
                clock_advance_waits_for_a_live_link_payment,
                later_installments_are_charged_on_their_dates,
                recurring_link_starts_a_subscription,
            ],
            invoice_payments: [
                installments_keep_the_card_and_fall_due,
                failed_attempts_are_counted_per_target_and_client,
            ],
            webhooks: [
                work_round_trip_and_leases,
                due_follows_the_org_clock,
                queue_depths_by_kind,
                concurrent_claims_take_each_item_once,
                endpoints_round_trip_and_validation,
                events_enqueue_fanout_only_for_branches_with_endpoints,
                delivery_round_trip_unique_and_filters,
                delivery_is_signed_with_spec_headers,
                retry_schedule_runs_on_the_sandbox_clock,
                success_on_a_later_attempt,
                subscriptions_disabled_deleted_and_branches,
                work_due_times_of_free_and_held_items,
                one_long_advance_replays_the_retry_schedule,
                advances_report_progress,
                branch_users_cannot_manage_webhooks,
                fan_out_batch_skips_lost_leases,
                deliveries_of_one_stop_run_side_by_side,
                webhook_destinations_must_be_public,
                fair_claims_pass_over_busy_organizations,
                claims_merge_server_time_and_clocks_ahead,
            ],
            batches: [
                batch_work_calls_check_each_lease,
                insert_work_if_absent_keeps_the_existing_item,
                batch_delivery_calls_match_the_single_ones,
                batched_fan_out_makes_each_delivery_once,
                recorded_batches_keep_only_held_leases,
            ],
            attempts: [
                charge_in_flight_is_recorded_and_recovered,
                clock_advance_waits_for_a_live_charge,
                late_charge_outcome_is_not_recorded,
                refused_void_is_retried_until_confirmed,
                concurrent_payers_charge_once,
                refund_in_flight_is_recorded_and_finished,
                a_lost_renewal_charge_is_retried_by_its_recovery,
            ],
            idempotency: [
                record_round_trip_and_scoping,
                finished_requests_replay_and_other_requests_are_refused,
                running_requests_are_waited_for_then_taken_over,
                marks_commit_and_roll_back_with_the_operation,
                committed_requests_are_never_run_again,
                keys_expire_after_24_hours_of_org_time,
                racing_claims_let_one_run,
            ],
            concurrency: [
                reads_do_not_wait_for_writers,
                failing_writes_do_not_take_others_down,
                concurrent_duplicate_consumers_one_wins,
                concurrent_clock_advances_add_up,
                concurrent_branch_creates_agree,
            ],
        );
    };
}

#[doc(hidden)]
#[macro_export]
macro_rules! conformance_cases {
    ($h:ty; $($module:ident : [$($case:ident),* $(,)?]),* $(,)?) => {
        mod conformance {
            #[allow(unused_imports)]
            use super::*;
            $(
                mod $module {
                    #[allow(unused_imports)]
                    use super::*;
                    $(
                        #[test]
                        fn $case() {
                            if !<$h as $crate::testkit::Harness>::available() {
                                eprintln!("SKIPPED conformance::{}::{}: backend not configured", stringify!($module), stringify!($case));
                                return;
                            }
                            $crate::testkit::$module::$case::<$h>();
                        }
                    )*
                }
            )*
        }
    };
}
