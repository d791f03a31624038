#!/usr/bin/env bash
# The Kafka tests: builds the command line with the `kafka` feature
# (librdkafka from its bundled source: cmake and a C++ compiler) and runs
# its unit tests (the producer against librdkafka's mock cluster: counts,
# a full queue, loss) and crates/streamcap-cli/tests/kafka.rs, which starts a Kafka 4.1 broker on
# 127.0.0.1 with scripts/kafka-broker.sh (a JDK, and Maven to fetch the
# broker's jars once into ~/.cache/streamcap) and checks that every record
# is consumed back exactly once, also across a broker restart, and runs
# the `console kafka` examples of docs/.
#
#   scripts/test-kafka.sh [TEST ARGS...]        e.g. -- --nocapture
#
# Without cmake, a C++ compiler, java or mvn it says what is missing and
# exits 0 (sudo scripts/install-deps.sh installs them), unless
# STREAMCAP_KAFKA_REQUIRED=1, when it fails instead. The rest of the
# project builds and tests without any of them.
set -euo pipefail
cd "$(dirname "$0")/.."
missing=()
command -v cmake >/dev/null 2>&1 || missing+=("cmake (builds librdkafka)")
command -v c++ >/dev/null 2>&1 || missing+=("a C++ compiler, c++ (builds librdkafka)")
command -v java >/dev/null 2>&1 || missing+=("java, a JDK 17 or later (runs the broker)")
command -v mvn >/dev/null 2>&1 || missing+=("mvn (fetches the broker's jars)")
if [ ${#missing[@]} -gt 0 ]; then
  for m in "${missing[@]}"; do
    echo "test-kafka: missing: $m" >&2
  done
  echo "test-kafka: the Kafka tests were not run (sudo scripts/install-deps.sh installs cmake, g++, default-jdk-headless and maven)" >&2
  [ "${STREAMCAP_KAFKA_REQUIRED:-0}" = 1 ] && exit 1
  exit 0
fi
# Fetched before the tests, so that a fetch failure is reported as such.
bash scripts/kafka-broker.sh fetch
cargo test -p streamcap-cli --features kafka --bin streamcap --test kafka "$@"
