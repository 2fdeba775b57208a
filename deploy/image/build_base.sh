#!/usr/bin/env bash
# The Dockerfile's base image built from Debian's own packages, for machines that cannot pull one from a
# public registry: Debian bookworm (Python 3.11) with python3-venv and CA certificates, by debootstrap,
# imported into podman.
#
#   deploy/image/build_base.sh [IMAGE] [MIRROR]
#
# IMAGE defaults to localhost/attention-viz-base:bookworm; MIRROR to the first Debian mirror in this
# machine's apt sources (else http://deb.debian.org/debian). Nothing is done when IMAGE exists already.
# Needs root, debootstrap and podman.
set -euo pipefail
IMAGE=${1:-localhost/attention-viz-base:bookworm}
MIRROR=${2:-$(grep -hoE '(URIs:|deb) +https?://[^ ]+/debian/?( |$)' /etc/apt/sources.list /etc/apt/sources.list.d/* 2>/dev/null \
  | grep -oE 'https?://[^ ]+' | head -1 || true)}
MIRROR=${MIRROR:-http://deb.debian.org/debian}

if podman image exists "$IMAGE"; then
  echo "base image $IMAGE exists"
  exit 0
fi
ROOTFS=$(mktemp -d /var/tmp/attention-viz-rootfs.XXXXXX)
# debootstrap mounts /proc and /sys inside the tree while it works: unmount before removing it
trap 'umount -R "$ROOTFS/proc" "$ROOTFS/sys" 2>/dev/null || true; rm -rf --one-file-system "$ROOTFS" "$ROOTFS.log"' EXIT
echo "debootstrap bookworm from $MIRROR into $ROOTFS"
nice -n 10 debootstrap --variant=minbase --include=python3,python3-venv,ca-certificates \
  bookworm "$ROOTFS" "$MIRROR" >"$ROOTFS.log" 2>&1 || { tail -30 "$ROOTFS.log"; exit 1; }
rm -f "$ROOTFS.log"
# apt's downloaded packages and lists are not part of the image
rm -rf "$ROOTFS"/var/cache/apt/archives/*.deb "$ROOTFS"/var/lib/apt/lists/*
tar -C "$ROOTFS" --numeric-owner --exclude=./proc/* --exclude=./sys/* --exclude=./dev/* -c . | podman import \
  --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
  --change 'ENV LANG=C.UTF-8' \
  --change 'CMD ["python3"]' - "$IMAGE"
echo "base image $IMAGE built"
