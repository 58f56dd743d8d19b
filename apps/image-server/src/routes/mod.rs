//! HTTP routes, one module per feature; merged in `crate::router`.

pub(crate) mod admin;
pub(crate) mod compat;
pub(crate) mod images;
pub(crate) mod imgproxy;
pub(crate) mod info;
pub(crate) mod thumbor;
