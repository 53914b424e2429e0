// SPDX-License-Identifier: GPL-2.0
/*
 * partita_ivc: Linux's end of Partita's inter-VM channels (docs/ivc.md), for Debian's
 * stock kernel, which has neither uio_pdrv_genirq nor rpmsg. It binds every device-tree
 * node `compatible = "partita,ivc"` and gives each a character device,
 * /dev/partita-ivc<id>, with the interface of partita_ivc_uapi.h: mmap of the shared
 * memory, a blocking read/poll for the doorbell interrupt and an ioctl that rings the
 * peers through Partita's PARTITA_IVC_RING hypercall. Like Bao's /dev/baoipc, it knows
 * nothing of the ring format: user space (libpartita_ivc) reads and writes the memory.
 *
 * The memory is mapped write-combining (Normal non-cacheable): the FreeRTOS peer runs
 * with its MMU off, so it sees the channel as uncached memory, and both sides must agree.
 */
#include <linux/arm-smccc.h>
#include <linux/delay.h>
#include <linux/fs.h>
#include <linux/interrupt.h>
#include <linux/io.h>
#include <linux/miscdevice.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/of.h>
#include <linux/platform_device.h>
#include <linux/poll.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <linux/wait.h>

#include "partita_ivc_uapi.h"

#define PARTITA_IVC_RING_CALL 0xc6000003
#define SMCCC_DENIED ((unsigned long)-3)
/* A ring the rate rule refuses is retried this many times before giving up. */
#define RING_ATTEMPTS 1000

struct ivc_channel {
	struct miscdevice misc;
	char name[32];
	phys_addr_t phys;
	resource_size_t size;
	struct partita_ivc_info info;
	atomic_t doorbells;
	wait_queue_head_t wait;
};

/* One open file: the doorbell count it has seen. */
struct ivc_file {
	struct ivc_channel *channel;
	u32 seen;
};

static irqreturn_t ivc_doorbell(int irq, void *data)
{
	struct ivc_channel *channel = data;

	atomic_inc(&channel->doorbells);
	wake_up_interruptible(&channel->wait);
	return IRQ_HANDLED;
}

static int ivc_open(struct inode *inode, struct file *file)
{
	struct miscdevice *misc = file->private_data;
	struct ivc_file *f = kzalloc(sizeof(*f), GFP_KERNEL);

	if (!f)
		return -ENOMEM;
	f->channel = container_of(misc, struct ivc_channel, misc);
	f->seen = atomic_read(&f->channel->doorbells);
	file->private_data = f;
	return 0;
}

static int ivc_release(struct inode *inode, struct file *file)
{
	kfree(file->private_data);
	return 0;
}

static ssize_t ivc_read(struct file *file, char __user *buf, size_t len, loff_t *off)
{
	struct ivc_file *f = file->private_data;
	struct ivc_channel *channel = f->channel;
	u32 now;

	if (len < sizeof(now))
		return -EINVAL;
	if (file->f_flags & O_NONBLOCK) {
		if ((u32)atomic_read(&channel->doorbells) == f->seen)
			return -EAGAIN;
	} else if (wait_event_interruptible(channel->wait,
			(u32)atomic_read(&channel->doorbells) != f->seen)) {
		return -ERESTARTSYS;
	}
	now = atomic_read(&channel->doorbells);
	f->seen = now;
	if (copy_to_user(buf, &now, sizeof(now)))
		return -EFAULT;
	return sizeof(now);
}

static __poll_t ivc_poll(struct file *file, poll_table *wait)
{
	struct ivc_file *f = file->private_data;

	poll_wait(file, &f->channel->wait, wait);
	if ((u32)atomic_read(&f->channel->doorbells) != f->seen)
		return EPOLLIN | EPOLLRDNORM;
	return 0;
}

static int ivc_mmap(struct file *file, struct vm_area_struct *vma)
{
	struct ivc_file *f = file->private_data;
	struct ivc_channel *channel = f->channel;
	unsigned long len = vma->vm_end - vma->vm_start;

	if (vma->vm_pgoff != 0 || len > channel->size)
		return -EINVAL;
	if (channel->info.read_only) {
		if (vma->vm_flags & VM_WRITE)
			return -EPERM;
		vma->vm_flags &= ~VM_MAYWRITE;
	}
	vma->vm_page_prot = pgprot_writecombine(vma->vm_page_prot);
	return remap_pfn_range(vma, vma->vm_start, channel->phys >> PAGE_SHIFT, len,
			       vma->vm_page_prot);
}

/* PARTITA_IVC_RING: rings the peers, waiting out the rate rule (x1 = ns to wait). */
static long ivc_ring(struct ivc_channel *channel)
{
	struct arm_smccc_res res;
	int attempt;

	for (attempt = 0; attempt < RING_ATTEMPTS; attempt++) {
		arm_smccc_1_1_hvc(PARTITA_IVC_RING_CALL, channel->info.id, &res);
		if (res.a0 == 0)
			return 0;
		if (res.a0 != SMCCC_DENIED)
			return -EINVAL;
		if (signal_pending(current))
			return -EINTR;
		if (res.a1 < 20000)
			ndelay(res.a1);
		else
			usleep_range(res.a1 / 1000, res.a1 / 1000 + 20);
	}
	return -EBUSY;
}

static long ivc_ioctl(struct file *file, unsigned int cmd, unsigned long arg)
{
	struct ivc_file *f = file->private_data;

	switch (cmd) {
	case PARTITA_IVC_INFO:
		if (copy_to_user((void __user *)arg, &f->channel->info, sizeof(f->channel->info)))
			return -EFAULT;
		return 0;
	case PARTITA_IVC_RING:
		return ivc_ring(f->channel);
	default:
		return -ENOTTY;
	}
}

static const struct file_operations ivc_fops = {
	.owner = THIS_MODULE,
	.open = ivc_open,
	.release = ivc_release,
	.read = ivc_read,
	.poll = ivc_poll,
	.mmap = ivc_mmap,
	.unlocked_ioctl = ivc_ioctl,
	.llseek = noop_llseek,
};

static int ivc_probe(struct platform_device *pdev)
{
	struct device *dev = &pdev->dev;
	struct device_node *np = dev->of_node;
	struct ivc_channel *channel;
	struct resource *res;
	int irq, err;

	channel = devm_kzalloc(dev, sizeof(*channel), GFP_KERNEL);
	if (!channel)
		return -ENOMEM;
	res = platform_get_resource(pdev, IORESOURCE_MEM, 0);
	if (!res)
		return -EINVAL;
	channel->phys = res->start;
	channel->size = resource_size(res);
	if (!PAGE_ALIGNED(channel->phys) || !PAGE_ALIGNED(channel->size))
		return -EINVAL;
	if (of_property_read_u32(np, "partita,channel", &channel->info.id) ||
	    of_property_read_u32(np, "partita,member", &channel->info.member) ||
	    of_property_read_u32(np, "partita,members", &channel->info.members))
		return -EINVAL;
	channel->info.size = channel->size;
	channel->info.read_only = of_property_read_bool(np, "read-only");
	atomic_set(&channel->doorbells, 0);
	init_waitqueue_head(&channel->wait);
	irq = platform_get_irq(pdev, 0);
	if (irq < 0)
		return irq;
	snprintf(channel->name, sizeof(channel->name), "partita-ivc%u", channel->info.id);
	err = devm_request_irq(dev, irq, ivc_doorbell, 0, channel->name, channel);
	if (err)
		return err;
	channel->misc.minor = MISC_DYNAMIC_MINOR;
	channel->misc.name = channel->name;
	channel->misc.fops = &ivc_fops;
	channel->misc.mode = 0600;
	err = misc_register(&channel->misc);
	if (err)
		return err;
	platform_set_drvdata(pdev, channel);
	dev_info(dev, "/dev/%s: %llu bytes at %pa, ring %u of %u%s\n", channel->name,
		 (unsigned long long)channel->size, &channel->phys, channel->info.member,
		 channel->info.members, channel->info.read_only ? ", read-only" : "");
	return 0;
}

static int ivc_remove(struct platform_device *pdev)
{
	struct ivc_channel *channel = platform_get_drvdata(pdev);

	misc_deregister(&channel->misc);
	return 0;
}

static const struct of_device_id ivc_of_match[] = {
	{ .compatible = "partita,ivc" },
	{ }
};
MODULE_DEVICE_TABLE(of, ivc_of_match);

static struct platform_driver ivc_driver = {
	.probe = ivc_probe,
	.remove = ivc_remove,
	.driver = {
		.name = "partita-ivc",
		.of_match_table = ivc_of_match,
	},
};
module_platform_driver(ivc_driver);

MODULE_DESCRIPTION("Partita inter-VM channels: shared memory and doorbells");
MODULE_LICENSE("GPL");
