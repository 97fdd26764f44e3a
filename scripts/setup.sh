#!/bin/bash
# Installs every Debian 12 package the build, the tests and the demo need,
# reserves hugepages and mounts hugetlbfs. Idempotent: runs apt-get only for
# what is missing, and `apt-get update` at most once.
set -euo pipefail

PACKAGES=(
  # build
  build-essential meson ninja-build pkg-config clang-14 llvm-14 lld-14 libclang-rt-14-dev
  # libraries
  dpdk dpdk-dev libdpdk-dev libbpf-dev libxdp-dev libibverbs-dev zlib1g-dev libisal-dev
  libpcap-dev libinih-dev libcriterion-dev
  # the unmodified RDMA programs we must run and the reference suite
  ibverbs-utils ibverbs-providers perftest python3-pyverbs rdma-core
  rdmacm-utils librdmacm-dev
  # test and lab tools
  iproute2 ethtool iputils-ping tcpdump tshark python3-scapy python3 valgrind
  gnuplot-nox qemu-system-x86 busybox-static cpio kmod util-linux procps psmisc
)

if [ "$(id -u)" != 0 ]; then
  echo "setup.sh: must run as root (apt-get, hugepages)" >&2
  exit 1
fi

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup.sh: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  # tshark asks whether non-root users may capture; answer for it.
  echo 'wireshark-common wireshark-common/install-setuid boolean false' | debconf-set-selections
  apt-get update -q
  apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

# Hugepages for DPDK (tests also run with --no-huge where a PMD allows it).
want=${ROCE_HUGEPAGES:-512}
have=$(cat /proc/sys/vm/nr_hugepages)
if [ "$have" -lt "$want" ]; then
  echo "$want" > /proc/sys/vm/nr_hugepages || true
fi
if ! mountpoint -q /dev/hugepages; then
  mkdir -p /dev/hugepages
  mount -t hugetlbfs nodev /dev/hugepages || echo "setup.sh: could not mount hugetlbfs" >&2
fi
echo "setup.sh: ok (hugepages $(cat /proc/sys/vm/nr_hugepages))"
