#!/usr/bin/env bash
# setup-deps.sh makes sure the Debian packages the test suites drive are
# installed: the reference server (zookeeper), Kazoo for /usr/bin/python3
# (python3-kazoo), Ed25519 for the Kazoo fencing scenario
# (python3-cryptography), Curator's jars (libcurator-recipes-java) and the
# headless browser the web console's tests drive (chromium, through
# chromedp), and an MIT KDC with Kazoo's GSSAPI client for the Kerberos
# tests (krb5-kdc, krb5-admin-server, krb5-user, python3-pure-sasl,
# python3-kerberos), and pytest, mock and objgraph for Kazoo's whole upstream
# suite (make kazoo-upstream). As root it installs whatever is missing; otherwise it prints
# the command and fails.
set -euo pipefail

PKGS=(zookeeper python3-kazoo python3-pytest python3-mock python3-objgraph python3-cryptography libcurator-recipes-java openssl chromium
	krb5-kdc krb5-admin-server krb5-user python3-pure-sasl python3-kerberos)

installed() {
	dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'install ok installed'
}

missing=()
for p in "${PKGS[@]}"; do
	installed "$p" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
	echo "setup-deps: ${PKGS[*]} installed"
	exit 0
fi

echo "setup-deps: missing Debian packages: ${missing[*]}"
if ! command -v apt-get >/dev/null 2>&1; then
	echo "setup-deps: apt-get not found; install ${PKGS[*]} (Debian/Ubuntu package names) by hand" >&2
	exit 1
fi
if [ "$(id -u)" -ne 0 ]; then
	echo "setup-deps: run: sudo apt-get update && sudo apt-get install -y ${PKGS[*]}" >&2
	exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update
apt-get install -y "${missing[@]}"
for p in "${missing[@]}"; do
	installed "$p" || { echo "setup-deps: $p still not installed" >&2; exit 1; }
done
echo "setup-deps: installed ${missing[*]}"
