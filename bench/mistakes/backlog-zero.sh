#!/usr/bin/env bash
# Mistake 5 (post 002): actix-web with backlog 0, the listen queue overflowing under a burst of
# new connections. Here a lab target with BACKLOG=1 (the contract's smallest; 0 is refused) and
# with the default 1024, under a burst of new connections (no keep-alive, 256 connections).
# Usage: bash bench/mistakes/backlog-zero.sh [TARGET=rust-actix-web] [SECS=2] [SMALL=1]
source "$(dirname "$0")/lib.sh"
TARGET=${TARGET:-rust-actix-web}; SECS=${SECS:-2}; SMALL=${SMALL:-1}
ll small --target "$TARGET" /plaintext -c 256 --no-keepalive -d "${SECS}s" --pin 0 --env "BACKLOG=$SMALL" --connect-timeout 1s
ll good --target "$TARGET" /plaintext -c 256 --no-keepalive -d "${SECS}s" --pin 0 --connect-timeout 1s
echo "== mistake 5, the backlog of 0: $TARGET, 256 connections, a new one per request, ${SECS}s (out: $OUT)"
header "listen backlog"
row "wrong: BACKLOG=$SMALL" small
row "right: BACKLOG=1024 (default)" good
python3 - "$OUT/small.json" "$OUT/good.json" <<'PY'
import json, sys
for path in sys.argv[1:]:
    try:
        k = json.load(open(path)).get("kernel") or {}
    except Exception:
        continue
    print(f"{path.rsplit('/', 1)[1]:<11} kernel: backlog {k.get('listen_backlog')}, listen queue overflows "
          f"{k.get('listen_overflows')}, listen drops {k.get('listen_drops')}, SYN cookies {k.get('syncookies_sent')}")
PY
for r in small good; do echo "loadlab, run $r:"; said "$r" '^(Requests|Errors|  TCP|  ! |Verdict)|BACKLOG|overflow'; done
