//! Test doubles: see docs/architecture.md, Test doubles and real parts.
#![expect(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test doubles: a poisoned lock or a broken fixture is the test's failure"
)]

pub mod fake_forge;
pub mod fake_gitlab;
pub mod git_bomb;
pub mod module_graph;
pub mod scripted_model;
