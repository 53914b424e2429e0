/*
 * Implementation of common.h: argument parsing, the xorshift64* generator,
 * FNV-1a checksums, the monotonic clock and the report line. Nothing here
 * allocates memory or touches files.
 */
#define _POSIX_C_SOURCE 200809L

#include "common.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define FNV_OFFSET 0xcbf29ce484222325ULL
#define FNV_PRIME 0x100000001b3ULL
#define REAL_SCALE 1e6

enum input_size parse_input(int argc, char **argv)
{
	if (argc == 2 && strcmp(argv[1], "small") == 0)
		return INPUT_SMALL;
	if (argc == 2 && strcmp(argv[1], "large") == 0)
		return INPUT_LARGE;
	fprintf(stderr, "usage: %s small|large\n", argc > 0 ? argv[0] : "program");
	exit(2);
}

const char *input_name(enum input_size size)
{
	return size == INPUT_LARGE ? "large" : "small";
}

void rng_seed(struct rng *rng, uint64_t seed)
{
	/* xorshift must never hold zero. */
	rng->state = seed ? seed : 0x9e3779b97f4a7c15ULL;
}

uint64_t rng_next(struct rng *rng)
{
	uint64_t x = rng->state;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	rng->state = x;
	return x * 0x2545f4914f6cdd1dULL;
}

uint32_t rng_below(struct rng *rng, uint32_t bound)
{
	return (uint32_t)((rng_next(rng) >> 32) % bound);
}

void checksum_init(struct checksum *sum)
{
	sum->state = FNV_OFFSET;
}

void checksum_bytes(struct checksum *sum, const void *data, size_t length)
{
	const unsigned char *bytes = data;

	for (size_t i = 0; i < length; i++) {
		sum->state ^= bytes[i];
		sum->state *= FNV_PRIME;
	}
}

void checksum_u64(struct checksum *sum, uint64_t value)
{
	unsigned char bytes[8];

	for (int i = 0; i < 8; i++)
		bytes[i] = (unsigned char)(value >> (8 * i));
	checksum_bytes(sum, bytes, sizeof(bytes));
}

void checksum_i64(struct checksum *sum, int64_t value)
{
	checksum_u64(sum, (uint64_t)value);
}

void checksum_real(struct checksum *sum, double value)
{
	checksum_i64(sum, (int64_t)llround(value * REAL_SCALE));
}

uint64_t monotonic_ns(void)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (uint64_t)now.tv_sec * 1000000000ULL + (uint64_t)now.tv_nsec;
}

void report(const char *program, enum input_size size, uint64_t ns,
	    const struct checksum *sum)
{
	printf("auto: program=%s input=%s ns=%" PRIu64 " checksum=%016" PRIx64 "\n",
	       program, input_name(size), ns, sum->state);
	fflush(stdout);
}
