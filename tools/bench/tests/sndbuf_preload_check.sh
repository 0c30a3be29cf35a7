#!/usr/bin/env bash
# The peers' send-buffer shim (tools/bench/peers/sndbuf_preload.c, cluster.sh PEER_SNDBUFS):
# with PRELOAD_SNDBUF_BYTES=N every TCP socket a process creates, and every socket accepted
# from it, has SO_SNDBUF = 2N (the kernel doubles it); unset or invalid, sockets are untouched.
#   sndbuf_preload_check.sh C_COMPILER PYTHON
set -euo pipefail
cc=$1 py=$2
here=$(cd "$(dirname "$0")" && pwd)
dir=$(mktemp -d /tmp/tsr-sndbuf-check.XXXXXX)
trap 'rm -rf "$dir"' EXIT
"$cc" -shared -fPIC -O2 -Wall -Wextra -Werror -o "$dir/shim.so" "$here/../peers/sndbuf_preload.c" -ldl
# Prints "created accepted connected udp" send buffers over loopback.
probe() {
  "$py" -c '
import socket
l = socket.socket(); l.bind(("127.0.0.1", 0)); l.listen()
c = socket.create_connection(l.getsockname()); a, _ = l.accept()
u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
get = lambda s: s.getsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF)
print(get(socket.socket()), get(a), get(c), get(u))'
}
# 98304 doubles to 196608, which no kernel default here is (checked below).
default=$(probe)
with=$(LD_PRELOAD="$dir/shim.so" PRELOAD_SNDBUF_BYTES=98304 probe)
bad=$(LD_PRELOAD="$dir/shim.so" PRELOAD_SNDBUF_BYTES=96k probe)
unset_=$(LD_PRELOAD="$dir/shim.so" probe)
echo "default: $default; 98304: $with; 96k: $bad; unset: $unset_"
read -r d_created _ _ d_udp <<<"$default"
case " $default " in *" 196608 "*) echo "FAIL: a default send buffer is already 196608: pick another size"; exit 1;; esac
[ "$with" = "196608 196608 196608 $d_udp" ] || { echo "FAIL: with 98304 the TCP sockets should have 196608 and UDP its default"; exit 1; }
for run in "$bad" "$unset_"; do
  # Untouched: the new socket as by default, and no socket at the shim's size (the connected
  # ones' autotuned sizes may differ between runs).
  read -r created _ _ udp <<<"$run"
  [ "$created" = "$d_created" ] && [ "$udp" = "$d_udp" ] || { echo "FAIL: sockets changed: $run"; exit 1; }
  case " $run " in *" 196608 "*) echo "FAIL: the shim acted without a valid value: $run"; exit 1;; esac
done
echo "OK"
