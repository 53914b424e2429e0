// SPDX-License-Identifier: Apache-2.0
/*
 * partita-ivc: Linux's command for the channel to FreeRTOS (docs/ivc.md, "Commands").
 *
 *   partita-ivc recv [n]          print FreeRTOS's next rt figures as they come (n of them)
 *   partita-ivc period <ms>       ask FreeRTOS to send them every <ms> milliseconds
 *   partita-ivc send <text>       FreeRTOS prints the text
 *   partita-ivc ping [n] [bytes]  n round trips Linux -> FreeRTOS -> Linux, timed
 *   partita-ivc serve [idle_s]    answer FreeRTOS's pings until idle_s seconds pass idle
 *   partita-ivc rtos-ping [n]     FreeRTOS times n round trips FreeRTOS -> Linux -> FreeRTOS
 *   partita-ivc exchange [n]      send n checksummed messages and check n from FreeRTOS
 *   partita-ivc bench [bytes] [n] n echoes of <bytes>-byte messages, as throughput
 *
 * `-d <device>` picks another channel than /dev/partita-ivc0. Every result is one line
 * starting with `partita-ivc:`; the exit status is 0 only when the command fully worked.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "libpartita_ivc.h"

#define MAX_MESSAGE 4096
#define MAX_SAMPLES 100000

static uint64_t now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static uint64_t get64(const uint8_t *at)
{
	uint64_t v;

	memcpy(&v, at, 8);
	return v;
}

static void fail(const char *what, int err)
{
	fprintf(stderr, "partita-ivc: %s: %s\n", what, strerror(-err));
	exit(1);
}

/* Sends, waiting while the ring is full. */
static void send_blocking(struct pivc *c, uint32_t tag, const void *payload, size_t len)
{
	int err;

	while ((err = pivc_send(c, tag, payload, len)) == -EAGAIN)
		pivc_wait_space(c, 1);
	if (err)
		fail("send", err);
}

/* Receives one message, waiting up to timeout_ms; -EAGAIN on a timeout. Answers pings on
 * the way, so FreeRTOS is never left waiting. */
static long recv_one(struct pivc *c, uint32_t *tag, uint8_t *buf, int timeout_ms)
{
	uint64_t deadline = now_ns() + (uint64_t)timeout_ms * 1000000u;
	long len;

	for (;;) {
		len = pivc_recv(c, tag, buf, MAX_MESSAGE);
		if (len == -EPROTO) {
			fprintf(stderr, "partita-ivc: FreeRTOS's ring is broken; emptied\n");
			pivc_discard(c);
			continue;
		}
		if (len >= 0 && *tag == PIVC_TAG_PING) {
			send_blocking(c, PIVC_TAG_PONG, buf, (size_t)len);
			continue;
		}
		if (len != -EAGAIN)
			return len;
		if (timeout_ms >= 0 && now_ns() >= deadline)
			return -EAGAIN;
		pivc_wait(c, timeout_ms < 0 ? -1 : 10);
	}
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static void report(const char *what, uint64_t *ns, size_t n)
{
	uint64_t sum = 0;
	size_t i;

	qsort(ns, n, sizeof(*ns), cmp_u64);
	for (i = 0; i < n; i++)
		sum += ns[i];
	printf("partita-ivc: %s n=%zu min_ns=%" PRIu64 " mean_ns=%" PRIu64 " p99_ns=%" PRIu64
	       " max_ns=%" PRIu64 "\n",
	       what, n, ns[0], sum / n, ns[(n * 99 + 99) / 100 - 1], ns[n - 1]);
}

static int cmd_recv(struct pivc *c, long n)
{
	uint8_t buf[MAX_MESSAGE];
	uint32_t tag;
	long got = 0, len;

	/* Samples queued while nobody read are old: start from the next one. */
	pivc_discard(c);
	while (n < 0 || got < n) {
		len = recv_one(c, &tag, buf, -1);
		if (len < 0)
			fail("recv", (int)len);
		if (tag != PIVC_TAG_SAMPLE || len != 40)
			continue;
		got++;
		printf("partita-ivc: sample samples=%" PRIu64 " max_ns=%" PRIu64 " mean_ns=%" PRIu64
		       " misses=%" PRIu64 " period_ms=%" PRIu64 "\n",
		       get64(buf), get64(buf + 8), get64(buf + 16), get64(buf + 24), get64(buf + 32));
		fflush(stdout);
	}
	return 0;
}

static int cmd_period(struct pivc *c, uint32_t ms)
{
	uint32_t command[2] = { PIVC_COMMAND_PERIOD, ms };

	send_blocking(c, PIVC_TAG_COMMAND, command, sizeof(command));
	printf("partita-ivc: asked for a sample every %" PRIu32 " ms\n", ms);
	return 0;
}

static int cmd_send(struct pivc *c, const char *text)
{
	size_t len = strlen(text);

	if (len > 200)
		len = 200;
	send_blocking(c, PIVC_TAG_TEXT, text, len);
	printf("partita-ivc: sent %zu bytes\n", len);
	return 0;
}

static int cmd_ping(struct pivc *c, size_t n, size_t size)
{
	static uint64_t rtt[MAX_SAMPLES];
	uint8_t out[MAX_MESSAGE] = { 0 }, in[MAX_MESSAGE];
	uint32_t tag;
	size_t i;
	long len;

	if (n == 0 || n > MAX_SAMPLES || size < 8 || size > MAX_MESSAGE)
		fail("ping", -EINVAL);
	for (i = 0; i < n; i++) {
		uint64_t seq = i, start = now_ns();

		memcpy(out, &seq, 8);
		send_blocking(c, PIVC_TAG_PING, out, size);
		do {
			len = recv_one(c, &tag, in, 5000);
			if (len < 0)
				fail("ping: no pong within 5 s", (int)len);
		} while (tag != PIVC_TAG_PONG || (size_t)len != size || get64(in) != seq);
		rtt[i] = now_ns() - start;
	}
	report(size == 8 ? "ping" : "ping-bytes", rtt, n);
	return 0;
}

static int cmd_serve(struct pivc *c, int idle_s)
{
	uint8_t buf[MAX_MESSAGE];
	uint32_t tag;
	long len, served = 0;
	uint64_t last = now_ns();

	for (;;) {
		len = pivc_recv(c, &tag, buf, sizeof(buf));
		if (len == -EPROTO) {
			pivc_discard(c);
			continue;
		}
		if (len >= 0) {
			if (tag == PIVC_TAG_PING) {
				send_blocking(c, PIVC_TAG_PONG, buf, (size_t)len);
				served++;
				last = now_ns();
			}
			continue;
		}
		if (now_ns() - last > (uint64_t)idle_s * 1000000000u)
			break;
		pivc_wait(c, 100);
	}
	printf("partita-ivc: served %ld pings\n", served);
	return 0;
}

static int cmd_rtos_ping(struct pivc *c, uint32_t n)
{
	uint32_t command[2] = { PIVC_COMMAND_PING, n };
	uint8_t buf[MAX_MESSAGE + 1];
	uint32_t tag;
	long len;

	send_blocking(c, PIVC_TAG_COMMAND, command, sizeof(command));
	/* recv_one answers FreeRTOS's pings while it waits for the result. */
	do {
		len = recv_one(c, &tag, buf, 30000);
		if (len < 0)
			fail("rtos-ping: no result within 30 s", (int)len);
	} while (tag != PIVC_TAG_TEXT);
	buf[len] = 0;
	printf("partita-ivc: rtos %s\n", (char *)buf);
	return 0;
}

static int cmd_exchange(struct pivc *c, uint32_t n)
{
	uint8_t out[PIVC_TEST_MESSAGE], in[MAX_MESSAGE], want[PIVC_TEST_MESSAGE];
	uint32_t sent = 0, received = 0, bad = 0, tag;
	uint64_t idle_since = now_ns();
	long len;
	int err;

	while (sent < n || received < n) {
		int progress = 0;

		while (sent < n) {
			pivc_test_message(sent, out);
			err = pivc_send(c, PIVC_TAG_TEST, out, sizeof(out));
			if (err == -EAGAIN)
				break;
			if (err)
				fail("exchange: send", err);
			sent++;
			progress = 1;
		}
		while ((len = pivc_recv(c, &tag, in, sizeof(in))) != -EAGAIN) {
			if (len < 0)
				fail("exchange: recv", (int)len);
			progress = 1;
			if (tag == PIVC_TAG_PING) {
				send_blocking(c, PIVC_TAG_PONG, in, (size_t)len);
				continue;
			}
			if (tag != PIVC_TAG_TEST)
				continue;
			pivc_test_message(received, want);
			if (len != PIVC_TEST_MESSAGE || memcmp(in, want, sizeof(want)))
				bad++;
			received++;
		}
		if (progress)
			idle_since = now_ns();
		else if (now_ns() - idle_since > 10000000000u)
			break;
		else if (sent < n)
			pivc_wait_space(c, 1);
		else
			pivc_wait(c, 1);
	}
	printf("partita-ivc: exchange sent=%" PRIu32 " received=%" PRIu32 " bad=%" PRIu32 "\n",
	       sent, received, bad);
	return sent == n && received == n && bad == 0 ? 0 : 1;
}

static int cmd_bench(struct pivc *c, size_t size, uint32_t n)
{
	uint8_t out[MAX_MESSAGE] = { 0 }, in[MAX_MESSAGE];
	uint32_t sent = 0, echoed = 0, tag;
	uint64_t start = now_ns(), ns;
	long len;
	int err;

	if (size < 8 || size > MAX_MESSAGE || n == 0)
		fail("bench", -EINVAL);
	while (echoed < n) {
		while (sent < n) {
			uint64_t seq = sent;

			memcpy(out, &seq, 8);
			err = pivc_send(c, PIVC_TAG_PING, out, size);
			if (err == -EAGAIN)
				break;
			if (err)
				fail("bench: send", err);
			sent++;
		}
		len = recv_one(c, &tag, in, 5000);
		if (len < 0)
			fail("bench: no echo within 5 s", (int)len);
		if (tag == PIVC_TAG_PONG && (size_t)len == size && get64(in) == echoed)
			echoed++;
	}
	ns = now_ns() - start;
	printf("partita-ivc: bench bytes=%zu n=%" PRIu32 " ns=%" PRIu64 " msgs_per_s=%" PRIu64
	       " kib_per_s=%" PRIu64 "\n",
	       size, n, ns, (uint64_t)n * 1000000000u / ns,
	       (uint64_t)n * size * 1000000000u / 1024 / ns);
	return 0;
}

static void usage(void)
{
	fprintf(stderr, "usage: partita-ivc [-d device] recv [n] | period <ms> | send <text> | "
			"ping [n] [bytes] | serve [idle_s] | rtos-ping [n] | exchange [n] | "
			"bench [bytes] [n]\n");
	exit(2);
}

static long arg(int argc, char **argv, int i, long fallback)
{
	char *end;
	long v;

	if (i >= argc)
		return fallback;
	v = strtol(argv[i], &end, 0);
	if (*end || v < 0)
		usage();
	return v;
}

int main(int argc, char **argv)
{
	const char *device = "/dev/partita-ivc0";
	struct pivc c;
	int err, i = 1;

	if (argc > 2 && !strcmp(argv[1], "-d")) {
		device = argv[2];
		i = 3;
	}
	if (i >= argc)
		usage();
	err = pivc_open(&c, device);
	if (err)
		fail(device, err);
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (!strcmp(argv[i], "recv"))
		return cmd_recv(&c, arg(argc, argv, i + 1, -1));
	if (!strcmp(argv[i], "period") && i + 1 < argc)
		return cmd_period(&c, (uint32_t)arg(argc, argv, i + 1, 100));
	if (!strcmp(argv[i], "send") && i + 1 < argc)
		return cmd_send(&c, argv[i + 1]);
	if (!strcmp(argv[i], "ping"))
		return cmd_ping(&c, arg(argc, argv, i + 1, 1000), arg(argc, argv, i + 2, 8));
	if (!strcmp(argv[i], "serve"))
		return cmd_serve(&c, (int)arg(argc, argv, i + 1, 5));
	if (!strcmp(argv[i], "rtos-ping"))
		return cmd_rtos_ping(&c, (uint32_t)arg(argc, argv, i + 1, 1000));
	if (!strcmp(argv[i], "exchange"))
		return cmd_exchange(&c, (uint32_t)arg(argc, argv, i + 1, 10000));
	if (!strcmp(argv[i], "bench"))
		return cmd_bench(&c, arg(argc, argv, i + 1, 64), (uint32_t)arg(argc, argv, i + 2, 1000));
	usage();
	return 2;
}
