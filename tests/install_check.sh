#!/usr/bin/env bash
# install_check.sh CMAKE BUILD_DIR SOURCE_DIR CC PYTHON SANITIZED
# `cmake --install` into a fresh prefix, then use only what landed there: the tools, a C
# trainer built with `pkg-config --cflags --libs tessera` and run under the installed tsrun, and
# the Python package finding the installed library by itself. Exit 77 (skipped) in sanitizer
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
for f in bin/tsrun bin/tsr-bench bin/tsr-topo bin/tsr-check include/tessera/tessera.h \
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

# The installed Python package loads the installed library (no TESSERA_LIBRARY, no checkout).
found=$(cd "$prefix" && env -u TESSERA_LIBRARY PYTHONPATH="$libdir/tessera/python" "$python" -c \
  'import tessera._capi as c; print(c._library_path())' 2>&1) || fail "import tessera: $found"
[ "$found" = "$libdir/libtessera.so" ] || fail "Python loaded '$found', not $libdir/libtessera.so"
if "$python" -c 'import numpy' 2>/dev/null; then
  out=$(cd "$prefix" && "$prefix/bin/tsrun" -np 2 -x PYTHONPATH="$libdir/tessera/python" \
        "$python" "$src/examples/python/train_linear.py" 100 2>&1) || fail "installed Python trainer: $out"
fi
echo "PASSED: installed into $prefix and used from there"
