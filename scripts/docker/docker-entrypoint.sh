#!/usr/bin/env bash
# Entrypoint of the zkd container image (scripts/docker/Dockerfile). It
# takes the environment variables of the official ZooKeeper image, writes
# $ZOO_CONF_DIR/zoo.cfg from them unless one is mounted there, writes the
# myid file of an ensemble member, and runs the command (zkd with that
# zoo.cfg by default).
#
#   ZOO_CONF_DIR (/conf), ZOO_DATA_DIR (/data), ZOO_DATA_LOG_DIR (/datalog)
#   ZOO_TICK_TIME 2000, ZOO_INIT_LIMIT 5, ZOO_SYNC_LIMIT 2,
#   ZOO_MAX_CLIENT_CNXNS 60, ZOO_STANDALONE_ENABLED true,
#   ZOO_ADMINSERVER_ENABLED true, ZOO_AUTOPURGE_PURGEINTERVAL 0,
#   ZOO_AUTOPURGE_SNAPRETAINCOUNT 3, ZOO_4LW_COMMANDS_WHITELIST srvr,
#   ZOO_CLIENT_PORT 2181 (a standalone server's client port)
#   ZOO_MY_ID, ZOO_SERVERS: "server.1=zoo1:2888:3888;2181 server.2=…"
#   ZOO_CFG_EXTRA: more "key=value" words, appended
set -e

ZOO_CONF_DIR="${ZOO_CONF_DIR:-/conf}"
ZOO_DATA_DIR="${ZOO_DATA_DIR:-/data}"
ZOO_DATA_LOG_DIR="${ZOO_DATA_LOG_DIR:-/datalog}"
CONFIG="$ZOO_CONF_DIR/zoo.cfg"

if [ ! -f "$CONFIG" ]; then
  mkdir -p "$ZOO_CONF_DIR"
  {
    echo "dataDir=$ZOO_DATA_DIR"
    echo "dataLogDir=$ZOO_DATA_LOG_DIR"
    echo "tickTime=${ZOO_TICK_TIME:-2000}"
    echo "initLimit=${ZOO_INIT_LIMIT:-5}"
    echo "syncLimit=${ZOO_SYNC_LIMIT:-2}"
    echo "autopurge.snapRetainCount=${ZOO_AUTOPURGE_SNAPRETAINCOUNT:-3}"
    echo "autopurge.purgeInterval=${ZOO_AUTOPURGE_PURGEINTERVAL:-0}"
    echo "maxClientCnxns=${ZOO_MAX_CLIENT_CNXNS:-60}"
    echo "standaloneEnabled=${ZOO_STANDALONE_ENABLED:-true}"
    echo "admin.enableServer=${ZOO_ADMINSERVER_ENABLED:-true}"
    echo "4lw.commands.whitelist=${ZOO_4LW_COMMANDS_WHITELIST:-srvr}"
    if [ -z "$ZOO_SERVERS" ]; then
      echo "clientPort=${ZOO_CLIENT_PORT:-2181}"
    else
      for server in $ZOO_SERVERS; do
        echo "$server"
      done
    fi
    for word in $ZOO_CFG_EXTRA; do
      echo "$word"
    done
  } >"$CONFIG"
fi

if [ -n "$ZOO_MY_ID" ] && [ ! -f "$ZOO_DATA_DIR/myid" ]; then
  mkdir -p "$ZOO_DATA_DIR"
  echo "$ZOO_MY_ID" >"$ZOO_DATA_DIR/myid"
fi

exec "$@"
