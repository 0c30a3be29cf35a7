#!/usr/bin/env bash
# install_check.sh CMAKE BUILD_DIR SOURCE_DIR CC PYTHON SANITIZED
# `cmake --install` into a fresh prefix, then use only what landed there: the tools, a C
# trainer built with `pkg-config --cflags --libs tessera` and one built by its own CMake project
# through `find_package(Tessera)` (examples/c/standalone; also against the build tree), each run
# under the installed tsrun, one version everywhere (tsr-info, the header, the SONAME, Python),
# and the Python package finding the installed library by itself. Exit 77 (skipped) in sanitizer
# builds: a program built outside CMake would need the sanitizer runtime too.
set -euo pipefail
cmake=$1 build=$(cd "$2" && pwd) src=$(cd "$3" && pwd) cc=$4 python=$5 sanitized=$6
case "$sanitized" in ON|on|1|TRUE|true) echo "skipped: sanitizer build"; exit 77 ;; esac
prefix=$(mktemp -d /tmp/tsr-install.XXXXXX)
trap 'rm -rf "$prefix"' EXIT
fail() { echo "FAILED: $*" >&2; exit 1; }

"$cmake" --install "$build" --prefix "$prefix" >/dev/null
libdir=$(dirname "$(find "$prefix" -name libtessera.so -print -quit)")
[ -n "$libdir" ] && [ "$libdir" != . ] || fail "no libtessera.so under $prefix"
for f in bin/tsrun bin/tsr-bench bin/tsr-topo bin/tsr-check include/tessera/tessera.h include/tessera/tessera_version.h \
         include/tessera/tessera_tensor.h include/tessera/tessera_selsync.h include/tessera/tessera_covap.h; do
  [ -e "$prefix/$f" ] || fail "$f is not installed"
done
[ -f "$libdir/pkgconfig/tessera.pc" ] || fail "no pkgconfig/tessera.pc beside the library"
[ -f "$libdir/tessera/python/tessera/__init__.py" ] || fail "the Python package is not installed"

# A trainer from the examples, built against the prefix only (the relocatable .pc gives -I/-L).
flags=$(PKG_CONFIG_PATH="$libdir/pkgconfig" pkg-config --cflags --libs tessera)
case "$flags" in *"$prefix"*) ;; *) fail "pkg-config gave '$flags', not the prefix $prefix" ;; esac
"$cc" -O2 -I"$src/examples/c" "$src/examples/c/train_linear.c" $flags -lm -Wl,-rpath,"$libdir" \
  -o "$prefix/train_linear"
loaded=$(ldd "$prefix/train_linear")  # not piped into grep -q: with pipefail, an early exit fails
grep -q "$libdir/libtessera.so" <<<"$loaded" || fail "the trainer does not load the installed library: $loaded"
out=$("$prefix/bin/tsrun" -np 2 "$prefix/train_linear" 100 2>&1) || fail "installed trainer: $out"
grep -q "^\[0\] TRAINED: 2 ranks" <<<"$out" || fail "no TRAINED line: $out"

# The CMake package: a project of the user's own finds it in the prefix, and in the build tree.
for where in "-DCMAKE_PREFIX_PATH=$prefix" "-DTessera_DIR=$build"; do
  work="$prefix/standalone-${where%%=*}"
  log=$("$cmake" -S "$src/examples/c/standalone" -B "$work" -DCMAKE_C_COMPILER="$cc" -DCMAKE_BUILD_TYPE=Release \
        "$where" 2>&1 && "$cmake" --build "$work" 2>&1) || fail "find_package(Tessera) with $where: $log"
  out=$("$prefix/bin/tsrun" -np 2 "$work/train_linear" 100 2>&1) || fail "the find_package trainer ($where): $out"
  grep -q "^\[0\] TRAINED: 2 ranks" <<<"$out" || fail "no TRAINED line from the find_package trainer: $out"
done
# A version the package does not match is refused (before 1.0 only the same MAJOR.MINOR matches).
mkdir -p "$prefix/wants-9"
printf 'cmake_minimum_required(VERSION 3.20)\nproject(w C)\nfind_package(Tessera 9.0 REQUIRED)\n' \
  >"$prefix/wants-9/CMakeLists.txt"
if log=$("$cmake" -S "$prefix/wants-9" -B "$prefix/wants-9/b" -DCMAKE_PREFIX_PATH="$prefix" 2>&1); then
  fail "find_package(Tessera 9.0) was satisfied by the installed version"
fi
grep -q "TesseraConfig.cmake" <<<"$log" || fail "find_package(Tessera 9.0) failed without naming the package: $log"

# One version: tsr-info's, the header's, the SONAME's.
version=$("$prefix/bin/tsr-info" --version | grep -oE '[0-9]+\.[0-9]+\.[0-9]+$') || fail "tsr-info --version"
header=$(grep -oE 'TSR_VERSION_STRING "[0-9.]+"' "$prefix/include/tessera/tessera_version.h" | grep -oE '[0-9.]+')
[ "$header" = "$version" ] || fail "tessera_version.h says $header, tsr-info $version"
soname=$(objdump -p "$libdir/libtessera.so" | awk '/SONAME/ {print $2}')
[ "$soname" = "libtessera.so.${version%.*}" ] || fail "SONAME $soname, not libtessera.so.${version%.*}"

# The installed Python package loads the installed library (no TESSERA_LIBRARY, no checkout).
found=$(cd "$prefix" && env -u TESSERA_LIBRARY PYTHONPATH="$libdir/tessera/python" "$python" -c \
  'import tessera._capi as c; print(c._library_path())' 2>&1) || fail "import tessera: $found"
[ "$found" = "$libdir/libtessera.so" ] || fail "Python loaded '$found', not $libdir/libtessera.so"
pyversion=$(cd "$prefix" && env -u TESSERA_LIBRARY PYTHONPATH="$libdir/tessera/python" "$python" -c \
  'import tessera; print(tessera.__version__)' 2>&1)
[ "$pyversion" = "$version" ] || fail "tessera.__version__ is '$pyversion', not $version"
if "$python" -c 'import numpy' 2>/dev/null; then
  out=$(cd "$prefix" && "$prefix/bin/tsrun" -np 2 -x PYTHONPATH="$libdir/tessera/python" \
        "$python" "$src/examples/python/train_linear.py" 100 2>&1) || fail "installed Python trainer: $out"
fi

# No RUNPATH with an empty entry, built or installed: the loader reads one as the working
# directory, searched before the system's folders (CMake left one on everything it installs).
for f in "$build"/bin/* "$build"/lib/*.so* "$build"/lib/torch/*/*.so "$prefix"/bin/* "$libdir"/*.so* \
         $(find "$libdir/tessera" -name '*.so'); do
  [ -f "$f" ] && head -c 4 "$f" | grep -q ELF || continue
  path=$(readelf -d "$f" | sed -n 's/.*(R[UN]*PATH).*\[\(.*\)\]/\1/p')
  case ":$path:" in *::*) [ -n "$path" ] && fail "$f has the RUNPATH '$path': an empty entry (the working directory)" ;; esac
done
echo "PASSED: installed into $prefix and used from there"
