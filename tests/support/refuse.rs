//! A loopback TCP proxy in front of PostgreSQL (or the pooler) that turns the first
//! connections away as a full server does, then forwards: to each of the first N it
//! answers the startup with PostgreSQL's own FATAL 53300 "sorry, too many clients
//! already" and closes, as a server at `max_connections` would. It counts the
//! connections it turned away and the ones it forwarded.

use std::io::Write;
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use super::stall::read_untyped;

pub struct Refuser {
    pub port: u16,
    counts: Arc<Counts>,
}

struct Counts {
    /// How many connections to turn away before forwarding.
    refuse: usize,
    refused: AtomicUsize,
    forwarded: AtomicUsize,
}

impl Refuser {
    /// A proxy to `127.0.0.1:port` that refuses the first `refuse` connections
    /// (`usize::MAX`: every one).
    pub fn to(port: u16, refuse: usize) -> Refuser {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let refuser = Refuser {
            port: listener.local_addr().unwrap().port(),
            counts: Arc::new(Counts {
                refuse,
                refused: AtomicUsize::new(0),
                forwarded: AtomicUsize::new(0),
            }),
        };
        let counts = Arc::clone(&refuser.counts);
        std::thread::spawn(move || {
            for (turn, client) in listener.incoming().flatten().enumerate() {
                let counts = Arc::clone(&counts);
                std::thread::spawn(move || serve(client, turn, port, &counts));
            }
        });
        refuser
    }

    /// `postgres://USER@127.0.0.1:PORT/postgres` + `rest`, through this proxy.
    pub fn url_as(&self, user: &str, rest: &str) -> String {
        format!("postgres://{user}@127.0.0.1:{}/postgres{rest}", self.port)
    }

    pub fn refused(&self) -> usize {
        self.counts.refused.load(Ordering::SeqCst)
    }

    pub fn forwarded(&self) -> usize {
        self.counts.forwarded.load(Ordering::SeqCst)
    }
}

/// Turns away connection number `turn` (from 0), or forwards it to `port`.
fn serve(mut client: TcpStream, turn: usize, port: u16, counts: &Counts) {
    if turn < counts.refuse {
        counts.refused.fetch_add(1, Ordering::SeqCst);
        refuse(&mut client);
        return;
    }
    let Ok(server) = TcpStream::connect(("127.0.0.1", port)) else {
        return;
    };
    counts.forwarded.fetch_add(1, Ordering::SeqCst);
    let (mut from_client, mut to_server) =
        (client.try_clone().unwrap(), server.try_clone().unwrap());
    std::thread::spawn(move || {
        let _ = std::io::copy(&mut from_client, &mut to_server);
        let _ = to_server.shutdown(Shutdown::Write);
    });
    let (mut from_server, mut to_client) = (server, client);
    let _ = std::io::copy(&mut from_server, &mut to_client);
    let _ = to_client.shutdown(Shutdown::Write);
}

/// Reads the startup (declining TLS first when asked), then answers as a server at
/// `max_connections` does, and closes.
fn refuse(client: &mut TcpStream) {
    loop {
        let Some(packet) = read_untyped(client) else {
            return;
        };
        // An SSLRequest (code 80877103): no TLS here; the startup packet follows.
        if packet.len() == 8 && packet[4..8] == [0x04, 0xd2, 0x16, 0x2f] {
            if client.write_all(b"N").is_err() {
                return;
            }
            continue;
        }
        break;
    }
    let mut fields = Vec::new();
    for (code, value) in [
        (b'S', "FATAL"),
        (b'V', "FATAL"),
        (b'C', "53300"),
        (b'M', "sorry, too many clients already"),
    ] {
        fields.push(code);
        fields.extend_from_slice(value.as_bytes());
        fields.push(0);
    }
    fields.push(0);
    let mut message = vec![b'E'];
    message.extend_from_slice(&(fields.len() as u32 + 4).to_be_bytes());
    message.extend_from_slice(&fields);
    let _ = client.write_all(&message);
    let _ = client.shutdown(Shutdown::Both);
}
