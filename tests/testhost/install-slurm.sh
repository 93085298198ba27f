#!/bin/sh
# Installs a real Slurm for the Slurm tests (Debian's slurm-wlm + munge), when this machine lets us.
# Idempotent; silent when both are there, else one line on what it did or why it skipped. Never
# fails the build: without these packages the Slurm tests (tests/testhost/test_slurm_cluster.py,
# tests/hosts/test_slurm.py, tests/lab/test_slurm_watch.py) skip and say why.
# The packages' own services are NOT started: the tests start private daemons (tests/testhost/slurm.py).
need=""
for exe in /usr/sbin/slurmctld /usr/sbin/slurmd /usr/bin/sbatch; do
  [ -x $exe ] || { need="slurm-wlm"; break; }
done
{ [ -x /usr/sbin/munged ] && command -v mungekey >/dev/null 2>&1; } || need="$need munge"
[ -z "$need" ] && exit 0
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
  echo "slurmdeps: missing $need; not root or no apt-get, so the Slurm tests will skip" >&2
  exit 0
fi
# No daemon may start from the packages' maintainer scripts (a machine-wide munged or slurmd
# would outlive the tests): hold a policy-rc.d for the install when the machine has none.
policy=/usr/sbin/policy-rc.d
if [ ! -e $policy ]; then
  printf '#!/bin/sh\n# ddlab install-slurm.sh: temporary, removed after the install\nexit 101\n' >$policy
  chmod 755 $policy
  trap 'rm -f $policy' EXIT
  trap 'exit 130' INT TERM
fi
export DEBIAN_FRONTEND=noninteractive
if apt-get install -y -q --no-install-recommends $need >/dev/null 2>&1 \
   || { apt-get update -q >/dev/null 2>&1 \
        && apt-get install -y -q --no-install-recommends $need >/dev/null 2>&1; }; then
  echo "slurmdeps: installed $need"
else
  echo "slurmdeps: apt-get install $need failed; the Slurm tests will skip" >&2
fi
exit 0
