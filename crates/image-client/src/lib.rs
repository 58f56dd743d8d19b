//! image-client: see ../../../shared/DESIGN.md
