/*
 * qsort: the work of MiBench's automotive/qsort, written anew, with the C
 * library's qsort(). Small: 10,000 words made up from syllables by a
 * fixed-seed generator, sorted alphabetically. Large: 50,000 3-D points with
 * pseudo-random integer coordinates, sorted by distance from the origin
 * (computed in the comparison, as a program reading points would; equal
 * distances are ordered by coordinates so the order is total). Only the
 * sort is timed; the checksum covers the sorted sequence.
 */
#include "common.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WORD_COUNT 10000u
#define POINT_COUNT 50000u
#define MAX_SYLLABLES 4
#define WORD_BYTES (MAX_SYLLABLES * 3 + 1)
#define COORDINATE_RANGE 20001u
#define SEED 0x71736f7274ULL

struct point {
	int x, y, z;
};

static const char *const SYLLABLES[] = {
	"a",  "an", "ar", "ba", "be", "bi", "bo", "ca", "ce", "co", "da",
	"de", "di", "do", "e",  "el", "en", "er", "fa", "fe", "ga", "go",
	"ha", "he", "i",  "in", "is", "ka", "la", "le", "li", "lo", "ma",
	"me", "mi", "mo", "na", "ne", "ni", "no", "o",  "on", "or", "pa",
	"pe", "ra", "re", "ri", "ro", "sa", "se", "si", "so", "ta", "te",
	"ti", "to", "u",  "un", "ur", "va", "ve", "wa", "ya", "za", "str",
};

#define SYLLABLE_COUNT (sizeof(SYLLABLES) / sizeof(SYLLABLES[0]))

static int compare_words(const void *left, const void *right)
{
	return strcmp(*(const char *const *)left, *(const char *const *)right);
}

static double distance(const struct point *p)
{
	double x = p->x, y = p->y, z = p->z;

	return sqrt(x * x + y * y + z * z);
}

static int compare_int(int left, int right)
{
	return (left > right) - (left < right);
}

static int compare_points(const void *left, const void *right)
{
	const struct point *a = left, *b = right;
	double da = distance(a), db = distance(b);

	if (da != db)
		return da < db ? -1 : 1;
	if (a->x != b->x)
		return compare_int(a->x, b->x);
	if (a->y != b->y)
		return compare_int(a->y, b->y);
	return compare_int(a->z, b->z);
}

/* Fills `word` (WORD_BYTES long) with 1 to MAX_SYLLABLES syllables. */
static void make_word(struct rng *rng, char *word)
{
	uint32_t syllables = 1 + rng_below(rng, MAX_SYLLABLES);

	word[0] = '\0';
	for (uint32_t i = 0; i < syllables; i++)
		strcat(word, SYLLABLES[rng_below(rng, SYLLABLE_COUNT)]);
}

static int sort_words(struct rng *rng)
{
	char *storage = malloc(WORD_COUNT * WORD_BYTES);
	char **words = malloc(WORD_COUNT * sizeof(*words));
	struct checksum sum;

	if (storage == NULL || words == NULL) {
		fprintf(stderr, "qsort: out of memory\n");
		return 1;
	}
	for (uint32_t i = 0; i < WORD_COUNT; i++) {
		words[i] = storage + (size_t)i * WORD_BYTES;
		make_word(rng, words[i]);
	}
	uint64_t start = monotonic_ns();
	qsort(words, WORD_COUNT, sizeof(*words), compare_words);
	uint64_t elapsed = monotonic_ns() - start;

	checksum_init(&sum);
	for (uint32_t i = 0; i < WORD_COUNT; i++)
		checksum_bytes(&sum, words[i], strlen(words[i]) + 1);
	printf("qsort: input=small words=%u first=%s last=%s\n", WORD_COUNT,
	       words[0], words[WORD_COUNT - 1]);
	report("qsort", INPUT_SMALL, elapsed, &sum);
	free(words);
	free(storage);
	return 0;
}

static int coordinate(struct rng *rng)
{
	return (int)rng_below(rng, COORDINATE_RANGE) - (int)(COORDINATE_RANGE / 2);
}

static int sort_points(struct rng *rng)
{
	struct point *points = malloc(POINT_COUNT * sizeof(*points));
	struct checksum sum;

	if (points == NULL) {
		fprintf(stderr, "qsort: out of memory\n");
		return 1;
	}
	for (uint32_t i = 0; i < POINT_COUNT; i++) {
		points[i].x = coordinate(rng);
		points[i].y = coordinate(rng);
		points[i].z = coordinate(rng);
	}
	uint64_t start = monotonic_ns();
	qsort(points, POINT_COUNT, sizeof(*points), compare_points);
	uint64_t elapsed = monotonic_ns() - start;

	checksum_init(&sum);
	for (uint32_t i = 0; i < POINT_COUNT; i++) {
		checksum_i64(&sum, points[i].x);
		checksum_i64(&sum, points[i].y);
		checksum_i64(&sum, points[i].z);
	}
	const struct point *first = &points[0], *last = &points[POINT_COUNT - 1];
	printf("qsort: input=large points=%u first=(%d,%d,%d) last=(%d,%d,%d)\n",
	       POINT_COUNT, first->x, first->y, first->z, last->x, last->y, last->z);
	report("qsort", INPUT_LARGE, elapsed, &sum);
	free(points);
	return 0;
}

int main(int argc, char **argv)
{
	enum input_size size = parse_input(argc, argv);
	struct rng rng;

	rng_seed(&rng, SEED);
	return size == INPUT_LARGE ? sort_points(&rng) : sort_words(&rng);
}
