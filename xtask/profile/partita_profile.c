/*
 * partita_profile: a QEMU TCG plugin (plugin API version 1, QEMU 7.2) that counts the
 * instructions QEMU executes, in all and inside Partita's own image, per instruction
 * address, for `cargo xtask profile`.
 *
 * Partita runs identity mapped at EL2, at the address it is loaded at, while a guest may run
 * code at the same virtual addresses (FreeRTOS is linked there too). An instruction is
 * Partita's when its virtual address lies in [lo, hi) AND its host address differs from it
 * by Partita's own offset, learnt from the instruction at `entry` (Partita's first one,
 * executed before any guest exists). Counting is inline (one add per executed block), so the
 * profile does not change the virtual time the guests see.
 *
 * Arguments: lo=<hex>,hi=<hex>,entry=<hex>,out=<file>. At exit the file holds
 * `total <n>`, `el2 <n>`, then one `<address hex> <count>` line per Partita instruction
 * executed. No Debian package ships qemu-plugin.h, so the few API functions used are
 * declared here as QEMU 7.2's header declares them.
 */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef uint64_t qemu_plugin_id_t;
struct qemu_plugin_tb;
struct qemu_plugin_insn;
struct qemu_info_t;
enum qemu_plugin_op { QEMU_PLUGIN_INLINE_ADD_U64 };
typedef void (*qemu_plugin_vcpu_tb_trans_cb_t)(qemu_plugin_id_t, struct qemu_plugin_tb *);
typedef void (*qemu_plugin_udata_cb_t)(qemu_plugin_id_t, void *);

void qemu_plugin_register_vcpu_tb_trans_cb(qemu_plugin_id_t, qemu_plugin_vcpu_tb_trans_cb_t);
void qemu_plugin_register_vcpu_tb_exec_inline(struct qemu_plugin_tb *, enum qemu_plugin_op,
                                              void *, uint64_t);
size_t qemu_plugin_tb_n_insns(const struct qemu_plugin_tb *);
struct qemu_plugin_insn *qemu_plugin_tb_get_insn(const struct qemu_plugin_tb *, size_t);
uint64_t qemu_plugin_insn_vaddr(const struct qemu_plugin_insn *);
void *qemu_plugin_insn_haddr(const struct qemu_plugin_insn *);
void qemu_plugin_register_atexit_cb(qemu_plugin_id_t, qemu_plugin_udata_cb_t, void *);
void qemu_plugin_outs(const char *);

__attribute__((visibility("default"))) int qemu_plugin_version = 1;

/* One translated block: how often it ran, its size, and its instructions inside Partita. */
struct block {
    uint64_t runs;
    uint64_t insns;
    size_t partita;
    struct block *next;
    uint64_t addr[];
};

static uint64_t lo, hi, entry;
static int64_t offset;
static int offset_known;
static char out_path[4096];
static struct block *blocks;

static int is_partita(const struct qemu_plugin_insn *insn)
{
    uint64_t vaddr = qemu_plugin_insn_vaddr(insn);
    int64_t host = (int64_t)(uintptr_t)qemu_plugin_insn_haddr(insn);
    if (vaddr == entry && !offset_known) {
        offset = host - (int64_t)vaddr;
        offset_known = 1;
    }
    return offset_known && vaddr >= lo && vaddr < hi && host - (int64_t)vaddr == offset;
}

static void translated(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
    (void)id;
    size_t n = qemu_plugin_tb_n_insns(tb);
    struct block *b = calloc(1, sizeof *b + n * sizeof b->addr[0]);
    if (!b) {
        return;
    }
    b->insns = n;
    for (size_t i = 0; i < n; i++) {
        struct qemu_plugin_insn *insn = qemu_plugin_tb_get_insn(tb, i);
        if (is_partita(insn)) {
            b->addr[b->partita++] = qemu_plugin_insn_vaddr(insn);
        }
    }
    b->next = blocks;
    blocks = b;
    qemu_plugin_register_vcpu_tb_exec_inline(tb, QEMU_PLUGIN_INLINE_ADD_U64, &b->runs, 1);
}

static void finished(qemu_plugin_id_t id, void *data)
{
    (void)id;
    (void)data;
    FILE *f = fopen(out_path, "w");
    if (!f) {
        qemu_plugin_outs("partita_profile: cannot write the profile\n");
        return;
    }
    uint64_t total = 0, el2 = 0;
    for (struct block *b = blocks; b; b = b->next) {
        total += b->runs * b->insns;
        el2 += b->runs * b->partita;
    }
    fprintf(f, "total %" PRIu64 "\nel2 %" PRIu64 "\n", total, el2);
    for (struct block *b = blocks; b; b = b->next) {
        for (size_t i = 0; i < b->partita && b->runs; i++) {
            fprintf(f, "%" PRIx64 " %" PRIu64 "\n", b->addr[i], b->runs);
        }
    }
    fclose(f);
}

static int hex_arg(const char *arg, const char *key, uint64_t *value)
{
    size_t len = strlen(key);
    if (strncmp(arg, key, len) != 0 || arg[len] != '=') {
        return 0;
    }
    *value = strtoull(arg + len + 1, NULL, 16);
    return 1;
}

__attribute__((visibility("default"))) int qemu_plugin_install(qemu_plugin_id_t id,
                                                               const struct qemu_info_t *info,
                                                               int argc, char **argv)
{
    (void)info;
    for (int i = 0; i < argc; i++) {
        if (hex_arg(argv[i], "lo", &lo) || hex_arg(argv[i], "hi", &hi) ||
            hex_arg(argv[i], "entry", &entry)) {
            continue;
        }
        if (strncmp(argv[i], "out=", 4) == 0 && strlen(argv[i] + 4) < sizeof out_path) {
            strcpy(out_path, argv[i] + 4);
            continue;
        }
        fprintf(stderr, "partita_profile: unknown argument %s\n", argv[i]);
        return -1;
    }
    if (!out_path[0] || hi <= lo) {
        fprintf(stderr, "partita_profile: needs lo, hi, entry and out\n");
        return -1;
    }
    qemu_plugin_register_vcpu_tb_trans_cb(id, translated);
    qemu_plugin_register_atexit_cb(id, finished, NULL);
    return 0;
}
