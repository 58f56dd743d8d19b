//! git-cache: see ../../../shared/DESIGN.md
