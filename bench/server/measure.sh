#!/usr/bin/env bash
# Measures one build of `weft serve --graphs apitest` under the load generator,
# with the CPU the server (and PostgreSQL) spent per run: a steadier figure than
# runs/s on a shared machine, for comparing two builds back to back.
#
# Usage: bash bench/server/measure.sh [--checkout DIR] [--port N] [--clients N] [--runs N] [DB]
#
#   DB          an SQLite file name (default weft.db, created fresh in the work
#               directory) or postgres://USER@HOST:PORT/NAME (NAME is dropped and
#               created again: use a database of its own)
#   --checkout  the weft checkout to build (default: the one holding this script)
#   --port      the port to serve on (default 2110)
#   --clients, --runs  the measured load (default 200 clients x 5 runs each),
#               after a warm-up of 200 x 1
#
# It prints the generator's JSON line, then server_cpu_ms_per_run (the server
# process's user+system CPU over the measured load, per run) and
# postgres_cpu_ms_per_run (every process of the postgres user on this machine:
# only meaningful when nothing else uses that PostgreSQL). The JSON is kept in
# /tmp/weft-measure-PORT/result.json. Linux only (/proc).
set -euo pipefail
checkout=$(cd "$(dirname "$0")/../.." && pwd)
port=2110; clients=200; runs=5; db=weft.db
while [[ $# -gt 0 ]]; do
  case "$1" in
    --checkout) checkout=$(cd "${2:?--checkout needs a directory}" && pwd); shift 2 ;;
    --port) port=${2:?--port needs a number}; shift 2 ;;
    --clients) clients=${2:?--clients needs a number}; shift 2 ;;
    --runs) runs=${2:?--runs needs a number}; shift 2 ;;
    -h|--help) sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "measure.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
    *) db=$1; shift ;;
  esac
done
out=/tmp/weft-measure-$port
rm -rf "$out"; mkdir -p "$out"
# Run a copy of the binary, as installed: a freshly linked one maps about
# 15 MB more of its pages (docs/benchmarks.md, "Server memory").
(cd "$checkout" && go build -o "$out/weft.linked" ./cmd/weft && go build -o "$out/loadgen" ./bench/server)
cp "$out/weft.linked" "$out/weft" && rm "$out/weft.linked"
if [[ $db == postgres://* ]]; then
  name=${db##*/}; name=${name%%\?*}
  base=${db%/*}
  psql -q "$base/postgres" -c "DROP DATABASE IF EXISTS \"$name\"" -c "CREATE DATABASE \"$name\"" >/dev/null
else
  db="$out/$(basename "$db")"
fi
cd "$out"
setsid "$out/weft" serve --graphs apitest --addr "127.0.0.1:$port" --db "$db" --log-requests=false >"$out/server.log" 2>&1 &
started=$!
for _ in $(seq 100); do
  curl -sf "http://127.0.0.1:$port/ok" >/dev/null && break
  kill -0 "$started" 2>/dev/null || { echo "measure.sh: the server stopped; its log:" >&2; cat "$out/server.log" >&2; exit 1; }
  sleep 0.2
done
trap 'kill -TERM -- -"$started" 2>/dev/null || true' EXIT
cpu() { awk '{print $14+$15}' "/proc/$1/stat"; }
pgcpu() { for p in $(pgrep -u postgres || true); do awk '{print $14+$15}' "/proc/$p/stat" 2>/dev/null || true; done | awk '{s+=$1} END {print s+0}'; }
"$out/loadgen" --url "http://127.0.0.1:$port" --clients 200 --runs-per-client 1 >/dev/null
a0=$(pgcpu); t0=$(cpu "$started")
"$out/loadgen" --url "http://127.0.0.1:$port" --clients "$clients" --runs-per-client "$runs" --pid "$started" | tee "$out/result.json"
t1=$(cpu "$started"); a1=$(pgcpu)
hz=$(getconf CLK_TCK); n=$((clients * runs))
awk -v s=$((t1 - t0)) -v p=$((a1 - a0)) -v n="$n" -v hz="$hz" -v la="$(cut -d' ' -f1-3 /proc/loadavg)" \
  'BEGIN {printf "server_cpu_ms_per_run=%.3f postgres_cpu_ms_per_run=%.3f loadavg=%s\n", s*1000/hz/n, p*1000/hz/n, la}'
