// png_check FILE.png: exits 0 when the screenshot is a decodable 8-bit RGB(A) PNG that is not blank
// (at least 2% of its pixels differ from the top-left pixel and it has more than 16 colours), else
// prints why and exits 1. For `make report-test` (tests/report.mk); zlib only.
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

static uint32_t be32(const unsigned char *p) {
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static int paeth(int a, int b, int c) {
    int p = a + b - c, pa = abs(p - a), pb = abs(p - b), pc = abs(p - c);
    return pa <= pb && pa <= pc ? a : pb <= pc ? b : c;
}

int main(int argc, char **argv) {
    if (argc != 2) return fprintf(stderr, "usage: png_check FILE.png\n"), 2;
    FILE *f = fopen(argv[1], "rb");
    if (!f) return fprintf(stderr, "%s: cannot open\n", argv[1]), 1;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *d = malloc((size_t)n);
    if (!d || fread(d, 1, (size_t)n, f) != (size_t)n) return fprintf(stderr, "%s: cannot read\n", argv[1]), 1;
    fclose(f);
    if (n < 33 || memcmp(d, "\x89PNG\r\n\x1a\n", 8)) return fprintf(stderr, "%s: not a PNG\n", argv[1]), 1;
    uint32_t w = be32(d + 16), h = be32(d + 20);
    int depth = d[24], ctype = d[25], bpp = ctype == 6 ? 4 : ctype == 2 ? 3 : 0;
    if (depth != 8 || !bpp || d[28])
        return fprintf(stderr, "%s: expected 8-bit RGB or RGBA, not interlaced\n", argv[1]), 1;
    unsigned char *z = malloc((size_t)n);
    size_t zn = 0;
    for (long p = 8; p + 12 <= n;) {
        uint32_t len = be32(d + p);
        if (p + 12 + (long)len > n) break;
        if (!memcmp(d + p + 4, "IDAT", 4)) memcpy(z + zn, d + p + 8, len), zn += len;
        p += 12 + len;
    }
    size_t stride = (size_t)w * bpp, raw_n = (stride + 1) * h;
    unsigned char *raw = malloc(raw_n), *img = malloc(stride * h);
    uLongf out_n = raw_n;
    if (uncompress(raw, &out_n, z, zn) != Z_OK || out_n != raw_n)
        return fprintf(stderr, "%s: bad image data\n", argv[1]), 1;
    for (uint32_t y = 0; y < h; y++) {
        int ft = raw[y * (stride + 1)];
        const unsigned char *src = raw + y * (stride + 1) + 1;
        unsigned char *row = img + y * stride, *up = y ? row - stride : NULL;
        for (size_t x = 0; x < stride; x++) {
            int a = x >= (size_t)bpp ? row[x - bpp] : 0, b = up ? up[x] : 0, c = up && x >= (size_t)bpp ? up[x - bpp] : 0;
            int v = src[x];
            v += ft == 1 ? a : ft == 2 ? b : ft == 3 ? (a + b) / 2 : ft == 4 ? paeth(a, b, c) : 0;
            row[x] = (unsigned char)v;
        }
    }
    long differ = 0, colours = 0;
    static unsigned char seen[1 << 15];  // 5 bits per channel
    for (size_t p = 0; p < (size_t)w * h; p++) {
        const unsigned char *px = img + p * bpp;
        differ += memcmp(px, img, 3) != 0;
        int key = (px[0] >> 3) << 10 | (px[1] >> 3) << 5 | px[2] >> 3;
        if (!seen[key]) seen[key] = 1, colours++;
    }
    double share = (double)differ / ((double)w * h);
    printf("%s: %ux%u, %.1f%% of pixels differ from the background, %ld colours\n", argv[1], w, h, 100 * share, colours);
    if (share < 0.02 || colours <= 16) return fprintf(stderr, "%s: the page looks blank\n", argv[1]), 1;
    return 0;
}
