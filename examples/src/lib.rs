//! Runnable examples live beside this crate: see `embed.rs`.
