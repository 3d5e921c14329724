# Sourced by ./radixkv, ./run-tests, .ci/run and scripts/gpu-*: finds a JDK >= 25 and the tools a
# build needs. radixkv_setup is what the CLI needs to build and run; radixkv_setup_tests adds what only
# the tests use. Missing Debian packages are installed when running as root with apt-get; otherwise
# they are named with the command that installs them.

radixkv_java_major() { # $1 = java home; prints the feature version or nothing
  "$1/bin/java" -XshowSettings:properties -version 2>&1 | sed -n 's/^ *java.specification.version = \([0-9]*\).*/\1/p'
}

radixkv_find_jdk() {
  local cand v
  for cand in "${JAVA_HOME:-}" /usr/lib/jvm/temurin-25-jdk-amd64 /usr/lib/jvm/*; do
    [ -n "$cand" ] && [ -x "$cand/bin/javac" ] || continue
    v=$(radixkv_java_major "$cand")
    if [ -n "$v" ] && [ "$v" -ge 25 ]; then
      echo "$cand"
      return 0
    fi
  done
  return 1
}

# radixkv_install WHAT PKG...: installs the Debian packages PKG as root with apt-get, or names them.
# Returns 0 when nothing is left missing.
radixkv_install() {
  local what=$1
  shift
  [ $# -gt 0 ] || return 0
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    echo "radixkv: installing $* ($what)" >&2
    if (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@") >&2; then
      return 0
    fi
    echo "radixkv: could not install $* ($what)" >&2
  else
    echo "radixkv: missing $* ($what); install with: sudo apt-get install $*" >&2
  fi
  return 1
}

# What the CLI needs: a JDK >= 25 to run, and Maven, CMake and g++ to build it. oneDNN is optional
# (the model's GEMMs fall back to the built-in kernels without it).
radixkv_setup() {
  local jdk
  if ! jdk=$(radixkv_find_jdk); then
    echo "radixkv: no JDK >= 25 found (set JAVA_HOME or install one under /usr/lib/jvm)" >&2
    return 1
  fi
  export JAVA_HOME="$jdk"
  export PATH="$JAVA_HOME/bin:$PATH"
  local missing=()
  command -v mvn >/dev/null || missing+=(maven)
  command -v cmake >/dev/null || missing+=(cmake)
  command -v g++ >/dev/null || missing+=(g++)
  # oneDNN gives the model's GEMMs near-peak FLOP/s; the build falls back without it.
  [ -f /usr/include/dnnl.h ] || [ -f /usr/include/oneapi/dnnl/dnnl.h ] || missing+=(libdnnl-dev)
  radixkv_install "to build radixkv" "${missing[@]}" && return 0
  local tool
  for tool in mvn cmake g++; do
    command -v "$tool" >/dev/null || { echo "radixkv: $tool is required to build" >&2; return 1; }
  done
  return 0 # only oneDNN is missing: the build goes on without it
}

# What the tests need besides the build: NumPy (GenerateLogitsTest reads `generate --logits` files
# back), a real Redis and an independent Python KV-event subscriber (pyzmq, msgpack, cbor2) for the
# kvtier tests; node/npm (named when missing, not installed) to fetch the tokenizer files and the openai client.
radixkv_setup_tests() {
  radixkv_setup || return 1
  local missing=()
  python3 -c 'import numpy' 2>/dev/null || missing+=(python3-numpy)
  [ -x /usr/bin/redis-server ] || missing+=(redis-server)
  /usr/bin/python3 -c 'import zmq' 2>/dev/null || missing+=(python3-zmq)
  /usr/bin/python3 -c 'import msgpack' 2>/dev/null || missing+=(python3-msgpack)
  /usr/bin/python3 -c 'import cbor2' 2>/dev/null || missing+=(python3-cbor2)
  radixkv_install "for the tests" "${missing[@]}" || true # the tests that need them say so
  command -v npm >/dev/null || echo "radixkv: npm missing (the test build fetches tokenizer files with it)" >&2
  return 0
}
