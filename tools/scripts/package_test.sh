#!/usr/bin/env bash
# The installed package, as a host sees it (issue 11, part 6):
#   1. `cmake --install` into a temporary prefix; the CMake package and
#      ember.pc name no folder of this build;
#   2. examples/host built against it with CMake (find_package(ember)) and
#      with pkg-config (pkg-config --static --cflags --libs ember);
#   3. both run stories260K (converted by the installed `ember`) and print
#      the same greedy text, which `ember run` prints too;
#   4. `cpack -G DEB` makes a .deb holding the header, the library, both
#      package files and the CLI, and the CMake package inside it works.
#
# Usage: tools/scripts/package_test.sh [BUILD_DIR]
#   BUILD_DIR: an ember build folder (default build-package/); configured
#   (Release, no tests) when it has no CMakeCache.txt, else reused as it is.
#   Test data: EMBER_TEST_DATA (default ../shared beside the checkout); when
#   it is missing a synthetic tiny model is used, unless
#   EMBER_REQUIRE_TEST_DATA=1. KEEP_TMP=1 keeps the temporary folder.
# Exits non-zero on the first failure.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=$(realpath -m "${1:-$ROOT/build-package}")
DATA=${EMBER_TEST_DATA:-$ROOT/../shared}
PROMPT="Once upon a time"
NTOK=32

TMP=$(mktemp -d /tmp/ember-package.XXXXXX)
if [ "${KEEP_TMP:-0}" = 1 ]; then
  echo "package_test: keeping $TMP"
else
  trap 'rm -rf "$TMP"' EXIT
fi
PREFIX=$TMP/prefix

fail() { echo "package_test: FAIL: $*" >&2; exit 1; }
step() { echo "== package_test: $*"; }

# --- build, install ---------------------------------------------------------------
if [ ! -f "$BUILD/CMakeCache.txt" ]; then
  step "configuring $BUILD"
  cmake -S "$ROOT" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DEMBER_BUILD_TESTS=OFF
fi
step "building $BUILD"
cmake --build "$BUILD" -j2

step "cmake --install $BUILD --prefix $PREFIX"
cmake --install "$BUILD" --prefix "$PREFIX" | tee "$TMP/install.log"
LIBDIR=$(sed -n 's/^CMAKE_INSTALL_LIBDIR:[A-Z]*=//p' "$BUILD/CMakeCache.txt")
LIBDIR=${LIBDIR:-lib}
VERSION=$(sed -n 's/^CMAKE_PROJECT_VERSION:[A-Z]*=//p' "$BUILD/CMakeCache.txt")
for f in include/ember.h "$LIBDIR/libember.a" "$LIBDIR/cmake/ember/ember-config.cmake" \
         "$LIBDIR/cmake/ember/ember-config-version.cmake" "$LIBDIR/cmake/ember/ember-targets.cmake" \
         "$LIBDIR/pkgconfig/ember.pc" bin/ember; do
  [ -f "$PREFIX/$f" ] || fail "cmake --install did not install $f"
done
[ "$(find "$PREFIX/include" -type f | wc -l)" = 1 ] || fail "more than ember.h under include/: $(find "$PREFIX/include" -type f)"
nm -g --defined-only "$PREFIX/$LIBDIR/libember.a" > "$TMP/nm.txt" 2>/dev/null
grep -q ' T ember_generate$' "$TMP/nm.txt" || fail "libember.a does not define ember_generate"
# Relocatable: no folder of this checkout or build, and no library path of
# this machine, in the CMake package or ember.pc.
for dir in "$ROOT" "$BUILD"; do
  if grep -rnF "$dir" "$PREFIX/$LIBDIR/cmake" "$PREFIX/$LIBDIR/pkgconfig"; then
    fail "the installed package names $dir"
  fi
done
if grep -rn 'libmbedcrypto\.a"\|/usr/lib' "$PREFIX/$LIBDIR/cmake/ember"/ember-targets*.cmake; then
  fail "the exported target names a library path of this machine"
fi
grep -qx "prefix=$PREFIX" "$PREFIX/$LIBDIR/pkgconfig/ember.pc" \
  || fail "ember.pc's prefix is not the install prefix: $(grep '^prefix=' "$PREFIX/$LIBDIR/pkgconfig/ember.pc")"

# --- a model ------------------------------------------------------------------------
MODEL=$TMP/stories260K.ember
if [ -f "$DATA/models/stories260K.bin" ] && [ -f "$DATA/models/tok512.bin" ]; then
  "$PREFIX/bin/ember" convert "$DATA/models/stories260K.bin" --tokenizer "$DATA/models/tok512.bin" -o "$MODEL"
elif [ "${EMBER_REQUIRE_TEST_DATA:-0}" = 1 ]; then
  fail "$DATA/models/stories260K.bin or tok512.bin is missing (EMBER_REQUIRE_TEST_DATA=1)"
else
  echo "package_test: no test data in $DATA: a synthetic tiny model instead"
  MODEL=$TMP/tiny.ember
  "$PREFIX/bin/ember" synth --shape tiny --vocab builtin -o "$MODEL"
fi

# --- the host, with CMake --------------------------------------------------------------
step "examples/host with CMake (find_package(ember), CMAKE_PREFIX_PATH=$PREFIX)"
cmake -S "$ROOT/examples/host" -B "$TMP/host-cmake" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_PREFIX_PATH="$PREFIX" -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF
found=$(sed -n 's/^ember_DIR:PATH=//p' "$TMP/host-cmake/CMakeCache.txt")
[ "$found" = "$PREFIX/$LIBDIR/cmake/ember" ] || fail "find_package(ember) found $found, not the installed package"
cmake --build "$TMP/host-cmake" --verbose

# --- the host, with pkg-config -----------------------------------------------------------
step "examples/host with pkg-config (PKG_CONFIG_PATH=$PREFIX/$LIBDIR/pkgconfig)"
export PKG_CONFIG_PATH=$PREFIX/$LIBDIR/pkgconfig
echo "pkg-config --static --cflags --libs ember: $(pkg-config --static --cflags --libs ember)"
[ "$(pkg-config --modversion ember)" = "$VERSION" ] \
  || fail "ember.pc's version $(pkg-config --modversion ember) is not the project's"
mkdir -p "$TMP/host-pc"
make -C "$TMP/host-pc" -f "$ROOT/examples/host/Makefile"
unset PKG_CONFIG_PATH

# --- both run, and agree ---------------------------------------------------------------
step "running both hosts on $(basename "$MODEL")"
"$TMP/host-cmake/ember_host" "$MODEL" "$PROMPT" $NTOK > "$TMP/out-cmake.txt" || fail "the CMake-built host failed"
"$TMP/host-pc/ember_host" "$MODEL" "$PROMPT" $NTOK > "$TMP/out-pc.txt" || fail "the pkg-config-built host failed"
cat "$TMP/out-cmake.txt"
cmp -s "$TMP/out-cmake.txt" "$TMP/out-pc.txt" || { diff "$TMP/out-cmake.txt" "$TMP/out-pc.txt" || true; fail "the two hosts print different output"; }
grep -qx "ember $VERSION" "$TMP/out-cmake.txt" || fail "the hosts do not print ember_version() = $VERSION"
text=$(grep -F "$PROMPT" "$TMP/out-cmake.txt" | head -1)
continuation=${text#"$PROMPT"}
[ -n "${continuation//[[:space:]]/}" ] || fail "the hosts generated no text after the prompt"
# The same greedy text as the CLI's (its stdout is the prompt and the continuation).
"$PREFIX/bin/ember" run -m "$MODEL" -p "$PROMPT" -n $NTOK > "$TMP/out-cli.txt" 2>/dev/null
grep -qF -- "$text" "$TMP/out-cli.txt" || fail "ember run printed other text: $(cat "$TMP/out-cli.txt")"

# --- the .deb ----------------------------------------------------------------------------
step "cpack -G DEB"
(cd "$BUILD" && cpack -G DEB -B "$TMP/deb")
deb=$(ls "$TMP"/deb/*.deb)
[ "$(echo "$deb" | wc -l)" = 1 ] || fail "expected one .deb, found: $deb"
dpkg-deb -I "$deb"
dpkg-deb -c "$deb" | tee "$TMP/deb.txt"
for f in include/ember.h "$LIBDIR/libember.a" "$LIBDIR/cmake/ember/ember-config.cmake" \
         "$LIBDIR/cmake/ember/ember-targets.cmake" "$LIBDIR/pkgconfig/ember.pc" bin/ember; do
  grep -q " \./usr/$f\$" "$TMP/deb.txt" || fail "the .deb lacks /usr/$f"
done
dpkg-deb -x "$deb" "$TMP/debroot"
grep -qx "prefix=/usr" "$TMP/debroot/usr/$LIBDIR/pkgconfig/ember.pc" || fail "the .deb's ember.pc is not for /usr"
# Its CMake package is relocatable: build the host against the unpacked tree.
cmake -S "$ROOT/examples/host" -B "$TMP/host-deb" -G Ninja -DCMAKE_PREFIX_PATH="$TMP/debroot/usr" >/dev/null
cmake --build "$TMP/host-deb" >/dev/null
"$TMP/host-deb/ember_host" "$MODEL" "$PROMPT" $NTOK | cmp -s - "$TMP/out-cmake.txt" \
  || fail "the host built against the .deb's files prints other output"

echo "package_test: OK (install, CMake and pkg-config hosts, .deb $(basename "$deb"))"
