//! `loadlab capacity --vary`: what the search varies from probe to probe. The open loop's
//! rate by default; `ws-held` holds WebSocket connections idle beside a fixed echo load
//! (`--echo-rate`) and searches for the most the server holds within the objectives ("how
//! many held connections before the echo p99 breaks").

use clap::{Args, ValueEnum};
use loadlab_capacity::Variable;

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum VaryArg {
    /// The open loop's rate: requests/s, or with a ws:// URL echoes/s.
    Rate,
    /// WebSocket connections held idle beside an echo load at --echo-rate; --start,
    /// --min-rate and --max-rate are then counts of connections.
    WsHeld,
}

#[derive(Debug, Args)]
pub struct VaryArgs {
    /// What the search varies [default: rate].
    #[arg(long, value_enum, help_heading = "What varies")]
    pub vary: Option<VaryArg>,

    /// --vary ws-held: each probe's echo load, messages/s (its p99 is what breaks).
    #[arg(long, value_name = "RATE", allow_hyphen_values = true, value_parser = crate::cmd::run::rate, help_heading = "What varies")]
    pub echo_rate: Option<f64>,
}

impl VaryArgs {
    /// The search's variable; `ws_held`: whether --ws-held was given too.
    pub fn variable(&self, ws_held: bool) -> anyhow::Result<Variable> {
        match (self.vary.unwrap_or(VaryArg::Rate), self.echo_rate) {
            (VaryArg::Rate, None) => Ok(Variable::Rate),
            (VaryArg::Rate, Some(_)) => anyhow::bail!(
                "--echo-rate: the echo load beside held connections; add --vary ws-held, or \
                 drop --echo-rate (the rate is what a plain search varies)"
            ),
            (VaryArg::WsHeld, None) => anyhow::bail!(
                "--vary ws-held: give the echo load each probe measures, e.g. --echo-rate 200"
            ),
            (VaryArg::WsHeld, Some(_)) if ws_held => anyhow::bail!(
                "--ws-held: the count is what --vary ws-held searches; drop --ws-held (bound \
                 it with --start, --min-rate and --max-rate)"
            ),
            (VaryArg::WsHeld, Some(echo_rate)) => Ok(Variable::WsHeld { echo_rate }),
        }
    }
}
