//! GitLab webhook payload types (to be written).
