/*
 * susan: the three image operations of MiBench's automotive/susan (the SUSAN
 * principle of Smith and Brady), written anew: structure-preserving
 * smoothing, edge detection and corner detection on a grey image that the
 * program draws itself (gradient, shapes and fixed-seed noise; 76x95 small,
 * 384x288 large). Edges and corners use the USAN: the area of a 37-pixel
 * circular mask whose brightness is similar to the nucleus, weighted by a
 * lookup table; a feature's response is a geometric threshold minus that
 * area, thinned by non-maximum suppression. Each operation is timed and
 * checksummed on its own and prints its own `auto:` line.
 */
#include "common.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SEED 0x7375736e61ULL
/* Brightness difference threshold t of every operation. */
#define BRIGHTNESS_THRESHOLD 20.0
/* Weight of a pixel exactly as bright as the nucleus. */
#define FULL_WEIGHT 100
/* Squared radius of the circular mask (37 pixels, radius 3.4). */
#define MASK_RADIUS2 11
#define MASK_PIXELS 37
#define MASK_REACH 3
/* Geometric thresholds: 3/4 (edges) and 1/2 (corners) of the largest USAN. */
#define EDGE_LIMIT (3 * MASK_PIXELS * FULL_WEIGHT / 4)
#define CORNER_LIMIT (MASK_PIXELS * FULL_WEIGHT / 2)
/* USAN areas at or below this are too small to give an edge direction from
 * their centre of gravity (the mask's diameter, in weighted pixels). */
#define INTER_PIXEL_AREA (7 * FULL_WEIGHT)
/* A corner's USAN pixels on the way to its centre of gravity must be at
 * least this similar to the nucleus. */
#define CONTIGUOUS_WEIGHT (FULL_WEIGHT / 2)
/* Half-size of the window a corner must be the strongest in. */
#define CORNER_WINDOW 2
/* Spatial Gaussian of the smoothing mask and its half-size. */
#define SMOOTH_SIGMA 4.0
#define SMOOTH_REACH 7
#define SMOOTH_SIDE (2 * SMOOTH_REACH + 1)

struct image {
	int width, height;
	unsigned char *pixels;
};

struct offset {
	int dx, dy;
};

/* Edge normal classes, for non-maximum suppression. */
enum normal { NORMAL_X, NORMAL_Y, NORMAL_DIAGONAL, NORMAL_ANTIDIAGONAL };

static const struct offset NORMAL_STEP[] = {
	[NORMAL_X] = { 1, 0 },
	[NORMAL_Y] = { 0, 1 },
	[NORMAL_DIAGONAL] = { 1, 1 },
	[NORMAL_ANTIDIAGONAL] = { 1, -1 },
};

struct corner {
	int x, y, response;
};

/* Lookup tables, indexed by brightness difference + 255. */
static int usan_weight[511];
static int smooth_brightness[511];
static int smooth_spatial[SMOOTH_SIDE * SMOOTH_SIDE];
static struct offset mask[MASK_PIXELS];

static void *checked_calloc(size_t count, size_t size)
{
	void *memory = calloc(count, size);

	if (memory == NULL) {
		fprintf(stderr, "susan: out of memory\n");
		exit(1);
	}
	return memory;
}

static void fill_tables(void)
{
	int pixels = 0;

	for (int d = -255; d <= 255; d++) {
		double ratio = d / BRIGHTNESS_THRESHOLD;
		double square = ratio * ratio;

		usan_weight[d + 255] = (int)lround(FULL_WEIGHT * exp(-square * square * square));
		smooth_brightness[d + 255] = (int)lround(FULL_WEIGHT * exp(-square));
	}
	for (int dy = -SMOOTH_REACH; dy <= SMOOTH_REACH; dy++)
		for (int dx = -SMOOTH_REACH; dx <= SMOOTH_REACH; dx++)
			smooth_spatial[(dy + SMOOTH_REACH) * SMOOTH_SIDE + dx + SMOOTH_REACH] =
				(int)lround(FULL_WEIGHT *
					    exp(-(dx * dx + dy * dy) /
						(2.0 * SMOOTH_SIGMA * SMOOTH_SIGMA)));
	for (int dy = -MASK_REACH; dy <= MASK_REACH; dy++)
		for (int dx = -MASK_REACH; dx <= MASK_REACH; dx++)
			if (dx * dx + dy * dy <= MASK_RADIUS2)
				mask[pixels++] = (struct offset){ dx, dy };
}

/* Is (x, y) inside (or on) the triangle with corners t[0..1], t[2..3], t[4..5]? */
static int in_triangle(int x, int y, const int t[6])
{
	int negative = 0, positive = 0;

	for (int i = 0; i < 3; i++) {
		int ax = t[2 * i], ay = t[2 * i + 1];
		int bx = t[(2 * i + 2) % 6], by = t[(2 * i + 3) % 6];
		long side = (long)(bx - ax) * (y - ay) - (long)(by - ay) * (x - ax);

		negative |= side < 0;
		positive |= side > 0;
	}
	return !(negative && positive);
}

/* Gradient background, a bright rectangle, a dark disc, a bright triangle,
 * a bright diagonal bar, and +-3 levels of noise. */
static struct image draw_image(int width, int height)
{
	struct image image = { width, height, checked_calloc((size_t)width * height, 1) };
	int disc_x = 2 * width / 3, disc_y = height / 3;
	int disc_r = (width < height ? width : height) / 5;
	int triangle[6] = { width / 4, 5 * height / 6, 3 * width / 4, 5 * height / 6,
			    width / 2, 7 * height / 12 };
	struct rng rng;

	rng_seed(&rng, SEED);
	for (int y = 0; y < height; y++) {
		for (int x = 0; x < width; x++) {
			int value = 50 + 120 * x / width + 40 * y / height;
			int bar = x - y * width / height - width / 3;

			if (x >= width / 8 && x < 3 * width / 8 && y >= height / 6 && y < height / 2)
				value = 220;
			if ((x - disc_x) * (x - disc_x) + (y - disc_y) * (y - disc_y) <= disc_r * disc_r)
				value = 30;
			if (in_triangle(x, y, triangle))
				value = 240;
			if (bar > -width / 32 && bar < width / 32)
				value = 250;
			value += (int)rng_below(&rng, 7) - 3;
			image.pixels[y * width + x] =
				(unsigned char)(value < 0 ? 0 : (value > 255 ? 255 : value));
		}
	}
	return image;
}

static int pixel(const struct image *image, int x, int y)
{
	return image->pixels[y * image->width + x];
}

/* The copy of `image` widened by SMOOTH_REACH replicated pixels per side. */
static struct image pad(const struct image *image)
{
	int width = image->width + 2 * SMOOTH_REACH, height = image->height + 2 * SMOOTH_REACH;
	struct image padded = { width, height, checked_calloc((size_t)width * height, 1) };

	for (int y = 0; y < height; y++) {
		int sy = y - SMOOTH_REACH;

		sy = sy < 0 ? 0 : (sy >= image->height ? image->height - 1 : sy);
		for (int x = 0; x < width; x++) {
			int sx = x - SMOOTH_REACH;

			sx = sx < 0 ? 0 : (sx >= image->width ? image->width - 1 : sx);
			padded.pixels[y * width + x] = (unsigned char)pixel(image, sx, sy);
		}
	}
	return padded;
}

/* Median of the eight neighbours (mean of the middle two), for a pixel whose
 * USAN is empty apart from itself. */
static int neighbour_median(const struct image *padded, int x, int y)
{
	int values[8], count = 0;

	for (int dy = -1; dy <= 1; dy++)
		for (int dx = -1; dx <= 1; dx++)
			if (dx != 0 || dy != 0)
				values[count++] = pixel(padded, x + dx, y + dy);
	for (int i = 1; i < 8; i++)
		for (int j = i; j > 0 && values[j - 1] > values[j]; j--) {
			int swap = values[j];

			values[j] = values[j - 1];
			values[j - 1] = swap;
		}
	return (values[3] + values[4] + 1) / 2;
}

static int smooth_pixel(const struct image *padded, int x, int y)
{
	int centre = pixel(padded, x, y);
	int64_t total = 0, weighted = 0;

	for (int dy = -SMOOTH_REACH; dy <= SMOOTH_REACH; dy++) {
		const unsigned char *row = &padded->pixels[(y + dy) * padded->width + x];
		const int *spatial = &smooth_spatial[(dy + SMOOTH_REACH) * SMOOTH_SIDE + SMOOTH_REACH];

		for (int dx = -SMOOTH_REACH; dx <= SMOOTH_REACH; dx++) {
			int value = row[dx];
			int weight = spatial[dx] * smooth_brightness[value - centre + 255];

			total += weight;
			weighted += (int64_t)weight * value;
		}
	}
	total -= (int64_t)FULL_WEIGHT * FULL_WEIGHT;
	weighted -= (int64_t)FULL_WEIGHT * FULL_WEIGHT * centre;
	if (total == 0)
		return neighbour_median(padded, x, y);
	return (int)((weighted + total / 2) / total);
}

static void smooth(const struct image *padded, struct image *out)
{
	for (int y = 0; y < out->height; y++)
		for (int x = 0; x < out->width; x++)
			out->pixels[y * out->width + x] = (unsigned char)smooth_pixel(
				padded, x + SMOOTH_REACH, y + SMOOTH_REACH);
}

/* The USAN area of the nucleus at (x, y), at least MASK_REACH from a border. */
static int usan_area(const struct image *image, int x, int y)
{
	const int *weights = &usan_weight[255 - pixel(image, x, y)];
	int area = 0;

	for (int i = 0; i < MASK_PIXELS; i++)
		area += weights[pixel(image, x + mask[i].dx, y + mask[i].dy)];
	return area;
}

/* First moments (centre of gravity times area) of the USAN at (x, y). */
static void usan_centroid(const struct image *image, int x, int y, int64_t *cx, int64_t *cy)
{
	const int *weights = &usan_weight[255 - pixel(image, x, y)];

	*cx = 0;
	*cy = 0;
	for (int i = 0; i < MASK_PIXELS; i++) {
		int weight = weights[pixel(image, x + mask[i].dx, y + mask[i].dy)];

		*cx += (int64_t)mask[i].dx * weight;
		*cy += (int64_t)mask[i].dy * weight;
	}
}

/* The class of the vector (vx, vy) to the nearest multiple of 45 degrees. */
static enum normal classify(int64_t vx, int64_t vy)
{
	int64_t ax = vx < 0 ? -vx : vx, ay = vy < 0 ? -vy : vy;

	/* tan(22.5 degrees) is about 2/5. */
	if (5 * ay < 2 * ax)
		return NORMAL_X;
	if (5 * ax < 2 * ay)
		return NORMAL_Y;
	return (vx > 0) == (vy > 0) ? NORMAL_DIAGONAL : NORMAL_ANTIDIAGONAL;
}

/* Edge normal at (x, y) with USAN `area`: away from the centre of gravity
 * when it is well off the nucleus, else across the USAN's long axis. */
static enum normal edge_normal(const struct image *image, int x, int y, int area)
{
	int64_t cx, cy, xx = 0, yy = 0, xy = 0;

	usan_centroid(image, x, y, &cx, &cy);
	if (area > INTER_PIXEL_AREA && cx * cx + cy * cy > (int64_t)area * area)
		return classify(cx, cy);
	const int *weights = &usan_weight[255 - pixel(image, x, y)];

	for (int i = 0; i < MASK_PIXELS; i++) {
		int dx = mask[i].dx, dy = mask[i].dy;
		int weight = weights[pixel(image, x + dx, y + dy)];

		xx += dx * dx * weight;
		yy += dy * dy * weight;
		xy += dx * dy * weight;
	}
	int64_t spread = xx > yy ? xx - yy : yy - xx;

	if (2 * (xy < 0 ? -xy : xy) < spread)
		return xx > yy ? NORMAL_Y : NORMAL_X;
	return xy > 0 ? NORMAL_ANTIDIAGONAL : NORMAL_DIAGONAL;
}

/* Edge map (255 on an edge, else 0); returns the number of edge pixels. */
static int detect_edges(const struct image *image, int *response, unsigned char *normals,
			struct image *edges)
{
	int width = image->width, count = 0;

	for (int y = MASK_REACH; y < image->height - MASK_REACH; y++)
		for (int x = MASK_REACH; x < width - MASK_REACH; x++) {
			int area = usan_area(image, x, y);

			if (area < EDGE_LIMIT) {
				response[y * width + x] = EDGE_LIMIT - area;
				normals[y * width + x] = (unsigned char)edge_normal(image, x, y, area);
			}
		}
	for (int y = MASK_REACH + 1; y < image->height - MASK_REACH - 1; y++)
		for (int x = MASK_REACH + 1; x < width - MASK_REACH - 1; x++) {
			int here = response[y * width + x];
			struct offset step = NORMAL_STEP[normals[y * width + x]];
			int ahead = response[(y + step.dy) * width + x + step.dx];
			int behind = response[(y - step.dy) * width + x - step.dx];

			if (here > 0 && here > ahead && here >= behind) {
				edges->pixels[y * width + x] = 255;
				count++;
			}
		}
	return count;
}

/* Are the pixels from the nucleus towards the USAN's centre of gravity all
 * part of the USAN? */
static int contiguous(const struct image *image, int x, int y, int64_t cx, int64_t cy)
{
	const int *weights = &usan_weight[255 - pixel(image, x, y)];
	double length = sqrt((double)(cx * cx + cy * cy));

	for (int step = 1; step <= MASK_REACH; step++) {
		int px = x + (int)lround(step * (double)cx / length);
		int py = y + (int)lround(step * (double)cy / length);

		if (weights[pixel(image, px, py)] < CONTIGUOUS_WEIGHT)
			return 0;
	}
	return 1;
}

static int strongest_nearby(const int *response, int width, int x, int y)
{
	int here = response[y * width + x];

	for (int dy = -CORNER_WINDOW; dy <= CORNER_WINDOW; dy++)
		for (int dx = -CORNER_WINDOW; dx <= CORNER_WINDOW; dx++) {
			int other = response[(y + dy) * width + x + dx];
			/* Ties go to the first in scan order. */
			int earlier = dy < 0 || (dy == 0 && dx < 0);

			if ((dx != 0 || dy != 0) && (other > here || (earlier && other == here)))
				return 0;
		}
	return 1;
}

/* Fills `corners` (one slot per pixel) and returns how many were found. */
static int detect_corners(const struct image *image, int *response, struct corner *corners)
{
	int width = image->width, count = 0;

	for (int y = MASK_REACH; y < image->height - MASK_REACH; y++)
		for (int x = MASK_REACH; x < width - MASK_REACH; x++) {
			int area = usan_area(image, x, y);
			int64_t cx, cy;

			if (area >= CORNER_LIMIT)
				continue;
			usan_centroid(image, x, y, &cx, &cy);
			if (cx * cx + cy * cy > (int64_t)area * area &&
			    contiguous(image, x, y, cx, cy))
				response[y * width + x] = CORNER_LIMIT - area;
		}
	int margin = MASK_REACH + CORNER_WINDOW;

	for (int y = margin; y < image->height - margin; y++)
		for (int x = margin; x < width - margin; x++)
			if (response[y * width + x] > 0 && strongest_nearby(response, width, x, y))
				corners[count++] = (struct corner){ x, y, response[y * width + x] };
	return count;
}

static void checksum_image(struct checksum *sum, const struct image *image)
{
	checksum_u64(sum, (uint64_t)image->width);
	checksum_u64(sum, (uint64_t)image->height);
	checksum_bytes(sum, image->pixels, (size_t)image->width * image->height);
}

static void run_smoothing(const struct image *image, enum input_size size)
{
	struct image padded = pad(image);
	struct image out = { image->width, image->height,
			     checked_calloc((size_t)image->width * image->height, 1) };
	struct checksum sum;
	uint64_t start = monotonic_ns();

	smooth(&padded, &out);
	uint64_t elapsed = monotonic_ns() - start;
	uint64_t total = 0;

	for (int i = 0; i < out.width * out.height; i++)
		total += out.pixels[i];
	checksum_init(&sum);
	checksum_image(&sum, &out);
	printf("susan: input=%s operation=smoothing mean_brightness=%.3f\n", input_name(size),
	       (double)total / (out.width * out.height));
	report("susan-smooth", size, elapsed, &sum);
	free(out.pixels);
	free(padded.pixels);
}

static void run_edges(const struct image *image, enum input_size size)
{
	size_t pixels = (size_t)image->width * image->height;
	int *response = checked_calloc(pixels, sizeof(*response));
	unsigned char *normals = checked_calloc(pixels, 1);
	struct image edges = { image->width, image->height, checked_calloc(pixels, 1) };
	struct checksum sum;
	uint64_t start = monotonic_ns();
	int count = detect_edges(image, response, normals, &edges);
	uint64_t elapsed = monotonic_ns() - start;

	checksum_init(&sum);
	checksum_image(&sum, &edges);
	printf("susan: input=%s operation=edges edge_pixels=%d\n", input_name(size), count);
	report("susan-edges", size, elapsed, &sum);
	free(edges.pixels);
	free(normals);
	free(response);
}

static void run_corners(const struct image *image, enum input_size size)
{
	size_t pixels = (size_t)image->width * image->height;
	int *response = checked_calloc(pixels, sizeof(*response));
	struct corner *corners = checked_calloc(pixels, sizeof(*corners));
	struct checksum sum;
	uint64_t start = monotonic_ns();
	int count = detect_corners(image, response, corners);
	uint64_t elapsed = monotonic_ns() - start;

	checksum_init(&sum);
	checksum_u64(&sum, (uint64_t)count);
	for (int i = 0; i < count; i++) {
		checksum_i64(&sum, corners[i].x);
		checksum_i64(&sum, corners[i].y);
		checksum_i64(&sum, corners[i].response);
	}
	printf("susan: input=%s operation=corners corners=%d", input_name(size), count);
	if (count > 0)
		printf(" first=(%d,%d) last=(%d,%d)", corners[0].x, corners[0].y,
		       corners[count - 1].x, corners[count - 1].y);
	printf("\n");
	report("susan-corners", size, elapsed, &sum);
	free(corners);
	free(response);
}

int main(int argc, char **argv)
{
	enum input_size size = parse_input(argc, argv);
	struct image image = size == INPUT_LARGE ? draw_image(384, 288) : draw_image(76, 95);
	struct checksum sum;

	fill_tables();
	checksum_init(&sum);
	checksum_image(&sum, &image);
	printf("susan: input=%s image=%dx%d image_checksum=%016" PRIx64 "\n", input_name(size),
	       image.width, image.height, sum.state);
	run_smoothing(&image, size);
	run_edges(&image, size);
	run_corners(&image, size);
	free(image.pixels);
	return 0;
}
