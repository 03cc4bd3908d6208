// Package stages holds the pipeline's stages and the one place they are
// put together, Build (build.go), which run, watch, dry run and replay all
// call. DESIGN.md is the long form of this map.
//
// # The stages in order, and what flows between them
//
// Each stage is a pipeline.Stage[In, Out] over a typed channel; the item
// types are in pipeline/items.go.
//
//	stage          file               in → out
//	read           logread            (event log) → Record
//	decode         logread            Record → Record (fields decoded)
//	filter         filter.go          Record → Candidate (failures, and successes for healing)
//	fingerprint    fingerprint.go     Candidate → Occurrence (+ incident.go: a bare give-up's incident)
//	dedup          dedup.go           Occurrence → Group, one per defect (+ regroup.go, tally.go, triage.go)
//	dossier        dossier.go         Group → Dossier (+ source.go)
//	preflight      build.go           Dossier → Dossier (GitHub checked before the first agent run)
//	reuse answers  agent_ledger.go    Dossier → Dossier (a kept answer instead of a run)
//	agent          agent.go           Dossier → Finding
//	keep answers   agent_ledger.go    Finding → Finding (each new answer kept at once)
//	gate           gate.go            Finding → Finding (caps, confidence; + evidence.go)
//	compose        compose.go         Finding → Report
//	post | print   post.go | print.go Report → Outcome
//	persist        persist.go         Outcome → state (+ outcome.go, outage.go)
//
// Build's Deps say which of the optional steps a scan has (preflight,
// ledger, fleet, post or print) and where replay ends; nothing per scan is
// set on a long-lived value.
//
// # Who writes the state
//
// Persist writes each outcome's decision; the scan's last transaction,
// FinishScan (persist.go, called by Scan.Finish), moves the cursor and keeps
// the incident index, the outages and the retention. Some writes happen
// earlier, each for crash safety or a budget:
//
//   - dedup (in memory, written by the scan's end): the template memory and
//     state moved to a merged family's fingerprint (regroup.go);
//   - agent_ledger.go: a run's charge before it starts, each answer as it
//     comes (the daily diagnosis budget, paid once);
//   - fleet.go: claims and fleet-wide counts, in the shared database;
//   - post.go, post_trust.go: the issue cache, a create's intent before it
//     is made, reports, dismissals, the token's login, foreign markers;
//   - forget.go: what `retry` forgets of a defect (cmd's retry command).
//
// # Where each policy lives
//
//   - the candidate rule: logread/policy.go, applied by filter.go;
//   - identity: fingerprint/, plus IdentityFields (fingerprint.go) and
//     incident correlation (incident.go);
//   - new, known, settled, the caps per scan and day: dedup.go Decide and
//     triage.go (healed, environment); the agent's settlement and the issue
//     cap: gate.go; fixed upstream: upstream.go;
//   - the budget's charge and refund: agent_ledger.go, settled by persist;
//   - what leaves the machine: dossier.go (allow-list), compose.go and
//     post_body.go (what is published), persist.go scrubOutcome (the disk);
//   - outages (GitHub or the agent down: the defects wait): outage.go, the
//     preflight (build.go), the agent's health (agent.go);
//   - exactly-once filing: post.go, with persist.
package stages
