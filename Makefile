# Partita: every target is a thin wrapper over `cargo xtask` (see `cargo xtask --help`).
# `make run` and `make test` first install whatever the machine is missing (`cargo xtask setup`).
# `make run` uses deterministic virtual time (--icount): the guests see the time their
# instructions take, never the emulator's slowness on a busy host.

CONFIG ?= configs/default.toml
CARGO ?= cargo

.PHONY: run test debug clean setup bench bench-quick hostile

run: setup
	$(CARGO) xtask run --config $(CONFIG) --icount

test: setup
	$(CARGO) xtask test

# The hostile probe suite alone (also part of `make test`): one line per probe, then
# `hostile: probes=<n> breaches=<n>`; fails unless every probe reported and none breached.
hostile: setup
	$(CARGO) xtask scenario hostile

debug: setup
	$(CARGO) xtask debug --config $(CONFIG)

setup:
	@command -v $(CARGO) >/dev/null 2>&1 || { \
	  echo "Partita needs Rust's cargo. Install rustup, then run make again:"; \
	  echo "  curl --proto '=https' --tlsv1.2 -sSf https://sh.rustup.rs | sh -s -- -y"; \
	  echo "  . \$$HOME/.cargo/env"; \
	  exit 1; }
	$(CARGO) xtask setup

clean:
	$(CARGO) xtask clean

bench: setup
	$(CARGO) xtask bench

bench-quick: setup
	$(CARGO) xtask bench --quick
