#!/bin/sh
# The Jupyter kernel driven by jupyter_client (tests/jupyter/kernel_test.py), with the first
# Python that has jupyter_client and ipykernel (Debian: python3-jupyter-client,
# python3-ipykernel); exit 77 (skipped) where none has.
#   kernel_test.sh SPORA
for py in python3 /usr/bin/python3; do
  if "$py" -c "import jupyter_client, ipykernel" 2>/dev/null; then
    exec "$py" "$(dirname "$0")/kernel_test.py" "$1" "$py"
  fi
done
echo "skipped: no Python here imports jupyter_client and ipykernel" >&2
exit 77
