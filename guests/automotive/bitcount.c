/*
 * bitcount: the work of MiBench's automotive/bitcount, written anew. Counts
 * the set bits of N pseudo-random 32-bit values (N = 75,000 small,
 * 1,125,000 large; fixed seed) with seven different methods, each timed
 * over the whole array. Every method must reach the same total: if one does
 * not, the program says so and exits 1. The checksum covers N and the seven
 * totals.
 */
#include "common.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#define SMALL_COUNT 75000u
#define LARGE_COUNT 1125000u
#define SEED 0x6269746375ULL

typedef unsigned (*bit_counter)(uint32_t value);

/*
 * An empty assembler statement that claims to change `value`: it keeps the
 * compiler from recognising a counting loop as a population count and
 * replacing it with one instruction, so each method does its own work.
 */
#define OPAQUE(value) __asm__("" : "+r"(value))

/* Bits set in each nibble / byte value. */
static unsigned char nibble_bits[16];
static unsigned char byte_bits[256];

/* Looks at all 32 positions, one shift per position. */
static unsigned shift_and_count(uint32_t value)
{
	unsigned count = 0;

	for (int i = 0; i < 32; i++) {
		count += value & 1u;
		value >>= 1;
	}
	return count;
}

/* One bit per step, stopping as soon as no set bit remains. */
static unsigned optimized_iterated(uint32_t value)
{
	unsigned count = 0;

	while (value != 0) {
		count += value & 1u;
		value >>= 1;
	}
	return count;
}

/* Clears the lowest set bit per step: fast when few bits are set. */
static unsigned sparse_ones(uint32_t value)
{
	unsigned count = 0;

	while (value != 0) {
		value &= value - 1u;
		OPAQUE(value);
		count++;
	}
	return count;
}

/* Clears the lowest clear bit per step: fast when most bits are set. */
static unsigned dense_ones(uint32_t value)
{
	unsigned count = 32;

	value = ~value;
	while (value != 0) {
		value &= value - 1u;
		OPAQUE(value);
		count--;
	}
	return count;
}

/* Eight lookups in a 16-entry table. */
static unsigned nibble_table(uint32_t value)
{
	unsigned count = 0;

	for (int i = 0; i < 8; i++) {
		count += nibble_bits[value & 0xfu];
		value >>= 4;
	}
	return count;
}

/* Four lookups in a 256-entry table. */
static unsigned byte_table(uint32_t value)
{
	return byte_bits[value & 0xffu] + byte_bits[(value >> 8) & 0xffu] +
	       byte_bits[(value >> 16) & 0xffu] + byte_bits[value >> 24];
}

/* The byte table, one call level per remaining byte. */
static unsigned byte_table_recursive(uint32_t value)
{
	if (value == 0)
		return 0;
	return byte_bits[value & 0xffu] + byte_table_recursive(value >> 8);
}

static const struct {
	const char *name;
	bit_counter count;
} METHODS[] = {
	{ "optimized-iterated", optimized_iterated },
	{ "sparse-ones", sparse_ones },
	{ "dense-ones", dense_ones },
	{ "nibble-table", nibble_table },
	{ "byte-table", byte_table },
	{ "byte-table-recursive", byte_table_recursive },
	{ "shift-and-count", shift_and_count },
};

#define METHOD_COUNT (sizeof(METHODS) / sizeof(METHODS[0]))

static void fill_tables(void)
{
	for (unsigned i = 0; i < 16; i++)
		nibble_bits[i] = (unsigned char)shift_and_count(i);
	for (unsigned i = 0; i < 256; i++)
		byte_bits[i] = (unsigned char)(nibble_bits[i & 0xfu] + nibble_bits[i >> 4]);
}

static uint64_t count_all(bit_counter count, const uint32_t *values, uint32_t n)
{
	uint64_t total = 0;

	for (uint32_t i = 0; i < n; i++)
		total += count(values[i]);
	return total;
}

int main(int argc, char **argv)
{
	enum input_size size = parse_input(argc, argv);
	uint32_t n = size == INPUT_LARGE ? LARGE_COUNT : SMALL_COUNT;
	uint32_t *values = malloc(n * sizeof(*values));
	uint64_t totals[METHOD_COUNT];
	struct checksum sum;
	struct rng rng;
	int disagree = 0;

	if (values == NULL) {
		fprintf(stderr, "bitcount: out of memory\n");
		return 1;
	}
	rng_seed(&rng, SEED);
	for (uint32_t i = 0; i < n; i++)
		values[i] = (uint32_t)(rng_next(&rng) >> 32);
	fill_tables();
	checksum_init(&sum);
	checksum_u64(&sum, n);

	uint64_t start = monotonic_ns();
	for (size_t m = 0; m < METHOD_COUNT; m++)
		totals[m] = count_all(METHODS[m].count, values, n);
	uint64_t elapsed = monotonic_ns() - start;

	for (size_t m = 0; m < METHOD_COUNT; m++) {
		printf("bitcount: method=%s bits=%" PRIu64 "\n", METHODS[m].name, totals[m]);
		checksum_u64(&sum, totals[m]);
		disagree |= totals[m] != totals[0];
	}
	printf("bitcount: input=%s values=%" PRIu32 " bits=%" PRIu64 " methods=%zu %s\n",
	       input_name(size), n, totals[0], METHOD_COUNT,
	       disagree ? "DISAGREE" : "agree");
	report("bitcount", size, elapsed, &sum);
	free(values);
	return disagree ? 1 : 0;
}
