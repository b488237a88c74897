//! The tests' own nameserver: UDP and TCP on port 53 of an address of its own under
//! 127.53.0.0/16 (a resolv.conf `nameserver` line has no port), built on hickory-proto.
//! It answers from a table of A, AAAA and CNAME records (NXDOMAIN for a name it does
//! not know, an empty answer for a type the name lacks), or refuses every question, or
//! never answers; either way it records every question it gets, so a test can tell
//! which names reached it. Dropping it stops it.

use std::io::{Read, Write};
use std::net::{IpAddr, Ipv4Addr, TcpListener, TcpStream, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use hickory_proto::op::{Message, MessageType, OpCode, ResponseCode};
use hickory_proto::rr::rdata::{A, AAAA, CNAME};
use hickory_proto::rr::{Name, RData, Record, RecordType};

/// What the nameserver does with a question.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Behaviour {
    /// Answers from its records.
    Answer,
    /// Answers REFUSED.
    Refuse,
    /// Never answers.
    Silent,
}

/// One record: `(name, value)`, where the value is an IPv4 address (A), an IPv6
/// address (AAAA) or `cname:TARGET`.
pub type Entry<'a> = (&'a str, &'a str);

/// A question as it arrived: the name in lower case without the final dot, and its type.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Question {
    pub name: String,
    pub kind: RecordType,
}

pub struct Nameserver {
    ip: Ipv4Addr,
    questions: Arc<Mutex<Vec<Question>>>,
    stop: Arc<AtomicBool>,
    threads: Vec<JoinHandle<()>>,
}

impl Nameserver {
    /// A nameserver that answers from `records`.
    pub fn answering(records: &[Entry<'_>]) -> Nameserver {
        Nameserver::start(Behaviour::Answer, records)
    }

    pub fn refusing() -> Nameserver {
        Nameserver::start(Behaviour::Refuse, &[])
    }

    pub fn silent() -> Nameserver {
        Nameserver::start(Behaviour::Silent, &[])
    }

    pub fn start(behaviour: Behaviour, records: &[Entry<'_>]) -> Nameserver {
        let zone = Arc::new(Zone::of(records));
        let (ip, udp, tcp) = bind_port_53();
        let questions = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let serve = Arc::new(Serve {
            behaviour,
            zone,
            questions: Arc::clone(&questions),
        });
        let udp_thread = {
            let (serve, stop) = (Arc::clone(&serve), Arc::clone(&stop));
            std::thread::spawn(move || serve_udp(&udp, &serve, &stop))
        };
        let tcp_thread = {
            let (serve, stop) = (Arc::clone(&serve), Arc::clone(&stop));
            std::thread::spawn(move || serve_tcp(&tcp, &serve, &stop))
        };
        Nameserver {
            ip,
            questions,
            stop,
            threads: vec![udp_thread, tcp_thread],
        }
    }

    pub fn ip(&self) -> Ipv4Addr {
        self.ip
    }

    /// Every question so far, in order.
    pub fn questions(&self) -> Vec<Question> {
        self.questions.lock().unwrap().clone()
    }

    /// Questions about `name` itself or a name it begins (`name.` + a search domain).
    pub fn asked_about(&self, name: &str) -> usize {
        let name = normal(name);
        let under = format!("{name}.");
        self.questions()
            .iter()
            .filter(|q| q.name == name || q.name.starts_with(&under))
            .count()
    }
}

impl Drop for Nameserver {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wakes the accept; the UDP loop wakes on its read timeout.
        let _ = TcpStream::connect((self.ip, 53));
        for thread in self.threads.drain(..) {
            let _ = thread.join();
        }
    }
}

/// Binds UDP and TCP port 53 on a free address under 127.53.0.0/16.
fn bind_port_53() -> (Ipv4Addr, UdpSocket, TcpListener) {
    let seed = std::process::id() ^ std::time::UNIX_EPOCH.elapsed().unwrap().subsec_nanos();
    for n in 0..512u32 {
        let pick = seed.wrapping_add(n.wrapping_mul(7919)) % 65_000;
        let ip = Ipv4Addr::new(127, 53, (pick >> 8) as u8, (pick & 0xff) as u8 | 1);
        let Ok(udp) = UdpSocket::bind((ip, 53)) else {
            continue;
        };
        if let Ok(tcp) = TcpListener::bind((ip, 53)) {
            udp.set_read_timeout(Some(Duration::from_millis(100)))
                .unwrap();
            return (ip, udp, tcp);
        }
    }
    panic!("no free port 53 under 127.53.0.0/16 (the nameserver needs root)");
}

struct Serve {
    behaviour: Behaviour,
    zone: Arc<Zone>,
    questions: Arc<Mutex<Vec<Question>>>,
}

impl Serve {
    /// The reply to one message (recorded first); `None`: no reply.
    fn reply(&self, bytes: &[u8]) -> Option<Vec<u8>> {
        let query = Message::from_vec(bytes).ok()?;
        if query.message_type() != MessageType::Query {
            return None;
        }
        let mut questions = self.questions.lock().unwrap();
        for q in query.queries() {
            questions.push(Question {
                name: normal(&q.name().to_ascii()),
                kind: q.query_type(),
            });
        }
        drop(questions);
        let mut reply = Message::new();
        reply
            .set_id(query.id())
            .set_message_type(MessageType::Response)
            .set_op_code(OpCode::Query)
            .set_recursion_desired(query.recursion_desired())
            .set_recursion_available(true)
            .add_queries(query.queries().to_vec());
        match self.behaviour {
            Behaviour::Silent => return None,
            Behaviour::Refuse => {
                reply.set_response_code(ResponseCode::Refused);
            }
            Behaviour::Answer => {
                let q = query.queries().first()?;
                let (code, answers) = self.zone.answer(q.name(), q.query_type());
                reply.set_authoritative(true).set_response_code(code);
                reply.add_answers(answers);
            }
        }
        reply.to_vec().ok()
    }
}

fn serve_udp(socket: &UdpSocket, serve: &Serve, stop: &AtomicBool) {
    let mut buf = [0u8; 4096];
    while !stop.load(Ordering::SeqCst) {
        let Ok((n, from)) = socket.recv_from(&mut buf) else {
            continue;
        };
        if let Some(reply) = serve.reply(&buf[..n]) {
            let _ = socket.send_to(&reply, from);
        }
    }
}

fn serve_tcp(listener: &TcpListener, serve: &Arc<Serve>, stop: &AtomicBool) {
    for stream in listener.incoming() {
        if stop.load(Ordering::SeqCst) {
            return;
        }
        let Ok(stream) = stream else { continue };
        let serve = Arc::clone(serve);
        std::thread::spawn(move || serve_tcp_connection(stream, &serve));
    }
}

/// Length-prefixed messages (RFC 1035 4.2.2) until the client closes.
fn serve_tcp_connection(mut stream: TcpStream, serve: &Serve) {
    let _ = stream.set_read_timeout(Some(Duration::from_secs(10)));
    loop {
        let mut len = [0u8; 2];
        if stream.read_exact(&mut len).is_err() {
            return;
        }
        let mut msg = vec![0u8; usize::from(u16::from_be_bytes(len))];
        if stream.read_exact(&mut msg).is_err() {
            return;
        }
        if let Some(reply) = serve.reply(&msg) {
            let mut framed = (reply.len() as u16).to_be_bytes().to_vec();
            framed.extend_from_slice(&reply);
            if stream.write_all(&framed).is_err() {
                return;
            }
        }
    }
}

/// A name as the zone keys it: lower case, no final dot.
fn normal(name: &str) -> String {
    name.trim_end_matches('.').to_ascii_lowercase()
}

#[derive(Clone, Debug)]
enum Value {
    Addr(IpAddr),
    Alias(String),
}

struct Zone {
    records: Vec<(String, Value)>,
}

impl Zone {
    fn of(entries: &[Entry<'_>]) -> Zone {
        let records = entries
            .iter()
            .map(|(name, value)| {
                let value = match value.strip_prefix("cname:") {
                    Some(target) => Value::Alias(normal(target)),
                    None => Value::Addr(value.parse().expect("an address or cname:TARGET")),
                };
                (normal(name), value)
            })
            .collect();
        Zone { records }
    }

    /// The records answering (`name`, `kind`), CNAMEs followed; NXDOMAIN for a name
    /// the zone does not know.
    fn answer(&self, name: &Name, kind: RecordType) -> (ResponseCode, Vec<Record>) {
        let mut owner = normal(&name.to_ascii());
        let mut answers = Vec::new();
        for _ in 0..8 {
            let own: Vec<&Value> = self
                .records
                .iter()
                .filter(|(n, _)| *n == owner)
                .map(|(_, v)| v)
                .collect();
            if own.is_empty() {
                let code = if answers.is_empty() {
                    ResponseCode::NXDomain
                } else {
                    ResponseCode::NoError
                };
                return (code, answers);
            }
            let record_name = Name::from_ascii(format!("{owner}.")).unwrap();
            if let Some(Value::Alias(target)) = own.iter().find(|v| matches!(v, Value::Alias(_))) {
                let rdata = RData::CNAME(CNAME(Name::from_ascii(format!("{target}.")).unwrap()));
                answers.push(Record::from_rdata(record_name, 60, rdata));
                owner = target.clone();
                continue;
            }
            answers.extend(
                own.iter()
                    .filter_map(|v| match (v, kind) {
                        (Value::Addr(IpAddr::V4(ip)), RecordType::A) => Some(RData::A(A(*ip))),
                        (Value::Addr(IpAddr::V6(ip)), RecordType::AAAA) => {
                            Some(RData::AAAA(AAAA(*ip)))
                        }
                        _ => None,
                    })
                    .map(|rdata| Record::from_rdata(record_name.clone(), 60, rdata)),
            );
            return (ResponseCode::NoError, answers);
        }
        (ResponseCode::ServFail, Vec::new())
    }
}
