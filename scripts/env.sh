# Sourced by ./radixkv, ./run-tests and .ci/run: finds a JDK >= 25 and installs the few
# system packages a fresh machine lacks (when running as root with apt-get).

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
  # GenerateLogitsTest reads `generate --logits` files back with NumPy (skipped without it).
  python3 -c 'import numpy' 2>/dev/null || missing+=(python3-numpy)
  # kvtier tests: a real Redis and an independent Python KV-event subscriber (pyzmq, msgpack, cbor2)
  [ -x /usr/bin/redis-server ] || missing+=(redis-server)
  /usr/bin/python3 -c 'import zmq' 2>/dev/null || missing+=(python3-zmq)
  /usr/bin/python3 -c 'import msgpack' 2>/dev/null || missing+=(python3-msgpack)
  /usr/bin/python3 -c 'import cbor2' 2>/dev/null || missing+=(python3-cbor2)
  if [ ${#missing[@]} -gt 0 ]; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
      echo "radixkv: installing ${missing[*]}" >&2
      (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}") >&2 \
        || echo "radixkv: could not install ${missing[*]}" >&2
    else
      echo "radixkv: missing ${missing[*]} (install them with your package manager)" >&2
    fi
  fi
}
