#!/usr/bin/env bash
# Make sure the local PostgreSQL server the store tests use is up (it is started before sessions
# here, but a stopped one is restarted rather than failing the suite).
set -u
if pg_isready -h 127.0.0.1 -p 5432 -q 2>/dev/null; then exit 0; fi
if command -v pg_ctlcluster >/dev/null 2>&1; then
  pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | head -n1)" main start 2>/dev/null || true
  for _ in $(seq 1 30); do pg_isready -h 127.0.0.1 -p 5432 -q && exit 0; sleep 1; done
fi
echo "start-postgres: no PostgreSQL at 127.0.0.1:5432; the PostgreSQL tests will fail" >&2
