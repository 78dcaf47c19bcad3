#!/usr/bin/env bash
# Faults held by a process that is killed: `faultline run` holds h0.nic0 down
# (bench/configs/kill_recovery.yaml); the coordinator (kill -9, REPEAT times) or the agent of
# h0 (kill -9, REPEAT times) is killed while the fault is held, and the time from the kill to
# the NIC being up again is measured by polling its state every 5 ms. After each kill
# the script checks that nothing is left: no namespace of that lab, no agent, no nft table.
# The lease is LEASE seconds (default 2): the goal is every fault back within the lease plus 1 s.
# Root; run from the repository root after a build.
#   bench/kill_recovery.sh [REPEAT] [LEASE]
set -euo pipefail
cd "$(dirname "$0")/.."
repeat=${1:-20}
lease=${2:-2}
fl=build/bin/faultline
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

now_ms() { date +%s%3N; }
# Pids of the faultline-agent processes of lab $1 (host $2 if given), from /proc.
agent_pids() {
  local p
  for p in /proc/[0-9]*; do
    local cmd
    cmd=$( { tr '\0' ' ' < "$p/cmdline"; } 2>/dev/null) || continue
    case "$cmd" in
      *faultline-agent*"--host ${2:-}"*"--lab $1 "*) echo "${p#/proc/}" ;;
    esac
  done
}
link_up() { ip -n "$1" -o link show nic0 2>/dev/null | grep -q 'state UP'; }

leftovers=0
one() {  # $1: coordinator|agent; prints the ms from the kill to nic0 up
  local who=$1 db="$tmp/$who.db" lab="" ns t0 t1 kill_ns=""
  "$fl" run bench/configs/kill_recovery.yaml --db "$db" --lease "$lease" \
      >"$tmp/out" 2>"$tmp/err" &
  local coord=$!
  disown "$coord"  # no job notice when it is killed; waited for by polling below
  # the run's lab (named after its run id), then nic0 held down by the fault
  local deadline=$(( $(now_ms) + 120000 )) run=""
  while [ -z "$run" ] && [ "$(now_ms)" -lt "$deadline" ]; do
    run=$(sqlite3 "$db" "SELECT id FROM runs LIMIT 1" 2>/dev/null || true)
    [ -n "$run" ] || sleep 0.05
  done
  [ -n "$run" ] || { echo "no run started" >&2; kill -INT "$coord"; return 1; }
  lab="fl${run: -6}"
  ns="fl-$lab-h0"
  local applied=0
  while [ "$applied" != 1 ] && [ "$(now_ms)" -lt "$deadline" ]; do
    applied=$(sqlite3 "$db" "SELECT count(*) FROM faults WHERE effective_wall_ns IS NOT NULL" \
              2>/dev/null || echo 0)
    [ "$applied" = 1 ] || sleep 0.02
  done
  sleep 0.2  # the fault is held
  if [ "$applied" != 1 ] || link_up "$ns"; then
    echo "the fault was not applied in lab $lab" >&2; kill -INT "$coord"; return 1
  fi
  if [ "$who" = coordinator ]; then
    t0=$(now_ms); kill -9 "$coord"
    kill_ns=$(date +%s%N)
  else
    local a="" d1=$(( $(now_ms) + 10000 ))
    while [ -z "$a" ] && [ "$(now_ms)" -lt "$d1" ]; do a=$(agent_pids "$lab" h0 | head -1); done
    [ -n "$a" ] || { echo "no agent for h0 of $lab" >&2; kill -INT "$coord"; return 1; }
    t0=$(now_ms); kill -9 "$a"
  fi
  while ! link_up "$ns" && [ "$(now_ms)" -lt $((t0 + 30000)) ]; do sleep 0.005; done
  t1=$(now_ms)
  echo $((t1 - t0))
  # clean up: the coordinator ends the run itself (agent killed), or the agents end on their
  # lapsed lease and `faultline lab down` removes the lab (coordinator killed)
  local d0=$(( $(now_ms) + 60000 ))
  while kill -0 "$coord" 2>/dev/null && [ "$(now_ms)" -lt "$d0" ]; do sleep 0.05; done
  if [ "$who" = coordinator ]; then
    local d=$(( $(now_ms) + 30000 ))
    while [ -n "$(agent_pids "$lab")" ] && [ "$(now_ms)" -lt "$d" ]; do sleep 0.05; done
    "$fl" lab down "$lab" >/dev/null 2>&1 || true
    # what a coordinator crash loses: the newest stored sample against the kill time
    local newest
    newest=$(sqlite3 "$db" "SELECT max(max_end_ns) FROM sample_blocks" 2>/dev/null || true)
    [ -n "$newest" ] && echo $(( (kill_ns - newest) / 1000000 )) >> "$tmp/lost.ms"
    "$fl" runs --db "$db" >/dev/null 2>&1 || true
  fi
  if ip netns list 2>/dev/null | grep -q "fl-$lab-" || [ -n "$(agent_pids "$lab")" ] ||
     nft list tables 2>/dev/null | grep -q "$lab"; then
    echo "left behind by lab $lab" >&2
    leftovers=$((leftovers + 1))
  fi
  rm -f "$db" "$db"-*
}

stats() {  # $1: label; stdin: one number per line
  sort -n | awk -v label="$1" -v limit=$(( lease * 1000 + 1000 )) '
    { v[NR] = $1; if ($1 > limit) over++ }
    END { printf "%s: n=%d median %d ms, p95 %d ms, max %d ms; over lease+1s: %d\n",
                 label, NR, v[int((NR + 1) / 2)], v[int(NR * 0.95 + 0.5) < 1 ? 1 : int(NR * 0.95 + 0.5)],
                 v[NR], over + 0 }'
}

: > "$tmp/lost.ms"
for who in coordinator agent; do
  : > "$tmp/$who.ms"
  for i in $(seq "$repeat"); do
    one "$who" >> "$tmp/$who.ms"
    printf '\r%s kill %d/%d' "$who" "$i" "$repeat" >&2
  done
  echo >&2
done
echo "kill -9 while h0.nic0 is held down (lease ${lease}s): time from the kill to nic0 up"
stats coordinator < "$tmp/coordinator.ms"
stats agent < "$tmp/agent.ms"
stats "telemetry lost at a coordinator kill (kill time - newest stored sample)" < "$tmp/lost.ms"
echo "runs that left something behind: $leftovers"
[ "$leftovers" -eq 0 ]
