//! The options under "Fleets (state shared through --state)": the retry budget, the
//! circuit breaker, what either does to a run it stops, and the splay; both modes.

use std::time::Duration;

use super::parsed;
use crate::cli::values::fleet_name_value;
use crate::domain::Throttled;
use crate::parse;

// Each default, named once: the field's `default_value` and `Default` below read it.
const BUDGET_SIZE: u32 = 10;
const BUDGET_RATIO: f64 = 0.1;
const CIRCUIT_FAILURES: u32 = 5;
const CIRCUIT_COOLDOWN: &str = "60s";
const CIRCUIT_EXIT: u8 = 75;
const SPLAY: &str = "0";

#[derive(clap::Args, Debug, Clone)]
#[group(skip)]
#[command(next_help_heading = super::FLEET)]
pub struct FleetArgs {
    /// Share a retry budget called NAME: retries stop while half its tokens are spent
    ///
    /// gRPC's retry throttling, shared through --state by every retry naming NAME: a failed
    /// attempt takes one token, a successful one earns --budget-ratio, and a retry is made
    /// only while more than half of --budget-size remains. A first attempt is never held back.
    #[arg(long, value_name = "NAME", value_parser = fleet_name_value)]
    pub retry_budget: Option<String>,

    /// Tokens the retry budget holds (it starts full)
    #[arg(allow_hyphen_values = true, long, value_name = "N", default_value_t = BUDGET_SIZE, value_parser = parse::budget_size)]
    pub budget_size: u32,

    /// Tokens a successful attempt earns, 0 < R <= 1
    #[arg(allow_hyphen_values = true, long, value_name = "R", default_value_t = BUDGET_RATIO, value_parser = parse::budget_ratio)]
    pub budget_ratio: f64,

    /// Share a circuit breaker called NAME: after failed runs in a row, runs are refused
    ///
    /// Each run that gives up counts one failure, a success resets the count. At
    /// --circuit-failures the circuit opens for --circuit-cooldown: runs exit --circuit-exit
    /// without an attempt. After the cooldown one run claims the probe; its success closes it.
    #[arg(long, value_name = "NAME", value_parser = fleet_name_value)]
    pub circuit: Option<String>,

    /// Failed runs in a row that open the circuit
    #[arg(allow_hyphen_values = true, long, value_name = "N", default_value_t = CIRCUIT_FAILURES, value_parser = parse::attempts)]
    pub circuit_failures: u32,

    /// How long the circuit stays open
    #[arg(allow_hyphen_values = true, long, value_name = "DUR", default_value = CIRCUIT_COOLDOWN, value_parser = parse::positive_duration)]
    pub circuit_cooldown: Duration,

    /// Exit status of a run refused by an open circuit
    #[arg(allow_hyphen_values = true, long, value_name = "CODE", default_value_t = CIRCUIT_EXIT, value_parser = clap::value_parser!(u8))]
    pub circuit_exit: u8,

    /// What a spent retry budget or an open circuit does to the run: hold it, or end it
    ///
    /// exit (the default) ends the run: a refused retry with the last attempt's status, an
    /// open circuit with --circuit-exit. wait holds it, sending nothing and not spending -a:
    /// a refused retry asks again after a fresh jittered draw of the backoff (each hold
    /// drawn as the next retry's delay would be, up to --max-delay), and while the budget
    /// is spent one held run per --delay fleet-wide is let through as a probe; a run held
    /// by an open circuit asks again when the circuit's cooldown ends. wait needs
    /// --max-time, which bounds the holds; a run it ends while held exits as exit would
    /// have.
    #[arg(long, value_name = "HOW", value_enum)]
    pub throttled: Option<Throttled>,

    /// Sleep a random time up to DUR before the first attempt (repeatable with --seed)
    #[arg(allow_hyphen_values = true, long, value_name = "DUR", default_value = SPLAY, value_parser = parse::duration)]
    pub splay: Duration,
}

impl Default for FleetArgs {
    fn default() -> Self {
        FleetArgs {
            retry_budget: None,
            budget_size: BUDGET_SIZE,
            budget_ratio: BUDGET_RATIO,
            circuit: None,
            circuit_failures: CIRCUIT_FAILURES,
            circuit_cooldown: parsed(parse::positive_duration, CIRCUIT_COOLDOWN),
            circuit_exit: CIRCUIT_EXIT,
            throttled: None,
            splay: parsed(parse::duration, SPLAY),
        }
    }
}
