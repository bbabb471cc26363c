#include "core/provenance.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>
#ifdef __APPLE__
#include <sys/sysctl.h>
#include <sys/types.h>
#endif

// build/commit.h is written by the Makefile before anything compiles; a build without it (a
// compiler run by hand) says "unknown".
#if defined(__has_include)
#if __has_include("build/commit.h")
#include "build/commit.h"
#endif
#endif
#ifndef ATTNSCOPE_COMMIT
#define ATTNSCOPE_COMMIT "unknown"
#endif

const char *provenance_commit(void) { return ATTNSCOPE_COMMIT; }

const char *provenance_compiler(void) {
#ifdef __VERSION__
    return __VERSION__;
#else
    return "unknown";
#endif
}

// The value of a "key : value" line of /proc/cpuinfo, trimmed, into out (0: found).
static int cpuinfo_value(const char *line, const char *key, char *out, size_t n) {
    size_t k = strlen(key);
    if (strncmp(line, key, k) != 0) return -1;
    const char *p = line + k;
    while (*p == ' ' || *p == '\t') p++;
    if (*p++ != ':') return -1;
    while (*p == ' ' || *p == '\t') p++;
    size_t len = strcspn(p, "\n");
    while (len && isspace((unsigned char)p[len - 1])) len--;
    if (!len) return -1;
    snprintf(out, n, "%.*s", (int)len, p);
    return 0;
}

static void read_cpu(char *out, size_t n) {
    snprintf(out, n, "unknown");
#ifdef __APPLE__
    size_t len = n;
    if (sysctlbyname("machdep.cpu.brand_string", out, &len, NULL, 0) != 0 || !out[0]) snprintf(out, n, "unknown");
#else
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f) return;
    char line[512], impl[64] = "", part[64] = "";
    while (fgets(line, sizeof line, f)) {
        if (cpuinfo_value(line, "model name", out, n) == 0) break;                // x86 (the first core's)
        if (!impl[0]) cpuinfo_value(line, "CPU implementer", impl, sizeof impl);  // arm64
        if (!part[0]) cpuinfo_value(line, "CPU part", part, sizeof part);
    }
    fclose(f);
    if (!strcmp(out, "unknown") && impl[0] && part[0]) snprintf(out, n, "arm implementer %s part %s", impl, part);
#endif
}

const char *provenance_cpu(void) {
    static char cpu[160];
    if (!cpu[0]) read_cpu(cpu, sizeof cpu);
    return cpu;
}
