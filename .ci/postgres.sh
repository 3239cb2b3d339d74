#!/usr/bin/env bash
# The PostgreSQL tests (tests/platform/test_optuna_postgres.py) start a throwaway server
# from the binaries of Debian's `postgresql` package (initdb, pg_ctl). Install it where it
# is missing and this is root with apt-get. Never fails the build: without a server those
# tests skip and say why.
set -u
if ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || command -v initdb >/dev/null 2>&1; then
    exit 0
fi
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
    echo "note: no PostgreSQL server (initdb) and no root apt-get to install one: the" \
         "PostgreSQL tests will skip"
    exit 0
fi
echo "installing Debian's postgresql package for the PostgreSQL tests"
if ! { DEBIAN_FRONTEND=noninteractive apt-get update -qq \
       && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
              postgresql >/dev/null; }; then
    echo "note: could not install postgresql: the PostgreSQL tests will skip"
fi
exit 0
