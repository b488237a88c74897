//! A loopback TCP proxy in front of PostgreSQL (or the pooler) that forwards each
//! connection's startup and authentication, then stops forwarding, in both directions
//! and without closing anything, at a chosen point: the first statement, the first
//! statement whose text holds some SQL, or any statement once a file exists. A server
//! that accepted the connection and then went silent, as a hung backend, a stalled
//! pooler or a cut network looks to a client.
//!
//! It reads the PostgreSQL protocol only as far as it must: the startup packet, the
//! server's first ReadyForQuery (authentication done), then the client's messages one
//! by one. It counts the calls (Query and Sync messages) that arrive on a connection
//! after it stalled, so a test can check that no further call is made on a connection
//! that timed out.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

/// Where a connection stops forwarding.
#[derive(Clone, Debug)]
pub enum When {
    /// At the first statement after authentication.
    FirstStatement,
    /// At the first statement whose text holds this (e.g. `UPDATE retry_circuits`).
    Sql(String),
    /// At any statement once this file exists (a command creates it when it is done).
    FileExists(PathBuf),
    /// Never: every statement whose text holds the SQL is held this long, then forwarded
    /// (a server that answers late).
    Late(String, Duration),
    /// At any statement made while this file exists: the server is silent for a while,
    /// then answers new connections again (a stalled call stays unanswered).
    WhileFileExists(PathBuf),
}

pub struct Proxy {
    pub port: u16,
    shared: Arc<Shared>,
}

struct Shared {
    when: When,
    /// Once one connection stalled, every statement on any connection stalls (the
    /// server is gone silent, not one session); unless `one`: then only that one
    /// connection stalls, once (a single call that gets no answer).
    stalled: AtomicBool,
    one: bool,
    /// Calls that reached a stalled connection after the one that stalled it.
    calls_after_stall: AtomicUsize,
}

impl Proxy {
    /// A proxy to `127.0.0.1:port` where every connection stalls `when`, and every
    /// statement after that.
    pub fn to(port: u16, when: When) -> Proxy {
        Proxy::start(port, when, false)
    }

    /// A proxy to `127.0.0.1:port` where only the first connection to meet `when`
    /// stalls; every other call is answered.
    pub fn to_one(port: u16, when: When) -> Proxy {
        Proxy::start(port, when, true)
    }

    fn start(port: u16, when: When, one: bool) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let proxy = Proxy {
            port: listener.local_addr().unwrap().port(),
            shared: Arc::new(Shared {
                when,
                one,
                stalled: AtomicBool::new(false),
                calls_after_stall: AtomicUsize::new(0),
            }),
        };
        let shared = Arc::clone(&proxy.shared);
        std::thread::spawn(move || {
            for client in listener.incoming().flatten() {
                let Ok(server) = TcpStream::connect(("127.0.0.1", port)) else {
                    continue;
                };
                let shared = Arc::clone(&shared);
                std::thread::spawn(move || relay(client, server, &shared));
            }
        });
        proxy
    }

    /// `postgres://USER@127.0.0.1:PORT/postgres` + `rest`, through this proxy.
    pub fn url(&self, rest: &str) -> String {
        format!(
            "postgres://{}@127.0.0.1:{}/postgres{rest}",
            super::postgres::USER,
            self.port
        )
    }

    /// Whether a statement has stalled.
    pub fn stalled(&self) -> bool {
        self.shared.stalled.load(Ordering::SeqCst)
    }

    /// Calls made on a stalled connection after the call that stalled it.
    pub fn calls_after_stall(&self) -> usize {
        self.shared.calls_after_stall.load(Ordering::SeqCst)
    }
}

/// Relays one connection: the server's side on its own thread (it only needs to see
/// the first ReadyForQuery, then to stop when the connection stalls), the client's
/// message by message on this one.
fn relay(mut client: TcpStream, server: TcpStream, shared: &Arc<Shared>) {
    let authenticated = Arc::new(AtomicBool::new(false));
    let stalled_here = Arc::new(AtomicBool::new(false));
    {
        let (mut from, mut to) = (server.try_clone().unwrap(), client.try_clone().unwrap());
        let (authenticated, stalled_here) = (Arc::clone(&authenticated), Arc::clone(&stalled_here));
        std::thread::spawn(move || {
            let mut buf = [0u8; 16384];
            loop {
                let Ok(n) = from.read(&mut buf) else { return };
                if n == 0 {
                    return;
                }
                if stalled_here.load(Ordering::SeqCst) {
                    // Silence: hold both sockets, forward nothing.
                    hold_forever(&[&from, &to]);
                }
                if buf[..n].contains(&b'Z') {
                    authenticated.store(true, Ordering::SeqCst);
                }
                if to.write_all(&buf[..n]).is_err() {
                    return;
                }
            }
        });
    }
    let mut server = server;
    // The startup packet (and an SSLRequest before it) has no type byte.
    let mut startup = true;
    loop {
        let message = if startup {
            read_untyped(&mut client)
        } else {
            read_typed(&mut client)
        };
        let Some(message) = message else { return };
        if startup {
            // An SSLRequest (code 80877103) is followed by the real startup packet.
            startup = message.len() == 8 && message[4..8] == [0x04, 0xd2, 0x16, 0x2f];
            if server.write_all(&message).is_err() {
                return;
            }
            continue;
        }
        let kind = message[0];
        let is_call = matches!(kind, b'Q' | b'S');
        if stalled_here.load(Ordering::SeqCst) {
            if is_call {
                shared.calls_after_stall.fetch_add(1, Ordering::SeqCst);
            }
            continue;
        }
        let text = statement_text(&message);
        if let When::Late(sql, delay) = &shared.when {
            if text.contains(sql.as_str()) {
                std::thread::sleep(*delay);
            }
        }
        if authenticated.load(Ordering::SeqCst)
            && matches!(kind, b'Q' | b'P')
            && stalls(shared, &text)
        {
            shared.stalled.store(true, Ordering::SeqCst);
            stalled_here.store(true, Ordering::SeqCst);
            // The rest of this call (Bind, Execute, Sync) follows without counting.
            let sync_due = kind == b'P';
            drain_call(&mut client, sync_due, shared);
            continue;
        }
        if server.write_all(&message).is_err() {
            return;
        }
    }
}

/// Reads the rest of a stalled extended-protocol call up to its Sync, then counts
/// every later call on the connection.
fn drain_call(client: &mut TcpStream, sync_due: bool, shared: &Shared) {
    let mut sync_due = sync_due;
    while let Some(message) = read_typed(client) {
        match message[0] {
            b'S' if sync_due => sync_due = false,
            b'Q' | b'S' => {
                shared.calls_after_stall.fetch_add(1, Ordering::SeqCst);
            }
            _ => {}
        }
    }
}

fn stalls(shared: &Shared, text: &str) -> bool {
    if let When::WhileFileExists(path) = &shared.when {
        return path.exists();
    }
    if shared.stalled.load(Ordering::SeqCst) {
        return !shared.one;
    }
    match &shared.when {
        When::FirstStatement => true,
        When::Sql(sql) => text.contains(sql.as_str()),
        When::FileExists(path) | When::WhileFileExists(path) => path.exists(),
        When::Late(..) => false,
    }
}

/// The SQL of a Query ('Q') or Parse ('P') message.
fn statement_text(message: &[u8]) -> String {
    let body = &message[5..];
    let body = match message[0] {
        // Parse: the statement's name, NUL, then the text.
        b'P' => body
            .iter()
            .position(|b| *b == 0)
            .map_or(body, |i| &body[i + 1..]),
        b'Q' => body,
        _ => return String::new(),
    };
    let end = body.iter().position(|b| *b == 0).unwrap_or(body.len());
    String::from_utf8_lossy(&body[..end]).into_owned()
}

/// A message without a type byte: a 4-byte length (itself included), then the rest.
pub fn read_untyped(stream: &mut TcpStream) -> Option<Vec<u8>> {
    let mut len = [0u8; 4];
    stream.read_exact(&mut len).ok()?;
    let n = u32::from_be_bytes(len) as usize;
    let mut message = len.to_vec();
    message.resize(n.max(4), 0);
    stream.read_exact(&mut message[4..]).ok()?;
    Some(message)
}

/// A message with a type byte: the type, a 4-byte length (itself included), the rest.
fn read_typed(stream: &mut TcpStream) -> Option<Vec<u8>> {
    let mut head = [0u8; 5];
    stream.read_exact(&mut head).ok()?;
    let n = u32::from_be_bytes(head[1..5].try_into().unwrap()) as usize;
    let mut message = head.to_vec();
    message.resize(1 + n.max(4), 0);
    stream.read_exact(&mut message[5..]).ok()?;
    Some(message)
}

/// Keeps the sockets open and silent until the test process ends.
fn hold_forever(_sockets: &[&TcpStream]) -> ! {
    loop {
        std::thread::sleep(Duration::from_secs(3600));
    }
}
