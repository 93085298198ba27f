#!/bin/sh
# Installs what the real-host tests need (Debian packages), when this machine lets us.
# Never fails the build: tests that still lack a tool skip and say why.
need=""
[ -x /usr/sbin/sshd ] || need="$need openssh-server"
command -v systemd-analyze >/dev/null 2>&1 && [ -x /lib/systemd/systemd ] || need="$need systemd"
for tool in nsenter unshare setpriv; do command -v $tool >/dev/null 2>&1 || { need="$need util-linux"; break; }; done
command -v ssh-keygen >/dev/null 2>&1 || need="$need openssh-client"
[ -z "$need" ] && exit 0
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
  echo "hostdeps: missing$need; not root or no apt-get, so the real-host tests will skip" >&2
  exit 0
fi
echo "hostdeps: installing$need"
export DEBIAN_FRONTEND=noninteractive
apt-get install -y -q $need >/dev/null 2>&1 \
  || { apt-get update -q >/dev/null 2>&1 && apt-get install -y -q $need >/dev/null 2>&1; } \
  || echo "hostdeps: apt-get install$need failed; the real-host tests will skip" >&2
exit 0
