#!/usr/bin/env bash
# Make sure a Docker Engine answers here, for the Docker provider's tests.
#
# Nothing starts one on these machines: when no engine answers, install Debian's docker.io (if
# dockerd is missing and we are root) and start dockerd in the background, then wait for it.
# Exits 0 when an engine answers; 1 (with the reason) when none can be started.
set -euo pipefail

LOG=${DOCKERD_LOG:-/var/log/openenv-gym-dockerd.log}
engine_up() { docker version --format '{{.Server.Version}}' >/dev/null 2>&1; }

if engine_up; then exit 0; fi
if [ "$(id -u)" != 0 ]; then
    echo "docker-engine: no Docker Engine answers, and only root can start one here" >&2
    exit 1
fi
if ! command -v dockerd >/dev/null || ! command -v docker >/dev/null; then
    echo "docker-engine: installing Debian's docker.io" >&2
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq docker.io >/dev/null
fi
# A dockerd that was killed (the end of an earlier session) leaves its pid files: remove them, or
# a reused pid makes the new dockerd refuse to start.
if ! pgrep -x dockerd >/dev/null; then
    rm -f /var/run/docker.pid /var/run/docker/containerd/containerd.pid
fi
# No IP forwarding or masquerading: containers publish ports on loopback and need no route out.
nohup dockerd --ip-forward=false --ip-masq=false >"$LOG" 2>&1 &
for _ in $(seq 1 300); do
    if engine_up; then exit 0; fi
    sleep 0.1
done
echo "docker-engine: dockerd did not answer within 30 s; its log ($LOG) ends with:" >&2
tail -n 20 "$LOG" >&2
exit 1
