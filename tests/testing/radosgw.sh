#!/usr/bin/env bash
# radosgw.sh: a real S3 server for tests, Ceph's RADOS Gateway from Debian's packages
# (ceph-mon, ceph-osd, radosgw, ceph-common): one monitor, one memstore OSD and the gateway
# on 127.0.0.1, everything (data, sockets, logs, pid files) under one scratch directory.
#
#   radosgw.sh start DIR   starts the three daemons, creates the user `test` with the
#                          access key / secret below, and writes DIR/env (RGW_PORT=...,
#                          RGW_ENDPOINT=http://127.0.0.1:PORT, RGW_ACCESS_KEY, RGW_SECRET_KEY);
#                          exits 0 once the gateway answers S3 requests (a few seconds).
#   radosgw.sh stop DIR    stops radosgw, then the OSD, then the monitor (the other order
#                          leaves radosgw hanging ~120 s in its shutdown).
#   radosgw.sh restart-gateway DIR SECONDS
#                          kills radosgw (SIGKILL, as a crash), waits SECONDS, starts it
#                          again on the same port and returns once it answers; the
#                          monitor and the OSD, and so the data, stay.
#
# The settings are the ones that make a one-node cluster start in seconds (checked on
# Debian 12's Ceph 16.2): a monmap built by hand, cephx off for the daemons (S3 signatures
# are still checked by the gateway), memstore, pools of size 1, a fast paxos.
#
# And the two that make the gateway cost what it costs where operators run it (measured
# on 2 shared cores, 2013 GETs of ~100 KB objects, tests/benchmarks/s3_bench.py): logging
# down (`debug ... = 0/0`: Ceph's default 1/5 writes two lines per request and formats
# every level-5 message into an in-memory ring; errors are still logged) and a beast
# thread pool sized to the machine (`rgw thread pool size`: Ceph's default 512 threads
# all wait on one asio context, and each request wakes several of them). Together they
# took radosgw from ~1.15 to ~0.55 ms of CPU per GET (the OSD's ~0.25 ms unchanged).
set -euo pipefail

ACCESS_KEY=${RGW_ACCESS_KEY:-FLOWLOADERTESTKEY000}
SECRET_KEY=${RGW_SECRET_KEY:-flowloader/test/secret/key/0000000000000}

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

# wait_for DESCRIPTION SECONDS COMMAND...: retry COMMAND every 0.1 s until it succeeds.
wait_for() {
  local what=$1 seconds=$2
  shift 2
  local deadline=$((SECONDS + seconds))
  until "$@" >/dev/null 2>&1; do
    if ((SECONDS >= deadline)); then
      echo "radosgw.sh: $what did not come up within ${seconds}s (logs in $DIR)" >&2
      return 1
    fi
    sleep 0.1
  done
}

start() {
  mkdir -p "$DIR"/{mon,osd,run,log}
  local mon_port rgw_port fsid
  mon_port=$(free_port)
  rgw_port=$(free_port)
  fsid=$(python3 -c 'import uuid; print(uuid.uuid4())')
  cat >"$DIR/ceph.conf" <<CONF
[global]
fsid = $fsid
mon host = v2:127.0.0.1:$mon_port
auth cluster required = none
auth service required = none
auth client required = none
ms mon client mode = crc
run dir = $DIR/run
admin socket = $DIR/run/\$name.asok
log file = $DIR/log/\$name.log
pid file = $DIR/run/\$name.pid
osd objectstore = memstore
osd pool default size = 1
osd pool default min size = 1
osd pool default pg num = 8
osd pool default pgp num = 8
osd crush chooseleaf type = 0
mon data avail crit = 0
mon allow pool size one = true
debug rgw = 0/0
debug ms = 0/0
debug objecter = 0/0
debug rados = 0/0
debug auth = 0/0
debug monc = 0/0
debug asok = 0/0
[mon.a]
mon data = $DIR/mon
public addr = v2:127.0.0.1:$mon_port
paxos propose interval = 0.05
[osd.0]
osd data = $DIR/osd
[client.rgw.a]
rgw frontends = beast endpoint=127.0.0.1:$rgw_port
rgw data = $DIR/rgw
rgw thread pool size = 8
CONF
  local conf=(-c "$DIR/ceph.conf")
  monmaptool --create --fsid "$fsid" --addv a "[v2:127.0.0.1:$mon_port]" "$DIR/monmap" >/dev/null
  ceph-mon "${conf[@]}" --mkfs -i a --monmap "$DIR/monmap" >/dev/null 2>&1
  ceph-mon "${conf[@]}" -i a 2>/dev/null
  wait_for "ceph-mon" 20 ceph "${conf[@]}" --connect-timeout 2 mon stat
  local id
  id=$(ceph "${conf[@]}" osd create)
  ceph-osd "${conf[@]}" -i "$id" --mkfs >/dev/null 2>&1
  ceph "${conf[@]}" osd crush add "osd.$id" 1 root=default >/dev/null 2>&1
  ceph-osd "${conf[@]}" -i "$id" 2>/dev/null
  radosgw "${conf[@]}" -n client.rgw.a 2>/dev/null
  wait_for "radosgw" 60 curl -sf "http://127.0.0.1:$rgw_port/"
  radosgw-admin "${conf[@]}" user create --uid=test --display-name=test \
    --access-key="$ACCESS_KEY" --secret="$SECRET_KEY" >/dev/null 2>&1
  cat >"$DIR/env" <<ENV
RGW_PORT=$rgw_port
RGW_ENDPOINT=http://127.0.0.1:$rgw_port
RGW_ACCESS_KEY=$ACCESS_KEY
RGW_SECRET_KEY=$SECRET_KEY
ENV
}

# stop_daemon NAME: SIGTERM the daemon from its pid file and wait (up to 10 s, then KILL).
stop_daemon() {
  local pidfile="$DIR/run/$1.pid"
  [ -f "$pidfile" ] || return 0
  local pid
  pid=$(cat "$pidfile")
  kill "$pid" 2>/dev/null || return 0
  for _ in $(seq 100); do
    kill -0 "$pid" 2>/dev/null || return 0
    sleep 0.1
  done
  kill -9 "$pid" 2>/dev/null || true
}

restart_gateway() {
  local pidfile="$DIR/run/client.rgw.a.pid" port
  [ -f "$pidfile" ] && kill -9 "$(cat "$pidfile")" 2>/dev/null || true
  sleep "${DOWN:?usage: radosgw.sh restart-gateway DIR SECONDS}"
  port=$(sed -n 's/^RGW_PORT=//p' "$DIR/env")
  radosgw -c "$DIR/ceph.conf" -n client.rgw.a 2>/dev/null
  wait_for "radosgw (restarted)" 60 curl -sf "http://127.0.0.1:$port/"
}

stop() {
  stop_daemon client.rgw.a
  stop_daemon osd.0
  stop_daemon mon.a
}

DIR=${2:?usage: radosgw.sh start|stop|restart-gateway DIR [SECONDS]}
DIR=$(realpath -m "$DIR")
DOWN=${3:-}
case "$1" in
  start) start ;;
  stop) stop ;;
  restart-gateway) restart_gateway ;;
  *) echo "usage: radosgw.sh start|stop|restart-gateway DIR [SECONDS]" >&2; exit 2 ;;
esac
