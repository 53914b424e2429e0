/* SPDX-License-Identifier: (GPL-2.0 OR Apache-2.0) */
/*
 * partita_ivc_uapi.h: what the partita_ivc module and user space share. One character
 * device per channel, /dev/partita-ivc<id>:
 *   mmap(0, size)      the channel's memory (read-only mapping for a read-only member);
 *   read(4 bytes)      blocks until a doorbell arrived since this file last read, and
 *                      returns the count of doorbells so far (u32); poll() says POLLIN then;
 *   ioctl(INFO)        the channel as the device tree describes it;
 *   ioctl(RING)        rings every other member (PARTITA_IVC_RING), waiting out the rate
 *                      rule; EINVAL when Partita refuses it (not a member).
 * The ring format inside the memory is docs/ivc.md's; the module never reads it.
 */
#ifndef PARTITA_IVC_UAPI_H
#define PARTITA_IVC_UAPI_H

#ifdef __KERNEL__
#include <linux/ioctl.h>
#include <linux/types.h>
#else
#include <stdint.h>
#include <sys/ioctl.h>
typedef uint32_t __u32;
typedef uint64_t __u64;
#endif

struct partita_ivc_info {
	__u64 size;      /* bytes of the channel */
	__u32 id;        /* channel id (the hypercall's x1) */
	__u32 member;    /* this VM's ring */
	__u32 members;   /* rings in the channel */
	__u32 read_only; /* 1 when this VM may only read */
};

#define PARTITA_IVC_MAGIC 'P'
#define PARTITA_IVC_INFO _IOR(PARTITA_IVC_MAGIC, 1, struct partita_ivc_info)
#define PARTITA_IVC_RING _IO(PARTITA_IVC_MAGIC, 2)

#endif
