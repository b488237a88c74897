//! The HTTP server of `--metrics-listen`: hyper's HTTP/1 on a thread of its own, so a
//! slow or stuck scraper never holds up the scheduler, answering `GET /metrics` and
//! `/healthz`.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::time::Duration;

use anyhow::Context;
use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::{Method, Request, Response, StatusCode, header};

use super::Metrics;

/// Longest a scraper's connection may take, from accepting it to the last byte.
const CONNECTION_LIMIT: Duration = Duration::from_secs(10);
/// Longest a scraper may take to send its request's header.
const HEADER_LIMIT: Duration = Duration::from_secs(5);
/// Pause after a failed accept (descriptors exhausted, say) before the next one.
const ACCEPT_PAUSE: Duration = Duration::from_millis(100);

/// Binds `addr` (an error is the caller's exit 125) and serves `metrics` at
/// `/metrics` on a thread of its own until the process exits; returns the address
/// bound (the port chosen, for port 0).
pub fn serve(addr: SocketAddr, metrics: Metrics) -> anyhow::Result<SocketAddr> {
    let listener = std::net::TcpListener::bind(addr)
        .with_context(|| format!("--metrics-listen: cannot listen on {addr}"))?;
    listener
        .set_nonblocking(true)
        .context("--metrics-listen: cannot make the socket non-blocking")?;
    let bound = listener.local_addr()?;
    std::thread::Builder::new()
        .name("metrics".into())
        .spawn(move || {
            // Never joined: the scheduler's exit ends this thread wherever it is.
            crate::wait::on_runtime(accept(listener, metrics));
        })
        .context("--metrics-listen: cannot start the server's thread")?;
    Ok(bound)
}

async fn accept(listener: std::net::TcpListener, metrics: Metrics) {
    let Ok(listener) = tokio::net::TcpListener::from_std(listener) else {
        crate::report::error("--metrics-listen: the socket cannot be served; no metrics");
        return;
    };
    loop {
        match listener.accept().await {
            Ok((stream, _)) => {
                tokio::spawn(answer_connection(stream, metrics.clone()));
            }
            Err(_) => tokio::time::sleep(ACCEPT_PAUSE).await,
        }
    }
}

/// One scraper's connection: one request, answered, within [`CONNECTION_LIMIT`].
async fn answer_connection(stream: tokio::net::TcpStream, metrics: Metrics) {
    let service = hyper::service::service_fn(move |request| {
        let answer = answer_request(&request, &metrics);
        async move { Ok::<_, Infallible>(answer) }
    });
    let connection = hyper::server::conn::http1::Builder::new()
        .timer(hyper_util::rt::TokioTimer::new())
        .header_read_timeout(HEADER_LIMIT)
        .keep_alive(false)
        .serve_connection(hyper_util::rt::TokioIo::new(stream), service);
    let _ = tokio::time::timeout(CONNECTION_LIMIT, connection).await;
}

fn answer_request(request: &Request<Incoming>, metrics: &Metrics) -> Response<Full<Bytes>> {
    let openmetrics = request.headers().get_all(header::ACCEPT).iter().any(|v| {
        v.to_str()
            .is_ok_and(|v| v.contains("application/openmetrics-text"))
    });
    answer(request.method(), request.uri().path(), openmetrics, metrics)
}

/// `GET /metrics` (or `HEAD`): the exposition; anything else says what is served.
fn answer(
    method: &Method,
    path: &str,
    openmetrics: bool,
    metrics: &Metrics,
) -> Response<Full<Bytes>> {
    let reply = |status: StatusCode, content_type: &str, body: String| {
        let mut response = Response::new(Full::new(Bytes::from(body)));
        *response.status_mut() = status;
        if let Ok(value) = header::HeaderValue::from_str(content_type) {
            response.headers_mut().insert(header::CONTENT_TYPE, value);
        }
        response
    };
    if path == "/healthz" {
        return match metrics.is_alive() {
            true => reply(StatusCode::OK, "text/plain; charset=utf-8", "ok\n".into()),
            false => reply(
                StatusCode::SERVICE_UNAVAILABLE,
                "text/plain; charset=utf-8",
                "the scheduler's loop has not gone round for 10 s\n".into(),
            ),
        };
    }
    if path != "/metrics" {
        return reply(
            StatusCode::NOT_FOUND,
            "text/plain; charset=utf-8",
            "not found: the metrics are at /metrics (and /healthz)\n".into(),
        );
    }
    if method != Method::GET && method != Method::HEAD {
        let mut response = reply(
            StatusCode::METHOD_NOT_ALLOWED,
            "text/plain; charset=utf-8",
            "only GET and HEAD\n".into(),
        );
        response
            .headers_mut()
            .insert(header::ALLOW, header::HeaderValue::from_static("GET, HEAD"));
        return response;
    }
    let (content_type, body) = metrics.render(openmetrics);
    reply(StatusCode::OK, content_type, body)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status_and_type(method: Method, path: &str, openmetrics: bool) -> (u16, String) {
        let response = answer(&method, path, openmetrics, &Metrics::new("backup"));
        let content_type = response.headers()[header::CONTENT_TYPE].to_str().unwrap();
        (response.status().as_u16(), content_type.to_string())
    }

    #[test]
    fn metrics_and_health_are_served_and_anything_else_says_where_they_are() {
        let (status, text) = status_and_type(Method::GET, "/metrics", false);
        assert_eq!(
            (status, text.starts_with("text/plain")),
            (200, true),
            "{text}"
        );
        let (status, open) = status_and_type(Method::HEAD, "/metrics", true);
        assert_eq!(status, 200);
        assert!(open.starts_with("application/openmetrics-text"), "{open}");
        assert_eq!(status_and_type(Method::POST, "/metrics", false).0, 405);
        assert_eq!(status_and_type(Method::GET, "/", false).0, 404);
        let metrics = Metrics::new("backup");
        metrics.alive();
        let health = answer(&Method::GET, "/healthz", false, &metrics);
        assert_eq!(health.status().as_u16(), 200);
    }
}
