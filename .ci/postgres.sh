#!/usr/bin/env bash
# The PostgreSQL token store's tests against a real PostgreSQL: installs
# Debian's `postgresql` if it is missing (as root), makes a throwaway cluster
# owned by an unprivileged user (PostgreSQL refuses to run as root), starts it
# on 127.0.0.1 (port $MCP_TEST_POSTGRES_PORT, default 55432) with its socket
# under /tmp, creates a database, exports MCP_TEST_POSTGRES_URL and runs the
# tests whose names contain `postgres`. The cluster is removed on exit.
# Extra arguments go to the test binary (a test name filter, `--nocapture`);
# `--exec CMD…` runs CMD against the server instead of the tests.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_INCREMENTAL=0
port="${MCP_TEST_POSTGRES_PORT:-55432}"

bin=""
find_bin() {
  local d
  for d in /usr/lib/postgresql/*/bin; do
    if [ -x "$d/initdb" ]; then bin="$d"; fi
  done
}
find_bin
if [ -z "$bin" ]; then
  if [ "$(id -u)" != 0 ]; then
    echo "PostgreSQL is not installed: run this as root to install Debian's postgresql" >&2
    exit 1
  fi
  echo "== installing postgresql (Debian)"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends postgresql >/dev/null
  find_bin
  if [ -z "$bin" ]; then echo "postgresql installed, but no initdb found" >&2; exit 1; fi
fi

if [ "$(id -u)" = 0 ]; then
  user=mcp-pg-test
  id -u "$user" >/dev/null 2>&1 || useradd --system --no-create-home --shell /usr/sbin/nologin "$user"
  as_db() { runuser -u "$user" -- "$@"; }
else
  user="$(id -un)"
  as_db() { "$@"; }
fi

base="$(mktemp -d /tmp/mcp-pg.XXXXXX)"
chown "$user" "$base"
stop() {
  as_db "$bin/pg_ctl" -D "$base/data" -m immediate stop >/dev/null 2>&1 || true
  rm -rf "$base"
}
trap stop EXIT

echo "== PostgreSQL $("$bin/postgres" --version | awk '{print $3}') on 127.0.0.1:$port ($base)"
as_db "$bin/initdb" -D "$base/data" -U postgres --auth=trust -E UTF8 --no-sync >/dev/null
# TLS, for the store's own rustls connector: a throwaway CA signs the
# server's certificate (for 127.0.0.1); the tests trust the CA's PEM
# (MCP_TEST_POSTGRES_CA) and check that a connection without it is refused.
openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=mcp-stack test CA" \
  -keyout "$base/ca.key" -out "$base/ca.pem" 2>/dev/null
openssl req -newkey rsa:2048 -nodes -subj "/CN=127.0.0.1" \
  -keyout "$base/data/server.key" -out "$base/server.csr" 2>/dev/null
printf 'subjectAltName=IP:127.0.0.1\nbasicConstraints=CA:FALSE\n' > "$base/server.ext"
openssl x509 -req -in "$base/server.csr" -CA "$base/ca.pem" -CAkey "$base/ca.key" \
  -CAcreateserial -days 2 -extfile "$base/server.ext" -out "$base/data/server.crt" 2>/dev/null
chown "$user" "$base/data/server.key" "$base/data/server.crt"
chmod 600 "$base/data/server.key"
printf "ssl = on\nssl_cert_file = 'server.crt'\nssl_key_file = 'server.key'\n" >> "$base/data/postgresql.conf"
if ! as_db "$bin/pg_ctl" -D "$base/data" -l "$base/server.log" -w -t 60 \
  -o "-h 127.0.0.1 -p $port -k $base -c fsync=off -c max_connections=200" start >/dev/null; then
  cat "$base/server.log" >&2
  echo "PostgreSQL did not start (is port $port taken? set MCP_TEST_POSTGRES_PORT)" >&2
  exit 1
fi
as_db "$bin/createdb" -h 127.0.0.1 -p "$port" -U postgres mcp_test

export MCP_TEST_POSTGRES_URL="postgres://postgres@127.0.0.1:$port/mcp_test"
export MCP_TEST_POSTGRES_CA="$base/ca.pem"
if [ "${1:-}" = "--exec" ]; then
  # `.ci/postgres.sh --exec CMD…`: CMD instead of the tests, with the same
  # throwaway server (e.g. `cargo xtask bench http --auth --token-store postgres`).
  shift
  "$@"
  exit
fi
echo "== cargo test (postgres)"
cargo test -p mcp-stack-auth --features postgres --locked --test postgres -- postgres "$@"
