#!/usr/bin/env bash
# The soak: N runs in a row on the local lab, each killed (kill -9) at a random moment in one
# of its parts, each followed by a check that nothing is left.
#   bench/soak.sh [N] [SEED]          root; from the repository root after a build
# Each run is, in turn: a generated scenario on bench/configs/lab2.yaml with one fault of a
# kind drawn from the host- and switch-side kinds, a shipped scenario of the suites
# (configs/scenarios: nic_flap, blackhole, pfc_storm, container_kill), or a command job (a
# Python training loop). A random 0.5-6 s after the start, one of these is SIGKILLed: the
# coordinator, the agent of h0, a rank (a process in a container's cgroup), the fabric agent;
# a run that ended before the kill is counted as such; or the database server: the store is
# a real PostgreSQL server the soak starts for itself (as nobody, on a unix socket in its
# temporary directory, no TCP port), whose postmaster is SIGKILLed and started again 1-3 s
# later (the runs' writers spool meanwhile and replay: docs/store.md).
# After each run (and, when the coordinator was killed, `faultline runs` as the next command,
# which marks the run aborted and removes its lab, then the agents' own exit on their lapsed
# lease) it checks: no namespace, link, nft table, cgroup, process, mount or run directory of
# that lab or run, and no spool of it (a spool the run said it kept is replayed with
# `faultline store replay`, and left behind when that fails); the run has a final status
# (passed, failed, aborted or error); an analysed run whose database was killed lost no row
# (its telemetry_dropped metric is 0). The last lines are the figures; exit 1 when anything was
# left, a run has no final status or lost rows.
set -uo pipefail
cd "$(dirname "$0")/.."
n=${1:-100}
RANDOM=${2:-1}
fl=build/bin/faultline
tmp=$(mktemp -d)
chmod 755 "$tmp"  # the database server runs as nobody
state=${FAULTLINE_STATE_DIR:-/run/faultline}
pgbin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
[ -x "$pgbin/initdb" ] || { echo "soak: no PostgreSQL (apt-get install postgresql)" >&2; exit 2; }
pg="$tmp/pg"
as_nobody() { setpriv --reuid=65534 --regid=65534 --clear-groups -- "$@"; }
pg_start() {  # retried: a killed postmaster's backends may hold its shared memory a moment
  local t
  for t in $(seq 30); do
    as_nobody "$pgbin/pg_ctl" -D "$pg/data" -l "$pg/log" -w -t 60 -o \
      "-c listen_addresses='' -k $pg -p 5432 -c fsync=off -c full_page_writes=off" \
      start >/dev/null 2>&1 && return 0
    sleep 1
  done
  return 1
}
mkdir "$pg" && chown 65534:65534 "$pg"
as_nobody "$pgbin/initdb" -D "$pg/data" -U faultline --auth=trust -E UTF8 --locale=C \
  --no-sync --no-instructions >/dev/null 2>&1 || { echo "soak: initdb failed" >&2; exit 2; }
pg_start || { echo "soak: the PostgreSQL server did not start: $(tail -3 "$pg/log")" >&2; exit 2; }
trap 'as_nobody "$pgbin/pg_ctl" -D "$pg/data" -m immediate -w stop >/dev/null 2>&1; rm -rf "$tmp"' EXIT
db="postgresql://faultline@${pg//\//%2F}:5432/postgres"
psql_q() { as_nobody "$pgbin/psql" -X -qtA -h "$pg" -p 5432 -U faultline -d postgres -c "$1" 2>/dev/null; }
cg2=$(awk '$9 == "cgroup2" { print $5; exit }' /proc/self/mountinfo)
now_ms() { date +%s%3N; }

# Pids whose command line holds all of the arguments (words, space-joined).
pids_with() {
  local p cmd
  for p in /proc/[0-9]*; do
    cmd=$( { tr '\0' ' ' < "$p/cmdline"; } 2>/dev/null) || continue
    local all=1 w
    for w in "$@"; do case "$cmd" in *"$w"*) ;; *) all=0 ;; esac; done
    [ "$all" = 1 ] && echo "${p#/proc/}"
  done
}
rank_pids() {  # of lab $1
  local f
  for f in $(find "$cg2" -maxdepth 4 -path "*fl-$1*" -name cgroup.procs 2>/dev/null); do
    cat "$f" 2>/dev/null
  done
}

kinds=(nic_port_flap link_blackhole packet_loss bandwidth_throttle pfc_storm tor_port_down
       container_kill)
shipped=(nic_flap blackhole pfc_storm container_kill)
victims=(coordinator agent rank fabric database)

scenario() {  # $1: index; prints the scenario path
  local i=$1 p="$tmp/s$i.yaml"
  case $((i % 5)) in
    3) echo "configs/scenarios/${shipped[$(( (i / 5) % ${#shipped[@]} ))]}.yaml"; return ;;
    4)
      cat > "$tmp/loop.py" <<'PY'
import os, time
with open(os.environ['FAULTLINE_PROGRESS'], 'a', buffering=1) as p:
    i = 0
    while True:
        time.sleep(0.02)
        p.write('it=%d bytes=4096 ok=1\n' % i)
        i += 1
PY
      printf 'name: soak_cmd\nseed: %d\nlab: {topology: bench/configs/lab2.yaml}\njob:\n  command: [/usr/bin/python3, %s]\n  duration: 6s\n  warmup_iterations: 5\nfaults:\n  - {kind: nic_port_flap, target: h0.nic0, at: 1s, duration: 2s}\n' \
        "$i" "$tmp/loop.py" > "$p" ;;
    *)
      local k=${kinds[$((RANDOM % ${#kinds[@]}))]} params="" target="target_class: nic"
      case $k in
        packet_loss) params=", params: {percent: 5}" ;;
        bandwidth_throttle) params=", params: {rate: 100mbit}" ;;
        pfc_storm) params=", params: {mode: stall}" ;;
        tor_port_down) target="target_class: tor_port" ;;
        container_kill) target="target_class: container" ;;
      esac
      local restart="" failover=""
      if [ "$k" = container_kill ]; then
        restart="restart: {enabled: true, max_restarts: 1}"
        failover="  failover: false\n"
      fi
      printf "name: soak_%s\nseed: %d\nlab: {topology: bench/configs/lab2.yaml}\njob:\n  size: 64KiB\n  duration: 6s\n  warmup_iterations: 5\n  collective_timeout: 5s\n${failover}faults:\n  - {kind: %s, %s, at: 1s, duration: 2s%s}\n%s\n" \
        "$k" "$i" "$k" "$target" "$params" "$restart" > "$p" ;;
  esac
  echo "$p"
}

leftovers=0 nostatus=0 ended_first=0 lost=0 replayed=0
declare -A killed statuses by_victim
for i in $(seq "$n"); do
  s=$(scenario "$i")
  : > "$tmp/err"
  "$fl" run "$s" --db "$db" --lease 2 >"$tmp/out" 2>"$tmp/err" &
  coord=$!
  disown "$coord" 2>/dev/null
  # the run's id and lab once it has them
  run="" deadline=$(( $(now_ms) + 60000 ))
  while [ -z "$run" ] && [ "$(now_ms)" -lt "$deadline" ] && kill -0 "$coord" 2>/dev/null; do
    run=$(grep -o 'faultline run r[0-9-]*[0-9a-f]*' "$tmp/err" | head -1 | cut -d' ' -f3)
    [ -n "$run" ] || sleep 0.05
  done
  if [ -z "$run" ]; then
    echo "run $i ($s): no run started: $(tail -2 "$tmp/err" | tr '\n' ' ')" >&2
    nostatus=$((nostatus + 1))
    kill -INT "$coord" 2>/dev/null
    continue
  fi
  lab="fl${run: -6}"
  sleep "$(( 500 + RANDOM % 5500 ))e-3"
  victim=${victims[$((RANDOM % ${#victims[@]}))]}
  pid=""
  case $victim in
    coordinator) kill -0 "$coord" 2>/dev/null && pid=$coord ;;
    agent) pid=$(pids_with faultline-agent "--host h0 " "--lab $lab " | head -1) ;;
    fabric) pid=$(pids_with faultline-agent "--host fabric " "--lab $lab " | head -1) ;;
    rank) pid=$(rank_pids "$lab" | head -1) ;;
    database) kill -0 "$coord" 2>/dev/null && pid=$(head -1 "$pg/data/postmaster.pid" 2>/dev/null) ;;
  esac
  if [ -n "$pid" ]; then
    kill -9 "$pid" 2>/dev/null
    killed[$victim]=$(( ${killed[$victim]:-0} + 1 ))
    if [ "$victim" = database ]; then
      sleep "$(( 1 + RANDOM % 3 ))"
      pg_start || echo "run $i: the database server did not start again" >&2
    fi
  else
    ended_first=$((ended_first + 1))
    victim=none
  fi
  # the run's end, then what an operator's next command does
  d=$(( $(now_ms) + 180000 ))
  while kill -0 "$coord" 2>/dev/null && [ "$(now_ms)" -lt "$d" ]; do sleep 0.1; done
  if kill -0 "$coord" 2>/dev/null; then
    echo "run $i ($s): still running after 180 s; interrupting it" >&2
    kill -INT "$coord"; sleep 10
  fi
  if [ "$victim" = coordinator ]; then
    "$fl" runs --db "$db" >/dev/null 2>&1
    d=$(( $(now_ms) + 30000 ))
    while [ -n "$(pids_with faultline-agent "--lab $lab ")" ] && [ "$(now_ms)" -lt "$d" ]; do
      sleep 0.1
    done
  fi
  # what is left of this run
  left=""
  ip netns list 2>/dev/null | grep -q "fl-$lab-" && left+=" netns"
  ip -o link show 2>/dev/null | grep -q "$lab" && left+=" link"
  nft list tables 2>/dev/null | grep -q "$lab" && left+=" nft"
  find "$cg2" -maxdepth 3 -name "fl-$lab*" 2>/dev/null | grep -q . && left+=" cgroup"
  [ -n "$(pids_with "$lab")" ] && left+=" process"
  [ -n "$(rank_pids "$lab")" ] && left+=" rank"
  grep -q "$lab" /proc/self/mountinfo && left+=" mount"
  [ -e "$state/runs/$run" ] && left+=" run-dir"
  spool="$state/spool/$run.spool"
  if [ -e "$spool" ]; then
    if grep -q "faultline store replay $spool" "$tmp/err"; then
      "$fl" store replay "$spool" --db "$db" >/dev/null 2>&1 || left+=" spool"
      replayed=$((replayed + 1))
    else
      left+=" spool"
    fi
  fi
  if [ -n "$left" ]; then
    echo "run $i ($s, kill $victim): left behind:$left" >&2
    leftovers=$((leftovers + 1))
    "$fl" lab down "$lab" >/dev/null 2>&1 || true
  fi
  st=$(psql_q "SELECT status FROM runs WHERE id = '$run'")
  if [ "$victim" = database ] && { [ "$st" = passed ] || [ "$st" = failed ]; }; then
    dropped=$(psql_q "SELECT value FROM metrics WHERE run_id = '$run' AND name = 'telemetry_dropped'")
    if [ "${dropped%.*}" != 0 ]; then
      echo "run $i ($s, kill $victim): telemetry_dropped '$dropped'" >&2
      lost=$((lost + 1))
    fi
  fi
  case $st in
    passed|failed|aborted|error)
      statuses[$st]=$(( ${statuses[$st]:-0} + 1 ))
      by_victim[$victim]+=" $st" ;;
    *) echo "run $i ($s, kill $victim): status '$st'" >&2; nostatus=$((nostatus + 1)) ;;
  esac
  printf '\rsoak %d/%d' "$i" "$n" >&2
done
echo >&2
echo "soak: $n runs; killed: coordinator ${killed[coordinator]:-0}, agent ${killed[agent]:-0}," \
     "rank ${killed[rank]:-0}, fabric agent ${killed[fabric]:-0}," \
     "database server ${killed[database]:-0}; ended before the kill $ended_first"
echo "final status: passed ${statuses[passed]:-0}, failed ${statuses[failed]:-0}," \
     "aborted ${statuses[aborted]:-0}, error ${statuses[error]:-0}; none $nostatus"
for v in coordinator agent rank fabric database none; do
  [ -n "${by_victim[$v]:-}" ] || continue
  echo "  kill $v:$(tr ' ' '\n' <<<"${by_victim[$v]}" | sed '/^$/d' | sort | uniq -c |
    awk '{ printf " %s %s", $2, $1 }')"
done
echo "runs that left something behind: $leftovers; spools replayed after the run: $replayed"
echo "analysed runs whose database was killed that lost rows: $lost"
[ "$leftovers" -eq 0 ] && [ "$nostatus" -eq 0 ] && [ "$lost" -eq 0 ]
