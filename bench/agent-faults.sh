#!/usr/bin/env bash
# The agent tried as a hostile token holder and a hostile network would try it (issue 40):
# each case against a real `loadlab agent` on loopback, with curl, and its outcome in a table.
# The cases that need processes of their own (a reused PID, a SIGKILLed agent and its
# successor, a lost agent) run as the tests that make them, in network namespaces.
#
#   bash bench/agent-faults.sh            # builds loadlab (debug) if needed; about a minute
#   LOADLAB=/path/to/loadlab bash bench/agent-faults.sh
#
# Needs curl; the namespace cases need root and iproute2 (else they say SKIPPED).
set -euo pipefail
cd "$(dirname "$0")/.."
if [[ -z ${LOADLAB:-} ]]; then
  cargo build -q --locked -p loadlab-cli
  LOADLAB=target/debug/loadlab
fi
work=$(mktemp -d)
agent_pid=
cleanup() {
  [[ -n $agent_pid ]] && kill "$agent_pid" 2>/dev/null && wait "$agent_pid" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
url="https://127.0.0.1:$port"
rows=()
row() { rows+=("| $1 | $2 | $3 |"); }

start_agent() {
  "$LOADLAB" agent --listen "127.0.0.1:$port" --state-dir "$work/state" --targets targets "$@" \
    >"$work/agent.out" 2>&1 &
  agent_pid=$!
  for _ in $(seq 100); do
    grep -q "generator flags" "$work/agent.out" 2>/dev/null && return 0
    sleep 0.1
  done
  echo "the agent did not start:"; cat "$work/agent.out"; exit 1
}
stop_agent() { kill "$agent_pid"; wait "$agent_pid" 2>/dev/null || true; agent_pid=; }
nonce() { python3 -c 'import secrets; print(secrets.token_hex(16))'; }
call() { # METHOD PATH [BODY] [NONCE]: prints the status, then the body
  local n=${4:-$(nonce)}
  curl -sk -o "$work/body" -w '%{http_code}' -X "$1" "$url$2" \
    -H "authorization: Bearer $(cat "$work/state/token")" \
    -H "x-loadlab-agent-protocol: 1" -H "x-loadlab-nonce: $n" \
    ${3:+-H 'content-type: application/json' --data "$3"}
}

start_agent
# 1. Nothing before the token.
head=$(curl -sk -D - -o "$work/body" "$url/v1/hello")
code=$(sed -n '1s/.* \([0-9][0-9][0-9]\).*/\1/p' <<<"$head")
proto=$(grep -ci '^x-loadlab-agent-protocol' <<<"$head" || true)
row "no token" "401, body $(wc -c <"$work/body") bytes, protocol header $proto" \
  "$([[ $code == 401 && $(wc -c <"$work/body") -eq 0 && $proto == 0 ]] && echo held || echo FAILED)"
# 2. A launch's environment as code, one runtime hook each, and the contract's own.
for case in "erlang-cowboy ERL_AFLAGS -eval 'os:cmd(\\\"touch $work/pwned\\\")'" \
  "java-webflux JAVA_TOOL_OPTIONS -javaagent:$work/x.jar" \
  "node-express NODE_OPTIONS --require $work/x.js" \
  "python-flask GUNICORN_CMD_ARGS --config=python:x" \
  "python-starlette PYTHONSTARTUP $work/x.py" \
  "rust-axum LD_PRELOAD $work/x.so" \
  "go-nethttp PATH $work" \
  "rust-axum HOST 0.0.0.0" \
  "rust-axum TLS_KEY /etc/shadow" \
  "rust-axum WORKERS 2;touch"; do
  read -r target name value <<<"$case"
  body="{\"server\":{\"kind\":\"target\",\"name\":\"$target\",\"env\":[[\"$name\",\"$value\"]]},\"client\":\"bench\"}"
  code=$(call POST /v1/sessions "$body")
  row "env $name on $target" "$code: $(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["error"][:70])' "$work/body")" \
    "$([[ $code == 403 && ! -e $work/pwned ]] && echo held || echo FAILED)"
done
code=$(call POST /v1/sessions '{"server":{"kind":"exec","command":"touch '"$work"'/pwned"},"client":"bench"}')
row "exec without --allow-exec" "$code" "$([[ $code == 403 && ! -e $work/pwned ]] && echo held || echo FAILED)"
# 3. Ports, bodies, connections.
code=$(call GET '/v1/host?port=99999999')
row "port=99999999" "$code" "$([[ $code == 400 ]] && echo held || echo FAILED)"
slow=$( (printf 'POST /v1/sessions HTTP/1.1\r\nhost: a\r\nauthorization: Bearer %s\r\nx-loadlab-agent-protocol: 1\r\nx-loadlab-nonce: %s\r\ncontent-length: 100\r\n\r\n{' \
  "$(cat "$work/state/token")" "$(nonce)"; sleep 14) |
  timeout 20 openssl s_client -quiet -connect "127.0.0.1:$port" 2>/dev/null | head -1 | tr -d '\r')
row "a body at one byte per 14 s" "${slow:-no answer}" "$([[ $slow == *408* ]] && echo held || echo FAILED)"
python3 - "$port" <<'EOF' &
import socket, sys, time
held = [socket.create_connection(("127.0.0.1", int(sys.argv[1]))) for _ in range(300)]
time.sleep(6)
EOF
idle=$!
sleep 1
code=$(call GET /v1/hello)
row "300 idle unauthenticated connections, then a client with the token" "$code" \
  "$([[ $code == 200 ]] && echo held || echo FAILED)"
wait "$idle" || true
# 4. A replay across a restart.
n=$(nonce)
first=$(call POST /v1/clock "" "$n")
stop_agent
start_agent
again=$(call POST /v1/clock "" "$n")
row "a request replayed after a restart" "first $first, replayed $again" \
  "$([[ $first == 200 && $again == 401 ]] && echo held || echo FAILED)"
stop_agent
# 5. Tokens and files the agent refuses to start with.
weak="$work/weak"; mkdir -m 700 "$weak"; printf 'aaaaaaaaaaaaaaaaaaaa\n' >"$weak/token"; chmod 600 "$weak/token"
out=$("$LOADLAB" agent --listen 127.0.0.1:0 --state-dir "$weak" 2>&1 || true)
row "a token of one repeated letter" "${out:0:80}" "$([[ $out == *"different characters"* ]] && echo held || echo FAILED)"
open="$work/open"; mkdir -m 777 "$open"
out=$("$LOADLAB" agent --listen 127.0.0.1:0 --state-dir "$open" 2>&1 || true)
row "a world-writable state dir" "${out:0:80}" "$([[ $out == *"written by others"* ]] && echo held || echo FAILED)"

echo "| case | outcome | |"
echo "|---|---|---|"
printf '%s\n' "${rows[@]}"

# 6. The cases that need processes and hosts of their own, as tests.
echo
echo "Process cases (tests, in network namespaces where they need a host of their own):"
cargo test -q --locked -p loadlab-agent --test it -- safety::a_reused_pid_is_never_signalled 2>&1 |
  grep -E "test result|SKIPPED|panicked" | sed 's/^/  reused PID: /'
cargo test -q --locked -p loadlab-cli --test agent -- \
  a_sigkilled_agents_successor a_lost_agent_and_its_launched killing_loadlab_lets_the_lease 2>&1 |
  grep -E "test result|SKIPPED|panicked" | sed 's/^/  SIGKILLed agent, lost agent, killed generator: /'
if printf '%s\n' "${rows[@]}" | grep -q FAILED; then exit 1; fi
