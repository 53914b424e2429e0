#!/bin/sh
# Builds the FreeRTOS guest and boots it natively on QEMU virt (no hypervisor): the image
# enters at EL2 and drops to EL1 itself. `--icount` runs with deterministic virtual time
# (1 instruction = 1 ns). Extra arguments go to QEMU. Run from anywhere in the repository.
set -eu
cd "$(dirname "$0")/../.."
icount=""
if [ "${1:-}" = "--icount" ]; then
    icount="-icount shift=0,align=off,sleep=off"
    shift
fi
cargo build -p partita-freertos --target aarch64-unknown-none --release
mkdir -p build/guests
aarch64-linux-gnu-objcopy -O binary target/aarch64-unknown-none/release/freertos \
    build/guests/freertos.bin
# shellcheck disable=SC2086 # $icount is a list of options
exec qemu-system-aarch64 -M virt,virtualization=on,gic-version=3 -cpu cortex-a72 -m 4G \
    -smp 1 -nographic $icount -kernel build/guests/freertos.bin "$@"
