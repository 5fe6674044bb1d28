# Sourced by the device-machine scripts (tests/gpu/run.sh, benchmarks/sim/validate/device.sh):
# unpacks what tests/gpu/pack.sh carried in .gpu-carry and points the environment at it.
#
#   spora_carry_binaries ROOT   unpacks pack.tar.xz; sets PACK (empty when absent) and puts its
#                               lib/ and the image's CUDA libraries on LD_LIBRARY_PATH
#   spora_carry_mpi ROOT DIR    unpacks mpi.tar.xz into DIR and exports what Open MPI needs to run
#                               from there (mpirun on PATH, its components, help texts, root allowed)

spora_carry_binaries() {
  local root=$1 libs=/usr/local/cuda/lib64:/usr/local/nvidia/lib64 d
  # The CUDA libraries of the image: the toolkit's, and the pip wheels' (nvidia-cublas ...).
  for d in $(find /opt /usr/local /usr/lib -type d -path '*/nvidia/*/lib' 2>/dev/null | head -20); do
    libs="$libs:$d"
  done
  PACK=""
  if [ -f "$root/.gpu-carry/pack.tar.xz" ]; then
    PACK=/tmp/spora-gpu-pack-$$
    mkdir -p "$PACK" && xz -dc "$root/.gpu-carry/pack.tar.xz" | tar -C "$PACK" -xf - || PACK=""
  fi
  [ -n "$PACK" ] && libs="$PACK/lib:$libs"
  export LD_LIBRARY_PATH="$libs:${LD_LIBRARY_PATH:-}"
}

spora_carry_mpi() {
  local root=$1 dir=$2
  [ -f "$root/.gpu-carry/mpi.tar.xz" ] || return 1
  mkdir -p "$dir" && xz -dc "$root/.gpu-carry/mpi.tar.xz" | tar -C "$dir" -xf - || return 1
  export PATH="$dir/bin:$PATH"
  export LD_LIBRARY_PATH="$dir/lib:${LD_LIBRARY_PATH:-}"
  export OMPI_MCA_mca_base_component_path="$dir/openmpi3"
  export PMIX_MCA_mca_base_component_path="$dir/pmix2/lib/pmix"
  export OPAL_PKGDATADIR="$dir/share"
  # What Debian's /etc/openmpi/openmpi-mca-params.conf sets on the development machine.
  export OMPI_MCA_mtl='^ofi' OMPI_MCA_btl_base_warn_component_unused=0
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
}
