//! Names resolve as the system resolves them under `hosts: files dns`: checked in a
//! private mount namespace (the test's /etc/hosts and /etc/resolv.conf, `hosts: files
//! dns`, an empty /etc/gai.conf) against `getent ahosts`, with the test's own
//! nameserver on 127.53.x.y port 53 counting the questions that reach it. Which address
//! retry chose is the one it connected to: an HTTP server listens on every address the
//! case can give, each answering with its own address.

use std::net::{IpAddr, SocketAddr, TcpListener};
use std::process::Child;
use std::time::{Duration, Instant};

use nix::sys::signal::Signal;

use crate::both_ways;
use crate::support::dns::{Behaviour, Entry, Nameserver};
use crate::support::http_server::{Reply, Server};
use crate::support::private_etc::PrivateEtc;
use crate::support::{self, postgres, wait_until};

/// One HTTP server per address, all on one port; each replies with its address.
struct Listeners {
    port: u16,
    servers: Vec<(IpAddr, Server)>,
}

impl Listeners {
    fn on(addrs: &[IpAddr]) -> Listeners {
        let serve = |ip: IpAddr, port: u16| {
            Server::script_at(SocketAddr::new(ip, port), vec![Reply::ok(&ip.to_string())])
        };
        for _ in 0..50 {
            let first = serve(addrs[0], 0).expect("a free port on the first address");
            let port = first.port();
            let rest: Result<Vec<_>, _> = addrs[1..]
                .iter()
                .map(|&ip| serve(ip, port).map(|s| (ip, s)))
                .collect();
            if let Ok(rest) = rest {
                let mut servers = vec![(addrs[0], first)];
                servers.extend(rest);
                return Listeners { port, servers };
            }
        }
        panic!("no port is free on every one of {addrs:?}");
    }

    /// The addresses whose server got a request.
    fn hit(&self) -> Vec<IpAddr> {
        self.servers
            .iter()
            .filter(|(_, s)| s.hits() > 0)
            .map(|(ip, _)| *ip)
            .collect()
    }
}

/// `nameserver` lines for `servers`, then `options` (search, options lines).
fn resolv_conf(servers: &[Nameserver], options: &str) -> String {
    let mut text: String = servers
        .iter()
        .map(|ns| format!("nameserver {}\n", ns.ip()))
        .collect();
    text.push_str(options);
    text
}

/// A private /etc with `hosts` whose resolv.conf names `ns` alone.
fn with_nameserver(test: &str, hosts: &str, ns: Nameserver) -> Option<(Nameserver, PrivateEtc)> {
    let etc = PrivateEtc::new(test, hosts, &resolv_conf(std::slice::from_ref(&ns), ""))?;
    Some((ns, etc))
}

/// One configuration of the comparison with `getent ahosts`.
struct Case {
    what: &'static str,
    hosts: &'static str,
    /// resolv.conf lines after the `nameserver` lines.
    options: &'static str,
    /// One nameserver per entry, in resolv.conf's order; the answering ones share `records`.
    servers: &'static [Behaviour],
    records: &'static [Entry<'static>],
    /// The name as the URL gives it.
    name: &'static str,
    /// Whether /etc/hosts lists the name as asked: then no question may reach a nameserver.
    listed: bool,
}

/// retry's family flag, and which of getent's addresses it keeps.
type FamilyFlag = (Option<&'static str>, fn(&IpAddr) -> bool);
const FAMILIES: [FamilyFlag; 3] = [
    (None, |_| true),
    (Some("-4"), IpAddr::is_ipv4),
    (Some("-6"), IpAddr::is_ipv6),
];

const ANSWER: &[Behaviour] = &[Behaviour::Answer];
/// A nameserver that never answers, given up on after a second.
const QUICK_GIVE_UP: &str = "options timeout:1 attempts:1\n";

impl Case {
    /// Every address the case can give: where the listeners go.
    fn addresses(&self) -> Vec<IpAddr> {
        let from_hosts = self
            .hosts
            .lines()
            .filter_map(|l| l.split_whitespace().next());
        let from_dns = self.records.iter().map(|(_, value)| *value);
        // 127.0.0.1 besides: a wrong answer there is seen too.
        let mut addrs: Vec<IpAddr> = vec!["127.0.0.1".parse().unwrap()];
        for ip in from_hosts
            .chain(from_dns)
            .filter_map(|v| v.parse::<IpAddr>().ok())
        {
            assert!(ip.is_loopback(), "{}: {ip} is not loopback", self.what);
            if !addrs.contains(&ip) {
                addrs.push(ip);
            }
        }
        addrs
    }

    /// Runs `getent ahosts` and retry (without a family, with -4, with -6) under the
    /// case's /etc and asserts the same first address, or that both find none.
    fn check(&self, test: &str) {
        let servers: Vec<Nameserver> = self
            .servers
            .iter()
            .map(|&b| Nameserver::start(b, self.records))
            .collect();
        let Some(etc) = PrivateEtc::new(test, self.hosts, &resolv_conf(&servers, self.options))
        else {
            return;
        };
        let expected = etc.getent(self.name);
        eprintln!(
            "{} ({}): getent ahosts gives {expected:?}",
            self.what, self.name
        );
        // Without an answer all three fail alike: once is enough.
        let families = if expected.is_empty() {
            &FAMILIES[..1]
        } else {
            &FAMILIES[..]
        };
        let mut first_of_retry = None;
        for (flag, admits) in families {
            let want = expected.iter().copied().find(admits);
            let listeners = Listeners::on(&self.addresses());
            let url = format!("http://{}:{}/", self.name, listeners.port);
            let run = etc.retry().args(["-a", "1"]).args(*flag).arg(&url).run();
            let case = format!(
                "{} ({}, retry {flag:?}; getent: {expected:?})",
                self.what, self.name
            );
            if flag.is_none() {
                first_of_retry = listeners.hit().first().copied();
            }
            match want {
                Some(ip) => {
                    assert_eq!(run.status, 0, "{case}: {}", run.stderr);
                    assert_eq!(run.stdout_text(), ip.to_string(), "{case}: first address");
                    assert_eq!(listeners.hit(), [ip], "{case}: connected to");
                }
                None => {
                    assert_eq!(run.status, 6, "{case}: cannot resolve: {}", run.stderr);
                    assert!(listeners.hit().is_empty(), "{case}");
                }
            }
        }
        let questions: usize = servers.iter().map(|ns| ns.questions().len()).sum();
        // One row of the differential table (`--nocapture` shows it).
        let shown = |ip: Option<IpAddr>| ip.map_or("none".to_string(), |ip| ip.to_string());
        eprintln!(
            "| {} | {} | {} | {} | {questions} |",
            self.what,
            self.name,
            shown(expected.first().copied()),
            shown(first_of_retry)
        );
        if self.listed {
            for ns in &servers {
                assert_eq!(ns.questions(), [], "{}: a name in /etc/hosts", self.what);
            }
        }
    }
}

const HOSTS_CASES: &[Case] = &[
    Case {
        what: "an /etc/hosts name that DNS gives an AAAA and another A",
        hosts: "127.0.0.2 pinned.test\n",
        options: "",
        servers: ANSWER,
        records: &[("pinned.test", "::1"), ("pinned.test", "127.0.0.3")],
        name: "pinned.test",
        listed: true,
    },
    Case {
        what: "an IPv6-only /etc/hosts name that DNS gives an A",
        hosts: "::1 six.test\n",
        options: "",
        servers: ANSWER,
        records: &[("six.test", "127.0.0.3")],
        name: "six.test",
        listed: true,
    },
    Case {
        what: "an /etc/hosts name on two lines, IPv4 and IPv6",
        hosts: "127.0.0.4 both.test\n::1 both.test\n",
        options: "",
        servers: ANSWER,
        records: &[("both.test", "127.0.0.3")],
        name: "both.test",
        listed: true,
    },
    Case {
        what: "an alias on an /etc/hosts line",
        hosts: "127.0.0.5 canonical.test alias.test\n",
        options: "",
        servers: ANSWER,
        records: &[("alias.test", "127.0.0.3")],
        name: "alias.test",
        listed: true,
    },
    Case {
        what: "an /etc/hosts name in another case",
        hosts: "127.0.0.6 MiXed.Test\n",
        options: "",
        servers: ANSWER,
        records: &[],
        name: "mixed.TEST",
        listed: true,
    },
    Case {
        what: "an /etc/hosts name with a nameserver that never answers",
        hosts: "127.0.0.7 quiet.test\n",
        options: "",
        servers: &[Behaviour::Silent],
        records: &[],
        name: "quiet.test",
        listed: true,
    },
    Case {
        what: "an /etc/hosts name with a nameserver that refuses",
        hosts: "127.0.0.8 refused.test\n",
        options: "",
        servers: &[Behaviour::Refuse],
        records: &[],
        name: "refused.test",
        listed: true,
    },
    Case {
        what: "an /etc/hosts name with two IPv4 addresses (RFC 6724 rule 9)",
        hosts: "127.1.0.9 multi.test\n127.0.0.9 multi.test\n",
        options: "",
        servers: ANSWER,
        records: &[],
        name: "multi.test",
        listed: true,
    },
    Case {
        what: "localhost as /etc/hosts lists it",
        hosts: "127.0.0.20 localhost\n",
        options: "",
        servers: ANSWER,
        records: &[("localhost", "127.0.0.3")],
        name: "localhost",
        listed: true,
    },
];

const DNS_CASES: &[Case] = &[
    Case {
        what: "a final dot: a question to DNS, not an /etc/hosts match",
        hosts: "127.0.0.2 dotted.test\n",
        options: "",
        servers: ANSWER,
        records: &[("dotted.test", "127.0.0.10")],
        name: "dotted.test.",
        listed: false,
    },
    Case {
        what: "an IPv4-only DNS name",
        hosts: "127.0.0.2 other.test\n",
        options: "",
        servers: ANSWER,
        records: &[("dns4.test", "127.0.0.11")],
        name: "dns4.test",
        listed: false,
    },
    Case {
        what: "an IPv6-only DNS name",
        hosts: "",
        options: "",
        servers: ANSWER,
        records: &[("dns6.test", "::1")],
        name: "dns6.test",
        listed: false,
    },
    Case {
        what: "a DNS name with both families",
        hosts: "",
        options: "",
        servers: ANSWER,
        records: &[("dns46.test", "127.0.0.12"), ("dns46.test", "::1")],
        name: "dns46.test",
        listed: false,
    },
    Case {
        what: "a CNAME",
        hosts: "",
        options: "",
        servers: ANSWER,
        records: &[
            ("www.cname.test", "cname:real.cname.test"),
            ("real.cname.test", "127.0.0.13"),
        ],
        name: "www.cname.test",
        listed: false,
    },
    Case {
        what: "a short name completed by the search list",
        hosts: "",
        options: "search corp.test\n",
        servers: ANSWER,
        records: &[("short.corp.test", "127.0.0.14")],
        name: "short",
        listed: false,
    },
    Case {
        what: "ndots:2: a name with one dot tries the search list first",
        hosts: "",
        options: "search corp.test\noptions ndots:2\n",
        servers: ANSWER,
        records: &[("a.b.corp.test", "127.0.0.15"), ("a.b", "127.0.0.16")],
        name: "a.b",
        listed: false,
    },
    Case {
        what: "ndots:1: a name with one dot is asked as it is first",
        hosts: "",
        options: "search corp.test\n",
        servers: ANSWER,
        records: &[("a.b.corp.test", "127.0.0.15"), ("a.b", "127.0.0.16")],
        name: "a.b",
        listed: false,
    },
    Case {
        what: "the second search domain after NXDOMAIN for the first",
        hosts: "",
        options: "search one.test two.test\n",
        servers: ANSWER,
        records: &[("host.two.test", "127.0.0.17")],
        name: "host",
        listed: false,
    },
    Case {
        what: "rotate over a nameserver that never answers and one that does",
        hosts: "",
        options: "options rotate timeout:1 attempts:2\n",
        servers: &[Behaviour::Silent, Behaviour::Answer],
        records: &[("rotated.test", "127.0.0.18")],
        name: "rotated.test",
        listed: false,
    },
    Case {
        what: "use-vc: questions over TCP",
        hosts: "",
        options: "options use-vc\n",
        servers: ANSWER,
        records: &[("tcp.test", "127.0.0.19"), ("tcp.test", "::1")],
        name: "tcp.test",
        listed: false,
    },
];

const FAILING_CASES: &[Case] = &[
    Case {
        what: "a name no one knows",
        hosts: "127.0.0.2 other.test\n",
        options: "",
        servers: ANSWER,
        records: &[("known.test", "127.0.0.3")],
        name: "unknown.test",
        listed: false,
    },
    Case {
        what: "a nameserver that refuses",
        hosts: "",
        options: "",
        servers: &[Behaviour::Refuse],
        records: &[],
        name: "refused.test",
        listed: false,
    },
    Case {
        what: "a nameserver that never answers",
        hosts: "127.0.0.2 other.test\n",
        options: QUICK_GIVE_UP,
        servers: &[Behaviour::Silent],
        records: &[],
        name: "silent.test",
        listed: false,
    },
];

#[test]
fn names_in_etc_hosts_resolve_as_getent_ahosts_resolves_them() {
    for case in HOSTS_CASES {
        case.check("names_in_etc_hosts_resolve_as_getent_ahosts_resolves_them");
    }
}

#[test]
fn dns_names_resolve_as_getent_ahosts_resolves_them() {
    for case in DNS_CASES {
        case.check("dns_names_resolve_as_getent_ahosts_resolves_them");
    }
}

#[test]
fn names_that_do_not_resolve_fail_as_getent_ahosts_fails() {
    for case in FAILING_CASES {
        case.check("names_that_do_not_resolve_fail_as_getent_ahosts_fails");
    }
}

/// The defect this module exists for: /etc/hosts lists the name, DNS has an AAAA (and
/// another A) for it; the hosts address is the one connected to, whatever the family
/// flags, and the nameserver hears nothing.
#[test]
fn a_name_in_etc_hosts_wins_over_its_dns_records() {
    let test = "a_name_in_etc_hosts_wins_over_its_dns_records";
    let Some((ns, etc)) = with_nameserver(
        test,
        "127.0.0.2 pinned.test\n",
        Nameserver::answering(&[("pinned.test", "::1"), ("pinned.test", "127.0.0.3")]),
    ) else {
        return;
    };
    let hosts: IpAddr = "127.0.0.2".parse().unwrap();
    let dns: [IpAddr; 2] = ["::1".parse().unwrap(), "127.0.0.3".parse().unwrap()];
    for _ in 0..3 {
        let listeners = Listeners::on(&[hosts, dns[0], dns[1]]);
        let url = format!("http://pinned.test:{}/", listeners.port);
        let run = etc.retry().args(["-a", "1", &url]).run();
        assert_eq!(run.status, 0, "{}", run.stderr);
        assert_eq!(listeners.hit(), [hosts]);
    }
    let listeners = Listeners::on(&[hosts, dns[0], dns[1]]);
    let url = format!("http://pinned.test:{}/", listeners.port);
    let run = etc.retry().args(["-a", "1", "-6", &url]).run();
    assert_eq!(
        run.status, 6,
        "-6 keeps the IPv6 part of the hosts answer: none"
    );
    run.assert_stderr_has("pinned.test");
    assert!(listeners.hit().is_empty());
    assert_eq!(ns.questions(), [], "no question about a name in /etc/hosts");
}

/// A nameserver that never answers costs a name in /etc/hosts nothing (glibc's default
/// timeouts: 5 s, twice), with or without an attempt timeout.
#[test]
fn a_name_in_etc_hosts_needs_no_answer_from_the_nameserver() {
    let test = "a_name_in_etc_hosts_needs_no_answer_from_the_nameserver";
    let Some((ns, etc)) = with_nameserver(test, "127.0.0.7 quiet.test\n", Nameserver::silent())
    else {
        return;
    };
    let hosts: IpAddr = "127.0.0.7".parse().unwrap();
    for timeout in [&[][..], &["-t", "5s"][..]] {
        let listeners = Listeners::on(&[hosts]);
        let url = format!("http://quiet.test:{}/", listeners.port);
        let run = etc.retry().args(["-a", "1"]).args(timeout).arg(&url).run();
        assert_eq!(run.status, 0, "{timeout:?}: {}", run.stderr);
        assert_eq!(listeners.hit(), [hosts]);
        assert!(
            run.elapsed < Duration::from_secs(1),
            "{timeout:?}: took {:?}",
            run.elapsed
        );
    }
    assert_eq!(ns.questions(), []);
}

/// Waits up to `limit` for `child` to exit; its status (128+N for signal N) and when.
fn exit_of(child: &mut Child, limit: Duration) -> Option<(i32, Instant)> {
    support::exited_within(child, limit).map(|status| (status, Instant::now()))
}

/// A lookup that the nameserver never answers (glibc would wait 5 s, twice) ends within
/// a second of SIGTERM, and retry exits as SIGTERM's (143).
#[test]
fn sigterm_ends_a_lookup_that_the_nameserver_never_answers() {
    let test = "sigterm_ends_a_lookup_that_the_nameserver_never_answers";
    let Some((ns, etc)) = with_nameserver(test, "127.0.0.2 other.test\n", Nameserver::silent())
    else {
        return;
    };
    let port = crate::support::ports::free_port();
    let url = format!("http://silent.test:{port}/");
    let mut child = etc.retry().args(["-a", "1", &url]).start();
    assert!(
        wait_until(Duration::from_secs(10), || ns.asked_about("silent.test")
            > 0),
        "retry asked the nameserver"
    );
    std::thread::sleep(Duration::from_millis(200));
    let signalled = Instant::now();
    support::signal(&child, Signal::SIGTERM);
    let (status, at) = exit_of(&mut child, Duration::from_secs(15)).expect("retry exits");
    let took = at - signalled;
    let run = support::wait_for_run(child);
    assert_eq!(status, 143, "{}", run.stderr);
    assert!(
        took < Duration::from_secs(1),
        "exited {took:?} after SIGTERM"
    );
}

/// A PostgreSQL host that no nameserver answers for: the lookup is part of connecting,
/// so `connect_timeout` ends it (exit 125), and SIGTERM ends it with 143 within a second.
#[test]
fn a_postgres_host_lookup_is_bounded_by_connect_timeout_and_signals() {
    let test = "a_postgres_host_lookup_is_bounded_by_connect_timeout_and_signals";
    let Some((ns, etc)) = with_nameserver(test, "127.0.0.2 other.test\n", Nameserver::silent())
    else {
        return;
    };
    let lock = "postgres://u@pgsilent.test:5432/db?connect_timeout=2#x";
    let run = etc.retry().args(["--lock", lock, "--", "true"]).run();
    assert_eq!(run.status, 125, "{}", run.stderr);
    assert!(run.elapsed < Duration::from_secs(3), "{:?}", run.elapsed);
    run.assert_stderr_has("no answer within 2s (connect_timeout)");
    let slow = "postgres://u@pgsilent.test:5432/db?connect_timeout=30#x";
    let mut child = etc.retry().args(["--lock", slow, "--", "true"]).start();
    assert!(
        wait_until(Duration::from_secs(10), || ns.asked_about("pgsilent.test")
            > 1),
        "retry asked the nameserver"
    );
    let signalled = Instant::now();
    support::signal(&child, Signal::SIGTERM);
    let (status, at) = exit_of(&mut child, Duration::from_secs(15)).expect("retry exits");
    let run = support::wait_for_run(child);
    assert_eq!(status, 143, "{}", run.stderr);
    assert!(
        at - signalled < Duration::from_secs(1),
        "{:?}",
        at - signalled
    );
}

/// `-t`, `--connect-timeout` and `--max-time` each end a lookup that gets no answer.
#[test]
fn timeouts_bound_a_lookup_that_the_nameserver_never_answers() {
    let test = "timeouts_bound_a_lookup_that_the_nameserver_never_answers";
    let Some((_silent, etc)) =
        with_nameserver(test, "127.0.0.2 other.test\n", Nameserver::silent())
    else {
        return;
    };
    let port = crate::support::ports::free_port();
    let url = format!("http://silent.test:{port}/");
    let bounds: [(&[&str], Duration); 3] = [
        (&["-a", "1", "-t", "2s"], Duration::from_secs(2)),
        (
            &["-a", "1", "--connect-timeout", "1"],
            Duration::from_secs(1),
        ),
        (
            &["-a", "5", "--delay", "1ms", "--max-time", "2s"],
            Duration::from_secs(2),
        ),
    ];
    for (flags, bound) in bounds {
        let run = etc.retry().args(flags).arg(&url).run();
        assert_eq!(run.status, 28, "{flags:?}: {}", run.stderr);
        assert!(
            run.elapsed >= bound - Duration::from_millis(100)
                && run.elapsed < bound + Duration::from_millis(1500),
            "{flags:?}: took {:?}",
            run.elapsed
        );
    }
}

/// A proxy's name resolves the same way: /etc/hosts alone for a name it lists.
#[test]
fn a_proxy_name_in_etc_hosts_wins_over_its_dns_records() {
    let test = "a_proxy_name_in_etc_hosts_wins_over_its_dns_records";
    let Some((ns, etc)) = with_nameserver(
        test,
        "127.0.0.21 proxy.test\n",
        Nameserver::answering(&[("proxy.test", "::1"), ("proxy.test", "127.0.0.22")]),
    ) else {
        return;
    };
    let hosts: IpAddr = "127.0.0.21".parse().unwrap();
    let listeners = Listeners::on(&[hosts, "::1".parse().unwrap(), "127.0.0.22".parse().unwrap()]);
    let proxy = format!("http://proxy.test:{}", listeners.port);
    let run = etc
        .retry()
        .args(["-a", "1", "-x", &proxy, "http://target.test/through"])
        .run();
    assert_eq!(run.status, 0, "{}", run.stderr);
    assert_eq!(listeners.hit(), [hosts]);
    let asked = &listeners.servers[0].1.requests()[0];
    assert_eq!(
        asked.target, "http://target.test/through",
        "the proxy got the request"
    );
    assert_eq!(
        ns.questions(),
        [],
        "neither the proxy's name nor the target's"
    );
}

both_ways! {
    /// A PostgreSQL host that /etc/hosts lists is reached at its hosts address: the
    /// addresses DNS has for it (listeners that would take the connection) see nothing.
    fn a_postgres_host_in_etc_hosts_is_reached_at_its_hosts_address(pg) {
        let test = "a_postgres_host_in_etc_hosts_is_reached_at_its_hosts_address";
        let Some((ns, etc)) = with_nameserver(
            test,
            "127.0.0.1 pgpin.test\n",
            Nameserver::answering(&[("pgpin.test", "::1"), ("pgpin.test", "127.0.0.3")]),
        ) else {
            return;
        };
        // Bound but never accepted: a connection there would wait in the backlog.
        let traps: Vec<TcpListener> = ["[::1]", "127.0.0.3"]
            .iter()
            .map(|ip| TcpListener::bind(format!("{ip}:{}", pg.port())).expect("a trap on the port"))
            .collect();
        let lock = format!(
            "postgres://{}@pgpin.test:{}/postgres?connect_timeout=5#names",
            postgres::USER,
            pg.port()
        );
        let run = etc
            .retry()
            .args(["-a", "1", "--lock", &lock, "--", "sh", "-c", "echo ran"])
            .run();
        assert_eq!(run.status, 0, "{}", run.stderr);
        assert_eq!(run.stdout_text(), "ran\n");
        for trap in &traps {
            trap.set_nonblocking(true).unwrap();
            assert!(
                trap.accept().is_err(),
                "a connection to {:?}",
                trap.local_addr()
            );
        }
        assert_eq!(ns.questions(), [], "no question about a name in /etc/hosts");
    }
}

/// The NSS modules an nsswitch.conf may name besides `files` and `dns`.
const MODULES: &str = "hosts: systemd myhostname mdns4_minimal [NOTFOUND=return] files dns\n";

/// Whether libnss_systemd.so.2 is in a multiarch library directory (`.ci/run` installs it).
fn systemd_module_installed() -> bool {
    std::fs::read_dir("/usr/lib")
        .into_iter()
        .flatten()
        .flatten()
        .any(|dir| dir.path().join("libnss_systemd.so.2").exists())
}

/// Whether the process `pid` has an NSS module (`libnss_*.so`) mapped.
fn maps_an_nss_module(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/maps"))
        .expect("read the process's maps")
        .contains("/libnss_")
}

/// Resolution never loads an NSS module, whatever /etc/nsswitch.conf names (a statically
/// linked glibc crashes loading one): while retry waits on the nameserver, its memory
/// maps no `libnss_*.so`, where `getent`, which follows nsswitch.conf, has loaded the
/// `systemd` module by then. A name in /etc/hosts still resolves from there.
#[test]
fn no_nss_module_is_loaded_whatever_nsswitch_conf_names() {
    let test = "no_nss_module_is_loaded_whatever_nsswitch_conf_names";
    let Some((ns, etc)) = with_nameserver(test, "127.0.0.2 listed.test\n", Nameserver::silent())
    else {
        return;
    };
    let etc = etc.nsswitch(MODULES);
    let observe = |mut inv: support::Invocation, asked_before: usize| {
        let mut child = inv.start();
        assert!(
            wait_until(Duration::from_secs(10), || ns.asked_about("silent.test")
                > asked_before),
            "the nameserver was asked"
        );
        let loaded = maps_an_nss_module(child.id());
        support::signal(&child, Signal::SIGTERM);
        let _ = child.wait();
        loaded
    };
    let mut getent = etc.invocation("getent");
    getent.args(["ahosts", "silent.test"]);
    if systemd_module_installed() {
        assert!(
            observe(getent, 0),
            "getent loads the systemd module (the check sees modules)"
        );
    }
    let asked = ns.asked_about("silent.test");
    let mut retry = etc.retry();
    retry.args(["-a", "1", "http://silent.test:9/"]);
    assert!(!observe(retry, asked), "retry loaded an NSS module");
    let listeners = Listeners::on(&["127.0.0.2".parse().unwrap()]);
    let url = format!("http://listed.test:{}/", listeners.port);
    let run = etc.retry().args(["-a", "1", &url]).run();
    assert_eq!(run.status, 0, "{}", run.stderr);
}
