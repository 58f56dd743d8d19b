//! forge: see ../../../shared/DESIGN.md
