#!/usr/bin/env bash
# Runs tsr-topo on one case and checks key lines of its output.
# usage: check_topo.sh TSR_TOPO FIXTURE_DIR WORK_DIR CASE [TSRUN]
set -u
# One work folder per case: ctest runs the cases in parallel, and a shared hosts.txt was
# rewritten under a running case ("hostfile lists no hosts").
bin=$1 fixtures=$2 work=$3/$4 case=$4 tsrun=${5:-}
mkdir -p "$work"
out="$work/$case.out"
failures=0

# expect PATTERN: the last output must contain a line matching the extended regex.
expect() {
  if ! grep -Eq -- "$1" "$out"; then
    echo "FAIL [$case]: no line matches: $1"
    failures=$((failures + 1))
  fi
}
# run ARGS...: runs tsr-topo, stdout+stderr into $out; fails the case on a non-zero exit.
run() {
  if ! "$bin" "$@" >"$out" 2>&1; then
    echo "FAIL [$case]: tsr-topo $* exited with $?"; cat "$out"; exit 1
  fi
}
# run_fails ARGS...: tsr-topo must exit non-zero.
run_fails() {
  if "$bin" "$@" >"$out" 2>&1; then
    echo "FAIL [$case]: tsr-topo $* succeeded but should fail"; failures=$((failures + 1))
  fi
}
# run_exits CODE ARGS...: tsr-topo must exit with CODE (1: an error in what it read, 2: usage).
run_exits() {
  local want=$1 got=0
  shift
  "$bin" "$@" >"$out" 2>&1 || got=$?
  if [ "$got" -ne "$want" ]; then
    echo "FAIL [$case]: tsr-topo $* exited with $got, not $want"; failures=$((failures + 1))
  fi
}

dual=$fixtures/dual_socket_8gpu_4nic.xml
single=$fixtures/single_socket_2gpu_1nic.xml
cpu=$fixtures/cpu_only_2numa.xml
hostfile=$work/hosts.txt
printf '# two nodes\nnode01 slots=8\n\nnode02:8  # second\n' >"$hostfile"

case $case in
  dual)
    run --topology-xml "$dual"
    expect '^Machine: gpubox '
    expect 'Sockets: 2  NUMA nodes: 2  Cores: 16  PUs: 32  Memory: 512.0 GiB'
    expect 'GPUs: 8'
    expect 'NIC0  mlx5_0 +0000:16:00.0  NUMA 0  \(ib0\)'
    expect '^GPU0 +X +PIX +PXB +PXB +SYS +SYS +SYS +SYS +PIX +NODE +SYS +SYS +0-15 +0$'
    expect '^GPU4 +SYS +SYS +SYS +SYS +X +PIX +PHB +PHB +SYS +SYS +PIX +PHB +16-31 +1$'
    expect '^  PXB  = Connection traversing multiple PCIe bridges'
    expect 'local rank 4: numa -> NUMA 1, PUs 16-31 .*\[GPU4, NIC2\]'
    ;;
  dual_job)
    run --topology-xml "$dual" --hostfile "$hostfile" --bind core
    expect '^Job: 16 ranks on 2 hosts'
    expect '^  0 -> 1 -> 2 -> 3 -> 4 -> 5 -> 6 -> 7 ==> 8 -> .* -> 15 ==> \(0\)$'
    expect 'host-crossing edges: 2$'
    expect '^Torus: 8 x 2 \(2 hosts x 8 local ranks\)'
    expect 'row 1 \[node02\]: 8 9 10 11 12 13 14 15$'
    expect 'local rank 1: core -> NUMA 0, PUs 4-7'
    # A host list reads as tsrun reads it: the same job.
    run --topology-xml "$dual" -H node01:8,node02:8
    expect '^Job: 16 ranks on 2 hosts \(-H node01:8,node02:8;'
    expect 'row 1 \[node02\]: 8 9 10 11 12 13 14 15$'
    run --topology-xml "$dual" -H node01:8,node02:8 --json
    expect '"job": \{"host_list": "node01:8,node02:8", "np": 16'
    # Bindings are a host's ranks of the job (4), not one per GPU of the machine (8).
    run --topology-xml "$dual" -H node01:4,node02:4
    expect '^Binding \(TSR_BIND=numa, 4 local ranks\):$'
    expect 'local rank 3: numa'
    run --topology-xml "$dual" -H node01:4,node02:4 --local-ranks 2
    expect '^Binding \(TSR_BIND=numa, 2 local ranks\):$'
    run --topology-xml "$dual" -H node01:4,node02:4 --json
    expect '"binding": \{"mode": "numa", "local_ranks": 4,'
    ;;
  local_names)
    # Names of this machine are one host, as tsrun runs them (they were drawn as two hosts).
    run --topology-xml "$single" -H localhost:2,127.0.0.1:2
    expect '^Job: 4 ranks on 1 host \(-H localhost:2,127.0.0.1:2;'
    expect '^  127.0.0.1: this machine, as localhost \(one host, as tsrun runs them\)$'
    expect '^  host localhost: ranks 0 1 2 3$'
    run --topology-xml "$single" -H localhost:1,node01:2,127.0.0.1:1 --json
    expect '"hosts": \[\{"name": "localhost", "ranks": \[0, 3\]\}, \{"name": "node01", "ranks": \[1, 2\]\}\]'
    ;;
  same_hosts_as_tsrun)
    # The ranks each host runs, as tsrun --dry-run starts them and as tsr-topo draws them: the
    # same groups for lists mixing this machine's names and others.
    [ -n "$tsrun" ] || { echo "FAIL [$case]: no tsrun given"; exit 1; }
    : >"$out"
    for list in localhost:2,127.0.0.1:2 localhost:1,node01:2,127.0.0.1:1,node02:1 "$(hostname):2,localhost:2" \
                node01:2,node02:2; do
      topo=$("$bin" --topology-xml "$single" -H "$list" | sed -n 's/^  host [^ ]*: ranks //p' | sort)
      launched=$("$tsrun" -H "$list" --dry-run /bin/true 2>&1 |
        awk '/^rank [0-9]+ host / { m = ($5 == "(local)") ? "this machine" : $4; r[m] = r[m] (r[m] == "" ? "" : " ") $2 }
             END { for (m in r) print r[m] }' | sort)
      echo "-H $list: tsr-topo [${topo//$'\n'/|}], tsrun [${launched//$'\n'/|}]" >>"$out"
      if [ -z "$topo" ] || [ "$topo" != "$launched" ]; then
        echo "FAIL [$case]: -H $list: tsr-topo hosts [${topo//$'\n'/|}], tsrun [${launched//$'\n'/|}]"
        failures=$((failures + 1))
      fi
    done
    ;;
  single)
    run --topology-xml "$single" --hostfile "$hostfile" -np 7
    expect 'Sockets: 1  NUMA nodes: 1  Cores: 8  PUs: 16  Memory: 64.0 GiB'
    expect '^GPU0 +X +PIX +PHB '
    expect '^NIC0 +PHB +PHB +X '
    expect '^Job: 7 ranks on 1 host'
    expect 'Torus: not available: N=7 is prime'
    ;;
  cpu_only)
    run --topology-xml "$cpu" --hostfile "$hostfile" -np 12
    expect 'GPUs: none'
    expect 'NUMA 1: 16.0 GiB, 4 cores, PUs 4-7'
    # node01's 8 ranks overflow the NIC's NUMA node: round-robin over both.
    expect '^Binding \(TSR_BIND=numa, 8 local ranks\):$'
    expect 'local rank 0: numa -> NUMA 0, PUs 0-3 \(round-robin over 2 NUMA'
    run --topology-xml "$cpu" --hostfile "$hostfile" -np 12 --local-ranks 2
    expect 'local rank 0: numa -> NUMA 1, PUs 4-7 \(NIC eno1'
    expect 'Torus: not available: hosts hold different numbers of ranks \(node01: 8, node02: 4\)'
    ;;
  local)
    run
    expect '^Machine: .*\(local machine\)$'
    expect 'Sockets: [0-9]+  NUMA nodes: [1-9][0-9]*  Cores: [1-9]'
    expect '^Affinity matrix:$'
    expect '^Binding \(TSR_BIND=numa, [0-9]+ local ranks?\):$'
    expect 'local rank 0: numa'
    run --json
    expect '"source": "local machine"'
    expect '"binding": \{"mode": "numa"'
    ;;
  json)
    run --topology-xml "$dual" --hostfile "$hostfile" --json
    expect '^\{$'
    expect '"hostname": "gpubox"'
    expect '"label": "GPU7", "name": "cuda7"'
    expect '"host_crossings": 2'
    expect '"torus": \{"available": true, "x": 8, "y": 2'
    if command -v python3 >/dev/null; then
      python3 -m json.tool "$out" >/dev/null || { echo "FAIL [$case]: not valid JSON"; failures=$((failures + 1)); }
    fi
    ;;
  dot)
    run --topology-xml "$dual" --hostfile "$hostfile" --dot
    expect '^digraph tessera_job \{'
    expect 'r7 -> r8 \[color=red, penwidth=2.5\];'
    expect 'r0 -> r8 \[style=dashed'
    run --topology-xml "$dual" --dot
    expect '^graph tessera_machine \{'
    expect 'gpu0 -- nic0 \[label="PIX"\];'
    ;;
  dump_xml)
    run --topology-xml "$dual" --dump-xml "$work/dumped.xml"
    expect "wrote $work/dumped.xml"
    run --topology-xml "$work/dumped.xml"
    expect 'GPUs: 8'
    expect 'NICs: 4'
    ;;
  errors)
    echo 'not xml at all' >"$work/garbage.xml"
    run_fails --topology-xml "$work/garbage.xml"
    expect "^tsr-topo: error: topology XML file '.*garbage.xml' is not hwloc XML"
    head -c 400 "$dual" >"$work/truncated.xml"
    run_fails --topology-xml "$work/truncated.xml"
    expect "^tsr-topo: error: topology XML file '.*truncated.xml' is not valid hwloc XML"
    run_fails --topology-xml "$work/missing.xml"
    expect "cannot be read"
    # A wrong path is an error naming the file, not a read without end.
    run_fails --topology-xml /dev/zero
    expect "topology XML file '/dev/zero' is too large"
    run_fails --topology-xml "$dual" --hostfile /dev/zero
    expect "hostfile '/dev/zero' is too large"
    printf 'node01 slots=two\n' >"$work/badhosts"
    run_fails --topology-xml "$dual" --hostfile "$work/badhosts"
    expect "badhosts:1: bad slot count 'two'"
    # Hosts tsrun refuses are refused here too (a name ssh would read as an option).
    printf 'node01\n-Fevil slots=2\n' >"$work/optionhost"
    run_fails --topology-xml "$dual" --hostfile "$work/optionhost"
    expect "optionhost:2: bad host name '-Fevil'"
    run_fails --topology-xml "$dual" -H node01:2,,node02
    expect "item 2: empty host"
    run_exits 2 --topology-xml "$dual" -np 4
    expect "-np needs --hostfile or -H"
    run_exits 2 --json --dot
    expect "--json and --dot exclude each other"
    run_exits 1 --topology-xml "$dual" --hostfile "$work/badhosts"
    run_fails --topology-xml "$dual" --hostfile "$hostfile" -np 17
    expect "-np 17 exceeds the 16 slots of the hostfile$"
    run_exits 1 --topology-xml "$dual" -H a:2,b:2 -np 9
    expect "-np 9 exceeds the 4 slots of the host list$"
    run_exits 2 --bind socket
    expect "bind mode 'socket' is not one of none\|numa\|core"
    ;;
  *)
    echo "unknown case $case"; exit 2 ;;
esac
if [ "$failures" -ne 0 ]; then
  echo "---- output of the last run ----"; cat "$out"; exit 1
fi
echo "ok [$case]"
