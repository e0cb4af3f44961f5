#!/usr/bin/env bash
# Restores an archive of deploy/backup-embedded.sh into a new DATA_DIR.
#
#   deploy/restore-embedded.sh /backup/agent-node-20261124T1100Z.tar.gz /var/lib/agent-node.restored
#
# The target must not exist or be empty: a restore never mixes with a store's files (stop the
# server, move its folder aside, restore, point DATA_DIR at the result or move it into place).
# The files belong to whoever runs this: run it as the service's user, or chown the folder after
# (`chown -R agent-node: DIR`). The server started on the folder replays the journals on top of the
# snapshot; the receipt log keeps its signing key (unless LOG_SIGNING_KEY_FILE names one).
#
# Exit codes: 0 restored; 1 the archive could not be read or unpacked (nothing is left at the
# target; the reason is on stderr); 2 usage: wrong arguments, the archive is missing, the target
# is not empty, or the archive holds no store.
set -Eeuo pipefail
export LC_ALL=C
# Any command that fails ends the script with 1 (not with that command's own code: tar's is 2).
trap 'echo "$0: failed: $BASH_COMMAND" >&2; exit 1' ERR

usage() {
  echo "usage: $0 ARCHIVE.tar.gz DATA_DIR" >&2
  exit 2
}
[ $# -eq 2 ] || usage
archive=$1
dir=${2%/}
[ -f "$archive" ] || { echo "$archive is not a file" >&2; exit 2; }
if [ -e "$dir" ] && { [ ! -d "$dir" ] || [ -n "$(ls -A "$dir")" ]; }; then
  echo "$dir exists and is not an empty folder: restore into a new one" >&2
  exit 2
fi

umask 077
parent=$(dirname "$dir")
mkdir -p "$parent"
work=$(mktemp -d "$parent/.agent-node-restore.XXXXXX")
trap 'rm -rf "$work"' EXIT

tar -C "$work" --no-same-owner --no-same-permissions -xzf "$archive"
if ! compgen -G "$work/journal-*.jsonl" >/dev/null && ! compgen -G "$work/snapshot.json*" >/dev/null; then
  echo "$archive holds no snapshot and no journal-*.jsonl: not a backup of an embedded store" >&2
  exit 2
fi
[ ! -d "$dir" ] || rmdir "$dir"
chmod 0700 "$work"
mv "$work" "$dir"
trap - EXIT
echo "restored $archive into $dir ($(ls "$dir" | wc -l) files)" >&2
