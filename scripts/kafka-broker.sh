#!/usr/bin/env bash
# A single-node Apache Kafka broker (KRaft mode: broker and controller in
# one JVM) on 127.0.0.1, for the Kafka tests and docs/scale-out.md.
#
#   scripts/kafka-broker.sh fetch              download Kafka's jars once (Maven)
#   scripts/kafka-broker.sh start DIR PORT     format DIR (first time) and start;
#                                              the controller listens on PORT+1
#   scripts/kafka-broker.sh stop DIR           stop it (SIGTERM, then SIGKILL after 30 s)
#   scripts/kafka-broker.sh kill DIR           kill it at once (SIGKILL: a crash)
#   scripts/kafka-broker.sh topic BROKER TOPIC [PARTITIONS]   create a topic (default 3 partitions)
#   scripts/kafka-broker.sh consume BROKER TOPIC COUNT   print COUNT messages' values from
#                                              the start of TOPIC, one a line (Kafka's
#                                              console consumer; gives up after 30 s)
#   scripts/kafka-broker.sh classpath          print the jars' classpath
#
# The jars (org.apache.kafka:kafka_2.13 $STREAMCAP_KAFKA_VERSION, default
# 4.1.1, and what it depends on at run time) come from Maven Central with
# `mvn dependency:copy-dependencies` into $STREAMCAP_KAFKA_CACHE (default
# ${XDG_CACHE_HOME:-~/.cache}/streamcap/kafka-VERSION), once; later runs
# use them offline. Needs a JDK (17 or later: `java`) and Maven (`mvn`);
# on Debian `apt-get install default-jdk-headless maven` (scripts/install-deps.sh).
#
# `start` keeps the broker's data in DIR/data (formatted on the first start,
# kept by `stop`, so a stop and a start again is a broker restart), its log
# in DIR/kafka.log and its process id in DIR/kafka.pid; it returns once the
# broker accepts connections on PORT (about 3 to 6 seconds), and fails with
# the log's tail if it does not within 60 s. Topics are created on first
# use with num.partitions=3.
set -euo pipefail

version=${STREAMCAP_KAFKA_VERSION:-4.1.1}
cache=${STREAMCAP_KAFKA_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/streamcap/kafka-$version}

die() {
  echo "kafka-broker: $*" >&2
  exit 1
}

need() {
  command -v "$1" >/dev/null 2>&1 || die "$1 not found: $2"
}

fetch() {
  if [ -f "$cache/complete" ]; then
    return 0
  fi
  need java "a JDK (17 or later) runs the broker (Debian: apt-get install default-jdk-headless)"
  need mvn "Maven fetches Kafka's jars once (Debian: apt-get install maven)"
  mkdir -p "$cache"
  cat >"$cache/pom.xml" <<EOF
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>streamcap.test</groupId>
  <artifactId>kafka-broker</artifactId>
  <version>1</version>
  <packaging>pom</packaging>
  <dependencies>
    <dependency>
      <groupId>org.apache.kafka</groupId>
      <artifactId>kafka_2.13</artifactId>
      <version>$version</version>
    </dependency>
    <dependency>
      <groupId>org.apache.kafka</groupId>
      <artifactId>kafka-tools</artifactId>
      <version>$version</version>
    </dependency>
    <dependency>
      <groupId>org.apache.logging.log4j</groupId>
      <artifactId>log4j-slf4j-impl</artifactId>
      <version>2.24.3</version>
    </dependency>
  </dependencies>
</project>
EOF
  echo "kafka-broker: fetching Kafka $version's jars into $cache (once)" >&2
  rm -rf "$cache/libs"
  (cd "$cache" && mvn -q -B dependency:copy-dependencies -DincludeScope=runtime \
    -DoutputDirectory=libs >"$cache/mvn.log" 2>&1) ||
    die "mvn could not fetch the jars (see $cache/mvn.log)"
  # Warnings and errors only, to standard error (the broker's kafka.log).
  printf '%s\n' 'rootLogger.level = WARN' 'rootLogger.appenderRef.err.ref = err' \
    'appender.err.type = Console' 'appender.err.name = err' 'appender.err.target = SYSTEM_ERR' \
    'appender.err.layout.type = PatternLayout' 'appender.err.layout.pattern = [%d] %p %m (%c)%n' \
    >"$cache/log4j2.properties"
  touch "$cache/complete"
}

classpath() {
  fetch
  echo "$cache/libs/*"
}

# The broker's JVM: a small heap, quick start.
java_opts=(-Xms256m -Xmx512m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -Xshare:auto
  -Djava.awt.headless=true -Dlog4j2.configurationFile="$cache/log4j2.properties")

# Waits until 127.0.0.1:$1 accepts a connection, at most $2 seconds.
wait_port() {
  local port=$1 secs=$2 pid=$3 i
  for ((i = 0; i < secs * 10; i++)); do
    if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
      return 0
    fi
    kill -0 "$pid" 2>/dev/null || return 1
    sleep 0.1
  done
  return 1
}

start() {
  local dir=${1:?start DIR PORT} port=${2:?start DIR PORT}
  local cport=$((port + 1))
  fetch
  mkdir -p "$dir"
  dir=$(cd "$dir" && pwd)
  if [ -f "$dir/kafka.pid" ] && kill -0 "$(cat "$dir/kafka.pid")" 2>/dev/null; then
    die "a broker already runs from $dir (pid $(cat "$dir/kafka.pid"))"
  fi
  cat >"$dir/server.properties" <<EOF
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@127.0.0.1:$cport
listeners=PLAINTEXT://127.0.0.1:$port,CONTROLLER://127.0.0.1:$cport
advertised.listeners=PLAINTEXT://127.0.0.1:$port
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT
log.dirs=$dir/data
num.partitions=3
default.replication.factor=1
offsets.topic.replication.factor=1
offsets.topic.num.partitions=3
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
group.initial.rebalance.delay.ms=0
auto.create.topics.enable=true
EOF
  local cp="$cache/libs/*"
  if [ ! -f "$dir/data/meta.properties" ]; then
    # A cluster id is 16 random bytes, base64url without padding.
    local id
    id=$(head -c 16 /dev/urandom | base64 | tr '+/' '-_' | cut -c1-22)
    java "${java_opts[@]}" -cp "$cp" kafka.tools.StorageTool format -t "$id" \
      -c "$dir/server.properties" >"$dir/format.log" 2>&1 ||
      die "formatting $dir/data failed: $(tail -5 "$dir/format.log")"
  fi
  nohup java "${java_opts[@]}" -cp "$cp" kafka.Kafka "$dir/server.properties" \
    >>"$dir/kafka.log" 2>&1 </dev/null &
  local pid=$!
  echo "$pid" >"$dir/kafka.pid"
  if ! wait_port "$port" 60 "$pid"; then
    kill "$pid" 2>/dev/null || true
    die "the broker did not start on 127.0.0.1:$port: $(tail -20 "$dir/kafka.log")"
  fi
  echo "kafka-broker: Kafka $version on 127.0.0.1:$port (pid $pid, $dir)"
}

stop() {
  local dir=${1:?stop DIR} pid i
  [ -f "$dir/kafka.pid" ] || return 0
  pid=$(cat "$dir/kafka.pid")
  if kill -TERM "$pid" 2>/dev/null; then
    for ((i = 0; i < 300; i++)); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.1
    done
    kill -KILL "$pid" 2>/dev/null || true
  fi
  rm -f "$dir/kafka.pid"
}

kill_now() {
  local dir=${1:?kill DIR}
  [ -f "$dir/kafka.pid" ] || return 0
  kill -KILL "$(cat "$dir/kafka.pid")" 2>/dev/null || true
  rm -f "$dir/kafka.pid"
}

topic() {
  local broker=${1:?topic BROKER TOPIC [PARTITIONS]} name=${2:?topic BROKER TOPIC [PARTITIONS]}
  local parts=${3:-3}
  java "${java_opts[@]}" -cp "$(classpath)" org.apache.kafka.tools.TopicCommand \
    --bootstrap-server "$broker" --create --if-not-exists --topic "$name" \
    --partitions "$parts" --replication-factor 1
}

consume() {
  local broker=${1:?consume BROKER TOPIC COUNT} name=${2:?consume BROKER TOPIC COUNT}
  local count=${3:?consume BROKER TOPIC COUNT}
  java "${java_opts[@]}" -cp "$(classpath)" org.apache.kafka.tools.consumer.ConsoleConsumer \
    --bootstrap-server "$broker" --topic "$name" --from-beginning \
    --max-messages "$count" --timeout-ms 30000
}

cmd=${1:-}
shift || true
case "$cmd" in
  fetch) fetch ;;
  start) start "$@" ;;
  stop) stop "$@" ;;
  kill) kill_now "$@" ;;
  topic) topic "$@" ;;
  consume) consume "$@" ;;
  classpath) classpath ;;
  *)
    sed -n '2,28p' "$0" | sed 's/^# \{0,1\}//' >&2
    exit 2
    ;;
esac
