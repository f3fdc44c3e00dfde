//! Shared request bodies and setup steps for the endpoint tests.
#![allow(dead_code)]
