//! The console's HTTP/1.1 server loop: each accepted connection served by hyper with a deadline
//! for its request headers, the peer's address given to the sign-in, and a graceful shutdown
//! that lets requests in flight finish. A client that opens a connection and sends its headers
//! a byte at a time (or never) is cut off after the deadline instead of holding a connection
//! and its task for good.

use std::{future::Future, net::SocketAddr, time::Duration};

use axum::{body::Body, extract::ConnectInfo, Router};
use hyper::body::Incoming;
use hyper_util::{
    rt::{TokioIo, TokioTimer},
    service::TowerToHyperService,
};
use tower::ServiceExt as _;

/// How long a client may take to send a request's headers, by default.
pub const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);

/// Serves `router` on `listener` until `shutdown` resolves, then waits for the connections
/// still open to finish their requests. A connection whose request headers take longer than
/// `header_read_timeout` is closed.
pub async fn serve(
    listener: tokio::net::TcpListener,
    router: Router,
    header_read_timeout: Duration,
    shutdown: impl Future<Output = ()> + Send,
) -> std::io::Result<()> {
    // Each connection holds a receiver; when all are gone, every connection has ended.
    let (closing, _) = tokio::sync::watch::channel(());
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(pair) => pair,
                Err(error) => {
                    // Out of file descriptors and the like: wait a moment rather than spin.
                    tracing::warn!(%error, "could not accept a connection");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        let service = router
            .clone()
            .map_request(move |request: http::Request<Incoming>| {
                let mut request = request.map(Body::new);
                request
                    .extensions_mut()
                    .insert(ConnectInfo::<SocketAddr>(peer));
                request
            });
        let service = TowerToHyperService::new(service);
        let mut stop = closing.subscribe();
        tokio::spawn(async move {
            let mut builder = hyper::server::conn::http1::Builder::new();
            builder
                .timer(TokioTimer::new())
                .header_read_timeout(header_read_timeout);
            let mut connection =
                std::pin::pin!(builder.serve_connection(TokioIo::new(stream), service));
            tokio::select! {
                result = connection.as_mut() => {
                    if let Err(error) = result {
                        tracing::debug!(%error, %peer, "a connection ended with an error");
                    }
                }
                _ = stop.changed() => {
                    connection.as_mut().graceful_shutdown();
                    if let Err(error) = connection.await {
                        tracing::debug!(%error, %peer, "a connection ended with an error while stopping");
                    }
                }
            }
            drop(stop);
        });
    }
    drop(listener);
    // Tell every connection to finish its request and close, then wait for them.
    let _ = closing.send(());
    closing.closed().await;
    Ok(())
}
