//! review-domain: see ../../../shared/DESIGN.md
