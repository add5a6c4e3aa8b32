//! What a capacity search varies from probe to probe, set on each probe's load: the open
//! loop's rate (requests/s, or a WebSocket run's messages/s), or the WebSocket connections
//! held idle beside a fixed echo load (`--vary ws-held`: "how many held connections before
//! the echo p99 breaks").

use crate::search::Unit;
use loadlab_engine::RunSpec;

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Variable {
    /// The rate searched is the load's.
    Rate,
    /// The count searched is `--ws-held`'s; every probe echoes at `echo_rate` messages/s.
    WsHeld { echo_rate: f64 },
}

impl Variable {
    /// What the policy's numbers count.
    pub fn unit(self) -> Unit {
        match self {
            Variable::Rate => Unit::Rate,
            Variable::WsHeld { .. } => Unit::Held,
        }
    }

    /// Sets `load` (from the policy) on a probe's run.
    pub fn apply(self, run: &mut RunSpec, load: f64) {
        run.connections = None;
        match self {
            Variable::Rate => run.rate = Some(load),
            Variable::WsHeld { echo_rate } => {
                run.rate = Some(echo_rate);
                run.ws.held = Some(load as usize);
            }
        }
    }

    /// The held connections a probe at `load` asks for, when they are what varies.
    pub fn held(self, load: f64) -> Option<usize> {
        matches!(self, Variable::WsHeld { .. }).then_some(load as usize)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_held_probe_echoes_at_the_fixed_rate_beside_its_count() {
        let mut run = RunSpec {
            connections: Some(7),
            ..RunSpec::default()
        };
        let v = Variable::WsHeld { echo_rate: 200.0 };
        v.apply(&mut run, 120.0);
        assert_eq!(
            (run.rate, run.ws.held, run.connections),
            (Some(200.0), Some(120), None)
        );
        assert_eq!(v.held(120.0), Some(120));
        Variable::Rate.apply(&mut run, 900.0);
        assert_eq!(run.rate, Some(900.0));
        assert_eq!(Variable::Rate.held(900.0), None);
    }
}
