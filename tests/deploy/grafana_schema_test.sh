#!/usr/bin/env bash
# Validates every deploy/grafana/dashboards/*.json against Grafana's own
# Dashboard type: the JSON schema is generated from @grafana/schema with
# ts-json-schema-generator and applied with ajv (allErrors), then
# grafana-schema/validate.cjs checks what the schema cannot (schemaVersion >= 36,
# unique panel ids, gridPos, datasource references, units, variables).
#
#   grafana_schema_test.sh SOURCE_DIR NPM_DIR [DASHBOARD.json...]
#
# NPM_DIR (under the build tree) receives `npm ci` of grafana-schema/'s pinned
# package-lock.json and the generated schema; both are reused while the lock
# file is unchanged. Exit 77 (skip) when node or npm is missing.
set -euo pipefail

if (($# < 2)); then
  echo "usage: $0 SOURCE_DIR NPM_DIR [DASHBOARD.json...]" >&2
  exit 2
fi
SRC=$(cd "$1" && pwd)
NPM_DIR=$2
shift 2
PKG="$SRC/tests/deploy/grafana-schema"

for tool in node npm; do
  if ! command -v "$tool" >/dev/null; then
    echo "SKIP: $tool not found (scripts/setup installs nodejs)"
    exit 77
  fi
done

if (($# > 0)); then
  DASHBOARDS=("$@")
else
  DASHBOARDS=("$SRC"/deploy/grafana/dashboards/*.json)
fi
[[ -e ${DASHBOARDS[0]} ]] || { echo "FAIL: no dashboards found"; exit 1; }

mkdir -p "$NPM_DIR"
NPM_DIR=$(cd "$NPM_DIR" && pwd)
stamp=$(cat "$PKG/package.json" "$PKG/package-lock.json" | sha256sum | cut -d' ' -f1)
if [[ ! -f $NPM_DIR/.stamp || $(cat "$NPM_DIR/.stamp") != "$stamp" || ! -d $NPM_DIR/node_modules ]]; then
  echo "npm ci in $NPM_DIR"
  rm -rf "$NPM_DIR/node_modules" "$NPM_DIR/dashboard.schema.json" "$NPM_DIR/.stamp"
  cp "$PKG/package.json" "$PKG/package-lock.json" "$NPM_DIR/"
  # ts-json-schema-generator declares node >= 22 but runs on the node 20 that is installed here.
  (cd "$NPM_DIR" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error --engine-strict=false)
  echo "$stamp" >"$NPM_DIR/.stamp"
fi

SCHEMA="$NPM_DIR/dashboard.schema.json"
if [[ ! -s $SCHEMA ]]; then
  echo "generating $SCHEMA from @grafana/schema"
  (cd "$NPM_DIR" && node_modules/.bin/ts-json-schema-generator \
      -p node_modules/@grafana/schema/dist/types/raw/dashboard/x/types.gen.d.ts \
      -t Dashboard --no-type-check -o "$SCHEMA.tmp")
  mv "$SCHEMA.tmp" "$SCHEMA"
fi

if NODE_PATH="$NPM_DIR/node_modules" node "$PKG/validate.cjs" "$SCHEMA" "${DASHBOARDS[@]}"; then
  echo "PASS: ${#DASHBOARDS[@]} dashboard(s) valid"
else
  echo "FAIL: dashboard validation"
  exit 1
fi
