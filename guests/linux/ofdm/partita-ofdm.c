/*
 * partita-ofdm: drives one of Partita's reconfigurable accelerators from Linux user space
 * (docs/accelerators.md, issue 14), in the native programming model, and checks every
 * job's RESULT against a software reference: a port of partita_core::accel::functions
 * (QAM-16 and QAM-64 mapping, the fixed-point FFT-512 and FFT-1024), bit for bit.
 *
 *   partita-ofdm <interface> <buffers> <qam16|qam64|fft512|fft1024> <jobs> <frames>
 *
 * <interface> is the accelerator's guest-physical address (its `base` in the
 * configuration), <buffers> guest-physical memory of this VM that Linux does not use
 * (the kernel's `mem=` ends below it): the input frames there, the output 1 MiB above.
 * Both are mapped through /dev/mem; the kernel maps memory outside its own RAM as Device
 * memory, so every access here is an aligned 32-bit (or byte) load or store.
 *
 * The interface page is read-only while it is not connected: the first write traps to
 * Partita and is the request; the write waits until the page is connected and then runs
 * (the native model). A job started while connected whose region went to another VM
 * before the fabric took it still has START set: writing it again asks again.
 *
 * Prints `partita-ofdm: function=<f> jobs=<n> frames=<n> ok=<n> bad=<n>
 * hw_ns_per_frame=<ns> sw_ns_per_frame=<ns>`; exits 0 when every job was right.
 */
/* The FFT's twiddles are computed in double precision exactly as fft.rs computes them at
 * compile time: no fused multiply-add may change a rounding. */
#pragma GCC optimize("fp-contract=off")

#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

/* Ker-ONE's Table 1 as partita_core::accel::interface lays it out. */
enum {
    REG_STAT = 0x00,
    REG_START = 0x04,
    REG_OVER = 0x08,
    REG_CMD = 0x0c,
    REG_DATA_ADDR = 0x10,
    REG_DATA_SIZE = 0x14,
    REG_RESULT = 0x18,
    REG_INT_CTRL = 0x20,
    REG_OUT_ADDR = 0x24,
    REG_OUT_SIZE = 0x28,
};
enum {
    STAT_CONNECTED = 1u << 0,
    STAT_BUSY = 1u << 1,
    STAT_SUSPENDED = 1u << 2,
    STAT_ERRORS = 7u << 8,
};

#define FRAME_BITS 18800
#define FRAME_BYTES (FRAME_BITS / 8)
#define MAX_FRAMES 8
#define OUT_OFFSET 0x100000u
#define FNV_OFFSET 0xcbf29ce484222325ull
#define FNV_PRIME 0x100000001b3ull

static volatile uint32_t *page;

static uint32_t reg_read(unsigned offset) { return page[offset / 4]; }
static void reg_write(unsigned offset, uint32_t value) { page[offset / 4] = value; }

static uint64_t now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static uint64_t fnv1a(uint64_t state, const uint8_t *bytes, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        state ^= bytes[i];
        state *= FNV_PRIME;
    }
    return state;
}

/* The Gray-coded level of `half` bits `g`, as qam.rs computes it. */
static int level(uint32_t g, unsigned half)
{
    uint32_t b = g;
    for (unsigned shift = 1; shift < half; shift <<= 1)
        b ^= b >> shift;
    int points = 1 << half;
    return 2 * (int)b - (points - 1);
}

/* One frame mapped at `bits` bits per symbol into `out` (symbols of I, Q as i16 LE);
 * returns its length in bytes. The same mapping as partita_core::accel::functions::qam. */
static size_t qam_frame(const uint8_t *in, unsigned bits, uint8_t *out)
{
    unsigned half = bits / 2;
    uint32_t mask = (1u << half) - 1;
    int step = bits == 4 ? 8192 : 4096;
    size_t symbols = (FRAME_BITS + bits - 1) / bits;
    uint32_t acc = 0;
    unsigned held = 0;
    size_t consumed = 0, next = 0;
    for (size_t s = 0; s < symbols; s++) {
        while (held < bits) {
            uint32_t byte = consumed < FRAME_BITS && next < FRAME_BYTES ? in[next] : 0;
            next++;
            acc = (acc << 8) | byte;
            held += 8;
            consumed += 8;
        }
        uint32_t word = (acc >> (held - bits)) & ((1u << bits) - 1);
        held -= bits;
        acc &= (1u << held) - 1;
        int16_t i = (int16_t)(level(word >> half, half) * step);
        int16_t q = (int16_t)(level(word & mask, half) * step);
        out[4 * s] = (uint8_t)i;
        out[4 * s + 1] = (uint8_t)((uint16_t)i >> 8);
        out[4 * s + 2] = (uint8_t)q;
        out[4 * s + 3] = (uint8_t)((uint16_t)q >> 8);
    }
    return symbols * 4;
}

/* Symbols in one FFT input frame (a QAM-16 frame's output), and the largest transform. */
#define FFT_FRAME_SYMBOLS (FRAME_BITS / 4)
#define FFT_MAX_N 1024

/* W_1024^k for k < 512 as Q15 (re, im), as fft.rs's `twiddles` computes them. */
static int32_t twiddle[FFT_MAX_N / 2][2];

static void twiddles(void)
{
    for (int k = 0; k < FFT_MAX_N / 2; k++) {
        double x = 3.141592653589793 * 2.0 * (double)k / (double)FFT_MAX_N;
        double cos = 0.0, sin = 0.0, term = 1.0;
        for (int i = 0; i < 40;) {
            switch (i % 4) {
            case 0: cos += term; break;
            case 1: sin += term; break;
            case 2: cos -= term; break;
            default: sin -= term; break;
            }
            i++;
            term = term * x / (double)i;
        }
        double parts[2] = {cos, -sin};
        for (int p = 0; p < 2; p++) {
            double scaled = parts[p] * 32768.0;
            double rounded = scaled < 0.0 ? scaled - 0.5 : scaled + 0.5;
            int32_t r = (int32_t)rounded;
            twiddle[k][p] = r > 32767 ? 32767 : r;
        }
    }
}

/* a * b - c * d + e with the wrapping of Rust's release i32 arithmetic. */
static int32_t wrapping(int32_t a, int32_t b, int32_t c, int32_t d, int32_t e)
{
    return (int32_t)((uint32_t)a * (uint32_t)b - (uint32_t)c * (uint32_t)d + (uint32_t)e);
}

/* fft.rs's `transform`: in-place radix-2 FFT of `n` points, each stage halved with rounding. */
static void transform(int32_t (*x)[2], unsigned n)
{
    unsigned bits = (unsigned)__builtin_ctz(n);
    for (unsigned i = 0; i < n; i++) {
        unsigned j = 0;
        for (unsigned b = 0; b < bits; b++)
            j |= ((i >> b) & 1u) << (bits - 1 - b);
        if (j > i) {
            int32_t re = x[i][0], im = x[i][1];
            x[i][0] = x[j][0];
            x[i][1] = x[j][1];
            x[j][0] = re;
            x[j][1] = im;
        }
    }
    for (unsigned len = 2; len <= n; len *= 2) {
        unsigned stride = FFT_MAX_N / len;
        for (unsigned start = 0; start < n; start += len) {
            for (unsigned k = 0; k < len / 2; k++) {
                int32_t wr = twiddle[k * stride][0], wi = twiddle[k * stride][1];
                int32_t *a = x[start + k], *b = x[start + k + len / 2];
                int32_t tr = wrapping(b[0], wr, b[1], wi, 1 << 14) >> 15;
                int32_t ti = wrapping(b[0], wi, -b[1], wr, 1 << 14) >> 15;
                int32_t ar = a[0], ai = a[1];
                a[0] = (ar + tr + 1) >> 1;
                a[1] = (ai + ti + 1) >> 1;
                b[0] = (ar - tr + 1) >> 1;
                b[1] = (ai - ti + 1) >> 1;
            }
        }
    }
}

static int16_t get16(const uint8_t *at) { return (int16_t)(uint16_t)(at[0] | at[1] << 8); }

static void put16(uint8_t *at, int32_t v)
{
    at[0] = (uint8_t)v;
    at[1] = (uint8_t)((uint32_t)v >> 8);
}

/* One frame of FFT_FRAME_SYMBOLS symbols in blocks of `n` (the last padded with zeros) into
 * `out`; returns its length in bytes. fft.rs's `frame`. */
static size_t fft_frame(const uint8_t *in, unsigned n, uint8_t *out)
{
    static int32_t block[FFT_MAX_N][2];
    size_t blocks = (FFT_FRAME_SYMBOLS + n - 1) / n;
    for (size_t b = 0; b < blocks; b++) {
        for (unsigned k = 0; k < n; k++) {
            size_t i = b * n + k;
            block[k][0] = i < FFT_FRAME_SYMBOLS ? get16(in + 4 * i) : 0;
            block[k][1] = i < FFT_FRAME_SYMBOLS ? get16(in + 4 * i + 2) : 0;
        }
        transform(block, n);
        for (unsigned k = 0; k < n; k++) {
            put16(out + 4 * (b * n + k), block[k][0]);
            put16(out + 4 * (b * n + k) + 2, block[k][1]);
        }
    }
    return blocks * n * 4;
}

static void *map(int fd, unsigned long phys, size_t len)
{
    void *at = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, (off_t)phys);
    if (at == MAP_FAILED) {
        fprintf(stderr, "partita-ofdm: mmap of /dev/mem at %#lx: ", phys);
        perror(NULL);
        exit(2);
    }
    return at;
}

int main(int argc, char **argv)
{
    if (argc != 6) {
        fprintf(stderr, "usage: partita-ofdm <interface> <buffers> <qam16|qam64|fft512|fft1024> "
                        "<jobs> <frames>\n");
        return 2;
    }
    unsigned long interface = strtoul(argv[1], NULL, 0);
    unsigned long buffers = strtoul(argv[2], NULL, 0);
    /* QAM: bits per symbol; FFT: points per block. */
    unsigned bits = 0, points = 0;
    if (strcmp(argv[3], "qam16") == 0) {
        bits = 4;
    } else if (strcmp(argv[3], "qam64") == 0) {
        bits = 6;
    } else if (strcmp(argv[3], "fft512") == 0) {
        points = 512;
    } else if (strcmp(argv[3], "fft1024") == 0) {
        points = 1024;
    } else {
        fprintf(stderr, "partita-ofdm: no function %s (qam16, qam64, fft512 or fft1024)\n",
                argv[3]);
        return 2;
    }
    if (points)
        twiddles();
    int jobs = atoi(argv[4]);
    int frames = atoi(argv[5]);
    if (jobs < 1 || frames < 1 || frames > MAX_FRAMES) {
        fprintf(stderr, "partita-ofdm: jobs >= 1 and frames 1..%d\n", MAX_FRAMES);
        return 2;
    }
    int fd = open("/dev/mem", O_RDWR | O_SYNC);
    if (fd < 0) {
        perror("partita-ofdm: /dev/mem");
        return 2;
    }
    page = map(fd, interface, 4096);
    volatile uint32_t *input = map(fd, buffers, OUT_OFFSET);
    volatile uint32_t *output = map(fd, buffers + OUT_OFFSET, OUT_OFFSET);

    /* Whole words of input: frames of 2,350 bytes (QAM) or 4,700 symbols (FFT), padded to a
     * multiple of 4. */
    size_t in_frame = points ? FFT_FRAME_SYMBOLS * 4 : FRAME_BYTES;
    size_t in_len = (size_t)frames * in_frame;
    size_t in_words = (in_len + 3) / 4;
    size_t out_frame = points ? (FFT_FRAME_SYMBOLS + points - 1) / points * points * 4
                              : ((FRAME_BITS + bits - 1) / bits) * 4;
    size_t out_len = (size_t)frames * out_frame;
    uint8_t *in_copy = malloc(in_words * 4);
    uint8_t *out_copy = malloc(out_len);
    uint8_t *reference = malloc(out_frame);
    if (!in_copy || !out_copy || !reference)
        return 2;

    uint32_t seed = 0x2545f491u ^ bits ^ points;
    int ok = 0, bad = 0;
    uint64_t hw_ns = 0, sw_ns = 0;
    for (int job = 0; job < jobs; job++) {
        for (size_t w = 0; w < in_words; w++) {
            seed ^= seed << 13;
            seed ^= seed >> 17;
            seed ^= seed << 5;
            input[w] = seed;
            memcpy(in_copy + 4 * w, &seed, 4);
        }
        uint64_t sw_start = now_ns();
        uint64_t expected = FNV_OFFSET;
        for (int f = 0; f < frames; f++) {
            const uint8_t *in = in_copy + (size_t)f * in_frame;
            size_t len = points ? fft_frame(in, points, reference) : qam_frame(in, bits, reference);
            expected = fnv1a(expected, reference, len);
        }
        sw_ns += now_ns() - sw_start;

        uint64_t start = now_ns();
        /* The native model: the first write is the request and waits for the connection. */
        reg_write(REG_INT_CTRL, 0);
        reg_write(REG_OVER, 0);
        reg_write(REG_CMD, 0);
        reg_write(REG_DATA_ADDR, (uint32_t)buffers);
        reg_write(REG_DATA_SIZE, (uint32_t)in_len);
        reg_write(REG_OUT_ADDR, (uint32_t)(buffers + OUT_OFFSET));
        reg_write(REG_OUT_SIZE, (uint32_t)out_len);
        reg_write(REG_START, 1);
        while ((reg_read(REG_OVER) & 0xff) == 0) {
            uint32_t stat = reg_read(REG_STAT);
            if (!(stat & (STAT_CONNECTED | STAT_BUSY | STAT_SUSPENDED)) &&
                (reg_read(REG_START) & 0xff) != 0)
                reg_write(REG_START, 1);
            usleep(100);
        }
        hw_ns += now_ns() - start;
        uint32_t stat = reg_read(REG_STAT);
        uint64_t result = reg_read(REG_RESULT) | (uint64_t)reg_read(REG_RESULT + 4) << 32;
        /* The output as the fabric wrote it, for the record: its FNV-1a is RESULT. */
        for (size_t w = 0; w < out_len / 4; w++) {
            uint32_t word = output[w];
            memcpy(out_copy + 4 * w, &word, 4);
        }
        uint64_t written = fnv1a(FNV_OFFSET, out_copy, out_len);
        if (!(stat & STAT_ERRORS) && result == expected && written == expected) {
            ok++;
        } else {
            bad++;
            printf("partita-ofdm: job %d wrong: STAT %#x RESULT %#llx output %#llx expected %#llx\n",
                   job + 1, stat, (unsigned long long)result, (unsigned long long)written,
                   (unsigned long long)expected);
        }
    }
    unsigned total = (unsigned)(jobs * frames);
    printf("partita-ofdm: function=%s jobs=%d frames=%u ok=%d bad=%d hw_ns_per_frame=%llu "
           "sw_ns_per_frame=%llu\n",
           argv[3], jobs, total, ok, bad, (unsigned long long)(hw_ns / total),
           (unsigned long long)(sw_ns / total));
    return bad == 0 ? 0 : 1;
}
