#!/usr/bin/env bash
# Measures the reference JS LangGraph server and `weft serve --graphs apitest`
# (on SQLite, then on PostgreSQL) one after the other, each fresh, with the
# same load generator (bench/server): the side-by-side table of
# docs/benchmarks.md, then 5,000 open streams on each weft backend.
#
# Usage: bash bench/server/sidebyside.sh --reference DIR [--pg URL] [--out DIR] [--skip-open]
#
#   --reference  a copy of ../shared/bench/server with `npm install` done
#                (the shared one is read-only); its start-reference.sh and
#                stop-reference.sh start and stop the server on port 2091
#   --pg         a PostgreSQL database for weft, dropped and created again
#                (default postgres://postgres@127.0.0.1:5432/weft_sidebyside)
#   --out        where the generator's JSON lines and the servers' logs go
#                (default /tmp/weft-sidebyside)
#   --skip-open  leave out the 5,000 open streams
#
# Each line of the output is the generator's JSON for one server and load
# (50 x 3, 200 x 3, 200 x 10), with a "server" field added; a table follows.
# Run it on a quiet machine: the generator and the servers share its cores.
set -euo pipefail
checkout=$(cd "$(dirname "$0")/../.." && pwd)
ref=""; pg=postgres://postgres@127.0.0.1:5432/weft_sidebyside; out=/tmp/weft-sidebyside; open=1
while [[ $# -gt 0 ]]; do
  case "$1" in
    --reference) ref=$(cd "${2:?--reference needs a directory}" && pwd); shift 2 ;;
    --pg) pg=${2:?--pg needs a URL}; shift 2 ;;
    --out) out=${2:?--out needs a directory}; shift 2 ;;
    --skip-open) open=0; shift ;;
    -h|--help) sed -n '2,22p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "sidebyside.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
[[ -n $ref ]] || { echo "sidebyside.sh: --reference DIR is required (see --help)" >&2; exit 2; }
[[ -x $ref/start-reference.sh ]] || { echo "sidebyside.sh: $ref/start-reference.sh not found" >&2; exit 2; }
[[ -d $ref/node_modules ]] || { echo "sidebyside.sh: run npm install in $ref first" >&2; exit 2; }
rm -rf "$out"; mkdir -p "$out"
# The server runs from a copy of the binary, as installed, not from the
# file the linker just wrote: the kernel maps a freshly linked binary's
# pages into the process in larger pieces, about 15 MB more RSS at the
# same work (docs/benchmarks.md, "Server memory").
(cd "$checkout" && go build -o "$out/weft.linked" ./cmd/weft && go build -o "$out/loadgen" ./bench/server)
cp "$out/weft.linked" "$out/weft" && rm "$out/weft.linked"
results="$out/results.jsonl"
loads=("50 3" "200 3" "200 10")

measure() { # name url pid
  local name=$1 url=$2 pid=$3 c r
  "$out/loadgen" --url "$url" --clients 20 --runs-per-client 1 >/dev/null # warm-up
  for l in "${loads[@]}"; do
    read -r c r <<<"$l"
    "$out/loadgen" --url "$url" --clients "$c" --runs-per-client "$r" --pid "$pid" |
      sed "s/^{/{\"server\":\"$name\",/" | tee -a "$results"
  done
}

waitok() { # url pid log
  for _ in $(seq 150); do
    curl -sf "$1/ok" >/dev/null && return 0
    kill -0 "$2" 2>/dev/null || { echo "sidebyside.sh: the server stopped; its log:" >&2; cat "$3" >&2; exit 1; }
    sleep 0.2
  done
  echo "sidebyside.sh: $1 did not answer /ok" >&2; exit 1
}

weft() { # name db port [extra flags...]; starts weft, sets $wpid
  local name=$1 db=$2 port=$3; shift 3
  setsid "$out/weft" serve --graphs apitest --addr "127.0.0.1:$port" --db "$db" --log-requests=false "$@" >"$out/$name.log" 2>&1 &
  wpid=$!
  waitok "http://127.0.0.1:$port" "$wpid" "$out/$name.log"
}

stopweft() { kill -TERM -- "-$wpid" 2>/dev/null || true; wait "$wpid" 2>/dev/null || true; }

freshpg() {
  local name=${pg##*/}; name=${name%%\?*}
  psql -q "${pg%/*}/postgres" -c "DROP DATABASE IF EXISTS \"$name\"" -c "CREATE DATABASE \"$name\"" >/dev/null
}

trap 'stopweft; (cd "$ref" && ./stop-reference.sh >/dev/null 2>&1) || true' EXIT

(cd "$ref" && ./start-reference.sh --background >/dev/null)
measure reference http://127.0.0.1:2091 "$(cat "$ref/.run/reference.pid")"
(cd "$ref" && ./stop-reference.sh >/dev/null)

weft weft-sqlite "$out/weft.db" 2130
measure weft-sqlite http://127.0.0.1:2130 "$wpid"
stopweft

freshpg
weft weft-postgres "$pg" 2131
measure weft-postgres http://127.0.0.1:2131 "$wpid"
stopweft

if [[ $open == 1 ]]; then
  rm -f "$out"/open.db*
  weft open-sqlite "$out/open.db" 2132 --workers 6000
  "$out/loadgen" --url http://127.0.0.1:2132 --open-streams 5000 --hold 10s --pid "$wpid" |
    sed 's/^{/{"server":"weft-sqlite-open",/' | tee -a "$results"
  stopweft
  freshpg
  weft open-postgres "$pg" 2133 --workers 6000
  "$out/loadgen" --url http://127.0.0.1:2133 --open-streams 5000 --hold 10s --pid "$wpid" |
    sed 's/^{/{"server":"weft-postgres-open",/' | tee -a "$results"
  stopweft
fi

echo
echo "| server | clients × runs | runs/s | p50 ms | p99 ms | server RSS peak | errors |"
echo "|---|---|---:|---:|---:|---:|---:|"
grep -v -- '-open"' "$results" | python3 -c '
import json, sys
for line in sys.stdin:
    r = json.loads(line)
    print("| %s | %d × %d | %.1f | %d | %d | %.0f MB | %d |" % (r["server"], r["clients"], r["runs"] // r["clients"],
          r["runs_per_s"], r["p50_ms"], r["p99_ms"], r["rss_mb_server_peak"], r["errors"]))
'
if [[ $open == 1 ]]; then
  echo
  echo "| server | open streams | opened | running | open in s | server RSS peak | errors |"
  echo "|---|---:|---:|---:|---:|---:|---:|"
  grep -- '-open"' "$results" | python3 -c '
import json, sys
for line in sys.stdin:
    r = json.loads(line)
    print("| %s | %d | %d | %d | %.1f | %.0f MB | %d |" % (r["server"], r["streams"], r["opened"], r["running"],
          r["open_s"], r["rss_mb_server_peak"] or 0, r["errors"]))
'
fi
