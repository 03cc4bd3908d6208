package eventlog

import (
	"fmt"
	"math"
	"strings"
)

// Kinds of defect.
const (
	KindBug         = "bug"         // a real defect in the-loop: worth an issue
	KindTransient   = "transient"   // heals: a retried failure later succeeds
	KindEnvironment = "environment" // the operator's setup, not the code
)

// Defect is one distinct failure the generator can emit: the ground truth a
// grouping is compared against. Every occurrence of a defect has the same
// Event, Level, Source, GhEvent, Harness, Via and ExitCode, and an error text
// that matches Template except for its volatile <placeholders>.
type Defect struct {
	ID       string `json:"id"`
	Kind     string `json:"kind"`
	Event    string `json:"event"`
	Level    string `json:"level"` // "error", or "warning" for a give-up
	Source   string `json:"source"`
	GhEvent  string `json:"gh_event"`
	Harness  string `json:"harness,omitempty"`
	Via      string `json:"via"`
	ExitCode int    `json:"exit_code,omitempty"` // 0: the line has no exit_code
	// Template is the error text with volatile parts shown as <name>; empty
	// for a bare give-up, whose lines carry no error at all.
	Template string `json:"template"`
	// Multiline is true when the error spans lines (a traceback, a panic).
	Multiline bool `json:"multiline,omitempty"`
	// Secrets are literal secrets or PII in the error text; each occurrence
	// carries at least one of them. Redaction must remove them all.
	Secrets []string `json:"secrets,omitempty"`
	// Weight is the defect's expected share of all failures (Zipf by rank).
	Weight float64 `json:"weight"`

	tmpl    string // with {placeholders}, for the renderer
	success string // the event that reports the same step succeeding
	// harnesses, vias and events, when set (GenerateDeployment's
	// deploySpecs), are the values an incident of the defect draws its
	// harness, via and event from, instead of Harness, Via and Event.
	harnesses, vias, events []string
}

// spec is a hand-written defect before options pick and rank it.
type spec struct {
	id, event, level, source, ghEvent, harness, via string
	exit                                            int
	tmpl                                            string
}

// bugSpecs are real-looking defects of the-loop, most telling first: the
// first ten make the committed sample and include the near-identical pairs a
// fingerprint must keep apart (410 vs 422, exit 137 vs 143, give-ups that
// differ only by harness or event) and the two fake secrets.
var bugSpecs = []spec{
	{"enoent-open-dossier", "dispatch.failed", "error", "webhook", "issue_comment", "claude", "queue", 1,
		"claude exited 1: Error: ENOENT: no such file or directory, open '{tmp}/dossier.md'\n    at Object.openSync (node:fs:{line}:3)\n    at Object.readFileSync (node:fs:{line}:35)\n    at loadDossier (file://{home}/.npm/_npx/{hex16}/node_modules/@the-loop/prompt/dist/dossier.js:{line}:17)\n    at async main (file://{home}/.npm/_npx/{hex16}/node_modules/@the-loop/prompt/dist/cli.js:{line}:5) {\n  errno: -2,\n  code: 'ENOENT',\n  syscall: 'open',\n  path: '{tmp}/dossier.md'\n}"},
	{"comment-410-gone", "github.comment.failed", "error", "webhook", "issue_comment", "claude", "queue", 0,
		"POST https://api.github.com/repos/{repo}/issues/{issue}/comments: 410 Issues are disabled for this repo [] (X-GitHub-Request-Id: {req})"},
	{"comment-422-too-long", "github.comment.failed", "error", "webhook", "issue_comment", "claude", "queue", 0,
		"POST https://api.github.com/repos/{repo}/issues/{issue}/comments: 422 Validation Failed [{Resource:IssueComment Field:body Code:custom Message:Body is too long (maximum is 65536 characters)}] (X-GitHub-Request-Id: {req})"},
	{"agent-killed-137", "agent.failed", "error", "queue", "issues", "claude", "queue", 137,
		"claude exited 137 after {dur}: signal: killed (pid {pid}, peak rss {size}, host {host})"},
	{"agent-terminated-143", "agent.failed", "error", "queue", "issues", "claude", "queue", 143,
		"claude exited 143 after {dur}: signal: terminated (pid {pid}, host {host})"},
	{"worker-panic-nil-claim", "worker.crashed", "error", "queue", "issues", "", "queue", 2,
		"panic: runtime error: invalid memory address or nil pointer dereference\n[signal SIGSEGV: segmentation violation code=0x1 addr=0x18 pc=0x{hex6}]\n\ngoroutine {gid} [running]:\ngithub.com/the-loop/the-loop/internal/queue.(*Worker).claim({addr}, {0x{hex6}, {addr}})\n\t/build/internal/queue/worker.go:{line} {pc}\ngithub.com/the-loop/the-loop/internal/queue.(*Worker).Run({addr}, {0x{hex6}, {addr}})\n\t/build/internal/queue/worker.go:{line} {pc}\ncreated by github.com/the-loop/the-loop/internal/queue.Start in goroutine 1\n\t/build/internal/queue/start.go:{line} {pc}\n{goroutines}"},
	{"agent-gave-up-claude", "agent.gave_up", "warning", "queue", "issues", "claude", "queue", 0, ""},
	{"aider-keyerror-budget", "dispatch.failed", "error", "webhook", "issues", "aider", "direct", 1,
		"aider exited 1: Traceback (most recent call last):\n{pyframes}  File \"{home}/.local/lib/python3.12/site-packages/loop_tools/budget.py\", line {line}, in allocate\n    limit = MODEL_LIMITS[model]\n            ~~~~~~~~~~~~^^^^^^^\nKeyError: '{model}'"},
	{"git-fetch-pull-ref-token", "git.fetch.failed", "error", "webhook", "pull_request", "claude", "queue", 128,
		"git fetch https://x-access-token:{token}@github.com/{repo}.git +refs/pull/{issue}/head:refs/remotes/pr/{issue}: exit status 128: fatal: couldn't find remote ref refs/pull/{issue}/head"},
	{"queue-dsn-password", "queue.connect.failed", "error", "scheduler", "", "", "queue", 0,
		"queue: connect \"host={host} port=5432 user=loop password={password} dbname=loop sslmode=disable\": failed to receive message: unexpected EOF (after {dur}, backend pid {pid})"},
	{"git-push-email-privacy", "git.push.failed", "error", "webhook", "issues", "cursor", "queue", 1,
		"git push origin HEAD:refs/heads/{branch} (author {email}): exit status 1: remote: error: GH007: Your push would publish a private email address.\nremote: You can make your email public or disable this protection by visiting:\nremote: https://github.com/settings/emails\nTo https://github.com/{repo}.git\n ! [remote rejected] HEAD -> {branch} (push declined due to email privacy restrictions)\nerror: failed to push some refs to 'https://github.com/{repo}.git'"},
	{"enoent-write-transcript", "dispatch.failed", "error", "webhook", "issue_comment", "claude", "queue", 1,
		"claude exited 1: Error: ENOENT: no such file or directory, write '{tmp}/transcript.jsonl'"},
	{"agent-gave-up-cursor", "agent.gave_up", "warning", "queue", "issues", "cursor", "queue", 0, ""},
	{"dispatch-gave-up-claude", "dispatch.gave_up", "warning", "webhook", "issue_comment", "claude", "queue", 0, ""},
	{"java-lsp-workspace-lock", "dispatch.failed", "error", "webhook", "issues", "cursor", "queue", 1,
		"cursor exited 1: Exception in thread \"main\" java.lang.IllegalStateException: workspace lock {tmp}/.lsp/workspace.lock is held by pid {pid}\n\tat com.jetbrains.ls.workspace.WorkspaceLock.acquire(WorkspaceLock.java:{line})\n\tat com.jetbrains.ls.workspace.Workspace.open(Workspace.java:{line})\n{javaframes}Caused by: java.nio.channels.OverlappingFileLockException\n\tat java.base/sun.nio.ch.FileLockTable.checkList(FileLockTable.java:{line})\n\tat java.base/sun.nio.ch.FileChannelImpl.tryLock(FileChannelImpl.java:{line})\n\t... {n} more"},
	{"config-yaml-emfile", "config.reload.failed", "error", "cli", "", "", "direct", 0,
		"open {home}/.config/the-loop/config.yaml: too many open files"},
	{"state-db-emfile", "state.save.failed", "error", "cli", "", "", "direct", 0,
		"open {home}/.local/state/the-loop/state.db: too many open files"},
	{"git-push-rpc-400", "git.push.failed", "error", "webhook", "issues", "claude", "queue", 1,
		"git push https://x-access-token:{token}@github.com/{repo}.git HEAD:refs/heads/{branch}: exit status 1: error: RPC failed; HTTP 400 curl 22 The requested URL returned error: 400\nsend-pack: unexpected disconnect while reading sideband packet\nfatal: the remote end hung up unexpectedly\nEverything up-to-date"},
	{"webhook-decode-float-number", "webhook.failed", "error", "webhook", "issues", "", "direct", 0,
		"decode delivery {uuid}: json: cannot unmarshal number {n}.5 into Go struct field Issue.issue.number of type int"},
	{"worktree-already-checked-out", "git.worktree.failed", "error", "webhook", "issues", "claude", "queue", 128,
		"git worktree add {tmp}/wt-{issue} -b {branch}: exit status 128: fatal: '{branch}' is already checked out at '{home}/work/{reponame}'"},
	{"scheduler-panic-index", "scheduler.crashed", "error", "scheduler", "", "", "cron", 2,
		"panic: runtime error: index out of range [{n}] with length {n}\n\ngoroutine {gid} [running]:\ngithub.com/the-loop/the-loop/internal/scheduler.(*Cron).next(...)\n\t/build/internal/scheduler/cron.go:{line}\ngithub.com/the-loop/the-loop/internal/scheduler.(*Cron).Run({addr}, {0x{hex6}, {addr}})\n\t/build/internal/scheduler/cron.go:{line} {pc}\n{goroutines}"},
	{"dedup-concurrent-map-writes", "worker.crashed", "error", "queue", "pull_request", "", "queue", 2,
		"fatal error: concurrent map writes\n\ngoroutine {gid} [running]:\ninternal/runtime/maps.fatal({0x{hex6}, 0x15})\n\t/usr/local/go/src/runtime/panic.go:{line} {pc}\ngithub.com/the-loop/the-loop/internal/dedup.(*Index).Add({addr}, {{addr}, 0x28})\n\t/build/internal/dedup/index.go:{line} {pc}\n{goroutines}"},
	{"aider-attributeerror-diff", "dispatch.failed", "error", "webhook", "pull_request", "aider", "direct", 1,
		"aider exited 1: Traceback (most recent call last):\n{pyframes}  File \"{home}/.local/lib/python3.12/site-packages/loop_tools/diff.py\", line {line}, in summarize\n    for hunk in patch.text.splitlines():\n                ^^^^^^^^^^^^^^^^^^^^^\nAttributeError: 'NoneType' object has no attribute 'splitlines'"},
	{"cursor-unhandled-rejection", "agent.failed", "error", "queue", "issues", "cursor", "queue", 1,
		"cursor exited 1: node:internal/process/promises:{line}\n    triggerUncaughtException(err, true /* fromPromise */);\n    ^\n\n[UnhandledPromiseRejection: This error originated either by throwing inside of an async function without a catch block, or by rejecting a promise which was not handled with .catch(). The promise rejected with the reason \"socket hang up ({ip}:{port})\".] {\n  code: 'ERR_UNHANDLED_REJECTION'\n}\n\nNode.js v22.11.0"},
	{"rebase-conflict-unhandled", "git.rebase.failed", "error", "webhook", "pull_request", "claude", "queue", 1,
		"git rebase origin/main: exit status 1: Auto-merging internal/webhook/handler.go\nCONFLICT (content): Merge conflict in internal/webhook/handler.go\nerror: could not apply {ssha}... the-loop: address review on #{issue}\nhint: Resolve all conflicts manually, mark them as resolved with\nhint: \"git add/rm <conflicted_files>\", then run \"git rebase --continue\"."},
	{"state-lock-held", "state.lock.failed", "error", "cli", "", "", "direct", 0,
		"flock {home}/.local/state/the-loop/the-loop.lock: resource temporarily unavailable (held by pid {pid} since {ts})"},
	{"prompt-invalid-utf8", "agent.failed", "error", "queue", "issue_comment", "claude", "queue", 1,
		"claude exited 1: API Error: 400 {\"type\":\"error\",\"error\":{\"type\":\"invalid_request_error\",\"message\":\"messages.{n}.content.0.text: invalid UTF-8 sequence at byte {big}\"},\"request_id\":\"{reqid}\"}"},
	{"prompt-too-long", "agent.failed", "error", "queue", "issue_comment", "claude", "queue", 1,
		"claude exited 1: API Error: 400 {\"type\":\"error\",\"error\":{\"type\":\"invalid_request_error\",\"message\":\"prompt is too long: {big} tokens > 200000 maximum\"},\"request_id\":\"{reqid}\"}"},
	{"check-runs-404", "github.checks.failed", "error", "poll", "check_suite", "", "queue", 0,
		"GET https://api.github.com/repos/{repo}/commits/{sha}/check-runs?per_page=100: 404 Not Found [] (X-GitHub-Request-Id: {req})"},
	{"windows-rename-eperm", "dispatch.failed", "error", "webhook", "issues", "claude", "direct", 1,
		"claude exited 1: Error: EPERM: operation not permitted, rename 'C:\\Users\\{user}\\AppData\\Local\\Temp\\the-loop-{hex6}\\out.json.tmp' -> 'C:\\Users\\{user}\\AppData\\Local\\Temp\\the-loop-{hex6}\\out.json'"},
	{"pr-already-exists", "pr.create.failed", "error", "webhook", "issues", "claude", "queue", 0,
		"POST https://api.github.com/repos/{repo}/pulls: 422 Validation Failed [{Resource:PullRequest Field: Code:custom Message:A pull request already exists for the-loop-bot:{branch}.}] (X-GitHub-Request-Id: {req})"},
	{"sqlite-busy-state", "state.save.failed", "error", "queue", "", "", "queue", 0,
		"save {home}/.local/state/the-loop/state.db: database is locked (5) (SQLITE_BUSY) after {dur}"},
	{"main-deadlock", "worker.crashed", "error", "cli", "", "", "direct", 2,
		"fatal error: all goroutines are asleep - deadlock!\n\ngoroutine 1 [chan receive]:\nmain.run({0x{hex6}, {addr}})\n\t/build/cmd/the-loop/main.go:{line} {pc}\nmain.main()\n\t/build/cmd/the-loop/main.go:{line} {pc}\n{goroutines}"},
	{"webhook-signature-mismatch", "webhook.rejected", "error", "webhook", "push", "", "direct", 0,
		"x-hub-signature-256 mismatch for delivery {uuid}: computed sha256={hex16}{hex16}{hex16}{hex16}, header sha256={hex16}{hex16}{hex16}{hex16} (body re-encoded, {n} bytes differ)"},
	{"branch-delete-missing", "git.push.failed", "error", "scheduler", "", "", "cron", 1,
		"git push origin --delete {branch}: exit status 1: error: unable to delete '{branch}': remote ref does not exist\nerror: failed to push some refs to 'https://github.com/{repo}.git'"},
	{"issue-template-nil-owner", "compose.failed", "error", "webhook", "issues", "claude", "queue", 0,
		"template: issue-body:{line}:14: executing \"issue-body\" at <.Work.Repo.Owner.Login>: nil pointer evaluating *github.User.Login"},
	{"transcript-unexpected-eof", "agent.failed", "error", "queue", "issues", "codex", "queue", 0,
		"read transcript {tmp}/transcript.jsonl: unexpected end of JSON input at offset {big}"},
	{"agent-gave-up-codex", "agent.gave_up", "warning", "queue", "issues", "codex", "queue", 0, ""},
	{"wait-no-child", "agent.failed", "error", "queue", "issues", "codex", "queue", 0,
		"wait codex (pid {pid}): waitid: no child processes"},
	{"label-secondary-rate-limit", "github.label.failed", "error", "webhook", "issues", "", "queue", 0,
		"POST https://api.github.com/repos/{repo}/issues/{issue}/labels: 403 You have exceeded a secondary rate limit. Please wait a few minutes before you try again. [] (retry after {n}s, X-GitHub-Request-Id: {req})"},
	{"codex-sandbox-denied", "agent.failed", "error", "queue", "pull_request", "codex", "queue", 1,
		"codex exited 1: sandbox error: command was killed by a signal: landlock denied write to {home}/work/{reponame}/.git/index.lock"},
	{"pr-body-yaml-frontmatter", "pr.create.failed", "error", "webhook", "issues", "cursor", "queue", 0,
		"render PR body for #{issue}: yaml: line {n}: mapping values are not allowed in this context"},
	{"gh-cli-json-field", "github.cli.failed", "error", "poll", "pull_request", "", "queue", 1,
		"gh pr view {issue} --json reviewDecision,statusCheckRollup: exit status 1: Unknown JSON field: \"statusCheckRollup\"\nAvailable fields:\n  additions\n  assignees\n  author\n  reviewDecision"},
	// The record's own identity inside the text: its tmux target, actor,
	// work item and host, which GenerateDeployment varies per incident.
	{"tmux-pane-missing", "tmux.send.failed", "error", "queue", "issues", "claude", "queue", 1,
		"tmux send-keys -t {tmux} -l: exit status 1: can't find pane: {tmux}"},
	{"assignee-not-collaborator", "github.assign.failed", "error", "webhook", "issues", "", "queue", 0,
		"POST https://api.github.com/repos/{repo}/issues/{issue}/assignees: 422 Validation Failed: {actor} is not a collaborator on {repo} [] (X-GitHub-Request-Id: {req})"},
	{"claim-stolen", "queue.claim.failed", "error", "queue", "issues", "", "queue", 0,
		"claim {workitem}: lease already held by {host} for {reponame} (session {tmux})"},
}

var transientSpecs = []spec{
	{"claude-overloaded-529", "dispatch.failed", "error", "webhook", "issues", "claude", "queue", 1,
		"claude exited 1: API Error: 529 {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"},\"request_id\":\"{reqid}\"}"},
	{"pr-create-502", "pr.create.failed", "error", "webhook", "issues", "claude", "queue", 0,
		"POST https://api.github.com/repos/{repo}/pulls: 502 Bad Gateway [] (X-GitHub-Request-Id: {req})"},
	{"git-push-500", "git.push.failed", "error", "webhook", "issue_comment", "cursor", "queue", 128,
		"git push origin HEAD:refs/heads/{branch}: exit status 128: remote: Internal Server Error\nfatal: unable to access 'https://github.com/{repo}.git/': The requested URL returned error: 500"},
	{"queue-lease-lost", "queue.claim.failed", "error", "queue", "issues", "", "queue", 0,
		"lease {uuid} on {host} expired after {dur} (heartbeat missed at {ts}); re-queued"},
	{"github-client-timeout", "github.api.failed", "error", "poll", "issues", "", "queue", 0,
		"GET https://api.github.com/repos/{repo}/issues/{issue}: net/http: request canceled (Client.Timeout exceeded while awaiting headers) after {dur}"},
	{"cursor-econnreset", "agent.failed", "error", "queue", "issues", "cursor", "queue", 1,
		"cursor exited 1: Error: read ECONNRESET\n    at TLSWrap.onStreamRead (node:internal/stream_base_commons:{line}:20) {\n  errno: -104,\n  code: 'ECONNRESET',\n  syscall: 'read'\n}"},
}

var environmentSpecs = []spec{
	{"claude-not-in-path", "dispatch.failed", "error", "webhook", "issues", "claude", "queue", 127,
		"exec: \"claude\": executable file not found in $PATH"},
	{"github-401-bad-credentials", "github.api.failed", "error", "poll", "issues", "", "queue", 0,
		"GET https://api.github.com/repos/{repo}/issues?state=open&per_page=100: 401 Bad credentials [] (X-GitHub-Request-Id: {req})"},
	{"worktrees-permission-denied", "git.worktree.failed", "error", "webhook", "issues", "claude", "queue", 0,
		"mkdir /var/lib/the-loop/worktrees/{reponame}-{issue}: permission denied"},
	{"disk-full-enospc", "agent.failed", "error", "queue", "issues", "cursor", "queue", 1,
		"cursor exited 1: Error: ENOSPC: no space left on device, write '{tmp}/transcript.jsonl' ({size} free of 234.5 GiB)"},
	{"dns-lookup-github", "github.api.failed", "error", "webhook", "issue_comment", "", "queue", 0,
		"Post \"https://api.github.com/repos/{repo}/issues/{issue}/comments\": dial tcp: lookup api.github.com on 127.0.0.53:53: server misbehaving"},
	{"ssh-host-key-unknown", "git.clone.failed", "error", "webhook", "issues", "claude", "queue", 128,
		"git clone {tmp}/src: exit status 128: Host key verification failed.\nfatal: Could not read from remote repository.\n\nPlease make sure you have the correct access rights\nand the repository exists."},
	{"x509-unknown-authority", "github.api.failed", "error", "poll", "pull_request", "", "queue", 0,
		"Get \"https://api.github.com/repos/{repo}/pulls?state=open\": tls: failed to verify certificate: x509: certificate signed by unknown authority (proxy {ip}:{port})"},
	{"cursor-not-authenticated", "dispatch.failed", "error", "webhook", "issues", "cursor", "queue", 1,
		"cursor exited 1: Error: Not authenticated. Run 'cursor-agent login' or set CURSOR_API_KEY."},
}

// synthSpec makes the i-th extra defect when options ask for more than the
// hand-written ones: still distinct, still shaped like real errors.
func synthSpec(kind string, i int) spec {
	switch kind {
	case KindTransient:
		return spec{fmt.Sprintf("transient-%03d-upstream-503", i), "github.api.failed", "error", "poll", "issues", "", "queue", 0,
			fmt.Sprintf("GET https://api.github.com/repos/{repo}/contents/.the-loop/rules-%03d.yaml: 503 Service Unavailable [] (X-GitHub-Request-Id: {req})", i)}
	case KindEnvironment:
		return spec{fmt.Sprintf("environment-%03d-permission-denied", i), "config.reload.failed", "error", "cli", "", "", "direct", 0,
			fmt.Sprintf("open /etc/the-loop/conf.d/%03d-site.yaml: permission denied", i)}
	}
	harness := []string{"claude", "cursor", "codex", "aider"}[i%4]
	switch i % 3 {
	case 0:
		return spec{fmt.Sprintf("synth-%03d-python-valueerror", i), "dispatch.failed", "error", "webhook", "issues", "aider", "direct", 1,
			fmt.Sprintf("aider exited 1: Traceback (most recent call last):\n{pyframes}  File \"{home}/.local/lib/python3.12/site-packages/loop_tools/plugin_%03d.py\", line {line}, in parse\n    return int(value)\n           ^^^^^^^^^^\nValueError: invalid literal for int() with base 10: '{hex6}'", i)}
	case 1:
		return spec{fmt.Sprintf("synth-%03d-go-error", i), "agent.failed", "error", "queue", "issues", harness, "queue", 0,
			fmt.Sprintf("%s: step %03d: read {tmp}/step-%03d.json: unexpected EOF after {size} (pid {pid})", harness, i, i)}
	default:
		return spec{fmt.Sprintf("synth-%03d-gave-up", i), fmt.Sprintf("step%03d.gave_up", i), "warning", "queue", "issues", harness, "queue", 0, ""}
	}
}

// resolved applies defaults and validates; Catalog and Generate share it so
// the catalogue always describes exactly what Generate emits.
type resolved struct {
	Options
	catalog []Defect
	cumul   []float64 // cumulative Zipf weights, by rank
	rank    []int     // rank -> index into catalog
}

func resolve(o Options) (resolved, error) {
	if o.Lines < 0 {
		return resolved{}, fmt.Errorf("eventlog: Lines is %d, want >= 0", o.Lines)
	}
	if o.FailureRate == 0 {
		o.FailureRate = DefaultFailureRate
	}
	if o.CorruptRate == 0 {
		o.CorruptRate = DefaultCorruptRate
	}
	o.FailureRate = max(o.FailureRate, 0)
	o.CorruptRate = max(o.CorruptRate, 0)
	if o.FailureRate+o.CorruptRate > 1 || math.IsNaN(o.FailureRate+o.CorruptRate) {
		return resolved{}, fmt.Errorf("eventlog: FailureRate %g + CorruptRate %g exceed 1", o.FailureRate, o.CorruptRate)
	}
	if o.Defects == 0 {
		o.Defects = DefaultDefects
	}
	o.Defects = max(o.Defects, 0)
	if o.Transients < 0 || o.Environment < 0 {
		return resolved{}, fmt.Errorf("eventlog: Transients %d and Environment %d must be >= 0", o.Transients, o.Environment)
	}
	if o.Start.IsZero() {
		o.Start = DefaultStart
	}
	res := resolved{Options: o}
	add := func(kind string, pool []spec, n int) {
		for i := range n {
			s := synthSpec(kind, i)
			if i < len(pool) {
				s = pool[i]
			}
			res.catalog = append(res.catalog, newDefect(kind, s))
		}
	}
	add(KindBug, bugSpecs, o.Defects)
	add(KindTransient, transientSpecs, o.Transients)
	add(KindEnvironment, environmentSpecs, o.Environment)
	if len(res.catalog) == 0 && o.FailureRate > 0 && o.Lines > 0 {
		return resolved{}, fmt.Errorf("eventlog: FailureRate %g but no defects to draw from (Defects < 0, no Transients, no Environment)", o.FailureRate)
	}

	// Ranks are a seeded shuffle, so which defect is common differs by seed
	// while the catalogue itself does not.
	r := newRNG(o.Seed, streamRank)
	res.rank = make([]int, len(res.catalog))
	for i := range res.rank {
		res.rank[i] = i
	}
	for i := len(res.rank) - 1; i > 0; i-- {
		j := r.intn(i + 1)
		res.rank[i], res.rank[j] = res.rank[j], res.rank[i]
	}
	var total float64
	res.cumul = make([]float64, len(res.rank))
	for k := range res.rank {
		total += zipfWeight(k)
		res.cumul[k] = total
	}
	for k, idx := range res.rank {
		res.catalog[idx].Weight = zipfWeight(k) / total
	}
	return res, nil
}

func zipfWeight(rank int) float64 { return 1 / math.Pow(float64(rank+1), zipfExponent) }

const zipfExponent = 1.1

func newDefect(kind string, s spec) Defect {
	d := Defect{
		ID: s.id, Kind: kind, Event: s.event, Level: s.level, Source: s.source,
		GhEvent: s.ghEvent, Harness: s.harness, Via: s.via, ExitCode: s.exit,
		Multiline: strings.Contains(s.tmpl, "\n") || strings.Contains(s.tmpl, "frames}") || strings.Contains(s.tmpl, "{goroutines}"),
		tmpl:      s.tmpl,
		success:   successEvent(s.event),
	}
	d.Template = describe(s.tmpl)
	if strings.Contains(s.tmpl, "{token}") {
		d.Secrets = append(d.Secrets, fakeGitHubToken)
	}
	if strings.Contains(s.tmpl, "{password}") {
		d.Secrets = append(d.Secrets, "password="+fakePassword)
	}
	if strings.Contains(s.tmpl, "{email}") {
		d.Secrets = append(d.Secrets, emails...)
	}
	return d
}

// describe shows a template with its placeholders as <name>.
func describe(tmpl string) string {
	var b strings.Builder
	for {
		i := strings.IndexByte(tmpl, '{')
		if i < 0 {
			b.WriteString(tmpl)
			return b.String()
		}
		j := strings.IndexByte(tmpl[i:], '}')
		if j < 0 {
			b.WriteString(tmpl)
			return b.String()
		}
		b.WriteString(tmpl[:i])
		if name := tmpl[i+1 : i+j]; isPlaceholder(name) {
			b.WriteString("<" + name + ">")
			tmpl = tmpl[i+j+1:]
			continue
		}
		b.WriteByte('{')
		tmpl = tmpl[i+1:]
	}
}

// Catalog returns the defects that o produces, bugs first, then transients,
// then environment failures. It is the ground truth for grouping tests.
// Invalid options yield nil (Generate reports why).
func Catalog(o Options) []Defect {
	res, err := resolve(o)
	if err != nil {
		return nil
	}
	return res.catalog
}
