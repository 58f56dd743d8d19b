//! Test doubles: see DESIGN.md "Test doubles and real parts".
