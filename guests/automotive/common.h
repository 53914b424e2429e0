/*
 * Shared by the automotive programs: the input-size argument, a fixed-seed
 * pseudo-random generator, a 64-bit FNV-1a checksum, the monotonic clock and
 * the `auto:` report line. It computes no benchmark itself and never reads
 * files: every input is generated from fixed seeds so runs are repeatable.
 */
#ifndef AUTOMOTIVE_COMMON_H
#define AUTOMOTIVE_COMMON_H

#include <stddef.h>
#include <stdint.h>

/* The two MiBench input sizes. */
enum input_size { INPUT_SMALL, INPUT_LARGE };

/* Reads argv[1] ("small" or "large"); prints usage and exits 2 otherwise. */
enum input_size parse_input(int argc, char **argv);

/* "small" or "large". */
const char *input_name(enum input_size size);

/* xorshift64* generator: same sequence on every host for the same seed. */
struct rng {
	uint64_t state;
};

void rng_seed(struct rng *rng, uint64_t seed);
uint64_t rng_next(struct rng *rng);
/* A value in [0, bound), bound > 0. */
uint32_t rng_below(struct rng *rng, uint32_t bound);

/* 64-bit FNV-1a over explicitly little-endian encodings. */
struct checksum {
	uint64_t state;
};

void checksum_init(struct checksum *sum);
void checksum_bytes(struct checksum *sum, const void *data, size_t length);
void checksum_u64(struct checksum *sum, uint64_t value);
void checksum_i64(struct checksum *sum, int64_t value);
/* Folds `value` rounded to a multiple of 1e-6, so the last bits of a libm
 * result do not change the checksum. */
void checksum_real(struct checksum *sum, double value);

/* CLOCK_MONOTONIC in nanoseconds (virtual time under QEMU's -icount). */
uint64_t monotonic_ns(void);

/* Prints `auto: program=<name> input=<size> ns=<ns> checksum=<hex>`. */
void report(const char *program, enum input_size size, uint64_t ns,
	    const struct checksum *sum);

#endif
