#!/usr/bin/env bash
# A consistent backup of the embedded store's folder (DATA_DIR) while the server runs.
#
#   deploy/backup-embedded.sh /var/lib/agent-node /backup/agent-node-$(date -u +%Y%m%dT%H%M%SZ).tar.gz
#
# Every write the server acknowledged before this script started is in the archive; writes made
# while it runs may or may not be. The archive holds the receipt log's signing key (a secret): it
# is written with mode 0600.
#
# Why not `tar` of the live folder: the store appends to journal-*.jsonl and, now and then,
# compacts: it starts a new journal, writes its snapshot (snapshot.jsonl; snapshot.json in the
# earlier format, which the first new snapshot removes) or a delta of what is new since it
# (snapshot-<seq>.jsonl, removed by the next snapshot), a temp file renamed into place, and
# then deletes the journals the snapshot or delta now holds. A copy that takes the snapshot before the
# journals can get the old snapshot and miss the deleted journals, losing writes; tar takes files
# in directory order (or by name with --sort=name), and exits 1 ("file changed as we read it",
# "File removed before we read it") in the ordinary course. So this script:
#   1. copies the journals first, each only up to its last whole line (a journal is preallocated
#      with zeros, and its last line may be half-written while it is read); a journal deleted by a
#      compaction meanwhile is skipped, since the snapshot taken next holds it;
#   2. copies every other file but temporary ones (the deltas, the signing key); a delta removed
#      meanwhile is skipped, since only a snapshot that holds it removes it, and that one is taken
#      next (a delta the snapshot holds is ignored at a start);
#   3. copies the snapshot last: a rename replaces it whole, so the copy is one snapshot or the
#      next, and either holds everything the journals it deleted held (an earlier-format
#      snapshot.json first, then snapshot.jsonl: the old one is removed only once the new one is
#      in place, so one of the two is always found);
#   4. packs the copies (which no longer change) with tar and renames the archive into place.
#
# Exit codes: 0 the archive is written; 1 a copy or the archive failed (no archive is left at
# the path; the reason is on stderr); 2 usage: wrong arguments, DATA_DIR is not a store folder,
# or the archive path exists already.
set -Eeuo pipefail
export LC_ALL=C
# Any command that fails ends the script with 1 (not with that command's own code: tar's is 2).
trap 'echo "$0: failed: $BASH_COMMAND" >&2; exit 1' ERR

usage() {
  echo "usage: $0 DATA_DIR ARCHIVE.tar.gz" >&2
  exit 2
}
[ $# -eq 2 ] || usage
dir=${1%/}
archive=$2
[ -d "$dir" ] || { echo "$dir is not a folder" >&2; exit 2; }
if ! compgen -G "$dir/journal-*.jsonl" >/dev/null && ! compgen -G "$dir/snapshot.json*" >/dev/null; then
  echo "$dir holds no snapshot and no journal-*.jsonl: not an embedded store's DATA_DIR" >&2
  exit 2
fi
[ ! -e "$archive" ] || { echo "$archive exists already" >&2; exit 2; }

umask 077
stage=$(mktemp -d "$(dirname "$archive")/.agent-node-backup.XXXXXX")
trap 'rm -rf "$stage" "$archive.partial"' EXIT

# 1. Journals, oldest first: whole lines up to the first zero byte (sed -z reads up to it).
shopt -s nullglob
skipped=0
# Names of 12 digits or more, in the order of their numbers (a 13-digit name sorts first as text).
mapfile -t journals < <(cd "$dir" && printf '%s\n' journal-*.jsonl | grep -E '^journal-[0-9]{12,}\.jsonl$' | sort -t- -k2,2n)
for name in "${journals[@]}"; do
  journal="$dir/$name"
  if sed -z q "$journal" 2>/dev/null | tr -d '\000' | sed -z 's/[^\n]*$//' >"$stage/$name"; then
    continue
  fi
  [ ! -e "$journal" ] || { echo "cannot read $journal" >&2; exit 1; }
  # Compacted away since the listing: the snapshot copied below holds its entries.
  rm -f "$stage/$name"
  skipped=$((skipped + 1))
done

# 2. Every other file (the receipt log key), but temporary ones and the readiness probe's.
for file in "$dir"/* "$dir"/.[!.]*; do
  [ -f "$file" ] || continue
  name=$(basename "$file")
  case "$name" in
    journal-*.jsonl | snapshot.json | snapshot.jsonl | *.tmp | .readyz) continue ;;
  esac
  if ! cp -p "$file" "$stage/$name" 2>/dev/null; then
    # A delta removed meanwhile: the snapshot copied next holds it.
    if [[ $name == snapshot-*.jsonl && ! -e $file ]]; then continue; fi
    echo "cannot read $file" >&2
    exit 1
  fi
done

# 3. The snapshot, last: the earlier format first, then the current one.
for name in snapshot.json snapshot.jsonl; do
  # cp of a path that vanished (the old format, removed meanwhile) is no failure.
  if [ -e "$dir/$name" ] && ! cp "$dir/$name" "$stage/$name" 2>/dev/null && [ -e "$dir/$name" ]; then
    echo "cannot read $dir/$name" >&2
    exit 1
  fi
done

# 4. The archive, whole or not at all.
tar -C "$stage" --sort=name --numeric-owner -czf "$archive.partial" .
mv "$archive.partial" "$archive"
echo "backed up $dir to $archive ($(ls "$stage" | wc -l) files; $skipped journals compacted meanwhile)" >&2
