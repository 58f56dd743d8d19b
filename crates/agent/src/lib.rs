//! agent: see ../../../shared/DESIGN.md
