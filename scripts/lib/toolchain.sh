# Sourced by scripts/build-wasm.sh and scripts/test.sh: checks what the build
# and the tests need, installs what it can (Rust targets and components through
# rustup, wasm-bindgen-cli through cargo into .tools/, system packages through
# apt-get when running as root), and says exactly what to run for the rest.
# Everything it installs is announced first, so a first run is never silent.

TOOLCHAIN_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
# Must equal the `wasm-bindgen` crate version pinned in Cargo.toml: the glue
# the CLI generates and the crate's runtime half change together.
WASM_BINDGEN_VERSION=0.2.130

say() { printf 'setup: %s\n' "$*" >&2; }

# Stops with a message naming what to run.
need() {
  say "$1"
  shift
  for line in "$@"; do printf '         %s\n' "$line" >&2; done
  exit 1
}

is_root() { [ "$(id -u)" = 0 ]; }

# apt-get install, when this is a Debian-like system and we are root; else the
# exact command for the user. $1: why they are needed; then the packages.
install_system_packages() {
  local why="$1"
  shift
  if is_root && command -v apt-get >/dev/null 2>&1; then
    say "installing $* ($why) with apt-get"
    DEBIAN_FRONTEND=noninteractive apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "$@"
  elif command -v apt-get >/dev/null 2>&1; then
    need "missing system packages ($why); run:" "sudo apt-get install $*"
  else
    need "missing system packages ($why): install the equivalents of the Debian packages: $*"
  fi
}

# rustc links through the system C compiler, which needs the C library's
# startup files and headers too (Debian's gcc only recommends libc6-dev).
can_link() {
  command -v cc >/dev/null 2>&1 || return 1
  local tmp
  tmp="$(mktemp -d)"
  printf 'int main(void) { return 0; }\n' >"$tmp/probe.c"
  cc "$tmp/probe.c" -o "$tmp/probe" >/dev/null 2>&1
  local ok=$?
  rm -rf "$tmp"
  return "$ok"
}

ensure_rust() {
  if ! command -v cargo >/dev/null 2>&1 && [ -f "$HOME/.cargo/env" ]; then
    # shellcheck disable=SC1091
    . "$HOME/.cargo/env"
  fi
  command -v cargo >/dev/null 2>&1 ||
    need "Rust is not installed; install it with rustup, then open a new shell:" \
      "curl --proto '=https' --tlsv1.2 -sSf https://sh.rustup.rs | sh"
  if ! can_link; then
    if [ "$(uname)" = Darwin ]; then
      need "a C linker is missing (rustc links with it); run:" "xcode-select --install"
    fi
    install_system_packages "a C linker for rustc" gcc libc6-dev
  fi
}

# Adds a rustup target or component when it is missing.
rustup_add() {
  local kind="$1" name="$2" installed
  command -v rustup >/dev/null 2>&1 ||
    need "rustup is needed to add the Rust $kind $name (this Rust did not come from rustup):" \
      "curl --proto '=https' --tlsv1.2 -sSf https://sh.rustup.rs | sh"
  # Read the list first: grep -q closing the pipe early would fail under pipefail.
  installed="$(rustup "$kind" list --installed)"
  if ! grep -q "^$name" <<<"$installed"; then
    say "installing the Rust $kind $name (rustup $kind add $name)"
    rustup "$kind" add "$name"
  fi
}

# Puts wasm-bindgen-cli $WASM_BINDGEN_VERSION on PATH: one already there, the
# copy in .tools/, or a fresh `cargo install` into .tools/ (a project-local
# root, so another project's wasm-bindgen of another version is left alone).
ensure_wasm_bindgen() {
  local tools="$TOOLCHAIN_ROOT/.tools"
  if wasm-bindgen --version 2>/dev/null | grep -q " $WASM_BINDGEN_VERSION\$"; then return; fi
  export PATH="$tools/bin:$PATH"
  if wasm-bindgen --version 2>/dev/null | grep -q " $WASM_BINDGEN_VERSION\$"; then return; fi
  say "installing wasm-bindgen-cli $WASM_BINDGEN_VERSION into .tools/ (once; it compiles for a few minutes)"
  # No --locked: its lockfile pins a crate version some registries do not serve.
  cargo install wasm-bindgen-cli --version "$WASM_BINDGEN_VERSION" --root "$tools"
}

# What `npm run build` needs.
ensure_wasm_toolchain() {
  ensure_rust
  rustup_add target wasm32-unknown-unknown
  ensure_wasm_bindgen
}

chromium_path() {
  local c
  for c in "${SKIFF_CHROMIUM:-}" /usr/bin/chromium /usr/bin/chromium-browser /usr/bin/google-chrome; do
    if [ -n "$c" ] && [ -x "$c" ]; then
      echo "$c"
      return
    fi
  done
}

has_vulkan_icd() {
  local f found=""
  for f in /usr/share/vulkan/icd.d/*.json /etc/vulkan/icd.d/*.json; do
    [ -e "$f" ] && found=1
  done
  [ -n "$found" ] || return 1
  # Read the list first: grep -q closing the pipe early would fail under pipefail.
  local libs
  libs="$(ldconfig -p 2>/dev/null || true)"
  grep -q 'libvulkan\.so\.1' <<<"$libs"
}

# skiff::distributed (cargo feature `distributed`): an MPI library with its
# launcher (Open MPI), and libclang, with which the mpi crate's build reads
# mpi.h.
has_mpi() {
  command -v mpirun >/dev/null 2>&1 && command -v mpicc >/dev/null 2>&1 || return 1
  # The mpi crate's build script asks mpicc for its flags and bindgen for
  # libclang itself (libclang.so or libclang-<version>.so): libclang-cpp,
  # which Mesa's drivers bring along, is another library and does not serve.
  ls /usr/lib/llvm-*/lib/libclang.so* /usr/lib/llvm-*/lib/libclang-[0-9]*.so* \
    /usr/lib/*/libclang.so* /usr/lib/*/libclang-[0-9]*.so* >/dev/null 2>&1 ||
    [ -n "${LIBCLANG_PATH:-}" ]
}

ensure_mpi() {
  has_mpi && return 0
  if [ "$(uname)" = Darwin ]; then
    need "the distributed tests need Open MPI and libclang; run:" "brew install open-mpi llvm"
  fi
  install_system_packages "Open MPI and libclang for skiff::distributed (feature distributed)" \
    openmpi-bin libopenmpi-dev libclang-dev
}

# What `npm test` needs beyond the build: clippy and rustfmt, a Chromium for the
# browser suite, a Vulkan driver (lavapipe, Mesa's software one, where
# there is no GPU) for the GPU tests, and Open MPI for the distributed ones.
ensure_test_toolchain() {
  ensure_mpi
  ensure_wasm_toolchain
  rustup_add component clippy
  rustup_add component rustfmt
  if [ -z "$(chromium_path)" ]; then
    if [ -n "${SKIFF_CHROMIUM:-}" ]; then
      need "SKIFF_CHROMIUM=$SKIFF_CHROMIUM is not an executable Chromium"
    fi
    if [ "$(uname)" = Darwin ]; then
      need "the browser suite needs Chromium or Chrome; point SKIFF_CHROMIUM at it:" \
        "export SKIFF_CHROMIUM='/Applications/Google Chrome.app/Contents/MacOS/Google Chrome'"
    fi
    install_system_packages "the headless browser of the browser suite; or set SKIFF_CHROMIUM" chromium
  fi
  if [ "$(uname)" = Linux ] && ! has_vulkan_icd; then
    if is_root && command -v apt-get >/dev/null 2>&1; then
      install_system_packages "a Vulkan driver for the GPU tests: lavapipe where there is no GPU" \
        mesa-vulkan-drivers libvulkan1
    else
      # Not fatal: the GPU tests then skip, loudly (and fail under SKIFF_REQUIRE_GPU=1).
      say "no Vulkan driver: the GPU tests will be skipped. For lavapipe (a software GPU), run:"
      printf '         %s\n' "sudo apt-get install mesa-vulkan-drivers libvulkan1" >&2
    fi
  fi
}
