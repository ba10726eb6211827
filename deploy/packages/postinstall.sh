#!/bin/sh
# After install or upgrade: systemd learns of the unit; an upgrade restarts
# a running service on the new binary. A new install starts nothing: adapt
# /etc/gpuwatch/config.yaml, then systemctl enable --now gpuwatch.
set -e
# Not booted with systemd (a container, a chroot): nothing to tell it.
[ -d /run/systemd/system ] || exit 0
systemctl daemon-reload || true
case "$1" in
configure) # deb: $2 is the version upgraded from, empty on a first install
	if [ -n "${2:-}" ]; then systemctl try-restart gpuwatch.service || true; fi ;;
[0-9]*) # rpm: $1 counts the versions installed once this one is
	if [ "$1" -gt 1 ]; then systemctl try-restart gpuwatch.service || true; fi ;;
esac
exit 0
