//! Small domain newtypes with a `parse` constructor: once built, they are valid.

use serde::{Serialize, Serializer};
use std::fmt;

/// An e-mail address (RFC 5322 as checked by the `email_address` crate), kept as given but
/// compared in lowercase for uniqueness.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Email(String);

impl Email {
    pub fn parse(s: &str) -> Result<Self, &'static str> {
        let s = s.trim();
        if s.len() > 254 || !email_address::EmailAddress::is_valid(s) {
            return Err("value is not a valid email address");
        }
        let (_, domain) = s.rsplit_once('@').ok_or("value is not a valid email address")?;
        // The crate accepts dotless domains such as `a@localhost`; a billing address needs a
        // deliverable domain.
        if !domain.contains('.') || domain.starts_with('[') {
            return Err("value is not a valid email address: the domain must contain a dot");
        }
        Ok(Email(s.to_string()))
    }
    pub fn as_str(&self) -> &str {
        &self.0
    }
    /// The form used for uniqueness checks.
    pub fn normalized(&self) -> String {
        self.0.to_lowercase()
    }
    /// Rebuilds a value read back from a store.
    pub fn from_stored(s: String) -> Self {
        Email(s)
    }
}

/// A phone number in E.164 form (`+<country code><number>`), validated against the numbering
/// plan by the `phonenumber` crate and kept in canonical E.164.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct PhoneNumber(String);

impl PhoneNumber {
    pub fn parse(s: &str) -> Result<Self, &'static str> {
        let s = s.trim();
        let digits = s
            .strip_prefix('+')
            .ok_or("value is not a valid phone number: E.164 format +<country code><number> expected")?;
        if digits.is_empty() || digits.len() > 15 || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return Err("value is not a valid phone number: E.164 format +<country code><number> expected");
        }
        let parsed = phonenumber::parse(None, s).map_err(|_| "value is not a valid phone number")?;
        if !phonenumber::is_valid(&parsed) {
            return Err("value is not a valid phone number");
        }
        Ok(PhoneNumber(parsed.format().mode(phonenumber::Mode::E164).to_string()))
    }
    pub fn as_str(&self) -> &str {
        &self.0
    }
    pub fn from_stored(s: String) -> Self {
        PhoneNumber(s)
    }
}

/// An IBAN as given, at most 34 characters (the spec's limit).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Iban(String);

impl Iban {
    pub const MAX_LEN: usize = 34;
    pub fn parse(s: &str) -> Result<Self, &'static str> {
        let s = s.trim();
        if s.chars().count() > Self::MAX_LEN {
            return Err("String should have at most 34 characters");
        }
        Ok(Iban(s.to_string()))
    }
    pub fn as_str(&self) -> &str {
        &self.0
    }
    pub fn from_stored(s: String) -> Self {
        Iban(s)
    }
}

/// Communication language; accepted in any case, returned lowercase.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Language {
    #[default]
    Ar,
    En,
}

impl Language {
    pub fn parse(s: &str) -> Result<Self, &'static str> {
        match s.trim().to_ascii_lowercase().as_str() {
            "ar" => Ok(Language::Ar),
            "en" => Ok(Language::En),
            _ => Err("Input should be 'AR' or 'EN'"),
        }
    }
    pub fn as_str(self) -> &'static str {
        match self {
            Language::Ar => "ar",
            Language::En => "en",
        }
    }
}

impl Serialize for Language {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

macro_rules! serialize_as_str {
    ($($t:ty),*) => {$(
        impl Serialize for $t {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(&self.0)
            }
        }
        impl fmt::Display for $t {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }
    )*};
}
serialize_as_str!(Email, PhoneNumber, Iban);

/// Declares a closed set of wire names as a Rust enum with `parse`, `as_str` and serde.
#[macro_export]
macro_rules! wire_enum {
    ($(#[$m:meta])* $name:ident { $($variant:ident = $text:literal),* $(,)? }) => {
        $(#[$m])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum $name { $($variant),* }

        impl $name {
            pub const ALL: &'static [$name] = &[$($name::$variant),*];
            pub fn as_str(self) -> &'static str {
                match self { $($name::$variant => $text),* }
            }
            pub fn parse(s: &str) -> Option<Self> {
                match s { $($text => Some($name::$variant),)* _ => None }
            }
            /// The accepted values, for error messages.
            pub fn expected() -> String {
                let v: Vec<String> = Self::ALL.iter().map(|x| format!("'{}'", x.as_str())).collect();
                v.join(", ")
            }
        }

        impl serde::Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(self.as_str())
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn email() {
        assert!(Email::parse("a.b@example.com").is_ok());
        for bad in ["", "nope", "a@", "@b.co", "a b@c.co", "a@localhost"] {
            assert!(Email::parse(bad).is_err(), "{bad}");
        }
        assert_eq!(Email::parse("A@B.co").unwrap().normalized(), "a@b.co");
    }

    #[test]
    fn phone_is_e164() {
        assert_eq!(PhoneNumber::parse("+966501234567").unwrap().as_str(), "+966501234567");
        assert!(PhoneNumber::parse("+14155552671").is_ok());
        for bad in ["0501234567", "+96650", "+abc", "966501234567", "+", "+1234567890123456"] {
            assert!(PhoneNumber::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn iban_length() {
        assert!(Iban::parse(&"A".repeat(34)).is_ok());
        assert!(Iban::parse(&"A".repeat(35)).is_err());
    }

    #[test]
    fn language_any_case() {
        assert_eq!(Language::parse("AR").unwrap(), Language::Ar);
        assert_eq!(Language::parse("en").unwrap().as_str(), "en");
        assert!(Language::parse("fr").is_err());
    }
}
