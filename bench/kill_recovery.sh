#!/usr/bin/env bash
# Faults held by a process that is killed or cut off: `faultline run` holds h0.nic0 down
# (bench/configs/kill_recovery.yaml); while the fault is held, REPEAT times each: the
# coordinator is killed (kill -9), the coordinator is cut off from h0's agent (nft drops the
# control connection both ways in h0's namespace; nothing is killed), or the agent of h0 is
# killed (kill -9). From that moment it polls every 5 ms for nic0 up again and for h0's ranks
# gone (no process left in the cgroups of h0's containers). After each try it checks that
# nothing is left: no namespace of that lab, no agent, no rank, no nft table.
# The lease is LEASE seconds (default 2): the goal is the fault reverted and the ranks gone
# within the lease plus 1 s.
# Root; run from the repository root after a build.
#   bench/kill_recovery.sh [REPEAT] [LEASE]      (MODES="coordinator cutoff agent" by default)
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
# Pids of the ranks of host $2 of lab $1: processes in a cgroup of its containers.
cg2=$(awk '$9 == "cgroup2" { print $5; exit }' /proc/self/mountinfo)
rank_pids() {
  local f
  for f in $(find "$cg2" -maxdepth 4 -path "*fl-$1*" -name cgroup.procs 2>/dev/null); do
    case "$f" in *"$2"*) cat "$f" ;; esac
  done 2>/dev/null
}

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
  [ -n "$(rank_pids "$lab" h0)" ] || { echo "no rank of h0 found in lab $lab" >&2; kill -INT "$coord"; return 1; }
  if [ "$who" = coordinator ]; then
    t0=$(now_ms); kill -9 "$coord"
    kill_ns=$(date +%s%N)
  elif [ "$who" = cutoff ]; then
    local ctl
    ctl=$(grep -o 'dial in at [0-9.]*:[0-9]*' "$tmp/err" | head -1 | cut -d' ' -f4)
    [ -n "$ctl" ] || { echo "no control address in the run's output" >&2; kill -INT "$coord"; return 1; }
    t0=$(now_ms)
    ip netns exec "$ns" nft -f - <<NFT
table ip flcut {
  chain out { type filter hook output priority 0; ip daddr ${ctl%:*} tcp dport ${ctl#*:} drop; }
  chain in { type filter hook input priority 0; ip saddr ${ctl%:*} tcp sport ${ctl#*:} drop; }
}
NFT
  else
    local a="" d1=$(( $(now_ms) + 10000 ))
    while [ -z "$a" ] && [ "$(now_ms)" -lt "$d1" ]; do a=$(agent_pids "$lab" h0 | head -1); done
    [ -n "$a" ] || { echo "no agent for h0 of $lab" >&2; kill -INT "$coord"; return 1; }
    t0=$(now_ms); kill -9 "$a"
  fi
  local nic_ms="" rank_ms=""
  while [ -z "$nic_ms" ] || [ -z "$rank_ms" ]; do
    [ -z "$nic_ms" ] && link_up "$ns" && nic_ms=$(( $(now_ms) - t0 ))
    [ -z "$rank_ms" ] && [ -z "$(rank_pids "$lab" h0)" ] && rank_ms=$(( $(now_ms) - t0 ))
    [ "$(now_ms)" -lt $((t0 + 30000)) ] || break
    sleep 0.005
  done
  echo "${nic_ms:-30000} ${rank_ms:-30000}"
  # clean up: the coordinator ends the run itself (agent killed or cut off), or the agents end
  # on their lapsed lease and `faultline lab down` removes the lab (coordinator killed)
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
     [ -n "$(rank_pids "$lab" h)" ] || nft list tables 2>/dev/null | grep -q "$lab"; then
    echo "left behind by lab $lab" >&2
    leftovers=$((leftovers + 1))
  fi
  rm -f "$db" "$db"-*
}

stats() {  # $1: label, $2: column; stdin: lines of "nic_ms rank_ms"
  awk -v c="$2" '{ print $c }' | sort -n | awk -v label="$1" -v limit=$(( lease * 1000 + 1000 )) '
    { v[NR] = $1; if ($1 > limit) over++ }
    END { printf "%s: n=%d median %d ms, p95 %d ms, max %d ms; over lease+1s: %d\n",
                 label, NR, v[int((NR + 1) / 2)], v[int(NR * 0.95 + 0.5) < 1 ? 1 : int(NR * 0.95 + 0.5)],
                 v[NR], over + 0 }'
}

: > "$tmp/lost.ms"
modes=${MODES:-coordinator cutoff agent}
for who in $modes; do
  : > "$tmp/$who.ms"
  for i in $(seq "$repeat"); do
    one "$who" >> "$tmp/$who.ms"
    printf '\r%s %d/%d' "$who" "$i" "$repeat" >&2
  done
  echo >&2
done
echo "h0.nic0 held down (lease ${lease}s): time from the kill or cut-off to nic0 up / h0's ranks gone"
for who in $modes; do
  stats "$who: NIC up" 1 < "$tmp/$who.ms"
  stats "$who: ranks gone" 2 < "$tmp/$who.ms"
done
echo "telemetry lost at a coordinator kill (kill time - newest stored sample): $(sort -n "$tmp/lost.ms" | awk '{ v[NR] = $1 } END { if (NR) printf "n=%d median %d ms, max %d ms", NR, v[int((NR + 1) / 2)], v[NR] }')"
echo "runs that left something behind: $leftovers"
[ "$leftovers" -eq 0 ]
