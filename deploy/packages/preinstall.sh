#!/bin/sh
# Before gpuwatch's files are unpacked: the system user and group the
# service runs as (and that own /etc/gpuwatch/config.yaml's group). Kept on
# removal, as system users are.
set -e
if ! getent group gpuwatch >/dev/null; then
	groupadd --system gpuwatch
fi
if ! getent passwd gpuwatch >/dev/null; then
	useradd --system --gid gpuwatch --home-dir /var/lib/gpuwatch --no-create-home \
		--shell /usr/sbin/nologin --comment "gpuwatch GPU monitor" gpuwatch
fi
