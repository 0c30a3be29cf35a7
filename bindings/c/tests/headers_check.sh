#!/usr/bin/env bash
# headers_check.sh CC CXX INCLUDE_DIR GENERATED_INCLUDE_DIR
# Each public header compiles on its own, first in a file, as C89 and C99 (-pedantic, warnings
# as errors) and as C++: a user may include tessera_tensor.h alone (it failed: TSR_API unknown).
set -euo pipefail
cc=$1 cxx=$2 include=$3 generated=$4
status=0
for header in "$include"/tessera/*.h "$generated"/tessera/*.h; do
  name=tessera/$(basename "$header")
  for std in c89 c99; do
    printf '#include <%s>\nint main(void) { return 0; }\n' "$name" |
      "$cc" -std=$std -Wall -Wextra -pedantic -Werror -I"$include" -I"$generated" -x c -fsyntax-only - ||
      { echo "FAILED: $name alone as $std"; status=1; }
  done
  printf '#include <%s>\nint main() { return 0; }\n' "$name" |
    "$cxx" -std=c++11 -Wall -Wextra -pedantic -Werror -I"$include" -I"$generated" -x c++ -fsyntax-only - ||
    { echo "FAILED: $name alone as C++11"; status=1; }
done
[ "$status" -eq 0 ] && echo "PASSED: every public header compiles alone as C89, C99 and C++11"
exit "$status"
