package bench

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
)

// Markdown renders docs/bench.md.
func (rep Report) Markdown(machine string) string {
	var b strings.Builder
	rep.mdIntro(&b, machine)
	rep.mdWorkload(&b)
	rep.mdCounts(&b)
	rep.mdLatencies(&b)
	rep.mdMicro(&b)
	rep.mdMethod(&b)
	return b.String()
}

// printer is fmt.Fprintf into b, the one verb of every section below.
func printer(b *strings.Builder) func(format string, a ...any) {
	return func(format string, a ...any) { fmt.Fprintf(b, format, a...) }
}

// mdIntro is the title, where and how the run was made, and the headline
// table with where dcm is not ahead.
func (rep Report) mdIntro(b *strings.Builder, machine string) {
	w := printer(b)
	kind := "full run"
	if rep.Config.Quick {
		kind = "**quick run (BENCH_QUICK=1): a short churn, numbers are indicative only**"
	}
	w("# dcm against the router without DCM and the classic slot DCM\n\n")
	w("Written by `%s` (%s) on %s UTC, %s in all.\n\n", rep.Command, kind, rep.Date.UTC().Format("2006-01-02 15:04"), rep.Elapsed.Round(time.Second))
	w("Machine: %s. Load average (1, 5, 15 min) %s before the run, %s after: the two cores are shared with other\n", machine, rep.LoadBefore, rep.LoadAfter)
	w("work, which slows every mode, reloads (CPU-bound parses of the whole configuration) most.\n\n")
	w("## Headline\n\n")
	rep.headline(b)
	w("\nRatios are against `reload` (the router without DCM); lower is better in every row. The last column\n")
	w("compares dcm (`dynamic`) with the best of the other three modes; within 5%% is a tie.\n\n")
	rep.notAhead(b)
	w("![event → serving latency](bench-latency.svg)\n\n![HAProxy memory over time](bench-memory.svg)\n\n![old workers over time](bench-oldworkers.svg)\n\n")
}

// mdWorkload is the churn and the load every mode went through.
func (rep Report) mdWorkload(b *strings.Builder) {
	w := printer(b)
	cfg := rep.Config
	w("## Workload\n\n")
	w("Seed %d: %d routes at the start, %d–%d endpoints each (a real HTTP server per pod on its own loopback address),\n",
		cfg.Seed, cfg.Routes, cfg.MinEndpoints, cfg.MaxEndpoints)
	w("%d of them edge routes (%.0f%% of the routes, initial and added: TLS ends in HAProxy with the route's own certificate,\n",
		rep.EdgeRoutes, 100*cfg.EdgeShare)
	w("an Ingress with `spec.tls`), then %.1f events per second for %s. Route adds and deletes are drawn alike but never\n", cfg.Rate, cfg.Duration)
	w("drift more than %d apart: the churn replaces routes, it does not grow the cluster. The same script for every mode,\n", cfg.RouteDrift)
	w("modes run one after the other in one process.\n\n")
	w("| event | count |\n|---|---|\n")
	first := rep.Results[0]
	for _, k := range []EventKind{ScaleOut, ScaleIn, Replace, RouteAdd, RouteDelete, CertRotate} {
		w("| %s | %d |\n", k, first.Events[k])
	}
	w("\nDuring the churn: %d requests per second through HAProxy to random routes on keep-alive connections, and\n", cfg.LoadRate)
	w("%d long-lived connections (a stream that sends a line every 0.5 s, %s–%s each, reopened at once) to %d\n",
		cfg.Streams, cfg.StreamLife[0], cfg.StreamLife[1], cfg.Stable)
	w("routes the script never touches. A scale-in or replacement drains the terminating pods' endpoints for 1 s, removes\n")
	w("them, and stops the pods 2 s later; a route delete takes the route out of the load 0.2 s before the API write.\n\n")
	w("A certificate rotation gives an edge route's Secret a new certificate and key (a fresh ECDSA leaf of a test CA, made\n")
	w("once for all modes). `dynamic` swaps it at runtime (`set ssl cert` in an SSL transaction, `commit ssl cert`); the\n")
	w("other modes have no runtime certificates and reload for it (`cert-changed`), as the router without DCM and the\n")
	w("classic DCM do. The load is plain HTTP (edge routes allow it, as `dcm.io/ssl-redirect: \"false\"` does, and their\n")
	w("hosts are routed by the same maps on both frontends); the\n")
	w("rotations are timed over TLS.\n\n")
}

// mdCounts is what each mode did: reloads by reason, requests, runtime commands by verb.
func (rep Report) mdCounts(b *strings.Builder) {
	w := printer(b)
	w("## Reloads by reason\n\n| mode | reasons |\n|---|---|\n")
	for _, r := range rep.Results {
		w("| %s | %s |\n", r.Mode, countList(r.Reloads))
	}
	w("\n## Requests\n\n| mode | 2xx | expected 503/404 (deleted routes) | failed | failures | long-lived done / cut | cut by |\n|---|---|---|---|---|---|---|\n")
	for _, r := range rep.Results {
		w("| %s | %d | %d | %d | %s | %d / %d | %s |\n", r.Mode, r.OK, r.Expected, r.Failed, countList(r.FailReasons), r.StreamsDone, r.StreamsCut, countList(r.StreamReasons))
	}
	w("\n## Runtime commands by verb\n\n| mode | commands |\n|---|---|\n")
	for _, r := range rep.Results {
		w("| %s | %s |\n", r.Mode, countList(r.ByVerb))
	}
	w("\nA route added or deleted without a reload changes its own entries of the routing maps (one `add map`, `set map`\n")
	w("or `del map` each) after its servers; a reload sends none of these, and only reads HAProxy back afterwards (`show …`).\n")
}

// mdLatencies is how fast a change was served: new pods and rotated certificates.
func (rep Report) mdLatencies(b *strings.Builder) {
	w := printer(b)
	cfg := rep.Config
	w("\n## Event → serving\n\n")
	w("From the API write (the desired state handed to dcm) until a request through HAProxy first reaches the new pod,\n")
	w("as the pod records it; for a new route, its first pod. Meanwhile three loops send requests for the route on new\n")
	w("connections (so they reach the current worker), on top of the load. Scale-ins and deletes start no pod.\n\n")
	w("| mode | new pods timed | p50 ms | p90 ms | p99 ms | max ms |\n|---|---|---|---|---|---|\n")
	for _, r := range rep.Results {
		w("| %s | %d | %.1f | %.1f | %.1f | %.1f |\n", r.Mode, len(r.Latencies), pct(r.Latencies, .5), pct(r.Latencies, .9), pct(r.Latencies, .99), pct(r.Latencies, 1))
	}
	w("\n## Certificate rotation → served\n\n")
	w("From the API write of the rotated Secret until a TLS handshake with the route's host as SNI (a new connection to\n")
	w("HAProxy's HTTPS frontend, every 1–10 ms) is answered with the new certificate.\n\n")
	w("| mode | rotations timed | not served within %s | p50 ms | p90 ms | max ms |\n|---|---|---|---|---|---|\n", cfg.ProbeLimit)
	for _, r := range rep.Results {
		w("| %s | %d | %d | %.1f | %.1f | %.1f |\n", r.Mode, len(r.CertLatencies), r.CertTimeouts, pct(r.CertLatencies, .5), pct(r.CertLatencies, .9), pct(r.CertLatencies, 1))
	}
}

// mdMicro is the microbenchmarks: admin socket, reloads by size, memory constants.
func (rep Report) mdMicro(b *strings.Builder) {
	w := printer(b)
	m := rep.Micro
	w("\n## Microbenchmarks\n\n| what | result |\n|---|---|\n")
	w("| admin socket: one command round trip | %s |\n", us(m.RoundTrip))
	w("| admin socket: per command, 1,000 pipelined in one write | %s |\n", us(m.Pipelined))
	for _, n := range slices.Sorted(maps.Keys(m.Reload)) {
		r := m.Reload[n]
		w("| reload at %s backends × %d servers: dcm's whole reload (render, `haproxy -c`, write, reload, new worker answers) / the master's part | %s / %s (HAProxy then %.0f MB PSS) |\n",
			thousands(n), m.ReloadServers, ms(r.Total), ms(r.Master), r.PSSMB)
	}
	w("| worker memory per pre-allocated slot (free `server-template`-style slot in the cfg) | %.0f bytes |\n", m.PerSlot)
	w("| worker memory per server in haproxy.cfg | %.0f bytes |\n", m.PerCfgServer)
	w("| worker memory per dynamic server (`add server`) | %.0f bytes |\n", m.PerRuntimeSrv)
	w("| worker memory per empty backend (with its map entry) | %.0f bytes |\n", m.PerEmptyBE)
	w("\nMemory constants are differences of the worker's RSS over %s backends; they are what the what-if page's\n", thousands(m.MemoryBackends))
	w("estimate multiplies (`dcm.HAProxy26MemoryCosts`, measured by `dcm/haproxy`'s `BenchmarkMemoryCosts`).\n\n")
}

// mdMethod says how each figure is measured.
func (rep Report) mdMethod(b *strings.Builder) {
	w := printer(b)
	cfg := rep.Config
	w("## How each figure is measured\n\n")
	w("- **Reloads**: reloads done (`dcm_reload_duration_seconds` samples) during the churn; by reason\n")
	w("  `dcm_reloads_total{reason}`, where a reload for two reasons (an endpoint and a certificate that changed in one sync)\n")
	w("  counts under each, so the reasons add up to more than the reloads.\n")
	w("- **HAProxy memory**: the sum of `Pss` (`/proc/<pid>/smaps_rollup`) over the master and all its children —\n")
	w("  the current worker and every old one — sampled every %s. Pss shares the pages the forked workers still share\n", cfg.SampleEvery)
	w("  with the master among them, so the sum is what HAProxy really holds; summed RSS would count them again per worker.\n")
	w("- **Old workers**: the master's children other than the newest one (`/proc`), sampled with the memory.\n")
	w("- **Certificate rotation → served**: see above; the served leaf is told from the old one by its serial.\n")
	w("- **Failed requests**: load requests answered with anything but 2xx, or not answered (connection errors,\n")
	w("  timeouts), except a 503/404 for a route already taken out of the load for deletion.\n")
	w("- **dcm CPU (estimate)**: dcm runs in the bench process with the pods and the load generator. The figure is that\n")
	w("  process's CPU time during the churn minus its CPU rate measured over %s of the same load without churn,\n", cfg.Calibrate)
	w("  times the churn's length: dcm's work for the churn, plus the churn's own pod starts and probes (alike in every mode).\n")
	w("- **HAProxy CPU**: utime+stime of the master and live workers plus the reaped old workers (the master's cutime).\n")
	w("- **Runtime commands**: `dcm_runtime_command_duration_seconds` samples during the churn; \"change\" excludes `show …`\n")
	w("  (the read-back pass every 10 s and after reloads, which reload mode also runs).\n")
}
