#!/bin/sh
# Before removal (not an upgrade): stop and disable the service.
set -e
[ -d /run/systemd/system ] || exit 0
case "$1" in
remove | 0) # a removal (deb), or an erase with no version left (0)
	systemctl disable --now gpuwatch.service || true ;;
esac
exit 0
