# make report-test: render a fresh run's report.html in headless Chromium and check the
# screenshot (tests/report/run.sh; needs Debian's chromium).
.PHONY: report-test
build/report-test/png_check: tests/report/png_check.c
	@mkdir -p $(dir $@)
	$(CC) -std=c11 -O2 -Wall $< -o $@ -lz

report-test: train evaluate
	@mkdir -p build/report-test
	$(MAKE) build/report-test/png_check
	sh tests/report/run.sh
