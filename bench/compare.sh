#!/usr/bin/env bash
# Runs LangGraph's benchmark graphs on LangGraph.js (the peer bench,
# ../shared/bench/langgraphjs/bench.mjs) and on weft (./bench/langgraph), one
# after the other on this machine with the same --runs, and prints a markdown
# table of the medians. weft runs twice: with Go's default GOMAXPROCS (every
# core) and with GOMAXPROCS=1, since Node runs a graph on one thread.
#
# Usage: bash bench/compare.sh [--runs N] [--cases a,b,c] [--out DIR]
#
#   --runs N     timed runs per case, after one warm-up (default 7)
#   --cases ...  comma-separated case names (default: all 16)
#   --out DIR    keep the raw JSON lines in DIR/langgraphjs.jsonl, DIR/weft.jsonl
#                and DIR/weft-1cpu.jsonl
#
# Environment:
#   LANGGRAPHJS_BENCH  the peer bench source (default: ../shared/bench/langgraphjs
#                      next to the repository); it is read-only and left alone.
#   WEFT_BENCH_CACHE   where the runnable copy with node_modules lives (default:
#                      ${XDG_CACHE_HOME:-~/.cache}/weft/langgraphjs-bench). It is
#                      reinstalled with `npm ci` when the lockfile changes. Never
#                      inside the repository.
#
# Needs node and npm (the peer) and go. The LangGraph.js suite takes about
# half a minute with --runs 7.
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
runs=7
cases=""
out=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --runs) runs=${2:?--runs needs a number}; shift 2 ;;
    --runs=*) runs=${1#--runs=}; shift ;;
    --cases) cases=${2:?--cases needs a list}; shift 2 ;;
    --cases=*) cases=${1#--cases=}; shift ;;
    --out) out=${2:?--out needs a directory}; shift 2 ;;
    --out=*) out=${1#--out=}; shift ;;
    -h|--help) sed -n '2,24p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "compare.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
if ! [[ $runs =~ ^[1-9][0-9]*$ ]]; then
  echo "compare.sh: --runs must be a positive integer, got '$runs'" >&2
  exit 2
fi
# The peer first: without it nothing can be compared, whatever is installed.
src=${LANGGRAPHJS_BENCH:-$repo/../shared/bench/langgraphjs}
missing=()
for f in bench.mjs package.json package-lock.json; do
  [[ -f $src/$f ]] || missing+=("$f")
done
if [[ ${#missing[@]} -gt 0 ]]; then
  {
    echo "compare.sh: the LangGraph.js peer benchmark is not at $src (missing: ${missing[*]})."
    echo "It lives in ../shared/bench/langgraphjs/ next to the repository (bench.mjs, package.json,"
    echo "package-lock.json); put it there, or point LANGGRAPHJS_BENCH at a copy."
    echo "weft's side alone runs with: go run ./bench/langgraph --runs $runs"
  } >&2
  exit 1
fi
for tool in node npm go; do
  command -v "$tool" >/dev/null || { echo "compare.sh: $tool is not on PATH (the peer needs node and npm, weft's side go)" >&2; exit 1; }
done
src=$(cd "$src" && pwd)
cache=${WEFT_BENCH_CACHE:-${XDG_CACHE_HOME:-${HOME:-/tmp}/.cache}/weft/langgraphjs-bench}
case "$cache/" in
  "$repo"/*) echo "compare.sh: WEFT_BENCH_CACHE ($cache) must be outside the repository" >&2; exit 2 ;;
esac

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# Build weft's bench first, so a broken build fails before the long JS run.
(cd "$repo" && go build -o "$tmp/weft-bench" ./bench/langgraph)
args=(--runs "$runs")
[[ -n $cases ]] && args+=(--cases "$cases")
"$tmp/weft-bench" "${args[@]}" --list >/dev/null || exit 2 # unknown case names

# A runnable copy of the peer bench with node_modules, installed once per
# lockfile. The source tree is read-only, so the copy is made writable.
mkdir -p "$cache"
if command -v sha256sum >/dev/null; then sum=(sha256sum); else sum=(shasum -a 256); fi
stamp=$(cat "$src/package.json" "$src/package-lock.json" | "${sum[@]}" | cut -d' ' -f1)
if [[ ! -d $cache/node_modules || "$(cat "$cache/.stamp" 2>/dev/null)" != "$stamp" ]]; then
  echo "compare.sh: installing the LangGraph.js peer into $cache (npm ci)" >&2
  rm -rf "$cache/node_modules" "$cache/.stamp"
  cp "$src/package.json" "$src/package-lock.json" "$cache/"
  chmod u+w "$cache/package.json" "$cache/package-lock.json"
  (cd "$cache" && npm ci --no-audit --no-fund >&2)
  echo "$stamp" >"$cache/.stamp"
fi
cp "$src/bench.mjs" "$cache/bench.mjs"
chmod u+w "$cache/bench.mjs"

echo "compare.sh: LangGraph.js: node bench.mjs ${args[*]}" >&2
(cd "$cache" && node bench.mjs "${args[@]}") >"$tmp/langgraphjs.jsonl" 2>"$tmp/langgraphjs.stderr" || {
  cat "$tmp/langgraphjs.stderr" >&2
  echo "compare.sh: the LangGraph.js bench failed" >&2
  exit 1
}

# weft with the default GOMAXPROCS, then with one P.
for procs in default 1; do
  file=$tmp/weft.jsonl
  env=()
  if [[ $procs == 1 ]]; then
    file=$tmp/weft-1cpu.jsonl
    env=(GOMAXPROCS=1)
  fi
  echo "compare.sh: weft: ${env[*]} bench/langgraph ${args[*]}" >&2
  weft_rc=0
  env "${env[@]}" "$tmp/weft-bench" "${args[@]}" >"$file" || weft_rc=$?
  if [[ ! -s $file ]]; then
    echo "compare.sh: the weft bench failed (GOMAXPROCS $procs, exit $weft_rc)" >&2
    exit 1
  fi
  # Exit 1 with output means an event count differs from LangGraph.js's;
  # the table marks the case.
  [[ $weft_rc -eq 0 ]] || echo "compare.sh: the weft bench exited $weft_rc (GOMAXPROCS $procs)" >&2
done

if [[ -n $out ]]; then
  mkdir -p "$out"
  cp "$tmp/langgraphjs.jsonl" "$tmp/weft.jsonl" "$tmp/weft-1cpu.jsonl" "$out/"
fi

# The table, in the order of the LangGraph.js output.
node - "$tmp/langgraphjs.jsonl" "$tmp/weft.jsonl" "$tmp/weft-1cpu.jsonl" "$runs" "$(nproc 2>/dev/null || echo '?')" <<'EOF'
const fs = require("node:fs");
const [jsFile, goFile, go1File, runs, cores] = process.argv.slice(2);
const read = (f) => fs.readFileSync(f, "utf8").split("\n").filter(Boolean).map((l) => JSON.parse(l));
const js = read(jsFile);
const byCase = (f) => new Map(read(f).map((r) => [r.case, r]));
const weft = byCase(goFile);
const weft1 = byCase(go1File);
const target = 30;
const rows = [];
let below = 0;
const speed = (j, w) => {
  if (!w || !(w.median_ms > 0)) return "—";
  const s = j.median_ms / w.median_ms;
  let out = `${s >= 100 ? s.toFixed(0) : s.toFixed(1)}×`;
  if (s < target) { below++; out += " ⚠"; }
  return out;
};
for (const j of js) {
  const w = weft.get(j.case);
  const w1 = weft1.get(j.case);
  const odd = [w, w1].filter((r) => r && r.events !== j.events);
  const events = odd.length ? ` (events: js ${j.events}, weft ${odd.map((r) => r.events).join("/")})` : "";
  const ms = (r) => (r ? r.median_ms : "—");
  rows.push(`| ${j.case}${events} | ${j.median_ms} | ${ms(w)} | ${speed(j, w)} | ${ms(w1)} | ${speed(j, w1)} | ${w ? w.allocs_per_op : "—"} | ${w ? w.bytes_per_op : "—"} |`);
}
console.log(`Median of ${runs} timed runs (after 1 warm-up), same machine (${cores} cores), LangGraph.js first, then weft with the default GOMAXPROCS, then weft with GOMAXPROCS=1.\n`);
console.log("| case | LangGraph.js ms | weft ms | speed-up | weft ms, GOMAXPROCS=1 | speed-up, 1 | weft allocs/run | weft bytes/run |");
console.log("|---|---:|---:|---:|---:|---:|---:|---:|");
for (const r of rows) console.log(r);
const total = 2 * js.length;
console.log(`\n${below === 0 ? "Every measurement" : `${total - below} of ${total} measurements`} at or above the ${target}× target${below ? ` (⚠ marks the ${below} below)` : ""}.`);
EOF
