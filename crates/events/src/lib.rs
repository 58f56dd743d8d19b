//! events: see ../../../shared/DESIGN.md
