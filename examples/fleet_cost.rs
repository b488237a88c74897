//! What one budget or circuit update costs with file state: ROUNDS updates of each
//! kind against a state directory, timed one by one; prints mean and p99 in µs.
//!
//!     cargo run --release --example fleet_cost -- DIR [ROUNDS]

use std::time::{Duration, Instant};

use retry::config::fleet::{BudgetConfig, CircuitConfig};
use retry::fleet::FleetStore;
use retry::fleet::file::FileFleet;

fn main() {
    let mut args = std::env::args().skip(1);
    let dir = args.next().expect("DIR");
    let rounds: usize = args.next().map_or(2000, |r| r.parse().unwrap());
    let mut store = FileFleet::open(dir.into()).unwrap();
    let budget = BudgetConfig {
        name: "cost".into(),
        size: 1_000_000,
        ratio: 0.1,
    };
    let circuit = CircuitConfig {
        name: "cost".into(),
        failures: u32::MAX,
        cooldown: Duration::from_secs(60),
        exit: 75,
    };
    let spend = time(rounds, |i| {
        store.spend(&budget, i % 2 == 0).unwrap();
    });
    let record = time(rounds, |i| {
        store.record_run(&circuit, i % 2 == 0).unwrap();
    });
    let admit = time(rounds, |_| {
        store.admit(&circuit).unwrap();
    });
    for (what, samples) in [
        ("budget update (spend/earn)", spend),
        ("circuit update (record a run)", record),
        ("circuit admission (closed: read only)", admit),
    ] {
        println!("{what}\t{}\t{}", mean_us(&samples), p99_us(&samples));
    }
}

fn time(rounds: usize, mut op: impl FnMut(usize)) -> Vec<Duration> {
    (0..rounds)
        .map(|i| {
            let start = Instant::now();
            op(i);
            start.elapsed()
        })
        .collect()
}

fn mean_us(samples: &[Duration]) -> String {
    let total: Duration = samples.iter().sum();
    format!("{:.0}", total.as_secs_f64() * 1e6 / samples.len() as f64)
}

fn p99_us(samples: &[Duration]) -> String {
    let mut sorted = samples.to_vec();
    sorted.sort();
    format!("{:.0}", sorted[sorted.len() * 99 / 100].as_secs_f64() * 1e6)
}
