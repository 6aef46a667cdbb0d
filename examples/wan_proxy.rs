//! A WAN-shaped TCP proxy for the fleet benchmark (`tools/bench.sh --fleet-wan`,
//! docs/performance.md): each listener stands for one remote cluster in front of the same
//! upstream API server. Bytes pass through unchanged (TLS included), but every listener is one
//! link: each direction is a queue drained at `--rate` bytes per second, shared by all the
//! listener's connections, and every chunk arrives half the round-trip time after it left the
//! queue. A new connection waits one round trip before its first byte passes (the TCP handshake).
//!
//! ```sh
//! cargo run --release --example wan_proxy -- --upstream 127.0.0.1:6443 --listeners 3 --rtt-ms 50 --rate-mb 20
//! ```
//!
//! Prints one `127.0.0.1:PORT` line per listener on stdout, then serves until killed.

use anyhow::Result;
use clap::Parser;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio::time::Instant;

#[derive(Parser)]
#[command(about = "TCP proxies that add a round-trip time and a bandwidth cap, one link per listener")]
struct Args {
    /// The server every listener forwards to (host:port).
    #[arg(long)]
    upstream: String,
    /// How many listeners (links) to open.
    #[arg(long, default_value_t = 1)]
    listeners: usize,
    /// The round-trip time each link adds, in milliseconds.
    #[arg(long, default_value_t = 50)]
    rtt_ms: u64,
    /// Each direction of each link carries at most this many megabytes (10^6 bytes) per second.
    #[arg(long, default_value_t = 20.0)]
    rate_mb: f64,
}

/// One direction of a link: when its queue is free again.
type Queue = Arc<Mutex<Instant>>;

#[derive(Clone)]
struct Link {
    up: Queue,
    down: Queue,
    rtt: Duration,
    bytes_per_second: f64,
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<()> {
    let args = Args::parse();
    let mut listeners = Vec::new();
    for _ in 0..args.listeners {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        println!("{}", listener.local_addr()?);
        listeners.push(listener);
    }
    let rtt = Duration::from_millis(args.rtt_ms);
    let mut serving = Vec::new();
    for listener in listeners {
        let now = Instant::now();
        let link = Link { up: Arc::new(Mutex::new(now)), down: Arc::new(Mutex::new(now)), rtt, bytes_per_second: args.rate_mb * 1e6 };
        serving.push(tokio::spawn(serve(listener, link, args.upstream.clone())));
    }
    for task in serving {
        task.await??;
    }
    Ok(())
}

async fn serve(listener: TcpListener, link: Link, upstream: String) -> Result<()> {
    loop {
        let (client, _) = listener.accept().await?;
        let (link, upstream) = (link.clone(), upstream.clone());
        tokio::spawn(async move {
            let _ = connection(client, link, &upstream).await;
        });
    }
}

async fn connection(client: TcpStream, link: Link, upstream: &str) -> Result<()> {
    let server = TcpStream::connect(upstream).await?;
    client.set_nodelay(true)?;
    server.set_nodelay(true)?;
    tokio::time::sleep(link.rtt).await; // the TCP handshake: one round trip before any data
    let (client_read, client_write) = client.into_split();
    let (server_read, server_write) = server.into_split();
    let up = tokio::spawn(direction(client_read, server_write, link.up.clone(), link.clone()));
    direction(server_read, client_write, link.down.clone(), link).await;
    up.abort();
    Ok(())
}

/// Carries one direction: each chunk read waits for the link's queue, takes its size / rate on
/// it, and arrives half a round trip later; chunks keep their order.
async fn direction(mut from: OwnedReadHalf, mut to: OwnedWriteHalf, queue: Queue, link: Link) {
    let (send, mut arrive) = mpsc::unbounded_channel::<(Instant, Vec<u8>)>();
    let writer = tokio::spawn(async move {
        while let Some((at, chunk)) = arrive.recv().await {
            tokio::time::sleep_until(at).await;
            if to.write_all(&chunk).await.is_err() {
                return;
            }
        }
        let _ = to.shutdown().await;
    });
    let mut buffer = vec![0u8; 64 * 1024];
    while let Ok(n) = from.read(&mut buffer).await {
        if n == 0 {
            break;
        }
        let at = {
            let mut free = queue.lock().unwrap();
            let start = (*free).max(Instant::now());
            *free = start + Duration::from_secs_f64(n as f64 / link.bytes_per_second);
            *free + link.rtt / 2
        };
        if send.send((at, buffer[..n].to_vec())).is_err() {
            break;
        }
    }
    drop(send);
    let _ = writer.await;
}
