//! The WebSocket flags (`--ws-*`), shared by every command that drives load through
//! `RequestArgs`. A `ws://` or `wss://` URL makes a run a WebSocket one; these say what its
//! connections do. The message is `--body`/`--body-file` (or `--ws-size` bytes); the engine
//! checks the combinations (see docs/websocket.md).

use clap::{Args, ValueEnum};
use loadlab_engine::ws::{WsMode, WsSpec};
use std::time::Duration;

use super::parse::{count, parse_duration, rate};

/// A rate as `--rate` takes it, or written per second: `500/s`; said in connections.
fn per_second(raw: &str) -> Result<f64, String> {
    rate(raw.trim().strip_suffix("/s").unwrap_or(raw)).map_err(|_| {
        format!("`{raw}` is not a rate: give connections per second above 0, e.g. 500 or 500/s")
    })
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum WsModeArg {
    /// Each connection sends a message and times its echo (-c connections, or --rate
    /// messages per second).
    Echo,
    /// -c connections opened and held idle for -d, pinged every --ws-ping; the memory each
    /// takes is reported.
    Hold,
    /// Connection storms: each exchange is a handshake (--rate connections per second, or -c
    /// connections opening again and again), then a clean close.
    Connect,
}

#[derive(Debug, Args)]
pub struct WsArgs {
    /// With a ws:// or wss:// URL: what each WebSocket connection does [default: echo].
    #[arg(long, value_enum, help_heading = "WebSocket")]
    pub ws_mode: Option<WsModeArg>,

    /// Send binary messages (text by default, which must be UTF-8).
    #[arg(long, help_heading = "WebSocket")]
    pub ws_binary: bool,

    /// The message's size in bytes when no --body or --body-file gives it [default: 16].
    #[arg(long, value_name = "BYTES", allow_hyphen_values = true, value_parser = count::<usize>, help_heading = "WebSocket")]
    pub ws_size: Option<usize>,

    /// --ws-mode hold: how often each connection pings; each pong is an exchange timed from
    /// its ping [default: 10s].
    #[arg(long, value_name = "DUR", allow_hyphen_values = true, value_parser = parse_duration, help_heading = "WebSocket")]
    pub ws_ping: Option<Duration>,

    /// --ws-mode echo: also open N connections and hold them idle beside the echo load (not
    /// pinged, not timed; one refused or broken fails as an exchange), so the echoes' times
    /// say what N held connections cost the server. `loadlab capacity --vary ws-held`
    /// searches for the most.
    #[arg(long, value_name = "N", allow_hyphen_values = true, value_parser = count::<usize>, help_heading = "WebSocket")]
    pub ws_held: Option<usize>,

    /// Held connections (--ws-mode hold's -c, or --ws-held's) open at this many a second,
    /// e.g. 500 or 500/s, still at most 64 handshakes at a time; each handshake is timed from
    /// when its connection was due, and the notes say the rate achieved. Over a fleet, each
    /// generator opens its share [default: as fast as 64 in flight allow].
    #[arg(long, value_name = "RATE", allow_hyphen_values = true, value_parser = per_second, help_heading = "WebSocket")]
    pub ws_connect_rate: Option<f64>,

    /// Do not offer permessage-deflate (RFC 7692). Offered by default, as browsers do: a
    /// server that takes it inflates each message loadlab sends and deflates each it
    /// answers, which is its cost under real clients.
    #[arg(long, help_heading = "WebSocket")]
    pub ws_no_deflate: bool,
}

impl WsArgs {
    pub fn spec(&self) -> WsSpec {
        WsSpec {
            mode: match self.ws_mode {
                None | Some(WsModeArg::Echo) => WsMode::Echo,
                Some(WsModeArg::Hold) => WsMode::Hold,
                Some(WsModeArg::Connect) => WsMode::Connect,
            },
            binary: self.ws_binary,
            size: self.ws_size,
            ping: self.ws_ping,
            held: self.ws_held,
            connect_rate: self.ws_connect_rate,
            no_deflate: self.ws_no_deflate,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::per_second;

    #[test]
    fn a_connect_rate_is_a_rate_written_per_second_or_not() {
        assert_eq!(per_second("500/s"), Ok(500.0));
        assert_eq!(per_second(" 2.5 "), Ok(2.5));
        for bad in ["fast", "-5/s", "500/m"] {
            let err = per_second(bad).unwrap_err();
            assert!(
                err.contains(&format!("`{bad}` is not a rate"))
                    && err.contains("e.g. 500 or 500/s"),
                "{err}"
            );
        }
    }
}
