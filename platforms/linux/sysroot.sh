#!/usr/bin/env bash
# Fetches the target architecture's Debian packages that ember builds against
# (mbedTLS, FlatBuffers headers, doctest) and unpacks them into a folder of
# the build:
#
#   platforms/linux/sysroot.sh aarch64|armhf [DIR]     (DIR: build-TARGET/sysroot)
#
# Nothing is installed system-wide: installing libmbedtls-dev:arm64 would
# replace the amd64 one (the -dev packages are not co-installable). The C
# library and libstdc++ come with Debian's cross compiler
# (g++-aarch64-linux-gnu: /usr/aarch64-linux-gnu), so they are not fetched.
# The one host change is dpkg's foreign-architecture list plus an apt-get
# update (as root or through sudo), so that apt-get download finds the
# packages. The toolchain files (toolchains/*.cmake) read DIR as
# EMBER_SYSROOT. Re-running with the same package list is a no-op.
set -euo pipefail

usage() { echo "usage: $0 aarch64|armhf [DIR]" >&2; exit 2; }
[ $# -ge 1 ] || usage
target=$1
case "$target" in
  aarch64) arch=arm64 ;;
  armhf) arch=armhf ;;
  *) usage ;;
esac
root=$(cd "$(dirname "$0")/../.." && pwd)
dir=${2:-$root/build-$target/sysroot}

# libmbedtls-dev holds libmbedcrypto.a (and `ember serve`'s libmbedtls.a,
# libmbedx509.a; linked statically); its shared runtime packages satisfy the
# -dev package's .so links. libhttp-parser-dev: libhttp_parser.a (serve).
packages=(
  libmbedtls-dev libmbedcrypto7 libmbedtls14 libmbedx509-1
  libflatbuffers-dev
  libhttp-parser-dev libhttp-parser2.9
)
arch_all=(doctest-dev nlohmann-json3-dev)   # header-only, Architecture: all

stamp="$dir/.ember-sysroot"
want="$arch ${packages[*]} ${arch_all[*]}"
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
  echo "sysroot: $dir is up to date"
  exit 0
fi

sudo=""
if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi

# (Read first: grep -q closing the pipe early would fail it under pipefail.)
foreign=$(dpkg --print-foreign-architectures)
if ! grep -qx "$arch" <<<"$foreign"; then
  echo "sysroot: adding dpkg architecture $arch (package lists only; nothing is installed)"
  $sudo dpkg --add-architecture "$arch"
  # A partly failed update (a mirror syncing one index) must not stop us
  # when the packages we need are listed; apt-get download says if not.
  $sudo apt-get update -qq || echo "sysroot: apt-get update reported errors; trying the download anyway" >&2
fi

debs="$dir/debs"
rm -rf "$dir"
mkdir -p "$debs"
names=()
for p in "${packages[@]}"; do names+=("$p:$arch"); done
names+=("${arch_all[@]}")
# As root, apt would drop to the _apt user, which cannot write into the
# build folder (a warning, not an error): stay root instead.
sandbox=()
if [ "$(id -u)" -eq 0 ]; then sandbox=(-o APT::Sandbox::User=root); fi
download() { (cd "$debs" && apt-get download -q "${sandbox[@]}" "${names[@]}") ; }
if ! download; then
  echo "sysroot: download failed; refreshing the package lists once" >&2
  $sudo apt-get update -qq || true
  download
fi
for deb in "$debs"/*.deb; do dpkg-deb -x "$deb" "$dir"; done
rm -rf "$debs"
echo "$want" >"$stamp"
echo "sysroot: ${#names[@]} packages for $arch unpacked into $dir"
