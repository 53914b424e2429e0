// SPDX-License-Identifier: Apache-2.0
/*
 * ring-interop: a host test that libpartita_ivc and partita_core::ivc::ring are one
 * format (xtask's linux::ivc tests build it with the host's gcc and run it against the
 * Rust code).
 *
 *   ring-interop write FILE   fills ring 0 of an 8 KiB two-member channel image: it pushes
 *                             and itself consumes messages through several wrap-arounds,
 *                             leaves the last ones unread and prints "first=<seq> last=<seq>"
 *   ring-interop read FILE FIRST LAST
 *                             reads ring 0 of an image the Rust side wrote: messages
 *                             FIRST..LAST, nothing else; exit status 0 only if all match
 *
 * Message `seq`: tag = seq, length = seq * 37 % 200, byte i = (seq + 7 * i) & 0xff.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "libpartita_ivc.h"

#define CHANNEL 8192
#define PART (CHANNEL / 2)

static uint8_t memory[CHANNEL] __attribute__((aligned(8)));

static size_t length_of(uint32_t seq)
{
	return seq * 37u % 200u;
}

static void pattern(uint32_t seq, uint8_t *out)
{
	size_t i;

	for (i = 0; i < length_of(seq); i++)
		out[i] = (uint8_t)(seq + 7 * i);
}

/* A channel view whose ours/peer's rings are both ring 0 of `memory`. */
static void view(struct pivc *c)
{
	memset(c, 0, sizeof(*c));
	c->memory = memory;
	c->info.size = CHANNEL;
	c->info.members = 2;
	c->tx.base = memory;
	c->tx.capacity = PART - PIVC_DATA;
	c->rx = c->tx;
}

static int check(struct pivc *c, uint32_t seq)
{
	uint8_t want[256], got[256];
	uint32_t tag;
	long len = pivc_recv(c, &tag, got, sizeof(got));

	pattern(seq, want);
	if (len != (long)length_of(seq) || tag != seq || memcmp(got, want, (size_t)len)) {
		fprintf(stderr, "message %u: len %ld tag %u\n", seq, len, tag);
		return 1;
	}
	return 0;
}

static int write_image(const char *path)
{
	struct pivc c;
	uint8_t payload[256];
	uint32_t seq = 0, unread = 0;
	FILE *f;

	view(&c);
	/* Five laps of the ring: push until full, consume all but a few each time. */
	while ((uint64_t)seq * 60 < 5 * (uint64_t)(PART - PIVC_DATA)) {
		pattern(seq, payload);
		if (pivc_send(&c, seq, payload, length_of(seq)) == -EAGAIN) {
			while (seq - unread > 3)
				if (check(&c, unread++))
					return 1;
			continue;
		}
		seq++;
	}
	f = fopen(path, "wb");
	if (!f || fwrite(memory, 1, sizeof(memory), f) != sizeof(memory) || fclose(f))
		return 1;
	printf("first=%u last=%u\n", unread, seq - 1);
	return 0;
}

static int read_image(const char *path, uint32_t first, uint32_t last)
{
	struct pivc c;
	uint32_t seq, tag;
	uint8_t spare[256];
	FILE *f = fopen(path, "rb");

	if (!f || fread(memory, 1, sizeof(memory), f) != sizeof(memory))
		return 1;
	fclose(f);
	view(&c);
	for (seq = first; seq <= last; seq++)
		if (check(&c, seq))
			return 1;
	return pivc_recv(&c, &tag, spare, sizeof(spare)) == -EAGAIN ? 0 : 1;
}

int main(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[1], "write"))
		return write_image(argv[2]);
	if (argc == 5 && !strcmp(argv[1], "read"))
		return read_image(argv[2], (uint32_t)strtoul(argv[3], NULL, 0),
				  (uint32_t)strtoul(argv[4], NULL, 0));
	fprintf(stderr, "usage: ring-interop write FILE | read FILE FIRST LAST\n");
	return 2;
}
