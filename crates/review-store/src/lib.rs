//! review-store: see ../../../shared/DESIGN.md
