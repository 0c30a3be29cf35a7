#!/usr/bin/env bash
# Losing a host mid-job on the emulated cluster, two ways (MODE):
#   cut:  its link taken down (no FIN, no RST, nothing more from it): every other rank's pending
#         allreduce must fail within TIMEOUT_MS with TSR_ERR_TIMEOUT naming the lost rank and
#         its host, and the job must end.
#   kill: its rank SIGKILLed (the kernel closes its connections): every other rank must fail
#         with TSR_ERR_PEER_FAILED naming it and its host, logged within 8 s of the kill (it is
#         noticed, not waited out), the job must end within tsrun's grace after that, and
#         tsrun must exit 137 naming it.
#   cluster_partition_check.sh BUILD_DIR [MODE [HOSTS [RATE [TIMEOUT_MS [RANKS_PER_HOST]]]]]
# The lost host is tsr{HOSTS/2}; "the lost rank" is its first rank. With several ranks per host
# the ranks of the lost host share memory (UCX shared memory, no UCX failure handling there):
# cut: the other hosts' ranks must name a rank of the lost host; kill: every other rank, its
# host-mates included, must name the killed one.
# Skipped (exit 77) where network namespaces cannot be made (not root, no ip netns).
set -uo pipefail
build=$1 mode=${2:-cut} hosts=${3:-4} rate=${4:-1gbit} timeout_ms=${5:-4000} per=${6:-1}
n=$((hosts * per)) lost_host=$((hosts / 2))
lost=$((lost_host * per))  # ranks fill the hosts' slots in order
here=$(cd "$(dirname "$0")" && pwd)
. "$here/cluster_common.sh"
cluster_up partition "$hosts" "$rate" "$per"
# TCP between hosts (UCX's shared memory would bypass the emulated links); host-mates also get
# UCX's shared memory, which Tessera uses between ranks of one host only.
tls=tcp,self
[ "$per" = 1 ] || tls=tcp,self,sm
# Enough 16 MiB allreduces to outlast the test by far: only the failure can end the job early.
# The ranks ignore SIGTERM (inherited through exec), so that tsrun, which stops the others
# once one has failed, cannot cut a rank short before it reports what it saw.
setsid timeout 120 "$build/bin/tsrun" --hostfile "$hostfile" --rsh "$net rsh" --grace 9 \
  -x UCX_TLS="$tls" -x UCX_NET_DEVICES=net0 -x TSR_TIMEOUT_MS="$timeout_ms" \
  sh -c 'trap "" TERM; exec "$0" "$@"' "$build/bin/tsr-bench" -b 16M -e 16M -n 2000 -w 1 -c 0 >"$log" 2>&1 &
child=$!

# Cut once the ranks are in the sweep (its table header printed), one second into it.
for _ in $(seq 1 600); do
  grep -q 'size(B)' "$log" && break
  kill -0 "$child" 2>/dev/null || break
  sleep 0.1
done
grep -q 'size(B)' "$log" || { cat "$log"; echo "FAIL: the job never started its sweep"; exit 1; }
sleep 1
kill -0 "$child" 2>/dev/null || { cat "$log"; echo "FAIL: the job ended before the cut"; exit 1; }
cut=$(date +%s%N)
# The same moment as the ranks' log lines stamp it (local time of day, milliseconds).
cut_clock=$(date -d "@${cut:0:10}.${cut:10:3}" +%H:%M:%S.%3N)
if [ "$mode" = cut ]; then
  ip -n "tsr$lost_host" link set net0 down
else
  # The lost rank's process: the tsr-bench of this job (its session) whose environment says
  # TSR_RANK=$lost; no other job's process can be picked.
  victim=
  for p in $(pgrep -s "$child" -x tsr-bench); do
    tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -qx "TSR_RANK=$lost" && victim=$p
  done
  [ -n "$victim" ] || { cat "$log"; echo "FAIL: no tsr-bench process of rank $lost"; exit 1; }
  kill -KILL "$victim"
fi
wait "$child"
status=$?
child=
took_ms=$((($(date +%s%N) - cut) / 1000000))
cat "$log"
echo "job ended ${took_ms} ms after the cut, status $status"

fail=0
[ "$status" != 0 ] || { echo "FAIL: the job exited 0 after losing rank $lost"; fail=1; }
if [ "$mode" = cut ]; then
  # The timeout, plus the time tsrun takes to stop the others once one rank has failed.
  limit_ms=$((timeout_ms + 8000)) code=TSR_ERR_TIMEOUT
else
  # Noticed through the closed connections, by every other rank within 8 s of the kill: its
  # first log line naming the lost rank (the runtime's error, stamped to the millisecond when
  # it saw the failure or heard of it from a peer). The job's end also waits for the processes
  # to wind down (a failed call returns once its sends have ended, the ranks exit, tsrun
  # reaps them), for which tsrun gives them its grace (9 s) before it ends them itself.
  limit_ms=$((8000 + 9000)) code=TSR_ERR_PEER_FAILED
  [ "$status" = 137 ] || { echo "FAIL: tsrun exited $status, not 137 (the killed rank's SIGKILL)"; fail=1; }
  # A remote rank's SIGKILL reaches tsrun through the rsh agent's shell as status 137.
  grep -E "^tsrun: rank $lost \(host tsr$lost_host\) exited with status 137 \(killed by SIGKILL on its host" "$log" >/dev/null ||
    { echo "FAIL: tsrun did not name rank $lost (tsr$lost_host) as the one that ended first"; fail=1; }
fi
[ "$took_ms" -le "$limit_ms" ] || { echo "FAIL: the job took ${took_ms} ms to end (limit ${limit_ms} ms)"; fail=1; }
ms_of_day() {
  local h m s
  IFS=: read -r h m s <<<"$1"
  echo $(((10#$h * 3600 + 10#$m * 60 + 10#${s%.*}) * 1000 + 10#${s#*.}))
}
for ((r = 0; r < n; r++)); do
  [ "$r" = "$lost" ] && continue
  if [ "$mode" = cut ]; then
    # A cut host's ranks are cut off together; the others may name any of them.
    [ $((r / per)) = "$lost_host" ] && continue
    named="rank [0-9]+ \(tsr$lost_host\)"
  else
    named="rank $lost \(tsr$lost_host\)"
  fi
  grep -E "^\[$r\] .*$code.*$named" "$log" >/dev/null ||
    { echo "FAIL: rank $r did not report $code naming $named"; fail=1; }
  [ "$mode" = kill ] || continue
  stamp=$(grep -oE "^\[$r\] \[[0-9:.]+\] .*$code.*$named" "$log" | head -1 | cut -d' ' -f2 | tr -d '[]')
  [ -n "$stamp" ] || { echo "FAIL: rank $r logged no failure naming $named"; fail=1; continue; }
  noticed=$(($(ms_of_day "$stamp") - $(ms_of_day "$cut_clock")))
  [ "$noticed" -ge 0 ] || noticed=$((noticed + 86400000))  # past midnight
  echo "rank $r noticed ${noticed} ms after the kill"
  [ "$noticed" -le 8000 ] || { echo "FAIL: rank $r noticed the kill after ${noticed} ms (limit 8000 ms)"; fail=1; }
done
exit $fail
