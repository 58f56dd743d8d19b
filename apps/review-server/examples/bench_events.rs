#![expect(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::zombie_processes,
    reason = "a benchmark run by hand: a failure ends it with its message, and it kills and waits for its server itself"
)]
//! Event-stream fan-out (bench/review/run.sh runs it): N clients hold GET /api/events open; an
//! event is published (a repo registration through the API, which emits repo:updated) and
//! every client's receipt is timed from just before the request that publishes it.
//! Target: all 1,000 clients receive it within 100 ms.
//!
//! Usage: bench_events <review-server binary> [clients] [rounds]

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::mpsc;

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().collect();
    let bin = args
        .get(1)
        .expect("usage: bench_events <binary> [clients] [rounds]");
    let clients: usize = args.get(2).map_or(1000, |v| v.parse().unwrap());
    let rounds: usize = args.get(3).map_or(20, |v| v.parse().unwrap());
    let data = tempfile::tempdir().unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut child = Command::new(bin)
        .env("LISTEN", format!("127.0.0.1:{port}"))
        .env("DATA_DIR", data.path())
        .env("RUST_LOG", "warn")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let http = reqwest::Client::new();
    let base = format!("http://127.0.0.1:{port}");
    for _ in 0..400 {
        if http.get(format!("{base}/health")).send().await.is_ok() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }

    // Each client reports (round, receipt instant) for every repo:updated frame it reads.
    let (tx, mut rx) = mpsc::unbounded_channel::<(usize, Instant)>();
    let (ready_tx, mut ready_rx) = mpsc::unbounded_channel::<()>();
    for _ in 0..clients {
        let (tx, ready_tx) = (tx.clone(), ready_tx.clone());
        tokio::spawn(async move {
            let mut s = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
            s.write_all(
                b"GET /api/events HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n\r\n",
            )
            .await
            .unwrap();
            let mut buf = Vec::new();
            let mut chunk = vec![0u8; 8192];
            let mut ready = false;
            loop {
                let n = s.read(&mut chunk).await.unwrap();
                if n == 0 {
                    return;
                }
                let now = Instant::now();
                buf.extend_from_slice(&chunk[..n]);
                let text = String::from_utf8_lossy(&buf).to_string();
                if !ready && text.contains("event: heartbeat") {
                    ready = true;
                    let _ = ready_tx.send(());
                }
                // Every frame carrying `"installation_id":<round>` marks that round's receipt.
                let mut consumed = 0;
                while let Some(pos) = text[consumed..].find("\"installation_id\":") {
                    let start = consumed + pos + "\"installation_id\":".len();
                    let end = start
                        + text[start..]
                            .find(|c: char| !c.is_ascii_digit())
                            .unwrap_or(0);
                    if end == start {
                        break;
                    }
                    let round: usize = text[start..end].parse().unwrap();
                    let _ = tx.send((round, now));
                    consumed = end;
                }
                buf.drain(..consumed.min(buf.len()));
            }
        });
    }
    drop(ready_tx);
    for _ in 0..clients {
        ready_rx.recv().await.unwrap();
    }
    let mut worst = Vec::new();
    let mut all = Vec::new();
    for round in 1..=rounds {
        let t0 = Instant::now();
        let r = http
            .post(format!("{base}/api/repos"))
            .json(&serde_json::json!({ "full_name": "bench/fanout", "installation_id": round }))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 200);
        let mut got = 0;
        let mut max = Duration::ZERO;
        let deadline = t0 + Duration::from_secs(5);
        while got < clients {
            let (rr, at) = tokio::time::timeout_at(deadline.into(), rx.recv())
                .await
                .expect("clients missed the event")
                .unwrap();
            if rr == round {
                got += 1;
                let d = at.duration_since(t0);
                all.push(d);
                max = max.max(d);
            }
        }
        worst.push(max);
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    child.kill().unwrap();
    worst.sort();
    all.sort();
    let ms = |d: Duration| format!("{:.2}", d.as_secs_f64() * 1000.0);
    let pct = |v: &[Duration], p: f64| {
        v[((p / 100.0 * v.len() as f64).ceil() as usize).clamp(1, v.len()) - 1]
    };
    println!("| event fan-out, {clients} clients, {rounds} events | ms | target |");
    println!("|---|---:|---:|");
    println!(
        "| time until the last client has the event, median over events | {} | < 100 |",
        ms(pct(&worst, 50.0))
    );
    println!(
        "| time until the last client has the event, worst event | {} | < 100 |",
        ms(*worst.last().unwrap())
    );
    println!(
        "| per-client receipt p50 / p99 | {} / {} | |",
        ms(pct(&all, 50.0)),
        ms(pct(&all, 99.0))
    );
}
