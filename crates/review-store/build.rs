//! Rebuilds the crate when a migration file is added: `sqlx::migrate!` embeds the files it
//! finds at compile time and tracks changes to them, but not a new file in the folders.
fn main() {
    println!("cargo:rerun-if-changed=../../migrations");
    println!("cargo:rerun-if-changed=../../migrations/postgres");
}
