//! `[server]`: where the variants' servers run when it is not this machine. With `agent`,
//! a lab target or command is launched, or a `url` variant's server watched, by `loadlab
//! agent` on the server's own host (a variant may name its own in `[variant.server]`).
//! Checked when the file is read; the session connects.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub(super) struct RawServer {
    pub(super) agent: Option<String>,
    pub(super) agent_token_file: Option<String>,
    pub(super) agent_fingerprint: Option<String>,
    pub(super) agent_cacert: Option<String>,
}

/// The agent a variant's server is reached through.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AgentRef {
    /// `https://HOST:PORT`, as the agent printed it.
    pub url: String,
    /// The agent's token file on this machine (never the token).
    pub token_file: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fingerprint: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cacert: Option<String>,
}

impl RawServer {
    /// The file's `[server]` with a variant's own keys over it.
    pub(super) fn with(&self, over: Option<&RawServer>) -> RawServer {
        let Some(o) = over else {
            return self.clone();
        };
        let pick = |a: &Option<String>, b: &Option<String>| b.clone().or_else(|| a.clone());
        RawServer {
            agent: pick(&self.agent, &o.agent),
            agent_token_file: pick(&self.agent_token_file, &o.agent_token_file),
            agent_fingerprint: pick(&self.agent_fingerprint, &o.agent_fingerprint),
            agent_cacert: pick(&self.agent_cacert, &o.agent_cacert),
        }
    }

    /// The agent, checked; `None` without one. `key` names the table in messages.
    pub(super) fn resolve(&self, key: &str) -> Result<Option<AgentRef>, String> {
        let Some(url) = &self.agent else {
            if self.agent_token_file.is_some()
                || self.agent_fingerprint.is_some()
                || self.agent_cacert.is_some()
            {
                return Err(format!(
                    "{key}: agent_token_file, agent_fingerprint and agent_cacert go with agent = \
                     \"https://HOST:7070\"; add it or drop them"
                ));
            }
            return Ok(None);
        };
        if !url.starts_with("https://") {
            return Err(format!(
                "{key} agent = {url:?}: the agent speaks HTTPS only; give the https:// URL it printed"
            ));
        }
        let Some(token_file) = self.agent_token_file.clone() else {
            return Err(format!(
                "{key}: agent_token_file = \"FILE\" is missing: the agent's token, copied from \
                 the path it printed at start"
            ));
        };
        match (&self.agent_fingerprint, &self.agent_cacert) {
            (Some(_), Some(_)) => Err(format!(
                "{key}: give agent_fingerprint or agent_cacert, not both"
            )),
            (None, None) => Err(format!(
                "{key}: say how to trust the agent: agent_fingerprint = \"sha256:...\" (it \
                 printed it) or agent_cacert = \"FILE\""
            )),
            _ => Ok(Some(AgentRef {
                url: url.trim_end_matches('/').to_string(),
                token_file,
                fingerprint: self.agent_fingerprint.clone(),
                cacert: self.agent_cacert.clone(),
            })),
        }
    }
}
