// SPDX-License-Identifier: Apache-2.0
/*
 * libpartita_ivc: the ring format of docs/ivc.md over a channel mapped from
 * /dev/partita-ivc<id>. Indices are 64-bit byte counts (acquire/release), records are a
 * u32 length, a u32 tag and the payload padded to 4 bytes, copied word by word; the
 * consumer's WAITING word (data wanted) and the producer's SPACE_WANTED count (room
 * wanted), each with a full fence on both sides, decide who rings.
 */
#include "libpartita_ivc.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define RECORD(len) (PIVC_RECORD_HEADER + (((len) + 3) / 4) * 4)

static uint64_t load64(volatile uint8_t *at)
{
	return __atomic_load_n((volatile uint64_t *)at, __ATOMIC_ACQUIRE);
}

static void store64(volatile uint8_t *at, uint64_t value)
{
	__atomic_store_n((volatile uint64_t *)at, value, __ATOMIC_RELEASE);
}

static uint32_t load32(volatile uint8_t *at)
{
	return *(volatile uint32_t *)at;
}

static void store32(volatile uint8_t *at, uint32_t value)
{
	*(volatile uint32_t *)at = value;
}

static volatile uint8_t *data(const struct pivc_ring *r, uint64_t position)
{
	return r->base + PIVC_DATA + position % r->capacity;
}

/* Bytes in use, or -1 when the indices break the rules. */
static long used(const struct pivc_ring *r, uint64_t head, uint64_t tail)
{
	uint64_t n = head - tail;

	if (n > r->capacity || head % 4 || tail % 4)
		return -1;
	return (long)n;
}

static int ring_at(struct pivc *c, uint32_t member, struct pivc_ring *r)
{
	size_t part = c->info.size / c->info.members / 8 * 8;

	if (member >= c->info.members || part < PIVC_DATA + PIVC_RECORD_HEADER + 8)
		return -EINVAL;
	r->base = c->memory + member * part;
	r->capacity = part - PIVC_DATA;
	return 0;
}

int pivc_open(struct pivc *c, const char *path)
{
	int prot;

	memset(c, 0, sizeof(*c));
	c->fd = open(path, O_RDWR | O_CLOEXEC);
	if (c->fd < 0)
		return -errno;
	if (ioctl(c->fd, PARTITA_IVC_INFO, &c->info) < 0)
		goto fail;
	prot = PROT_READ | (c->info.read_only ? 0 : PROT_WRITE);
	c->memory = mmap(NULL, c->info.size, prot, MAP_SHARED, c->fd, 0);
	if (c->memory == MAP_FAILED)
		goto fail;
	if (c->info.members != 2 || ring_at(c, c->info.member, &c->tx) ||
	    ring_at(c, 1 - c->info.member, &c->rx)) {
		errno = EINVAL;
		goto fail;
	}
	return 0;
fail:
	{
		int e = errno;

		close(c->fd);
		return -e;
	}
}

void pivc_close(struct pivc *c)
{
	munmap((void *)c->memory, c->info.size);
	close(c->fd);
}

int pivc_ring(struct pivc *c)
{
	return ioctl(c->fd, PARTITA_IVC_RING) < 0 ? -errno : 0;
}

int pivc_send(struct pivc *c, uint32_t tag, const void *payload, size_t len)
{
	struct pivc_ring *r = &c->tx;
	const uint8_t *bytes = payload;
	uint64_t head, tail;
	long in_use;
	size_t i;

	if (c->info.read_only)
		return -EPERM;
	if (len > (r->capacity - PIVC_RECORD_HEADER) / 4 * 4)
		return -EMSGSIZE;
	head = load64(r->base + PIVC_HEAD);
	tail = load64(r->base + PIVC_TAIL);
	in_use = used(r, head, tail);
	if (in_use < 0)
		return -EPROTO;
	if (r->capacity - (size_t)in_use < RECORD(len))
		return -EAGAIN;
	store32(data(r, head), (uint32_t)len);
	store32(data(r, head + 4), tag);
	for (i = 0; i < len; i += 4) {
		uint32_t word = 0;
		size_t n = len - i < 4 ? len - i : 4;

		memcpy(&word, bytes + i, n);
		store32(data(r, head + PIVC_RECORD_HEADER + i), word);
	}
	store64(r->base + PIVC_HEAD, head + RECORD(len));
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (load32(r->base + PIVC_WAITING))
		return pivc_ring(c);
	return 0;
}

long pivc_recv(struct pivc *c, uint32_t *tag, void *buf, size_t cap)
{
	struct pivc_ring *r = &c->rx;
	uint8_t *out = buf;
	uint64_t head, tail;
	uint32_t len, wanted;
	long in_use;
	size_t i;

	tail = load64(r->base + PIVC_TAIL);
	head = load64(r->base + PIVC_HEAD);
	in_use = used(r, head, tail);
	if (in_use < 0)
		return -EPROTO;
	if (in_use == 0)
		return -EAGAIN;
	if (in_use < PIVC_RECORD_HEADER)
		return -EPROTO;
	len = load32(data(r, tail));
	*tag = load32(data(r, tail + 4));
	if (len > (size_t)in_use - PIVC_RECORD_HEADER || RECORD((size_t)len) > (size_t)in_use)
		return -EPROTO;
	if (len > cap)
		return -ENOBUFS;
	for (i = 0; i < len; i += 4) {
		uint32_t word = load32(data(r, tail + PIVC_RECORD_HEADER + i));
		size_t n = len - i < 4 ? len - i : 4;

		memcpy(out + i, &word, n);
	}
	store64(r->base + PIVC_TAIL, tail + RECORD(len));
	/* The producer bumps SPACE_WANTED, then reads TAIL: one of us sees the other. Ring
	 * once half the ring is free, not per record. */
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	wanted = load32(r->base + PIVC_SPACE_WANTED);
	if (wanted != c->space_answered && (size_t)in_use - RECORD(len) <= r->capacity / 2) {
		c->space_answered = wanted;
		pivc_ring(c);
	}
	return len;
}

void pivc_discard(struct pivc *c)
{
	store64(c->rx.base + PIVC_TAIL, load64(c->rx.base + PIVC_HEAD) / 4 * 4);
}

int pivc_wait(struct pivc *c, int timeout_ms)
{
	struct pollfd p = { .fd = c->fd, .events = POLLIN };
	uint32_t count;
	int ready = 1;

	store32(c->rx.base + PIVC_WAITING, 1);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (load64(c->rx.base + PIVC_HEAD) == load64(c->rx.base + PIVC_TAIL))
		ready = poll(&p, 1, timeout_ms);
	store32(c->rx.base + PIVC_WAITING, 0);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (ready > 0 && (p.revents & POLLIN))
		(void)!read(c->fd, &count, sizeof(count));
	return ready < 0 ? -errno : 0;
}

int pivc_wait_space(struct pivc *c, int timeout_ms)
{
	struct pollfd p = { .fd = c->fd, .events = POLLIN };
	uint64_t tail = load64(c->tx.base + PIVC_TAIL);
	uint32_t count;
	int ready = 1;

	store32(c->tx.base + PIVC_SPACE_WANTED, load32(c->tx.base + PIVC_SPACE_WANTED) + 1);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (load64(c->tx.base + PIVC_TAIL) == tail)
		ready = poll(&p, 1, timeout_ms);
	if (ready > 0 && (p.revents & POLLIN))
		(void)!read(c->fd, &count, sizeof(count));
	return ready < 0 ? -errno : 0;
}

uint32_t pivc_fnv1a(const uint8_t *bytes, size_t len)
{
	uint32_t hash = 0x811c9dc5;
	size_t i;

	for (i = 0; i < len; i++)
		hash = (hash ^ bytes[i]) * 0x01000193;
	return hash;
}

static void put32(uint8_t *at, uint32_t value)
{
	at[0] = value;
	at[1] = value >> 8;
	at[2] = value >> 16;
	at[3] = value >> 24;
}

void pivc_test_message(uint32_t seq, uint8_t out[PIVC_TEST_MESSAGE])
{
	uint32_t i;

	put32(out, seq);
	for (i = 1; i < 7; i++)
		put32(out + 4 * i, seq * 0x9e3779b9u + i);
	put32(out + 28, pivc_fnv1a(out, 28));
}
