# make build/hf_logits: the project's logits for tests/hf/hf_check.py (run by hand, outside CI:
# it needs transformers and torch; docs/export.md#checking-it-in-transformers).
build/hf_logits: build/f32/tests/hf/hf_logits.o $(F32_OBJ)
	$(CC) $(ALL_CFLAGS) $(LDFLAGS) $^ -o $@ $(LDLIBS)
