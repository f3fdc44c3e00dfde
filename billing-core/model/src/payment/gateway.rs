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
    pub fn of(code: &str, message: &str) -> Self {
        GatewayOutcome {
            approved: code == "00",
            code: code.into(),
            message: message.into(),
        }
    }

    /// A failure that is not a decline: the gateway erred or did not answer (91 issuer or
    /// switch inoperative, 96 system malfunction, or no answer in time), so money may or may
    /// not have moved: the charge is voided rather than trusted.
    pub fn is_unclear(&self) -> bool {
        !self.approved && matches!(self.code.as_str(), "91" | "96" | "TIMEOUT")
    }
}

/// Card details as the payer typed them (never stored).
#[derive(Clone, PartialEq, Eq)]
pub struct CardDetails {
    pub name: String,
    pub number: String,
    pub expiry_month: u32,
    pub expiry_year: u32,
    pub cvc: String,
}

impl std::fmt::Debug for CardDetails {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let last4 = &self.number[self.number.len().saturating_sub(4)..];
        write!(f, "CardDetails(**** {last4})")
    }
}

impl CardDetails {
    pub fn network(&self) -> &'static str {
        let d = self.number.as_bytes();
        match d.first() {
            Some(b'4') if self.number.starts_with("420132") => "MADA",
            Some(b'4') => "VISA",
            Some(b'5') | Some(b'2') => "MASTERCARD",
            Some(b'3') => "AMEX",
            _ => "CARD",
        }
    }

    /// The form rules of the sandbox (reference: sandbox.md, Card fields): a name of at least
    /// two words, a Luhn-valid number, a future expiry, 3 digits of security code (4 for
    /// American Express). `Err` names the offending field.
    pub fn check(&self, year: i32, month: u32) -> Result<(), &'static str> {
        if self.name.split_whitespace().count() < 2 {
            return Err("name");
        }
        if self.number.len() < 12 || !self.number.bytes().all(|b| b.is_ascii_digit()) || !luhn(&self.number) {
            return Err("number");
        }
        if !(1..=12).contains(&self.expiry_month) || (self.expiry_year as i32, self.expiry_month) < (year, month) {
            return Err("expiry");
        }
        let digits = if self.network() == "AMEX" { 4 } else { 3 };
        if self.cvc.len() != digits || !self.cvc.bytes().all(|b| b.is_ascii_digit()) {
            return Err("cvc");
        }
        Ok(())
    }
}

pub fn luhn(number: &str) -> bool {
    let mut sum = 0;
    for (i, b) in number.bytes().rev().enumerate() {
        let mut d = u32::from(b - b'0');
        if i % 2 == 1 {
            d *= 2;
            if d > 9 {
                d -= 9;
            }
        }
        sum += d;
    }
    sum % 10 == 0
}

/// A card and wallet processor. Every call names a `reference`, the gateway's idempotency key:
/// a call repeated with the same reference moves money at most once (the engine repeats a
/// refund after a crash, and voids a charge by its reference).
pub trait PaymentGateway: Send + Sync {
    /// Charges a card the payer entered.
    fn charge_card(&self, reference: &str, card: &CardDetails, amount: Money) -> GatewayOutcome;
    /// Charges a tokenized card.
    fn charge_token(&self, reference: &str, token: &str, amount: Money) -> GatewayOutcome;
    /// Charges a mobile wallet by the payer's phone number (E.164). A gateway without wallets
    /// declines.
    fn charge_wallet(&self, _reference: &str, _phone: &str, _amount: Money) -> GatewayOutcome {
        GatewayOutcome::of("99", "WALLET NOT SUPPORTED")
    }
    /// The token of the card charged (approved) under `reference`, to charge it again later
    /// (the later installments): never the number. None when the gateway keeps no tokens.
    fn card_token(&self, _reference: &str, _card: &CardDetails) -> Option<String> {
        None
    }
    /// Refunds in full the payment charged as `transaction` (the reference of its charge).
    fn refund(&self, reference: &str, transaction: &str, amount: Money) -> GatewayOutcome;
    /// Cancels whatever the charge `reference` took, if it took anything; approved once nothing
    /// of it is left charged (also when it never charged).
    fn void(&self, reference: &str) -> GatewayOutcome;
    /// Whether payers can pay through it: false for [`UnconfiguredGateway`] (a live
    /// organization with no processor), whose pages and attempts take no payment.
    fn takes_payments(&self) -> bool {
        true
    }
}

/// The sandbox simulation.
#[derive(Debug, Default, Clone, Copy)]
pub struct SandboxGateway;

/// The sandbox card whose charge ends in a gateway error (96 SYSTEM MALFUNCTION): checkout
/// answers `failed_internal_error` for it.
pub const ERROR_CARD: &str = "4000000000000093";

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
        // Not in the public tables: a gateway error (money may or may not have moved).
        (ERROR_CARD, "96", "SYSTEM MALFUNCTION"),
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
    fn charge_card(&self, _reference: &str, card: &CardDetails, _amount: Money) -> GatewayOutcome {
        card_outcome(&card.number)
    }

    fn charge_wallet(&self, _reference: &str, _phone: &str, amount: Money) -> GatewayOutcome {
        wallet_outcome(amount)
    }

    fn card_token(&self, _reference: &str, card: &CardDetails) -> Option<String> {
        Some(sandbox_token(&card.number))
    }

    fn charge_token(&self, _reference: &str, token: &str, _amount: Money) -> GatewayOutcome {
        let code = token.strip_prefix("sandbox_").and_then(|r| r.split('_').next()).unwrap_or("99");
        let message = match code {
            "00" => "APPROVED",
            "51" => "INSUFFICIENT FUNDS",
            "41" => "DECLINED: LOST CARD",
            "05" => "DECLINED",
            "54" => "DECLINED: EXPIRED CARD",
            "61" => "DECLINED: EXCEEDS WITHDRAWAL LIMIT",
            "43" => "DECLINED: STOLEN CARD",
            "96" => "SYSTEM MALFUNCTION",
            _ => "UNSPECIFIED FAILURE",
        };
        GatewayOutcome::of(if message == "UNSPECIFIED FAILURE" { "99" } else { code }, message)
    }

    fn refund(&self, _reference: &str, _transaction: &str, _amount: Money) -> GatewayOutcome {
        GatewayOutcome::of("00", "APPROVED")
    }

    fn void(&self, _reference: &str) -> GatewayOutcome {
        GatewayOutcome::of("00", "APPROVED")
    }
}

/// Live organizations have no processor configured in this build: every call fails, so a live
/// refund or charge is refused instead of being recorded without moving money.
#[derive(Debug, Default, Clone, Copy)]
pub struct UnconfiguredGateway;

impl PaymentGateway for UnconfiguredGateway {
    fn charge_card(&self, _reference: &str, _card: &CardDetails, _amount: Money) -> GatewayOutcome {
        GatewayOutcome::of("99", "NO PROCESSOR CONFIGURED")
    }
    fn charge_token(&self, _reference: &str, _token: &str, _amount: Money) -> GatewayOutcome {
        GatewayOutcome::of("99", "NO PROCESSOR CONFIGURED")
    }
    fn refund(&self, _reference: &str, _transaction: &str, _amount: Money) -> GatewayOutcome {
        GatewayOutcome::of("99", "NO PROCESSOR CONFIGURED")
    }
    /// Nothing was ever charged through it.
    fn void(&self, _reference: &str) -> GatewayOutcome {
        GatewayOutcome::of("00", "APPROVED")
    }
    fn takes_payments(&self) -> bool {
        false
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
        assert!(SandboxGateway.charge_token("r1", &t, Money::from_minor(100, Currency::SAR)).approved);
        let bad = sandbox_token("4123120001090000");
        let o = SandboxGateway.charge_token("r2", &bad, Money::from_minor(100, Currency::SAR));
        assert_eq!((o.approved, o.code.as_str()), (false, "51"));
        assert_eq!(wallet_outcome(Money::from_minor(25000, Currency::SAR)).code, "00");
        assert_eq!(wallet_outcome(Money::from_minor(115000, Currency::SAR)).code, "51");
    }

    #[test]
    fn voids_and_refunds() {
        assert!(SandboxGateway.void("any").approved);
        assert!(UnconfiguredGateway.void("any").approved, "nothing was ever charged through it");
        let m = Money::from_minor(100, Currency::SAR);
        assert!(SandboxGateway.refund("r", "t", m).approved);
        assert!(!UnconfiguredGateway.refund("r", "t", m).approved);
        assert!(!UnconfiguredGateway.charge_token("r", "sandbox_00_x", m).approved);
    }

    #[test]
    fn card_form_rules() {
        let card = |name: &str, number: &str, m: u32, y: u32, cvc: &str| CardDetails {
            name: name.into(),
            number: number.into(),
            expiry_month: m,
            expiry_year: y,
            cvc: cvc.into(),
        };
        assert_eq!(card("Sara Harbi", "4111111111111111", 12, 2030, "123").check(2026, 11), Ok(()));
        assert_eq!(card("Sara", "4111111111111111", 12, 2030, "123").check(2026, 11), Err("name"));
        assert_eq!(card("Sara Harbi", "4111111111111112", 12, 2030, "123").check(2026, 11), Err("number"));
        assert_eq!(card("Sara Harbi", "4111111111111111", 10, 2026, "123").check(2026, 11), Err("expiry"));
        assert_eq!(card("Sara Harbi", "4111111111111111", 12, 2030, "1234").check(2026, 11), Err("cvc"));
        assert!(format!("{:?}", card("A B", "4111111111111111", 1, 2030, "123")).ends_with("1111)"));
        assert!(!format!("{:?}", card("A B", "4111111111111111", 1, 2030, "123")).contains("411111"));
    }
}
