//! `--shard I/N`: a validated whole run cut down to one shard's part. A closed loop's
//! connections (and an `-n` request count) are dealt out, the first shards taking the
//! remainder; a staged closed loop takes its share of every stage's level; an open loop keeps
//! the whole profile, and its threads take the shard's slots of the arrival sequence (see
//! [`crate::schedule`]). The connection cap of an open loop stays per shard: it bounds one
//! machine's sockets.

use super::*;
use crate::shard::{plan_id, ShardPlan};

impl RunSpec {
    /// This shard's connections and stop, from the whole run's; unchanged without a shard.
    pub(super) fn shard_share(
        &self,
        model: &Model,
        connections: usize,
        stop: Stop,
    ) -> Result<(usize, Stop), ConfigError> {
        let Some(shard) = self.shard else {
            if self.start_at.is_some() {
                return Err(reject(
                    "start_at",
                    "starts the shards of one run together; add --shard I/N (1/1 for one)",
                ));
            }
            return Ok((connections, stop));
        };
        if matches!(model, Model::Open { .. }) {
            return Ok((connections, stop));
        }
        // The last shard has the smallest share; when it would have nothing, every shard says
        // so (not only the one left empty), before any of them starts.
        let last = crate::shard::Shard {
            index: shard.count - 1,
            count: shard.count,
        };
        let share = shard.share(connections as u64) as usize;
        if last.share(connections as u64) == 0 {
            return Err(reject(
                "shard",
                format!(
                    "{connections} connection{} cannot be split into {} shards: shard {last} \
                     would have none; give at least {} connections, or fewer shards",
                    if connections == 1 { "" } else { "s" },
                    shard.count,
                    shard.count
                ),
            ));
        }
        let stop = match stop {
            Stop::Requests(n) => {
                let part = shard.share(n);
                if last.share(n) == 0 {
                    return Err(reject(
                        "shard",
                        format!(
                            "-n {n} cannot be split into {} shards: shard {last} would send no \
                             request; ask for at least {} requests",
                            shard.count, shard.count
                        ),
                    ));
                }
                Stop::Requests(part)
            }
            d => d,
        };
        Ok((share, stop))
    }
}

impl RunConfig {
    /// Records the shard's place and the whole run's digest (a config without a shard is
    /// returned as it is).
    pub(super) fn with_shard(
        mut self,
        spec: &RunSpec,
        whole_connections: usize,
        whole_stop: Stop,
    ) -> RunConfig {
        if let Some(shard) = spec.shard {
            let mut plan = ShardPlan {
                shard,
                start_at: spec.start_at,
                whole_connections,
                whole_stop,
                plan_id: String::new(),
            };
            plan.plan_id = plan_id(&self, &plan);
            self.shard = Some(plan);
        }
        self
    }

    /// The whole run this shard is part of: its connections and stop, without the shard (for
    /// describing the whole plan).
    pub fn whole(&self) -> RunConfig {
        let mut whole = self.clone();
        if let Some(plan) = whole.shard.take() {
            whole.connections = plan.whole_connections;
            whole.stop = plan.whole_stop;
        }
        whole
    }
}
