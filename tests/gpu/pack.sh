#!/usr/bin/env bash
# Packs what tests/gpu/run.sh needs on a GPU machine whose image lacks Spora's dependencies
# (ANTLR, SimGrid, OpenBLAS, fmt, yaml-cpp, Boost ... of cmake/Dependencies.cmake): the binaries
# test_gpu, spora and bench_gpu built here for sm_90 (stripped), the shared libraries they load that a
# CUDA image does not have (ldd; not glibc, libstdc++, the driver, cuBLAS, NVRTC or NCCL, which
# the image has), and the Fashion-MNIST files when they fit. Run from the repository root on the
# development machine (a few minutes: xz), then call the device tool with carry [".gpu-carry"] and the command
# `bash tests/gpu/run.sh`. The working tree and the carried folder travel in 64 MiB together.
#
#   tests/gpu/pack.sh [build-dir]      (default: build, configured with the CUDA toolkit)
set -euo pipefail
BUILD=${1:-build}
DEST=.gpu-carry
LIMIT_MB=${SPORA_PACK_LIMIT_MB:-60}
ninja -C "$BUILD" -j2 test_gpu spora_cli bench_gpu test_comm
rm -rf "$DEST"
mkdir -p "$DEST/bin" "$DEST/lib"
for b in test_gpu spora bench_gpu test_comm; do
  cp "$BUILD/bin/$b" "$DEST/bin/$b"
  strip --strip-debug "$DEST/bin/$b"
done
# Libraries the binaries load, less those every Linux or CUDA image has.
skip='^(libc|libm|libpthread|libdl|librt|ld-linux-x86-64|libstdc\+\+|libgcc_s|libcuda|libcublas|libcublasLt|libnvrtc.*|libnvJitLink|libnccl|libnvidia.*|linux-vdso)\.so'
for b in "$DEST"/bin/*; do
  ldd "$b" | awk '/=> \//{print $3}'
done | sort -u | while read -r lib; do
  name=$(basename "$lib")
  if ! echo "$name" | grep -Eq "$skip"; then
    cp -L "$lib" "$DEST/lib/$name"
    strip --strip-unneeded "$DEST/lib/$name" 2>/dev/null || true
  fi
done
# Open MPI for the device image, which has none (tests/gpu/mpi_env.sh sets it up there): its
# launcher (orterun, as mpirun, and orted), its components, its help texts and the libraries they
# load. run.sh's GPU rank is an MPI singleton; benchmarks/sim/validate/device.sh runs mpirun.
mpi_pack=$(mktemp -d)
mkdir -p "$mpi_pack/lib" "$mpi_pack/openmpi3" "$mpi_pack/bin"
ompi=/usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3
if [ -d "$ompi" ]; then
  cp -L "$ompi"/*.so "$mpi_pack/openmpi3/"
  [ -d /usr/lib/x86_64-linux-gnu/pmix2 ] && cp -rL /usr/lib/x86_64-linux-gnu/pmix2 "$mpi_pack/pmix2"
  cp -L /usr/bin/orterun "$mpi_pack/bin/mpirun"
  cp -L /usr/bin/orted "$mpi_pack/bin/orted"
  [ -d /usr/share/openmpi ] && cp -rL /usr/share/openmpi "$mpi_pack/share"
  for f in "$ompi"/*.so "$mpi_pack"/bin/*; do ldd "$f" | awk '/=> \//{print $3}'; done | sort -u |
    grep -Ev '/(libc|libm|libpthread|libdl|librt|libstdc\+\+|libgcc_s)\.so' |
    while read -r lib; do cp -L "$lib" "$mpi_pack/lib/"; done
  tar -C "$mpi_pack" -cf - . | xz -T2 -6 >"$DEST/mpi.tar.xz"
fi
rm -rf "$mpi_pack"
# Shared libraries compress about 4x: one archive travels, run.sh unpacks it.
tar -C "$DEST" -cf - bin lib | xz -T2 -6 >"$DEST/pack.tar.xz"
rm -rf "$DEST/bin" "$DEST/lib"
size_mb() { du -sm "$1" | cut -f1; }
tree_mb=$(git ls-files -z | xargs -0 du -ck 2>/dev/null | tail -1 | awk '{print int($1/1024)+1}')
used=$((tree_mb + $(size_mb "$DEST")))
if [ -d /usr/share/datasets/fashion-mnist ] && [ $((used + 31)) -le "$LIMIT_MB" ]; then
  cp -r /usr/share/datasets/fashion-mnist "$DEST/fashion-mnist"
  echo "pack: Fashion-MNIST included"
else
  echo "pack: Fashion-MNIST left out ($used MiB used of $LIMIT_MB; fashion_mlp will be skipped there)"
fi
echo "pack: $DEST is $(size_mb "$DEST") MiB (working tree about $tree_mb MiB); the archive holds:"
xz -dc "$DEST/pack.tar.xz" | tar -tf - | tr '\n' ' '
echo
