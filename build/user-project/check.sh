#!/bin/sh
# Checks that a project of a user's own can depend on coop-bom, coop-core and coop-test after `mvn install` and run
# README's getting-started program as printed there, with README's pom and test (this folder's pom.xml and
# src/test/java/GettingStartedTest.java, which DocSnippetsTest keeps equal to README's blocks), on the embedded
# PostgreSQL of coop-test. Not a module of the build. Run from the repository root, after `mvn install -DskipTests`:
#   sh build/user-project/check.sh            (JAVA_HOME must point to a JDK 21+)
# Extra Maven options (e.g. -Dmaven.repo.local=...) are passed on.
set -e
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
cp -r "$here/pom.xml" "$here/src" "$work/"
mkdir -p "$work/src/main/java"
# the Java block right below <!-- snippet: getting-started --> in README.md
awk '/<!-- snippet: getting-started -->/ {found=1; next}
     found==1 && /^```java/ {found=2; next}
     found==2 && /^```/ {exit}
     found==2 {print}' "$here/../../README.md" > "$work/src/main/java/GettingStarted.java"
test -s "$work/src/main/java/GettingStarted.java"
cd "$work"
mvn -B -q "$@" test
echo "The README's getting-started program ran in a project of its own ($work)"
