//! A loopback HTTP server for the fleet benchmarks that is not the bottleneck: a
//! multi-threaded hyper server. `--down-for SECS` answers 503 for SECS after the
//! first request, then 200; `--gather N` holds the first N requests and answers
//! them together, starting the outage then, so that N clients fail at the same
//! instant as a real herd does (however long N processes take to start here). On
//! SIGTERM it writes a JSON summary of every request's arrival to `--stats FILE`. `--load URL SECS CONNS` is the other side: a
//! keep-alive GET loop on CONNS threads that prints the requests a second it got.
//!
//!     cargo run --release --example herd_server -- --down-for 10 --stats s.json
//!     cargo run --release --example herd_server -- --load http://127.0.0.1:PORT/ 3 32

use std::convert::Infallible;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use http_body_util::Full;
use hyper::body::Bytes;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;

/// Arrivals: seconds since the first request, and the status given.
struct State {
    start: OnceLock<Instant>,
    outage: Duration,
    arrivals: Mutex<Vec<(f64, u16)>>,
    /// Requests to hold until this many have arrived (0: none).
    gather: usize,
    gathered: AtomicUsize,
}

/// Longest a gathered request is held when fewer than N arrive.
const GATHER_LIMIT: Duration = Duration::from_secs(30);

impl State {
    /// Holds the first `gather` requests until the last of them arrives.
    async fn gather(&self) {
        if self.gathered.fetch_add(1, Ordering::SeqCst) >= self.gather {
            return;
        }
        let end = Instant::now() + GATHER_LIMIT;
        while self.gathered.load(Ordering::SeqCst) < self.gather && Instant::now() < end {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    }

    fn answer(&self) -> u16 {
        let start = *self.start.get_or_init(Instant::now);
        let at = start.elapsed();
        let status = if at < self.outage { 503 } else { 200 };
        self.arrivals
            .lock()
            .unwrap()
            .push((at.as_secs_f64(), status));
        status
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("--load") {
        let secs: u64 = args[2].parse().expect("SECS");
        let conns: usize = args[3].parse().expect("CONNS");
        load(&args[1], Duration::from_secs(secs), conns);
        return;
    }
    let mut outage = Duration::ZERO;
    let mut stats = None;
    let mut gather = 0;
    let mut it = args.into_iter();
    while let Some(arg) = it.next() {
        match arg.as_str() {
            "--down-for" => outage = Duration::from_secs_f64(it.next().unwrap().parse().unwrap()),
            "--stats" => stats = it.next(),
            "--gather" => gather = it.next().unwrap().parse().unwrap(),
            other => panic!("unknown argument {other}"),
        }
    }
    let state = Arc::new(State {
        start: OnceLock::new(),
        outage,
        arrivals: Mutex::new(Vec::new()),
        gather,
        gathered: AtomicUsize::new(0),
    });
    let stop = Arc::new(AtomicBool::new(false));
    signal_hook::flag::register(signal_hook::consts::SIGTERM, Arc::clone(&stop)).unwrap();
    signal_hook::flag::register(signal_hook::consts::SIGINT, Arc::clone(&stop)).unwrap();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let listener = runtime
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .unwrap();
    println!("{}", listener.local_addr().unwrap().port());
    std::io::stdout().flush().unwrap();
    runtime.spawn(serve(listener, Arc::clone(&state)));
    while !stop.load(Ordering::SeqCst) {
        std::thread::sleep(Duration::from_millis(20));
    }
    if let Some(path) = stats {
        std::fs::write(path, summary(&state)).unwrap();
    }
    runtime.shutdown_background();
}

async fn serve(listener: tokio::net::TcpListener, state: Arc<State>) {
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            continue;
        };
        let state = Arc::clone(&state);
        tokio::spawn(async move {
            let service = service_fn(move |_req: Request<hyper::body::Incoming>| {
                let state = Arc::clone(&state);
                async move {
                    state.gather().await;
                    let status = state.answer();
                    let body = if status == 200 {
                        "ok\n"
                    } else {
                        "unavailable\n"
                    };
                    Ok::<_, Infallible>(
                        Response::builder()
                            .status(status)
                            .body(Full::new(Bytes::from_static(body.as_bytes())))
                            .unwrap(),
                    )
                }
            });
            let _ = http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
}

/// Most arrivals in any half-open window [t, t + width).
fn peak(times: &[f64], width: f64) -> usize {
    let (mut best, mut lo) = (0, 0);
    for (hi, t) in times.iter().enumerate() {
        while times[lo] <= t - width {
            lo += 1;
        }
        best = best.max(hi - lo + 1);
    }
    best
}

fn summary(state: &State) -> String {
    let mut arrivals = state.arrivals.lock().unwrap().clone();
    arrivals.sort_by(|a, b| a.0.total_cmp(&b.0));
    let outage = state.outage.as_secs_f64();
    let during: Vec<f64> = arrivals
        .iter()
        .filter(|a| a.1 == 503)
        .map(|a| a.0)
        .collect();
    let after: Vec<f64> = arrivals
        .iter()
        .filter(|a| a.0 >= outage)
        .map(|a| a.0)
        .collect();
    format!(
        "{{\"total\": {}, \"status_503\": {}, \"status_200\": {}, \"peak_100ms_during_outage\": {}, \
         \"peak_100ms_after_recovery\": {}, \"last_request_s\": {:.3}}}\n",
        arrivals.len(),
        during.len(),
        arrivals.len() - during.len(),
        peak(&during, 0.1),
        peak(&after, 0.1),
        arrivals.last().map_or(0.0, |a| a.0)
    )
}

/// Keep-alive GETs on `conns` threads for `secs`; prints requests a second.
fn load(url: &str, secs: Duration, conns: usize) {
    let addr = url
        .trim_start_matches("http://")
        .trim_end_matches('/')
        .to_string();
    let end = Instant::now() + secs;
    let threads: Vec<_> = (0..conns)
        .map(|_| {
            let addr = addr.clone();
            std::thread::spawn(move || {
                let mut stream = TcpStream::connect(&addr).unwrap();
                stream.set_nodelay(true).unwrap();
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                let request = format!("GET / HTTP/1.1\r\nHost: {addr}\r\n\r\n");
                let mut done = 0u64;
                while Instant::now() < end {
                    stream.write_all(request.as_bytes()).unwrap();
                    read_response(&mut reader);
                    done += 1;
                }
                done
            })
        })
        .collect();
    let total: u64 = threads.into_iter().map(|t| t.join().unwrap()).sum();
    println!("{:.0}", total as f64 / secs.as_secs_f64());
}

/// Reads one response with a Content-Length body.
fn read_response(reader: &mut BufReader<TcpStream>) {
    let mut length = 0;
    let mut line = String::new();
    loop {
        line.clear();
        reader.read_line(&mut line).unwrap();
        if line == "\r\n" || line.is_empty() {
            break;
        }
        if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
            length = v.trim().parse().unwrap();
        }
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body).unwrap();
}
