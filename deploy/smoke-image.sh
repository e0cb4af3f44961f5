#!/usr/bin/env bash
# Runs the built image as an operator would and checks it: /livez, /readyz and the HEALTHCHECK,
# an oath, a restart that keeps the citizen (its passport still verifies), a graceful stop, and a
# live backup of the volume (deploy/backup-embedded.sh) restored into a second container.
#
#   deploy/smoke-image.sh [IMAGE]        # localhost/agent-node:latest by default
#
# Environment: PODMAN (the podman command, e.g. `podman --runtime runc`), RUN_OPTS (more
# `podman run` options, e.g. `--ulimit nofile=20000:20000 --ulimit nproc=4096:4096`), PORT (18080).
# Needs curl, and root for the backup (it reads the volume's folder on the host).
# Exit codes: 0 every check passed; 1 one failed (named on stderr).
set -Eeuo pipefail
trap 'echo "smoke: failed at line $LINENO: $BASH_COMMAND" >&2; exit 1' ERR

image=${1:-localhost/agent-node:latest}
read -r -a podman <<<"${PODMAN:-podman}"
read -r -a run_opts <<<"${RUN_OPTS:-}"
port=${PORT:-18080}
here=$(cd "$(dirname "$0")" && pwd)
name=agent-node-smoke-$$
volume=$name-data
work=$(mktemp -d)
cleanup() {
  "${podman[@]}" rm -f "$name" "$name-restored" >/dev/null 2>&1 || true
  "${podman[@]}" volume rm -f "$volume" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT

base=http://127.0.0.1:$port
say() { echo "smoke: $*" >&2; }
field() { grep -o "\"$1\":\"[^\"]*\"" | head -1 | cut -d'"' -f4; }
wait_ready() {
  for _ in $(seq 1 100); do
    [ "$(curl -s -o /dev/null -w '%{http_code}' "$base/readyz")" = 200 ] && return 0
    sleep 0.2
  done
  say "/readyz never answered 200"; "${podman[@]}" logs "$1" >&2; return 1
}
start() { # name, volume or folder
  "${podman[@]}" run -d "${run_opts[@]}" --name "$1" -p "127.0.0.1:$port:4321" -v "$2:/data" --stop-timeout 45 "$image" >/dev/null
  wait_ready "$1"
}
listed() { curl -sf "$base/api/citizens?limit=200" | grep -q "\"memberId\":\"$1\""; }
speaks() { # memberId, passport
  [ "$(curl -s -o /dev/null -w '%{http_code}' -X POST "$base/api/intelligence/message" -H 'Content-Type: application/json' \
    -H "Authorization: Bearer $2" -d "{\"message\":\"smoke\",\"citizenId\":\"$1\"}")" = 201 ]
}

start "$name" "$volume"
[ "$(curl -s "$base/livez")" = ok ]
say "/livez and /readyz answer"
"${podman[@]}" healthcheck run "$name" >/dev/null
say "HEALTHCHECK passes"
[ "$("${podman[@]}" exec "$name" id -u)" != 0 ]
say "runs as uid $("${podman[@]}" exec "$name" id -u)"

answer=$(curl -sf -X POST "$base/api/citizenship/oath" -H 'Content-Type: application/json' -d '{"name":"smoke-agent","purpose":"check the image"}')
member=$(field memberId <<<"$answer")
passport=$(field passportNumber <<<"$answer")
[ -n "$member" ] && [ -n "$passport" ]
say "oath taken: $member"

"${podman[@]}" restart "$name" >/dev/null
wait_ready "$name"
listed "$member"
speaks "$member" "$passport"
say "after a restart the citizen is listed and its passport verifies"

# A live backup from the host, restored into a folder a second container serves.
"$here/backup-embedded.sh" "$("${podman[@]}" volume inspect --format '{{.Mountpoint}}' "$volume")" "$work/backup.tar.gz"
"$here/restore-embedded.sh" "$work/backup.tar.gz" "$work/restored"
chown -R 10001:10001 "$work/restored"
"${podman[@]}" stop "$name" >/dev/null
[ "$("${podman[@]}" inspect --format '{{.State.ExitCode}}' "$name")" = 0 ]
say "SIGTERM stops it cleanly (exit 0)"
start "$name-restored" "$work/restored"
listed "$member"
speaks "$member" "$passport"
say "a live backup restored into a new container keeps the citizen and its passport"
say "all checks passed"
