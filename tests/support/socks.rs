//! Proxies for the SOCKS tests. `Microsocks` runs the real `microsocks` SOCKS5 server
//! on a loopback port. `SocksServer` is the tests' own, for what a real proxy cannot
//! be made to do on demand: it speaks SOCKS4, SOCKS4a and SOCKS5 without
//! authentication, answers every request with one scripted reply, relays the
//! connection to the target when the reply grants it, and records each request.
//! `NxDomain` is a nameserver that knows no name, for a proxy name that must not
//! resolve without asking anyone else.

use std::io::{Read, Write};
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

/// `microsocks` on 127.0.0.1, optionally with a user and password; killed when dropped.
pub struct Microsocks {
    child: Child,
    port: u16,
}

impl Microsocks {
    pub fn start(credentials: Option<(&str, &str)>) -> Microsocks {
        let port = super::ports::free_port();
        let mut cmd = Command::new("microsocks");
        cmd.args(["-i", "127.0.0.1", "-p", &port.to_string()]);
        if let Some((user, password)) = credentials {
            cmd.args(["-u", user, "-P", password]);
        }
        let child = cmd
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("microsocks runs (.ci/run installs it)");
        assert!(
            super::ports::wait_for_port(port, Duration::from_secs(10)),
            "microsocks did not listen"
        );
        Microsocks { child, port }
    }

    pub fn port(&self) -> u16 {
        self.port
    }
}

impl Drop for Microsocks {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// What the tests' own SOCKS server answers.
#[derive(Clone, Copy, Debug)]
pub enum SocksReply {
    /// Success (SOCKS4 90, SOCKS5 0); the connection is relayed to the target.
    Grant,
    /// This reply code (SOCKS4 91-93, SOCKS5 1-8), then the connection is closed.
    Refuse(u8),
    /// SOCKS5's "no acceptable methods" (0xFF) to the greeting.
    NoMethod,
}

pub struct SocksServer {
    addr: SocketAddr,
    requests: Arc<Mutex<Vec<String>>>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl SocksServer {
    pub fn start(reply: SocksReply) -> SocksServer {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind a loopback port");
        let addr = listener.local_addr().unwrap();
        let requests = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let thread = {
            let (requests, stop) = (Arc::clone(&requests), Arc::clone(&stop));
            std::thread::spawn(move || {
                for conn in listener.incoming() {
                    if stop.load(Ordering::SeqCst) {
                        break;
                    }
                    let Ok(conn) = conn else { continue };
                    let requests = Arc::clone(&requests);
                    std::thread::spawn(move || {
                        let _ = conn.set_read_timeout(Some(Duration::from_secs(5)));
                        let _ = serve(conn, reply, &requests);
                    });
                }
            })
        };
        SocksServer {
            addr,
            requests,
            stop,
            thread: Some(thread),
        }
    }

    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    /// Each request as `VERSION HOST:PORT` (`5 localhost:8080`, `4a localhost:80`),
    /// or `5 greeting` for a SOCKS5 client turned away before its request.
    pub fn requests(&self) -> Vec<String> {
        self.requests.lock().unwrap().clone()
    }
}

impl Drop for SocksServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect(self.addr);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

fn serve(
    mut conn: TcpStream,
    reply: SocksReply,
    requests: &Mutex<Vec<String>>,
) -> std::io::Result<()> {
    let version = byte(&mut conn)?;
    let (request, target) = match version {
        4 => socks4_request(&mut conn)?,
        5 => match socks5_greeting(&mut conn, reply, requests)? {
            true => socks5_request(&mut conn)?,
            false => return Ok(()),
        },
        _ => return Ok(()),
    };
    requests.lock().unwrap().push(request);
    let code = match reply {
        SocksReply::Grant if version == 4 => 90,
        SocksReply::Grant => 0,
        SocksReply::Refuse(code) => code,
        SocksReply::NoMethod => unreachable!("turned away at the greeting"),
    };
    let answer: &[u8] = if version == 4 {
        &[0, code, 0, 0, 0, 0, 0, 0]
    } else {
        &[5, code, 0, 1, 0, 0, 0, 0, 0, 0]
    };
    // The target is reached before the grant, as a proxy does.
    let upstream = match reply {
        SocksReply::Grant => Some(TcpStream::connect(target.as_str())?),
        _ => None,
    };
    conn.write_all(answer)?;
    if let Some(upstream) = upstream {
        relay(conn, upstream)?;
    }
    Ok(())
}

/// SOCKS4: command, port, IPv4 address, user id; SOCKS4a puts 0.0.0.x and a name after it.
fn socks4_request(conn: &mut TcpStream) -> std::io::Result<(String, String)> {
    let mut head = [0u8; 7];
    conn.read_exact(&mut head)?;
    let port = u16::from_be_bytes([head[1], head[2]]);
    let ip = Ipv4Addr::new(head[3], head[4], head[5], head[6]);
    text_until_nul(conn)?;
    let is_4a = head[3..6] == [0, 0, 0] && head[6] != 0;
    if is_4a {
        let host = text_until_nul(conn)?;
        Ok((format!("4a {host}:{port}"), format!("{host}:{port}")))
    } else {
        Ok((format!("4 {ip}:{port}"), format!("{ip}:{port}")))
    }
}

/// Answers the method offer: no authentication, or none acceptable (then `false`).
fn socks5_greeting(
    conn: &mut TcpStream,
    reply: SocksReply,
    requests: &Mutex<Vec<String>>,
) -> std::io::Result<bool> {
    let count = byte(conn)?;
    let mut methods = vec![0u8; usize::from(count)];
    conn.read_exact(&mut methods)?;
    if matches!(reply, SocksReply::NoMethod) || !methods.contains(&0) {
        requests.lock().unwrap().push("5 greeting".into());
        conn.write_all(&[5, 0xFF])?;
        return Ok(false);
    }
    conn.write_all(&[5, 0])?;
    Ok(true)
}

fn socks5_request(conn: &mut TcpStream) -> std::io::Result<(String, String)> {
    let mut head = [0u8; 4];
    conn.read_exact(&mut head)?;
    let host = match head[3] {
        1 => {
            let mut ip = [0u8; 4];
            conn.read_exact(&mut ip)?;
            Ipv4Addr::from(ip).to_string()
        }
        3 => {
            let mut name = vec![0u8; usize::from(byte(conn)?)];
            conn.read_exact(&mut name)?;
            String::from_utf8_lossy(&name).into_owned()
        }
        _ => {
            let mut ip = [0u8; 16];
            conn.read_exact(&mut ip)?;
            format!("[{}]", Ipv6Addr::from(ip))
        }
    };
    let mut port = [0u8; 2];
    conn.read_exact(&mut port)?;
    let target = format!("{host}:{}", u16::from_be_bytes(port));
    Ok((format!("5 {target}"), target))
}

fn byte(conn: &mut TcpStream) -> std::io::Result<u8> {
    let mut one = [0u8; 1];
    conn.read_exact(&mut one)?;
    Ok(one[0])
}

fn text_until_nul(conn: &mut TcpStream) -> std::io::Result<String> {
    let mut out = Vec::new();
    loop {
        match byte(conn)? {
            0 => return Ok(String::from_utf8_lossy(&out).into_owned()),
            b => out.push(b),
        }
    }
}

/// Copies both ways until either side closes.
fn relay(client: TcpStream, upstream: TcpStream) -> std::io::Result<()> {
    let (mut client_in, mut upstream_out) = (client.try_clone()?, upstream.try_clone()?);
    let up = std::thread::spawn(move || {
        let _ = std::io::copy(&mut client_in, &mut upstream_out);
        let _ = upstream_out.shutdown(std::net::Shutdown::Write);
    });
    let (mut upstream_in, mut client_out) = (upstream, client);
    let _ = std::io::copy(&mut upstream_in, &mut client_out);
    let _ = client_out.shutdown(std::net::Shutdown::Both);
    let _ = up.join();
    Ok(())
}

/// A nameserver on `ip`:53 that answers every query with NXDOMAIN (RFC 1035 §4.1.1:
/// the query's header and question, QR set, RCODE 3). Stops when dropped.
pub struct NxDomain {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
    pub queries: Arc<Mutex<usize>>,
}

impl NxDomain {
    /// `None` when port 53 cannot be bound (not root).
    pub fn start(ip: Ipv4Addr) -> Option<NxDomain> {
        let socket = Arc::new(UdpSocket::bind((ip, 53)).ok()?);
        socket
            .set_read_timeout(Some(Duration::from_millis(100)))
            .ok()?;
        let stop = Arc::new(AtomicBool::new(false));
        let queries = Arc::new(Mutex::new(0));
        let thread = {
            let (socket, stop, queries) =
                (Arc::clone(&socket), Arc::clone(&stop), Arc::clone(&queries));
            std::thread::spawn(move || {
                let mut buf = [0u8; 512];
                while !stop.load(Ordering::SeqCst) {
                    let Ok((n, from)) = socket.recv_from(&mut buf) else {
                        continue;
                    };
                    if n < 12 {
                        continue;
                    }
                    *queries.lock().unwrap() += 1;
                    let mut answer = buf[..question_end(&buf[..n])].to_vec();
                    answer[2] = 0x80 | (buf[2] & 0x01); // QR, with the query's RD
                    answer[3] = 0x80 | 3; // RA, NXDOMAIN
                    answer[4..12].copy_from_slice(&[0, 1, 0, 0, 0, 0, 0, 0]); // the question alone
                    let _ = socket.send_to(&answer, from);
                }
            })
        };
        Some(NxDomain {
            stop,
            thread: Some(thread),
            queries,
        })
    }
}

/// Where the first question ends: its name's labels, the root's 0, type and class.
/// An OPT record after it (EDNS) is not echoed back.
fn question_end(query: &[u8]) -> usize {
    let mut at = 12;
    while at < query.len() && query[at] != 0 {
        at += 1 + usize::from(query[at]);
    }
    (at + 5).min(query.len())
}

impl Drop for NxDomain {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}
