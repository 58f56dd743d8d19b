//! HTTP routes, one module per feature; merged in `crate::router`.

pub(crate) mod admin;
pub(crate) mod images;
pub(crate) mod info;
