// One live status line on a terminal ("\r"-rewritten); silent when stdout is not a terminal.
#pragma once

int progress_enabled(void);
void progress_line(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
// Ends the live line so the next output starts on a fresh line.
void progress_break(void);
// The stop flag: a program's signal handler (./train's SIGINT, SIGTERM) sets it, and every loop
// that can run longer than a second (sampling, data generation, evaluation passes) asks it, so
// Ctrl-C or a timeout is obeyed within a moment, not after the loop. Set from a handler
// (async-signal-safe); progress_stopped returns the signal (0: none).
void progress_stop(int sig);
int progress_stopped(void);
// "1h02m", "3m05s", "12s"
void format_duration(char *buf, int n, double seconds);
