//! Benchmark: a fetch into the cached clone versus a fresh clone of the same repository, plus
//! the diff and patch id of a typical PR, all over `file://`.
//!
//! Usage: `cargo run -p git-cache --example bench_sync -- [commits] [files] [runs]`
//! (defaults 400, 300, 5). The upstream repository is generated with `git fast-import`
//! (the library itself never runs git). Prints a Markdown table.

use std::error::Error;
use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

use git_cache::{GitCache, Limits, Repo, RepoKey};

type Result<T> = std::result::Result<T, Box<dyn Error>>;

fn git(dir: &Path, home: &Path, args: &[&str], stdin: Option<&[u8]>) -> Result<String> {
    let mut child = Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("HOME", home)
        .env("GIT_AUTHOR_NAME", "Bench")
        .env("GIT_AUTHOR_EMAIL", "bench@example.com")
        .env("GIT_COMMITTER_NAME", "Bench")
        .env("GIT_COMMITTER_EMAIL", "bench@example.com")
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()?;
    if let (Some(data), Some(mut pipe)) = (stdin, child.stdin.take()) {
        pipe.write_all(data)?;
    }
    let out = child.wait_with_output()?;
    if !out.status.success() {
        return Err(format!("git {args:?}: {}", String::from_utf8_lossy(&out.stderr)).into());
    }
    Ok(String::from_utf8(out.stdout)?.trim().to_owned())
}

/// A fast-import stream of `commits` commits on `branch`, each rewriting a few of `files`
/// source-like files (deterministic).
fn history(
    branch: &str,
    first_mark: usize,
    commits: usize,
    files: usize,
    from: Option<&str>,
) -> Vec<u8> {
    let mut out = Vec::new();
    let mut state: u64 = 0x9e37_79b9_7f4a_7c15 ^ first_mark as u64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    for c in 0..commits {
        let mark = first_mark + c;
        let time = 1_700_000_000 + mark * 60;
        let message = format!("commit {mark}\n");
        out.extend_from_slice(
            format!(
                "commit refs/heads/{branch}\nmark :{mark}\ncommitter Bench <bench@example.com> {time} +0000\ndata {}\n{message}",
                message.len()
            )
            .as_bytes(),
        );
        if c == 0
            && let Some(from) = from
        {
            out.extend_from_slice(format!("from {from}\n").as_bytes());
        }
        let touched = if c == 0 && from.is_none() {
            files
        } else {
            1 + (next() % 4) as usize
        };
        for t in 0..touched {
            let file = if c == 0 && from.is_none() {
                t
            } else {
                (next() % files as u64) as usize
            };
            let mut body = String::new();
            body += &format!("fn function_{file}() {{\n");
            for line in 0..(40 + file % 80) {
                let salt = if next() % 10 == 0 { mark } else { 0 };
                body += &format!("    let value_{line} = compute({file}, {line}, {salt});\n");
            }
            body += "}\n";
            out.extend_from_slice(
                format!(
                    "M 100644 inline src/mod{}/file{file}.rs\ndata {}\n{body}\n",
                    file % 10,
                    body.len()
                )
                .as_bytes(),
            );
        }
    }
    out
}

fn timed<T>(f: impl FnOnce() -> Result<T>) -> Result<(Duration, T)> {
    let start = Instant::now();
    let value = f()?;
    Ok((start.elapsed(), value))
}

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

fn ms(d: Duration) -> String {
    format!("{:.1}", d.as_secs_f64() * 1000.0)
}

fn main() -> Result<()> {
    let args: Vec<usize> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let commits = args.first().copied().unwrap_or(400);
    let files = args.get(1).copied().unwrap_or(300);
    let runs = args.get(2).copied().unwrap_or(5).max(1);

    let scratch = tempfile::tempdir()?;
    let home = scratch.path().join("home");
    let upstream = scratch.path().join("upstream.git");
    std::fs::create_dir_all(&home)?;
    std::fs::create_dir_all(&upstream)?;
    git(
        &upstream,
        &home,
        &["init", "-q", "--bare", "-b", "main"],
        None,
    )?;
    git(
        &upstream,
        &home,
        &["fast-import", "--quiet"],
        Some(&history("main", 1, commits, files, None)),
    )?;
    git(&upstream, &home, &["gc", "-q"], None)?;
    let url = format!("file://{}", upstream.display());
    let key = RepoKey {
        host: "bench.local".into(),
        owner: "bench".into(),
        name: "repo".into(),
    };
    let never = AtomicBool::new(false);
    let objects = git(&upstream, &home, &["count-objects", "-v"], None)?;
    let pack_kib = objects
        .lines()
        .find_map(|l| l.strip_prefix("size-pack: "))
        .unwrap_or("?")
        .to_owned();

    // Fresh clones into an empty cache.
    let mut clone_times = Vec::new();
    for _ in 0..runs {
        let root = tempfile::tempdir()?;
        let cache = GitCache::new(root.path());
        let (t, synced) = timed(|| Ok(cache.sync(&key, &url, &[], None, &never)?))?;
        assert!(synced.cloned);
        clone_times.push(t);
    }

    // One persistent cache, then fetches: nothing new, and after new upstream commits.
    let root = tempfile::tempdir()?;
    let cache = GitCache::new(root.path());
    cache.sync(&key, &url, &[], None, &never)?;
    let pr_refspecs = vec![
        "+refs/heads/main:refs/heads/main".to_owned(),
        "+refs/pull/1/head:refs/pull/1/head".to_owned(),
    ];
    let mut mark = commits + 1;
    let mut noop_times = Vec::new();
    let mut fetch1_times = Vec::new();
    let mut fetch10_times = Vec::new();
    for _ in 0..runs {
        let main = git(&upstream, &home, &["rev-parse", "main"], None)?;
        git(
            &upstream,
            &home,
            &["update-ref", "refs/pull/1/head", &main],
            None,
        )?;
        let (t, s) = timed(|| Ok(cache.sync(&key, &url, &pr_refspecs, None, &never)?))?;
        assert!(!s.cloned);
        noop_times.push(t);

        for (n, bucket) in [(1, &mut fetch1_times), (10, &mut fetch10_times)] {
            let from = git(&upstream, &home, &["rev-parse", "main"], None)?;
            git(
                &upstream,
                &home,
                &["fast-import", "--quiet", "--force"],
                Some(&history("pr", mark, n, files, Some(&from))),
            )?;
            mark += n;
            let pr = git(&upstream, &home, &["rev-parse", "refs/heads/pr"], None)?;
            git(
                &upstream,
                &home,
                &["update-ref", "refs/pull/1/head", &pr],
                None,
            )?;
            let (t, s) = timed(|| Ok(cache.sync(&key, &url, &pr_refspecs, None, &never)?))?;
            assert!(!s.cloned);
            bucket.push(t);
        }
    }

    // The review's git work on the cached clone: diff main...PR (10 commits), patch id, checkout.
    let repo = Repo::open(&cache.repo_path(&key))?;
    let mut diff_times = Vec::new();
    let mut checkout_times = Vec::new();
    let mut diff_len = 0;
    for _ in 0..runs {
        let (t, diff) = timed(|| {
            Ok(repo.diff_bytes("main", "refs/pull/1/head", Limits::default(), &never)?)
        })?;
        diff_len = diff.len();
        let (tp, _) = timed(|| Ok(git_cache::patch_id_bytes(&diff)))?;
        diff_times.push(t + tp);
        let (t, wt) =
            timed(|| Ok(repo.checkout("refs/pull/1/head", None, Limits::default(), &never)?))?;
        checkout_times.push(t);
        drop(wt);
    }

    println!(
        "Repository: {commits} commits, {files} files, pack {pack_kib} KiB, over file://; median of {runs} runs.\n"
    );
    println!("| operation | median ms |");
    println!("|---|---:|");
    println!(
        "| fresh bare clone (`sync`, empty cache) | {} |",
        ms(median(clone_times.clone()))
    );
    println!(
        "| cached fetch, nothing new (`sync`) | {} |",
        ms(median(noop_times))
    );
    println!(
        "| cached fetch, 1 new commit (`sync`) | {} |",
        ms(median(fetch1_times.clone()))
    );
    println!(
        "| cached fetch, 10 new commits (`sync`) | {} |",
        ms(median(fetch10_times))
    );
    println!(
        "| diff main...PR + patch id ({diff_len} bytes) | {} |",
        ms(median(diff_times))
    );
    println!(
        "| checkout of the PR head ({files} files) | {} |",
        ms(median(checkout_times))
    );
    let speedup = median(clone_times).as_secs_f64() / median(fetch1_times).as_secs_f64();
    println!("\nA cached fetch of one new commit is {speedup:.1}x faster than a fresh clone.");
    Ok(())
}
