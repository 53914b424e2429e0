/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libpartita_ivc: a channel's rings from Linux user space, in the layout docs/ivc.md
 * gives (the same as partita_core::ivc::ring, which FreeRTOS runs). A channel of n
 * members holds n rings of size/n bytes (rounded down to 8); this VM writes ring
 * `member` and reads the others. Everything read from the shared memory is checked:
 * a broken ring is reported (-EPROTO), never trusted.
 */
#ifndef LIBPARTITA_IVC_H
#define LIBPARTITA_IVC_H

#include <stddef.h>
#include <stdint.h>

#include "partita_ivc_uapi.h"

/* Ring layout (byte offsets in one ring). */
#define PIVC_HEAD 0x00
#define PIVC_SPACE_WANTED 0x08
#define PIVC_TAIL 0x40
#define PIVC_WAITING 0x48
#define PIVC_DATA 0x80
#define PIVC_RECORD_HEADER 8

/* The demo's message tags (crates/core/src/ivc/messages.rs). */
#define PIVC_TAG_SAMPLE 1
#define PIVC_TAG_COMMAND 2
#define PIVC_TAG_PING 3
#define PIVC_TAG_PONG 4
#define PIVC_TAG_TEST 5
#define PIVC_TAG_TEXT 6
#define PIVC_COMMAND_PERIOD 1
#define PIVC_COMMAND_PING 2
#define PIVC_TEST_MESSAGE 32

struct pivc_ring {
	volatile uint8_t *base;
	size_t capacity; /* bytes of records */
};

struct pivc {
	int fd;
	volatile uint8_t *memory;
	struct partita_ivc_info info;
	struct pivc_ring tx; /* ours */
	struct pivc_ring rx; /* the peer's (member 1 - ours in a two-VM channel) */
	uint32_t space_answered; /* the peer's last request for room we rang for */
};

/* Opens /dev/partita-ivc<id> and maps the channel. 0 or a negative errno. */
int pivc_open(struct pivc *c, const char *path);
void pivc_close(struct pivc *c);
/* Appends a message to our ring and rings the peer if it waits for a doorbell.
 * 0, -EAGAIN (full), -EMSGSIZE (never fits), -EPROTO (ring broken), or a ring error. */
int pivc_send(struct pivc *c, uint32_t tag, const void *payload, size_t len);
/* Takes the oldest message of the peer's ring: its length, -EAGAIN (empty), -ENOBUFS
 * (longer than cap; it stays) or -EPROTO (broken ring). */
long pivc_recv(struct pivc *c, uint32_t *tag, void *buf, size_t cap);
/* Waits for a doorbell (or timeout_ms, -1 forever) unless the peer's ring has a message. */
int pivc_wait(struct pivc *c, int timeout_ms);
/* After a send found our ring full: asks the peer to ring when it frees room, and waits
 * for a doorbell (or timeout_ms) unless room was freed meanwhile. */
int pivc_wait_space(struct pivc *c, int timeout_ms);
/* Rings the peers. */
int pivc_ring(struct pivc *c);
/* Drops everything in the peer's ring (after -EPROTO). */
void pivc_discard(struct pivc *c);
/* FNV-1a, 32 bits, and the exchange test's message `seq`. */
uint32_t pivc_fnv1a(const uint8_t *bytes, size_t len);
void pivc_test_message(uint32_t seq, uint8_t out[PIVC_TEST_MESSAGE]);

#endif
