#!/usr/bin/env bash
# Builds the agent-node container image from deploy/Containerfile with podman.
#
#   deploy/build-image.sh                 # FROM docker.io/library/debian:bookworm-slim (a registry)
#   deploy/build-image.sh --make-base     # no registry: a Debian bookworm base made with debootstrap
#
# --make-base makes a minimal Debian bookworm root filesystem (debootstrap --variant=minbase, from
# DEBIAN_MIRROR) and imports it as BASE_IMAGE, unless podman already has that image. The image is
# then built on it; the build stage installs Debian's nodejs and npm from the same mirror and npm
# packages from the npm registry.
#
# Environment:
#   IMAGE          the tag to build (localhost/agent-node:latest)
#   BASE_IMAGE     any Debian bookworm image (docker.io/library/debian:bookworm-slim; with
#                  --make-base, localhost/debian:bookworm-minbase)
#   DEBIAN_MIRROR  where debootstrap gets Debian (http://deb.debian.org/debian)
#   CANON_URL      written into the documents at build time (SITE_URL is set when the container runs)
#   EXTRA_CA_FILE  a CA bundle the build's npm must trust, on a network whose TLS is intercepted;
#                  mounted for the build only, never copied into the image
#   BUILD_OPTS     more `podman build` options, split on spaces, where podman's default runtime or
#                  limits do not work (see docs/deploy.md): `--runtime runc --ulimit nofile=20000:20000`
#
# Exit codes: 0 built; 1 a step failed (its own message above); 2 usage.
set -euo pipefail

make_base=false
case "${1:-}" in
  --make-base) make_base=true ;;
  '') ;;
  *) echo "usage: $0 [--make-base]" >&2; exit 2 ;;
esac

root=$(cd "$(dirname "$0")/.." && pwd)
image=${IMAGE:-localhost/agent-node:latest}
mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
if $make_base; then
  base=${BASE_IMAGE:-localhost/debian:bookworm-minbase}
else
  base=${BASE_IMAGE:-docker.io/library/debian:bookworm-slim}
fi

if $make_base && ! podman image exists "$base"; then
  command -v debootstrap >/dev/null || { echo "debootstrap is not installed (apt-get install debootstrap)" >&2; exit 1; }
  [ "$(id -u)" = 0 ] || { echo "debootstrap needs root" >&2; exit 1; }
  work=$(mktemp -d "${TMPDIR:-/var/tmp}/agent-node-base.XXXXXX")
  trap 'rm -rf "$work"' EXIT
  echo "making a Debian bookworm base from $mirror in $work/rootfs" >&2
  debootstrap --variant=minbase bookworm "$work/rootfs" "$mirror" >"$work/debootstrap.log" 2>&1 \
    || { tail -20 "$work/debootstrap.log" >&2; exit 1; }
  # What an image needs no copy of: downloaded packages, package lists.
  rm -rf "$work/rootfs/var/cache/apt/archives/"*.deb "$work/rootfs/var/lib/apt/lists/"*
  tar --numeric-owner -C "$work/rootfs" -c . | podman import --change 'CMD ["/bin/bash"]' - "$base" >/dev/null
  echo "imported the base as $base" >&2
fi

ca_opts=()
if [ -n "${EXTRA_CA_FILE:-}" ]; then
  ca_opts=(--volume "$(realpath "$EXTRA_CA_FILE"):/run/extra-ca.crt:ro" --build-arg NODE_EXTRA_CA_CERTS=/run/extra-ca.crt)
fi

# --format docker: the OCI image format has no HEALTHCHECK, and buildah drops it there.
# shellcheck disable=SC2086 # BUILD_OPTS is a list of options
podman build --format docker --pull=missing ${BUILD_OPTS:-} \
  "${ca_opts[@]}" --build-arg "BASE=$base" \
  --build-arg "CANON_URL=${CANON_URL:-https://canon.agentnode.example}" \
  -f "$root/deploy/Containerfile" -t "$image" "$root"
echo "built $image" >&2
