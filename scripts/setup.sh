#!/usr/bin/env bash
# Installs what the project needs when it is missing: Debian packages (when run as root; otherwise
# it prints the command) and the pinned npm dependencies. Safe to run again: it skips what is there.
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(
  postgresql-15 postgresql-15-cron postgresql-15-wal2json postgresql-15-pgtap
  postgresql-15-plpgsql-check libtap-parser-sourcehandler-pgtap-perl
  chromium curl nginx
  bubblewrap socat adb aapt libnss3-tools iproute2 procps
)
missing=()
for package in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q 'install ok installed' || missing+=("$package")
done
if ((${#missing[@]} > 0)); then
  if [[ "$(id -u)" != 0 ]]; then
    echo "setup: missing Debian packages: ${missing[*]}" >&2
    echo "setup: install them with: sudo apt-get update && sudo apt-get install -y ${missing[*]}" >&2
    exit 1
  fi
  # The stack runs its own clusters; Debian's default cluster on 5432 would only be in the way.
  mkdir -p /etc/postgresql-common
  if [[ ! -f /etc/postgresql-common/createcluster.conf ]] || ! grep -q '^create_main_cluster' /etc/postgresql-common/createcluster.conf; then
    echo 'create_main_cluster = false' >> /etc/postgresql-common/createcluster.conf
  fi
  echo "setup: installing ${missing[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" > /dev/null
  # Debian enables a system nginx on port 80 when it installs the package; the stack runs its own
  # (the gateway's front door, on 54321) and needs only the binary.
  if [[ " ${missing[*]} " == *" nginx "* ]] && command -v systemctl > /dev/null \
    && systemctl is-enabled --quiet nginx 2> /dev/null; then
    systemctl disable --now nginx > /dev/null 2>&1 || true
    echo 'setup: disabled the nginx system service Debian enabled on install (the stack runs its own)'
  fi
fi

# A root-run stack hands the gateway's nginx to an account of its own (gateway.ts), so no other
# process can read its configuration (the project keys) or reach the router's socket.
if [[ "$(id -u)" == 0 ]] && ! getent passwd capture-gateway > /dev/null; then
  useradd --system --user-group --no-create-home --home-dir /nonexistent \
    --shell /usr/sbin/nologin --comment 'capture platform gateway (nginx)' capture-gateway
  echo 'setup: created the capture-gateway system user, which the gateway nginx runs as'
fi

if [[ ! -f node_modules/.package-lock.json || package-lock.json -nt node_modules/.package-lock.json ]]; then
  # `npm ci`: exactly the lock file, which it never rewrites. The lock names every platform's
  # binary package that exists (packages/stack/test/install.test.ts checks it); the few a pinned
  # package declares but never published are overridden by scripts/unpublished-platform-package.
  echo 'setup: npm ci (from package-lock.json)'
  npm ci --no-audit --no-fund
fi

# The dashboard is served from its Vite build; rebuild it when dist/ is missing or older than any
# of its sources (a new or deleted file touches its folder, so `find -newer` sees that too).
dashboard=packages/dashboard
if [[ ! -f $dashboard/dist/index.html ]] || [[ -n "$(find "$dashboard/src" "$dashboard/public" \
  "$dashboard/index.html" "$dashboard/vite.config.ts" -newer "$dashboard/dist/index.html" -print -quit)" ]]; then
  echo 'setup: building the dashboard (vite build)'
  # Production mode whatever NODE_ENV the caller has: a test or development NODE_ENV would bundle
  # React's development build.
  NODE_ENV=production npm run --silent build -w @capture/dashboard -- --logLevel warn
fi
