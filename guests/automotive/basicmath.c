/*
 * basicmath: the arithmetic of MiBench's automotive/basicmath, written anew.
 * Solves many cubic equations in closed form (trigonometric and Cardano
 * cases), takes 16.16 fixed-point square roots of a range of integers with
 * the bit-by-bit (digit-by-digit) method, and converts angles between
 * degrees and radians. Prints a summary line, then one `auto:` line whose
 * checksum covers every root, square root and converted angle.
 */
#include "common.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#define PI 3.14159265358979323846

/* One axis of the coefficient grid: `count` values from `first` by `step`. */
struct axis {
	double first;
	double step;
	int count;
};

/* Coefficient grid of a x^3 + b x^2 + c x + d = 0 and the other ranges. */
struct workload {
	struct axis a, b, c, d;
	uint32_t square_roots;
	int angle_steps;
};

static const struct workload SMALL = {
	.a = { 1.0, 1.0, 10 },
	.b = { 10.0, -1.0, 10 },
	.c = { 5.0, 0.5, 20 },
	.d = { -1.0, -1.0, 10 },
	.square_roots = 100000,
	.angle_steps = 36000,
};

static const struct workload LARGE = {
	.a = { 1.0, 1.0, 10 },
	.b = { 10.0, -0.25, 40 },
	.c = { 5.0, 0.25, 40 },
	.d = { -1.0, -1.0, 20 },
	.square_roots = 1000000,
	.angle_steps = 360000,
};

/* A few fixed equations with known kinds of roots, solved before the grid. */
static const double FIXED[][4] = {
	{ 1.0, -10.5, 32.0, -30.0 },
	{ 1.0, -4.5, 17.0, -30.0 },
	{ 1.0, -3.5, 22.0, -31.0 },
	{ 1.0, -13.7, 1.0, -35.0 },
	{ 3.0, 12.34, 5.0, 12.0 },
	{ -8.0, -67.89, 6.0, -23.6 },
	{ 45.0, 8.67, 7.5, 34.0 },
	{ -12.0, -1.7, 5.3, 16.0 },
};

struct totals {
	uint64_t equations;
	uint64_t roots;
	double root_sum;
};

/* Real roots of a x^3 + b x^2 + c x + d = 0 (a != 0) into `x`; returns 1 or 3. */
static int solve_cubic(double a, double b, double c, double d, double x[3])
{
	double a1 = b / a, a2 = c / a, a3 = d / a;
	double q = (a1 * a1 - 3.0 * a2) / 9.0;
	double r = (2.0 * a1 * a1 * a1 - 9.0 * a1 * a2 + 27.0 * a3) / 54.0;
	double q3 = q * q * q;

	if (r * r < q3) {
		double cosine = r / sqrt(q3);
		double theta = acos(cosine > 1.0 ? 1.0 : (cosine < -1.0 ? -1.0 : cosine));
		double scale = -2.0 * sqrt(q);

		x[0] = scale * cos(theta / 3.0) - a1 / 3.0;
		x[1] = scale * cos((theta + 2.0 * PI) / 3.0) - a1 / 3.0;
		x[2] = scale * cos((theta + 4.0 * PI) / 3.0) - a1 / 3.0;
		return 3;
	}
	double s = cbrt(fabs(r) + sqrt(r * r - q3));
	double big = r > 0.0 ? -s : s;
	double small = big == 0.0 ? 0.0 : q / big;

	x[0] = big + small - a1 / 3.0;
	return 1;
}

static void record_cubic(double a, double b, double c, double d,
			 struct totals *totals, struct checksum *sum)
{
	double x[3];
	int roots = solve_cubic(a, b, c, d, x);

	totals->equations++;
	totals->roots += (uint64_t)roots;
	checksum_u64(sum, (uint64_t)roots);
	for (int i = 0; i < roots; i++) {
		totals->root_sum += x[i];
		checksum_real(sum, x[i]);
	}
}

static double at(const struct axis *axis, int i)
{
	return axis->first + axis->step * i;
}

static void solve_cubics(const struct workload *work, struct totals *totals,
			 struct checksum *sum)
{
	for (size_t i = 0; i < sizeof(FIXED) / sizeof(FIXED[0]); i++)
		record_cubic(FIXED[i][0], FIXED[i][1], FIXED[i][2], FIXED[i][3],
			     totals, sum);
	for (int ia = 0; ia < work->a.count; ia++)
		for (int ib = 0; ib < work->b.count; ib++)
			for (int ic = 0; ic < work->c.count; ic++)
				for (int id = 0; id < work->d.count; id++)
					record_cubic(at(&work->a, ia), at(&work->b, ib),
						     at(&work->c, ic), at(&work->d, id),
						     totals, sum);
}

/* floor(sqrt(n) * 65536): the root of n << 32, one result bit per step. */
static uint32_t fixed_sqrt(uint32_t n)
{
	uint64_t rest = (uint64_t)n << 32;
	uint64_t root = 0;
	uint64_t bit = 1ULL << 62;

	while (bit > rest)
		bit >>= 2;
	while (bit != 0) {
		if (rest >= root + bit) {
			rest -= root + bit;
			root = (root >> 1) + bit;
		} else {
			root >>= 1;
		}
		bit >>= 2;
	}
	return (uint32_t)root;
}

/* Roots of 0..count-1; returns their sum, or exits if one is wrong. */
static uint64_t square_roots(uint32_t count, struct checksum *sum)
{
	uint64_t total = 0;

	for (uint32_t n = 0; n < count; n++) {
		uint64_t root = fixed_sqrt(n);
		uint64_t scaled = (uint64_t)n << 32;

		if (root * root > scaled || (root + 1) * (root + 1) <= scaled) {
			fprintf(stderr, "basicmath: wrong square root of %" PRIu32 "\n", n);
			exit(1);
		}
		total += root;
		checksum_u64(sum, root);
	}
	return total;
}

/* Degrees 0..360 to radians and radians 0..2 pi to degrees in `steps` steps. */
static double convert_angles(int steps, struct checksum *sum)
{
	double total = 0.0;

	for (int i = 0; i <= steps; i++) {
		double radians = (360.0 * i / steps) * (PI / 180.0);

		total += radians;
		checksum_real(sum, radians);
	}
	for (int i = 0; i <= steps; i++) {
		double degrees = (2.0 * PI * i / steps) * (180.0 / PI);

		total += degrees;
		checksum_real(sum, degrees);
	}
	return total;
}

int main(int argc, char **argv)
{
	enum input_size size = parse_input(argc, argv);
	const struct workload *work = size == INPUT_LARGE ? &LARGE : &SMALL;
	struct totals totals = { 0, 0, 0.0 };
	struct checksum sum;

	checksum_init(&sum);
	uint64_t start = monotonic_ns();
	solve_cubics(work, &totals, &sum);
	uint64_t roots_total = square_roots(work->square_roots, &sum);
	double angle_total = convert_angles(work->angle_steps, &sum);
	uint64_t elapsed = monotonic_ns() - start;

	printf("basicmath: input=%s cubics=%" PRIu64 " real_roots=%" PRIu64
	       " root_sum=%.4f isqrt_count=%" PRIu32 " isqrt_sum=%" PRIu64
	       " angle_sum=%.3f\n",
	       input_name(size), totals.equations, totals.roots, totals.root_sum,
	       work->square_roots, roots_total, angle_total);
	report("basicmath", size, elapsed, &sum);
	return 0;
}
