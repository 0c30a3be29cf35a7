#!/usr/bin/env bash
# deb_check.sh CPACK BUILD_DIR SOURCE_DIR CC PYTHON SANITIZED
# The Debian packages (cmake/debian.cmake) as an operator gets them: `cpack -G DEB` makes
# tessera, tessera-dev and tessera-sim, their control fields declare what they need (the
# libraries from the ELF files, the -dev on the same tessera), dpkg would install them here
# (--dry-run), and what they hold works unpacked (dpkg -x): `tsrun -np 2 tsr-check`, a trainer
# built through the packaged pkg-config file, and Python through the packaged .pth path.
# Exit 77 (skipped) in sanitizer builds or without dpkg-shlibdeps (dpkg-dev).
set -euo pipefail
cpack=$1 build=$(cd "$2" && pwd) src=$(cd "$3" && pwd) cc=$4 python=$5 sanitized=$6
case "$sanitized" in ON|on|1|TRUE|true) echo "skipped: sanitizer build"; exit 77 ;; esac
command -v dpkg-shlibdeps >/dev/null || { echo "skipped: no dpkg-shlibdeps (apt-get install dpkg-dev)"; exit 77; }
work=$(mktemp -d /tmp/tsr-deb.XXXXXX)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAILED: $*" >&2; exit 1; }

log=$(cd "$work" && "$cpack" --config "$build/CPackConfig.cmake" -B "$work/out" 2>&1) || fail "cpack: $log"
version=$("$build/bin/tsr-info" --version | grep -oE '[0-9]+\.[0-9]+\.[0-9]+$')
arch=$(dpkg --print-architecture)
runtime="$work/out/tessera_${version}_$arch.deb" dev="$work/out/tessera-dev_${version}_$arch.deb"
[ -f "$runtime" ] && [ -f "$dev" ] || fail "not the two packages: $(ls "$work/out")"

depends=$(dpkg-deb -f "$runtime" Depends)
for lib in libucx0 libhwloc15 libc6; do
  grep -q "$lib" <<<"$depends" || fail "tessera's Depends lacks $lib: $depends"
done
! grep -q simgrid <<<"$depends" || fail "tessera depends on SimGrid (tsr-sim belongs in tessera-sim): $depends"
[ -f "$work/out/tessera-sim_${version}_$arch.deb" ] || fail "no tessera-sim package"
grep -q "tessera (= $version)" <<<"$(dpkg-deb -f "$dev" Depends)" || fail "tessera-dev does not depend on tessera $version"
contents=$(dpkg-deb -c "$runtime"; echo ---; dpkg-deb -c "$dev")
runtime_files=$(sed '/^---$/q' <<<"$contents")
dev_files=$(sed '1,/^---$/d' <<<"$contents")
for f in ./usr/bin/tsrun ./usr/bin/tsr-check ./usr/lib/libtessera.so.${version%.*} ./usr/lib/tessera/python/tessera/__init__.py \
         ./usr/lib/python3/dist-packages/tessera.pth; do
  grep -q " $f" <<<"$runtime_files" || fail "tessera lacks $f"
done
for f in ./usr/include/tessera/tessera.h ./usr/include/tessera/tessera_version.h ./usr/lib/pkgconfig/tessera.pc \
         ./usr/lib/cmake/Tessera/TesseraConfig.cmake "./usr/lib/libtessera.so "; do
  grep -q " $f" <<<"$dev_files" || fail "tessera-dev lacks $f"
done
! grep -q "_tessera_torch" <<<"$contents" || fail "a torch backend was packaged"
dry=$(dpkg --dry-run -i "$runtime" "$dev" 2>&1) || fail "dpkg --dry-run -i: $dry"

# What the packages hold, unpacked into a root of their own.
root="$work/root"
dpkg -x "$runtime" "$root"
# The runtime alone: Python finds the library under its SONAME (the .so link is tessera-dev's).
pth=$(cat "$root/usr/lib/python3/dist-packages/tessera.pth")
[ "$pth" = /usr/lib/tessera/python ] || fail "tessera.pth says $pth"
found=$(cd "$work" && env -u TESSERA_LIBRARY PYTHONPATH="$root$pth" "$python" -c \
  'import tessera, tessera._capi as c; print(c.LIBRARY_PATH, tessera.__version__)' 2>&1) || fail "import tessera: $found"
[ "$found" = "$root/usr/lib/libtessera.so.${version%.*} $version" ] || fail "Python loaded: $found"
dpkg -x "$dev" "$root"
out=$(LD_LIBRARY_PATH="$root/usr/lib" "$root/usr/bin/tsrun" -np 2 "$root/usr/bin/tsr-check" 2>&1) ||
  fail "tsrun -np 2 tsr-check from the package: $out"
# The .pc finds its prefix from where it lies: /usr, relocated here, with no edit.
flags=$(PKG_CONFIG_PATH="$root/usr/lib/pkgconfig" pkg-config --cflags --libs tessera)
"$cc" -O2 -I"$src/examples/c" "$src/examples/c/train_linear.c" $flags -lm -o "$work/train_linear"
out=$(LD_LIBRARY_PATH="$root/usr/lib" "$root/usr/bin/tsrun" -np 2 -x LD_LIBRARY_PATH="$root/usr/lib" \
      "$work/train_linear" 100 2>&1) || fail "a trainer on the packaged library: $out"
grep -q "^\[0\] TRAINED: 2 ranks" <<<"$out" || fail "no TRAINED line: $out"
echo "PASSED: tessera and tessera-dev $version packaged, declared and used"
