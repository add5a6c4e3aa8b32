//! [`Session::prepare`]: the spec checked once, the machine checked against it, what killed
//! runs left swept, the shaped link and the run's certificates made, the URL completed, and
//! the server launched or attached, on this machine or through an agent. It runs no load.

use crate::{machine, placement, remote};
use crate::{
    BusyPoll, MachineOptions, Server, ServerSide, ServerSpec, Session, SessionError, SessionSpec,
};
use loadlab_engine::{RunConfig, RunSpec};
use loadlab_machine::Link;

/// With `--busy-poll auto`, polls when placement calls for it, and says why.
pub(crate) fn auto_busy_poll(
    config: RunConfig,
    busy_poll: BusyPoll,
    notes: &mut Vec<String>,
) -> RunConfig {
    if busy_poll == BusyPoll::Auto {
        if let Some(why) = placement::busy_poll_auto(&config) {
            notes.push(format!(
                "busy-polling: {why} (--no-busy-poll to sleep instead)"
            ));
            return config.with_busy_poll(why);
        }
    }
    config
}

/// `--tls` makes a CA for the run (`made_where`: "" here, or on which host) and trusts it: a
/// CA or `--insecure` of the user's own would be a second, contradicting answer.
fn refuse_own_trust(run: &RunSpec, made_where: &str) -> Result<(), SessionError> {
    if run.tls.ca_pem.is_some() || run.tls.insecure {
        return Err(SessionError::Invalid(format!(
            "--tls makes a CA for the run{made_where} and trusts it: drop --cacert and --insecure"
        )));
    }
    Ok(())
}

/// The server's side of a session, made on this machine or through an agent.
struct ServerParts {
    server: Option<ServerSide>,
    backlog_env: Option<String>,
    target_local: bool,
    link: Option<Link>,
    certs: Option<loadlab_certs::CertDir>,
}

impl Session {
    /// Where both ways of preparing end: busy-polling decided on the checked config, the
    /// session assembled, no metrics plan yet.
    fn assemble(
        run: RunSpec,
        busy_poll: BusyPoll,
        config: RunConfig,
        mut notes: Vec<String>,
        checks: Vec<loadlab_result::Check>,
        parts: ServerParts,
    ) -> Session {
        let config = auto_busy_poll(config, busy_poll, &mut notes);
        Session {
            run,
            busy_poll,
            config,
            server: parts.server,
            notes,
            checks,
            backlog_env: parts.backlog_env,
            target_local: parts.target_local,
            link: parts.link,
            _certs: parts.certs,
            metrics: None,
            fleet: None,
            path_check: None,
        }
    }

    /// Checks the spec (once), checks the machine against it (warnings; a closed loop it
    /// cannot open is refused), decides placement, and launches or attaches the server.
    pub fn prepare(spec: SessionSpec) -> Result<Session, SessionError> {
        Session::prepare_with(spec, MachineOptions::default())
    }

    /// [`Session::prepare`], with the machine's checks as `options` say (`--strict`: a FAIL
    /// stops the run before anything starts).
    pub fn prepare_with(
        spec: SessionSpec,
        options: MachineOptions,
    ) -> Result<Session, SessionError> {
        let SessionSpec {
            mut run,
            mut server,
            busy_poll,
        } = spec;
        let mut notes = Vec::new();
        if let Some(server) = &server {
            server.check()?;
        }
        if let Some(spec) = server.as_ref().filter(|s| s.agent.is_some()) {
            return Session::prepare_remote(run, spec, busy_poll, options, notes);
        }
        let launches = server.as_ref().is_some_and(ServerSpec::launches);
        // A launched server gets a port chosen here, so the URL is whole before anything
        // starts and a bad flag fails before a JVM boots.
        let port = if launches {
            loadlab_probe::launch::free_port().map_err(|e| {
                SessionError::Invalid(format!("cannot find a free loopback port: {e}"))
            })?
        } else {
            0
        };
        // What killed runs left goes first, so that nothing below counts or collides with it.
        let swept = loadlab_machine::link::sweep_stale();
        if !swept.is_empty() {
            notes.push(format!(
                "removed what killed loadlab runs left behind: {}",
                swept.join(", ")
            ));
        }
        let mut link = match server.as_ref().and_then(|s| s.link) {
            Some(spec) => Some(Link::create(spec).map_err(|e| SessionError::Invalid(e.0))?),
            None => None,
        };
        let host = link
            .as_ref()
            .map_or("127.0.0.1".to_string(), |l| l.server_address().to_string());
        let tls = server.as_ref().is_some_and(|s| s.tls);
        let certs = if tls {
            refuse_own_trust(&run, "")?;
            let server_ip: Option<std::net::IpAddr> =
                link.as_ref().map(|l| l.server_address().into());
            let certs = loadlab_certs::CertDir::create(server_ip.as_slice())
                .map_err(|e| SessionError::Invalid(format!("--tls: {e}")))?;
            run.tls.ca_pem = Some(certs.ca_pem().as_bytes().to_vec());
            run.tls.ca_from = Some("the run's throwaway CA (--tls)".into());
            notes.push(format!(
                "serving HTTPS with a throwaway CA and certificate in {} (removed after the run)",
                certs.path().display()
            ));
            Some(certs)
        } else {
            None
        };
        let scheme = if tls { "https" } else { "http" };
        if run.url.starts_with('/') {
            if !launches {
                return Err(SessionError::Invalid(format!(
                    "{0} is a path: give a full URL such as http://127.0.0.1:8080{0}, or let \
                     loadlab start the server with --target NAME or --exec CMD",
                    run.url
                )));
            }
            run.url = format!("{scheme}://{host}:{port}{}", run.url);
        } else if tls {
            return Err(SessionError::Invalid(format!(
                "{}: with --tls loadlab starts the server on a port it chooses and serves it over \
                 HTTPS; give the URL as a path, such as /plaintext",
                run.url
            )));
        } else if link.is_some() {
            return Err(SessionError::Invalid(format!(
                "{}: behind --bandwidth the server's address is one loadlab chooses inside its \
                 own network namespace; give the URL as a path, such as /plaintext",
                run.url
            )));
        }
        let placed = server.as_mut().and_then(placement::place_apart);
        if let Some(spec) = &server {
            let (why, free) = match placed {
                Some((why, free)) => (Some(why), Some(free)),
                None => (None, spec.generator_cpus()),
            };
            if let (Some(free), Some(pin)) = (free, &spec.limits.pin) {
                run.threads = run.threads.or(Some(free.len()));
                notes.push(placement::describe(pin, &free, why.as_deref()));
                run.generator_cpus = Some(free);
            }
        }
        run.busy_poll = busy_poll == BusyPoll::On;
        // Once per session: a search's probes then validate from the descriptors.
        run.resolve_grpc_schema()?;
        let config = run.validate()?;
        let (plan, checks) = machine::preflight(
            &config,
            server.as_ref(),
            link.is_some(),
            options,
            &mut notes,
        )?;
        if let Some(link) = link.as_mut() {
            link.calibrate().map_err(|e| SessionError::Invalid(e.0))?;
            notes.push(link.describe());
        }
        let server = match &server {
            Some(spec) => {
                let (started, note) =
                    Server::start(spec, port, link.as_ref(), certs.as_ref(), run.http3)?;
                notes.push(note);
                Some((ServerSide::Local(started), machine::backlog_env(spec)))
            }
            None => None,
        };
        let (server, backlog_env) = match server {
            Some((s, b)) => (Some(s), b),
            None => (None, None),
        };
        let parts = ServerParts {
            server,
            backlog_env,
            target_local: plan.target.as_ref().is_some_and(|t| t.loopback),
            link,
            certs,
        };
        Ok(Session::assemble(
            run, busy_poll, config, notes, checks, parts,
        ))
    }
    /// A server on another host, through its agent: asks the agent to launch or attach,
    /// then completes the URL with where the agent's server listens.
    fn prepare_remote(
        mut run: RunSpec,
        spec: &ServerSpec,
        busy_poll: BusyPoll,
        options: MachineOptions,
        mut notes: Vec<String>,
    ) -> Result<Session, SessionError> {
        spec.check()?;
        let agent = spec.agent.as_ref().expect("a remote spec has an agent");
        let request = remote::request(spec)?;
        let mut remote = remote::Remote::open(
            &agent.endpoint,
            request,
            remote::url_port(&run.url),
            spec.sample_every,
            &mut notes,
        )?;
        let opened = remote.opened();
        if run.url.starts_with('/') {
            let (Some(authority), Some(scheme)) = (remote.authority(), opened.scheme.as_deref())
            else {
                return Err(SessionError::Invalid(format!(
                    "{} is a path: give the server's full URL (the agent watches a server it did \
                     not start, and cannot say where it listens)",
                    run.url
                )));
            };
            run.url = format!("{scheme}://{authority}{}", run.url);
        } else if spec.launches() {
            return Err(SessionError::Invalid(format!(
                "{}: the agent starts the server on a port it chooses on its host; give the URL \
                 as a path, such as /plaintext",
                run.url
            )));
        }
        if let Some(ca) = &opened.ca_pem {
            refuse_own_trust(&run, " on the agent's host")?;
            run.tls.ca_pem = Some(ca.as_bytes().to_vec());
            run.tls.ca_from = Some("the agent's throwaway CA (--tls on its host)".into());
        }
        run.busy_poll = busy_poll == BusyPoll::On;
        // Once per session: a search's probes then validate from the descriptors.
        run.resolve_grpc_schema()?;
        let config = run.validate()?;
        // The machine checked is this one, the generator's; the server's host is the agent's.
        let (_plan, mut checks) = machine::preflight(&config, None, false, options, &mut notes)?;
        let host = remote.host_checks(&config, &mut notes);
        for c in host
            .iter()
            .filter(|c| c.status != loadlab_result::CheckStatus::Pass)
        {
            notes.push(format!(
                "{} {}: {}; needs {}",
                c.status.label(),
                c.name,
                c.found,
                c.needs
            ));
        }
        if options.strict
            && host
                .iter()
                .any(|c| c.status == loadlab_result::CheckStatus::Fail)
        {
            return Err(SessionError::Invalid(
                "the server's host failed a check (see above); --strict stops here".into(),
            ));
        }
        checks.extend(host);
        let parts = ServerParts {
            server: Some(ServerSide::Remote(Box::new(remote))),
            backlog_env: machine::backlog_env(spec),
            target_local: false,
            link: None,
            certs: None,
        };
        Ok(Session::assemble(
            run, busy_poll, config, notes, checks, parts,
        ))
    }
}
