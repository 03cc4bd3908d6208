package main

import (
	"context"
	"errors"
	"net"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/the-loop/the-loop-diagnose/pipeline"
	"github.com/the-loop/the-loop-diagnose/stages"
)

// metrics are the watcher's Prometheus metrics. A nil *metrics records
// nothing, so `run` pays nothing for them.
type metrics struct {
	reg            *prometheus.Registry
	lines          prometheus.Counter
	corrupt        prometheus.Counter
	candidates     prometheus.Counter
	newDefects     prometheus.Counter
	agentRuns      *prometheus.CounterVec
	agentSeconds   prometheus.Histogram
	agentCost      prometheus.Counter
	agentTokens    *prometheus.CounterVec
	outcomes       *prometheus.CounterVec
	settled        *prometheus.CounterVec
	githubRequests *prometheus.CounterVec
	rateLimited    prometheus.Counter
	scans          *prometheus.CounterVec
	scanSeconds    prometheus.Histogram
	lastScanTook   prometheus.Gauge
	lastScan       prometheus.Gauge
	lastScanAt     atomic.Int64 // unix seconds, for /healthz
	// trouble is what the watcher is waiting out ("" or nil: none), for
	// /healthz: it answers 503 with it until a scan succeeds again.
	trouble atomic.Pointer[string]
}

func newMetrics() *metrics {
	const ns = "the_loop_diagnose"
	m := &metrics{reg: prometheus.NewRegistry()}
	counter := func(name, help string) prometheus.Counter {
		c := prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Name: name, Help: help})
		m.reg.MustRegister(c)
		return c
	}
	vec := func(name, help string, labels ...string) *prometheus.CounterVec {
		c := prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: name, Help: help}, labels)
		m.reg.MustRegister(c)
		return c
	}
	m.lines = counter("lines_read_total", "Event log lines read.")
	m.corrupt = counter("corrupt_lines_total", "Event log lines skipped as corrupt.")
	m.candidates = counter("candidates_total", "Failure records selected by the filter.")
	m.newDefects = counter("new_fingerprints_total", "Defects seen for the first time (sent to diagnosis).")
	m.agentRuns = vec("agent_runs_total", "Agent runs by outcome (ok, failed).", "outcome")
	m.agentSeconds = prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: ns, Name: "agent_run_seconds",
		Help: "Agent run duration.", Buckets: []float64{0.1, 1, 5, 15, 30, 60, 120, 300, 600, 900}})
	m.reg.MustRegister(m.agentSeconds)
	m.agentCost = prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Name: "agent_cost_usd_total",
		Help: "Agent spend in USD, as the harnesses report it."})
	m.reg.MustRegister(m.agentCost)
	m.agentTokens = vec("agent_tokens_total", "Agent tokens by direction (input, output), as the harnesses report them.", "direction")
	m.outcomes = vec("outcomes_total", "Defect outcomes by status (filed, known, deferred, settled, failed, abandoned, ...).", "status")
	m.settled = vec("settled_total", "Defects settled by the machine, by verdict.", "verdict")
	m.githubRequests = vec("github_requests_total", "GitHub API requests by HTTP status (error: no response).", "status")
	m.rateLimited = counter("github_rate_limited_total", "GitHub responses that were rate limits (each means a wait or a deferral).")
	m.scans = vec("scans_total", "Scans by result (ok, failed, skipped).", "result")
	m.lastScan = prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Name: "last_scan_timestamp_seconds", Help: "When the last scan finished."})
	m.scanSeconds = prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: ns, Name: "scan_seconds",
		Help: "Scan duration, from opening the state to the last write.", Buckets: prometheus.ExponentialBuckets(0.001, 4, 10)})
	m.lastScanTook = prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Name: "last_scan_duration_seconds", Help: "How long the last scan took."})
	m.reg.MustRegister(m.scanSeconds, m.lastScanTook)
	m.reg.MustRegister(m.lastScan, prometheus.NewGoCollector(), prometheus.NewProcessCollector(prometheus.ProcessCollectorOpts{}))
	return m
}

// observe records one outcome as persist makes it durable.
func (m *metrics) observe(o pipeline.Outcome) {
	if m == nil {
		return
	}
	m.outcomes.WithLabelValues(string(o.Status)).Inc()
	if o.Verdict == pipeline.VerdictNew && !o.Backlog {
		m.newDefects.Inc()
	}
	if o.AgentRan {
		outcome := "ok"
		if o.Failure != "" {
			outcome = "failed"
		}
		m.agentRuns.WithLabelValues(outcome).Inc()
		m.agentSeconds.Observe(o.AgentTook.Seconds())
	}
	if c := o.Cost; c != nil {
		m.agentCost.Add(c.USD)
		m.agentTokens.WithLabelValues("input").Add(float64(c.InputTokens))
		m.agentTokens.WithLabelValues("output").Add(float64(c.OutputTokens))
	}
	if o.Settle != nil {
		m.settled.WithLabelValues(string(o.Settle.Verdict)).Inc()
	}
}

// scanned records a finished scan.
func (m *metrics) scanned(sum *stages.Summary, candidates int64, took time.Duration, err error) {
	if m == nil {
		return
	}
	m.scanSeconds.Observe(took.Seconds())
	m.lastScanTook.Set(took.Seconds())
	result := "ok"
	if err != nil {
		result = "failed"
	}
	m.scans.WithLabelValues(result).Inc()
	if sum != nil {
		m.lines.Add(float64(sum.Lines))
		m.corrupt.Add(float64(sum.Corrupt))
	}
	m.candidates.Add(float64(candidates))
	now := time.Now()
	m.lastScan.Set(float64(now.Unix()))
	m.lastScanAt.Store(now.Unix())
}

// troubled records what the watcher is waiting out; "" when nothing.
func (m *metrics) troubled(reason string) {
	if m == nil {
		return
	}
	m.trouble.Store(&reason)
}

// transport counts GitHub requests by status and rate limits.
func (m *metrics) transport(next http.RoundTripper) http.RoundTripper {
	if m == nil {
		return next
	}
	if next == nil {
		next = http.DefaultTransport
	}
	return roundTripFunc(func(req *http.Request) (*http.Response, error) {
		resp, err := next.RoundTrip(req)
		if err != nil {
			m.githubRequests.WithLabelValues("error").Inc()
			return resp, err
		}
		m.githubRequests.WithLabelValues(strconv.Itoa(resp.StatusCode)).Inc()
		if (resp.StatusCode == http.StatusForbidden || resp.StatusCode == http.StatusTooManyRequests) &&
			(resp.Header.Get("Retry-After") != "" || resp.Header.Get("X-RateLimit-Remaining") == "0") {
			m.rateLimited.Inc()
		}
		return resp, nil
	})
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// serve exposes /metrics and /healthz on addr until ctx ends. /healthz is
// healthy while the last scan finished within staleAfter (or none is due yet)
// and the watcher is not waiting out trouble.
func (m *metrics) serve(ctx context.Context, addr string, staleAfter time.Duration) (string, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", &exitError{code: exitUsage, msg: "--metrics-addr " + addr + ": " + err.Error()}
	}
	started := time.Now()
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		if t := m.trouble.Load(); t != nil && *t != "" {
			http.Error(w, "waiting out trouble, retrying: "+*t, http.StatusServiceUnavailable)
			return
		}
		last := time.Unix(m.lastScanAt.Load(), 0)
		if m.lastScanAt.Load() == 0 {
			last = started
		}
		if time.Since(last) > staleAfter {
			http.Error(w, "no scan finished since "+last.UTC().Format(time.RFC3339), http.StatusServiceUnavailable)
			return
		}
		w.Write([]byte("ok\n"))
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(shutdown)
	}()
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			_ = err // the listener died; /healthz going silent is the signal
		}
	}()
	return ln.Addr().String(), nil
}
