//! The card and wallet processor. [`PaymentGateway`] is what the engine charges tokenized cards
//! and refunds gateway payments through; [`SandboxGateway`] simulates it for sandbox
//! organizations with the outcomes of the sandbox tables (reference: sandbox.md).

use crate::money::Money;

/// A gateway's answer: `code` "00" is approved; anything else failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GatewayOutcome {
    pub approved: bool,
    pub code: String,
    pub message: String,
}

impl GatewayOutcome {
    fn of(code: &str, message: &str) -> Self {
        GatewayOutcome {
            approved: code == "00",
            code: code.into(),
            message: message.into(),
        }
    }
}

pub trait PaymentGateway: Send + Sync {
    /// Charges a tokenized card.
    fn charge_token(&self, token: &str, amount: Money) -> GatewayOutcome;
    /// Refunds a payment taken through the gateway, in full.
    fn refund(&self, transaction: &str, amount: Money) -> GatewayOutcome;
}

/// The sandbox simulation.
#[derive(Debug, Default, Clone, Copy)]
pub struct SandboxGateway;

/// The outcome of a sandbox test card number (also what a token made from it charges with).
pub fn card_outcome(number: &str) -> GatewayOutcome {
    let table: &[(&str, &str, &str)] = &[
        ("4201320111111010", "00", "APPROVED"),
        ("4201320000013020", "99", "UNSPECIFIED FAILURE"),
        ("4201320000311101", "51", "INSUFFICIENT FUNDS"),
        ("4201320131000508", "41", "DECLINED: LOST CARD"),
        ("4201321234411220", "05", "DECLINED"),
        ("4201322267774310", "54", "DECLINED: EXPIRED CARD"),
        ("4201326324640570", "61", "DECLINED: EXCEEDS WITHDRAWAL LIMIT"),
        ("4201321144311528", "43", "DECLINED: STOLEN CARD"),
        ("4111111111111111", "00", "APPROVED"),
        ("4123120000000000", "99", "UNSPECIFIED FAILURE"),
        ("4123120001090000", "51", "INSUFFICIENT FUNDS"),
        ("4123120001090109", "05", "DECLINED"),
        ("5421080101000000", "00", "APPROVED"),
        ("5105105105105100", "99", "UNSPECIFIED FAILURE"),
        ("5457210001000092", "51", "INSUFFICIENT FUNDS"),
    ];
    table
        .iter()
        .find(|(n, _, _)| *n == number)
        .map(|(_, c, m)| GatewayOutcome::of(c, m))
        .unwrap_or_else(|| GatewayOutcome::of("99", "UNSPECIFIED FAILURE"))
}

/// The outcome of a sandbox wallet payment of `amount`.
pub fn wallet_outcome(amount: Money) -> GatewayOutcome {
    let m = amount.minor_units();
    let (c, msg) = match m {
        20000..=30000 => ("00", "APPROVED"),
        100000..=110000 => ("99", "UNSPECIFIED FAILURE"),
        110100..=120000 => ("51", "INSUFFICIENT FUNDS"),
        120100..=130000 => ("41", "DECLINED: LOST CARD"),
        130100..=140000 => ("05", "DECLINED"),
        140100..=150000 => ("54", "DECLINED: EXPIRED CARD"),
        150100..=160000 => ("61", "DECLINED: EXCEEDS WITHDRAWAL LIMIT"),
        160100..=170000 => ("43", "DECLINED: STOLEN CARD"),
        _ => ("99", "UNSPECIFIED FAILURE"),
    };
    GatewayOutcome::of(c, msg)
}

/// Sandbox tokens are `sandbox_<outcome code>_<random>`: the token keeps the outcome of the test
/// number it was made from, never the number.
pub fn sandbox_token(number: &str) -> String {
    format!("sandbox_{}_{}", card_outcome(number).code, uuid::Uuid::now_v7().simple())
}

impl PaymentGateway for SandboxGateway {
    fn charge_token(&self, token: &str, _amount: Money) -> GatewayOutcome {
        let code = token.strip_prefix("sandbox_").and_then(|r| r.split('_').next()).unwrap_or("99");
        let message = match code {
            "00" => "APPROVED",
            "51" => "INSUFFICIENT FUNDS",
            "41" => "DECLINED: LOST CARD",
            "05" => "DECLINED",
            "54" => "DECLINED: EXPIRED CARD",
            "61" => "DECLINED: EXCEEDS WITHDRAWAL LIMIT",
            "43" => "DECLINED: STOLEN CARD",
            _ => "UNSPECIFIED FAILURE",
        };
        GatewayOutcome::of(if message == "UNSPECIFIED FAILURE" { "99" } else { code }, message)
    }

    fn refund(&self, _transaction: &str, _amount: Money) -> GatewayOutcome {
        GatewayOutcome::of("00", "APPROVED")
    }
}

/// Live organizations have no processor configured in this build: every call fails, so a live
/// refund or charge is refused instead of being recorded without moving money.
#[derive(Debug, Default, Clone, Copy)]
pub struct UnconfiguredGateway;

impl PaymentGateway for UnconfiguredGateway {
    fn charge_token(&self, _token: &str, _amount: Money) -> GatewayOutcome {
        GatewayOutcome::of("99", "NO PROCESSOR CONFIGURED")
    }
    fn refund(&self, _transaction: &str, _amount: Money) -> GatewayOutcome {
        GatewayOutcome::of("99", "NO PROCESSOR CONFIGURED")
    }
}

/// The gateway an organization's payments go through.
pub fn for_org(org: &crate::org::Organization) -> &'static dyn PaymentGateway {
    if org.sandbox {
        &SandboxGateway
    } else {
        &UnconfiguredGateway
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::money::Currency;

    #[test]
    fn tokens_keep_the_outcome_not_the_number() {
        let t = sandbox_token("4111111111111111");
        assert!(!t.contains("4111"));
        assert!(SandboxGateway.charge_token(&t, Money::from_minor(100, Currency::SAR)).approved);
        let bad = sandbox_token("4123120001090000");
        let o = SandboxGateway.charge_token(&bad, Money::from_minor(100, Currency::SAR));
        assert_eq!((o.approved, o.code.as_str()), (false, "51"));
        assert_eq!(wallet_outcome(Money::from_minor(25000, Currency::SAR)).code, "00");
        assert_eq!(wallet_outcome(Money::from_minor(115000, Currency::SAR)).code, "51");
    }
}
