// One live status line on a terminal ("\r"-rewritten); silent when stdout is not a terminal.
#pragma once

int progress_enabled(void);
void progress_line(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
// Ends the live line so the next output starts on a fresh line.
void progress_break(void);
// "1h02m", "3m05s", "12s"
void format_duration(char *buf, int n, double seconds);
