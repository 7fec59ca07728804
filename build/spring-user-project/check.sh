#!/bin/sh
# Checks that a Spring Boot application of a user's own (the README's dependencies plus Spring Data JPA) boots with
# the starter and runs sagas whose steps and compensations use repositories, the EntityManager and @Transactional
# services. Run from the repository root, after `mvn install -DskipTests` (JAVA_HOME must point to a JDK 21+):
#   sh build/spring-user-project/check.sh
# Extra Maven options (e.g. -Dmaven.repo.local=...) are passed on.
set -e
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
cp -r "$here/pom.xml" "$here/src" "$work/"
cd "$work"
mvn -B -q "$@" test
echo "A Spring Boot application of its own ran Coop's sagas with JPA in their steps ($work)"
