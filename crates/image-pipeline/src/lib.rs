//! image-pipeline: see ../../../shared/DESIGN.md
