//! Builds the dashboard (`dashboard/`) before the server is compiled, so the
//! README's run command alone shows it at `/`: runs `npm ci` when `node_modules` is missing or
//! older than the lock file, then `npm run build`, whenever `dashboard/dist` is missing or older
//! than its sources. Nothing runs when the build is current, and cargo reruns this script only
//! when a source changes (rerun-if-changed below), so an unchanged dashboard costs nothing.
//!
//! Never fails the Rust build: without Node, or when the dashboard's build fails, it prints one
//! cargo warning and the server answers `/` with one line saying how to build the dashboard.
//! `DASHBOARD_BUILD=0` turns it off (the Dockerfile builds the dashboard in its own stage).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::SystemTime;

/// The dashboard's inputs, relative to `dashboard/`.
const SOURCES: [&str; 7] = [
    "src",
    "public",
    "index.html",
    "package.json",
    "package-lock.json",
    "vite.config.ts",
    "tsconfig.json",
];

fn main() {
    println!("cargo:rerun-if-env-changed=DASHBOARD_BUILD");
    let manifest = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").unwrap_or_default());
    let dashboard = manifest.join("../../dashboard");
    if !dashboard.join("package.json").is_file() {
        return;
    }
    for s in SOURCES {
        println!("cargo:rerun-if-changed={}", dashboard.join(s).display());
    }
    if std::env::var("DASHBOARD_BUILD").is_ok_and(|v| v == "0") {
        return;
    }
    let built = modified(&dashboard.join("dist/index.html"));
    let newest_source = SOURCES
        .iter()
        .filter_map(|s| newest(&dashboard.join(s)))
        .max();
    if built.is_some() && built >= newest_source {
        return;
    }
    if let Err(e) = build(&dashboard) {
        println!("cargo:warning=dashboard not built: {e}");
    }
}

fn build(dashboard: &Path) -> Result<(), String> {
    let npm = if cfg!(windows) { "npm.cmd" } else { "npm" };
    let installed = modified(&dashboard.join("node_modules/.package-lock.json"));
    if installed.is_none() || installed < modified(&dashboard.join("package-lock.json")) {
        run(dashboard, npm, &["ci", "--no-audit", "--no-fund"])?;
    }
    run(dashboard, npm, &["run", "build"])
}

fn run(dir: &Path, program: &str, args: &[&str]) -> Result<(), String> {
    let shown = format!("{program} {}", args.join(" "));
    let out = Command::new(program)
        .args(args)
        .current_dir(dir)
        .output()
        .map_err(|e| {
            format!("cannot run `{shown}` ({e}); install Node.js 20.19+ to build the dashboard")
        })?;
    if out.status.success() {
        return Ok(());
    }
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    let tail: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    let tail = tail[tail.len().saturating_sub(3)..].join(" | ");
    Err(format!("`{shown}` failed in dashboard/: {tail}"))
}

fn modified(path: &Path) -> Option<SystemTime> {
    std::fs::metadata(path).and_then(|m| m.modified()).ok()
}

/// The newest modification time of a file, or of any file under a folder.
fn newest(path: &Path) -> Option<SystemTime> {
    let meta = std::fs::metadata(path).ok()?;
    if !meta.is_dir() {
        return meta.modified().ok();
    }
    std::fs::read_dir(path)
        .ok()?
        .filter_map(Result::ok)
        .filter_map(|e| newest(&e.path()))
        .max()
}
