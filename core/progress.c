#include "core/progress.h"

#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <unistd.h>

static int g_live;  // a live line is on screen
static volatile sig_atomic_t g_stop;

void progress_stop(int sig) { g_stop = sig; }
int progress_stopped(void) { return g_stop; }

int progress_enabled(void) {
    static int enabled = -1;
    if (enabled < 0) enabled = isatty(fileno(stdout));
    return enabled;
}

void progress_line(const char *fmt, ...) {
    if (!progress_enabled()) return;
    va_list ap;
    va_start(ap, fmt);
    fputs("\r\033[K", stdout);
    vprintf(fmt, ap);
    va_end(ap);
    fflush(stdout);
    g_live = 1;
}

void progress_break(void) {
    if (!g_live) return;
    fputs("\r\033[K", stdout);
    fflush(stdout);
    g_live = 0;
}

void format_duration(char *buf, int n, double s) {
    if (s < 0) s = 0;
    long t = (long)(s + 0.5);
    if (t >= 3600) snprintf(buf, (size_t)n, "%ldh%02ldm", t / 3600, t / 60 % 60);
    else if (t >= 60) snprintf(buf, (size_t)n, "%ldm%02lds", t / 60, t % 60);
    else snprintf(buf, (size_t)n, "%lds", t);
}
