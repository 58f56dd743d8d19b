//! Test doubles: see docs/architecture.md, Test doubles and real parts.
#![allow(clippy::unwrap_used, clippy::expect_used)]

pub mod fake_forge;
pub mod git_bomb;
pub mod scripted_model;
