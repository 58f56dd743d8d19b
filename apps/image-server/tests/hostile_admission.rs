//! Admission, cancellation and authentication order against the real binary
//! (docs/image-service.md §5 and §8): a transformation owns its slot until
//! its work ends, so clients that hang up cannot pile detached work onto the server; a
//! shutdown exits within its drain timeout with heavy work in flight; the admin clear refuses a
//! wrong key before reading the body; a slow upload check does not hold the async runtime.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use common::KEY;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// TRANSFORM_CONCURRENCY of every server here.
const CONCURRENCY: f64 = 2.0;

/// A heavy miss: the 9 MP lake photo trimmed (a full-size decode), blurred and sharpened at
/// full size, then fitted into 20 kB of WebP by repeated encodes: about 10 s and 130 MB in a
/// debug build (1.5 s in release). `n` makes each URL a new cache key (unknown parameters
/// do not: they are left out of the key).
fn heavy(n: usize) -> String {
    format!(
        "width=4000&trim=5&blur=20&sharpen&format=webp&max_bytes={}",
        20_000 + n
    )
}

/// The `transforms_running` gauge of a metrics page.
fn running(metrics: &str) -> f64 {
    metrics
        .lines()
        .find_map(|l| l.strip_prefix("image_server_transforms_running "))
        .and_then(|v| v.trim().parse::<f64>().ok())
        .unwrap_or(0.0)
}

/// The `transforms_running` gauge the metrics listener at `url` reports now.
async fn running_now(client: &reqwest::Client, url: &str) -> f64 {
    let text = client.get(url).send().await.unwrap().text().await.unwrap();
    running(&text)
}

/// The server binary on local storage in a temp dir, with a metrics listener.
struct Server {
    child: tokio::process::Child,
    base: String,
    metrics: String,
    dir: tempfile::TempDir,
}

impl Server {
    async fn start(extra: &[(&str, String)]) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let metrics_port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let mut envs = vec![
            ("DATA_DIR", dir.path().join("data").display().to_string()),
            (
                "STORAGE_URL",
                format!("file://{}", dir.path().join("images").display()),
            ),
            ("API_KEY", KEY.to_owned()),
            ("TRANSFORM_CONCURRENCY", format!("{CONCURRENCY}")),
            ("METRICS_LISTEN", format!("127.0.0.1:{metrics_port}")),
        ];
        envs.extend(extra.iter().cloned());
        let (child, base) = common::spawn_binary(&envs);
        assert!(
            common::wait_healthy(&base).await,
            "the server did not start"
        );
        Self {
            child,
            base,
            metrics: format!("http://127.0.0.1:{metrics_port}/metrics"),
            dir,
        }
    }

    /// Stores `bytes` at `path` as a sync into the bucket would, past the upload's checks.
    fn put(&self, path: &str, bytes: &[u8]) {
        let file = self.dir.path().join("images").join(path);
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(file, bytes).unwrap();
    }

    fn pid(&self) -> u32 {
        self.child.id().unwrap()
    }

    /// A `kB` field of /proc/<pid>/status (VmHWM, VmRSS), in KiB.
    fn status_kib(&self, field: &str) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.pid())).unwrap();
        status
            .lines()
            .find_map(|l| l.strip_prefix(field))
            .and_then(|v| {
                v.trim_start_matches(':')
                    .trim()
                    .trim_end_matches("kB")
                    .trim()
                    .parse()
                    .ok()
            })
            .unwrap()
    }
}

/// What the watcher saw while it ran.
#[derive(Debug, Default)]
struct Seen {
    slowest_health: Duration,
    health_failures: usize,
    most_running: f64,
    samples: usize,
}

/// Asks `/admin/health` and the running gauge every 100 ms until `stop` is set.
async fn watch(base: String, metrics: String, stop: Arc<AtomicBool>) -> Seen {
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(5))
        .build()
        .unwrap();
    let mut seen = Seen::default();
    while !stop.load(Ordering::SeqCst) {
        let started = Instant::now();
        match client.get(format!("{base}/admin/health")).send().await {
            Ok(r) if r.status() == 200 => {}
            _ => seen.health_failures += 1,
        }
        seen.slowest_health = seen.slowest_health.max(started.elapsed());
        if let Ok(r) = client.get(&metrics).send().await {
            let text = r.text().await.unwrap_or_default();
            seen.most_running = seen.most_running.max(running(&text));
        }
        seen.samples += 1;
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    seen
}

/// The 4000x2250 lake photo of the pipeline's fixtures.
fn photo() -> Vec<u8> {
    common::fixture("lake.jpg")
}

/// Finding 2: clients that hang up after 0.3 s freed their transform slot while the
/// transformation ran on, detached, so every wave of them started more work: 60 such
/// requests had the release server OOM-killed at 3 GiB. The job now owns its slot and is
/// cancelled at its next stage: 100 hung-up misses (10 clients, 10 distinct URLs each) leave
/// at most TRANSFORM_CONCURRENCY running, memory bounded, and `/admin/health` answering.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hung_up_misses_cannot_pile_up_work() {
    let mut s = Server::start(&[]).await;
    s.put("big.jpg", &photo());
    let stop = Arc::new(AtomicBool::new(false));
    let watcher = tokio::spawn(watch(s.base.clone(), s.metrics.clone(), Arc::clone(&stop)));
    let started = Instant::now();
    let mut clients = Vec::new();
    for c in 0..10 {
        let base = s.base.clone();
        clients.push(tokio::spawn(async move {
            let mut hung_up = 0;
            for i in 0..10 {
                // A new connection each time, dropped at the timeout: the client hangs up.
                let client = reqwest::Client::builder()
                    .timeout(Duration::from_millis(300))
                    .pool_max_idle_per_host(0)
                    .build()
                    .unwrap();
                let url = format!("{base}/images/resize/big.jpg?{}", heavy(c * 10 + i));
                match client.get(url).send().await {
                    Err(e) if e.is_timeout() => hung_up += 1,
                    _ => tokio::time::sleep(Duration::from_millis(300)).await,
                }
            }
            hung_up
        }));
    }
    let mut hung_up = 0;
    for c in clients {
        hung_up += c.await.unwrap();
    }
    let attack = started.elapsed();
    // Detached work would still be running (and growing) now: keep watching a while.
    tokio::time::sleep(Duration::from_secs(4)).await;
    stop.store(true, Ordering::SeqCst);
    let seen = watcher.await.unwrap();
    let peak = s.status_kib("VmHWM");
    let threads = std::fs::read_to_string(format!("/proc/{}/status", s.pid()))
        .unwrap()
        .lines()
        .find_map(|l| l.strip_prefix("Threads:").map(|v| v.trim().to_owned()))
        .unwrap_or_default();
    eprintln!(
        "{hung_up} of 100 hung up in {attack:?}; peak RSS {peak} KiB, threads {threads}; {seen:?}"
    );
    assert!(hung_up >= 50, "only {hung_up} requests were hung up on");
    assert!(
        s.child.try_wait().unwrap().is_none(),
        "the server process ended"
    );
    assert!(peak < 1024 * 1024, "peak RSS {peak} KiB, above 1 GiB");
    assert!(
        seen.most_running <= CONCURRENCY,
        "{} transformations running at once, above TRANSFORM_CONCURRENCY",
        seen.most_running
    );
    assert_eq!(seen.health_failures, 0, "{seen:?}");
    assert!(
        seen.slowest_health < Duration::from_secs(1),
        "/admin/health took {:?}",
        seen.slowest_health
    );
    assert!(seen.samples >= 10, "{seen:?}");
    // And the server still transforms afterwards: the slots all came back.
    let r = reqwest::Client::new()
        .get(format!("{}/images/resize/big.jpg?width=100", s.base))
        .timeout(Duration::from_secs(60))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
}

/// SIGTERM with heavy work in flight (two running, four queued, their clients connected)
/// exits within SHUTDOWN_DRAIN_SECS and a few seconds: the running jobs are cancelled at the
/// drain timeout and the process does not wait for its blocking threads. Before, the drain
/// waited for every job, however long.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_exits_within_the_drain_timeout_with_heavy_work_in_flight() {
    const DRAIN_SECS: u64 = 1;
    let mut s = Server::start(&[("SHUTDOWN_DRAIN_SECS", DRAIN_SECS.to_string())]).await;
    s.put("big.jpg", &photo());
    let mut requests = Vec::new();
    for n in 0..6 {
        if n == 2 {
            // The first two take the slots.
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        let url = format!("{}/images/resize/big.jpg?{}", s.base, heavy(n));
        requests.push(tokio::spawn(async move {
            reqwest::Client::new()
                .get(url)
                .timeout(Duration::from_secs(120))
                .send()
                .await
                .map(|r| r.status().as_u16())
        }));
    }
    // Until both slots run.
    let client = reqwest::Client::new();
    let mut both_running = false;
    for _ in 0..100 {
        if running_now(&client, &s.metrics).await >= CONCURRENCY {
            both_running = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(both_running, "the heavy jobs never ran");
    assert!(
        s.child.try_wait().unwrap().is_none(),
        "the server ended early"
    );
    let status = std::process::Command::new("kill")
        .args(["-TERM", &s.pid().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let started = Instant::now();
    let exited = tokio::time::timeout(Duration::from_secs(60), s.child.wait()).await;
    let took = started.elapsed();
    eprintln!("exited after {took:?}: {exited:?}");
    assert!(exited.is_ok(), "still running 60 s after SIGTERM");
    assert!(
        took < Duration::from_secs(DRAIN_SECS + 6),
        "exit took {took:?} with a drain timeout of {DRAIN_SECS} s"
    );
    for r in requests {
        // Answered 503 (cancelled) or cut off at exit; never hanging.
        let _ = r.await.unwrap();
    }
}

/// Finding 6: the admin clear buffered its body (up to 33 MiB) before checking the key. A
/// wrong key is now answered 401 from the headers alone: the client here sends the headers of
/// a 32 MiB body and then nothing, and still gets its answer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_admin_clear_refuses_a_wrong_key_before_reading_the_body() {
    let s = Server::start(&[]).await;
    let addr = s.base.trim_start_matches("http://").to_owned();
    for key in ["wrong-key", ""] {
        let mut stream = tokio::net::TcpStream::connect(&addr).await.unwrap();
        let head = format!(
            "POST /admin/cache/storage/clear HTTP/1.1\r\nHost: {addr}\r\nX-API-Key: {key}\r\n\
             Content-Type: application/json\r\nContent-Length: {}\r\n\r\n{{\"pattern\":\"",
            32 << 20
        );
        stream.write_all(head.as_bytes()).await.unwrap();
        let mut answer = vec![0u8; 4096];
        let read = tokio::time::timeout(Duration::from_secs(5), stream.read(&mut answer))
            .await
            .expect("no answer while the body stalls: the body is read before the key")
            .unwrap();
        let text = String::from_utf8_lossy(&answer[..read]);
        assert!(text.starts_with("HTTP/1.1 401"), "{key:?}: {text}");
        assert!(text.contains("invalid_api_key"), "{text}");
    }
    // With the key, a body is read up to 64 KiB: more is 413, a small one works.
    let client = reqwest::Client::new();
    let url = format!("{}/admin/cache/storage/clear", s.base);
    let big = format!("{{\"pattern\":\"{}\"}}", "a".repeat(100 * 1024));
    let r = client
        .post(&url)
        .header("x-api-key", KEY)
        .body(big)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 413);
    let r = client
        .post(&url)
        .header("x-api-key", KEY)
        .body(r#"{"pattern":"nothing/*"}"#)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let v: serde_json::Value = r.json().await.unwrap();
    assert_eq!(v["success"], true);
}

/// An SVG of `shapes` one-pixel rectangles: megabytes of markup whose parse takes a while.
fn busy_svg(shapes: usize) -> Vec<u8> {
    let mut svg =
        String::from(r#"<svg xmlns="http://www.w3.org/2000/svg" width="500" height="500">"#);
    for i in 0..shapes {
        svg.push_str(&format!(
            r##"<rect x="{}" y="{}" width="1" height="1" fill="#{:06x}"/>"##,
            i % 500,
            i / 500 % 500,
            i % 0xff_ffff
        ));
    }
    svg.push_str("</svg>");
    svg.into_bytes()
}

/// Upload checks (the probe, which parses an SVG's markup, and the small-scale decode) ran
/// the probe on the async runtime: two slow uploads froze the server, health included. Both
/// run on a blocking thread now: `/admin/health` answers within a second during two
/// concurrent uploads of 7 MB SVGs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_upload_checks_do_not_block_health() {
    let s = Server::start(&[]).await;
    let svg = busy_svg(120_000);
    eprintln!("SVG of {} bytes", svg.len());
    let stop = Arc::new(AtomicBool::new(false));
    let watcher = tokio::spawn(watch(s.base.clone(), s.metrics.clone(), Arc::clone(&stop)));
    let started = Instant::now();
    let uploads: Vec<_> = (0..2)
        .map(|n| {
            let (base, svg) = (s.base.clone(), svg.clone());
            tokio::spawn(async move {
                let r = common::upload_to(&base, &format!("busy-{n}.svg"), svg).await;
                r.status().as_u16()
            })
        })
        .collect();
    let mut statuses = Vec::new();
    for u in uploads {
        statuses.push(u.await.unwrap());
    }
    let took = started.elapsed();
    stop.store(true, Ordering::SeqCst);
    let seen = watcher.await.unwrap();
    eprintln!("uploads answered {statuses:?} in {took:?}; {seen:?}");
    assert!(
        statuses.iter().all(|s| *s < 500),
        "uploads answered {statuses:?}"
    );
    assert_eq!(seen.health_failures, 0, "{seen:?}");
    assert!(
        seen.slowest_health < Duration::from_secs(1),
        "/admin/health took {:?} during the uploads",
        seen.slowest_health
    );
}

/// The CPU time the process has used so far (utime + stime of /proc/<pid>/stat, at the
/// kernel's usual 100 ticks a second).
fn cpu_seconds(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    // The fields after the command name (which may hold spaces) in its parentheses.
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .unwrap()
        .1
        .split_whitespace()
        .collect();
    let ticks: u64 = fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap();
    ticks as f64 / 100.0
}

/// A job's deadline was counted from when it got its slot, and fixed at 120 s: a job queued
/// behind others could run for up to 120 s after its request had been answered 503. Now the
/// deadline is the request's own, fixed as it arrives (REQUEST_TIMEOUT_SECS): with one slot
/// and four heavy misses sent at once, each is answered 503 `request_timeout` within the
/// deadline and a margin, the queued ones never start, and the server's CPU work stops soon
/// after the deadline (the running job at its next stage boundary). The bounds after the
/// deadline are in CPU seconds: on a loaded machine (the other tests of this file run at the
/// same time) one stage can take several seconds of wall time.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn queued_heavy_misses_stop_at_their_requests_deadline() {
    const TIMEOUT_SECS: u64 = 2;
    const MARGIN: Duration = Duration::from_millis(1500);
    let s = Server::start(&[
        ("REQUEST_TIMEOUT_SECS", TIMEOUT_SECS.to_string()),
        ("TRANSFORM_CONCURRENCY", "1".to_owned()),
    ])
    .await;
    s.put("big.jpg", &photo());
    let deadline = Duration::from_secs(TIMEOUT_SECS);
    let cpu_before = cpu_seconds(s.pid());
    let started = Instant::now();
    let requests: Vec<_> = (0..4)
        .map(|n| {
            let url = format!("{}/images/resize/big.jpg?{}", s.base, heavy(100 + n));
            tokio::spawn(async move {
                let sent = Instant::now();
                let r = reqwest::Client::new()
                    .get(url)
                    .timeout(Duration::from_secs(60))
                    .send()
                    .await
                    .unwrap();
                let status = r.status().as_u16();
                let body: serde_json::Value = r.json().await.unwrap_or_default();
                let code = body["code"].as_str().unwrap_or("").to_owned();
                (status, code, sent.elapsed())
            })
        })
        .collect();
    let mut answers = Vec::new();
    for r in requests {
        answers.push(r.await.unwrap());
    }
    let cpu_answered = cpu_seconds(s.pid());
    // The running gauge, until it is back to 0.
    let client = reqwest::Client::new();
    let mut idle_after = None;
    while started.elapsed() < deadline + Duration::from_secs(10) {
        if running_now(&client, &s.metrics).await == 0.0 {
            idle_after = Some(started.elapsed());
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let cpu_idle = cpu_seconds(s.pid());
    tokio::time::sleep(Duration::from_secs(1)).await;
    let cpu_later = cpu_seconds(s.pid());
    eprintln!(
        "answers {answers:?}; running back to 0 after {idle_after:?}; CPU {:.2} s until the \
         answers, {:.2} s more until then, {:.2} s in the second after",
        cpu_answered - cpu_before,
        cpu_idle - cpu_answered,
        cpu_later - cpu_idle
    );
    for (status, code, took) in &answers {
        assert_eq!(
            (*status, code.as_str()),
            (503, "request_timeout"),
            "{answers:?}"
        );
        assert!(*took < deadline + MARGIN, "answered after {took:?}");
    }
    assert!(
        idle_after.is_some(),
        "transformations still running {:?} after the requests",
        deadline + Duration::from_secs(10)
    );
    // One slot: one job ran, and stopped at its next stage boundary after the deadline; the
    // three queued behind it never started.
    assert!(
        cpu_idle - cpu_answered < 2.0,
        "{:.2} CPU seconds of work after the deadline",
        cpu_idle - cpu_answered
    );
    assert!(
        cpu_idle - cpu_before < (deadline + Duration::from_secs(2)).as_secs_f64(),
        "{:.2} CPU seconds for requests of a {TIMEOUT_SECS} s deadline",
        cpu_idle - cpu_before
    );
    assert!(
        cpu_later - cpu_idle < 0.3,
        "the server still worked {:.2} CPU seconds after its jobs had stopped",
        cpu_later - cpu_idle
    );
}
