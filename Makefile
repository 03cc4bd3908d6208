# the-loop-diagnose — see README.md
GO      ?= go
BIN     := bin/the-loop-diagnose
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -X main.version=$(VERSION)
SHARED  ?= ../shared

.PHONY: all build run test docs-check vet fmt fuzz bench bench-store bench-huge score-grouping score-redaction clean realcli realcli-install

all: build

# Static (no cgo): the dynamic loader and libc start-up cost 4 ms of every
# run, a fifth of an incremental cron scan; the pure-Go resolver and user
# lookup do the same job here.
build:
	CGO_ENABLED=0 $(GO) build -ldflags "$(LDFLAGS)" -o $(BIN) ./cmd/the-loop-diagnose

# The README's first command: a dry run with the builtin (no-LLM) harness over
# the sample event log shipped in the repo. Prints each would-be issue; writes
# nothing, posts nothing.
run: build
	$(BIN) run --dry-run --config testdata/sample-config.yaml

test:
	$(GO) vet ./...
	@unformatted=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	  if [ -n "$$unformatted" ]; then echo "gofmt needed: $$unformatted"; exit 1; fi
	$(GO) test -race -count=1 -timeout 30m ./...

# The tests that hold the docs to the code (make test runs them too): every
# config key documented and every key a text names real, status --json's
# table, the README's command list, links and anchors, cited test names.
docs-check:
	$(GO) test -count=1 -run '^(TestConfigDocNamesEveryKey|TestTextsNameRealConfigKeys|TestDocsLinksResolve|TestDesignNamesRealTests|TestReadmeListsEveryCommand|TestStatusJSONShapeIsDocumented|TestExampleConfig)$$' ./cmd/the-loop-diagnose

# The real agent CLIs, pinned, installed with npm into a cache directory for
# the real-CLI tests (test/realcli_test.go: each CLI against this project's
# fake of its provider, a hostile model confined). `make test` runs those
# tests when the CLIs are installed and skips them otherwise; under CI=true
# they fail when missing, and .ci/run installs them first.
NPM_CLIS     := .cache/npm-clis
REALCLI_PKGS := @anthropic-ai/claude-code@2.1.197 @openai/codex@0.171.0 @google/gemini-cli@0.61.0

realcli-install:
	@if [ "$$(cat $(NPM_CLIS)/.pinned 2>/dev/null)" = "$(REALCLI_PKGS)" ]; then echo "realcli: $(REALCLI_PKGS) already in $(NPM_CLIS)"; else \
	  mkdir -p $(NPM_CLIS) && timeout 600 npm install --no-audit --no-fund --loglevel=error --prefix $(NPM_CLIS) $(REALCLI_PKGS) && \
	  echo "$(REALCLI_PKGS)" > $(NPM_CLIS)/.pinned; fi

realcli: realcli-install
	$(GO) test -count=1 -v -run '^TestReal' ./test/

vet:
	$(GO) vet ./...

fmt:
	gofmt -w $$(git ls-files '*.go')

# Every fuzz target of every package, found by go test -list (a target that
# moves with its code is still run): FUZZTIME each.
FUZZTIME ?= 20s
fuzz:
	@set -e; for pkg in $$($(GO) list ./...); do \
	  for f in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz' || true); do \
	    echo "fuzz $$pkg $$f"; $(GO) test $$pkg -run '^$$' -fuzz "^$$f$$" -fuzztime $(FUZZTIME); \
	  done; done

bench: build
	$(GO) run ./test/bench --bin $(BIN) --out bench-out
	$(GO) test -run '^$$' -bench BenchmarkRead -benchtime 5x ./logread
	$(GO) test -run '^$$' -bench . -benchmem ./fingerprint ./redact

# The state's growth and crash figures (DESIGN.md "The state in a database"):
# an incremental scan with 100k known fingerprints against an empty state,
# bytes written per filed issue, and SIGKILL anywhere against the cap.
bench-store:
	THE_LOOP_GROWTH_KNOWN=100000 $(GO) test ./test -count=1 -v -run 'TestGrowth|TestKilledManyTimes|TestKillAnywhere' 2>&1 | grep -E 'growth_test|kill points|landed|issues created|^(ok|FAIL|---)'

# A 10 GB generated log streamed through a pipe: memory must not grow.
bench-huge: build
	$(GO) run ./test/bench --bin $(BIN) --huge-gb 10

# Scores against ../shared (not in this repo): grouping accuracy and redaction.
score-grouping: build
	$(SHARED)/tools/grouping-accuracy --cmd '$(CURDIR)/$(BIN) replay --stage fingerprint --log {log}'

score-redaction: build
	$(SHARED)/tools/redaction-score --cmd '$(CURDIR)/$(BIN) redact' --corpus $(SHARED)/corpus/redaction-sample.jsonl

clean:
	rm -rf bin
