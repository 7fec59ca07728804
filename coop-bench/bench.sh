#!/usr/bin/env bash
# Builds this checkout's engine and benchmarks (nothing is installed into ~/.m2), then runs the benchmark on a JDK 21+
# whatever JAVA_HOME and PATH point at. Arguments go to the benchmark, e.g.:
#   coop-bench/bench.sh --workloads versus                          # the side-by-side table
#   coop-bench/bench.sh --workloads ab --ab-builds main,HEAD        # before/after: two builds, alternating
#   coop-bench/bench.sh --help
# BENCH_JVM overrides the JVM options (default -Xms1g -Xmx1g -XX:+UseG1GC); BENCH_SKIP_BUILD=1 skips the build.
set -euo pipefail
cd "$(dirname "$0")/.."

major() { # the feature version of a java executable, or 0
  "$1" -XshowSettings:properties -version 2>&1 | sed -n 's/^ *java.specification.version = //p' | head -1 \
    | awk -F. '{ print ($1 == "1" ? $2 : $1) + 0 }' || echo 0
}

java=""
best=0
for candidate in "${JAVA_HOME:+$JAVA_HOME/bin/java}" "$(command -v java || true)" /usr/lib/jvm/*/bin/java \
    /Library/Java/JavaVirtualMachines/*/Contents/Home/bin/java "$HOME"/.sdkman/candidates/java/*/bin/java; do
  [ -n "$candidate" ] && [ -x "$candidate" ] || continue
  v=$(major "$candidate")
  if [ "$v" -ge 21 ] && [ "$v" -gt "$best" ]; then
    java="$candidate"
    best="$v"
  fi
done
if [ -z "$java" ]; then
  echo "coop-bench needs a JDK 21 or newer; none found in JAVA_HOME, PATH, /usr/lib/jvm or ~/.sdkman" >&2
  exit 2
fi

if [ "${BENCH_SKIP_BUILD:-0}" != "1" ]; then
  mvn -q -pl coop-bench -am package -DskipTests -Dmaven.javadoc.skip=true -Dmaven.source.skip=true
fi
echo "coop-bench: running on $java (Java $best)" >&2
# shellcheck disable=SC2086
exec "$java" ${BENCH_JVM:--Xms1g -Xmx1g -XX:+UseG1GC} -Dbench.out="$PWD/bench-results" \
  -classpath "coop-bench/target/classes:coop-bench/target/bench-lib/*" dev.coop.bench.Bench "$@"
