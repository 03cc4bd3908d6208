package eventlog

import (
	"sort"
	"strconv"
)

// noise kinds and their relative weights. Warnings here are not failures:
// they never carry will_retry, so the candidate rule must leave them alone.
type noiseKind int

const (
	nWebhookReceived noiseKind = iota
	nWebhookVerified
	nWebhookIgnored
	nQueueEnqueued
	nQueueDequeued
	nQueueDepth
	nWorkerHeartbeat
	nSchedulerTick
	nCronFired
	nDispatchStarted
	nDispatchSucceeded
	nDispatchRetrying
	nAgentSpawned
	nAgentToolCall
	nAgentOutput
	nAgentExited
	nGitFetch
	nGitCommit
	nGitPush
	nGitHubAPI
	nPROpened
	nPRChecks
	nPRMerged
	nCommentPosted
	nConfigReloaded
	nStateSaved
	nDossierWritten
	nWarnBacklog
	nWarnRateLimit
	nWarnSlow
	nDiagnosis
	noiseKinds
)

var noiseWeights = [noiseKinds]int{
	nWebhookReceived: 60, nWebhookVerified: 40, nWebhookIgnored: 25,
	nQueueEnqueued: 50, nQueueDequeued: 50, nQueueDepth: 40,
	nWorkerHeartbeat: 80, nSchedulerTick: 70, nCronFired: 8,
	nDispatchStarted: 50, nDispatchSucceeded: 40, nDispatchRetrying: 6,
	nAgentSpawned: 40, nAgentToolCall: 120, nAgentOutput: 90, nAgentExited: 40,
	nGitFetch: 30, nGitCommit: 25, nGitPush: 20, nGitHubAPI: 90,
	nPROpened: 12, nPRChecks: 15, nPRMerged: 5, nCommentPosted: 15,
	nConfigReloaded: 2, nStateSaved: 30, nDossierWritten: 10,
	nWarnBacklog: 2, nWarnRateLimit: 2, nWarnSlow: 2, nDiagnosis: 3,
}

var noiseCumul = func() (c [noiseKinds]int) {
	total := 0
	for k, w := range noiseWeights {
		total += w
		c[k] = total
	}
	return c
}()

var (
	ghEvents      = []string{"issues", "issue_comment", "pull_request", "pull_request_review", "check_suite", "push"}
	ghActions     = []string{"opened", "edited", "created", "labeled", "synchronize", "submitted", "completed"}
	sources       = []string{"webhook", "webhook", "webhook", "poll", "queue"}
	harnesses     = []string{"claude", "claude", "claude", "cursor", "cursor", "codex", "aider"}
	vias          = []string{"queue", "queue", "queue", "direct"}
	tools         = []string{"Read", "Edit", "Bash", "Grep", "Glob", "Write", "WebFetch", "TodoWrite"}
	cronJobs      = []string{"stale-sweep", "pr-refresh", "label-sync", "backlog-report"}
	checkStates   = []string{"success", "success", "success", "pending", "failure", "neutral"}
	ignoreReasons = []string{"action not handled", "sender is a bot", "label not watched", "draft pull request", "repository not enabled"}
	apiPaths      = []string{"/repos/{repo}/issues/{issue}", "/repos/{repo}/issues/{issue}/comments", "/repos/{repo}/pulls", "/repos/{repo}/pulls/{issue}/files", "/repos/{repo}/commits/{sha}/status", "/repos/{repo}/labels"}
	commitMsgs    = []string{
		"fix: handle empty webhook payloads",
		"the-loop: address review on #{issue}",
		"chore: bump dependencies",
		"feat: add retry budget per repository",
		"fix: naïve datetimes in scheduler ✨",
		"docs: explain the dossier format",
		"refactor: split queue worker (#{issue})",
	}
	diagnosisEvents = []string{"diagnosis.detected", "diagnosis.posted", "diagnosis.deferred", "diagnosis.failed", "diagnosis.settled"}
)

func (g *generator) writeNoise(i int) {
	k := noiseKind(sort.SearchInts(noiseCumul[:], g.r.intn(noiseCumul[noiseKinds-1])+1))
	g.writeNoiseKind(i, k)
}

func (g *generator) writeNoiseKind(i int, k noiseKind) {
	g.newScene(false)
	r, l := g.r, &g.line
	src := func() { l.str("source", r.pick(sources)) }
	switch k {
	case nWebhookReceived:
		l.begin(g.now, "webhook.received", "debug")
		l.str("source", "webhook")
		l.str("gh_event", r.pick(ghEvents))
		l.str("action", r.pick(ghActions))
		g.appendDelivery()
		l.int("bytes", r.between(900, 48_000))
	case nWebhookVerified:
		l.begin(g.now, "webhook.verified", "debug")
		l.str("source", "webhook")
		l.str("gh_event", r.pick(ghEvents))
		g.appendDelivery()
	case nWebhookIgnored:
		l.begin(g.now, "webhook.ignored", "info")
		l.str("source", "webhook")
		l.str("gh_event", r.pick(ghEvents))
		l.str("action", r.pick(ghActions))
		l.str("reason", r.pick(ignoreReasons))
		g.appendDelivery()
	case nQueueEnqueued:
		l.begin(g.now, "queue.enqueued", "info")
		src()
		l.str("gh_event", r.pick(ghEvents))
		g.appendWorkItem()
		g.appendDelivery()
		l.int("depth", r.between(0, 40))
	case nQueueDequeued:
		l.begin(g.now, "queue.dequeued", "debug")
		l.str("source", "queue")
		g.appendWorkItem()
		g.appendWorker()
		l.int("wait_ms", r.between(1, 90_000))
	case nQueueDepth:
		l.begin(g.now, "queue.depth", "debug")
		l.str("source", "queue")
		l.int("depth", r.between(0, 40))
		l.int("in_flight", r.between(0, 8))
		l.int("oldest_age_ms", r.between(0, 600_000))
	case nWorkerHeartbeat:
		l.begin(g.now, "worker.heartbeat", "debug")
		l.str("source", "queue")
		g.appendWorker()
		l.int("pid", r.between(1200, 99999))
		l.int("rss_mb", r.between(40, 900))
		l.int("goroutines", r.between(12, 400))
	case nSchedulerTick:
		l.begin(g.now, "scheduler.tick", "debug")
		l.str("source", "scheduler")
		l.int("due", r.between(0, 6))
		l.int("next_in_ms", r.between(100, 60_000))
	case nCronFired:
		l.begin(g.now, "scheduler.cron.fired", "info")
		l.str("source", "scheduler")
		l.str("job", r.pick(cronJobs))
		l.str("via", "cron")
	case nDispatchStarted, nDispatchSucceeded, nDispatchRetrying:
		l.begin(g.now, [...]string{"dispatch.started", "dispatch.succeeded", "dispatch.retrying"}[k-nDispatchStarted], "info")
		src()
		l.str("gh_event", r.pick(ghEvents))
		g.appendDelivery()
		g.appendWorkItem()
		l.str("harness", r.pick(harnesses))
		l.str("via", r.pick(vias))
		switch k {
		case nDispatchSucceeded:
			l.int("attempts", r.between(1, 2))
			l.int("duration_ms", r.between(2_000, 900_000))
		case nDispatchRetrying:
			l.int("attempts", r.between(1, 2))
			l.int("backoff_ms", r.between(1_000, 60_000))
		}
		g.appendCwd()
	case nAgentSpawned:
		l.begin(g.now, "agent.spawned", "info")
		l.str("source", "queue")
		l.str("harness", r.pick(harnesses))
		l.str("model", r.pick(models))
		l.int("pid", r.between(1200, 99999))
		g.appendWorkItem()
		g.appendCwd()
	case nAgentToolCall:
		l.begin(g.now, "agent.tool_call", "debug")
		l.str("source", "queue")
		l.str("harness", r.pick(harnesses))
		l.str("tool", r.pick(tools))
		l.int("duration_ms", r.between(2, 40_000))
	case nAgentOutput:
		l.begin(g.now, "agent.output", "debug")
		l.str("source", "queue")
		l.str("harness", r.pick(harnesses))
		l.int("bytes", r.between(20, 80_000))
		l.int("tokens_in", r.between(200, 180_000))
		l.int("tokens_out", r.between(10, 16_000))
	case nAgentExited:
		l.begin(g.now, "agent.exited", "info")
		l.str("source", "queue")
		l.str("harness", r.pick(harnesses))
		l.int("exit_code", 0)
		l.int("duration_ms", r.between(2_000, 900_000))
		g.appendWorkItem()
		g.appendCwd()
	case nGitFetch:
		l.begin(g.now, "git.fetch.succeeded", "debug")
		src()
		g.appendRepo()
		l.int("objects", r.between(0, 5_000))
		l.int("duration_ms", r.between(80, 20_000))
		g.appendCwd()
	case nGitCommit:
		l.begin(g.now, "git.commit", "info")
		src()
		g.appendWorkItem()
		g.appendRendered("branch", "{branch}")
		g.appendRendered("sha", "{sha}")
		g.appendRendered("message", r.pick(commitMsgs))
	case nGitPush:
		l.begin(g.now, "git.push.succeeded", "info")
		src()
		g.appendWorkItem()
		g.appendRendered("branch", "{branch}")
		g.appendRendered("sha", "{ssha}")
	case nGitHubAPI:
		l.begin(g.now, "github.api.succeeded", "debug")
		src()
		l.str("method", [...]string{"GET", "GET", "GET", "POST", "PATCH"}[r.intn(5)])
		g.appendRendered("path", r.pick(apiPaths))
		l.int("status", [...]int{200, 200, 200, 201, 304}[r.intn(5)])
		l.int("rate_remaining", r.between(300, 5000))
		l.int("duration_ms", r.between(40, 2_500))
	case nPROpened:
		l.begin(g.now, "pr.create.succeeded", "info")
		src()
		g.appendWorkItem()
		g.appendRendered("url", "https://github.com/{repo}/pull/{n}{n}")
		g.appendRendered("branch", "{branch}")
	case nPRChecks:
		l.begin(g.now, "pr.checks", "info")
		l.str("source", "poll")
		g.appendWorkItem()
		l.str("state", r.pick(checkStates))
		l.int("checks", r.between(1, 30))
	case nPRMerged:
		l.begin(g.now, "pr.merged", "info")
		l.str("source", "webhook")
		l.str("gh_event", "pull_request")
		g.appendWorkItem()
		g.appendDelivery()
	case nCommentPosted:
		l.begin(g.now, "github.comment.succeeded", "info")
		l.str("source", "webhook")
		l.str("gh_event", "issue_comment")
		g.appendWorkItem()
		l.int("bytes", r.between(200, 60_000))
	case nConfigReloaded:
		l.begin(g.now, "config.reloaded", "info")
		l.str("source", "cli")
		g.appendRendered("path", "{home}/.config/the-loop/config.yaml")
		l.int("repos", r.between(1, len(repos)))
	case nStateSaved:
		l.begin(g.now, "state.saved", "debug")
		l.str("source", "queue")
		l.int("bytes", r.between(2_000, 900_000))
		l.int("duration_ms", r.between(1, 400))
	case nDossierWritten:
		l.begin(g.now, "dossier.written", "debug")
		l.str("source", "queue")
		g.appendRendered("path", "{tmp}/dossier.md")
		l.int("bytes", r.between(800, 60_000))
		g.appendWorkItem()
	case nWarnBacklog:
		l.begin(g.now, "queue.backlog", "warning")
		l.str("source", "queue")
		l.int("depth", r.between(100, 900))
		l.int("oldest_age_ms", r.between(600_000, 7_200_000))
	case nWarnRateLimit:
		l.begin(g.now, "github.rate_limit.low", "warning")
		src()
		l.int("remaining", r.between(0, 200))
		g.appendRendered("reset_at", "{ts}")
	case nWarnSlow:
		l.begin(g.now, "worker.slow", "warning")
		l.str("source", "queue")
		g.appendWorker()
		l.int("lag_ms", r.between(5_000, 120_000))
	case nDiagnosis:
		g.writeDiagnosis()
		return
	}
	l.str("version", g.version(i))
	l.end()
}

// writeDiagnosis writes one of the tool's own events. diagnosis.failed is a
// deliberate trap: level warning with will_retry false looks like a give-up.
func (g *generator) writeDiagnosis() {
	r, l := g.r, &g.line
	ev := r.pick(diagnosisEvents)
	level := "info"
	if ev == "diagnosis.deferred" || ev == "diagnosis.failed" {
		level = "warning"
	}
	l.begin(g.now, ev, level)
	l.str("source", "the-loop-diagnose")
	g.appendRendered("fingerprint", "{hex16}")
	switch ev {
	case "diagnosis.detected":
		l.int("count", r.between(1, 400))
	case "diagnosis.posted":
		g.appendRendered("issue_url", "https://github.com/the-loop/the-loop/issues/{n}{n}")
	case "diagnosis.deferred":
		l.str("reason", "daily cap reached")
	case "diagnosis.failed":
		attempts := r.between(1, 3)
		l.int("attempts", attempts)
		l.bool("will_retry", attempts < 3)
		g.appendRendered("error", "agent timed out after {dur}")
	case "diagnosis.settled":
		l.str("reason", "transient: succeeded on retry")
	}
	l.str("version", "0.3.0")
	l.end()
}

func (g *generator) appendRendered(key, tmpl string) {
	g.scratch = g.rd.render(g.scratch[:0], tmpl)
	g.line.bytes(key, g.scratch)
}

func (g *generator) appendWorker() {
	l := &g.line
	l.start("worker")
	l.b = append(l.b, "worker-"...)
	l.b = appendInt(l.b, g.r.between(1, 12))
	l.b = append(l.b, ".internal"...)
	l.closeStr()
}

func (g *generator) appendRepo() {
	g.line.str("repo", repos[g.sc.repo])
}

func appendInt(b []byte, v int) []byte { return strconv.AppendInt(b, int64(v), 10) }
